/* tests/pool/test_call_held.c: failures that may be the request's own
 * (pool/pool_held.c, policy/shape.h) through the scripted transport. The
 * first endpoint's penalty is held until the next endpoint's attempt
 * settles it: the same failure again ends the call with the shape's outcome
 * and penalises neither; anything else makes the held failure the
 * endpoint's; a rate limit in between keeps it held; a penalty nobody
 * settled is no verdict by itself: it counts as its shape's outcome and a
 * cheap read of the endpoint (the confirm probe) decides. Read through each
 * endpoint's outcome counters (what its breaker and score are fed). */
#include "tests/pool/scripted.h"

/* heavy: not a cheap read, so slowness may be its own */
#define CALL "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_call\",\"params\":[{\"to\":\"0x00000000000000000000000000000000000000aa\"},\"latest\"]}"
#define CALL_OK "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"0x\"}"
#define BN "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_blockNumber\",\"params\":[]}"
#define BN_OK "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"0x10\"}"

TestSuite(call_held, .fini = sc_close);

static sc_call_t c; /* the test's call (each test runs in its own process) */

static uint64_t outcome_at(int ep, state_outcome_t o)
{
    return sc_ep(ep)->health.stats.outcomes[o];
}

/* raw to n endpoints (as many attempts), its attempts ended as ends[0..k). */
#define run(n, raw, ...) sc_run_one(&c, (n), (n), (raw), __VA_ARGS__)

Test(call_held, a_heavy_call_timing_out_at_two_endpoints_is_a_slow_call)
{
    sc_open_n(3);
    sc_start_one(&c, CALL, 0);
    sc_fail(0, POOL_FAIL_FIRST_BYTE_TIMEOUT);
    cr_expect_eq(sc_ep(0)->health.stats.attempts, 0, "held: not recorded yet");
    cr_assert_eq(sc.natt, 2);
    sc_expect_sent(1, 1, CALL);
    sc_fail(1, POOL_FAIL_ATTEMPT_TIMEOUT);
    sc_wait_done(&c.done);
    cr_expect_eq(sc.natt, 2, "a request-shaped call tries two endpoints, not the whole plan");
    sc_expect_failed(&c.item, POOL_OUTCOME_SLOW_CALL);
    cr_expect_eq(outcome_at(0, STATE_OUTCOME_SLOW_CALL), 1);
    cr_expect_eq(outcome_at(1, STATE_OUTCOME_SLOW_CALL), 1);
    cr_expect_eq(outcome_at(0, STATE_OUTCOME_TIMEOUT) + outcome_at(1, STATE_OUTCOME_TIMEOUT), 0,
                 "neither endpoint is blamed");
    cr_expect_eq(sc_ep(0)->health.stats.failovers, 1);
    cr_expect_eq(sc_ep(1)->health.stats.failovers, 0);
    cr_expect_eq(sc_ep(0)->health.shared.demoted_until_ms, 0, "a heavy call never demotes");
}

Test(call_held, a_provider_giving_up_for_time_twice_is_a_slow_call)
{
    run(3, CALL, SC_ENDS(SC_STATUS(504, ""), SC_STATUS(200, "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32002,"
                                                             "\"message\":\"request timed out\"}}")));
    sc_wait_done(&c.done);
    cr_expect_eq(sc.natt, 2);
    sc_expect_failed(&c.item, POOL_OUTCOME_SLOW_CALL);
    cr_expect_eq(outcome_at(0, STATE_OUTCOME_HTTP_ERROR), 0);
    cr_expect_eq(outcome_at(1, STATE_OUTCOME_SLOW_CALL), 1);
}

Test(call_held, a_timeout_then_an_answer_elsewhere_was_the_first_endpoints_fault)
{
    run(3, CALL, SC_ENDS(SC_FAILED(POOL_FAIL_FIRST_BYTE_TIMEOUT), SC_STATUS(200, CALL_OK)));
    sc_wait_done(&c.done);
    sc_expect_answer(&c.item, 1, CALL_OK);
    cr_expect_eq(outcome_at(0, STATE_OUTCOME_TIMEOUT), 1);
    cr_expect_eq(outcome_at(0, STATE_OUTCOME_SLOW_CALL), 0);
    cr_expect_eq(outcome_at(1, STATE_OUTCOME_OK), 1);
    cr_expect_eq(sc_ep(0)->health.stats.failovers, 1);
}

Test(call_held, a_timeout_then_another_failure_was_the_first_endpoints_fault)
{
    run(3, CALL, SC_ENDS(SC_FAILED(POOL_FAIL_ATTEMPT_TIMEOUT), SC_STATUS(503, "")));
    cr_assert_eq(sc.natt, 3, "not request-shaped: the plan goes on");
    cr_expect_eq(outcome_at(0, STATE_OUTCOME_TIMEOUT), 1);
    cr_expect_eq(outcome_at(1, STATE_OUTCOME_HTTP_ERROR), 1);
    sc_reply(2, 200, CALL_OK);
    sc_wait_done(&c.done);
    sc_expect_answer(&c.item, 2, CALL_OK);
}

Test(call_held, a_rate_limit_in_between_keeps_the_penalty_held)
{
    run(3, CALL, SC_ENDS(SC_FAILED(POOL_FAIL_FIRST_BYTE_TIMEOUT), ((sc_answer_t){.status = 429, .body = "", .retry_after_s = 1})));
    cr_expect_eq(sc_ep(0)->health.stats.attempts, 0, "still held");
    cr_expect_eq(outcome_at(1, STATE_OUTCOME_RATE_LIMITED), 1);
    sc_end_each(2, SC_ENDS(SC_FAILED(POOL_FAIL_FIRST_BYTE_TIMEOUT)));
    sc_wait_done(&c.done);
    sc_expect_failed(&c.item, POOL_OUTCOME_SLOW_CALL);
    cr_expect_eq(outcome_at(0, STATE_OUTCOME_SLOW_CALL), 1);
    cr_expect_eq(outcome_at(2, STATE_OUTCOME_SLOW_CALL), 1);
}

Test(call_held, a_cheap_read_timing_out_is_the_endpoints_fault_at_once)
{
    run(3, BN, SC_ENDS(SC_FAILED(POOL_FAIL_FIRST_BYTE_TIMEOUT)));
    cr_expect_eq(outcome_at(0, STATE_OUTCOME_TIMEOUT), 1, "recorded at once");
    sc_end_each(1, SC_ENDS(SC_FAILED(POOL_FAIL_FIRST_BYTE_TIMEOUT)));
    cr_assert_eq(sc.natt, 3, "two timeouts of a cheap read are no request shape");
    cr_expect_eq(outcome_at(1, STATE_OUTCOME_TIMEOUT), 1);
    sc_reply(2, 200, BN_OK);
    sc_wait_done(&c.done);
    sc_expect_answer(&c.item, 2, BN_OK);
}

Test(call_held, an_answer_too_large_twice_is_too_large)
{
    /* any call: its size is the request's doing */
    run(3, BN, SC_ENDS(SC_FAILED(POOL_FAIL_TOO_LARGE), SC_FAILED(POOL_FAIL_TOO_LARGE)));
    sc_wait_done(&c.done);
    cr_expect_eq(sc.natt, 2);
    sc_expect_failed(&c.item, POOL_OUTCOME_TOO_LARGE);
    cr_expect_eq(outcome_at(0, STATE_OUTCOME_TOO_LARGE), 1);
    cr_expect_eq(outcome_at(1, STATE_OUTCOME_TOO_LARGE), 1);
    cr_expect_eq(outcome_at(0, STATE_OUTCOME_MALFORMED), 0);
}

Test(call_held, a_call_no_upstream_could_read_is_id_unanswerable)
{
    static const char unread[] = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"Parse error\"}}";
    run(3, BN, SC_ENDS(SC_STATUS(200, unread), SC_STATUS(200, unread)));
    sc_wait_done(&c.done);
    cr_expect_eq(sc.natt, 2);
    sc_expect_failed(&c.item, POOL_OUTCOME_ID_UNANSWERABLE);
    cr_expect_eq(outcome_at(0, STATE_OUTCOME_ID_UNANSWERABLE), 1);
    cr_expect_eq(outcome_at(1, STATE_OUTCOME_ID_UNANSWERABLE), 1);
}

Test(call_held, another_error_at_id_null_is_the_endpoints_wrong_answer)
{
    static const char outage[] = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32000,\"message\":\"no backend\"}}";
    run(3, BN, SC_ENDS(SC_STATUS(200, outage)));
    cr_expect_eq(outcome_at(0, STATE_OUTCOME_MALFORMED), 1, "recorded at once");
    sc_end_each(1, SC_ENDS(SC_STATUS(200, outage), SC_STATUS(200, BN_OK)));
    sc_wait_done(&c.done);
    sc_expect_answer(&c.item, 2, BN_OK);
}

Test(call_held, different_shapes_do_not_settle_each_other)
{
    run(3, CALL, SC_ENDS(SC_FAILED(POOL_FAIL_TOO_LARGE), SC_FAILED(POOL_FAIL_FIRST_BYTE_TIMEOUT)));
    cr_assert_eq(sc.natt, 3);
    cr_expect_eq(outcome_at(0, STATE_OUTCOME_MALFORMED), 1, "the first was endpoint 0's after all");
    cr_expect_eq(sc_ep(1)->health.stats.attempts, 0, "the second is held in turn");
    sc_reply(2, 200, CALL_OK);
    sc_wait_done(&c.done);
    sc_expect_answer(&c.item, 2, CALL_OK);
    cr_expect_eq(outcome_at(1, STATE_OUTCOME_TIMEOUT), 1);
}

/* The confirm probe sent after attempt i: a cheap read to endpoint ep. */
static void expect_confirm(size_t i, int ep)
{
    cr_assert_eq(sc.natt, i + 1, "a confirm probe after the call (%zu attempts)", sc.natt);
    sc_expect_sent(i, ep, BN);
}

Test(call_held, with_one_endpoint_the_held_penalty_is_no_verdict_until_a_cheap_read_confirms_it)
{
    sc_with_state();
    run(1, CALL, SC_ENDS(SC_FAILED(POOL_FAIL_FIRST_BYTE_TIMEOUT)));
    sc_wait_done(&c.done);
    sc_expect_failed(&c.item, POOL_OUTCOME_TIMEOUT);
    cr_expect_eq(outcome_at(0, STATE_OUTCOME_TIMEOUT), 0, "no second opinion: not the endpoint's by itself");
    cr_expect_eq(outcome_at(0, STATE_OUTCOME_SLOW_CALL), 1);
    cr_expect_eq(sc_ep(0)->health.window.consecutive, 0, "nothing toward its breaker");
    expect_confirm(1, 0);
    /* the endpoint is really down: its probe fails, and that counts */
    sc_fail(1, POOL_FAIL_FIRST_BYTE_TIMEOUT);
    cr_expect_eq(outcome_at(0, STATE_OUTCOME_TIMEOUT), 1, "the probe's failure is the endpoint's");
    cr_expect_eq(sc_ep(0)->health.window.consecutive, 1);
}

Test(call_held, a_confirm_probe_that_answers_clears_the_endpoint)
{
    sc_with_state();
    run(1, CALL, SC_ENDS(SC_FAILED(POOL_FAIL_FIRST_BYTE_TIMEOUT)));
    sc_wait_done(&c.done);
    expect_confirm(1, 0);
    sc_reply(1, 200, BN_OK);
    cr_expect_eq(outcome_at(0, STATE_OUTCOME_TIMEOUT), 0);
    cr_expect_eq(sc_ep(0)->health.window.consecutive, 0);
}

Test(call_held, the_same_endpoint_twice_proves_nothing)
{
    sc_conf(1);
    sc.conf.max_attempts = 2;
    sc.conf.backoff_base_ms = 1;
    sc.conf.backoff_max_ms = 1;
    sc_open();
    sc_start_one(&c, CALL, 0);
    sc_fail(0, POOL_FAIL_FIRST_BYTE_TIMEOUT);
    sc_wait_attempts(2);
    sc_expect_sent(1, 0, CALL);
    sc_fail(1, POOL_FAIL_FIRST_BYTE_TIMEOUT);
    sc_wait_done(&c.done);
    sc_expect_failed(&c.item, POOL_OUTCOME_TIMEOUT);
    cr_expect_eq(outcome_at(0, STATE_OUTCOME_TIMEOUT), 0, "the retry at the same endpoint settles nothing");
    cr_expect_eq(outcome_at(0, STATE_OUTCOME_SLOW_CALL), 2, "neither was settled: no verdict");
    expect_confirm(2, 0);
}

Test(call_held, a_cancel_with_a_penalty_held_asks_the_endpoint_a_cheap_read)
{
    sc_open_n(2);
    sc_start_one(&c, CALL, 0);
    sc_fail(0, POOL_FAIL_FIRST_BYTE_TIMEOUT);
    cr_assert_eq(sc.natt, 2);
    sc_cancel_call(c.call);
    cr_expect_eq(outcome_at(0, STATE_OUTCOME_TIMEOUT), 0);
    cr_expect_eq(outcome_at(0, STATE_OUTCOME_SLOW_CALL), 1);
    cr_expect_eq(sc_ep(1)->health.stats.attempts, 0, "the cancelled attempt says nothing");
    expect_confirm(2, 0);
}

Test(call_held, a_deadline_with_a_penalty_held_asks_the_endpoint_a_cheap_read)
{
    sc_conf(2);
    sc.conf.timeouts.request_ms = 50;
    sc_open();
    sc_start_one(&c, CALL, 0);
    sc_fail(0, POOL_FAIL_ATTEMPT_TIMEOUT);
    sc_wait_done(&c.done);
    sc_expect_failed(&c.item, POOL_OUTCOME_DEADLINE);
    cr_expect_eq(outcome_at(0, STATE_OUTCOME_TIMEOUT), 0);
    cr_expect_eq(outcome_at(0, STATE_OUTCOME_SLOW_CALL), 1);
    cr_expect_eq(sc_att(sc.natt - 1)->ep, 0);
    cr_expect_str_eq(sc_att(sc.natt - 1)->body, BN, "a confirm probe to endpoint 0");
}

Test(call_held, a_request_shaped_batch_fails_its_pending_members_and_keeps_the_answered)
{
    sc_open_n(3);
    sc_batch_t b = {0};
    sc_start_batch(&b, BN, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"eth_getLogs\",\"params\":[{\"fromBlock\":\"0x1\"}]}");
    sc_reply(0, 200, "[{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":\"0x10\"},"
                     "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32000,\"message\":\"execution timeout\"}}]");
    cr_assert_eq(sc.natt, 2);
    sc_expect_sent(1, 1, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_getLogs\",\"params\":[{\"fromBlock\":\"0x1\"}]}]");
    sc_fail(1, POOL_FAIL_FIRST_BYTE_TIMEOUT);
    sc_wait_done(&b.done);
    cr_expect_eq(sc.natt, 2);
    sc_expect_answer(&b.items[0], 0, "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":\"0x10\"}");
    sc_expect_failed(&b.items[1], POOL_OUTCOME_SLOW_CALL);
}
