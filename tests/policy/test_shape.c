/* tests/policy/test_shape.c: policy/shape.h: which attempt ends suggest a
 * request-shaped failure, and how the next endpoint's attempt settles a
 * held one. Every (held shape, next end, heavy) combination is checked. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "policy/shape.h"

#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))

Test(shape, names_cover_every_shape_and_are_distinct)
{
    for (int i = 0; i < POLICY_SHAPE_COUNT; i++) {
        const char *n = policy_shape_name((policy_shape_t)i);
        cr_assert(n != NULL && strcmp(n, "unknown") != 0, "shape %d", i);
        for (int j = 0; j < i; j++)
            cr_expect_neq(strcmp(n, policy_shape_name((policy_shape_t)j)), 0);
    }
    cr_expect_str_eq(policy_shape_name(POLICY_SHAPE_TOO_LARGE), "too_large");
    cr_expect_str_eq(policy_shape_name(POLICY_SHAPE_ID_UNANSWERABLE), "id_unanswerable");
    cr_expect_str_eq(policy_shape_name(POLICY_SHAPE_SLOW_CALL), "slow_call");
    cr_expect_str_eq(policy_shape_name(POLICY_SHAPE_COUNT), "unknown");
}

typedef struct suspect_case {
    policy_attempt_end_t end;
    int heavy;
    policy_shape_t want;
} suspect_case_t;

static const suspect_case_t suspect_cases[] = {
    {POLICY_END_OTHER, 0, POLICY_SHAPE_NONE},          {POLICY_END_OTHER, 1, POLICY_SHAPE_NONE},
    {POLICY_END_NEUTRAL, 0, POLICY_SHAPE_NONE},        {POLICY_END_NEUTRAL, 1, POLICY_SHAPE_NONE},
    {POLICY_END_TOO_LARGE, 0, POLICY_SHAPE_TOO_LARGE}, {POLICY_END_TOO_LARGE, 1, POLICY_SHAPE_TOO_LARGE},
    /* a cheap read that times out is the endpoint's fault, a heavy call may be slow by nature */
    {POLICY_END_TIMEOUT, 0, POLICY_SHAPE_NONE},        {POLICY_END_TIMEOUT, 1, POLICY_SHAPE_SLOW_CALL},
    /* the provider's own deadline: the same rule */
    {POLICY_END_GAVE_UP, 0, POLICY_SHAPE_NONE},        {POLICY_END_GAVE_UP, 1, POLICY_SHAPE_SLOW_CALL},
    {POLICY_END_UNREAD, 0, POLICY_SHAPE_ID_UNANSWERABLE}, {POLICY_END_UNREAD, 1, POLICY_SHAPE_ID_UNANSWERABLE},
};

Test(shape, suspects)
{
    cr_assert_eq(NELEMS(suspect_cases), (size_t)POLICY_END_COUNT * 2, "every end, heavy or not");
    for (size_t i = 0; i < NELEMS(suspect_cases); i++) {
        const suspect_case_t *c = &suspect_cases[i];
        cr_expect_eq(policy_shape_suspect(c->end, c->heavy), c->want, "end %d heavy %d", c->end, c->heavy);
    }
    cr_expect_eq(policy_shape_suspect(POLICY_END_COUNT, 1), POLICY_SHAPE_NONE);
    cr_expect_eq(policy_shape_suspect((policy_attempt_end_t)-1, 1), POLICY_SHAPE_NONE);
}

Test(shape, settle_every_combination)
{
    for (int held = POLICY_SHAPE_TOO_LARGE; held < POLICY_SHAPE_COUNT; held++)
        for (int end = 0; end < POLICY_END_COUNT; end++)
            for (int heavy = 0; heavy <= 1; heavy++) {
                policy_held_t want;
                if (end == POLICY_END_NEUTRAL)
                    want = POLICY_HELD_KEEP; /* a rate limit or a local failure is no evidence */
                else if (policy_shape_suspect((policy_attempt_end_t)end, heavy) == (policy_shape_t)held)
                    want = POLICY_HELD_REQUEST;
                else
                    want = POLICY_HELD_ENDPOINT;
                cr_expect_eq(policy_shape_settle((policy_shape_t)held, (policy_attempt_end_t)end, heavy), want,
                             "held %s, next end %d, heavy %d", policy_shape_name((policy_shape_t)held), end, heavy);
            }
}

Test(shape, settle_examples)
{
    /* too large twice: the request's doing */
    cr_expect_eq(policy_shape_settle(POLICY_SHAPE_TOO_LARGE, POLICY_END_TOO_LARGE, 0), POLICY_HELD_REQUEST);
    /* too large, then an answer: the first endpoint's (a smaller cap, a broken body) */
    cr_expect_eq(policy_shape_settle(POLICY_SHAPE_TOO_LARGE, POLICY_END_OTHER, 0), POLICY_HELD_ENDPOINT);
    /* too large, then a timeout: different failures, the first counts */
    cr_expect_eq(policy_shape_settle(POLICY_SHAPE_TOO_LARGE, POLICY_END_TIMEOUT, 1), POLICY_HELD_ENDPOINT);
    /* slow heavy call twice */
    cr_expect_eq(policy_shape_settle(POLICY_SHAPE_SLOW_CALL, POLICY_END_TIMEOUT, 1), POLICY_HELD_REQUEST);
    /* slow, then rate-limited: keep waiting for an endpoint that answers */
    cr_expect_eq(policy_shape_settle(POLICY_SHAPE_SLOW_CALL, POLICY_END_NEUTRAL, 1), POLICY_HELD_KEEP);
    /* nothing held settles nothing */
    cr_expect_eq(policy_shape_settle(POLICY_SHAPE_NONE, POLICY_END_OTHER, 1), POLICY_HELD_ENDPOINT);
    cr_expect_eq(POLICY_SHAPE_ENDPOINTS, 2);
}

Test(shape, unread_only_for_parse_and_invalid_request)
{
    wire_rpc_error_t e;
    memset(&e, 0, sizeof(e));
    cr_expect_eq(policy_shape_unread(&e), 0, "no code");
    e.has_code = 1;
    static const struct {
        int64_t code;
        int unread;
    } cases[] = {{-32700, 1}, {-32600, 1}, {-32601, 0}, {-32602, 0}, {-32603, 0}, {-32000, 0}, {-32005, 0}, {429, 0}, {0, 0}};
    for (size_t i = 0; i < NELEMS(cases); i++) {
        e.code = cases[i].code;
        cr_expect_eq(policy_shape_unread(&e), cases[i].unread, "code %lld", (long long)cases[i].code);
    }
}

/* A provider that gave up at one endpoint and a sluice deadline at the next
 * are the same slow call; a cheap call's give-up is the endpoint's. */
Test(shape, gave_up_settles_like_a_timeout)
{
    cr_expect_eq(policy_shape_settle(POLICY_SHAPE_SLOW_CALL, POLICY_END_GAVE_UP, 1), POLICY_HELD_REQUEST);
    cr_expect_eq(policy_shape_settle(POLICY_SHAPE_SLOW_CALL, POLICY_END_TIMEOUT, 1), POLICY_HELD_REQUEST);
    cr_expect_eq(policy_shape_settle(POLICY_SHAPE_SLOW_CALL, POLICY_END_OTHER, 1), POLICY_HELD_ENDPOINT);
    cr_expect_eq(policy_shape_settle(POLICY_SHAPE_TOO_LARGE, POLICY_END_GAVE_UP, 1), POLICY_HELD_ENDPOINT);
    cr_expect_eq(policy_shape_suspect(POLICY_END_GAVE_UP, 0), POLICY_SHAPE_NONE, "eth_blockNumber's 504 is the endpoint's");
}

static wire_rpc_error_t rpc_err(int64_t code, const char *msg)
{
    wire_rpc_error_t e = {.has_code = 1, .code = code};
    snprintf(e.message, sizeof e.message, "%s", msg);
    return e;
}

Test(shape, gave_up_answers)
{
    static const struct {
        int status;
        int coded;            /* 0: no JSON-RPC error in the body */
        int64_t code;
        const char *msg;
        int want;
    } cases[] = {
        {200, 1, -32002, "request timed out", 1},
        {200, 1, -32000, "execution aborted (timeout = 5s)", 1},
        {200, 1, -32603, "request timeout", 1},
        {200, 1, -32000, "context deadline exceeded", 1},
        {200, 1, -32015, "node timeout", 1},
        {200, 1, -32000, "Request Timed Out", 1},
        {504, 0, 0, NULL, 1},           /* the provider's gateway stopped waiting */
        {502, 0, 0, NULL, 1},           /* ... or lost its node mid-call */
        {504, 1, -32603, "internal error", 1},
        /* not a give-up: the node failed otherwise */
        {200, 1, -32002, "resource unavailable", 0},
        {200, 1, -32603, "internal error", 0},
        {500, 0, 0, NULL, 0},
        {503, 0, 0, NULL, 0},
        {503, 1, -32603, "service unavailable", 0},
        {200, 0, 0, NULL, 0},
    };
    for (size_t i = 0; i < NELEMS(cases); i++) {
        wire_rpc_error_t e = rpc_err(cases[i].code, cases[i].msg ? cases[i].msg : "");
        cr_expect_eq(policy_shape_gave_up(cases[i].status, cases[i].coded ? &e : NULL), cases[i].want,
                     "case %zu: %d %s", i, cases[i].status, cases[i].msg ? cases[i].msg : "(no body)");
    }
}
