/* tests/pool/test_call_rank.c: the order a call tries endpoints in
 * (pool/pool_call.c pool_call_plan_next over pool/pool_rank.c's order):
 * config order when nothing is known, fallbacks last, demoted endpoints
 * behind the others, open breakers, marks and full endpoints skipped, and a
 * confirmation poll pinned to the endpoint that took its transaction (pins
 * and breakers live in shared state: those tests open an LMDB folder). */
#include "wire/txid.h"
#include "tests/pool/scripted.h"

#define BN "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_blockNumber\",\"params\":[]}"
#define BN_OK "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"0x10\"}"

TestSuite(call_rank, .fini = sc_close);

/* A call that fails at every endpoint it tries (503): the order it tried. */
static void expect_order(const int *want, size_t n)
{
    size_t base = sc.natt;
    sc_call_t c = {0};
    sc_start_one(&c, BN, 0);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(sc.natt, base + i + 1, "attempt %zu started", i);
        cr_expect_eq(sc_att(base + i)->ep, want[i], "attempt %zu went to endpoint %d, not %d", i,
                     sc_att(base + i)->ep, want[i]);
        sc_reply(base + i, 503, "");
    }
    sc_wait_done(&c.done);
    sc_release(c.call);
}

/* A read whose attempt at endpoint 0 ended as `end`; endpoint 1 answers it. */
static void first_ends_as(sc_answer_t end)
{
    size_t base = sc.natt;
    sc_call_t c = {0};
    sc_start_one(&c, BN, 0);
    cr_assert_eq(sc_att(base)->ep, 0);
    sc_finish(base, end);
    cr_assert_eq(sc_att(base + 1)->ep, 1);
    sc_reply(base + 1, 200, BN_OK);
    sc_wait_done(&c.done);
    sc_release(c.call);
}

/* Where the plan starts now. */
static int first_choice(void)
{
    return sc_first_endpoint(BN, BN_OK);
}

Test(call_rank, config_order_when_nothing_is_known)
{
    sc_conf(3);
    sc.conf.max_attempts = 3;
    sc_open();
    expect_order((const int[]){0, 1, 2}, 3);
}

Test(call_rank, fallback_endpoints_come_after_every_primary)
{
    sc_conf(3);
    sc.conf.max_attempts = 3;
    sc.eps[0].tier = POOL_TIER_FALLBACK;
    sc_open();
    expect_order((const int[]){1, 2, 0}, 3);
}

Test(call_rank, a_cheap_read_timing_out_demotes_its_endpoint_behind_the_others)
{
    sc_conf(3);
    sc.conf.max_attempts = 3;
    sc_open();
    uint64_t now = sl_shared_ms();
    first_ends_as(SC_FAILED(POOL_FAIL_FIRST_BYTE_TIMEOUT));
    uint64_t until = sc_ep(0)->health.shared.demoted_until_ms;
    cr_expect(until >= now + POOL_DEFAULT_DEMOTE_MS && until <= sl_shared_ms() + POOL_DEFAULT_DEMOTE_MS,
              "demoted for demote_ms");
    expect_order((const int[]){1, 2, 0}, 3); /* still in the plan, last */
}

Test(call_rank, a_reset_of_a_cheap_read_demotes_too)
{
    sc_open_n(2);
    first_ends_as(SC_FAILED(POOL_FAIL_RESET));
    cr_expect_eq(first_choice(), 1);
}

Test(call_rank, an_error_status_does_not_demote)
{
    sc_open_n(2);
    first_ends_as(SC_STATUS(502, ""));
    cr_expect_eq(sc_ep(0)->health.shared.demoted_until_ms, 0);
    cr_expect_eq(first_choice(), 0);
}

Test(call_rank, no_demotion_when_demote_ms_is_zero)
{
    sc_conf(2);
    sc.conf.demote_ms = 0;
    sc_open();
    first_ends_as(SC_FAILED(POOL_FAIL_FIRST_BYTE_TIMEOUT));
    cr_expect_eq(first_choice(), 0);
}

Test(call_rank, a_full_endpoint_is_skipped)
{
    sc_conf(2);
    sc.eps[0].max_inflight = 1;
    sc_open();
    sc_call_t a = {0}, b = {0};
    sc_start_one(&a, BN, 0);
    sc_start_one(&b, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"eth_chainId\",\"params\":[]}", 0);
    cr_assert_eq(sc.natt, 2);
    cr_expect_eq(sc_att(0)->ep, 0);
    cr_expect_eq(sc_att(1)->ep, 1);
    sc_reply(0, 200, BN_OK);
    sc_reply(1, 200, "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":\"0x1\"}");
    sc_wait_done(&b.done);
    cr_expect_eq(sc_ep(0)->health.stats.max_inflight_seen, 1);
    sc_release(a.call);
    sc_release(b.call);
    cr_expect_eq(first_choice(), 0, "free again");
}

Test(call_rank, a_rate_limited_endpoint_is_skipped_until_its_mark_ends)
{
    sc_open_n(2);
    sc_call_t c = {0};
    sc_start_one(&c, BN, 0);
    sc_finish(0, (sc_answer_t){.status = 429, .body = "", .retry_after_s = 1});
    sc_reply(1, 200, BN_OK);
    sc_wait_done(&c.done);
    sc_release(c.call);
    cr_expect_eq(first_choice(), 1);
    sc_run_for(1200);
    cr_expect_eq(first_choice(), 0, "the mark ended");
}

/* ---- shared state: breakers and pins ---- */

Test(call_rank, an_open_breaker_takes_the_endpoint_out_of_the_plan)
{
    sc_with_state();
    sc_conf(2);
    sc.conf.breaker.consecutive = 2;
    sc_open();
    for (int k = 0; k < 2; k++) {
        size_t base = sc.natt;
        sc_call_t c = {0};
        sc_start_one(&c, BN, 0);
        cr_assert_eq(sc_att(base)->ep, 0);
        sc_reply(base, 503, "");
        sc_reply(base + 1, 200, BN_OK);
        sc_wait_done(&c.done);
        sc_release(c.call);
    }
    cr_expect_eq(sc_ep(0)->health.shared.breaker, POLICY_BREAKER_OPEN);
    cr_expect_eq(first_choice(), 1);
    cr_expect_eq(sc_ep(0)->health.stats.attempts, 2);
}

#define RAW_TX "0x02f8aa"
#define SEND "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"eth_sendRawTransaction\",\"params\":[\"" RAW_TX "\"]}"
#define TXH "0xAbCd111111111111111111111111111111111111111111111111111111111111"
#define RECEIPT "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"eth_getTransactionReceipt\",\"params\":[\"" TXH "\"]}"
#define RECEIPT_LOWER "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"eth_getTransactionReceipt\",\"params\":[\"0xabcd111111111111111111111111111111111111111111111111111111111111\"]}"
#define OTHER "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"eth_getTransactionReceipt\",\"params\":[\"0x2222222222222222222222222222222222222222222222222222222222222222\"]}"

/* Endpoint 2 accepts the write (0 refuses the connection, 1 is rate-limited). */
static void accept_at_2(void)
{
    sc_call_t w = {0};
    size_t base = sc.natt;
    sc_refuse_next(0, POOL_FAIL_CONNECT);
    sc_start_one(&w, SEND, 0);
    sc_reply(base + 1, 429, "");
    cr_assert_eq(sc.natt, base + 3);
    cr_assert_eq(sc_att(base + 2)->ep, 2);
    sc_reply(base + 2, 200, "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":\"" TXH "\"}");
    sc_wait_done(&w.done);
    sc_release(w.call);
}

/* The endpoint a poll of raw (id 3) is sent to first. */
static int poll_goes_to(const char *raw)
{
    return sc_first_endpoint(raw, "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"status\":\"0x1\"}}");
}

Test(call_rank, a_poll_goes_first_to_the_endpoint_that_took_its_transaction)
{
    sc_with_state();
    sc_open_n(3);
    accept_at_2();
    cr_expect_eq(poll_goes_to(RECEIPT), 2);
    cr_expect_eq(poll_goes_to(RECEIPT_LOWER), 2, "a hash in another case is the same hash");
    cr_expect_eq(poll_goes_to(OTHER), 0, "another transaction's poll follows the plan");
}

Test(call_rank, a_pinned_endpoint_that_fails_hands_the_poll_to_the_plan)
{
    sc_with_state();
    sc_conf(3);
    sc.conf.max_attempts = 3;
    sc_open();
    accept_at_2();
    size_t base = sc.natt;
    sc_call_t c = {0};
    sc_start_one(&c, RECEIPT, 0);
    cr_expect_eq(sc_att(base)->ep, 2);
    sc_reply(base, 503, "");
    cr_assert_eq(sc.natt, base + 2);
    cr_expect_eq(sc_att(base + 1)->ep, 0, "then the plan, in its order");
    sc_reply(base + 1, 200, "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"status\":\"0x1\"}}");
    sc_wait_done(&c.done);
    cr_expect_eq(c.item.endpoint, 0);
}

Test(call_rank, a_pin_ends_after_pin_ms)
{
    sc_with_state();
    sc_conf(3);
    sc.conf.pin_ms = 50;
    sc_open();
    accept_at_2();
    cr_expect_eq(poll_goes_to(RECEIPT), 2);
    sc_run_for(80);
    cr_expect_eq(poll_goes_to(RECEIPT), 0);
}

Test(call_rank, no_pins_when_pin_ms_is_zero)
{
    sc_with_state();
    sc_conf(3);
    sc.conf.pin_ms = 0;
    sc_open();
    accept_at_2();
    cr_expect_eq(poll_goes_to(RECEIPT), 0);
}

Test(call_rank, already_known_pins_as_an_acceptance_does)
{
    char hash[67], poll[200];
    sc_with_state();
    sc_open_n(2);
    sc_call_t w = {0};
    sc_refuse_next(0, POOL_FAIL_CONNECT);
    sc_start_one(&w, SEND, 0);
    sc_reply(1, 200, "{\"jsonrpc\":\"2.0\",\"id\":9,\"error\":{\"code\":-32000,\"message\":\"already known\"}}");
    sc_wait_done(&w.done);
    sc_release(w.call);
    cr_assert_eq(wire_eth_tx_hash(RAW_TX, strlen(RAW_TX), hash), SL_OK);
    snprintf(poll, sizeof(poll), "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"eth_getTransactionReceipt\",\"params\":[\"%s\"]}", hash);
    cr_expect_eq(poll_goes_to(poll), 1);
}

Test(call_rank, a_pin_to_a_rate_limited_endpoint_waits_for_nobody)
{
    sc_with_state();
    sc_open_n(3);
    accept_at_2();
    /* endpoint 2 gets marked by another call's refusal */
    size_t base = sc.natt;
    sc_call_t c = {0};
    sc_start_one(&c, RECEIPT, 0);
    cr_assert_eq(sc_att(base)->ep, 2);
    sc_finish(base, (sc_answer_t){.status = 429, .body = "", .retry_after_s = 30});
    cr_assert_eq(sc.natt, base + 2);
    cr_expect_eq(sc_att(base + 1)->ep, 0);
    sc_reply(base + 1, 200, "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"status\":\"0x1\"}}");
    sc_wait_done(&c.done);
    sc_release(c.call);
    cr_expect_eq(poll_goes_to(RECEIPT), 0, "the pinned endpoint is marked: the plan's first");
}
