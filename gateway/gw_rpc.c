#include "gateway/gw_rpc.h"

#include <stdio.h>
#include <string.h>

/* 1 if some endpoint's methods: scope admits name[0..len) (or none is known). */
static int any_endpoint_admits(const gw_rpc_limits_t *lim, const char *name, size_t len)
{
    if (lim->endpoints == NULL)
        return 1;
    for (size_t i = 0; i < lim->nendpoints; i++)
        if (policy_method_scope_admits(&lim->endpoints[i].methods, name, len))
            return 1;
    return 0;
}

static void check_member(const char *body, wire_envelope_t env, const gw_rpc_limits_t *lim, gw_member_t *mb);

/* Checks one request object at span m of body and fills *mb. */
static void parse_member(const char *body, wire_span_t m, const gw_rpc_limits_t *lim, gw_member_t *mb)
{
    memset(mb, 0, sizeof(*mb));
    mb->raw = m;
    mb->status = GW_MEMBER_INVALID;
    if (wire_json_kind(body, m) != WIRE_JSON_OBJECT) {
        mb->error = "invalid request: a batch member must be a JSON object";
        return;
    }
    wire_envelope_t env;
    if (wire_envelope_scan(body + m.off, m.len, &env) != SL_OK) {
        mb->error = "invalid request: a member name is repeated or ambiguous (a name twice, even escaped, or in another case)";
        return;
    }
    /* spans are relative to the member: make them relative to the body */
    wire_span_t *spans[] = {&env.jsonrpc, &env.id, &env.method, &env.params};
    for (size_t i = 0; i < sizeof(spans) / sizeof(spans[0]); i++)
        if (spans[i]->len != 0)
            spans[i]->off += m.off;
    check_member(body, env, lim, mb);
}

/* The rest of parse_member, on the envelope of the member *mb holds (spans
 * relative to body). */
static void check_member(const char *body, wire_envelope_t env, const gw_rpc_limits_t *lim, gw_member_t *mb)
{
    wire_json_kind_t idk = wire_json_kind(body, env.id);
    if (env.id.len != 0 && idk != WIRE_JSON_STRING && idk != WIRE_JSON_NUMBER && idk != WIRE_JSON_NULL) {
        mb->error = "invalid request: \"id\" must be a string, a number or null";
        return;
    }
    mb->id = env.id;
    mb->params = env.params;
    if (env.jsonrpc.len != 5 || memcmp(body + env.jsonrpc.off, "\"2.0\"", 5) != 0) {
        mb->error = "invalid request: \"jsonrpc\" must be \"2.0\"";
        return;
    }
    if (wire_json_kind(body, env.method) != WIRE_JSON_STRING) {
        mb->error = "invalid request: \"method\" must be a string";
        return;
    }
    if (wire_json_string(body, env.method, mb->name, sizeof(mb->name)) != SL_OK) {
        mb->error = "invalid request: \"method\" is too long";
        mb->name[0] = '\0';
        return;
    }
    size_t nlen = strlen(mb->name);
    if (nlen == 0 || wire_json_has_nul(body, env.method)) {
        mb->error = "invalid request: \"method\" must be a non-empty name";
        mb->name[0] = '\0';
        return;
    }
    wire_json_kind_t pk = wire_json_kind(body, env.params);
    if (env.params.len != 0 && pk != WIRE_JSON_ARRAY && pk != WIRE_JSON_OBJECT) {
        mb->error = "invalid request: \"params\" must be an array or an object";
        return;
    }
    mb->notification = env.id.len == 0;
    mb->method = policy_method_lookup_in(lim->overrides, lim->noverrides, lim->chain, mb->name, nlen);
    mb->cheap = (uint8_t)policy_method_call_cheap(lim->chain, mb->method, body, env.params);
    mb->status = GW_MEMBER_BLOCKED;
    if (strncmp(mb->name, "rpc.", 4) == 0) {
        mb->error = "method names that begin with \"rpc.\" are reserved";
    } else if (policy_method_match(lim->blocked, lim->nblocked, mb->name, nlen)) {
        mb->error = "this method is not allowed by the gateway";
    } else if (mb->method->cls == POLICY_CLASS_SUBSCRIBE) {
        mb->error = lim->subscribe_error != NULL
                        ? lim->subscribe_error
                        : "subscriptions need a WebSocket connection; this gateway serves JSON-RPC over HTTP";
    } else if (!any_endpoint_admits(lim, mb->name, nlen)) {
        mb->unserved = 1;
        mb->error = "no endpoint of this network serves this method (their methods: scopes)";
    } else {
        mb->status = GW_MEMBER_FORWARD;
        mb->error = NULL;
    }
}

static void reject(gw_rpc_request_t *out, int code, const char *msg)
{
    out->kind = GW_RPC_REJECT;
    out->reject_code = code;
    snprintf(out->reject_msg, sizeof(out->reject_msg), "%s", msg);
}

static void parse_batch(const char *body, size_t len, const gw_rpc_limits_t *lim, gw_rpc_alloc_fn alloc,
                        void *alloc_ctx, gw_rpc_request_t *out)
{
    size_t max = lim->max_batch, n = 0;
    wire_span_t *spans = alloc(alloc_ctx, (max + 1) * sizeof(*spans));
    sl_err_t err = wire_envelope_scan_array(body, len, spans, max, &n);
    if (err == SL_ERR_TOO_LARGE) {
        char msg[128];
        snprintf(msg, sizeof(msg), "invalid request: a batch may hold at most %u calls (server.max_batch)",
                 lim->max_batch);
        reject(out, WIRE_RPC_INVALID_REQUEST, msg);
        return;
    }
    if (err != SL_OK) { /* validated already; only a depth or size problem can land here */
        reject(out, WIRE_RPC_PARSE_ERROR, "parse error: the body is not valid JSON");
        return;
    }
    if (n == 0) {
        reject(out, WIRE_RPC_INVALID_REQUEST, "invalid request: empty batch");
        return;
    }
    out->kind = GW_RPC_BATCH;
    out->nmembers = n;
    out->members = alloc(alloc_ctx, n * sizeof(*out->members));
    for (size_t i = 0; i < n; i++)
        parse_member(body, spans[i], lim, &out->members[i]);
}

/* The usual body, one request object, in one scan: 1 if it was one and *out
 * is filled; 0 (nothing done) for anything else, which the general path
 * validates first and so tells a parse error from an invalid request. */
static int single_object(const char *body, size_t len, const gw_rpc_limits_t *lim, gw_rpc_alloc_fn alloc,
                         void *alloc_ctx, gw_rpc_request_t *out)
{
    size_t i = 0, end = len;
    while (i < len && (body[i] == ' ' || body[i] == '\t' || body[i] == '\n' || body[i] == '\r'))
        i++;
    wire_envelope_t env;
    if (i == len || body[i] != '{' || wire_envelope_scan(body, len, &env) != SL_OK)
        return 0;
    while (body[end - 1] != '}') /* the scan ended at the object's close: whitespace after it */
        end--;
    out->kind = GW_RPC_SINGLE;
    out->nmembers = 1;
    out->members = alloc(alloc_ctx, sizeof(*out->members));
    gw_member_t *mb = &out->members[0];
    memset(mb, 0, sizeof(*mb));
    mb->raw = (wire_span_t){(uint32_t)i, (uint32_t)(end - i)};
    mb->status = GW_MEMBER_INVALID;
    check_member(body, env, lim, mb);
    return 1;
}

void gw_rpc_parse(const char *body, size_t len, const gw_rpc_limits_t *lim, gw_rpc_alloc_fn alloc, void *alloc_ctx,
                  gw_rpc_request_t *out)
{
    memset(out, 0, sizeof(*out));
    if (single_object(body, len, lim, alloc, alloc_ctx, out))
        return;
    wire_json_kind_t kind;
    wire_span_t value;
    sl_err_t err = wire_json_validate(body, len, &kind, &value);
    if (err == SL_ERR_TOO_DEEP) {
        reject(out, WIRE_RPC_PARSE_ERROR, "parse error: JSON nested too deeply");
        return;
    }
    if (err != SL_OK) {
        reject(out, WIRE_RPC_PARSE_ERROR,
               err == SL_ERR_TRUNCATED ? "parse error: the body ends before the JSON does"
                                       : "parse error: the body is not valid JSON");
        return;
    }
    if (kind == WIRE_JSON_ARRAY) {
        parse_batch(body, len, lim, alloc, alloc_ctx, out);
        return;
    }
    if (kind != WIRE_JSON_OBJECT) {
        reject(out, WIRE_RPC_INVALID_REQUEST, "invalid request: expected a JSON object or an array of them");
        return;
    }
    out->kind = GW_RPC_SINGLE;
    out->nmembers = 1;
    out->members = alloc(alloc_ctx, sizeof(*out->members));
    parse_member(body, value, lim, &out->members[0]);
}

void gw_rpc_splice_id(sl_buf_t *out, const char *answer, size_t len, wire_span_t answer_id, const char *body,
                      wire_span_t id)
{
    sl_buf_append(out, answer, answer_id.off);
    if (id.len != 0)
        sl_buf_append(out, body + id.off, id.len);
    else
        sl_buf_append_str(out, "null");
    sl_buf_append(out, answer + answer_id.off + answer_id.len, len - answer_id.off - answer_id.len);
}
