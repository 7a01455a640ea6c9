/* tests/pool/test_call_waiters.c: confirmation polls never hear "every
 * endpoint is full" (pool/pool_call.c should_wait, pool_call_wake_waiters):
 * they wait for a slot, oldest first, bounded by their deadline, and a
 * snapshot answers the ones whose endpoints stopped being usable. Other
 * calls get UNAVAILABLE at once. Endpoints here have one slot each. */
#include "tests/pool/scripted.h"

#define BN "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_blockNumber\",\"params\":[]}"
#define BN_OK "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"0x10\"}"
#define H1 "0x1111111111111111111111111111111111111111111111111111111111111111"
#define H2 "0x2222222222222222222222222222222222222222222222222222222222222222"
#define P1 "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"eth_getTransactionReceipt\",\"params\":[\"" H1 "\"]}"
#define P2 "{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"eth_getTransactionReceipt\",\"params\":[\"" H2 "\"]}"
#define P1_OK "{\"jsonrpc\":\"2.0\",\"id\":11,\"result\":{\"status\":\"0x1\"}}"
#define P2_OK "{\"jsonrpc\":\"2.0\",\"id\":12,\"result\":{\"status\":\"0x1\"}}"

TestSuite(call_waiters, .fini = sc_close);

/* n endpoints of one slot each. */
static void conf_one_slot(size_t n)
{
    sc_conf(n);
    for (size_t i = 0; i < n; i++)
        sc.eps[i].max_inflight = 1;
}

static void open_one_slot(size_t n)
{
    conf_one_slot(n);
    sc_open();
}

static sc_call_t a, p1, p2; /* a read holding endpoint 0's slot; the polls after it */

/* a takes endpoint 0's slot, then npolls polls (P1, P2) come. */
static void slot_taken_then_polls(int npolls)
{
    sc_start_one(&a, BN, 0);
    cr_assert_eq(sc_att(sc.natt - 1)->ep, 0);
    sc_start_one(&p1, P1, 0);
    if (npolls > 1)
        sc_start_one(&p2, P2, 0);
}

Test(call_waiters, a_poll_waits_for_a_full_endpoint_and_goes_when_a_slot_frees)
{
    open_one_slot(1);
    slot_taken_then_polls(1);
    cr_expect_eq(sc.natt, 1, "the poll waits");
    cr_expect_eq(sc.net->pressure.waits, 1);
    sc_run_for(20);
    cr_expect_eq(p1.done.n, 0, "and keeps waiting while the slot is taken");
    sc_reply(0, 200, BN_OK);
    cr_assert_eq(sc.natt, 2, "the freed slot goes to the waiting poll at once");
    sc_expect_sent(1, 0, P1);
    sc_reply(1, 200, P1_OK);
    sc_wait_done(&p1.done);
    sc_expect_answer(&p1.item, 0, P1_OK);
    cr_expect_eq(pool_call_attempts(p1.call), 1);
    cr_expect_eq(sc.net->pressure.waits, 1, "a wait is counted once per call");
}

Test(call_waiters, any_other_call_gets_unavailable_at_once)
{
    open_one_slot(2);
    sc_call_t b = {0}, c = {0};
    sc_start_one(&a, BN, 0);
    sc_start_one(&b, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"eth_chainId\",\"params\":[]}", 0);
    cr_assert_eq(sc.natt, 2);
    cr_expect_eq(sc_att(1)->ep, 1, "the full endpoint is skipped");
    sc_start_one(&c, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"eth_gasPrice\",\"params\":[]}", 0);
    cr_expect_eq(sc.natt, 2);
    sc_wait_done(&c.done);
    sc_expect_failed(&c.item, POOL_OUTCOME_UNAVAILABLE);
    cr_expect_eq(pool_call_attempts(c.call), 0);
    cr_expect_eq(sc.net->pressure.waits, 0);
}

Test(call_waiters, a_poll_does_not_wait_without_pressure_accounting)
{
    conf_one_slot(1);
    sc.conf.pressure.enabled = 0;
    sc_open();
    slot_taken_then_polls(1);
    sc_wait_done(&p1.done);
    sc_expect_failed(&p1.item, POOL_OUTCOME_UNAVAILABLE);
}

Test(call_waiters, the_oldest_waiter_goes_first)
{
    open_one_slot(1);
    slot_taken_then_polls(2);
    cr_expect_eq(sc.net->pressure.waits, 2);
    sc_reply(0, 200, BN_OK);
    cr_assert_eq(sc.natt, 2);
    sc_expect_sent(1, 0, P1);
    sc_reply(1, 200, P1_OK);
    cr_assert_eq(sc.natt, 3);
    sc_expect_sent(2, 0, P2);
    sc_reply(2, 200, P2_OK);
    sc_wait_done(&p2.done);
    sc_expect_answer(&p1.item, 0, P1_OK);
    sc_expect_answer(&p2.item, 0, P2_OK);
}

Test(call_waiters, a_waiter_moves_on_to_the_endpoint_that_frees_up)
{
    open_one_slot(2);
    sc_call_t b = {0};
    sc_start_one(&a, BN, 0);
    sc_start_one(&b, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"eth_chainId\",\"params\":[]}", 0);
    sc_start_one(&p1, P1, 0);
    cr_assert_eq(sc.natt, 2);
    sc_reply(1, 200, "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":\"0x1\"}");
    cr_assert_eq(sc.natt, 3);
    sc_expect_sent(2, 1, P1);
    sc_reply(2, 200, P1_OK);
    sc_wait_done(&p1.done);
    sc_expect_answer(&p1.item, 1, P1_OK);
}

/* Every call of a network has the same request_ms, so the call holding the
 * slot reaches its deadline first: its cancel frees the slot (the
 * transport's freed-slot hook), the waiter goes, and then meets its own. */
Test(call_waiters, a_slot_freed_by_a_deadline_goes_to_the_waiter_until_its_own)
{
    conf_one_slot(1);
    sc.conf.timeouts.request_ms = 60;
    sc_open();
    sc_start_one(&a, BN, 0);
    sc_run_for(20);
    sc_start_one(&p1, P1, 0);
    cr_assert_eq(sc.natt, 1);
    sc_wait_done(&a.done);
    sc_expect_failed(&a.item, POOL_OUTCOME_DEADLINE);
    cr_expect_eq(sc_att(0)->state, SC_CANCELLED);
    cr_assert_eq(sc.natt, 2, "the cancel woke the waiter");
    sc_expect_sent(1, 0, P1);
    sc_wait_done(&p1.done);
    sc_expect_failed(&p1.item, POOL_OUTCOME_DEADLINE);
    cr_expect_eq(sc_att(1)->state, SC_CANCELLED);
    cr_expect_eq(sc_inflight(0), 0);
}

Test(call_waiters, a_waiter_that_leaves_is_not_woken)
{
    open_one_slot(1);
    slot_taken_then_polls(2);
    sc_cancel_call(p1.call);
    sc_reply(0, 200, BN_OK);
    cr_assert_eq(sc.natt, 2);
    sc_expect_sent(1, 0, P2);
    sc_reply(1, 200, P2_OK);
    sc_wait_done(&p2.done);
    cr_expect_eq(p1.done.n, 0);
}

Test(call_waiters, a_hedge_losers_held_slot_wakes_a_waiter_when_it_is_let_go)
{
    conf_one_slot(2);
    sc.conf.hedge.enabled = 1;
    sc.conf.hedge.min_ms = sc.conf.hedge.max_ms = 10;
    sc.conf.timeouts.attempt_ms = 150;
    sc_open();
    sc_call_t b = {0};
    sc_start_one(&a, BN, 0);
    sc_wait_attempts(2); /* hedged to endpoint 1 */
    sc_reply(1, 200, BN_OK);
    cr_expect_eq(sc_att(0)->state, SC_CANCELLED);
    cr_expect_eq(sc_inflight(0), 1, "the loser's slot is held");
    sc_start_one(&b, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"eth_call\",\"params\":[{},\"latest\"]}", 0);
    cr_assert_eq(sc.natt, 3);
    cr_expect_eq(sc_att(2)->ep, 1, "the held slot is not free");
    sc_start_one(&p1, P1, 0);
    cr_expect_eq(sc.natt, 3, "both endpoints full: the poll waits");
    sc_wait_attempts(4);
    sc_expect_sent(3, 0, P1);
    cr_expect_eq(sc_inflight(0), 1, "the poll took the slot the hedge's loser let go");
    sc_reply(3, 200, P1_OK);
    sc_wait_done(&p1.done);
    sc_expect_answer(&p1.item, 0, P1_OK);
    sc_reply(2, 200, "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":\"0x\"}");
    sc_wait_done(&b.done);
}

Test(call_waiters, a_snapshot_answers_a_waiter_whose_endpoint_stopped_being_usable)
{
    sc_with_state();
    open_one_slot(1);
    slot_taken_then_polls(1);
    cr_assert_eq(sc.natt, 1);
    /* the slot frees, but the endpoint is rate-limited from now on */
    sc_finish(0, (sc_answer_t){.status = 429, .body = "", .retry_after_s = 30});
    cr_expect_eq(sc.natt, 1, "a slot at an unusable endpoint wakes nobody");
    sc_wait_done(&p1.done); /* the next tick rechecks the waiters (refresh_ms 10) */
    cr_expect_eq(sc.natt, 1);
    sc_expect_failed(&p1.item, POOL_OUTCOME_RATE_LIMITED);
    cr_expect(p1.item.retry_after_ms > 25000 && p1.item.retry_after_ms <= 30000, "retry after %u ms",
              p1.item.retry_after_ms);
    sc_wait_done(&a.done);
    sc_expect_failed(&a.item, POOL_OUTCOME_RATE_LIMITED);
}
