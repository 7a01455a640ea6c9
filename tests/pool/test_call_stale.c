/* tests/pool/test_call_stale.c: the keep-alive race (pool/pool_call.c,
 * pool_call_on_exchange_done). A kept-alive connection the upstream closed
 * before it answered a byte is not the endpoint's fault: the call gets one
 * free retry at the same endpoint, not logged and not counted, once per
 * call, and never for a write (which may have arrived before the close). */
#include "tests/pool/scripted.h"

#define BN "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_blockNumber\",\"params\":[]}"
#define BN_OK "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"0x10\"}"
#define SEND "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"eth_sendRawTransaction\",\"params\":[\"0x02f8aa\"]}"

TestSuite(call_stale, .fini = sc_close);

static sc_call_t c; /* the test's call (each test runs in its own process) */

/* The upstream closed a kept-alive connection before answering anything. */
static void stale(size_t i)
{
    sc_finish(i, (sc_answer_t){.fail = POOL_FAIL_RESET, .sent = 1, .reused = 1});
}

Test(call_stale, a_stale_connection_gets_one_free_retry_at_the_same_endpoint)
{
    sc_open_n(2);
    sc_start_one(&c, BN, 0);
    stale(0);
    cr_assert_eq(sc.natt, 2, "the retry starts at once");
    sc_expect_sent(1, 0, BN);
    sc_reply(1, 200, BN_OK);
    sc_wait_done(&c.done);
    sc_expect_answer(&c.item, 0, BN_OK);
    cr_expect_eq(pool_call_attempts(c.call), 1, "the free retry is not an attempt");
    cr_expect_eq(sc_log_len(c.call), 1);
    sc_expect_log(c.call, 0, 0, POOL_FAIL_NONE, 200, 0);
    cr_expect_eq(c.item.failures, 0);
    cr_expect_eq(c.item.fail_seen, 0);
    cr_expect_eq(sc_ep(0)->health.stats.attempts, 1, "only the retry is recorded");
    cr_expect_eq(sc_ep(0)->health.stats.outcomes[STATE_OUTCOME_RESET], 0);
    cr_expect_eq(sc_ep(0)->health.shared.demoted_until_ms, 0, "nor demotes the endpoint");
    cr_expect_eq(sc_ep(1)->health.stats.attempts, 0);
}

Test(call_stale, the_free_retry_is_taken_even_when_no_attempt_is_left)
{
    sc_conf(2);
    sc.conf.max_attempts = 1;
    sc_open();
    sc_start_one(&c, BN, 0);
    stale(0);
    cr_assert_eq(sc.natt, 2);
    sc_expect_sent(1, 0, BN);
    sc_reply(1, 200, BN_OK);
    sc_wait_done(&c.done);
    sc_expect_answer(&c.item, 0, BN_OK);
}

Test(call_stale, only_once_per_call)
{
    sc_conf(2);
    sc.conf.max_attempts = 2;
    sc_open();
    sc_start_one(&c, BN, 0);
    stale(0);
    stale(1); /* the retry meets a stale connection too: now it counts */
    cr_assert_eq(sc.natt, 3);
    sc_expect_sent(2, 1, BN);
    stale(2); /* and no free retry at the next endpoint either */
    sc_wait_done(&c.done);
    cr_expect_eq(sc.natt, 3);
    sc_expect_failed(&c.item, POOL_OUTCOME_UPSTREAM_ERROR);
    cr_expect_eq(pool_call_attempts(c.call), 2);
    sc_expect_log(c.call, 0, 0, POOL_FAIL_RESET, 0, 0);
    sc_expect_log(c.call, 1, 1, POOL_FAIL_RESET, 0, 0);
    cr_expect_eq(c.item.failures, 2);
    cr_expect_eq(sc_ep(0)->health.stats.outcomes[STATE_OUTCOME_RESET], 1);
    cr_expect_eq(sc_ep(1)->health.stats.outcomes[STATE_OUTCOME_RESET], 1);
}

Test(call_stale, every_call_has_its_own_free_retry)
{
    sc_open_n(2);
    sc_call_t d = {0};
    sc_start_one(&c, BN, 0);
    stale(0);
    sc_reply(1, 200, BN_OK);
    sc_wait_done(&c.done); /* until then an identical read would wait on c (coalesced) */
    sc_start_one(&d, BN, 0);
    cr_assert_eq(sc.natt, 3);
    sc_expect_sent(2, 0, BN);
    stale(2);
    cr_assert_eq(sc.natt, 4);
    sc_expect_sent(3, 0, BN);
    sc_reply(3, 200, BN_OK);
    sc_wait_done(&d.done);
    sc_expect_answer(&c.item, 0, BN_OK);
    sc_expect_answer(&d.item, 0, BN_OK);
    cr_expect_eq(pool_call_attempts(d.call), 1);
}

/* A read's first attempt ended as `end`, which is no stale connection: the
 * failure is logged and counted, and endpoint 1 answers. */
static void expect_not_stale(sc_answer_t end)
{
    sc_open_n(2);
    sc_start_one(&c, BN, 0);
    sc_finish(0, end);
    cr_assert_eq(sc.natt, 2);
    sc_expect_sent(1, 1, BN);
    sc_reply(1, 200, BN_OK);
    sc_wait_done(&c.done);
    sc_expect_answer(&c.item, 1, BN_OK);
    sc_expect_log(c.call, 0, 0, end.fail, 0, 0);
    cr_expect_eq(c.item.failures, 1);
}

Test(call_stale, a_reset_after_answer_bytes_is_the_endpoints_failure)
{
    expect_not_stale((sc_answer_t){.fail = POOL_FAIL_RESET, .sent = 1, .reused = 1, .got_bytes = 1});
}

Test(call_stale, a_reset_on_a_new_connection_is_the_endpoints_failure)
{
    expect_not_stale((sc_answer_t){.fail = POOL_FAIL_RESET, .sent = 1, .reused = 0});
}

Test(call_stale, a_timeout_on_a_kept_alive_connection_is_no_stale_connection)
{
    expect_not_stale((sc_answer_t){.fail = POOL_FAIL_FIRST_BYTE_TIMEOUT, .sent = 1, .reused = 1});
}

Test(call_stale, a_batch_of_reads_is_retried_whole_at_the_same_endpoint)
{
    static const char bn[] = "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"eth_blockNumber\",\"params\":[]}";
    static const char chain[] = "{\"jsonrpc\":\"2.0\",\"id\":\"y\",\"method\":\"eth_chainId\",\"params\":[]}";
    static const char body[] = "[{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"eth_blockNumber\",\"params\":[]},"
                               "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_chainId\",\"params\":[]}]";
    sc_open_n(2);
    sc_batch_t b = {0};
    sc_start_batch(&b, bn, chain);
    stale(0);
    cr_assert_eq(sc.natt, 2);
    sc_expect_sent(0, 0, body);
    sc_expect_sent(1, 0, body);
    sc_reply(1, 200, "[{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":\"0x10\"},{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"0x1\"}]");
    sc_wait_done(&b.done);
    cr_expect_eq(b.items[0].endpoint, 0);
    cr_expect_eq(b.items[1].endpoint, 0);
    cr_expect_eq(pool_call_attempts(b.call), 1);
}

/* ---- writes ---- */

Test(call_stale, a_write_gets_no_free_retry_and_is_ambiguous)
{
    sc_open_n(2);
    sc_start_one(&c, SEND, 0);
    cr_expect_eq(sc_att(0)->is_write, 1);
    stale(0);
    sc_wait_done(&c.done);
    cr_expect_eq(sc.natt, 1, "neither the same endpoint nor another gets it again");
    sc_expect_failed(&c.item, POOL_OUTCOME_AMBIGUOUS_WRITE);
    sc_expect_log(c.call, 0, 0, POOL_FAIL_RESET, 0, 0);
    cr_expect_eq(pool_call_attempts(c.call), 1);
}

Test(call_stale, a_write_whose_stale_connection_never_took_the_request_goes_on)
{
    sc_open_n(2);
    sc_start_one(&c, SEND, 0);
    sc_finish(0, (sc_answer_t){.fail = POOL_FAIL_RESET, .sent = 0, .reused = 1});
    cr_assert_eq(sc.natt, 2, "nothing left: safe to send elsewhere, but no free retry");
    sc_expect_sent(1, 1, SEND);
    cr_expect_eq(sc_att(1)->is_write, 1);
    sc_reply(1, 200, "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":\"0xabc\"}");
    sc_wait_done(&c.done);
    sc_expect_answer(&c.item, 1, "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":\"0xabc\"}");
    sc_expect_log(c.call, 0, 0, POOL_FAIL_RESET, 0, 0);
}

Test(call_stale, a_batch_with_a_write_gets_no_free_retry)
{
    static const char read[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_blockNumber\",\"params\":[]}";
    sc_open_n(2);
    sc_batch_t b = {0};
    sc_start_batch(&b, read, SEND);
    cr_expect_eq(sc_att(0)->is_write, 1, "the attempt carries a write");
    stale(0);
    cr_assert_eq(sc.natt, 2);
    /* the write stops as ambiguous; the read goes on alone, to the next endpoint */
    sc_expect_sent(1, 1, "[{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"eth_blockNumber\",\"params\":[]}]");
    cr_expect_eq(sc_att(1)->is_write, 0);
    sc_reply(1, 200, "[{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":\"0x10\"}]");
    sc_wait_done(&b.done);
    sc_expect_answer(&b.items[0], 1, "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":\"0x10\"}");
    sc_expect_failed(&b.items[1], POOL_OUTCOME_AMBIGUOUS_WRITE);
}
