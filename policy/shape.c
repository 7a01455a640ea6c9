/* policy/shape.c: the table behind policy/shape.h. */
#include "policy/shape.h"

#include <stddef.h>
#include <string.h>
#include <strings.h>

static const char *const shape_names[POLICY_SHAPE_COUNT] = {
#define POLICY_SHAPE_NAME_(name, str) [POLICY_SHAPE_##name] = str,
    POLICY_SHAPE_MAP(POLICY_SHAPE_NAME_)
#undef POLICY_SHAPE_NAME_
};

/* end -> the shape it suggests; heavy_only: only when the attempt carried a
 * call that may be slow by nature (a cheap read never is). */
static const struct {
    policy_shape_t shape;
    unsigned char heavy_only;
} suspects[POLICY_END_COUNT] = {
    [POLICY_END_OTHER] = {POLICY_SHAPE_NONE, 0},
    [POLICY_END_NEUTRAL] = {POLICY_SHAPE_NONE, 0},
    [POLICY_END_TOO_LARGE] = {POLICY_SHAPE_TOO_LARGE, 0},
    [POLICY_END_TIMEOUT] = {POLICY_SHAPE_SLOW_CALL, 1},
    /* the provider's own deadline instead of ours: the same slow call, so a
     * sluice timeout at one endpoint and a provider's at the next agree */
    [POLICY_END_GAVE_UP] = {POLICY_SHAPE_SLOW_CALL, 1},
    [POLICY_END_UNREAD] = {POLICY_SHAPE_ID_UNANSWERABLE, 0},
};

const char *policy_shape_name(policy_shape_t s)
{
    return (unsigned)s < POLICY_SHAPE_COUNT ? shape_names[s] : "unknown";
}

policy_shape_t policy_shape_suspect(policy_attempt_end_t end, int heavy)
{
    if ((unsigned)end >= POLICY_END_COUNT)
        return POLICY_SHAPE_NONE;
    if (suspects[end].heavy_only && !heavy)
        return POLICY_SHAPE_NONE;
    return suspects[end].shape;
}

policy_held_t policy_shape_settle(policy_shape_t held, policy_attempt_end_t next, int heavy)
{
    if (next == POLICY_END_NEUTRAL)
        return POLICY_HELD_KEEP;
    if (held != POLICY_SHAPE_NONE && policy_shape_suspect(next, heavy) == held)
        return POLICY_HELD_REQUEST;
    return POLICY_HELD_ENDPOINT;
}

int policy_shape_unread(const wire_rpc_error_t *err)
{
    return err->has_code && (err->code == -32700 || err->code == -32600);
}

/* Answers that say "gave up for time". A row matches on its HTTP status
 * (0: any) and, when words is set, on the error message holding one of them
 * (case-insensitive). First match wins; no match: not a give-up. */
#define WORDS(...) ((const char *const[]){__VA_ARGS__, NULL})
static const struct {
    uint16_t status;
    const char *const *words;
} gave_up_rows[] = {
    {502, NULL}, /* the provider's proxy lost its node mid-call (nginx, Cloudflare, ALB) */
    {504, NULL}, /* the provider's proxy stopped waiting for its node */
    /* geth -32002 "request timed out" and "execution aborted (timeout = 5s)",
     * Erigon/Nethermind "request timeout", Go's "context deadline exceeded",
     * eRPC's -32015 "... timeout" */
    {0, WORDS("timed out", "timeout", "deadline exceeded")},
};
#undef WORDS

static int has_word(const char *msg, const char *const *words)
{
    for (; *words != NULL; words++)
        if (strcasestr(msg, *words) != NULL)
            return 1;
    return 0;
}

int policy_shape_gave_up(int http_status, const wire_rpc_error_t *err)
{
    for (size_t i = 0; i < sizeof gave_up_rows / sizeof gave_up_rows[0]; i++) {
        if (gave_up_rows[i].status != 0 && gave_up_rows[i].status != http_status)
            continue;
        if (gave_up_rows[i].words != NULL && (err == NULL || !has_word(err->message, gave_up_rows[i].words)))
            continue;
        return 1;
    }
    return 0;
}
