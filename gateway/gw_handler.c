/* gateway/gw_handler.c: POST /{network}[/{key}], and the WebSocket
 * handshake on the same paths (handed to gw_ws). */
#include "gateway/gw_handler.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <h2o/websocket.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "base/sl_http.h"
#include "gateway/gw_access.h"
#include "gateway/gw_conns.h"
#include "gateway/gw_cors.h"
#include "gateway/gw_exec.h"
#include "gateway/gw_framing.h"
#include "gateway/gw_head.h"
#include "gateway/gw_identity.h"
#include "gateway/gw_keys.h"
#include "gateway/gw_refuse.h"
#include "gateway/gw_reply.h"
#include "gateway/gw_rpc.h"
#include "gateway/gw_scope.h"
#include "gateway/gw_ws.h"

/* One HTTP request: the call it carries (gw_exec.h) and h2o's request. */
typedef struct gw_req {
    gw_exec_t x;
    h2o_req_t *req;
    gw_conns_req_t busy;          /* its connection does not give way meanwhile */
    uint8_t h2_running;           /* an HTTP/2 call run and not answered yet */
} gw_req_t;

#define REFUSAL_LOG_EVERY_MS 10000

/* Freed with its request: an HTTP/2 call still running was reset by its
 * client (a closed connection unlinks busy first: nothing to count then). */
static void gw_req_dispose(void *p)
{
    gw_req_t *g = p;
    if (g->h2_running && h2o_linklist_is_linked(&g->busy.link))
        gw_conns_h2_call_reset(g->x.sock);
    gw_conns_req_end(&g->busy);
    gw_exec_dispose(&g->x);
}

/* The names of the headers every answer carries (see sl_http_header_iov). */
static h2o_iovec_t hdr_endpoint = {H2O_STRLIT("x-sluice-endpoint")};
static h2o_iovec_t hdr_attempts = {H2O_STRLIT("x-sluice-attempts")};
static h2o_iovec_t hdr_hedges = {H2O_STRLIT("x-sluice-hedges")};
static h2o_iovec_t hdr_trace = {H2O_STRLIT("x-sluice-trace")};
static h2o_iovec_t hdr_coalesced = {H2O_STRLIT("x-sluice-coalesced")};
static h2o_iovec_t hdr_retry_after = {H2O_STRLIT("retry-after")};
static h2o_iovec_t hdr_rl_limit = {H2O_STRLIT("x-ratelimit-limit")};
static h2o_iovec_t hdr_rl_remaining = {H2O_STRLIT("x-ratelimit-remaining")};
static h2o_iovec_t hdr_rl_reset = {H2O_STRLIT("x-ratelimit-reset")};
static h2o_iovec_t hdr_rl_window = {H2O_STRLIT("x-ratelimit-window")};
static h2o_iovec_t hdr_rl_bucket = {H2O_STRLIT("x-ratelimit-bucket")};
static h2o_iovec_t hdr_pressure = {H2O_STRLIT("x-sluice-pressure")};
static h2o_iovec_t hdr_cache = {H2O_STRLIT("x-sluice-cache")};
static const h2o_iovec_t pressure_values[POLICY_PRESSURE_LEVEL_COUNT] = {
    [POLICY_PRESSURE_OK] = {H2O_STRLIT("ok")},
    [POLICY_PRESSURE_ELEVATED] = {H2O_STRLIT("elevated")},
    [POLICY_PRESSURE_CRITICAL] = {H2O_STRLIT("critical")},
};

/* X-Sluice-Cache: hit (every member that went on was answered from the
 * cache), bypass (the client said no-cache, or the cache is off), miss. */
static const char *cache_outcome(const gw_exec_t *x)
{
    if (x->no_cache || !x->h->cfg->cache.enabled)
        return "bypass";
    for (size_t i = 0; i < x->nitems; i++)
        if (!x->items[i].cached)
            return "miss";
    return "hit";
}

/* A valid W3C traceparent of the request (wire/traceparent.h) goes upstream
 * with each attempt and its trace id into the access line; any other is
 * ignored. */
static void read_traceparent(h2o_req_t *req, gw_exec_t *x)
{
    x->traceparent[0] = x->trace_id[0] = '\0';
    ssize_t i = h2o_find_header_by_str(&req->headers, H2O_STRLIT("traceparent"), -1);
    if (i < 0)
        return;
    h2o_iovec_t v = req->headers.entries[i].value;
    if (!wire_traceparent_parse(v.base, v.len, x->trace_id))
        return;
    memcpy(x->traceparent, v.base, WIRE_TRACEPARENT_LEN);
    x->traceparent[WIRE_TRACEPARENT_LEN] = '\0';
}

/* 1 if the request says Cache-Control: no-cache (or no-store). */
static int asks_no_cache(h2o_req_t *req)
{
    ssize_t at = -1;
    while ((at = h2o_find_header(&req->headers, H2O_TOKEN_CACHE_CONTROL, at)) != -1) {
        h2o_iovec_t v = req->headers.entries[at].value;
        if (h2o_contains_token(v.base, v.len, H2O_STRLIT("no-cache"), ',') ||
            h2o_contains_token(v.base, v.len, H2O_STRLIT("no-store"), ','))
            return 1;
    }
    return 0;
}

/* 1 if the answer carries the attempt trace: server.trace_header: all, or
 * the client asked with X-Sluice-Trace: 1. */
static int trace_asked(h2o_req_t *req, const cfg_t *cfg)
{
    if (cfg->server.trace_all)
        return 1;
    ssize_t i = h2o_find_header_by_str(&req->headers, H2O_STRLIT("x-sluice-trace"), -1);
    return i >= 0 && req->headers.entries[i].value.len == 1 && req->headers.entries[i].value.base[0] == '1';
}

/* X-Sluice-Trace: each attempt of the call as endpoint;role;outcome;ms
 * (role first, retry, hedge, consensus (a fan-out's: consensus, dispatch:
 * max), broadcast (a write's methods.<m>.broadcast) or split (one of an
 * eth_getLogs split's sub-calls); outcome answered (HTTP 200: its JSON-RPC
 * verdict is the answer's), http_<status>, cancelled, or the attempt
 * outcome's name as /admin/endpoints counts it), comma-separated; then
 * cache;hit when the response cache answered every call, coalesced;1 when
 * it shared an identical call's answer, credits;N when attempts billed N. */
static void trace_one(sl_buf_t *b, const char *id, const pool_attempt_rec_t *a, const char *role)
{
    char status[16];
    snprintf(status, sizeof(status), "http_%u", (unsigned)a->http_status);
    const char *what = a->flags & POOL_ATTEMPT_CANCELLED                 ? "cancelled"
                       : a->fail != POOL_FAIL_NONE                       ? state_outcome_name(pool_fail_outcome(a->fail))
                       : a->http_status == 200 || a->http_status == 0    ? "answered"
                                                                         : status;
    sl_buf_printf(b, "%s%s;%s;%s;%u", b->len ? ", " : "", id, role, what, (unsigned)((a->latency_us + 500) / 1000));
}

static void trace_header(h2o_req_t *req, const gw_exec_t *x, const char *cache)
{
    sl_buf_t b = SL_BUF_INIT;
    uint64_t credits = 0;
    if (x->call != NULL) {
        size_t n;
        const pool_attempt_rec_t *log = pool_call_log(x->call, &n);
        for (size_t i = 0; i < n; i++) {
            const char *role = log[i].flags & POOL_ATTEMPT_HEDGE       ? "hedge"
                               : log[i].flags & POOL_ATTEMPT_FANOUT    ? "consensus"
                               : log[i].flags & POOL_ATTEMPT_BROADCAST ? "broadcast"
                               : i == 0                                ? "first"
                                                                       : "retry";
            trace_one(&b, pool_call_endpoint_id(x->call, log[i].endpoint), &log[i], role);
        }
        credits += pool_call_credits(x->call);
    }
    size_t ns;
    const char *const *ids;
    uint64_t split_credits;
    const pool_attempt_rec_t *split = pool_split_trace(x->split, &ns, &ids, &split_credits);
    for (size_t i = 0; i < ns; i++)
        trace_one(&b, ids[i], &split[i], "split");
    credits += split_credits;
    if (cache != NULL && strcmp(cache, "hit") == 0)
        sl_buf_printf(&b, "%scache;hit", b.len ? ", " : "");
    if (x->call != NULL && pool_call_coalesced(x->call))
        sl_buf_printf(&b, "%scoalesced;1", b.len ? ", " : "");
    if (credits != 0)
        sl_buf_printf(&b, "%scredits;%llu", b.len ? ", " : "", (unsigned long long)credits);
    if (b.len != 0) {
        h2o_iovec_t v = h2o_strdup(&req->pool, b.base, b.len);
        sl_http_header_iov(req, &hdr_trace, v.base, v.len);
    }
    sl_buf_dispose(&b);
}

/* gw_exec_ops_t.reply: the headers, the access line, the body. */
static void send_reply(gw_exec_t *x)
{
    gw_req_t *g = H2O_STRUCT_FROM_MEMBER(gw_req_t, x, x);
    gw_reply_t *r = &x->reply;
    h2o_req_t *req = g->req;
    /* room for every header below at once, instead of growing 4, 8, 16 */
    h2o_vector_reserve(&req->pool, &req->res.headers, req->res.headers.size + 16);
    if (r->endpoints[0] != '\0') {
        h2o_iovec_t ids = h2o_strdup(&req->pool, r->endpoints, SIZE_MAX);
        sl_http_header_iov(req, &hdr_endpoint, ids.base, ids.len);
    }
    if (x->call != NULL) {
        sl_http_header_u64(req, &hdr_attempts, pool_call_attempts(x->call)); /* hedges included */
        if (pool_call_hedges(x->call) != 0)
            sl_http_header_u64(req, &hdr_hedges, pool_call_hedges(x->call));
        if (pool_call_coalesced(x->call))
            sl_http_header_u64(req, &hdr_coalesced, 1);
    }
    const char *cache = x->nitems != 0 ? cache_outcome(x) : NULL;
    if (cache != NULL)
        sl_http_header_iov(req, &hdr_cache, cache, strlen(cache));
    if ((x->call != NULL || x->split != NULL) && trace_asked(req, x->h->cfg))
        trace_header(req, x, cache);
    if (r->retry_after_s != 0)
        sl_http_header_u64(req, &hdr_retry_after, r->retry_after_s);
    /* the level flows back on every answer: a read of what the last snapshot left */
    if (x->net != NULL && x->net->sub.conf->pressure.enabled) {
        const h2o_iovec_t *v = &pressure_values[pool_network_pressure(x->net->sub.pool_net)];
        sl_http_header_iov(req, &hdr_pressure, v->base, v->len);
    }
    if (x->limit.limited) {
        const char *bucket = policy_bucket_name(x->limit.bucket); /* a literal */
        sl_http_header_u64(req, &hdr_rl_limit, x->limit.limit);
        sl_http_header_u64(req, &hdr_rl_remaining, x->limit.remaining);
        sl_http_header_u64(req, &hdr_rl_reset, x->limit.reset_s);
        sl_http_header_u64(req, &hdr_rl_window, x->limit.window_s);
        sl_http_header_iov(req, &hdr_rl_bucket, bucket, strlen(bucket));
    }
    gw_cors_headers(req, x->h->cfg, x->key);
    if (x->h->cfg->server.access_log)
        gw_access_log(x->sock, 0, x->net ? x->net->sub.conf->name : NULL, &x->rpc, x->call, r->status, r->outcome,
                      sl_now_us() - x->start_us, x->key, x->trace_id);
    gw_exec_commit(x);
    g->h2_running = 0;
    if (r->nparts != 0)
        sl_http_send_parts(req, r->status, "application/json", r->parts, r->nparts, r->len);
    else
        sl_http_send(req, r->status, "application/json", r->body, r->len);
}

static const gw_exec_ops_t http_ops = {.reply = send_reply};

static int is_json_content_type(h2o_req_t *req)
{
    ssize_t i = h2o_find_header(&req->headers, H2O_TOKEN_CONTENT_TYPE, -1);
    if (i < 0)
        return 1; /* absent: assume JSON, as most RPC servers do */
    h2o_iovec_t v = req->headers.entries[i].value;
    size_t n = 0;
    while (n < v.len && v.base[n] != ';' && v.base[n] != ' ')
        n++;
    static const char *const accepted[] = {"application/json", "application/json-rpc", "application/jsonrequest"};
    for (size_t k = 0; k < sizeof(accepted) / sizeof(accepted[0]); k++)
        if (n == strlen(accepted[k]) && strncasecmp(v.base, accepted[k], n) == 0)
            return 1;
    return n > 5 && strncasecmp(v.base + n - 5, "+json", 5) == 0;
}

/* Answers with an HTTP error status and a JSON-RPC error body; returns 0. */
static int http_error(gw_req_t *g, int status, int code, const char *message)
{
    gw_exec_refuse(&g->x, status, code, message);
    return 0;
}

/* Splits "/net" or "/net/seg" (or "/net/"); returns 0 on another shape. */
static int split_path(h2o_iovec_t path, h2o_iovec_t *net, h2o_iovec_t *seg)
{
    if (path.len < 2 || path.base[0] != '/')
        return 0;
    const char *p = path.base + 1, *end = path.base + path.len;
    const char *slash = memchr(p, '/', (size_t)(end - p));
    *net = h2o_iovec_init(p, (size_t)((slash ? slash : end) - p));
    *seg = h2o_iovec_init(NULL, 0);
    if (slash != NULL) {
        const char *s = slash + 1;
        if (memchr(s, '/', (size_t)(end - s)) != NULL)
            return 0;
        *seg = h2o_iovec_init(s, (size_t)(end - s));
    }
    return net->len > 0;
}

static gw_net_t *find_net(gw_handler_t *h, h2o_iovec_t name)
{
    for (size_t i = 0; i < h->nnets; i++)
        if (strlen(h->nets[i].sub.conf->name) == name.len && memcmp(h->nets[i].sub.conf->name, name.base, name.len) == 0)
            return &h->nets[i];
    return NULL;
}

/* The caller's key: the path segment wins over X-API-Key. Returns 0 after
 * answering 401 for a key that is not known. */
/* The config's keys first, then the ones made at run time (gw_keys.h); a
 * key unknown to both looks at the keys' generation first, so a key just
 * made works at once on every worker. */
static gw_identity_result_t resolve(const gw_handler_t *h, const char *key, size_t len, const cfg_key_conf_t **out)
{
    gw_identity_result_t r = gw_identity_resolve(h->cfg, key, len, out);
    if (r != GW_IDENTITY_UNKNOWN_KEY || h->keys == NULL)
        return r;
    char hex[65];
    gw_identity_hash(key, len, hex);
    *out = gw_keys_match(h->keys, hex);
    if (*out == NULL && gw_keys_refresh(h->keys)) /* made since the last tick: one snapshot read tells */
        *out = gw_keys_match(h->keys, hex);
    return *out != NULL ? GW_IDENTITY_KEY : GW_IDENTITY_UNKNOWN_KEY;
}

static int identify(gw_req_t *g, h2o_iovec_t seg)
{
    h2o_req_t *req = g->req;
    const char *key = NULL;
    size_t len = 0;
    if (seg.len > 0 && gw_identity_is_key(seg.base, seg.len)) {
        key = seg.base;
        len = seg.len;
    } else {
        ssize_t i = h2o_find_header_by_str(&req->headers, H2O_STRLIT("x-api-key"), -1);
        if (i >= 0) {
            key = req->headers.entries[i].value.base;
            len = req->headers.entries[i].value.len;
        }
    }
    if (resolve(g->x.h, key, len, &g->x.key) == GW_IDENTITY_UNKNOWN_KEY)
        return gw_exec_admit_refusal(&g->x) ? http_error(g, 401, WIRE_RPC_INVALID_REQUEST, "unknown API key") : 0;
    return 1;
}

/* 414 for a request line, 431 for a header line over
 * server.max_header_line_bytes or a head over max_header_bytes; the
 * connection is closed after the answer (its read buffer grew with the
 * head). h2o read the head already: its own bound is H2O_MAX_REQLEN.
 * Returns 0 after answering. */
static int check_head(gw_req_t *g)
{
    gw_handler_t *h = g->x.h;
    gw_head_verdict_t v;
    if (gw_head_check(g->req, &h->cfg->server, &v))
        return 1;
    uint64_t held;
    char tail[SL_LOG_HELD_MAX];
    gw_stats_srv_add(h->stats, STATE_SRV_HEAD_REFUSED, 1);
    if (sl_log_limit_pass(&h->log_head, sl_now_ms(), REFUSAL_LOG_EVERY_MS, &held))
        sl_log_warn("refused a request head of %zu bytes (longest line %zu) with %d%s", v.total, v.longest, v.status,
                    sl_log_held_text(held, tail));
    g->req->http1_is_persistent = 0;
    if (g->req->version < 0x200) /* HTTP/2: the stream ends, its connection serves on */
        gw_conns_linger(g->req->conn->callbacks->get_socket(g->req->conn)); /* a body may follow the head */
    return http_error(g, v.status, WIRE_RPC_INVALID_REQUEST, v.message);
}

/* 400 for a request whose body length two headers disagree on
 * (gw_framing.h). The connection closes after the answer, so the bytes
 * after the body h2o read (in its buffer or still in the kernel's) are
 * never read as a request; a lingering close lets the client read the
 * answer while it still sends them. Returns 0 after answering. */
static int check_framing(gw_req_t *g)
{
    h2o_req_t *req = g->req;
    if (req->entity.base == NULL)
        return 1; /* neither header: no length to disagree on */
    if (req->version >= 0x200)
        return 1; /* HTTP/2 frames carry their lengths; the input holds frames, not a head */
    h2o_socket_t *sock = req->conn->callbacks->get_socket(req->conn);
    if (sock == NULL || sock->input == NULL)
        return 1;
    gw_framing_t verdict = gw_framing_check(sock->input->bytes, sock->input->size);
    if (verdict == GW_FRAMING_OK)
        return 1;
    uint64_t held;
    char tail[SL_LOG_HELD_MAX];
    if (sl_log_limit_pass(&g->x.h->log_framing, sl_now_ms(), REFUSAL_LOG_EVERY_MS, &held))
        sl_log_warn("refused a request with 400 and closed its connection: %s%s", gw_framing_message(verdict),
                    sl_log_held_text(held, tail));
    req->http1_is_persistent = 0;
    gw_conns_linger(sock);
    return http_error(g, 400, WIRE_RPC_INVALID_REQUEST, gw_framing_message(verdict));
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    gw_handler_t *h = (gw_handler_t *)self;
    gw_req_t *g = h2o_mem_alloc_shared(&req->pool, sizeof(*g), gw_req_dispose);
    gw_exec_init(&g->x, h, &http_ops, &req->pool);
    g->req = req;
    g->x.sock = req->conn->callbacks->get_socket(req->conn);
    g->busy = (gw_conns_req_t){0};
    gw_conns_req_begin(g->x.sock, &g->busy);
    gw_stats_srv_add(h->stats, req->version >= 0x200                                  ? STATE_SRV_REQ_H2
                               : g->x.sock != NULL && h2o_socket_get_ssl_protocol_version(g->x.sock) != NULL
                                   ? STATE_SRV_REQ_HTTP1_TLS
                                   : STATE_SRV_REQ_HTTP1,
                     1);

    if (!check_framing(g) || !check_head(g))
        return 0;
    h2o_iovec_t netname, seg;
    if (!split_path(req->path_normalized, &netname, &seg) || (g->x.net = find_net(h, netname)) == NULL)
        return http_error(g, 404, WIRE_RPC_INVALID_REQUEST, "unknown network: use POST /{network} with a network "
                                                          "from the configuration");
    gw_identity_client_ip(req, h->cfg, g->x.ip);
    const char *ws_key;
    if (h->ws != NULL && h2o_is_websocket_handshake(req, &ws_key) == 0 && ws_key != NULL)
        return identify(g, seg) && gw_scope_request(&g->x, req) ? gw_ws_accept(h->ws, req, ws_key, &g->x) : 0;
    if (h2o_memis(req->method.base, req->method.len, H2O_STRLIT("OPTIONS"))) {
        /* a preflight carries no X-API-Key: a key in the path names whose origins answer */
        const cfg_key_conf_t *key = NULL;
        if (seg.len > 0 && gw_identity_is_key(seg.base, seg.len))
            (void)resolve(h, seg.base, seg.len, &key);
        gw_cors_preflight(req, h->cfg, key);
        return 0;
    }
    if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("POST"))) {
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, H2O_STRLIT("POST, OPTIONS"));
        return http_error(g, 405, WIRE_RPC_INVALID_REQUEST, "method not allowed: JSON-RPC takes POST");
    }
    if (!identify(g, seg) || !gw_scope_request(&g->x, req))
        return 0;
    if (!is_json_content_type(req))
        return gw_exec_admit_refusal(&g->x)
                   ? http_error(g, 415, WIRE_RPC_INVALID_REQUEST, "unsupported content type: send application/json")
                   : 0;
    g->x.body = req->entity.base;
    g->x.len = req->entity.len;
    g->x.no_cache = (uint8_t)asks_no_cache(req);
    read_traceparent(req, &g->x);
    if (req->version >= 0x200) {
        g->h2_running = 1;
        gw_conns_h2_call_begin(g->x.sock);
    }
    gw_exec_run(&g->x);
    return 0;
}

static void nets_init(gw_handler_t *h, pool_t *pool)
{
    const cfg_t *cfg = h->cfg;
    h->nnets = cfg->nnetworks;
    h->nets = sl_xcalloc(cfg->nnetworks, sizeof(*h->nets));
    for (size_t i = 0; i < cfg->nnetworks; i++) {
        gw_net_t *n = &h->nets[i];
        n->sub.index = i;
        n->sub.conf = &cfg->networks[i];
        n->sub.pool_net = pool_network_find(pool, n->sub.conf->name, strlen(n->sub.conf->name));
        if (n->sub.conf->blocked_methods != NULL) {
            n->blocked = (const char *const *)n->sub.conf->blocked_methods;
            n->nblocked = n->sub.conf->nblocked_methods;
        } else {
            n->blocked = policy_method_default_blocked(n->sub.conf->chain);
            for (n->nblocked = 0; n->blocked[n->nblocked] != NULL; n->nblocked++)
                ;
        }
    }
}

gw_handler_t *gw_handler_register(h2o_hostconf_t *hostconf, const cfg_t *cfg, pool_t *pool, gw_stats_t *stats,
                                  gw_limit_t *limit, sl_budget_t *budget)
{
    h2o_pathconf_t *pathconf = h2o_config_register_path(hostconf, "/", 0);
    gw_handler_t *h = (gw_handler_t *)h2o_create_handler(pathconf, sizeof(*h));
    h->super.on_req = on_req;
    h->cfg = cfg;
    h->stats = stats;
    h->limit = limit;
    h->budget = budget;
    gw_buffered_init(&h->buffered, &cfg->server, budget, stats, gw_exec_held, gw_exec_real);
    nets_init(h, pool);
    return h;
}
