/* tests/pool/test_call_deadline.c: timeouts.request_ms and the end of a call
 * (pool/pool_call.c on_deadline, pool_call_release before or after the end): what
 * is cancelled, what the items end as, that the callback runs once (never
 * for a cancelled call), and that nothing is left behind (run these under
 * the sanitizer build too: -DSLUICE_SANITIZE=ON). */
#include "tests/pool/scripted.h"

#define BN "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_blockNumber\",\"params\":[]}"
#define BN_OK "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"0x10\"}"
#define REQUEST_MS 60

TestSuite(call_deadline, .fini = sc_close);

static void open_short(size_t n)
{
    sc_conf(n);
    sc.conf.timeouts.request_ms = REQUEST_MS;
    sc_open();
}

Test(call_deadline, the_deadline_cancels_the_attempt_in_flight)
{
    open_short(2);
    sc_call_t c = {0};
    uint64_t t0 = sl_now_ms();
    sc_start_one(&c, BN, 0);
    sc_wait_done(&c.done);
    cr_expect_geq(sl_now_ms() - t0, REQUEST_MS - 5, "not before request_ms");
    cr_expect_eq(sc_att(0)->state, SC_CANCELLED);
    cr_expect_eq(sc_inflight(0), 0);
    cr_expect_eq(sc.natt, 1, "no other endpoint once time is up");
    sc_expect_failed(&c.item, POOL_OUTCOME_DEADLINE);
    cr_expect_eq(c.item.endpoint, -1);
    sc_run_for(2 * REQUEST_MS);
    cr_expect_eq(c.done.n, 1, "the callback ran once");
}

Test(call_deadline, a_member_answered_before_the_deadline_keeps_its_answer)
{
    open_short(2);
    sc_batch_t b = {0};
    sc_start_batch(&b, BN, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"eth_chainId\",\"params\":[]}");
    sc_reply(0, 200, "[{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":\"0x10\"}]");
    cr_assert_eq(sc.natt, 2);
    cr_expect_eq(sc_att(1)->ep, 1);
    sc_wait_done(&b.done);
    cr_expect_eq(sc_att(1)->state, SC_CANCELLED);
    sc_expect_answer(&b.items[0], 0, "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":\"0x10\"}");
    sc_expect_failed(&b.items[1], POOL_OUTCOME_DEADLINE);
}

Test(call_deadline, the_deadline_stops_a_hedge_and_its_first_attempt)
{
    sc_conf(2);
    sc.conf.timeouts.request_ms = REQUEST_MS;
    sc.conf.hedge.enabled = 1;
    sc.conf.hedge.min_ms = sc.conf.hedge.max_ms = 10;
    sc_open();
    sc_call_t c = {0};
    sc_start_one(&c, BN, 0);
    sc_wait_attempts(2);
    sc_wait_done(&c.done);
    cr_expect_eq(sc_att(0)->state, SC_CANCELLED);
    cr_expect_eq(sc_att(1)->state, SC_CANCELLED);
    cr_expect_eq(sc_inflight(0), 0, "a deadline holds no slot");
    cr_expect_eq(sc_inflight(1), 0);
    sc_expect_failed(&c.item, POOL_OUTCOME_DEADLINE);
}

Test(call_deadline, a_deadline_during_the_by_hash_check_answers_with_the_nodes_error)
{
    static const char low[] = "{\"jsonrpc\":\"2.0\",\"id\":9,\"error\":{\"code\":-32000,\"message\":\"nonce too low\"}}";
    open_short(1);
    sc_call_t c = {0};
    sc_start_one(&c, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"eth_sendRawTransaction\",\"params\":[\"0x02f8aa\"]}", 0);
    sc_reply(0, 200, low);
    cr_assert_eq(sc.natt, 2, "the check started");
    sc_wait_done(&c.done);
    cr_expect_eq(sc_att(1)->state, SC_CANCELLED);
    sc_expect_answer(&c.item, 0, low);
    cr_expect_eq(c.item.verdict, POLICY_VERDICT_DETERMINISTIC);
}

Test(call_deadline, a_coalesced_waiter_shares_its_leaders_deadline)
{
    static const char bal1[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_getBalance\",\"params\":[\"0x00000000000000000000000000000000000000aa\",\"latest\"]}";
    static const char bal2[] = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"eth_getBalance\",\"params\":[\"0x00000000000000000000000000000000000000aa\",\"latest\"]}";
    open_short(1);
    sc_call_t a = {0}, b = {0};
    sc_start_one(&a, bal1, 0);
    sc_start_one(&b, bal2, 0);
    cr_assert_eq(sc.natt, 1);
    sc_wait_done(&a.done);
    sc_wait_done(&b.done);
    sc_expect_failed(&a.item, POOL_OUTCOME_DEADLINE);
    sc_expect_failed(&b.item, POOL_OUTCOME_DEADLINE);
    sc_run_for(2 * REQUEST_MS);
    cr_expect_eq(a.done.n, 1);
    cr_expect_eq(b.done.n, 1, "its own deadline does not call back a second time");
}

/* ---- release and cancel ---- */

Test(call_deadline, a_cancel_before_the_answer_closes_the_exchange_and_never_calls_back)
{
    open_short(2);
    sc_call_t c = {0};
    sc_start_one(&c, BN, 0);
    sc_cancel_call(c.call);
    cr_expect_eq(sc_att(0)->state, SC_CANCELLED);
    cr_expect_eq(sc_inflight(0), 0);
    sc_run_for(2 * REQUEST_MS); /* past the deadline it had */
    cr_expect_eq(c.done.n, 0);
    cr_expect_eq(sc.natt, 1);
}

Test(call_deadline, a_cancel_between_the_answer_and_the_callback_never_calls_back)
{
    open_short(1);
    sc_call_t c = {0};
    sc_start_one(&c, BN, 0);
    sc_reply(0, 200, BN_OK);
    cr_expect_eq(c.done.n, 0, "deferred to the loop");
    sc_cancel_call(c.call);
    sc_run_for(2 * REQUEST_MS);
    cr_expect_eq(c.done.n, 0);
}

Test(call_deadline, a_cancel_during_the_backoff_stops_the_next_round)
{
    sc_conf(1);
    sc.conf.backoff_base_ms = 30;
    sc.conf.backoff_max_ms = 30;
    sc_open();
    sc_call_t c = {0};
    sc_start_one(&c, BN, 0);
    sc_reply(0, 503, "");
    cr_expect_eq(sc.natt, 1, "the second round waits");
    sc_cancel_call(c.call);
    sc_run_for(100);
    cr_expect_eq(sc.natt, 1, "and never comes");
    cr_expect_eq(c.done.n, 0);
}

Test(call_deadline, a_release_after_the_callback_frees_the_answer_and_nothing_else_runs)
{
    open_short(1);
    sc_call_t c = {0};
    sc_start_one(&c, BN, 0);
    sc_reply(0, 200, BN_OK);
    sc_wait_done(&c.done);
    sc_expect_answer(&c.item, 0, BN_OK);
    sc_release(c.call);
    sc_run_for(2 * REQUEST_MS); /* the deadline was unlinked with the call */
    cr_expect_eq(c.done.n, 1);
    cr_expect_eq(sc_inflight(0), 0);
}

Test(call_deadline, calls_released_in_any_order_leave_no_slot_taken)
{
    sc_open_n(2);
    sc_call_t c[6] = {0};
    char raw[6][160];
    for (size_t i = 0; i < 6; i++) {
        snprintf(raw[i], sizeof(raw[i]), "{\"jsonrpc\":\"2.0\",\"id\":%zu,\"method\":\"eth_getBlockByNumber\",\"params\":[\"0x%zx\",false]}", i, i + 1);
        sc_start_one(&c[i], raw[i], 0);
    }
    cr_assert_eq(sc.natt, 6);
    cr_expect_eq(sc_inflight(0), 6);
    sc_reply(1, 200, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":null}");
    sc_fail(3, POOL_FAIL_RESET); /* 3 moves on to endpoint 1 */
    cr_assert_eq(sc.natt, 7);
    cr_expect_eq(sc_att(6)->ep, 1);
    cr_expect_eq(sc_inflight(0), 4);
    cr_expect_eq(sc_inflight(1), 1);
    sc_wait_done(&c[1].done);
    for (size_t i = 0; i < 6; i++)
        sc_cancel_call(c[(i * 5) % 6].call);
    cr_expect_eq(sc_inflight(0), 0);
    cr_expect_eq(sc_inflight(1), 0);
    for (size_t i = 0; i < 7; i++)
        cr_expect_neq(sc_att(i)->state, SC_HELD, "attempt %zu still out", i);
}
