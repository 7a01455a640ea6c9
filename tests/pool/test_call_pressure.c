/* tests/pool/test_call_pressure.c: what the call loop counts for the
 * network's pressure level (pool/pool_pressure.c, pool/pool_share.c) and
 * spends of an endpoint's credits (pool/pool_credit.c), through the scripted
 * transport: the depth (calls holding an upstream slot), each identity's
 * part of it, the tries and refusals of settled calls, and an endpoint
 * lacking credits skipped before anything is sent. */
#include "policy/rolling.h"
#include "tests/pool/scripted.h"

#define BN "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_blockNumber\",\"params\":[]}"
#define BN_OK "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"0x10\"}"
#define CHAIN "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"eth_chainId\",\"params\":[]}"
#define CHAIN_OK "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":\"0x1\"}"
#define GAS "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"eth_gasPrice\",\"params\":[]}"
#define FEE "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"eth_maxPriorityFeePerGas\",\"params\":[]}"

TestSuite(call_pressure, .fini = sc_close);

static uint32_t depth(void)
{
    return sc.net->pressure.depth;
}

/* Settled client calls in the window, and how many the upstreams refused. */
static void tries(uint64_t *n, uint64_t *refused)
{
    uint64_t v[2];
    pool_pressure_t *pr = &sc.net->pressure;
    policy_roll_sum(&pr->try_roll, &pr->try_v[0][0], 2, sc.conf.pressure.window_ms, sl_now_ms(), v);
    *n = v[0];
    *refused = v[1];
}

Test(call_pressure, the_depth_counts_calls_until_they_settle_or_leave)
{
    sc_open_n(1);
    sc_call_t a = {0}, b = {0};
    sc_start_one(&a, BN, 0);
    sc_start_one(&b, CHAIN, 0);
    cr_expect_eq(depth(), 2);
    sc_reply(0, 200, BN_OK);
    cr_expect_eq(depth(), 2, "until its callback, a call is not settled");
    sc_wait_done(&a.done);
    cr_expect_eq(depth(), 1);
    sc_cancel_call(b.call);
    cr_expect_eq(depth(), 0);
    sc_release(a.call);
    cr_expect_eq(depth(), 0, "a release after the settle takes nothing off twice");
}

Test(call_pressure, each_identity_counts_its_own_calls)
{
    sc_open_n(1);
    sc_call_t c[4] = {0};
    sc_start_one(&c[0], BN, 7);
    sc_start_one(&c[1], CHAIN, 7);
    sc_start_one(&c[2], GAS, 8);
    sc_start_one(&c[3], FEE, 0);
    cr_expect_eq(depth(), 4);
    cr_expect_eq(pool_share_held(sc.net, 7), 2);
    cr_expect_eq(pool_share_held(sc.net, 8), 1);
    cr_expect_eq(pool_share_held(sc.net, 0), 0, "no identity: not counted");
    sc_reply(0, 200, BN_OK);
    sc_wait_done(&c[0].done);
    cr_expect_eq(pool_share_held(sc.net, 7), 1);
    for (size_t i = 0; i < 4; i++)
        sc_release(c[i].call);
    cr_expect_eq(pool_share_held(sc.net, 7), 0);
    cr_expect_eq(pool_share_held(sc.net, 8), 0);
    cr_expect_eq(depth(), 0);
    cr_expect_eq(pool_network_pressure_for(sc.net, 7), POLICY_PRESSURE_OK);
}

Test(call_pressure, a_coalesced_call_holds_no_slot_until_it_leads)
{
    sc_open_n(1);
    sc_call_t a = {0}, b = {0};
    static const char bal_a[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_getBalance\",\"params\":[\"0x00000000000000000000000000000000000000aa\",\"latest\"]}";
    static const char bal_b[] = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"eth_getBalance\",\"params\":[\"0x00000000000000000000000000000000000000aa\",\"latest\"]}";
    sc_start_one(&a, bal_a, 1);
    sc_start_one(&b, bal_b, 2);
    cr_expect_eq(depth(), 1, "the group holds one slot");
    cr_expect_eq(pool_share_held(sc.net, 2), 0);
    sc_cancel_call(a.call);
    cr_expect_eq(depth(), 1, "the waiter goes upstream now: it holds the slot");
    cr_expect_eq(pool_share_held(sc.net, 1), 0);
    cr_expect_eq(pool_share_held(sc.net, 2), 1);
    sc_reply(1, 200, "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":\"0x5\"}");
    sc_wait_done(&b.done);
    cr_expect_eq(depth(), 0);
    cr_expect_eq(pool_share_held(sc.net, 2), 0);
}

Test(call_pressure, a_waiting_poll_is_in_the_depth)
{
    sc_conf(1);
    sc.eps[0].max_inflight = 1;
    sc_open();
    sc_call_t a = {0}, p = {0};
    sc_start_one(&a, BN, 0);
    sc_start_one(&p, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"eth_getTransactionReceipt\",\"params\":[\"0x1111111111111111111111111111111111111111111111111111111111111111\"]}", 0);
    cr_expect_eq(depth(), 2);
    sc_cancel_call(p.call);
    cr_expect_eq(depth(), 1);
    sc_cancel_call(a.call);
    cr_expect_eq(depth(), 0);
}

Test(call_pressure, nothing_is_counted_without_pressure)
{
    sc_conf(1);
    sc.conf.pressure.enabled = 0;
    sc_open();
    sc_call_t a = {0};
    sc_start_one(&a, BN, 9);
    cr_expect_eq(depth(), 0);
    cr_expect_eq(pool_share_held(sc.net, 9), 0);
    sc_reply(0, 200, BN_OK);
    sc_wait_done(&a.done);
    uint64_t n, refused;
    tries(&n, &refused);
    cr_expect_eq(n, 0);
}

Test(call_pressure, a_settled_call_is_a_try_and_the_upstreams_refusal_a_refusal)
{
    sc_open_n(2);
    uint64_t n, refused;
    /* answered */
    sc_call_t a = {0};
    sc_start_one(&a, BN, 0);
    sc_reply(0, 200, BN_OK);
    sc_wait_done(&a.done);
    tries(&n, &refused);
    cr_expect_eq(n, 1);
    cr_expect_eq(refused, 0);
    /* refused at one endpoint, answered by the other: cost the client nothing */
    sc_call_t b = {0};
    sc_start_one(&b, CHAIN, 0);
    sc_finish(1, (sc_answer_t){.status = 429, .body = "", .retry_after_s = 60});
    sc_reply(2, 200, CHAIN_OK);
    sc_wait_done(&b.done);
    tries(&n, &refused);
    cr_expect_eq(n, 2);
    cr_expect_eq(refused, 0);
    /* refused by every endpoint it could try */
    sc_call_t c = {0};
    sc_start_one(&c, GAS, 0);
    cr_expect_eq(sc_att(3)->ep, 1);
    sc_finish(3, (sc_answer_t){.status = 429, .body = "", .retry_after_s = 60});
    sc_wait_done(&c.done);
    sc_expect_failed(&c.item, POOL_OUTCOME_RATE_LIMITED);
    tries(&n, &refused);
    cr_expect_eq(n, 3);
    cr_expect_eq(refused, 1);
    /* a call that leaves first is no try */
    sc_call_t d = {0};
    sc_start_one(&d, FEE, 0);
    sc_cancel_call(d.call);
    tries(&n, &refused);
    cr_expect_eq(n, 3);
}

/* ---- credits (the ledgers are in shared state) ---- */

/* Endpoint 0 has a budget of `day` credits a day; a flat call costs 1. */
static void open_budget(uint64_t day, size_t n)
{
    sc_with_state();
    sc_conf(n);
    sc.eps[0].has_credits = 1;
    sc.eps[0].credits.limit[POLICY_CREDIT_DAY] = day;
    sc.eps[0].credits.month_reset_day = 1;
    sc_open();
}

Test(call_pressure, an_endpoint_out_of_credits_is_skipped_before_anything_is_sent)
{
    open_budget(2, 2);
    cr_expect_eq(sc_first_endpoint(BN, BN_OK), 0);
    cr_expect_eq(sc_first_endpoint(CHAIN, CHAIN_OK), 0);
    cr_expect_eq(sc_ep(0)->health.stats.credits_spent, 2);
    cr_expect_eq(sc_first_endpoint(BN, BN_OK), 1, "the day's two credits are spent");
    cr_expect_eq(sc_ep(0)->health.stats.attempts, 2, "nothing was sent to endpoint 0");
    cr_expect_eq(sc_ep(1)->health.stats.credits_spent, 1, "usage is counted without a budget too");
}

Test(call_pressure, every_endpoint_out_of_credits_is_a_rate_limit_until_the_window_turns)
{
    open_budget(1, 1);
    cr_expect_eq(sc_first_endpoint(BN, BN_OK), 0);
    sc_call_t c = {0};
    sc_start_one(&c, CHAIN, 0);
    cr_expect_eq(sc.natt, 1, "not sent");
    sc_wait_done(&c.done);
    sc_expect_failed(&c.item, POOL_OUTCOME_RATE_LIMITED);
    cr_expect_eq(pool_call_attempts(c.call), 0);
    cr_expect(c.item.retry_after_ms > 0 && c.item.retry_after_ms <= 86400u * 1000, "retry after %u ms",
              c.item.retry_after_ms);
    uint64_t n, refused;
    tries(&n, &refused);
    cr_expect_eq(refused, 1, "lacking credits is the upstreams' refusal");
}
