/* tests/pool/test_call_write.c: writes in the call loop (pool/pool_call.c,
 * pool/pool_answer.c, pool/pool_write.c). A write that may have reached an
 * upstream is never sent anywhere else (AMBIGUOUS_WRITE) unless the network
 * opted in (resend_writes); one refused before processing (not sent, a rate
 * limit, a 4xx refusal) may move on; "already known" is the broadcast's
 * success; "nonce too low" is checked by hash at the same node. */
#include "wire/txid.h"
#include "tests/pool/scripted.h"

#define RAW_TX "0x02f8aa"
#define SEND "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"eth_sendRawTransaction\",\"params\":[\"" RAW_TX "\"]}"
#define SEND_OK "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":\"0xabc\"}"
#define BN "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_blockNumber\",\"params\":[]}"

TestSuite(call_write, .fini = sc_close);

/* The transaction's hash, as pool_write.c computes it. */
static void tx_hash(char out[67])
{
    cr_assert_eq(wire_eth_tx_hash(RAW_TX, strlen(RAW_TX), out), SL_OK);
}

static sc_call_t w; /* the test's write (each test runs in its own process) */

/* raw, a write, sent to endpoint 0 of two, ended there as `end`. */
static void send_and_end(const char *raw, sc_answer_t end)
{
    sc_start_one(&w, raw, 0);
    sc_expect_sent(0, 0, raw);
    cr_expect_eq(sc_att(0)->is_write, 1);
    sc_finish(0, end);
}

/* The write ended as `end` at endpoint 0 must stop there. */
static void expect_ambiguous(sc_answer_t end)
{
    sc_open_n(2);
    send_and_end(SEND, end);
    sc_wait_done(&w.done);
    cr_expect_eq(sc.natt, 1, "the write is not sent to another endpoint");
    sc_expect_failed(&w.item, POOL_OUTCOME_AMBIGUOUS_WRITE);
    cr_expect_eq(pool_call_attempts(w.call), 1);
    cr_expect_eq(sc_ep(1)->health.stats.attempts, 0);
}

Test(call_write, a_reset_after_sending_is_ambiguous_and_not_resent)
{
    expect_ambiguous(SC_FAILED(POOL_FAIL_RESET));
    sc_expect_log(w.call, 0, 0, POOL_FAIL_RESET, 0, 0);
    cr_expect_eq(w.item.fail_seen & POOL_FAIL_F_AMBIG, POOL_FAIL_F_AMBIG);
}

Test(call_write, a_timeout_after_sending_is_ambiguous)
{
    expect_ambiguous(SC_FAILED(POOL_FAIL_FIRST_BYTE_TIMEOUT));
}

Test(call_write, a_5xx_answer_is_ambiguous)
{
    expect_ambiguous(SC_STATUS(503, ""));
    sc_expect_log(w.call, 0, 0, POOL_FAIL_NONE, 503, 0);
}

Test(call_write, a_transient_json_rpc_error_is_ambiguous)
{
    expect_ambiguous(SC_STATUS(200, "{\"jsonrpc\":\"2.0\",\"id\":9,\"error\":{\"code\":-32603,\"message\":\"internal error\"}}"));
}

Test(call_write, a_malformed_answer_is_ambiguous)
{
    expect_ambiguous(SC_STATUS(200, "<html>oops</html>"));
}

Test(call_write, an_unknown_method_that_sounds_like_a_write_is_one)
{
    sc_open_n(2);
    send_and_end("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"mev_submitBundle\",\"params\":[{}]}",
                 SC_FAILED(POOL_FAIL_RESET));
    sc_wait_done(&w.done);
    cr_expect_eq(sc.natt, 1);
    sc_expect_failed(&w.item, POOL_OUTCOME_AMBIGUOUS_WRITE);
}

/* ---- refused before it was processed: it may move on ---- */

/* Endpoint 0 refused the write without processing it: endpoint 1 gets the
 * same bytes and answers. */
static void expect_moved_on(void)
{
    cr_assert_eq(sc.natt, 2, "the write moves on");
    sc_expect_sent(1, 1, SEND);
    cr_expect_eq(sc_att(1)->is_write, 1);
    sc_reply(1, 200, SEND_OK);
    sc_wait_done(&w.done);
    sc_expect_answer(&w.item, 1, SEND_OK);
    cr_expect_eq(w.item.verdict, POLICY_VERDICT_SUCCESS);
}

/* The same, for a write endpoint 0 ended as `end`. */
static void expect_ended_and_moved_on(sc_answer_t end)
{
    sc_open_n(2);
    send_and_end(SEND, end);
    expect_moved_on();
}

Test(call_write, a_rate_limit_refusal_moves_on)
{
    expect_ended_and_moved_on((sc_answer_t){.status = 429, .body = "", .retry_after_s = 1});
    cr_expect_eq(w.item.rate_limited, 1);
}

Test(call_write, a_refused_connection_moves_on)
{
    sc_open_n(2);
    sc_refuse_next(0, POOL_FAIL_CONNECT);
    sc_start_one(&w, SEND, 0);
    expect_moved_on();
    sc_expect_log(w.call, 0, 0, POOL_FAIL_CONNECT, 0, 0);
}

Test(call_write, a_connection_that_never_opened_moves_on)
{
    expect_ended_and_moved_on((sc_answer_t){.fail = POOL_FAIL_CONNECT_TIMEOUT, .sent = 0});
}

Test(call_write, an_authentication_refusal_moves_on)
{
    expect_ended_and_moved_on(SC_STATUS(401, "Unauthorized"));
    sc_expect_log(w.call, 0, 0, POOL_FAIL_NONE, 401, 0);
}

Test(call_write, resend_writes_sends_an_ambiguous_write_on)
{
    sc_conf(2);
    sc.conf.resend_writes = 1;
    sc_open();
    send_and_end(SEND, SC_FAILED(POOL_FAIL_RESET));
    expect_moved_on();
}

Test(call_write, a_write_refused_everywhere_is_rate_limited)
{
    sc_open_n(2);
    send_and_end(SEND, (sc_answer_t){.status = 429, .body = "", .retry_after_s = 2});
    sc_finish(1, (sc_answer_t){.status = 429, .body = "", .retry_after_s = 4});
    sc_wait_done(&w.done);
    sc_expect_failed(&w.item, POOL_OUTCOME_RATE_LIMITED);
    cr_expect_eq(w.item.retry_after_ms, 2000);
}

Test(call_write, a_deterministic_refusal_is_the_answer)
{
    static const char under[] =
        "{\"jsonrpc\":\"2.0\",\"id\":9,\"error\":{\"code\":-32000,\"message\":\"replacement transaction underpriced\"}}";
    sc_open_n(2);
    send_and_end(SEND, SC_STATUS(200, under));
    sc_wait_done(&w.done);
    cr_expect_eq(sc.natt, 1);
    sc_expect_answer(&w.item, 0, under);
    cr_expect_eq(w.item.verdict, POLICY_VERDICT_DETERMINISTIC);
}

Test(call_write, in_a_batch_the_write_stops_and_the_read_goes_on)
{
    sc_open_n(2);
    sc_batch_t b = {0};
    sc_start_batch(&b, SEND, BN);
    sc_reply(0, 502, "");
    cr_assert_eq(sc.natt, 2);
    sc_expect_sent(1, 1, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_blockNumber\",\"params\":[]}]");
    cr_expect_eq(sc_att(1)->is_write, 0);
    sc_reply(1, 200, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"0x10\"}]");
    sc_wait_done(&b.done);
    sc_expect_failed(&b.items[0], POOL_OUTCOME_AMBIGUOUS_WRITE);
    sc_expect_answer(&b.items[1], 1, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"0x10\"}");
}

/* ---- already known ---- */

/* The write's answer is {"jsonrpc":"2.0","id":0,"result":"<hash>"} from ep,
 * the client's id to be spliced over the 0. */
static void expect_synthesized(int ep)
{
    char hash[67], want[160];
    tx_hash(hash);
    snprintf(want, sizeof(want), "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":\"%s\"}", hash);
    sc_wait_done(&w.done);
    sc_expect_answer(&w.item, ep, want);
    cr_expect_eq(w.item.verdict, POLICY_VERDICT_SUCCESS);
    cr_expect(sc_answer_id_is(&w.item, "0"));
}

Test(call_write, already_known_is_the_broadcasts_success)
{
    sc_open_n(2);
    send_and_end(SEND, SC_STATUS(200, "{\"jsonrpc\":\"2.0\",\"id\":9,\"error\":{\"code\":-32000,\"message\":\"already known\"}}"));
    expect_synthesized(0);
    cr_expect_eq(sc.natt, 1);
    cr_expect_eq(sc_ep(0)->health.stats.outcomes[STATE_OUTCOME_OK], 1);
}

Test(call_write, already_known_in_a_5xx_is_the_broadcasts_success_too)
{
    sc_open_n(2);
    send_and_end(SEND, SC_STATUS(500, "{\"jsonrpc\":\"2.0\",\"id\":9,\"error\":{\"code\":-32000,\"message\":\"transaction already in mempool\"}}"));
    expect_synthesized(0);
    cr_expect_eq(sc.natt, 1);
}

Test(call_write, already_known_after_a_refusal_elsewhere)
{
    sc_open_n(2);
    send_and_end(SEND, SC_STATUS(429, ""));
    sc_reply(1, 200, "{\"jsonrpc\":\"2.0\",\"id\":9,\"error\":{\"code\":-32000,\"message\":\"already known\"}}");
    expect_synthesized(1);
}

/* ---- nonce too low: a by-hash check at the same node ---- */

#define NONCE_LOW "{\"jsonrpc\":\"2.0\",\"id\":9,\"error\":{\"code\":-32000,\"message\":\"nonce too low\"}}"

/* Endpoint 1 said "nonce too low" (endpoint 0 refused first, so the check
 * must go to 1, not to the plan's first); the check is attempt 2. */
static void start_nonce_low(void)
{
    char hash[67], want[200];
    tx_hash(hash);
    sc_open_n(2);
    send_and_end(SEND, SC_STATUS(429, ""));
    sc_reply(1, 200, NONCE_LOW);
    cr_assert_eq(sc.natt, 3, "the by-hash check starts at once");
    snprintf(want, sizeof(want),
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_getTransactionByHash\",\"params\":[\"%s\"]}", hash);
    sc_expect_sent(2, 1, want);
    cr_expect_eq(sc_att(2)->is_write, 0, "the check is a read");
    cr_expect_eq(w.done.n, 0);
}

Test(call_write, nonce_too_low_of_a_mined_transaction_is_its_success)
{
    start_nonce_low();
    sc_reply(2, 200, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"hash\":\"0x1\",\"blockNumber\":\"0x5\"}}");
    expect_synthesized(1);
    cr_expect_eq(sc.natt, 3);
    cr_expect_eq(pool_call_attempts(w.call), 3, "the check is logged as an attempt");
    sc_expect_log(w.call, 1, 1, POOL_FAIL_NONE, 200, 0);
    sc_expect_log(w.call, 2, 1, POOL_FAIL_NONE, 200, 0);
}

Test(call_write, nonce_too_low_of_an_unknown_transaction_is_the_nodes_error)
{
    start_nonce_low();
    sc_reply(2, 200, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":null}");
    sc_wait_done(&w.done);
    cr_expect_eq(sc.natt, 3);
    sc_expect_answer(&w.item, 1, NONCE_LOW);
    cr_expect_eq(w.item.verdict, POLICY_VERDICT_DETERMINISTIC);
}

Test(call_write, a_check_that_fails_leaves_the_nodes_error)
{
    start_nonce_low();
    sc_fail(2, POOL_FAIL_RESET);
    sc_wait_done(&w.done);
    cr_expect_eq(sc.natt, 3, "the check is not retried elsewhere");
    sc_expect_answer(&w.item, 1, NONCE_LOW);
    sc_expect_log(w.call, 2, 1, POOL_FAIL_RESET, 0, 0);
}

Test(call_write, a_release_during_the_check_cancels_it)
{
    start_nonce_low();
    sc_cancel_call(w.call);
    cr_expect_eq(sc_att(2)->state, SC_CANCELLED);
    cr_expect_eq(sc_inflight(1), 0);
    sc_run_for(20);
    cr_expect_eq(w.done.n, 0, "a cancelled call never calls back");
}

/* A 401 whose body is a JSON-RPC error at id null (Alchemy's "Must be
 * authenticated!", many proxies' refusals) was refused before anything was
 * processed: a write goes on to the next endpoint, as with a plain body
 * (an_authentication_refusal_moves_on), not AMBIGUOUS_WRITE (once it was
 * judged by its id first: a wrong id, a write that may have been sent). */
Test(call_write, a_json_rpc_authentication_refusal_is_not_ambiguous)
{
    expect_ended_and_moved_on(
        SC_STATUS(401, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"Must be authenticated!\"}}"));
}

/* ---- a Solana broadcast the node already processed ---- */

/* One signature (bytes 1..64) and a short message, in both encodings. */
#define SOL_TX_B64 "AQECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+P0AJCQkJCQkJCQkJCQkJCQkJCQkJCQ=="
#define SOL_TX_B58                                                                                                  \
    "KKvKBaXqyczECWYojeBcwiWFGH49j7BbUa3Y5j9YeyJqCA616YCmY4qXZyer55pDjtfHR2V7rrR1JjbmnCiALGsoUEMbGh94y7RSYngrxr8N2DzoVAG"
#define SOL_SIG "2Ana1pUpv2ZbMVkwF5FXapYeBEjdxDatLn7nvJkhgTSXbs59SyZSx866bXirPgj8QQVB57uxHJBG1YFvkRbFj4T"
#define SOL_PROCESSED                                                                                               \
    "{\"jsonrpc\":\"2.0\",\"id\":9,\"error\":{\"code\":-32002,\"message\":\"Transaction simulation failed: This " \
    "transaction has already been processed\"}}"

static void expect_signature(void)
{
    sc_wait_done(&w.done);
    sc_expect_answer(&w.item, 0, "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":\"" SOL_SIG "\"}");
    cr_expect_eq(w.item.verdict, POLICY_VERDICT_SUCCESS);
}

Test(call_write, solana_already_processed_is_answered_with_the_signature_base64)
{
    sc_conf(2);
    sc.conf.chain = POLICY_CHAIN_SOLANA;
    sc_open();
    send_and_end("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"sendTransaction\",\"params\":[\"" SOL_TX_B64
                 "\",{\"skipPreflight\":false,\"encoding\":\"base64\"}]}",
                 SC_STATUS(200, SOL_PROCESSED));
    expect_signature();
}

Test(call_write, solana_already_processed_is_answered_with_the_signature_base58)
{
    sc_conf(2);
    sc.conf.chain = POLICY_CHAIN_SOLANA;
    sc_open();
    send_and_end("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"sendTransaction\",\"params\":[\"" SOL_TX_B58 "\"]}",
                 SC_STATUS(200, SOL_PROCESSED));
    expect_signature();
}
