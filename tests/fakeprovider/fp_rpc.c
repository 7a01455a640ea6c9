/* fp_rpc.c: JSON-RPC 2.0 framing — single calls and batches, id echo,
 * method dispatch through the chain's table, and the standard errors.
 * What each method answers lives in fp_eth.c and fp_sol.c. */
#include "fp.h"

#include <stdlib.h>
#include <string.h>

const fp_rpc_error_t fp_err_invalid_params = {-32602, "invalid params"};

static const fp_chain_t chains[] = {
    {"ethereum", fp_eth_methods, &fp_eth_method_count, NULL},
    {"solana", fp_sol_methods, &fp_sol_method_count, fp_sol_precheck},
};

const fp_chain_t *fp_chain_find(const char *name)
{
    for (size_t i = 0; i < sizeof chains / sizeof chains[0]; i++)
        if (strcmp(chains[i].name, name) == 0)
            return &chains[i];
    return NULL;
}

/* Dispatch is a binary search, so the tables must stay sorted. */
bool fp_chain_check(const fp_chain_t *chain)
{
    size_t n = *chain->count;
    for (size_t i = 1; i < n; i++)
        if (strcmp(chain->methods[i - 1].name, chain->methods[i].name) >= 0)
            return false;
    return true;
}

static int span_cmp(fp_span_t s, const char *name)
{
    size_t n = strlen(name);
    int c = memcmp(s.p, name, s.n < n ? s.n : n);
    if (c != 0)
        return c;
    return s.n < n ? -1 : s.n > n;
}

static const fp_method_t *method_find(const fp_chain_t *chain, fp_span_t name)
{
    size_t lo = 0, hi = *chain->count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = span_cmp(name, chain->methods[mid].name);
        if (c == 0)
            return &chain->methods[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

bool fp_call_method_is(const fp_call_t *call, const char *name)
{
    return call->valid && fp_span_eq(call->method, name);
}

static void parse_call(fp_call_t *call, fp_span_t v, uint64_t head)
{
    fp_json_iter_t it;
    fp_span_t key, val;
    *call = (fp_call_t){.head = head};
    if (!fp_json_iter_begin(&it, v, '{'))
        return;
    bool have_method = false;
    while (fp_json_object_next(&it, &key, &val) == 1) {
        if (fp_span_eq(key, "id"))
            call->id = val;
        else if (fp_span_eq(key, "method"))
            have_method = fp_json_string(val, &call->method);
        else if (fp_span_eq(key, "params"))
            call->params = val;
    }
    call->valid = have_method;
}

static fp_call_t *batch_push(fp_batch_t *b)
{
    if (b->count == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 16;
        b->calls = fp_xrealloc(b->calls, b->cap * sizeof *b->calls);
    }
    return &b->calls[b->count++];
}

void fp_batch_parse(fp_batch_t *b, const char *body, size_t n, uint64_t head)
{
    b->count = 0;
    b->is_array = false;
    b->parse_error = !fp_json_valid(body, n);
    if (b->parse_error)
        return;
    fp_span_t v = fp_json_trim(body, n);
    if (v.p[0] != '[') {
        parse_call(batch_push(b), v, head);
        return;
    }
    fp_json_iter_t it;
    fp_span_t elem;
    b->is_array = true;
    fp_json_iter_begin(&it, v, '[');
    while (fp_json_array_next(&it, &elem) == 1)
        parse_call(batch_push(b), elem, head);
}

static void put_id(fp_buf_t *out, fp_span_t id)
{
    if (id.n)
        fp_buf_put(out, id.p, id.n);
    else
        fp_buf_puts(out, "null");
}

static void put_error_head(fp_buf_t *out, fp_span_t id, int64_t code)
{
    fp_buf_puts(out, "{\"jsonrpc\":\"2.0\",\"id\":");
    put_id(out, id);
    fp_buf_printf(out, ",\"error\":{\"code\":%lld,\"message\":", (long long)code);
}

void fp_rpc_put_error(fp_buf_t *out, fp_span_t id, int64_t code, const char *msg,
                      const char *data_raw)
{
    put_error_head(out, id, code);
    fp_buf_put_json_str(out, msg, strlen(msg));
    if (data_raw) {
        fp_buf_puts(out, ",\"data\":");
        fp_buf_puts(out, data_raw);
    }
    fp_buf_puts(out, "}}");
}

/* The method name goes back raw: it was a valid JSON string already. */
static void put_no_method(fp_buf_t *out, const fp_call_t *call)
{
    put_error_head(out, call->id, -32601);
    fp_buf_puts(out, "\"the method ");
    fp_buf_put(out, call->method.p, call->method.n);
    fp_buf_puts(out, " does not exist/is not available\"}}");
}

void fp_rpc_answer_call(fp_server_t *srv, fp_call_t *call, fp_buf_t *out)
{
    if (!call->valid) {
        fp_rpc_put_error(out, call->id, -32600, "Invalid Request", NULL);
        return;
    }
    const fp_method_t *m = method_find(srv->chain, call->method);
    if (!m) {
        put_no_method(out, call);
        return;
    }
    if (srv->chain->precheck && srv->chain->precheck(srv, call, out))
        return;
    size_t mark = out->len;
    fp_buf_puts(out, "{\"jsonrpc\":\"2.0\",\"id\":");
    put_id(out, call->id);
    fp_buf_puts(out, ",\"result\":");
    const fp_rpc_error_t *e = m->fn(srv, call, out);
    if (e) {
        out->len = mark;
        fp_rpc_put_error(out, call->id, e->code, e->message, NULL);
        return;
    }
    fp_buf_puts(out, "}");
}

static void answer_one(fp_server_t *srv, fp_call_t *call, const fp_mode_t *m, fp_buf_t *out)
{
    fp_call_fault_fn fault = m ? fp_mode_call_fn(m) : NULL;
    if (fault && fp_mode_matches_call(m, call))
        fault(srv, m, call, out);
    else
        fp_rpc_answer_call(srv, call, out);
}

/* Notifications run (a sent transaction still lands) but leave no entry. */
bool fp_rpc_answer(fp_server_t *srv, fp_batch_t *b, const fp_mode_t *m, fp_buf_t *out)
{
    static const fp_span_t no_id = {NULL, 0};
    if (b->parse_error || (b->is_array && b->count == 0)) {
        fp_rpc_put_error(out, no_id, b->parse_error ? -32700 : -32600,
                         b->parse_error ? "Parse error" : "Invalid Request", NULL);
        return true;
    }
    size_t start = out->len, entries = 0;
    if (b->is_array)
        fp_buf_puts(out, "[");
    for (size_t i = 0; i < b->count; i++) {
        fp_call_t *call = &b->calls[i];
        size_t mark = out->len;
        bool notification = call->valid && call->id.n == 0;
        if (entries)
            fp_buf_puts(out, ",");
        answer_one(srv, call, m, out);
        if (notification)
            out->len = mark;
        else
            entries++;
    }
    if (entries == 0) {
        out->len = start;
        return false;
    }
    if (b->is_array)
        fp_buf_puts(out, "]");
    return true;
}
