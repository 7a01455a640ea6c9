/* gateway/gw_reply.c: assembling the client's answer.
 *
 * A single call answered upstream goes back byte-for-byte (zero copy) when
 * the ids match; otherwise, and for every batch member, the client's own id
 * bytes are spliced into the upstream's answer. A failure is never dressed
 * as a result: it becomes a JSON-RPC error whose data lists every attempt,
 * and the HTTP status says what kind of failure it was. */
#include "gateway/gw_reply.h"

#include <string.h>

#include "base/sl_secret.h"
#include "gateway/gw_refuse.h"
#include "policy/pressure.h"

typedef struct outcome_row {
    int http;
    int code;
    const char *name;
    const char *message;
} outcome_row_t;

static const outcome_row_t outcomes[] = {
    [POOL_OUTCOME_OK] = {200, 0, "ok", ""},
    [POOL_OUTCOME_RATE_LIMITED] = {429, WIRE_RPC_LIMIT_EXCEEDED, "rate_limited",
                                   "upstream rate limit: every endpoint refused this call with a rate limit; "
                                   "retry after the Retry-After delay, or add capacity (an API-keyed provider)"},
    [POOL_OUTCOME_TIMEOUT] = {504, WIRE_RPC_INTERNAL_ERROR, "timeout",
                              "upstream timeout: no endpoint answered in time"},
    [POOL_OUTCOME_AMBIGUOUS_WRITE] = {502, WIRE_RPC_INTERNAL_ERROR, "ambiguous_write",
                                      "the transaction may have reached an endpoint before the attempt failed, so "
                                      "sluice did not send it anywhere else; look it up by hash before sending it "
                                      "again"},
    [POOL_OUTCOME_UNAVAILABLE] = {503, WIRE_RPC_INTERNAL_ERROR, "unavailable",
                                  "no upstream endpoint is available right now"},
    [POOL_OUTCOME_UPSTREAM_ERROR] = {502, WIRE_RPC_INTERNAL_ERROR, "upstream_error",
                                     "upstream error: every endpoint failed"},
    [POOL_OUTCOME_DEADLINE] = {504, WIRE_RPC_INTERNAL_ERROR, "timeout",
                               "upstream timeout: the request deadline (timeouts.request_ms) ran out"},
    /* request-shaped (policy/shape.h): two endpoints failed it the same way, neither is blamed */
    [POOL_OUTCOME_TOO_LARGE] = {502, WIRE_RPC_INTERNAL_ERROR, "too_large",
                                "the answer is larger than server.max_response_bytes (%zu bytes) at two "
                                "endpoints: ask for less (a narrower block range, fewer batch members) or raise "
                                "the limit"},
    [POOL_OUTCOME_ID_UNANSWERABLE] = {200, WIRE_RPC_INVALID_REQUEST, "id_unanswerable",
                                      "invalid request: two upstream endpoints could not read this call and "
                                      "answered it without its id (check its id and params)"},
    [POOL_OUTCOME_SLOW_CALL] = {504, WIRE_RPC_INTERNAL_ERROR, "slow_call",
                                "upstream timeout: this call took too long at two endpoints (it outlived "
                                "timeouts.attempt_ms, or the provider gave up on it for time): narrow it "
                                "(block range, tracer, block count) or raise the timeout"},
    [POOL_OUTCOME_LOCAL] = {503, WIRE_RPC_INTERNAL_ERROR, "local_error",
                            "sluice is short of its own resources (file descriptors, memory or temp space); "
                            "no endpoint is at fault: retry shortly"},
    [POOL_OUTCOME_NO_CONSENSUS] = {502, WIRE_RPC_INTERNAL_ERROR, "no_consensus",
                                   "no consensus: the endpoints asked gave different answers and no quorum agreed "
                                   "(data.groups: the endpoints behind each answer)"},
};

/* A compared read without a quorum: "groups", each distinct answer's
 * endpoint ids (ids only, as everywhere a client sees endpoints). */
static void append_groups(sl_buf_t *b, const pool_call_t *call)
{
    uint64_t masks[POOL_MAX_ENDPOINTS];
    size_t n = pool_call_consensus_groups(call, masks, POOL_MAX_ENDPOINTS);
    sl_buf_append_str(b, ",\"groups\":[");
    for (size_t g = 0; g < n && g < POOL_MAX_ENDPOINTS; g++) {
        sl_buf_append_str(b, g ? ",[" : "[");
        int first = 1;
        for (int i = 0; i < POOL_MAX_ENDPOINTS; i++) {
            if (!(masks[g] & ((uint64_t)1 << i)))
                continue;
            const char *id = pool_call_endpoint_id(call, i);
            if (!first)
                sl_buf_append_char(b, ',');
            sl_buf_append_json_str(b, id, strlen(id));
            first = 0;
        }
        sl_buf_append_char(b, ']');
    }
    sl_buf_append_char(b, ']');
}

/* Endpoints are named by id only: a client learns nothing of the upstreams'
 * hosts, addresses or ports (the redacted URL is in the access log and the
 * admin view, for operators). */
static void append_attempts(sl_buf_t *b, const pool_call_t *call)
{
    size_t n;
    const pool_attempt_rec_t *log = pool_call_log(call, &n);
    sl_buf_append_str(b, "\"attempts\":[");
    for (size_t i = 0; i < n; i++) {
        const char *id = pool_call_endpoint_id(call, log[i].endpoint);
        sl_buf_append_str(b, i ? ",{\"endpoint\":" : "{\"endpoint\":");
        sl_buf_append_json_str(b, id, strlen(id));
        if (log[i].http_status != 0)
            sl_buf_printf(b, ",\"status\":%u", (unsigned)log[i].http_status);
        const char *what = log[i].flags & POOL_ATTEMPT_CANCELLED ? "cancelled: the other attempt answered first"
                           : log[i].fail != POOL_FAIL_NONE      ? pool_fail_str(log[i].fail)
                                                                : "answered";
        sl_buf_append_str(b, ",\"error\":");
        sl_buf_append_json_str(b, what, strlen(what));
        sl_buf_append_char(b, '}');
    }
    sl_buf_append_char(b, ']');
}

static void append_failure(sl_buf_t *out, const char *body, const gw_member_t *m, const pool_item_t *it,
                           const pool_call_t *call)
{
    const outcome_row_t *row = &outcomes[it->outcome];
    sl_buf_t data = SL_BUF_INIT;
    sl_buf_append_str(&data, "{\"scope\":\"upstream\",\"outcome\":");
    sl_buf_append_json_str(&data, row->name, strlen(row->name));
    if (it->outcome == POOL_OUTCOME_RATE_LIMITED)
        sl_buf_printf(&data, ",\"retry_after_ms\":%u", it->retry_after_ms ? it->retry_after_ms : 1000);
    char msg[320];
    const char *message = row->message;
    if (it->outcome == POOL_OUTCOME_TOO_LARGE) { /* the limit, named */
        size_t limit = pool_call_max_response_bytes(call);
        sl_buf_printf(&data, ",\"limit_bytes\":%zu", limit);
        snprintf(msg, sizeof(msg), row->message, limit);
        message = msg;
    }
    if (it->outcome == POOL_OUTCOME_NO_CONSENSUS)
        append_groups(&data, call);
    sl_buf_append_char(&data, ',');
    append_attempts(&data, call);
    sl_buf_append_char(&data, '}');
    wire_rpc_error(out, body, m->id, row->code, message, data.base);
    sl_buf_dispose(&data);
}

/* An upstream's error may quote the URL it was asked on, key included
 * (seen from providers that echo the request path): an error answer that
 * carries a registered secret is scrubbed. Results are not scanned: that
 * would cost every large answer a pass per secret, for a case no provider
 * is known to produce. */
static int answer_leaks(const pool_item_t *it)
{
    return it->verdict != POLICY_VERDICT_SUCCESS && sl_secret_contains(it->answer, it->answer_len);
}

/* Scrubs out[from..]; 0 if what is left is no longer one JSON object (a
 * secret that was not inside a string), and then out is back at from. */
static int scrub_from(sl_buf_t *out, size_t from)
{
    sl_buf_t clean = SL_BUF_INIT;
    wire_envelope_t env;
    sl_secret_scrub(&clean, out->base + from, out->len - from);
    out->len = from;
    int ok = wire_envelope_scan(clean.base, clean.len, &env) == SL_OK;
    if (ok)
        sl_buf_append(out, clean.base, clean.len);
    sl_buf_dispose(&clean);
    return ok;
}

/* A call shed under pressure: -32005 with data.scope "pressure", the level
 * and when to come back; nothing was sent upstream. */
static void append_shed(gw_reply_t *r, const char *body, const gw_rpc_request_t *rpc, const gw_member_t *m)
{
    const char *level = policy_pressure_level_name((policy_pressure_level_t)rpc->shed_level);
    const char *prio = policy_priority_name(m->method->priority);
    char msg[200], data[160];
    snprintf(msg, sizeof(msg),
             "shed under pressure: the network is %s and %s-priority calls wait until it eases; retry after the "
             "Retry-After delay",
             level, prio);
    snprintf(data, sizeof(data), "{\"scope\":\"pressure\",\"level\":\"%s\",\"priority\":\"%s\",\"retry_after_ms\":%u}",
             level, prio, rpc->shed_retry_ms);
    wire_rpc_error(&r->out, body, m->id, WIRE_RPC_LIMIT_EXCEEDED, msg, data);
}

static void append_member(gw_reply_t *r, const char *body, const gw_rpc_request_t *rpc, const gw_member_t *m,
                          const pool_item_t *it, const pool_call_t *call)
{
    if (m->status == GW_MEMBER_INVALID) {
        wire_rpc_error(&r->out, body, m->id, WIRE_RPC_INVALID_REQUEST, m->error, NULL);
    } else if (m->status == GW_MEMBER_BLOCKED) {
        char msg[WIRE_RPC_METHOD_MAX + 160];
        snprintf(msg, sizeof(msg), "%s: %s", m->name, m->error);
        wire_rpc_error(&r->out, body, m->id, WIRE_RPC_METHOD_NOT_FOUND, msg,
                       m->unserved ? "{\"reason\":\"no_endpoint_for_method\"}" : NULL);
    } else if (m->status == GW_MEMBER_SHED) {
        append_shed(r, body, rpc, m);
    } else if (m->status == GW_MEMBER_DENIED) {
        gw_refuse_denied_error(&r->out, body, m->id, (policy_access_reason_t)m->denied, m->error);
    } else if (it->state == POOL_ITEM_ANSWERED) {
        size_t from = r->out.len;
        gw_rpc_splice_id(&r->out, it->answer, it->answer_len, it->answer_id, body, m->id);
        if (answer_leaks(it) && !scrub_from(&r->out, from))
            wire_rpc_error(&r->out, body, m->id, WIRE_RPC_INTERNAL_ERROR,
                         "the upstream's error quoted a credential of sluice's and is withheld", NULL);
    } else {
        append_failure(&r->out, body, m, it, call);
    }
}

static void note_endpoint(gw_reply_t *r, const pool_call_t *call, int ep)
{
    if (call == NULL || ep < 0)
        return; /* answered by sluice (an eth_getLogs merged from sub-calls: pool_split.c) */
    const char *id = pool_call_endpoint_id(call, ep);
    if (id[0] == '\0') /* answered by no endpoint (from the cache) */
        return;
    size_t n = strlen(id), have = strlen(r->endpoints);
    for (const char *p = r->endpoints; (p = strstr(p, id)) != NULL; p += n)
        if ((p == r->endpoints || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
            return;
    if (have + n + 2 > sizeof(r->endpoints))
        return;
    if (have)
        r->endpoints[have++] = ',';
    memcpy(r->endpoints + have, id, n + 1);
}

/* HTTP status when no forwarded member got an answer: the most actionable
 * failure wins (a rate limit says when to come back). */
static void failure_status(gw_reply_t *r, const pool_item_t *items, size_t nitems)
{
    pool_outcome_t worst = items[0].outcome;
    int all_timeouts = 1;
    for (size_t k = 0; k < nitems; k++) {
        pool_outcome_t o = items[k].outcome;
        if (o == POOL_OUTCOME_RATE_LIMITED)
            worst = o;
        else if (worst != POOL_OUTCOME_RATE_LIMITED && o != POOL_OUTCOME_UNAVAILABLE)
            worst = o;
        all_timeouts &= o == POOL_OUTCOME_TIMEOUT || o == POOL_OUTCOME_DEADLINE ||
                        o == POOL_OUTCOME_SLOW_CALL;
    }
    r->status = all_timeouts ? 504 : outcomes[worst].http;
    r->outcome = outcomes[worst].name;
    if (r->status == 429) {
        uint32_t ms = UINT32_MAX;
        for (size_t k = 0; k < nitems; k++)
            if (items[k].outcome == POOL_OUTCOME_RATE_LIMITED && items[k].retry_after_ms && items[k].retry_after_ms < ms)
                ms = items[k].retry_after_ms;
        r->retry_after_s = ms == UINT32_MAX ? 1 : (ms + 999) / 1000;
    } else if (r->status == 503) {
        r->retry_after_s = 1;
    }
}

/* The answer around the client's id, as three parts that point into the
 * upstream's answer and the request body (both live until the request is
 * disposed): what gw_rpc_splice_id writes, without writing it. */
static void splice_parts(gw_reply_t *r, const char *body, const gw_member_t *m, const pool_item_t *it)
{
    size_t tail = it->answer_id.off + it->answer_id.len;
    r->parts[0] = h2o_iovec_init(it->answer, it->answer_id.off);
    r->parts[1] = h2o_iovec_init(body + m->id.off, m->id.len);
    r->parts[2] = h2o_iovec_init(it->answer + tail, it->answer_len - tail);
    r->nparts = 3;
    r->body = it->answer;
    r->len = it->answer_len - it->answer_id.len + m->id.len;
}

static void build_single(gw_reply_t *r, const char *body, const gw_rpc_request_t *rpc, const pool_item_t *it,
                         const pool_call_t *call)
{
    const gw_member_t *m = &rpc->members[0];
    if (it != NULL && it->state == POOL_ITEM_ANSWERED) {
        note_endpoint(r, call, it->endpoint);
        if (m->notification) {
            r->status = 204;
            return;
        }
        if (answer_leaks(it)) {
            /* scrubbed into out below */
        } else if (m->id.len == it->answer_id.len &&
                   memcmp(body + m->id.off, it->answer + it->answer_id.off, m->id.len) == 0) {
            r->body = it->answer; /* byte-for-byte, no copy */
            r->len = it->answer_len;
            return;
        } else if (m->id.len != 0) {
            splice_parts(r, body, m, it); /* another id (a coalesced waiter's): still no copy */
            return;
        }
    } else if (it != NULL) {
        failure_status(r, it, 1);
        if (m->notification) {
            r->status = 204;
            return;
        }
    } else if ((m->status == GW_MEMBER_BLOCKED || m->status == GW_MEMBER_SHED || m->status == GW_MEMBER_DENIED) &&
               m->notification) {
        r->status = 204;
        return;
    } else if (m->status == GW_MEMBER_DENIED) {
        r->status = 403; /* a single call outside its key's scope */
    }
    append_member(r, body, rpc, m, it, call);
}

static void build_batch(gw_reply_t *r, const char *body, const gw_rpc_request_t *rpc, const pool_item_t *items,
                        const uint32_t *item_member, size_t nitems, const pool_call_t *call)
{
    size_t k = 0, written = 0, answered = 0;
    sl_buf_append_char(&r->out, '[');
    for (size_t i = 0; i < rpc->nmembers; i++) {
        const gw_member_t *m = &rpc->members[i];
        const pool_item_t *it = NULL;
        if (k < nitems && item_member[k] == i)
            it = &items[k++];
        if (it != NULL && it->state == POOL_ITEM_ANSWERED) {
            answered++;
            note_endpoint(r, call, it->endpoint);
        }
        if (m->notification && m->status != GW_MEMBER_INVALID)
            continue;
        if (written++)
            sl_buf_append_char(&r->out, ',');
        append_member(r, body, rpc, m, it, call);
    }
    sl_buf_append_char(&r->out, ']');
    if (written == 0) {
        r->status = 204;
        sl_buf_reset(&r->out);
        return;
    }
    if (nitems > 0 && answered == 0)
        failure_status(r, items, nitems);
}

void gw_reply_build(gw_reply_t *r, const char *body, const gw_rpc_request_t *rpc, const pool_item_t *items,
                    const uint32_t *item_member, size_t nitems, const pool_call_t *call)
{
    memset(r, 0, sizeof(*r));
    sl_buf_init(&r->out);
    r->status = 200;
    r->outcome = "ok";
    if (rpc->kind == GW_RPC_REJECT) {
        wire_rpc_error(&r->out, body, (wire_span_t){0, 0}, rpc->reject_code, rpc->reject_msg, NULL);
        r->outcome = "invalid";
    } else if (rpc->kind == GW_RPC_SINGLE) {
        build_single(r, body, rpc, nitems ? &items[0] : NULL, call);
        static const char *const not_sent[] = {[GW_MEMBER_INVALID] = "invalid", [GW_MEMBER_BLOCKED] = "blocked",
                                               [GW_MEMBER_SHED] = "shed", [GW_MEMBER_DENIED] = "denied"};
        if (rpc->members[0].status != GW_MEMBER_FORWARD)
            r->outcome = not_sent[rpc->members[0].status];
    } else {
        build_batch(r, body, rpc, items, item_member, nitems, call);
    }
    if (r->body == NULL && r->status != 204) {
        r->body = r->out.base;
        r->len = r->out.len;
    }
}

void gw_reply_dispose(gw_reply_t *r)
{
    sl_buf_dispose(&r->out);
}
