/* tests/pool/test_call_merge.c: confirmation polls of several clients as one
 * upstream call (pool/pool_merge.c) through the scripted transport: which
 * polls join, the merged request's exact body, how the answer is split (or
 * each poll sent on alone), what a poll that leaves does, and the counters. */
#include "tests/pool/scripted.h"

#define H1 "0x1111111111111111111111111111111111111111111111111111111111111111"
#define H2 "0x2222222222222222222222222222222222222222222222222222222222222222"
#define R1 "{\"jsonrpc\":\"2.0\",\"id\":\"r1\",\"method\":\"eth_getTransactionReceipt\",\"params\":[\"" H1 "\"]}"
#define R2 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"eth_getTransactionReceipt\",\"params\":[\"" H2 "\"]}"
#define R1_AS0 "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"eth_getTransactionReceipt\",\"params\":[\"" H1 "\"]}"
#define R2_AS1 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_getTransactionReceipt\",\"params\":[\"" H2 "\"]}"
#define ANS0 "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"status\":\"0x1\"}}"
#define ANS1 "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"status\":\"0x1\"}}"
#define WINDOW_MS 5

TestSuite(call_merge, .fini = sc_close);

static void open_merging(size_t n)
{
    sc_conf(n);
    sc.conf.pressure.merge_window_ms = WINDOW_MS;
    sc_open();
}

/* Two polls merged into one batch at endpoint 0. */
static void start_two(sc_call_t *a, sc_call_t *b)
{
    sc_start_one(a, R1, 0);
    sc_start_one(b, R2, 0);
    cr_expect_eq(sc.natt, 0, "the polls wait for the merge window");
    sc_wait_attempts(1);
    sc_expect_sent(0, 0, "[" R1_AS0 "," R2_AS1 "]");
    cr_expect_eq(sc_att(0)->is_write, 0);
}

Test(call_merge, two_polls_go_upstream_as_one_batch_and_each_gets_its_answer)
{
    open_merging(2);
    sc_call_t a = {0}, b = {0};
    start_two(&a, &b);
    cr_expect_eq(sc.net->pressure.depth, 1, "the merged call holds one upstream slot");
    sc_reply(0, 200, "[" ANS1 "," ANS0 "]");
    sc_wait_done(&a.done);
    sc_wait_done(&b.done);
    sc_expect_answer(&a.item, 0, ANS0);
    cr_expect(sc_answer_id_is(&a.item, "0"), "the gateway splices the client's id");
    sc_expect_answer(&b.item, 0, ANS1);
    cr_expect_eq(pool_call_attempts(a.call), 1, "the merged call's attempts are each poll's");
    sc_expect_log(a.call, 0, 0, POOL_FAIL_NONE, 200, 0);
    sc_expect_log(b.call, 0, 0, POOL_FAIL_NONE, 200, 0);
    cr_expect_eq(sc.net->pressure.polls_merged, 2);
    cr_expect_eq(sc.net->pressure.calls_saved, 1);
    cr_expect_eq(sc.net->pressure.depth, 0);
    sc_run_for(10);
    cr_expect_eq(a.done.n + b.done.n, 2);
}

Test(call_merge, a_poll_alone_goes_upstream_as_the_client_sent_it)
{
    open_merging(1);
    sc_call_t a = {0};
    sc_start_one(&a, R1, 0);
    cr_expect_eq(sc.natt, 0);
    sc_wait_attempts(1);
    sc_expect_sent(0, 0, R1);
    sc_reply(0, 200, "{\"jsonrpc\":\"2.0\",\"id\":\"r1\",\"result\":{\"status\":\"0x1\"}}");
    sc_wait_done(&a.done);
    sc_expect_answer(&a.item, 0, "{\"jsonrpc\":\"2.0\",\"id\":\"r1\",\"result\":{\"status\":\"0x1\"}}");
    cr_expect_eq(sc.net->pressure.polls_merged, 0);
}

Test(call_merge, a_poll_that_leaves_the_merge_leaves_the_other_alone)
{
    open_merging(1);
    sc_call_t a = {0}, b = {0};
    sc_start_one(&a, R1, 0);
    sc_start_one(&b, R2, 0);
    sc_cancel_call(a.call);
    sc_wait_attempts(1);
    sc_expect_sent(0, 0, R2);
    sc_reply(0, 200, "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"status\":\"0x1\"}}");
    sc_wait_done(&b.done);
    cr_expect_eq(b.item.endpoint, 0);
    cr_expect_eq(a.done.n, 0);
}

Test(call_merge, a_merge_everyone_left_sends_nothing)
{
    open_merging(1);
    sc_call_t a = {0}, b = {0};
    sc_start_one(&a, R1, 0);
    sc_start_one(&b, R2, 0);
    sc_cancel_call(b.call);
    sc_cancel_call(a.call);
    sc_run_for(6 * WINDOW_MS);
    cr_expect_eq(sc.natt, 0);
    cr_expect_eq(sc.net->pressure.depth, 0);
}

Test(call_merge, a_poll_that_leaves_after_the_merge_was_sent_is_not_answered)
{
    open_merging(1);
    sc_call_t a = {0}, b = {0};
    start_two(&a, &b);
    sc_cancel_call(a.call);
    cr_expect_eq(sc_att(0)->state, SC_HELD, "the merged call goes on for the other");
    sc_reply(0, 200, "[" ANS0 "," ANS1 "]");
    sc_wait_done(&b.done);
    sc_expect_answer(&b.item, 0, ANS1);
    cr_expect_eq(a.done.n, 0);
}

Test(call_merge, a_merged_call_that_fails_fails_each_poll_as_its_own_would)
{
    sc_conf(1);
    sc.conf.pressure.merge_window_ms = WINDOW_MS;
    sc.conf.max_attempts = 1;
    sc_open();
    sc_call_t a = {0}, b = {0};
    start_two(&a, &b);
    sc_reply(0, 503, "");
    sc_wait_done(&a.done);
    sc_wait_done(&b.done);
    sc_expect_failed(&a.item, POOL_OUTCOME_UPSTREAM_ERROR);
    sc_expect_failed(&b.item, POOL_OUTCOME_UPSTREAM_ERROR);
    cr_expect_eq(a.item.failures, 1);
    sc_expect_log(b.call, 0, 0, POOL_FAIL_NONE, 503, 0);
}

Test(call_merge, a_rate_limited_merge_fails_each_poll_rate_limited)
{
    sc_conf(1);
    sc.conf.pressure.merge_window_ms = WINDOW_MS;
    sc_open();
    sc_call_t a = {0}, b = {0};
    start_two(&a, &b);
    sc_finish(0, (sc_answer_t){.status = 429, .body = "", .retry_after_s = 4});
    sc_wait_done(&b.done);
    sc_expect_failed(&a.item, POOL_OUTCOME_RATE_LIMITED);
    sc_expect_failed(&b.item, POOL_OUTCOME_RATE_LIMITED);
    cr_expect_eq(b.item.retry_after_ms, 4000);
}

Test(call_merge, a_member_missing_from_the_answer_is_asked_of_the_next_endpoint)
{
    open_merging(2);
    sc_call_t a = {0}, b = {0};
    start_two(&a, &b);
    sc_reply(0, 200, "[" ANS0 "]");
    cr_assert_eq(sc.natt, 2);
    sc_expect_sent(1, 1, "[" R2_AS1 "]");
    sc_reply(1, 200, "[" ANS1 "]");
    sc_wait_done(&b.done);
    sc_expect_answer(&a.item, 0, ANS0);
    sc_expect_answer(&b.item, 1, ANS1);
    cr_expect_eq(pool_call_attempts(b.call), 2);
}

/* ---- what does not merge ---- */

/* raw is sent at once, as it is (no merge window). */
static void expect_sent_at_once(const char *raw, int batch)
{
    pool_item_t it;
    sc_done_t done = {0};
    sc_item(&it, raw);
    pool_call_t *call = sc_call(&it, 1, batch, 0, sc_on_done, &done);
    cr_expect_eq(sc.natt, 1, "%s went at once", raw);
    sc_cancel_call(call);
}

Test(call_merge, a_poll_in_a_clients_batch_is_not_merged)
{
    open_merging(1);
    expect_sent_at_once(R1, 1);
}

Test(call_merge, a_poll_of_something_that_is_no_hash_is_not_merged)
{
    open_merging(1);
    expect_sent_at_once("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_getTransactionReceipt\",\"params\":[\"0x12\"]}", 0);
}

Test(call_merge, another_confirmation_method_is_not_merged)
{
    open_merging(1);
    expect_sent_at_once("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_getTransactionByHash\",\"params\":[\"" H1 "\"]}", 0);
}

Test(call_merge, nothing_merges_without_pressure)
{
    sc_conf(1);
    sc.conf.pressure.merge_window_ms = WINDOW_MS;
    sc.conf.pressure.enabled = 0;
    sc_open();
    expect_sent_at_once(R1, 0);
}

Test(call_merge, a_poll_whose_deadline_passes_in_the_window_leaves_it)
{
    sc_conf(1);
    sc.conf.pressure.merge_window_ms = 500;
    sc.conf.timeouts.request_ms = 30;
    sc_open();
    sc_call_t a = {0};
    sc_start_one(&a, R1, 0);
    sc_wait_done(&a.done);
    sc_expect_failed(&a.item, POOL_OUTCOME_DEADLINE);
    cr_expect_eq(sc.natt, 0);
}

/* ---- pins: polls merge only with polls pinned to the same endpoint ---- */

#define RAW_TX "0x02f8aa"

Test(call_merge, a_pinned_poll_merges_only_with_polls_pinned_alike)
{
    sc_with_state();
    open_merging(2);
    /* endpoint 1 took the transaction H1 */
    sc_call_t w = {0};
    sc_refuse_next(0, POOL_FAIL_CONNECT);
    sc_start_one(&w, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"eth_sendRawTransaction\",\"params\":[\"" RAW_TX "\"]}", 0);
    sc_reply(1, 200, "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":\"" H1 "\"}");
    sc_wait_done(&w.done);
    size_t base = sc.natt;
    sc_call_t a = {0}, b = {0};
    sc_start_one(&a, R1, 0);
    sc_start_one(&b, R2, 0);
    sc_wait_attempts(base + 2);
    /* each alone: one to the pin, one to the plan's first */
    for (size_t i = base; i < base + 2; i++) {
        const sc_attempt_t *at = sc_att(i);
        cr_expect_str_eq(at->body, at->ep == 1 ? R1 : R2, "attempt %zu at endpoint %d", i, at->ep);
    }
    cr_expect_neq(sc_att(base)->ep, sc_att(base + 1)->ep);
}

/* ---- Solana: getSignatureStatuses, one call with everyone's signatures ---- */

#define SIG1 "\"2AXDGYSE4f2sz7tvMMzyHvUfcoJmxudvdhBcmiUSo6ijwfYmfZYsKRxboQMPh3R4kUhXRVdtSXFXMheka4Rc4P2\""
#define SIG2 "\"3L3RY5sT8K4kyEnqhizwaqxLEbcYvpGrGPNEYRwtbCSUtL6YL86jdrvCbohnP5q8VxQ3qzGmt3W3iQJW97rD7m3\""
#define SIG3 "\"4VZdodJgBy6dxMgm45zusmRzrPvKtiumu5YrK9RLPJADpzeJzgebxHsoQD4B58FCFS6aGUufKZka56xFiBGpB94\""
#define OPTS "{\"searchTransactionHistory\":true}"
#define S1 "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"getSignatureStatuses\",\"params\":[[" SIG1 "," SIG2 "]," OPTS "]}"
#define S2 "{\"jsonrpc\":\"2.0\",\"id\":\"b\",\"method\":\"getSignatureStatuses\",\"params\":[[" SIG3 "]," OPTS "]}"
#define ST1 "{\"slot\":7,\"confirmations\":null,\"err\":null,\"confirmationStatus\":\"finalized\"}"

static void open_solana(size_t n)
{
    sc_conf(n);
    sc.conf.chain = POLICY_CHAIN_SOLANA;
    sc.conf.pressure.merge_window_ms = WINDOW_MS;
    sc_open();
}

Test(call_merge, solana_statuses_are_asked_in_one_call_and_split_per_poll)
{
    open_solana(1);
    sc_call_t a = {0}, b = {0};
    sc_start_one(&a, S1, 0);
    sc_start_one(&b, S2, 0);
    sc_wait_attempts(1);
    sc_expect_sent(0, 0, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"getSignatureStatuses\",\"params\":[[" SIG1 "," SIG2
                         "," SIG3 "]," OPTS "]}");
    sc_reply(0, 200, "{\"jsonrpc\":\"2.0\",\"result\":{\"context\":{\"slot\":9},\"value\":[null," ST1 ",null]},\"id\":1}");
    sc_wait_done(&a.done);
    sc_wait_done(&b.done);
    sc_expect_answer(&a.item, 0, "{\"jsonrpc\":\"2.0\",\"result\":{\"context\":{\"slot\":9},\"value\":[null," ST1 "]},\"id\":11}");
    cr_expect(sc_answer_id_is(&a.item, "11"), "its own id, in place");
    sc_expect_answer(&b.item, 0, "{\"jsonrpc\":\"2.0\",\"result\":{\"context\":{\"slot\":9},\"value\":[null]},\"id\":\"b\"}");
    cr_expect(sc_answer_id_is(&b.item, "\"b\""));
    cr_expect_eq(a.item.verdict, POLICY_VERDICT_SUCCESS);
    cr_expect_eq(sc.net->pressure.polls_merged, 2);
}

Test(call_merge, a_solana_answer_that_does_not_split_sends_each_poll_on_alone)
{
    open_solana(1);
    sc_call_t a = {0}, b = {0};
    sc_start_one(&a, S1, 0);
    sc_start_one(&b, S2, 0);
    sc_wait_attempts(1);
    /* two statuses for three signatures */
    sc_reply(0, 200, "{\"jsonrpc\":\"2.0\",\"result\":{\"context\":{\"slot\":9},\"value\":[null,null]},\"id\":1}");
    sc_wait_attempts(3); /* each poll goes on by itself, once the merged call is done */
    sc_expect_sent(1, 0, S1);
    sc_expect_sent(2, 0, S2);
    sc_reply(1, 200, "{\"jsonrpc\":\"2.0\",\"result\":{\"context\":{\"slot\":9},\"value\":[null,null]},\"id\":11}");
    sc_reply(2, 200, "{\"jsonrpc\":\"2.0\",\"result\":{\"context\":{\"slot\":9},\"value\":[null]},\"id\":\"b\"}");
    sc_wait_done(&a.done);
    sc_wait_done(&b.done);
    cr_expect_eq(a.item.state, POOL_ITEM_ANSWERED);
    cr_expect_eq(b.item.state, POOL_ITEM_ANSWERED);
}

Test(call_merge, solana_polls_with_other_options_do_not_merge)
{
    open_solana(1);
    sc_call_t a = {0}, b = {0};
    sc_start_one(&a, S1, 0);
    sc_start_one(&b, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"getSignatureStatuses\",\"params\":[[" SIG3 "]]}", 0);
    sc_wait_attempts(2);
    cr_expect_str_eq(sc_att(0)->body, S1);
    cr_expect_eq(sc.net->pressure.polls_merged, 0);
}
