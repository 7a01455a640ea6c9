/* tests/pool/test_call_consensus.c: compared reads (pool/pool_consensus.c)
 * through the scripted transport: the fan-out to `of` endpoints at once,
 * an answer as soon as a quorum agrees (the rest cancelled), no quorum,
 * a failure that is no vote (and its replacement), a deterministic error
 * that is one, and the calls that are not compared. */
#include "tests/pool/scripted.h"

#define NONCE "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_getTransactionCount\",\"params\":[\"0xab\",\"latest\"]}"
#define ANS(v) "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"" v "\"}"
#define CALL "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_call\",\"params\":[{\"to\":\"0x01\"},\"latest\"]}"
#define REVERT                                                                                                       \
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":3,\"message\":\"execution reverted\",\"data\":\"0x\"}}"
#define BN "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_blockNumber\",\"params\":[]}"

TestSuite(call_consensus, .fini = sc_close);

static char *methods[] = {"eth_call", "eth_getTransactionCount"};

/* n endpoints; eth_getTransactionCount and eth_call compared, quorum of of. */
static void open_consensus(size_t n, uint32_t quorum, uint32_t of)
{
    sc_conf(n);
    sc.conf.consensus = (policy_consensus_conf_t){.methods = methods, .nmethods = 2, .quorum = quorum, .of = of};
    sc_open();
}

/* A compared call started: it went to endpoints 0, 1, 2 at once. */
static void start_fanned(sc_call_t *c, const char *raw)
{
    sc_start_one(c, raw, 0);
    cr_assert_eq(sc.natt, 3, "the call went to of endpoints at once (%zu)", sc.natt);
    for (int i = 0; i < 3; i++) {
        sc_expect_sent((size_t)i, i, raw);
        cr_expect_eq(sc_att((size_t)i)->is_write, 0);
    }
}

Test(call_consensus, a_quorum_outvotes_one_liar)
{
    open_consensus(3, 2, 3);
    sc_call_t c = {0};
    start_fanned(&c, NONCE);
    sc_reply(0, 200, ANS("0x5"));
    sc_reply(1, 200, ANS("0x9")); /* the liar */
    cr_expect_eq(c.done.n, 0, "one against one: the third decides");
    sc_reply(2, 200, ANS("0x5"));
    sc_wait_done(&c.done);
    sc_expect_answer(&c.item, 0, ANS("0x5"));
    cr_expect(sc_answer_id_is(&c.item, "1"));
    cr_expect_eq(sc_ep(1)->health.stats.consensus_disagreed, 1);
    cr_expect_eq(sc_ep(1)->disagreed, 1, "the liar's score counts it");
    cr_expect_eq(sc_ep(0)->health.stats.consensus_disagreed, 0);
    cr_expect_eq(sc_ep(2)->health.stats.consensus_disagreed, 0);
    cr_expect_eq(sc_ep(0)->health.stats.consensus_agreed, 1, "the answer used was endpoint 0's");
    cr_expect_eq(pool_call_attempts(c.call), 3);
    cr_expect_eq(pool_call_hedges(c.call), 0);
}

Test(call_consensus, the_answer_comes_at_quorum_without_waiting_for_the_slow_third)
{
    open_consensus(3, 2, 3);
    sc_call_t c = {0};
    start_fanned(&c, NONCE);
    sc_reply(2, 200, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\": \"0x5\" }"); /* equal but for whitespace */
    sc_reply(0, 200, ANS("0x5"));
    cr_expect_eq(sc_att(1)->state, SC_CANCELLED, "the slow third is cancelled at quorum");
    sc_wait_done(&c.done);
    cr_expect_eq(c.item.state, POOL_ITEM_ANSWERED);
    cr_expect_eq(c.item.endpoint, 2, "the first answer of the winning group");
    cr_expect_eq(sc_inflight(1), 0);
    cr_expect_eq(sc_log_len(c.call), 3);
    sc_expect_log(c.call, 2, 1, POOL_FAIL_NONE, 0, POOL_ATTEMPT_CANCELLED | POOL_ATTEMPT_FANOUT);
    cr_expect_eq(sc_ep(1)->health.stats.consensus_disagreed, 0, "a cancelled endpoint did not disagree");
}

Test(call_consensus, no_quorum_is_no_consensus_with_the_groups)
{
    open_consensus(3, 2, 3);
    sc_call_t c = {0};
    start_fanned(&c, NONCE);
    sc_reply(0, 200, ANS("0x1"));
    sc_reply(1, 200, ANS("0x2"));
    sc_reply(2, 200, ANS("0x1 ")); /* a value that differs inside the string */
    sc_wait_done(&c.done);
    sc_expect_failed(&c.item, POOL_OUTCOME_NO_CONSENSUS);
    uint64_t masks[4];
    cr_assert_eq(pool_call_consensus_groups(c.call, masks, 4), 3);
    cr_expect_eq(masks[0], 1u);
    cr_expect_eq(masks[1], 2u);
    cr_expect_eq(masks[2], 4u);
    cr_expect_eq(sc_ep(0)->health.stats.consensus_none, 1, "counted once, at the first answer's endpoint");
    cr_expect_eq(sc_ep(1)->health.stats.consensus_disagreed, 0, "nobody is outvoted without a quorum");
}

Test(call_consensus, a_two_two_tie_of_four_is_no_consensus)
{
    open_consensus(4, 2, 4);
    sc_call_t c = {0};
    sc_start_one(&c, NONCE, 0);
    cr_assert_eq(sc.natt, 4);
    sc_reply(0, 200, ANS("0x1"));
    sc_reply(1, 200, ANS("0x1"));
    cr_expect_eq(c.done.n, 0, "two pending answers could still tie it");
    sc_reply(2, 200, ANS("0x2"));
    sc_reply(3, 200, ANS("0x2"));
    sc_wait_done(&c.done);
    sc_expect_failed(&c.item, POOL_OUTCOME_NO_CONSENSUS);
    uint64_t masks[4];
    cr_assert_eq(pool_call_consensus_groups(c.call, masks, 4), 2);
    cr_expect_eq(masks[0], 3u);
    cr_expect_eq(masks[1], 12u);
}

Test(call_consensus, a_timeout_is_no_vote_and_a_fourth_endpoint_takes_its_place)
{
    open_consensus(4, 2, 3);
    sc_call_t c = {0};
    start_fanned(&c, NONCE);
    sc_reply(1, 200, ANS("0x5"));
    sc_fail(0, POOL_FAIL_ATTEMPT_TIMEOUT);
    cr_assert_eq(sc.natt, 4, "the lost vote was replaced");
    sc_expect_sent(3, 3, NONCE);
    sc_reply(2, 200, ANS("0x6"));
    cr_expect_eq(c.done.n, 0);
    sc_reply(3, 200, ANS("0x5"));
    sc_wait_done(&c.done);
    sc_expect_answer(&c.item, 1, ANS("0x5"));
    cr_expect_eq(sc_ep(2)->health.stats.consensus_disagreed, 1);
    cr_expect_eq(sc_ep(0)->health.stats.consensus_disagreed, 0, "a timeout is no disagreement");
    cr_expect_eq(sc_ep(0)->health.stats.outcomes[STATE_OUTCOME_TIMEOUT], 1, "but it is the endpoint's failure");
}

Test(call_consensus, a_timeout_with_no_endpoint_left_leaves_no_quorum)
{
    open_consensus(3, 2, 3);
    sc_call_t c = {0};
    start_fanned(&c, NONCE);
    sc_fail(0, POOL_FAIL_ATTEMPT_TIMEOUT);
    sc_reply(1, 200, ANS("0x5"));
    sc_reply(2, 200, ANS("0x6"));
    sc_wait_done(&c.done);
    sc_expect_failed(&c.item, POOL_OUTCOME_NO_CONSENSUS);
    uint64_t masks[4];
    cr_assert_eq(pool_call_consensus_groups(c.call, masks, 4), 2, "the timeout is in no group");
    cr_expect_eq(masks[0], 2u);
    cr_expect_eq(masks[1], 4u);
}

Test(call_consensus, timeouts_that_leave_no_quorum_possible_are_a_timeout)
{
    open_consensus(3, 2, 3);
    sc_call_t c = {0};
    start_fanned(&c, NONCE);
    sc_fail(0, POOL_FAIL_ATTEMPT_TIMEOUT);
    sc_fail(1, POOL_FAIL_FIRST_BYTE_TIMEOUT);
    cr_expect_eq(sc_att(2)->state, SC_CANCELLED, "one answer cannot make a quorum of 2: not waited for");
    sc_wait_done(&c.done);
    sc_expect_failed(&c.item, POOL_OUTCOME_TIMEOUT);
    uint64_t masks[4];
    cr_expect_eq(pool_call_consensus_groups(c.call, masks, 4), 0);
}

Test(call_consensus, a_deterministic_error_is_a_vote)
{
    open_consensus(3, 2, 3);
    sc_call_t c = {0};
    start_fanned(&c, CALL);
    sc_reply(0, 200, REVERT);
    sc_reply(2, 200, REVERT);
    sc_wait_done(&c.done);
    sc_expect_answer(&c.item, 0, REVERT);
    cr_expect_eq(c.item.verdict, POLICY_VERDICT_DETERMINISTIC);
    cr_expect_eq(sc_att(1)->state, SC_CANCELLED);
}

Test(call_consensus, an_error_and_a_result_are_two_answers)
{
    open_consensus(3, 2, 3);
    sc_call_t c = {0};
    start_fanned(&c, CALL);
    sc_reply(0, 200, REVERT);
    sc_reply(1, 200, ANS("0x"));
    sc_reply(2, 200, ANS("0x"));
    sc_wait_done(&c.done);
    sc_expect_answer(&c.item, 1, ANS("0x"));
    cr_expect_eq(sc_ep(0)->health.stats.consensus_disagreed, 1);
}

Test(call_consensus, a_rate_limited_endpoint_is_no_vote)
{
    open_consensus(3, 2, 3);
    sc_call_t c = {0};
    start_fanned(&c, NONCE);
    sc_reply(0, 429, "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32005,\"message\":\"rate limited\"}}");
    sc_reply(1, 200, ANS("0x5"));
    sc_reply(2, 200, ANS("0x5"));
    sc_wait_done(&c.done);
    sc_expect_answer(&c.item, 1, ANS("0x5"));
    cr_expect_eq(sc_ep(0)->health.stats.consensus_disagreed, 0);
}

Test(call_consensus, the_deadline_cancels_the_fan_out)
{
    sc_conf(3);
    sc.conf.consensus = (policy_consensus_conf_t){.methods = methods, .nmethods = 2, .quorum = 2, .of = 3};
    sc.conf.timeouts.request_ms = 50;
    sc_open();
    sc_call_t c = {0};
    start_fanned(&c, NONCE);
    sc_reply(0, 200, ANS("0x5"));
    sc_wait_done(&c.done);
    sc_expect_failed(&c.item, POOL_OUTCOME_DEADLINE);
    cr_expect_eq(sc_att(1)->state, SC_CANCELLED);
    cr_expect_eq(sc_att(2)->state, SC_CANCELLED);
    cr_expect_eq(sc_inflight(1) + sc_inflight(2), 0);
}

Test(call_consensus, a_client_going_away_cancels_the_fan_out)
{
    open_consensus(3, 2, 3);
    sc_call_t c = {0};
    start_fanned(&c, NONCE);
    sc_cancel_call(c.call);
    for (size_t i = 0; i < 3; i++)
        cr_expect_eq(sc_att(i)->state, SC_CANCELLED);
    cr_expect_eq(c.done.n, 0);
}

Test(call_consensus, a_method_not_listed_goes_to_one_endpoint)
{
    open_consensus(3, 2, 3);
    sc_call_t c = {0};
    sc_start_one(&c, BN, 0);
    cr_expect_eq(sc.natt, 1);
    sc_reply(0, 200, ANS("0x10"));
    sc_wait_done(&c.done);
    sc_expect_answer(&c.item, 0, ANS("0x10"));
}

Test(call_consensus, a_batch_member_is_not_compared)
{
    open_consensus(3, 2, 3);
    sc_batch_t b = {0};
    sc_start_batch(&b, NONCE, BN);
    cr_expect_eq(sc.natt, 1, "a batch goes as one request, as without consensus");
    sc_reply(0, 200,
             "[{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":\"0x5\"},{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"0x10\"}]");
    sc_wait_done(&b.done);
    cr_expect_eq(b.items[0].state, POOL_ITEM_ANSWERED);
    cr_expect_eq(b.items[1].state, POOL_ITEM_ANSWERED);
}

Test(call_consensus, a_compared_call_is_never_hedged)
{
    sc_conf(4);
    sc.conf.consensus = (policy_consensus_conf_t){.methods = methods, .nmethods = 2, .quorum = 2, .of = 3};
    sc.conf.hedge.enabled = 1;
    sc.conf.hedge.min_ms = 5;
    sc.conf.hedge.max_ms = 5;
    sc_open();
    sc_call_t c = {0};
    start_fanned(&c, NONCE);
    sc_run_for(40);
    cr_expect_eq(sc.natt, 3, "no hedge to the fourth endpoint");
    sc_reply(0, 200, ANS("0x5"));
    sc_reply(1, 200, ANS("0x5"));
    sc_wait_done(&c.done);
    cr_expect_eq(pool_call_hedges(c.call), 0);
}

Test(call_consensus, an_endpoint_full_is_left_out_of_the_fan_out)
{
    sc_conf(4);
    sc.conf.consensus = (policy_consensus_conf_t){.methods = methods, .nmethods = 2, .quorum = 2, .of = 3};
    sc.eps[0].max_inflight = 1;
    sc_open();
    sc_call_t busy = {0};
    sc_start_one(&busy, BN, 0);
    cr_assert_eq(sc.natt, 1);
    cr_assert_eq(sc_att(0)->ep, 0, "endpoint 0 is full now");
    sc_call_t c = {0};
    sc_start_one(&c, NONCE, 0);
    cr_assert_eq(sc.natt, 4, "still of endpoints");
    for (size_t i = 1; i < 4; i++)
        cr_expect_eq(sc_att(i)->ep, (int)i);
}

Test(call_consensus, a_round_where_nothing_could_be_sent_is_followed_by_another_fan_out)
{
    open_consensus(3, 2, 3);
    for (int i = 0; i < 3; i++)
        sc_refuse_next(i, POOL_FAIL_CONNECT);
    sc_call_t c = {0};
    sc_start_one(&c, NONCE, 0);
    cr_assert_eq(sc.natt, 3);
    cr_expect_eq(c.done.n, 0, "the next round is after a backoff");
    sc_wait_attempts(6);
    for (size_t i = 3; i < 6; i++)
        cr_expect_eq(sc_att(i)->state, SC_HELD);
    sc_reply(3, 200, ANS("0x5"));
    sc_reply(4, 200, ANS("0x5"));
    sc_wait_done(&c.done);
    cr_expect_eq(c.item.state, POOL_ITEM_ANSWERED);
    cr_expect_eq(sc_att(5)->state, SC_CANCELLED);
}

Test(call_consensus, with_every_attempt_refused_the_call_ends_as_any)
{
    sc_conf(3);
    sc.conf.consensus = (policy_consensus_conf_t){.methods = methods, .nmethods = 2, .quorum = 2, .of = 3};
    sc.conf.max_attempts = 3;
    sc_open();
    for (int i = 0; i < 3; i++)
        sc_refuse_next(i, POOL_FAIL_CONNECT);
    sc_call_t c = {0};
    sc_start_one(&c, NONCE, 0);
    sc_wait_done(&c.done);
    cr_expect_eq(c.item.state, POOL_ITEM_FAILED);
    cr_expect_eq(c.item.outcome, POOL_OUTCOME_UPSTREAM_ERROR, "no answer at all is no disagreement");
    cr_expect_eq(sc.natt, 3, "max_attempts spent: no second round");
}

/* dispatch: max, of: 3 in the method's row (no consensus: on the network). */
static policy_method_t max_row = {.name = "eth_getTransactionCount", .cls = POLICY_CLASS_READ,
                                  .priority = POLICY_PRIO_HIGH, .retry_safe = 1, .cheap = 1,
                                  .dispatch = POLICY_DISPATCH_MAX, .of = 3};

static void open_max(size_t n)
{
    sc_conf(n);
    sc.conf.method_overrides = &max_row;
    sc.conf.nmethod_overrides = 1;
    sc_open();
}

Test(call_consensus, dispatch_max_waits_for_every_answer_and_gives_the_highest)
{
    open_max(3);
    sc_call_t c = {0};
    start_fanned(&c, NONCE);
    sc_reply(0, 200, ANS("0x5"));
    sc_reply(1, 200, ANS("0x5"));
    cr_expect_eq(c.done.n, 0, "two equal answers decide nothing: the third is awaited");
    sc_reply(2, 200, ANS("0x1a"));
    sc_wait_done(&c.done);
    cr_expect_eq(c.item.state, POOL_ITEM_ANSWERED);
    cr_expect_eq(c.item.endpoint, 2, "0x1a is the highest");
    cr_expect_eq(sc_ep(0)->health.stats.consensus_disagreed, 0, "nobody is outvoted");
}

Test(call_consensus, dispatch_max_replaces_a_failure_and_answers_from_the_rest)
{
    open_max(4);
    sc_call_t c = {0};
    start_fanned(&c, NONCE);
    sc_reply(1, 503, "busy");
    cr_assert_eq(sc.natt, 4, "the failure's place went to the fourth endpoint");
    sc_reply(0, 200, ANS("0x7"));
    sc_reply(2, 200, ANS("0x6"));
    sc_reply(3, 200, ANS("0x2"));
    sc_wait_done(&c.done);
    cr_expect_eq(c.item.endpoint, 0);
}
