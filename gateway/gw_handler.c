/* gateway/gw_handler.c: POST /{network}[/{key}] */
#include "gateway/gw_handler.h"

#include <arpa/inet.h>
#include <string.h>
#include <strings.h>

#include "base/sl_hash.h"
#include "base/sl_log.h"
#include "base/sl_time.h"
#include "base/sl_http.h"
#include "gateway/gw_access.h"
#include "gateway/gw_conns.h"
#include "gateway/gw_cors.h"
#include "gateway/gw_framing.h"
#include "gateway/gw_head.h"
#include "gateway/gw_identity.h"
#include "gateway/gw_logsplit.h"
#include "gateway/gw_refuse.h"
#include "gateway/gw_reply.h"
#include "gateway/gw_rpc.h"

typedef struct gw_req {
    h2o_req_t *req;
    gw_handler_t *h;
    gw_net_t *net;
    gw_rpc_request_t rpc;
    pool_item_t *items;
    uint32_t *item_member;        /* items[k] answers rpc.members[item_member[k]] */
    size_t nitems;
    uint8_t no_cache;             /* Cache-Control: no-cache: the response cache is not looked in */
    pool_call_t *call;
    int call_done;
    gw_logsplit_t *split;         /* eth_getLogs split into sub-calls (NULL: none) */
    gw_reply_t reply;
    int have_reply;
    uint64_t start_us;
    const gw_key_conf_t *key;
    gw_limit_result_t limit;      /* this caller's rate limit, for the headers */
    gw_limit_wait_t limit_wait;   /* cluster: waiting for a lease of the caller's limit from Redis */
    size_t charged;               /* bytes of reply.out charged to the budget */
    uint64_t owner;               /* the caller's identity hashed (0: not needed): its share of the depth */
    int sent;                     /* the reply is being written */
    gw_held_entry_t held;         /* under its caller in h->buffered, once admitted */
} gw_req_t;

#define REFUSAL_LOG_EVERY_MS 10000

static void gw_req_dispose(void *p)
{
    gw_req_t *g = p;
    gw_held_remove(g->h->buffered.held, &g->held);
    gw_limit_wait_cancel(&g->limit_wait);
    pool_call_release(g->call); /* done with it, or the client went away before its answer */
    gw_logsplit_dispose(g->split);
    if (g->have_reply)
        gw_reply_dispose(&g->reply);
    if (g->charged > 0)
        sl_budget_release(g->h->budget, g->charged);
    g->h->inflight--;
}

static void *pool_alloc(void *ctx, size_t size)
{
    return h2o_mem_alloc_pool((h2o_mem_pool_t *)ctx, size);
}

/* The names of the headers every answer carries (see sl_http_header_iov). */
static h2o_iovec_t hdr_endpoint = {H2O_STRLIT("x-sluice-endpoint")};
static h2o_iovec_t hdr_attempts = {H2O_STRLIT("x-sluice-attempts")};
static h2o_iovec_t hdr_hedges = {H2O_STRLIT("x-sluice-hedges")};
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
static const char *cache_outcome(const gw_req_t *g)
{
    if (g->no_cache || !g->h->cfg->cache.enabled)
        return "bypass";
    for (size_t i = 0; i < g->nitems; i++)
        if (!g->items[i].cached)
            return "miss";
    return "hit";
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

static void send_reply(gw_req_t *g)
{
    gw_reply_t *r = &g->reply;
    h2o_req_t *req = g->req;
    /* room for every header below at once, instead of growing 4, 8, 16 */
    h2o_vector_reserve(&req->pool, &req->res.headers, req->res.headers.size + 16);
    if (r->endpoints[0] != '\0') {
        h2o_iovec_t ids = h2o_strdup(&req->pool, r->endpoints, SIZE_MAX);
        sl_http_header_iov(req, &hdr_endpoint, ids.base, ids.len);
    }
    if (g->call != NULL) {
        sl_http_header_u64(req, &hdr_attempts, pool_call_attempts(g->call)); /* hedges included */
        if (pool_call_hedges(g->call) != 0)
            sl_http_header_u64(req, &hdr_hedges, pool_call_hedges(g->call));
        if (pool_call_coalesced(g->call))
            sl_http_header_u64(req, &hdr_coalesced, 1);
    }
    if (g->nitems != 0) {
        const char *c = cache_outcome(g);
        sl_http_header_iov(req, &hdr_cache, c, strlen(c));
    }
    if (r->retry_after_s != 0)
        sl_http_header_u64(req, &hdr_retry_after, r->retry_after_s);
    /* the level flows back on every answer: a read of what the last snapshot left */
    if (g->net != NULL && g->net->conf->pressure.enabled) {
        const h2o_iovec_t *v = &pressure_values[pool_network_pressure(g->net->pool_net)];
        sl_http_header_iov(req, &hdr_pressure, v->base, v->len);
    }
    if (g->limit.limited) {
        const char *bucket = policy_bucket_name(g->limit.bucket); /* a literal */
        sl_http_header_u64(req, &hdr_rl_limit, g->limit.limit);
        sl_http_header_u64(req, &hdr_rl_remaining, g->limit.remaining);
        sl_http_header_u64(req, &hdr_rl_reset, g->limit.reset_s);
        sl_http_header_u64(req, &hdr_rl_window, g->limit.window_s);
        sl_http_header_iov(req, &hdr_rl_bucket, bucket, strlen(bucket));
    }
    gw_cors_headers(req, g->h->cfg);
    if (g->h->cfg->server.access_log)
        gw_access_log(req, g->net ? g->net->conf->name : NULL, &g->rpc, g->call, r->status, r->outcome,
                      sl_now_us() - g->start_us, g->key);
    if (g->call != NULL && g->call_done && (r->len == 0 || r->body == r->out.base)) {
        /* the reply was assembled in its own buffer: the upstream's answers
         * are not needed while it is written (held once, not twice) */
        pool_call_release(g->call);
        g->call = NULL;
    }
    if (g->h->budget != NULL && r->out.len > 0) {
        g->charged = r->out.len;
        sl_budget_charge(g->h->budget, g->charged);
    }
    g->sent = 1;
    if (r->nparts != 0)
        sl_http_send_parts(req, r->status, "application/json", r->parts, r->nparts, r->len);
    else
        sl_http_send(req, r->status, "application/json", r->body, r->len);
}

static size_t req_sent_held(const gw_held_entry_t *e);
static void refuse_buffered(gw_req_t *g, const char *body, gw_buffered_verdict_t v, size_t held);

/* The reply, once the request's call and its eth_getLogs sub-calls are
 * done (also gw_logsplit's callback). */
static void finish(void *data)
{
    gw_req_t *g = data;
    size_t held;
    if (!g->call_done || gw_logsplit_pending(g->split))
        return;
    size_t call_held = (g->call != NULL ? pool_call_held(g->call) : 0) + gw_logsplit_held(g->split);
    if (!gw_buffered_keep(&g->h->buffered, &g->held, call_held, req_sent_held, &held)) {
        pool_call_release(g->call); /* its bytes go now, not after a refusal nobody needs them for */
        g->call = NULL;
        refuse_buffered(g, g->req->entity.base ? g->req->entity.base : "", GW_BUFFERED_SHARE, held);
        return;
    }
    gw_reply_build(&g->reply, g->req->entity.base, &g->rpc, g->items, g->item_member, g->nitems, g->call);
    g->have_reply = 1;
    gw_stats_count_request(g->h->stats, g->net->index, &g->rpc, g->items, g->item_member, g->nitems);
    send_reply(g);
}

static void on_call_done(pool_call_t *call, void *data)
{
    gw_req_t *g = data;
    (void)call;
    g->call_done = 1;
    if (g->split != NULL && gw_logsplit_settle(g->split))
        return; /* a refused eth_getLogs went on in halves: finish runs when they are done */
    finish(g);
}

/* Collects the members that go upstream; returns their number. */
static size_t collect_items(gw_req_t *g)
{
    gw_rpc_request_t *rpc = &g->rpc;
    const char *body = g->req->entity.base;
    size_t n = 0;
    for (size_t i = 0; i < rpc->nmembers; i++)
        n += rpc->members[i].status == GW_MEMBER_FORWARD;
    if (n == 0)
        return 0;
    g->no_cache = (uint8_t)asks_no_cache(g->req);
    g->items = h2o_mem_alloc_pool(&g->req->pool, n * sizeof(*g->items));
    g->item_member = h2o_mem_alloc_pool(&g->req->pool, n * sizeof(*g->item_member));
    memset(g->items, 0, n * sizeof(*g->items));
    size_t k = 0;
    for (size_t i = 0; i < rpc->nmembers; i++) {
        const gw_member_t *m = &rpc->members[i];
        if (m->status != GW_MEMBER_FORWARD)
            continue;
        pool_item_t *it = &g->items[k];
        it->raw = body + m->raw.off;
        it->raw_len = m->raw.len;
        it->id = m->id.len ? (wire_span_t){m->id.off - m->raw.off, m->id.len} : (wire_span_t){0, 0};
        it->params = m->params.len ? (wire_span_t){m->params.off - m->raw.off, m->params.len} : (wire_span_t){0, 0};
        it->method = m->method;
        it->cheap = m->cheap;
        it->no_cache = g->no_cache;
        it->name = m->name;
        it->name_len = (uint32_t)strlen(m->name);
        g->item_member[k++] = (uint32_t)i;
    }
    return n;
}

/* Cheap reads go to the larger read bucket; anything else, or anything
 * doubtful (a parse error, an invalid or expensive member), to standard. */
static policy_bucket_t choose_bucket(const gw_rpc_request_t *rpc)
{
    if (rpc->kind == GW_RPC_REJECT || rpc->nmembers == 0)
        return POLICY_BUCKET_STANDARD;
    for (size_t i = 0; i < rpc->nmembers; i++)
        if (rpc->members[i].status != GW_MEMBER_FORWARD || !rpc->members[i].cheap)
            return POLICY_BUCKET_STANDARD;
    return POLICY_BUCKET_READ;
}

/* "key:<name>" or "ip:<address>": whose limit a call counts against. */
static void caller_identity(gw_req_t *g, char *out, size_t cap)
{
    char ip[64];
    const char *prefix = g->key != NULL ? "key:" : "ip:";
    const char *who = ip;
    if (g->key != NULL)
        who = g->key->name;
    else
        gw_identity_client_ip(g->req, g->h->cfg, ip);
    /* who is terminated (a key name, or ip[]): strlen, then cut to fit */
    size_t p = strlen(prefix), w = strlen(who);
    if (w > cap - p - 1)
        w = cap - p - 1;
    memcpy(out, prefix, p);
    memcpy(out + p, who, w);
    out[p + w] = '\0';
}

/* Answers 429 for a caller over its limit (g->limit says which). */
static void refuse_limited(gw_req_t *g, const char *body, wire_span_t id)
{
    g->have_reply = 1;
    gw_refuse_limited(&g->reply, body, id, &g->limit);
    send_reply(g);
}

static void forward(gw_req_t *g);
static policy_lease_result_t admit(gw_req_t *g, const char *body);

/* cluster: the caller's lease came from Redis (or Redis failed): again */
static void on_admit_wake(gw_limit_wait_t *w)
{
    gw_req_t *g = H2O_STRUCT_FROM_MEMBER(gw_req_t, limit_wait, w);
    if (admit(g, g->req->entity.base ? g->req->entity.base : "") == POLICY_LEASE_YES)
        forward(g);
}

/* Charges the caller: YES admitted, NO answered 429 (over its limit), WAIT
 * for a lease from Redis (cluster:; on_admit_wake goes on). */
static policy_lease_result_t admit(gw_req_t *g, const char *body)
{
    char ident[96] = "";
    uint32_t n = g->rpc.kind == GW_RPC_REJECT ? 1 : (uint32_t)g->rpc.nmembers;
    const gw_tier_conf_t *tier = gw_identity_tier(g->h->cfg, g->key);
    policy_bucket_t bucket = choose_bucket(&g->rpc);
    if (tier != NULL)
        caller_identity(g, ident, sizeof(ident));
    gw_limit_charge(g->h->limit, tier, ident, bucket, n, &g->limit);
    if (g->limit.said == POLICY_LEASE_WAIT)
        gw_limit_wait(g->h->limit, ident, bucket, &g->limit_wait, on_admit_wake);
    if (g->limit.said == POLICY_LEASE_NO)
        refuse_limited(g, body, g->rpc.kind == GW_RPC_SINGLE ? g->rpc.members[0].id : (wire_span_t){0, 0});
    return g->limit.said;
}

/* A request refused before it is parsed (an unknown key, a content type
 * that is not JSON) still costs one standard call of the caller's address
 * under the anonymous tier: guessing keys is limited like calling, and it
 * makes no state beyond the address's own cells. Returns 0 after answering
 * 429 when that address is over its limit. */
static int admit_refusal(gw_req_t *g)
{
    char ident[96] = "";
    const gw_tier_conf_t *tier = g->h->cfg->anonymous_tier;
    g->key = NULL;
    if (tier != NULL)
        caller_identity(g, ident, sizeof(ident));
    gw_limit_charge(g->h->limit, tier, ident, POLICY_BUCKET_STANDARD, 1, &g->limit);
    /* cluster: a charge waiting for Redis is not over the limit yet; the
     * request is refused anyway and the lease comes for the next one */
    if (g->limit.said != POLICY_LEASE_NO) {
        g->limit.limited = g->limit.said == POLICY_LEASE_WAIT ? 0 : g->limit.limited;
        return 1;
    }
    refuse_limited(g, "", (wire_span_t){0, 0});
    return 0;
}

/* The caller's identity hashed, for its share of the network's depth
 * (pool_network_pressure_for); computed once per request. */
static uint64_t caller_owner(gw_req_t *g)
{
    if (g->owner == 0) {
        char ident[96];
        caller_identity(g, ident, sizeof(ident));
        g->owner = sl_fnv1a_str(SL_FNV1A_OFFSET, ident) | 1; /* 0 means none */
    }
    return g->owner;
}

/* Under pressure, marks the members the shed order refuses (never a
 * confirmation poll); returns how many. */
static size_t shed(gw_req_t *g)
{
    const policy_pressure_conf_t *pc = &g->net->conf->pressure;
    if (!pc->enabled || g->rpc.kind == GW_RPC_REJECT)
        return 0;
    if (pool_network_pressure(g->net->pool_net) == POLICY_PRESSURE_OK)
        return 0;
    /* the caller's level: the network's for one at its share of the depth, a step lower below it */
    policy_pressure_level_t level = pool_network_pressure_for(g->net->pool_net, caller_owner(g));
    if (level == POLICY_PRESSURE_OK)
        return 0;
    size_t n = 0;
    for (size_t i = 0; i < g->rpc.nmembers; i++) {
        gw_member_t *m = &g->rpc.members[i];
        if (m->status == GW_MEMBER_FORWARD && policy_pressure_sheds(pc, level, m->method)) {
            m->status = GW_MEMBER_SHED;
            n++;
        }
    }
    g->rpc.shed_level = (uint8_t)level;
    g->rpc.shed_retry_ms = policy_pressure_retry_after_ms(pc, level);
    return n;
}

/* What the request holds: its assembled reply and its call's answers. */
static size_t req_held(const gw_held_entry_t *e)
{
    const gw_req_t *g = (const gw_req_t *)((const char *)e - offsetof(gw_req_t, held));
    return g->charged + (g->call != NULL ? pool_call_held(g->call) : 0) + gw_logsplit_held(g->split);
}

/* ... counting only a reply being written (what waits for its client). */
static size_t req_sent_held(const gw_held_entry_t *e)
{
    const gw_req_t *g = (const gw_req_t *)((const char *)e - offsetof(gw_req_t, held));
    return g->sent ? req_held(e) : 0;
}

/* 503 for a call refused for want of answer bytes: the worker's, or this
 * caller's share of them (v). */
static void refuse_buffered(gw_req_t *g, const char *body, gw_buffered_verdict_t v, size_t held)
{
    char msg[240], data[240];
    g->have_reply = 1;
    gw_buffered_refusal(&g->h->buffered, v, held, sl_now_ms(), msg, sizeof(msg), data, sizeof(data));
    wire_span_t id = g->rpc.kind == GW_RPC_SINGLE ? g->rpc.members[0].id : (wire_span_t){0, 0};
    gw_refuse_buffered(&g->reply, body, id, msg, data);
    send_reply(g);
}

/* The worker's answer bytes and the caller's share of them (gw_buffered.h):
 * a refused call gets 503 (calls in flight go on); an admitted one is
 * counted under its caller until freed. Returns 0 after answering. */
static int within_budget(gw_req_t *g, const char *body)
{
    gw_handler_t *h = g->h;
    char ident[GW_HELD_IDENT_MAX];
    size_t held;
    caller_identity(g, ident, sizeof(ident));
    g->owner = sl_fnv1a_str(SL_FNV1A_OFFSET, ident) | 1; /* caller_owner's, computed once */
    gw_buffered_verdict_t v = gw_buffered_admit(&h->buffered, ident, sl_now_ms(), &held);
    if (v != GW_BUFFERED_ADMIT) {
        refuse_buffered(g, body, v, held);
        return 0;
    }
    g->held.sock = g->req->conn->callbacks->get_socket(g->req->conn);
    gw_held_add(h->buffered.held, &g->held, ident);
    return 1;
}

static void handle_rpc(gw_req_t *g)
{
    h2o_req_t *req = g->req;
    const gw_net_t *net = g->net;
    gw_rpc_limits_t lim = {g->h->cfg->server.max_batch, net->conf->chain, net->blocked, net->nblocked,
                           net->conf->method_overrides, net->conf->nmethod_overrides};
    const char *body = req->entity.base ? req->entity.base : "";
    gw_rpc_parse(body, req->entity.len, &lim, pool_alloc, &req->pool, &g->rpc);
    if (within_budget(g, body) && admit(g, body) == POLICY_LEASE_YES)
        forward(g);
}

/* The admitted call: shed by the pressure level, answered by sluice alone,
 * or sent upstream. */
static void forward(gw_req_t *g)
{
    h2o_req_t *req = g->req;
    const gw_net_t *net = g->net;
    const char *body = req->entity.base ? req->entity.base : "";
    size_t nshed = shed(g);
    g->nitems = g->rpc.kind == GW_RPC_REJECT ? 0 : collect_items(g);
    if (g->nitems == 0) {
        gw_reply_build(&g->reply, body, &g->rpc, NULL, NULL, 0, NULL);
        g->have_reply = 1;
        if (nshed > 0 && g->reply.status != 204) {
            /* nothing went upstream because of the pressure: say when to come back */
            g->reply.status = 503;
            g->reply.outcome = "shed";
            g->reply.retry_after_s = (g->rpc.shed_retry_ms + 999) / 1000;
        }
        gw_stats_count_request(g->h->stats, net->index, &g->rpc, NULL, NULL, 0);
        send_reply(g);
        return;
    }
    uint64_t owner = net->conf->pressure.enabled ? caller_owner(g) : 0;
    pool_item_t *items = g->items;
    size_t nitems = g->nitems;
    if ((g->split = gw_logsplit_take(net->pool_net, g->items, g->nitems, owner, finish, g)) != NULL)
        items = gw_logsplit_rest(g->split, &nitems);
    if (nitems == 0) { /* every member went into sub-calls or was refused */
        g->call_done = 1;
        finish(g);
        return;
    }
    g->call = pool_call_start(net->pool_net, items, nitems, g->rpc.kind == GW_RPC_BATCH, owner, on_call_done, g);
}

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
    g->have_reply = 1;
    gw_refuse_http(&g->reply, status, code, message);
    send_reply(g);
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
        if (strlen(h->nets[i].conf->name) == name.len && memcmp(h->nets[i].conf->name, name.base, name.len) == 0)
            return &h->nets[i];
    return NULL;
}

/* The caller's key: the path segment wins over X-API-Key. Returns 0 after
 * answering 401 for a key that is not known. */
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
    if (gw_identity_resolve(g->h->cfg, key, len, &g->key) == GW_IDENTITY_UNKNOWN_KEY)
        return admit_refusal(g) ? http_error(g, 401, GW_RPC_INVALID_REQUEST, "unknown API key") : 0;
    return 1;
}

/* 414 for a request line, 431 for a header line over
 * server.max_header_line_bytes or a head over max_header_bytes; the
 * connection is closed after the answer (its read buffer grew with the
 * head). h2o read the head already: its own bound is H2O_MAX_REQLEN.
 * Returns 0 after answering. */
static int check_head(gw_req_t *g)
{
    gw_handler_t *h = g->h;
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
    gw_conns_linger(g->req->conn->callbacks->get_socket(g->req->conn)); /* a body may follow the head */
    return http_error(g, v.status, GW_RPC_INVALID_REQUEST, v.message);
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
    h2o_socket_t *sock = req->conn->callbacks->get_socket(req->conn);
    if (sock == NULL || sock->input == NULL)
        return 1;
    gw_framing_t verdict = gw_framing_check(sock->input->bytes, sock->input->size);
    if (verdict == GW_FRAMING_OK)
        return 1;
    uint64_t held;
    char tail[SL_LOG_HELD_MAX];
    if (sl_log_limit_pass(&g->h->log_framing, sl_now_ms(), REFUSAL_LOG_EVERY_MS, &held))
        sl_log_warn("refused a request with 400 and closed its connection: %s%s", gw_framing_message(verdict),
                    sl_log_held_text(held, tail));
    req->http1_is_persistent = 0;
    gw_conns_linger(sock);
    return http_error(g, 400, GW_RPC_INVALID_REQUEST, gw_framing_message(verdict));
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    gw_handler_t *h = (gw_handler_t *)self;
    gw_req_t *g = h2o_mem_alloc_shared(&req->pool, sizeof(*g), gw_req_dispose);
    memset(g, 0, sizeof(*g));
    g->req = req;
    g->h = h;
    g->start_us = sl_now_us();
    sl_buf_init(&g->reply.out);
    h->inflight++;
    h->served++;

    if (!check_framing(g) || !check_head(g))
        return 0;
    h2o_iovec_t netname, seg;
    if (!split_path(req->path_normalized, &netname, &seg) || (g->net = find_net(h, netname)) == NULL)
        return http_error(g, 404, GW_RPC_INVALID_REQUEST, "unknown network: use POST /{network} with a network "
                                                          "from the configuration");
    if (h2o_memis(req->method.base, req->method.len, H2O_STRLIT("OPTIONS"))) {
        gw_cors_preflight(req, h->cfg);
        return 0;
    }
    if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("POST"))) {
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, H2O_STRLIT("POST, OPTIONS"));
        return http_error(g, 405, GW_RPC_INVALID_REQUEST, "method not allowed: JSON-RPC takes POST");
    }
    if (!identify(g, seg))
        return 0;
    if (!is_json_content_type(req))
        return admit_refusal(g) ? http_error(g, 415, GW_RPC_INVALID_REQUEST, "unsupported content type: send application/json")
                                : 0;
    handle_rpc(g);
    return 0;
}

static void nets_init(gw_handler_t *h, pool_t *pool)
{
    const gw_config_t *cfg = h->cfg;
    h->nnets = cfg->nnetworks;
    h->nets = sl_xcalloc(cfg->nnetworks, sizeof(*h->nets));
    for (size_t i = 0; i < cfg->nnetworks; i++) {
        gw_net_t *n = &h->nets[i];
        n->index = i;
        n->conf = &cfg->networks[i];
        n->pool_net = pool_network_find(pool, n->conf->name, strlen(n->conf->name));
        if (n->conf->blocked_methods != NULL) {
            n->blocked = (const char *const *)n->conf->blocked_methods;
            n->nblocked = n->conf->nblocked_methods;
        } else {
            n->blocked = policy_method_default_blocked(n->conf->chain);
            for (n->nblocked = 0; n->blocked[n->nblocked] != NULL; n->nblocked++)
                ;
        }
    }
}

gw_handler_t *gw_handler_register(h2o_hostconf_t *hostconf, const gw_config_t *cfg, pool_t *pool, gw_stats_t *stats,
                                  gw_limit_t *limit, sl_budget_t *budget)
{
    h2o_pathconf_t *pathconf = h2o_config_register_path(hostconf, "/", 0);
    gw_handler_t *h = (gw_handler_t *)h2o_create_handler(pathconf, sizeof(*h));
    h->super.on_req = on_req;
    h->cfg = cfg;
    h->stats = stats;
    h->limit = limit;
    h->budget = budget;
    gw_buffered_init(&h->buffered, &cfg->server, budget, stats, req_held);
    nets_init(h, pool);
    return h;
}
