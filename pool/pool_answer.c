/* pool/pool_answer.c: turning one attempt's outcome into per-item state.
 *
 * The body is never parsed into a tree: wire/envelope.h finds each
 * member's bytes and id, and only an "error" member is decoded for the
 * verdict. A write that may have reached an upstream is settled as an
 * ambiguous failure instead of being sent anywhere else. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/sl_log.h"
#include "policy/shape.h"
#include "policy/verdict.h"
#include "pool/pool_call_int.h"

typedef struct answer_ctx {
    pool_call_t *call;
    pool_exchange_t *ex;
    const char *body;
    size_t len;
    int status;
    uint32_t retry_hdr_ms;    /* from Retry-After, 0 if none */
    pool_attempt_result_t *res;
} answer_ctx_t;

/* How bad an outcome is for the endpoint: the attempt keeps the worst. */
static const uint8_t outcome_rank[STATE_OUTCOME_COUNT] = {
    [STATE_OUTCOME_OK] = 0,           [STATE_OUTCOME_DETERMINISTIC] = 1, [STATE_OUTCOME_UNSUPPORTED] = 2,
    [STATE_OUTCOME_MISSING_DATA] = 3, [STATE_OUTCOME_RATE_LIMITED] = 4,  [STATE_OUTCOME_HTTP_ERROR] = 5,
    [STATE_OUTCOME_RESET] = 6,        [STATE_OUTCOME_TIMEOUT] = 7,       [STATE_OUTCOME_CONNECT] = 8,
    [STATE_OUTCOME_MALFORMED] = 9,
    /* set by pool_call.c, never by an answer */
    [STATE_OUTCOME_LOCAL] = 0,        [STATE_OUTCOME_TOO_LARGE] = 0,     [STATE_OUTCOME_ID_UNANSWERABLE] = 0,
    [STATE_OUTCOME_SLOW_CALL] = 0,
};

static const state_outcome_t verdict_outcome[POLICY_VERDICT_COUNT] = {
    [POLICY_VERDICT_SUCCESS] = STATE_OUTCOME_OK,
    [POLICY_VERDICT_DETERMINISTIC] = STATE_OUTCOME_DETERMINISTIC,
    [POLICY_VERDICT_TRANSIENT] = STATE_OUTCOME_HTTP_ERROR,
    [POLICY_VERDICT_RATE_LIMITED] = STATE_OUTCOME_RATE_LIMITED,
    [POLICY_VERDICT_MISSING_DATA] = STATE_OUTCOME_MISSING_DATA,
    [POLICY_VERDICT_UNSUPPORTED] = STATE_OUTCOME_UNSUPPORTED,
    [POLICY_VERDICT_ALREADY_KNOWN] = STATE_OUTCOME_OK,
    [POLICY_VERDICT_NONCE_TOO_LOW] = STATE_OUTCOME_DETERMINISTIC,
};

/* edges[from][to] of an item's machine */
static const uint8_t item_edges[POOL_ITEM_STATE_COUNT][POOL_ITEM_STATE_COUNT] = {
    [POOL_ITEM_PENDING] = {[POOL_ITEM_ANSWERED] = 1, [POOL_ITEM_FAILED] = 1},
};

int pool_item_edge_allowed(pool_item_state_t from, pool_item_state_t to)
{
    return (unsigned)from < POOL_ITEM_STATE_COUNT && (unsigned)to < POOL_ITEM_STATE_COUNT && item_edges[from][to];
}

void pool_item_settle(pool_item_t *it, pool_item_state_t to)
{
    if (!pool_item_edge_allowed(it->state, to)) {
        sl_log_error("bug: call item moved from state %d to %d", (int)it->state, (int)to);
        abort();
    }
    it->state = to;
}

int pool_item_params(const pool_item_t *it, wire_span_t *params)
{
    if (it->params.len != 0) {
        *params = it->params;
        return 1;
    }
    wire_envelope_t env;
    if (wire_envelope_scan(it->raw, it->raw_len, &env) != SL_OK)
        return 0;
    *params = env.params;
    return 1;
}

static void note_outcome(answer_ctx_t *a, state_outcome_t o)
{
    if (outcome_rank[o] > outcome_rank[a->res->outcome])
        a->res->outcome = o;
}

/* Counts a TRANSIENT verdict, and whether its answer says the upstream gave
 * up on the call for time (err: the JSON-RPC error, NULL if none): pool_call.c
 * asks policy/shape.h whether that is the request's doing. */
static void note_transient(answer_ctx_t *a, policy_verdict_t v, const wire_rpc_error_t *err)
{
    if (v != POLICY_VERDICT_TRANSIENT)
        return;
    a->res->transient++;
    a->res->gave_up += (uint32_t)policy_shape_gave_up(a->status, err);
}

static int item_is_write(const pool_item_t *it)
{
    return !it->method->retry_safe;
}

/* A write that may have reached the upstream stops here (unless the
 * operator opted in to re-sending). Returns 1 if the item was settled. */
static int settle_if_ambiguous_write(pool_call_t *call, pool_item_t *it, int ambiguous)
{
    if (!ambiguous || !item_is_write(it) || call->net->conf->resend_writes)
        return 0;
    pool_item_settle(it, POOL_ITEM_FAILED);
    it->outcome = POOL_OUTCOME_AMBIGUOUS_WRITE;
    return 1;
}

static void item_failed(pool_call_t *call, pool_item_t *it, pool_fail_t fail, int ambiguous)
{
    unsigned fl = pool_fail_flags(fail);
    if (fl & POOL_FAIL_F_LOCAL) { /* not an upstream failure; ambiguous only if the request left */
        if (it->local_failures < UINT8_MAX)
            it->local_failures++;
        settle_if_ambiguous_write(call, it, ambiguous);
        return;
    }
    if (it->failures < UINT8_MAX)
        it->failures++;
    if ((fl & POOL_FAIL_F_TIMEOUT) && it->timeouts < UINT8_MAX)
        it->timeouts++;
    it->fail_seen |= (uint8_t)fl;
    settle_if_ambiguous_write(call, it, ambiguous);
}

static void item_rate_limited(pool_item_t *it, uint32_t retry_ms)
{
    if (it->rate_limited < UINT8_MAX)
        it->rate_limited++;
    if (retry_ms != 0 && (it->retry_after_ms == 0 || retry_ms < it->retry_after_ms))
        it->retry_after_ms = retry_ms;
}

void pool_answer_fail_transport(pool_call_t *call, pool_exchange_t *ex)
{
    /* a local failure after sending (no room for the answer) leaves a write ambiguous too */
    int ambiguous = ex->sent && (pool_fail_flags(ex->fail) & (POOL_FAIL_F_AMBIG | POOL_FAIL_F_LOCAL));
    for (size_t i = 0; i < call->nsent; i++) {
        pool_item_t *it = &call->items[call->sent[i]];
        if (it->state == POOL_ITEM_PENDING)
            item_failed(call, it, ex->fail, ambiguous);
    }
}

/* Applies a verdict to one item. ans/ans_len/ans_id describe its response
 * object inside the body (NULL when the verdict came from HTTP alone). */
static void item_verdict(answer_ctx_t *a, pool_item_t *it, policy_verdict_t v, uint32_t retry_ms, const char *ans,
                         size_t ans_len, wire_span_t ans_id)
{
    int ep = a->ex->link->index;
    note_outcome(a, verdict_outcome[v]);
    if (v == POLICY_VERDICT_RATE_LIMITED) {
        uint32_t ms = retry_ms ? retry_ms : a->retry_hdr_ms;
        if (!a->res->rate_limited || (ms != 0 && ms > a->res->retry_ms))
            a->res->retry_ms = ms;
        a->res->rate_limited = 1;
    }
    char txid[128];
    switch (v) {
    case POLICY_VERDICT_ALREADY_KNOWN:
        /* the node has it: the broadcast succeeded, answer with the id */
        if (pool_write_txid(a->call, it, txid, sizeof(txid))) {
            pool_write_synthesize(a->call, it, ep, txid);
            pool_write_pin(a->call, ep, txid);
            return;
        }
        goto as_is;
    case POLICY_VERDICT_NONCE_TOO_LOW:
        /* maybe mined already: ask the same node by hash before failing it */
        if (pool_write_txid(a->call, it, txid, sizeof(txid))) {
            it->verify = 1;
            it->verify_ep = (int16_t)ep;
            it->verdict = POLICY_VERDICT_DETERMINISTIC;
            it->answer = ans; /* the fallback: the node's own error */
            it->answer_len = (uint32_t)ans_len;
            it->answer_id = ans_id;
            it->endpoint = (int16_t)ep;
            return;
        }
        goto as_is;
    case POLICY_VERDICT_SUCCESS:
    case POLICY_VERDICT_DETERMINISTIC:
    as_is:
        it->verdict = v == POLICY_VERDICT_SUCCESS ? v : POLICY_VERDICT_DETERMINISTIC;
        pool_item_settle(it, POOL_ITEM_ANSWERED);
        it->answer = ans;
        it->answer_len = (uint32_t)ans_len;
        it->answer_id = ans_id;
        it->endpoint = (int16_t)ep;
        if (v == POLICY_VERDICT_SUCCESS && it->method->cls == POLICY_CLASS_WRITE)
            pool_write_accepted(a->call, it);
        return;
    case POLICY_VERDICT_RATE_LIMITED:
        /* refused before processing: safe to move on, writes included */
        item_rate_limited(it, retry_ms ? retry_ms : a->retry_hdr_ms);
        pool_method_count(pool_link_endpoint(a->ex->link), it->method, STATE_MC_REFUSALS, 1);
        return;
    case POLICY_VERDICT_UNSUPPORTED:
        a->call->no_retry[ep] = 1; /* asking it again will not change its mind */
        /* fall through */
    case POLICY_VERDICT_MISSING_DATA:
        if (ans != NULL) { /* returned as-is if no endpoint does better */
            it->verdict = v;
            it->answer = ans;
            it->answer_len = (uint32_t)ans_len;
            it->answer_id = ans_id;
            it->endpoint = (int16_t)ep;
        }
        item_failed(a->call, it, POOL_FAIL_RPC_ERROR, v == POLICY_VERDICT_MISSING_DATA);
        return;
    case POLICY_VERDICT_TRANSIENT:
        /* the upstream got the request: for a write that is ambiguous
         * (a JSON-RPC error for a whole batch included), except for a
         * redirect or a 4xx refusal (authentication, wrong path) */
        item_failed(a->call, it, ans ? POOL_FAIL_RPC_ERROR : POOL_FAIL_HTTP_STATUS,
                    a->status < 300 || a->status >= 500);
        return;
    case POLICY_VERDICT_COUNT:
        break;
    }
}

static void all_sent(answer_ctx_t *a, policy_verdict_t v, uint32_t retry_ms)
{
    pool_call_t *call = a->call;
    for (size_t i = 0; i < call->nsent; i++) {
        pool_item_t *it = &call->items[call->sent[i]];
        if (it->state == POOL_ITEM_PENDING)
            item_verdict(a, it, v, retry_ms, NULL, 0, (wire_span_t){0, 0});
    }
}

static void all_sent_failed(answer_ctx_t *a, pool_fail_t fail)
{
    pool_call_t *call = a->call;
    note_outcome(a, pool_fail_outcome(fail));
    for (size_t i = 0; i < call->nsent; i++) {
        pool_item_t *it = &call->items[call->sent[i]];
        if (it->state == POOL_ITEM_PENDING)
            item_failed(call, it, fail, 1);
    }
}

/* Verdict of one response object (already scanned). */
static policy_verdict_t object_verdict(answer_ctx_t *a, const pool_item_t *it, const wire_envelope_t *env,
                                       uint32_t *retry_ms)
{
    *retry_ms = 0;
    policy_verdict_t v;
    if (env->error.len == 0) {
        v = a->status >= 200 && a->status < 300 ? POLICY_VERDICT_SUCCESS
                                                : policy_verdict_http(a->call->net->conf->chain, a->status);
        note_transient(a, v, NULL);
        return v;
    }
    wire_rpc_error_t err;
    if (wire_envelope_error(a->body, env->error, &err) != SL_OK) {
        note_transient(a, POLICY_VERDICT_TRANSIENT, NULL);
        return POLICY_VERDICT_TRANSIENT;
    }
    v = policy_verdict_rpc_error(a->call->net->conf->chain, it->method, a->status, &err, a->body, retry_ms);
    note_transient(a, v, &err);
    return v;
}

static int envelope_ok(const wire_envelope_t *env)
{
    /* exactly one of result / error, as JSON-RPC 2.0 requires */
    return (env->result.len != 0) != (env->error.len != 0);
}

/* 1 if id (span of buf) is the id this attempt sent for it: the client's
 * own, or the index it was renumbered to (pool_call.c build_request). */
static int is_sent_id(const pool_call_t *call, const pool_item_t *it, const char *buf, wire_span_t id)
{
    static const char zero[] = "0";
    if (it->id.len != 0 && !call->renumbered)
        return wire_json_id_equal(buf, id, it->raw, it->id);
    return wire_json_id_equal(buf, id, zero, (wire_span_t){0, 1});
}

/* A body at 429, 402 or 5xx whose error member decides (see apply_refusal)
 * but whose id is not the one sent (proxies answer such statuses at id
 * null, or without an id): the error alone, at id null, as a body of the
 * call's own, so the gateway can splice the client's id in. */
static const char *rebuild_error(answer_ctx_t *a, wire_span_t error, size_t *len, wire_span_t *id)
{
    pool_call_t *call = a->call;
    static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":";
    sl_buf_t b = SL_BUF_INIT;
    sl_buf_append(&b, head, sizeof(head) - 1);
    sl_buf_append(&b, a->body + error.off, error.len);
    sl_buf_append_char(&b, '}');
    *id = (wire_span_t){(uint32_t)sizeof(head) - 1 - 4 - 9, 4};
    *len = b.len;
    return pool_call_keep(call, &b);
}

/* An answer at 429, 402 or 5xx. The status says rate limit or transient,
 * but the body may say more: Infura's data.backoff_seconds sets the mark,
 * OP-Stack's "sender is over rate limit" is the sender's own limit
 * (deterministic: every provider forwards to the same sequencer), and a
 * write the node "already knows" in a 5xx was broadcast. So a JSON-RPC error
 * in the body is classified together with the status (policy/verdict.c: the
 * rows above STATUS_ROWS speak before the status does). A body that is not a
 * JSON-RPC error leaves the status to decide. */
static void apply_refusal(answer_ctx_t *a)
{
    pool_call_t *call = a->call;
    policy_chain_t chain = call->net->conf->chain;
    policy_verdict_t by_status = policy_verdict_http(chain, a->status);
    wire_envelope_t env;
    wire_rpc_error_t err;
    if (wire_envelope_scan(a->body, a->len, &env) != SL_OK || env.error.len == 0 ||
        wire_envelope_error(a->body, env.error, &err) != SL_OK) {
        note_transient(a, by_status, NULL);
        all_sent(a, by_status, 0);
        return;
    }
    pool_item_t *it = &call->items[call->sent[0]];
    uint32_t retry_ms = 0;
    policy_verdict_t v = policy_verdict_rpc_error(chain, it->method, a->status, &err, a->body, &retry_ms);
    int answers = v == POLICY_VERDICT_DETERMINISTIC || v == POLICY_VERDICT_ALREADY_KNOWN ||
                  v == POLICY_VERDICT_NONCE_TOO_LOW;
    if (!answers) {
        policy_verdict_t all = v == POLICY_VERDICT_RATE_LIMITED || v == POLICY_VERDICT_TRANSIENT ? v : by_status;
        note_transient(a, all, &err);
        all_sent(a, all, retry_ms);
        return;
    }
    if (call->batch || call->nsent != 1) {
        /* one error for a whole batch is no member's answer */
        note_transient(a, by_status, &err);
        all_sent(a, by_status, 0);
        return;
    }
    const char *ans = a->body;
    size_t len = a->len;
    wire_span_t id = env.id;
    if (!is_sent_id(call, it, a->body, env.id))
        ans = rebuild_error(a, env.error, &len, &id);
    item_verdict(a, it, v, retry_ms, ans, len, id);
}

static void apply_single(answer_ctx_t *a)
{
    pool_call_t *call = a->call;
    pool_item_t *it = &call->items[call->sent[0]];
    wire_envelope_t env;
    if (wire_envelope_scan(a->body, a->len, &env) != SL_OK || !envelope_ok(&env)) {
        if (a->status >= 200 && a->status < 300) {
            all_sent_failed(a, POOL_FAIL_BAD_JSON);
        } else {
            policy_verdict_t v = policy_verdict_http(call->net->conf->chain, a->status);
            note_transient(a, v, NULL);
            all_sent(a, v, 0);
        }
        return;
    }
    if (!is_sent_id(call, it, a->body, env.id)) {
        /* an error at id null: the upstream could not read the call (it may
         * be the request's doing: pool_call.c asks the next endpoint) */
        wire_json_kind_t k = wire_json_kind(a->body, env.id);
        wire_rpc_error_t err;
        a->res->unread = env.error.len != 0 && (k == WIRE_JSON_NULL || k == WIRE_JSON_NONE) &&
                         wire_envelope_error(a->body, env.error, &err) == SL_OK && policy_shape_unread(&err);
        all_sent_failed(a, POOL_FAIL_WRONG_ID);
        return;
    }
    uint32_t retry_ms;
    policy_verdict_t v = object_verdict(a, it, &env, &retry_ms);
    item_verdict(a, it, v, retry_ms, a->body, a->len, env.id);
}

/* A batch answered with one object: the upstream refused the batch itself. */
static void apply_batch_object(answer_ctx_t *a)
{
    wire_envelope_t env;
    if (wire_envelope_scan(a->body, a->len, &env) != SL_OK || env.error.len == 0) {
        all_sent_failed(a, POOL_FAIL_BAD_JSON);
        return;
    }
    uint32_t retry_ms;
    policy_verdict_t v = object_verdict(a, &a->call->items[a->call->sent[0]], &env, &retry_ms);
    if (v == POLICY_VERDICT_SUCCESS || v == POLICY_VERDICT_DETERMINISTIC)
        v = POLICY_VERDICT_UNSUPPORTED; /* e.g. "batch requests are not supported" */
    all_sent(a, v, retry_ms);
}

static void apply_batch_member(answer_ctx_t *a, wire_span_t m, uint8_t *seen)
{
    pool_call_t *call = a->call;
    wire_envelope_t env;
    int64_t idx;
    if (wire_envelope_scan(a->body + m.off, m.len, &env) != SL_OK || !envelope_ok(&env) || env.id.len == 0 ||
        wire_json_int64(a->body + m.off, env.id, &idx) != SL_OK || idx < 0 || (uint64_t)idx >= call->nitems ||
        !seen[idx] || seen[idx] == 2)
        return; /* not one of ours: the item stays pending */
    seen[idx] = 2;
    pool_item_t *it = &call->items[idx];
    if (it->state != POOL_ITEM_PENDING)
        return;
    answer_ctx_t member = *a;
    member.body = a->body + m.off;
    member.len = m.len;
    uint32_t retry_ms;
    policy_verdict_t v = object_verdict(&member, it, &env, &retry_ms);
    item_verdict(&member, it, v, retry_ms, member.body, m.len, env.id);
}

static void apply_batch(answer_ctx_t *a)
{
    pool_call_t *call = a->call;
    size_t i = 0;
    while (i < a->len && (a->body[i] == ' ' || a->body[i] == '\n' || a->body[i] == '\r' || a->body[i] == '\t'))
        i++;
    if (i < a->len && a->body[i] == '{') {
        apply_batch_object(a);
        return;
    }
    size_t max = call->nsent + 8, n = 0;
    wire_span_t *spans = sl_xmalloc(max * sizeof(*spans));
    uint8_t *seen = sl_xcalloc(call->nitems, 1);
    if (wire_envelope_scan_array(a->body, a->len, spans, max, &n) != SL_OK) {
        all_sent_failed(a, POOL_FAIL_BAD_JSON);
        goto cleanup;
    }
    for (size_t k = 0; k < call->nsent; k++)
        seen[call->sent[k]] = 1;
    for (size_t k = 0; k < n; k++)
        apply_batch_member(a, spans[k], seen);
    for (size_t k = 0; k < call->nsent; k++) {
        pool_item_t *it = &call->items[call->sent[k]];
        if (seen[call->sent[k]] == 1 && it->state == POOL_ITEM_PENDING) {
            note_outcome(a, STATE_OUTCOME_MALFORMED);
            item_failed(call, it, POOL_FAIL_MISSING, 1);
        }
    }
cleanup:
    free(spans);
    free(seen);
}

void pool_answer_apply(pool_call_t *call, pool_exchange_t *ex, pool_attempt_result_t *res)
{
    const pool_body_t *body = &call->bodies[call->nbodies - 1];
    memset(res, 0, sizeof(*res));
    answer_ctx_t a = {call, ex, pool_body_base(body), pool_body_len(body), ex->head.status,
                      pool_http_retry_after_ms(&ex->head), res};
    if (a.status == 429 || a.status == 402 || a.status >= 500) {
        apply_refusal(&a);
        return;
    }
    if (call->batch)
        apply_batch(&a);
    else
        apply_single(&a);
}

static pool_outcome_t item_outcome(const pool_call_t *call, const pool_item_t *it)
{
    if (it->rate_limited > 0)
        return POOL_OUTCOME_RATE_LIMITED;
    if (it->failures > 0 && it->timeouts == it->failures)
        return POOL_OUTCOME_TIMEOUT;
    if (it->failures == 0)
        return it->local_failures > 0 ? POOL_OUTCOME_LOCAL : POOL_OUTCOME_UNAVAILABLE;
    (void)call;
    return POOL_OUTCOME_UPSTREAM_ERROR;
}

void pool_answer_exhaust(pool_call_t *call, pool_outcome_t forced)
{
    for (size_t i = 0; i < call->nitems; i++) {
        pool_item_t *it = &call->items[i];
        if (it->state != POOL_ITEM_PENDING)
            continue;
        if (it->answer != NULL) {
            pool_item_settle(it, POOL_ITEM_ANSWERED);
            continue;
        }
        pool_item_settle(it, POOL_ITEM_FAILED);
        it->outcome = forced != POOL_OUTCOME_OK ? forced : item_outcome(call, it);
    }
}
