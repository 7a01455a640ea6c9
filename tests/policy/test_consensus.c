/* tests/policy/test_consensus.c: agreement between endpoints (policy/consensus.h). */
#include <criterion/criterion.h>
#include <string.h>

#include "policy/consensus.h"
#include "policy/score.h"

#define SPAN(s) ((wire_span_t){0, (uint32_t)strlen(s)})

static policy_consensus_vote_t vote(const char *json)
{
    return (policy_consensus_vote_t){json, SPAN(json), 0};
}

static int eq(const char *a, const char *b)
{
    return policy_consensus_equal(a, SPAN(a), b, SPAN(b));
}

Test(consensus, whitespace_outside_strings_is_not_a_difference)
{
    cr_expect(eq("\"0x1\"", "\"0x1\""));
    cr_expect(eq("{\"a\":1,\"b\":[1,2]}", " {\n  \"a\": 1,\n  \"b\": [ 1, 2 ]\n}\n"));
    cr_expect(eq("[]", "[ ]"));
    cr_expect(!eq("\"a b\"", "\"ab\""));            /* inside a string it is */
    cr_expect(!eq("\"a\\\" b\"", "\"a\\\"b\""));    /* an escaped quote does not end the string */
    cr_expect(eq("[\"a\\\\\", 1]", "[\"a\\\\\",1]")); /* an escaped backslash does not escape the quote */
    cr_expect(!eq("\"0x1\"", "\"0x01\""));          /* numbers as spelled */
    cr_expect(!eq("{\"a\":1,\"b\":2}", "{\"b\":2,\"a\":1}"));
    cr_expect(!eq("1", "12"));
    cr_expect(!eq("[1]", "[1] 2"));
    /* spans inside a larger buffer: nothing past them */
    const char *buf = "xx[1, 2]yy[1,2]zz";
    cr_expect(policy_consensus_equal(buf, (wire_span_t){2, 6}, buf, (wire_span_t){10, 5}));
    cr_expect(!policy_consensus_equal(buf, (wire_span_t){2, 6}, buf, (wire_span_t){10, 6}));
}

Test(consensus, two_of_three_outvote_a_liar)
{
    policy_consensus_vote_t v[3] = {vote("\"0x5\""), vote("\"0x7\""), vote(" \"0x5\" ")};
    policy_consensus_outcome_t o;
    /* two answers in, disagreeing, one to come: wait */
    policy_consensus_decide(v, 2, 1, 2, &o);
    cr_expect(!o.decided && !o.impossible);
    cr_expect_eq(o.ngroups, 2);
    policy_consensus_decide(v, 3, 0, 2, &o);
    cr_assert(o.decided);
    cr_expect_eq(o.winner, 0);
    cr_expect_eq(o.minority, 1u << 1);
    cr_expect_eq(o.ngroups, 2);
    cr_expect_eq(o.group_of[0], 0);
    cr_expect_eq(o.group_of[1], 1);
    cr_expect_eq(o.group_of[2], 0);
    cr_expect_eq(o.group_size[0], 2);
    cr_expect_eq(o.group_size[1], 1);
}

Test(consensus, decided_early_when_no_pending_answer_can_change_it)
{
    policy_consensus_vote_t v[2] = {vote("\"0x5\""), vote("\"0x5\"")};
    policy_consensus_outcome_t o;
    policy_consensus_decide(v, 2, 1, 2, &o);
    cr_expect(o.decided);
    cr_expect_eq(o.minority, 0);
    /* quorum 2 of 5: two agree, three to come could make a rival group of 3 */
    policy_consensus_decide(v, 2, 3, 2, &o);
    cr_expect(!o.decided && !o.impossible);
}

Test(consensus, no_quorum)
{
    policy_consensus_vote_t v[3] = {vote("\"0x1\""), vote("\"0x2\""), vote("\"0x3\"")};
    policy_consensus_outcome_t o;
    policy_consensus_decide(v, 3, 0, 2, &o);
    cr_expect(!o.decided);
    cr_expect(o.impossible);
    cr_expect_eq(o.ngroups, 3);
    /* impossible before every answer is in */
    policy_consensus_decide(v, 2, 1, 3, &o);
    cr_expect(o.impossible);
    /* a tie at quorum is no agreement */
    policy_consensus_vote_t t[4] = {vote("1"), vote("2"), vote("1"), vote("2")};
    policy_consensus_decide(t, 4, 0, 2, &o);
    cr_expect(!o.decided && o.impossible);
    cr_expect_eq(o.group_size[0], 2);
    cr_expect_eq(o.group_size[1], 2);
    /* nothing in, nothing pending */
    policy_consensus_decide(t, 0, 0, 2, &o);
    cr_expect(o.impossible);
}

Test(consensus, errors_vote_apart_from_results)
{
    const char *revert = "{\"code\":3,\"message\":\"execution reverted\"}";
    policy_consensus_vote_t v[3] = {{revert, SPAN(revert), 1}, {revert, SPAN(revert), 1}, vote("\"0x\"")};
    policy_consensus_outcome_t o;
    policy_consensus_decide(v, 3, 0, 2, &o);
    cr_expect(o.decided);
    cr_expect_eq(o.winner, 0);
    cr_expect_eq(o.minority, 1u << 2);
    /* the same bytes as an error and as a result are different answers */
    policy_consensus_vote_t w[2] = {{"1", SPAN("1"), 1}, vote("1")};
    policy_consensus_decide(w, 2, 0, 2, &o);
    cr_expect_eq(o.ngroups, 2);
}

Test(consensus, applies_to_the_configured_methods)
{
    char *methods[] = {"eth_getTransactionCount", "eth_call"};
    policy_consensus_conf_t c = {methods, 2, 2, 3};
    cr_expect(policy_consensus_applies(&c, "eth_call", 8));
    cr_expect(policy_consensus_applies(&c, "eth_getTransactionCount", 23));
    cr_expect(!policy_consensus_applies(&c, "eth_cal", 7));
    cr_expect(!policy_consensus_applies(&c, "eth_callx", 9));
    cr_expect(!policy_consensus_applies(NULL, "eth_call", 8));
    policy_consensus_conf_t off = {0};
    cr_expect(!policy_consensus_applies(&off, "eth_call", 8));
}

Test(consensus, at_most_max_votes)
{
    policy_consensus_vote_t v[POLICY_CONSENSUS_MAX + 3];
    for (size_t i = 0; i < POLICY_CONSENSUS_MAX + 3; i++)
        v[i] = vote(i == POLICY_CONSENSUS_MAX - 1 ? "2" : "1");
    policy_consensus_outcome_t o;
    policy_consensus_decide(v, POLICY_CONSENSUS_MAX + 3, 0, 3, &o);
    cr_expect(o.decided);
    cr_expect_eq(o.group_size[0], POLICY_CONSENSUS_MAX - 1);
    cr_expect_eq(o.minority, (uint64_t)1 << (POLICY_CONSENSUS_MAX - 1));
}

Test(consensus, disagreements_halve_each_half_life)
{
    uint32_t n = 0;
    uint64_t at = 0;
    uint64_t t0 = 1000000;
    cr_expect_eq(policy_consensus_disagreed(&n, &at, t0, 1), 1);
    cr_expect_eq(policy_consensus_disagreed(&n, &at, t0 + 10, 3), 4);
    cr_expect_eq(policy_consensus_disagreed(&n, &at, t0 + POLICY_CONSENSUS_HALF_LIFE_MS - 1, 0), 4,
                 "no half-life has passed");
    cr_expect_eq(policy_consensus_disagreed(&n, &at, t0 + POLICY_CONSENSUS_HALF_LIFE_MS, 0), 2);
    cr_expect_eq(policy_consensus_disagreed(&n, &at, t0 + 2 * POLICY_CONSENSUS_HALF_LIFE_MS + 5, 0), 1);
    cr_expect_eq(policy_consensus_disagreed(&n, &at, t0 + 100 * POLICY_CONSENSUS_HALF_LIFE_MS, 0), 0);
    cr_expect_eq(policy_consensus_disagreed(&n, &at, t0 + 100 * POLICY_CONSENSUS_HALF_LIFE_MS, 1), 1,
                 "counting starts again");
    uint32_t big = UINT32_MAX;
    uint64_t big_at = t0;
    cr_expect_eq(policy_consensus_disagreed(&big, &big_at, t0, 5), UINT32_MAX, "saturates");
}

Test(consensus, one_report_per_endpoint_per_interval)
{
    uint64_t last = 0;
    uint64_t t0 = 5000;
    cr_expect(policy_consensus_report_due(&last, t0));
    cr_expect(!policy_consensus_report_due(&last, t0 + 1));
    cr_expect(!policy_consensus_report_due(&last, t0 + POLICY_CONSENSUS_REPORT_MS - 1));
    cr_expect(policy_consensus_report_due(&last, t0 + POLICY_CONSENSUS_REPORT_MS));
    cr_expect_eq(last, t0 + POLICY_CONSENSUS_REPORT_MS);
}

Test(consensus, a_disagreeing_endpoint_costs_more_up_to_a_cap)
{
    policy_score_conf_t conf = POLICY_SCORE_DEFAULTS;
    policy_score_input_t in = {.latency_ms = 10, .lag = 0};
    policy_score_t honest, liar, worst, capped;
    policy_score_compute(&conf, &in, 10, &honest);
    in.disagreed = 1;
    policy_score_compute(&conf, &in, 10, &liar);
    cr_expect_gt(liar.cost, honest.cost);
    cr_expect_null(liar.excluded, "a liar sinks, it is not excluded for it");
    in.disagreed = POLICY_SCORE_MAX_DISAGREED;
    policy_score_compute(&conf, &in, 10, &worst);
    in.disagreed = 1000;
    policy_score_compute(&conf, &in, 10, &capped);
    cr_expect_eq(worst.cost, capped.cost);
    cr_expect_gt(worst.cost, liar.cost);
}

Test(consensus, max_is_the_highest_hex_quantity)
{
    policy_consensus_vote_t v[5] = {vote("\"0x9\""), vote("\"0x01f\""), vote("\"0x1E\""), vote("null"),
                                    vote("\"0xzz\"")};
    cr_expect_eq(policy_consensus_max(v, 5), 1, "0x01f is the highest: leading zeros and case aside");
    cr_expect_eq(policy_consensus_max(v, 1), 0);
    cr_expect_eq(policy_consensus_max(v + 3, 2), -1, "no quantity among null and a bad string");
    cr_expect_eq(policy_consensus_max(v, 0), -1);
}
