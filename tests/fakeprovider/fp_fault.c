/* fp_fault.c: the fault modes, their options, and how a request is answered
 * under the current mode.
 *
 * A mode row is a strategy: `reply` replaces the whole HTTP answer (the calls
 * are not executed), `per_call` rewrites the answer of each matching call,
 * `delivery` decides how the bytes leave (late, dripped, cut, never). Modes
 * that keep the normal answer execute the calls, so a transaction sent into
 * "hang" or "reset" still lands: the reply is what gets lost. */
#include "fp.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*reply_fn)(fp_server_t *srv, const fp_mode_t *m, const fp_batch_t *b,
                         fp_reply_t *r);

struct fp_mode_def {
    const char *name;
    reply_fn reply;             /* NULL: the normal JSON-RPC answer */
    fp_call_fault_fn per_call;  /* NULL: calls answered normally */
    fp_delivery_t delivery;
    int status;                 /* for the html error replies */
};

static void reply_429(fp_server_t *, const fp_mode_t *, const fp_batch_t *, fp_reply_t *);
static void reply_html(fp_server_t *, const fp_mode_t *, const fp_batch_t *, fp_reply_t *);
static void reply_garbage(fp_server_t *, const fp_mode_t *, const fp_batch_t *, fp_reply_t *);
static void call_rpc_limit(fp_server_t *, const fp_mode_t *, fp_call_t *, fp_buf_t *);
static void call_rpc_error(fp_server_t *, const fp_mode_t *, fp_call_t *, fp_buf_t *);
static void call_wrong_id(fp_server_t *, const fp_mode_t *, fp_call_t *, fp_buf_t *);
static void call_huge(fp_server_t *, const fp_mode_t *, fp_call_t *, fp_buf_t *);
static void call_lag(fp_server_t *, const fp_mode_t *, fp_call_t *, fp_buf_t *);
static void call_strict_id(fp_server_t *, const fp_mode_t *, fp_call_t *, fp_buf_t *);
static void call_lie(fp_server_t *, const fp_mode_t *, fp_call_t *, fp_buf_t *);

/* accept_hang has no row behaviour: it acts at accept time (fp_main.c). */
static const fp_mode_def_t mode_defs[] = {
    {"ok", NULL, NULL, FP_DELIVER_NOW, 0},
    {"accept_hang", NULL, NULL, FP_DELIVER_NOW, 0},
    {"garbage", reply_garbage, NULL, FP_DELIVER_NOW, 200},
    {"hang", NULL, NULL, FP_DELIVER_HANG, 0},
    {"http402", reply_html, NULL, FP_DELIVER_NOW, 402},
    {"http429", reply_429, NULL, FP_DELIVER_NOW, 429},
    {"http500", reply_html, NULL, FP_DELIVER_NOW, 500},
    {"http502", reply_html, NULL, FP_DELIVER_NOW, 502},
    {"http503", reply_html, NULL, FP_DELIVER_NOW, 503},
    {"http504", reply_html, NULL, FP_DELIVER_NOW, 504}, /* a provider's gateway that stopped waiting */
    {"huge", NULL, call_huge, FP_DELIVER_NOW, 0},
    {"lag", NULL, call_lag, FP_DELIVER_NOW, 0},
    {"lie", NULL, call_lie, FP_DELIVER_NOW, 0},
    {"reset", NULL, NULL, FP_DELIVER_RESET, 0},
    {"rpc_error", NULL, call_rpc_error, FP_DELIVER_NOW, 0},
    {"rpc_limit", NULL, call_rpc_limit, FP_DELIVER_NOW, 0},
    {"slow", NULL, NULL, FP_DELIVER_DELAY, 0},
    {"slow_body", NULL, NULL, FP_DELIVER_DRIP, 0},
    {"strict_id", NULL, call_strict_id, FP_DELIVER_NOW, 0},
    {"truncated", NULL, NULL, FP_DELIVER_TRUNCATE, 0},
    {"wrong_id", NULL, call_wrong_id, FP_DELIVER_NOW, 0},
};
#define MODE_OK (&mode_defs[0])
#define MODE_ACCEPT_HANG (&mode_defs[1])

typedef enum opt_type { OPT_INT, OPT_STR, OPT_JSON } opt_type_t;

/* Options shared by every mode; a new mode replaces all of them. */
static const struct mode_opt {
    const char *key;
    opt_type_t type;
    size_t off;
    int64_t min, max;
} mode_opts[] = {
    {"backoff", OPT_INT, offsetof(fp_mode_t, backoff), 0, 86400},
    {"behind", OPT_INT, offsetof(fp_mode_t, behind), 0, INT64_C(1) << 40},
    {"code", OPT_INT, offsetof(fp_mode_t, code), INT32_MIN, INT32_MAX},
    {"count", OPT_INT, offsetof(fp_mode_t, count), -1, INT64_C(1) << 50},
    {"data", OPT_JSON, offsetof(fp_mode_t, data), 0, 0},
    {"delay_ms", OPT_INT, offsetof(fp_mode_t, delay_ms), 0, 3600 * 1000},
    {"jitter_ms", OPT_INT, offsetof(fp_mode_t, jitter_ms), 0, 3600 * 1000},
    {"id", OPT_JSON, offsetof(fp_mode_t, id), 0, 0},
    {"logs", OPT_INT, offsetof(fp_mode_t, logs), 0, 100000},
    {"message", OPT_STR, offsetof(fp_mode_t, message), 0, 0},
    {"method", OPT_STR, offsetof(fp_mode_t, method), 0, 0},
    {"retry_after", OPT_INT, offsetof(fp_mode_t, retry_after), -1, 86400},
    {"size", OPT_INT, offsetof(fp_mode_t, size), 0, INT64_C(1) << 30},
};
#define N_OPTS (sizeof mode_opts / sizeof mode_opts[0])

void fp_mode_init(fp_mode_t *m)
{
    *m = (fp_mode_t){
        .def = MODE_OK, .count = -1, .retry_after = -1, .backoff = 1, .delay_ms = 1000,
        .size = 8 * 1024 * 1024, .code = -32000, .behind = 100, .logs = 2,
    };
}

void fp_mode_dispose(fp_mode_t *m)
{
    free(m->method);
    free(m->message);
    free(m->data);
    free(m->id);
    fp_mode_init(m);
}

bool fp_mode_set_kind(fp_mode_t *m, const char *name)
{
    for (size_t i = 0; i < sizeof mode_defs / sizeof mode_defs[0]; i++) {
        if (strcmp(mode_defs[i].name, name) == 0) {
            m->def = &mode_defs[i];
            return true;
        }
    }
    return false;
}

static const struct mode_opt *opt_find(const char *key)
{
    char norm[32];
    size_t n = strlen(key);
    if (n >= sizeof norm)
        return NULL;
    for (size_t i = 0; i <= n; i++)
        norm[i] = key[i] == '-' ? '_' : key[i];    /* CLI spelling: --retry-after */
    for (size_t i = 0; i < N_OPTS; i++)
        if (strcmp(mode_opts[i].key, norm) == 0)
            return &mode_opts[i];
    return NULL;
}

static bool opt_set_int(fp_mode_t *m, const struct mode_opt *o, int64_t v)
{
    if (o->off == offsetof(fp_mode_t, count) && v == 0)
        v = -1;     /* count 0 reads as "no limit" rather than "never" */
    if (v < o->min || v > o->max)
        return false;
    *(int64_t *)((char *)m + o->off) = v;
    return true;
}

static void opt_set_str(fp_mode_t *m, const struct mode_opt *o, const char *v)
{
    char **slot = (char **)((char *)m + o->off);
    free(*slot);
    *slot = v ? fp_xstrndup(v, strlen(v)) : NULL;
}

bool fp_mode_set_text(fp_mode_t *m, const char *key, const char *value, const char **err)
{
    if (strcmp(key, "mode") == 0) {
        *err = "unknown mode";
        return fp_mode_set_kind(m, value);
    }
    const struct mode_opt *o = opt_find(key);
    *err = "unknown option";
    if (!o)
        return false;
    *err = "bad value";
    if (o->type == OPT_JSON && !fp_json_valid(value, strlen(value)))
        return false;
    if (o->type != OPT_INT) {
        opt_set_str(m, o, value);
        return true;
    }
    char *end;
    long long v = strtoll(value, &end, 10);
    return *value && !*end && opt_set_int(m, o, v);
}

static bool opt_set_json(fp_mode_t *m, const struct mode_opt *o, const cJSON *v)
{
    if (cJSON_IsNull(v) && o->type != OPT_JSON) {
        if (o->type == OPT_STR)
            opt_set_str(m, o, NULL);
        return o->type == OPT_STR || (o->min == -1 && opt_set_int(m, o, -1));
    }
    switch (o->type) {
    case OPT_INT: {
        double d = cJSON_GetNumberValue(v);
        if (!cJSON_IsNumber(v) || d != floor(d) || fabs(d) > 9e15)
            return false;
        return opt_set_int(m, o, (int64_t)d);
    }
    case OPT_STR:
        if (!cJSON_IsString(v))
            return false;
        opt_set_str(m, o, cJSON_GetStringValue(v));
        return true;
    case OPT_JSON: {
        char *raw = cJSON_PrintUnformatted(v);
        opt_set_str(m, o, raw);
        cJSON_free(raw);
        return true;
    }
    }
    return false;
}

static bool mode_fill(fp_mode_t *m, const cJSON *root, char *err, size_t errlen)
{
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(root, "mode");
    if (!cJSON_IsString(kind) || !fp_mode_set_kind(m, kind->valuestring)) {
        snprintf(err, errlen, "\"mode\" must name a mode");
        return false;
    }
    for (const cJSON *it = root->child; it; it = it->next) {
        if (strcmp(it->string, "mode") == 0)
            continue;
        const struct mode_opt *o = opt_find(it->string);
        if (!o || strchr(it->string, '-')) {
            snprintf(err, errlen, "unknown option \"%.64s\"", it->string);
            return false;
        }
        if (!opt_set_json(m, o, it)) {
            snprintf(err, errlen, "bad value for \"%s\"", o->key);
            return false;
        }
    }
    return true;
}

bool fp_mode_from_json(fp_mode_t *m, const char *body, size_t n, char *err, size_t errlen)
{
    cJSON *root = cJSON_ParseWithLength(body, n);
    if (!cJSON_IsObject(root)) {
        snprintf(err, errlen, "body must be a JSON object");
        cJSON_Delete(root);
        return false;
    }
    fp_mode_t next;
    fp_mode_init(&next);
    bool ok = mode_fill(&next, root, err, errlen);
    cJSON_Delete(root);
    if (!ok) {
        fp_mode_dispose(&next);
        return false;
    }
    fp_mode_dispose(m);
    *m = next;
    return true;
}

void fp_mode_to_json(const fp_mode_t *m, fp_buf_t *out)
{
    fp_buf_puts(out, "{\"mode\":");
    fp_buf_put_json_str(out, m->def->name, strlen(m->def->name));
    for (size_t i = 0; i < N_OPTS; i++) {
        const struct mode_opt *o = &mode_opts[i];
        const void *slot = (const char *)m + o->off;
        fp_buf_printf(out, ",\"%s\":", o->key);
        const char *s = o->type == OPT_INT ? NULL : *(char *const *)slot;
        if (o->type == OPT_INT)
            fp_buf_printf(out, "%" PRId64, *(const int64_t *)slot);
        else if (!s)
            fp_buf_puts(out, "null");
        else if (o->type == OPT_JSON)
            fp_buf_puts(out, s);
        else
            fp_buf_put_json_str(out, s, strlen(s));
    }
    fp_buf_puts(out, "}");
}

bool fp_mode_is_accept_hang(const fp_mode_t *m)
{
    return m->def == MODE_ACCEPT_HANG;
}

const char *fp_mode_name(const fp_mode_t *m)
{
    return m->def->name;
}

fp_call_fault_fn fp_mode_call_fn(const fp_mode_t *m)
{
    return m->def->per_call;
}

/* `method` names one method, or several separated by commas. */
bool fp_mode_matches_call(const fp_mode_t *m, const fp_call_t *call)
{
    if (!m->method)
        return true;
    if (!call->valid)
        return false;
    for (const char *p = m->method; *p;) {
        size_t n = strcspn(p, ",");
        if (call->method.n == n && memcmp(call->method.p, p, n) == 0)
            return true;
        p += n + (p[n] == ',');
    }
    return false;
}

static bool mode_matches(const fp_mode_t *m, const fp_batch_t *b)
{
    if (m->def == MODE_OK || m->def == MODE_ACCEPT_HANG)
        return false;
    if (!m->method)
        return true;
    for (size_t i = 0; i < b->count; i++)
        if (fp_mode_matches_call(m, &b->calls[i]))
            return true;
    return false;
}

void fp_mode_consume(fp_server_t *srv)
{
    if (srv->mode.count < 0 || --srv->mode.count > 0)
        return;
    fp_log(srv, "mode %s used up, back to ok", srv->mode.def->name);
    fp_mode_dispose(&srv->mode);
}

/* An exponential extra delay of mean ms (0: none), capped at 20 x ms. */
static int64_t jitter(int64_t ms)
{
    if (ms <= 0)
        return 0;
    double u = ((double)random() + 1.0) / ((double)RAND_MAX + 2.0); /* (0, 1) */
    double x = -log(u) * (double)ms;
    return (int64_t)(x < 20.0 * (double)ms ? x : 20.0 * (double)ms);
}

/* ---- whole-answer replacements ---- */

/* The id an error for the whole request carries: a single call's, else null. */
static fp_span_t request_id(const fp_batch_t *b)
{
    static const fp_span_t no_id = {NULL, 0};
    return !b->is_array && b->count == 1 ? b->calls[0].id : no_id;
}

/* With `message` set, an error status carries a JSON-RPC error built from
 * code/message/data, as providers send them (Infura's backoff_seconds in a
 * 429, a node's "already known" in a 5xx). */
static bool reply_rpc_body(fp_server_t *srv, const fp_mode_t *m, const fp_batch_t *b, fp_reply_t *r)
{
    if (!m->message)
        return false;
    r->content_type = "application/json";
    fp_rpc_put_error(&srv->body, request_id(b), m->code, m->message, m->data);
    return true;
}

static void reply_429(fp_server_t *srv, const fp_mode_t *m, const fp_batch_t *b, fp_reply_t *r)
{
    r->status = 429;
    r->retry_after = m->retry_after;
    if (!reply_rpc_body(srv, m, b, r))
        fp_rpc_put_error(&srv->body, request_id(b), 429, "Too Many Requests", NULL);
}

static void reply_html(fp_server_t *srv, const fp_mode_t *m, const fp_batch_t *b, fp_reply_t *r)
{
    r->status = m->def->status;
    if (reply_rpc_body(srv, m, b, r))
        return;
    r->content_type = "text/html";
    fp_buf_printf(&srv->body, "<html><body><h1>%d %s</h1></body></html>\n", r->status,
                  fp_http_reason(r->status));
}

static void reply_garbage(fp_server_t *srv, const fp_mode_t *m, const fp_batch_t *b,
                          fp_reply_t *r)
{
    (void)m, (void)b, (void)r;
    fp_buf_puts(&srv->body, "<html>oops</html>");
}

/* ---- per-call rewrites ---- */

static void call_rpc_limit(fp_server_t *srv, const fp_mode_t *m, fp_call_t *call, fp_buf_t *out)
{
    char data[64];
    (void)srv;
    snprintf(data, sizeof data, "{\"backoff_seconds\":%" PRId64 "}", m->backoff);
    fp_rpc_put_error(out, call->id, -32005, "daily request count exceeded, request rate limited",
                     data);
}

static void call_rpc_error(fp_server_t *srv, const fp_mode_t *m, fp_call_t *call, fp_buf_t *out)
{
    (void)srv;
    fp_span_t id = m->id ? (fp_span_t){m->id, strlen(m->id)} : call->id;
    fp_rpc_put_error(out, id, m->code, m->message ? m->message : "fake error", m->data);
}

static void call_wrong_id(fp_server_t *srv, const fp_mode_t *m, fp_call_t *call, fp_buf_t *out)
{
    fp_buf_t *id = &srv->idbuf;
    (void)m;
    id->len = 0;
    if (call->id.n >= 2 && call->id.p[0] == '"') {
        fp_buf_puts(id, "\"x-");
        fp_buf_put(id, call->id.p + 1, call->id.n - 1);
    } else {
        fp_buf_puts(id, fp_span_eq(call->id, "987654321") ? "987654322" : "987654321");
    }
    call->id = (fp_span_t){id->data, id->len};
    fp_rpc_answer_call(srv, call, out);
}

static void call_huge(fp_server_t *srv, const fp_mode_t *m, fp_call_t *call, fp_buf_t *out)
{
    size_t n = (size_t)m->size;
    (void)srv;
    fp_buf_puts(out, "{\"jsonrpc\":\"2.0\",\"id\":");
    fp_buf_put(out, call->id.n ? call->id.p : "null", call->id.n ? call->id.n : 4);
    fp_buf_puts(out, ",\"result\":\"");
    fp_buf_reserve(out, n + 2);
    memset(out->data + out->len, 'f', n);
    if (n >= 2)
        memcpy(out->data + out->len, "0x", 2);  /* reads as hex data to a client */
    out->len += n;
    fp_buf_puts(out, "\"}");
}

/* A node that answers wrongly: the normal answer with a digit of its result
 * changed (fp_chain_lie), so it is well formed and plausible but not what
 * honest nodes answer: what consensus must outvote. */
static void call_lie(fp_server_t *srv, const fp_mode_t *m, fp_call_t *call, fp_buf_t *out)
{
    size_t at = out->len;
    (void)m;
    fp_rpc_answer_call(srv, call, out);
    fp_chain_lie(out, at);
}

static void call_lag(fp_server_t *srv, const fp_mode_t *m, fp_call_t *call, fp_buf_t *out)
{
    call->head = call->head > (uint64_t)m->behind ? call->head - (uint64_t)m->behind : 0;
    fp_rpc_answer_call(srv, call, out);
}

/* jsonrpc-core and jsonrpsee read an id as null, a string or a u64: any
 * other number fails the whole call, answered -32600 at id null. */
static bool id_is_u64_or_string(fp_span_t id)
{
    if (id.n == 0 || id.p[0] == '"' || fp_span_eq(id, "null"))
        return true;
    uint64_t v = 0;
    for (size_t i = 0; i < id.n; i++) {
        uint64_t d = (uint64_t)(id.p[i] - '0');
        if (id.p[i] < '0' || id.p[i] > '9' || v > UINT64_MAX / 10 || (v == UINT64_MAX / 10 && d > UINT64_MAX % 10))
            return false;
        v = v * 10 + d;
    }
    return true;
}

static void call_strict_id(fp_server_t *srv, const fp_mode_t *m, fp_call_t *call, fp_buf_t *out)
{
    static const fp_span_t null_id = {NULL, 0};
    (void)m;
    if (id_is_u64_or_string(call->id))
        fp_rpc_answer_call(srv, call, out);
    else
        fp_rpc_put_error(out, null_id, -32600, "Invalid request", NULL);
}

/* ---- answering a request ---- */

static void count_calls(fp_server_t *srv, const fp_batch_t *b)
{
    srv->stats.arrivals[srv->stats.arrival_total++ % FP_ARRIVALS_MAX] = srv->now_ms - srv->start_ms;
    srv->stats.requests++;
    for (size_t i = 0; i < b->count; i++) {
        if (!b->calls[i].valid)
            continue;
        srv->stats.calls++;
        fp_stats_count_method(&srv->stats, b->calls[i].method);
    }
}

void fp_fault_answer(fp_conn_t *c, const char *body, size_t n)
{
    fp_server_t *srv = c->srv;
    fp_batch_t *b = &srv->batch;
    const fp_mode_t *m = &srv->mode;
    fp_batch_parse(b, body, n, fp_server_head(srv));
    count_calls(srv, b);
    bool hit = mode_matches(m, b);
    const fp_mode_def_t *def = hit ? m->def : MODE_OK;
    fp_reply_t r = {
        .status = 200, .content_type = "application/json", .retry_after = -1,
        .delivery = def->delivery,
        .delay_ms = m->delay_ms + jitter(m->jitter_ms),
    };
    srv->body.len = 0;
    srv->reply_status = 0;
    if (def->reply)
        def->reply(srv, m, b, &r);
    else
        fp_rpc_answer(srv, b, def->per_call ? m : NULL, &srv->body);
    if (srv->reply_status != 0)
        r.status = srv->reply_status; /* a call answered as its vendor does: QuickNode's 413 */
    r.body = srv->body.data;
    r.body_len = srv->body.len;
    fp_conn_reply(c, &r);
    if (hit) {
        srv->stats.faults++;
        fp_mode_consume(srv);   /* last: it may free strings the answer used */
    }
    srv->body.len = 0;
    fp_buf_shrink(&srv->body, 1024 * 1024);
}
