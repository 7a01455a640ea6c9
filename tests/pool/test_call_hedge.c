/* tests/pool/test_call_hedge.c: hedged reads (pool/pool_hedge.c) through the
 * scripted transport. The delay is pinned to 20 ms (hedge.min_ms =
 * max_ms); tests wait for the hedge to start rather than for a time, and
 * check who won, what was cancelled and logged, and which slots stay held. */
#include "tests/pool/scripted.h"

#define BN "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_blockNumber\",\"params\":[]}"
#define BN_OK "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"0x10\"}"
#define HEDGE_MS 20

TestSuite(call_hedge, .fini = sc_close);

/* n endpoints, hedges on with a fixed delay. */
static void open_hedging(size_t n)
{
    sc_conf(n);
    sc.conf.hedge.enabled = 1;
    sc.conf.hedge.min_ms = HEDGE_MS;
    sc.conf.hedge.max_ms = HEDGE_MS;
    sc_open();
}

/* A read held at endpoint 0 until its hedge went to endpoint 1. */
static void start_hedged(sc_call_t *c, const char *raw)
{
    sc_start_one(c, raw, 0);
    cr_assert_eq(sc.natt, 1);
    cr_expect_eq(sc_att(0)->ep, 0);
    sc_wait_attempts(2);
    sc_expect_sent(1, 1, raw); /* the same body */
    cr_expect_eq(sc_att(1)->is_write, 0);
    cr_expect_eq(sc_att(0)->state, SC_HELD, "the first attempt is still out");
    cr_expect_eq(c->done.n, 0);
}

Test(call_hedge, the_hedge_wins_and_the_first_attempt_is_cancelled)
{
    open_hedging(2);
    sc_call_t c = {0};
    start_hedged(&c, BN);
    sc_reply(1, 200, BN_OK);
    cr_expect_eq(sc_att(0)->state, SC_CANCELLED);
    sc_wait_done(&c.done);
    sc_expect_answer(&c.item, 1, BN_OK);
    cr_expect_eq(pool_call_hedges(c.call), 1);
    cr_expect_eq(pool_call_attempts(c.call), 2);
    cr_expect_eq(sc_log_len(c.call), 2);
    sc_expect_log(c.call, 0, 1, POOL_FAIL_NONE, 200, POOL_ATTEMPT_HEDGE);
    sc_expect_log(c.call, 1, 0, POOL_FAIL_NONE, 0, POOL_ATTEMPT_CANCELLED);
    cr_expect_eq(sc_inflight(0), 1, "the loser's slot stays held: its provider may still be working");
    cr_expect_eq(sc_inflight(1), 0);
    cr_expect_eq(sc_ep(1)->health.stats.hedges_sent, 1);
    cr_expect_eq(sc_ep(1)->health.stats.hedges_won, 1);
    cr_expect_eq(sc_ep(0)->health.stats.hedges_cancelled, 1);
    cr_expect_eq(sc_ep(0)->health.stats.attempts, 0, "a beaten endpoint is not penalised");
    cr_expect_eq(c.item.failures, 0);
}

Test(call_hedge, the_first_attempt_wins_and_the_hedge_is_cancelled)
{
    open_hedging(2);
    sc_call_t c = {0};
    start_hedged(&c, BN);
    sc_reply(0, 200, BN_OK);
    cr_expect_eq(sc_att(1)->state, SC_CANCELLED);
    sc_wait_done(&c.done);
    sc_expect_answer(&c.item, 0, BN_OK);
    cr_expect_eq(pool_call_hedges(c.call), 1, "the hedge was sent, and lost");
    sc_expect_log(c.call, 0, 0, POOL_FAIL_NONE, 200, 0);
    sc_expect_log(c.call, 1, 1, POOL_FAIL_NONE, 0, POOL_ATTEMPT_CANCELLED | POOL_ATTEMPT_HEDGE);
    cr_expect_eq(sc_inflight(0), 0);
    cr_expect_eq(sc_inflight(1), 1, "the cancelled hedge's slot stays held");
    cr_expect_eq(sc_ep(1)->health.stats.hedges_sent, 1);
    cr_expect_eq(sc_ep(1)->health.stats.hedges_won, 0);
    cr_expect_eq(sc_ep(1)->health.stats.hedges_cancelled, 1);
}

Test(call_hedge, a_held_slot_is_let_go_when_the_attempt_deadline_would_have_ended)
{
    sc_conf(2);
    sc.conf.hedge.enabled = 1;
    sc.conf.hedge.min_ms = sc.conf.hedge.max_ms = HEDGE_MS;
    sc.conf.timeouts.attempt_ms = 100;
    sc_open();
    sc_call_t c = {0};
    start_hedged(&c, BN);
    sc_reply(1, 200, BN_OK);
    sc_wait_done(&c.done);
    cr_expect_eq(sc_inflight(0), 1);
    uint64_t t0 = sl_now_ms();
    while (sc_inflight(0) != 0 && sl_now_ms() < t0 + SC_LIMIT_MS)
        h2o_evloop_run(sc.loop, 5);
    cr_expect_eq(sc_inflight(0), 0, "held until attempt_ms after the attempt started");
}

Test(call_hedge, an_answer_before_the_delay_sends_no_hedge)
{
    open_hedging(2);
    sc_call_t c = {0};
    sc_start_one(&c, BN, 0);
    sc_reply(0, 200, BN_OK);
    sc_wait_done(&c.done);
    sc_run_for(4 * HEDGE_MS);
    cr_expect_eq(sc.natt, 1);
    cr_expect_eq(pool_call_hedges(c.call), 0);
}

Test(call_hedge, a_first_attempt_that_fails_waits_for_the_hedge)
{
    open_hedging(3);
    sc_call_t c = {0};
    start_hedged(&c, BN);
    sc_reply(0, 503, "");
    cr_expect_eq(sc.natt, 2, "no third attempt while the hedge may still answer");
    cr_expect_eq(c.done.n, 0);
    sc_reply(1, 200, BN_OK);
    sc_wait_done(&c.done);
    cr_expect_eq(sc.natt, 2);
    sc_expect_answer(&c.item, 1, BN_OK);
    sc_expect_log(c.call, 0, 0, POOL_FAIL_NONE, 503, 0);
    sc_expect_log(c.call, 1, 1, POOL_FAIL_NONE, 200, POOL_ATTEMPT_HEDGE);
    cr_expect_eq(sc_ep(1)->health.stats.hedges_won, 1);
    cr_expect_eq(sc_inflight(0) + sc_inflight(1) + sc_inflight(2), 0, "nothing was cancelled: no slot held");
}

Test(call_hedge, a_hedge_that_fails_waits_for_the_first_attempt)
{
    open_hedging(3);
    sc_call_t c = {0};
    start_hedged(&c, BN);
    sc_fail(1, POOL_FAIL_RESET);
    cr_expect_eq(sc.natt, 2);
    sc_reply(0, 200, BN_OK);
    sc_wait_done(&c.done);
    cr_expect_eq(sc.natt, 2);
    sc_expect_answer(&c.item, 0, BN_OK);
    sc_expect_log(c.call, 0, 1, POOL_FAIL_RESET, 0, POOL_ATTEMPT_HEDGE);
    sc_expect_log(c.call, 1, 0, POOL_FAIL_NONE, 200, 0);
    cr_expect_eq(c.item.failures, 1);
}

Test(call_hedge, both_failing_moves_the_call_to_the_next_endpoint)
{
    open_hedging(3);
    sc_call_t c = {0};
    start_hedged(&c, BN);
    sc_reply(1, 502, "");
    sc_reply(0, 503, "");
    cr_assert_eq(sc.natt, 3);
    sc_expect_sent(2, 2, BN);
    sc_reply(2, 200, BN_OK);
    sc_wait_done(&c.done);
    sc_expect_answer(&c.item, 2, BN_OK);
    cr_expect_eq(pool_call_attempts(c.call), 3);
}

Test(call_hedge, a_hedge_that_cannot_start_is_logged_and_the_first_attempt_still_counts)
{
    open_hedging(2);
    sc_refuse_next(1, POOL_FAIL_CONNECT);
    sc_call_t c = {0};
    sc_start_one(&c, BN, 0);
    sc_wait_attempts(2);
    cr_expect_eq(sc_att(1)->state, SC_REFUSED);
    sc_reply(0, 200, BN_OK);
    sc_wait_done(&c.done);
    sc_expect_answer(&c.item, 0, BN_OK);
    sc_expect_log(c.call, 0, 1, POOL_FAIL_CONNECT, 0, POOL_ATTEMPT_HEDGE);
    sc_expect_log(c.call, 1, 0, POOL_FAIL_NONE, 200, 0);
    cr_expect_eq(sc_ep(1)->health.stats.hedges_sent, 0);
}

Test(call_hedge, the_hedge_skips_a_full_endpoint)
{
    sc_conf(3);
    sc.conf.hedge.enabled = 1;
    sc.conf.hedge.min_ms = sc.conf.hedge.max_ms = HEDGE_MS;
    sc.eps[1].max_inflight = 1;
    sc_open();
    sc_call_t busy = {0}, c = {0};
    /* a heavy read (never hedged) takes endpoint 1's one slot */
    sc_refuse_next(0, POOL_FAIL_CONNECT);
    sc_start_one(&busy, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"eth_call\",\"params\":[{},\"latest\"]}", 0);
    cr_assert_eq(sc.natt, 2);
    cr_assert_eq(sc_att(1)->ep, 1);
    sc_start_one(&c, BN, 0);
    cr_assert_eq(sc.natt, 3);
    cr_expect_eq(sc_att(2)->ep, 0);
    sc_wait_attempts(4);
    sc_expect_sent(3, 2, BN);
    sc_reply(3, 200, BN_OK);
    sc_wait_done(&c.done);
    sc_expect_answer(&c.item, 2, BN_OK);
    sc_reply(1, 200, "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":\"0x\"}");
    sc_wait_done(&busy.done);
}

Test(call_hedge, a_batch_of_cheap_reads_is_hedged_with_the_same_body)
{
    static const char body[] = "[{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"eth_blockNumber\",\"params\":[]},"
                               "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_chainId\",\"params\":[]}]";
    open_hedging(2);
    sc_batch_t b = {0};
    sc_start_batch(&b, BN, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"eth_chainId\",\"params\":[]}");
    sc_wait_attempts(2);
    sc_expect_sent(0, 0, body);
    sc_expect_sent(1, 1, body);
    sc_reply(1, 200, "[{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":\"0x10\"},{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"0x1\"}]");
    sc_wait_done(&b.done);
    cr_expect_eq(b.items[0].endpoint, 1);
    cr_expect_eq(b.items[1].endpoint, 1);
    cr_expect_eq(sc_att(0)->state, SC_CANCELLED);
}

Test(call_hedge, a_release_cancels_both_exchanges_and_holds_no_slot)
{
    open_hedging(2);
    sc_call_t c = {0};
    start_hedged(&c, BN);
    sc_cancel_call(c.call);
    cr_expect_eq(sc_att(0)->state, SC_CANCELLED);
    cr_expect_eq(sc_att(1)->state, SC_CANCELLED);
    cr_expect_eq(sc_inflight(0), 0);
    cr_expect_eq(sc_inflight(1), 0);
    sc_run_for(2 * HEDGE_MS);
    cr_expect_eq(c.done.n, 0);
    cr_expect_eq(sc.natt, 2);
}

/* ---- what is never hedged ---- */

/* raw, held at endpoint 0 for several hedge delays, sends nothing else. */
static void expect_never_hedged(const char *raw)
{
    sc_call_t c = {0};
    size_t before = sc.natt;
    sc_start_one(&c, raw, 0);
    cr_assert_eq(sc.natt, before + 1);
    sc_run_for(5 * HEDGE_MS);
    cr_expect_eq(sc.natt, before + 1, "no hedge for %s", raw);
    sc_cancel_call(c.call);
}

Test(call_hedge, a_write_is_never_hedged)
{
    open_hedging(2);
    expect_never_hedged("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"eth_sendRawTransaction\",\"params\":[\"0x02f8aa\"]}");
}

Test(call_hedge, a_heavy_read_is_never_hedged)
{
    open_hedging(2);
    expect_never_hedged("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_call\",\"params\":[{},\"latest\"]}");
}

Test(call_hedge, a_cheap_method_made_heavy_by_its_params_is_never_hedged)
{
    open_hedging(2);
    expect_never_hedged("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_feeHistory\",\"params\":[\"0x400\",\"latest\",[25,75]]}");
}

Test(call_hedge, a_batch_with_a_heavy_member_is_never_hedged)
{
    open_hedging(2);
    sc_batch_t b = {0};
    sc_start_batch(&b, BN, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"eth_getLogs\",\"params\":[{}]}");
    sc_run_for(5 * HEDGE_MS);
    cr_expect_eq(sc.natt, 1);
    sc_cancel_call(b.call);
}

Test(call_hedge, nothing_is_hedged_when_hedging_is_off)
{
    sc_open_n(2); /* scripted.h's default: off */
    expect_never_hedged(BN);
}

Test(call_hedge, a_single_endpoint_is_never_hedged)
{
    open_hedging(1);
    expect_never_hedged(BN);
}

Test(call_hedge, no_hedge_beyond_the_budget)
{
    sc_conf(2);
    sc.conf.hedge.enabled = 1;
    sc.conf.hedge.min_ms = sc.conf.hedge.max_ms = HEDGE_MS;
    sc.conf.hedge.max_ratio = 0;
    sc.conf.hedge.burst = 1;
    sc_open();
    sc_call_t c = {0};
    start_hedged(&c, BN); /* the burst's one */
    sc_reply(0, 200, BN_OK);
    sc_wait_done(&c.done);
    expect_never_hedged("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_chainId\",\"params\":[]}");
}

/* ---- pinned confirmation polls (shared state: the pin is in LMDB) ---- */

#define RAW_TX "0x02f8aa"
#define SEND "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"eth_sendRawTransaction\",\"params\":[\"" RAW_TX "\"]}"
#define TXH "0x1111111111111111111111111111111111111111111111111111111111111111"
#define RECEIPT "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"eth_getTransactionReceipt\",\"params\":[\"" TXH "\"]}"

/* Endpoint 1 accepted the transaction TXH: it is pinned there. */
static void accept_at_1(void)
{
    sc_call_t w = {0};
    sc_refuse_next(0, POOL_FAIL_CONNECT);
    sc_start_one(&w, SEND, 0);
    cr_assert_eq(sc.natt, 2);
    sc_reply(1, 200, "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":\"" TXH "\"}");
    sc_wait_done(&w.done);
    sc_release(w.call);
}

Test(call_hedge, a_pinned_poll_goes_to_its_endpoint_and_is_never_hedged)
{
    sc_with_state();
    open_hedging(2);
    accept_at_1();
    sc_call_t c = {0};
    sc_start_one(&c, RECEIPT, 0);
    cr_assert_eq(sc.natt, 3);
    sc_expect_sent(2, 1, RECEIPT);
    sc_run_for(5 * HEDGE_MS);
    cr_expect_eq(sc.natt, 3, "a null from another node must never beat the pinned one");
    sc_reply(2, 200, "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"status\":\"0x1\"}}");
    sc_wait_done(&c.done);
    cr_expect_eq(c.item.endpoint, 1);
}

Test(call_hedge, an_unpinned_poll_is_hedged)
{
    sc_with_state();
    open_hedging(2);
    sc_call_t c = {0};
    start_hedged(&c, RECEIPT);
    sc_reply(1, 200, "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"status\":\"0x1\"}}");
    sc_wait_done(&c.done);
    cr_expect_eq(c.item.endpoint, 1);
}
