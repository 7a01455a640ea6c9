#include "server/srv_worker.h"

#include <malloc.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <h2o.h>

#include "admin/admin.h"
#include "base/sl_budget.h"
#include "base/sl_http.h"
#include "base/sl_log.h"
#include "base/sl_time.h"
#include "gateway/gw_conns.h"
#include "gateway/gw_early.h"
#include "gateway/gw_handler.h"
#include "gateway/gw_keys.h"
#include "policy/credit.h"
#include "server/srv_epapi.h"
#include "server/srv_reload.h"
#include "gateway/gw_tls.h"
#include "gateway/gw_ws.h"
#include "pool/pool.h"
#include "state/state.h"
#include "state/state_cache.h"
#include "state/state_cache_redis.h"
#include "state/state_cluster.h"
#include "state/state_key.h"

#define HOUSEKEEPING_MS 100
/* after the last request, keep serving briefly: a client may just have sent
 * one more request on a kept-alive connection */
#define DRAIN_LINGER_MS 300
/* at exit, how long queued access lines may wait for a full stderr */
#define ACCESS_FINAL_WAIT_MS 2000

typedef struct worker {
    const srv_worker_args_t *args;
    h2o_globalconf_t conf;
    h2o_globalconf_t admin_conf;
    h2o_context_t ctx;
    h2o_context_t admin_ctx;
    h2o_accept_ctx_t accept;
    h2o_accept_ctx_t admin_accept;
    SSL_CTX *ssl_ctx;             /* server.tls, both client listeners; NULL: plain TCP */
    gw_conns_t *conns;            /* both listeners, the client connections */
    sl_budget_t budget;           /* answer bytes held (server.max_buffered_bytes) */
    gw_handler_t *handler;
    pool_t *pool;
    state_t *state;
    state_cache_t *cache;         /* the response cache; NULL: off (or it could not open) */
    gw_stats_t *stats;
    gw_limit_t *limit;
    state_cluster_t *cluster;     /* NULL without cluster: */
    int draining;
    uint64_t access_dropped;      /* access lines dropped already counted in stats */
} worker_t;

static volatile sig_atomic_t stop_requested;

/* Lines the access log dropped since the last call go to /metrics. */
static void count_access_dropped(worker_t *w)
{
    uint64_t d = sl_log_access_dropped();
    if (d != w->access_dropped)
        gw_stats_srv_add(w->stats, STATE_SRV_ACCESS_DROPPED, d - w->access_dropped);
    w->access_dropped = d;
}

static void on_stop_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* Answers of tens of kilobytes are allocated and freed on every request; by
 * default glibc gives the top of the heap back to the kernel and takes it
 * again each time (a brk pair plus page faults on fresh zeroed pages, ~8% of
 * a worker's time on 20 KB answers). Keep what was once needed instead.
 * Blocks of 1 MiB and more (large answers, the read buffers they went
 * through) get mappings of their own, so their memory goes back to the
 * kernel as soon as they are freed: 40 answers of 4 MB held by stalled
 * clients would otherwise stay in the heap after those clients left. */
static void tune_malloc(void)
{
    mallopt(M_TRIM_THRESHOLD, 64 * 1024 * 1024);
    mallopt(M_TOP_PAD, 1024 * 1024);
    mallopt(M_MMAP_THRESHOLD, 1024 * 1024);
}

/* h2o keeps a socket buffer past 32 MiB (a large upstream answer) in a temp
 * file, by default under /tmp whatever TMPDIR says: follow TMPDIR, so an
 * operator can give large answers room of their own. A full or missing
 * folder fails the read (pool/ counts it as sluice's own failure, never the
 * endpoint's). */
static void use_tmpdir(void)
{
    const char *dir = getenv("TMPDIR");
    char template[sizeof(h2o_socket_buffer_mmap_settings.fn_template)];
    if (dir == NULL || dir[0] == '\0')
        return;
    int n = snprintf(template, sizeof(template), "%s/h2o.b.XXXXXX", dir);
    if (n > 0 && (size_t)n < sizeof(template))
        memcpy(h2o_socket_buffer_mmap_settings.fn_template, template, (size_t)n + 1);
}

static void setup_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* The master's listening socket fd (inherited; -1: none) accepted through
 * gw_conns; clients = 1 for the client listener. */
static int start_listener(worker_t *w, int fd, h2o_accept_ctx_t *actx, int clients)
{
    if (fd < 0)
        return -1;
    return gw_conns_listen(w->conns, fd, actx, clients);
}

static int is_ready(void *data, char *why, size_t why_len)
{
    worker_t *w = data;
    if (w->draining) {
        snprintf(why, why_len, "shutting down");
        return 0;
    }
    return 1;
}

static int request_reload(void *data, uint8_t tag)
{
    (void)data;
    return srv_reload_request(tag);
}

static void globalconf_init(h2o_globalconf_t *conf, size_t max_body, uint32_t idle_timeout_ms)
{
    h2o_config_init(conf);
    /* h2o's request timeout: a kept-alive connection idle this long, or a
     * request head and body not received within it, closes the connection */
    conf->http1.req_timeout = idle_timeout_ms;
    conf->server_name = h2o_iovec_init(H2O_STRLIT(SL_HTTP_SERVER_NAME));
    conf->max_request_entity_size = max_body;
    /* HTTP/2 is off: Debian's 2.2.5 lacks the later HTTP/2 DoS fixes */
    conf->http1.upgrade_to_http2 = 0;
}

/* server.tls: the context both client listeners accept with, and the
 * bounds of a TLS connection. A handshake (from the accept, ClientHello
 * included) has first_request_timeout_ms to finish, whatever the load:
 * h2o closes it then. HTTP/2 (by ALPN) keeps an idle connection as long
 * as HTTP/1.1 does and runs at most SRV_H2_MAX_STREAMS requests at once per
 * connection. HTTP/2 is opt-in (server.tls.http2): h2o 2.2.5 announces 100
 * streams and a 16 MiB window per stream whatever is set here, and buffers
 * each stream's body up to max_body_bytes, so one h2 connection may hold
 * 100 request bodies (measured: +56 MB RSS from one connection with 100
 * streams of 960 KiB never ended) where an HTTP/1 one holds one. The files were checked with the configuration; this load
 * can still fail (replaced since): the worker does not start, and a
 * reload fails with the running workers serving. */
#define SRV_H2_MAX_STREAMS 32
static int tls_setup(worker_t *w, const cfg_server_conf_t *srv)
{
    char why[512];
    if (srv->tls.cert_file == NULL)
        return 0;
    w->ssl_ctx = gw_tls_server_ctx(srv->tls.cert_file, srv->tls.key_file, srv->tls.http2, why, sizeof(why));
    if (w->ssl_ctx == NULL) {
        sl_log_error("server.tls: %s", why);
        return -1;
    }
    w->conf.handshake_timeout = srv->first_request_timeout_ms;
    w->conf.http2.idle_timeout = srv->idle_timeout_ms;
    w->conf.http2.max_concurrent_requests_per_connection = SRV_H2_MAX_STREAMS;
    return 0;
}

static void on_shared_change(void *data)
{
    pool_refresh(((worker_t *)data)->pool);
}

/* The cluster reads every endpoint's shared record when its link comes up,
 * and a change another host makes refreshes this worker's snapshot at once. */
static void cluster_watch(worker_t *w)
{
    const cfg_t *cfg = w->args->cfg;
    size_t n = 0;
    for (size_t i = 0; i < cfg->nnetworks; i++)
        n += cfg->networks[i].nendpoints;
    char **keys = sl_xcalloc(n ? n : 1, sizeof(*keys));
    size_t k = 0;
    for (size_t i = 0; i < cfg->nnetworks; i++)
        for (size_t e = 0; e < cfg->networks[i].nendpoints; e++) {
            keys[k] = sl_xmalloc(STATE_KEY_MAX);
            state_key_endpoint(keys[k++], STATE_KEY_MAX, cfg->networks[i].name, cfg->networks[i].endpoints[e].id);
        }
    state_cluster_watch(w->cluster, (const char *const *)keys, n);
    for (size_t i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
    /* the credit ledgers: merged with Redis on each return of it */
    char **ledgers = sl_xcalloc(n * POLICY_CREDIT_WINDOW_COUNT + 1, sizeof(*ledgers));
    size_t nl = 0;
    for (size_t i = 0; i < cfg->nnetworks; i++)
        for (size_t e = 0; e < cfg->networks[i].nendpoints; e++) {
            const pool_endpoint_conf_t *ep = &cfg->networks[i].endpoints[e];
            for (policy_credit_window_t win = 0; ep->has_credits && win < POLICY_CREDIT_WINDOW_COUNT; win++) {
                if (policy_credit_budget(&ep->credits, win) == 0)
                    continue;
                ledgers[nl] = sl_xmalloc(STATE_KEY_MAX);
                state_key_ledger(ledgers[nl++], STATE_KEY_MAX, cfg->networks[i].name, ep->id,
                                 policy_credit_window_name(win));
            }
        }
    state_cluster_watch_ledgers(w->cluster, (const char *const *)ledgers, nl);
    for (size_t i = 0; i < nl; i++)
        free(ledgers[i]);
    free(ledgers);
    state_cluster_on_change(w->cluster, on_shared_change, w);
    state_cluster_epapi_on_change(w->cluster, srv_epapi_changed, NULL);
    state_cluster_events_worker(w->cluster, w->args->index == 1);
}

/* A key revoked through /admin/keys: its sockets close (gw_keys.h). */
static void on_key_revoked(void *data)
{
    worker_t *w = data;
    gw_ws_sweep_revoked(w->handler->ws, w->handler->keys);
}

/* The config's keys and tier names as /admin/keys needs them (for the
 * worker's life). */
static void admin_keys_info(const cfg_t *cfg, admin_conf_t *ac)
{
    admin_key_info_t *keys = sl_xcalloc(cfg->nkeys ? cfg->nkeys : 1, sizeof(*keys));
    for (size_t i = 0; i < cfg->nkeys; i++)
        keys[i] = (admin_key_info_t){cfg->keys[i].name, cfg->keys[i].tier, &cfg->keys[i].scope,
                                     {cfg->keys[i].per_address.limits.per_second,
                                      cfg->keys[i].per_address.limits.per_minute,
                                      cfg->keys[i].per_address.limits.per_day},
                                     {cfg->keys[i].credits.limits.per_day, cfg->keys[i].credits.limits.per_month},
                                     cfg->keys[i].jwt.public_key_file != NULL,
                                     cfg->keys[i].jwt.audience};
    char **tiers = sl_xcalloc(cfg->ntiers ? cfg->ntiers : 1, sizeof(*tiers));
    for (size_t i = 0; i < cfg->ntiers; i++)
        tiers[i] = cfg->tiers[i].name;
    ac->config_keys = keys;
    ac->nconfig_keys = cfg->nkeys;
    ac->tiers = tiers;
    ac->ntiers = cfg->ntiers;
}

/* GET /admin/config's body, rendered once for the worker's life (a reload
 * starts new workers, which render theirs). */
static const char *config_text(const cfg_t *cfg)
{
    sl_buf_t b = SL_BUF_INIT;
    cfg_json(cfg, &b);
    return sl_buf_steal(&b, NULL);
}

/* The admin listener, on the worker's loop, with its own h2o config. */
static int admin_setup(worker_t *w, const cfg_t *cfg)
{
    globalconf_init(&w->admin_conf, 64 * 1024, cfg->server.idle_timeout_ms);
    h2o_hostconf_t *ahost =
        h2o_config_register_host(&w->admin_conf, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    admin_conf_t ac = {.token = cfg->admin.token,
                       .listen = cfg->admin.listen,
                       .bound = w->args->admin_addr.text,
                       .networks = cfg->networks,
                       .nnetworks = cfg->nnetworks,
                       .state = w->state,
                       .nworkers = w->args->nslots,
                       .loop = w->ctx.loop,
                       .ready = is_ready,
                       .reload = request_reload,
                       .data = w,
                       .cluster_host = cfg->has_cluster ? cfg->cluster.host : NULL,
                       .max_streams = cfg->admin.max_streams,
                       .heartbeat_ms = cfg->admin.heartbeat_ms,
                       .cache = w->cache,
                       .epapi_check = srv_epapi_check,
                       .epapi_notify = srv_epapi_notify,
                       .epapi_data = (void *)cfg,
                       .config_json = config_text(cfg)};
    admin_keys_info(cfg, &ac);
    admin_register(ahost, &ac);
    h2o_context_init(&w->admin_ctx, w->ctx.loop, &w->admin_conf);
    w->admin_accept = (h2o_accept_ctx_t){.ctx = &w->admin_ctx, .hosts = w->admin_conf.hosts};
    if (start_listener(w, w->args->admin_fd, &w->admin_accept, 0) != 0)
        return -1;
    return 0;
}

static int worker_setup(worker_t *w)
{
    const cfg_t *cfg = w->args->cfg;
    globalconf_init(&w->conf, cfg->server.max_body_bytes, cfg->server.idle_timeout_ms);
    w->conf.server_name = h2o_iovec_init("", 0); /* sl_http_send_parts writes it (base/sl_http.h) */
    h2o_hostconf_t *host = h2o_config_register_host(&w->conf, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    gw_early_register(host, &cfg->server);
    if (tls_setup(w, &cfg->server) != 0)
        return -1;
    h2o_context_init(&w->ctx, h2o_evloop_create(), &w->conf);
    if (state_open(&(state_conf_t){cfg->state.path, cfg->state.map_size_mb, cfg->state.event_max_count,
                                   cfg->state.event_max_age_hours * 3600, cfg->state.max_limit_cells},
                   &w->state) != SL_OK)
        return -1;
    if (cfg->cache.enabled &&
        state_cache_open(&(state_cache_conf_t){cfg->cache.path, cfg->cache.max_mb}, &w->cache) != SL_OK)
        w->cache = NULL; /* the master said why at start; answers just go upstream */
    if (cfg->has_cluster)
        w->cluster = state_cluster_create(&cfg->cluster, w->ctx.loop, &w->ctx.receivers.hostinfo_getaddr, w->state);
    if (w->cache != NULL && w->cluster != NULL && cfg->cache.redis)
        state_cache_tier_set(w->cache, w->cluster,
                             &(state_cache_redis_conf_t){cfg->cache.redis_ttl_s, cfg->cache.redis_wait_ms});
    pool_params_t pp = {
        .loop = w->ctx.loop,
        .getaddr_receiver = &w->ctx.receivers.hostinfo_getaddr,
        .networks = cfg->networks,
        .nnetworks = cfg->nnetworks,
        .nworkers = w->args->nworkers,
        .max_response_bytes = cfg->server.max_response_bytes,
        .state = w->state,
        .slot = w->args->slot,
        .refresh_ms = cfg->state.refresh_ms,
        .flush_ms = cfg->state.flush_ms,
        .budget = &w->budget,
        .cache = w->cache,
        .cache_unfinalized = (uint8_t)cfg->cache.unfinalized,
        .cache_admit = cfg_cache_admit_conf(&cfg->cache),
        .on_grow = gw_exec_answer_grows,
    };
    if (pool_create(&pp, &w->pool) != SL_OK)
        return -1;
    if (w->cluster != NULL)
        cluster_watch(w);
    w->stats = gw_stats_create(cfg, w->state, w->args->slot);
    w->limit = gw_limit_create(cfg, w->state);
    w->handler = gw_handler_register(host, cfg, w->pool, w->stats, w->limit, &w->budget);
    w->handler->ws = gw_ws_create(w->handler, w->ctx.loop, &cfg->server, w->stats, w->state);
    w->handler->keys = gw_keys_create(w->ctx.loop, cfg, w->state, on_key_revoked, w);
    w->conns = gw_conns_create(w->ctx.loop, &cfg->server, cfg->admin.max_connections, w->stats);
    w->accept = (h2o_accept_ctx_t){.ctx = &w->ctx, .hosts = w->conf.hosts, .ssl_ctx = w->ssl_ctx};
    if (start_listener(w, w->args->main_fd, &w->accept, 1) != 0)
        return -1;
    /* the second listener serves the same handler: WebSocket, and plain
     * HTTP as the main one does (a client told "port + 1" may POST there) */
    if (w->args->has_ws && start_listener(w, w->args->ws_fd, &w->accept, 1) != 0)
        return -1;

    if (w->args->has_admin && admin_setup(w, cfg) != 0)
        return -1;
    return 0;
}

static int no_keepalive(h2o_req_t *req, void *data)
{
    (void)data;
    req->http1_is_persistent = 0;
    return 0;
}

/* h2o 2.2.5 turns keep-alive off only for requests that arrive after the
 * shutdown request: the ones already being handled are told here, so every
 * kept-alive connection closes after its current answer. */
static void shutdown_ctx(h2o_context_t *ctx)
{
    h2o_context_request_shutdown(ctx);
    ctx->globalconf->http1.callbacks.foreach_request(ctx, no_keepalive, NULL);
}

static int count_connection(h2o_req_t *req, void *data)
{
    (void)req;
    (*(size_t *)data)++;
    return 0;
}

/* HTTP/1 connections still open, client and admin. */
static size_t open_connections(worker_t *w)
{
    size_t n = 0;
    w->conf.http1.callbacks.foreach_request(&w->ctx, count_connection, &n);
    if (w->args->has_admin)
        w->admin_conf.http1.callbacks.foreach_request(&w->admin_ctx, count_connection, &n);
    return n;
}

/* Stops accepting, lets in-flight requests finish, bounded by the grace period. */
static void worker_drain(worker_t *w)
{
    const cfg_t *cfg = w->args->cfg;
    w->draining = 1;
    gw_conns_stop_accepting(w->conns);
    shutdown_ctx(&w->ctx);
    if (w->args->has_admin)
        shutdown_ctx(&w->admin_ctx);
    gw_ws_shutdown(w->handler->ws); /* 1001 once each socket's calls are answered */
    uint64_t start = sl_now_ms(), deadline = start + cfg->server.shutdown_grace_ms;
    uint64_t waiting = w->handler->inflight;
    if (waiting > 0)
        sl_log_info("draining %llu request(s) in flight (grace %u ms)", (unsigned long long)waiting,
                    cfg->server.shutdown_grace_ms);
    uint64_t quiet_since = start, served = w->handler->served;
    for (;;) {
        uint64_t now = sl_now_ms();
        if (w->handler->served != served) {
            served = w->handler->served;
            quiet_since = now;
        }
        if (w->handler->inflight == 0 && gw_ws_open(w->handler->ws) == 0 &&
            (now - quiet_since >= DRAIN_LINGER_MS || open_connections(w) == 0))
            break;
        if (now >= deadline) {
            sl_log_warn("grace period over with %llu request(s) still in flight",
                        (unsigned long long)w->handler->inflight);
            break;
        }
        h2o_evloop_run(w->ctx.loop, 20);
        sl_log_flush();
    }
}

int srv_worker_main(const srv_worker_args_t *args)
{
    const cfg_t *cfg = args->cfg;
    char proc[32];
    snprintf(proc, sizeof(proc), "worker %u", args->index);
    sl_log_setup((sl_log_level_t)cfg->log.level, cfg->log.json ? SL_LOG_JSON : SL_LOG_TEXT, proc);
    sl_log_access_setup(cfg->server.access_log_buffer_bytes);
    setup_signals();
    tune_malloc();
    use_tmpdir();
    srandom((unsigned)getpid() ^ (unsigned)sl_now_us()); /* backoff jitter differs per worker */

    worker_t w;
    memset(&w, 0, sizeof(w));
    w.args = args;
    w.budget.limit = cfg->server.max_buffered_bytes;
    if (worker_setup(&w) != 0) {
        sl_log_error("worker setup failed");
        return 1;
    }
    if (args->ready_fd >= 0) {
        /* for tests only: a worker slow to come up, to time what the master
         * does meanwhile (tests/integration/reload.test.mjs) */
        const char *delay = getenv("SLUICE_TEST_READY_DELAY_MS");
        if (delay != NULL)
            usleep((useconds_t)(strtoul(delay, NULL, 10) % 60000) * 1000);
        ssize_t wr = write(args->ready_fd, "r", 1);
        (void)wr; /* the master notices a missing byte as a failed start */
        close(args->ready_fd);
    }
    sl_log_debug("serving on %s", args->main_addr.text);
    uint64_t last_flush = sl_now_ms(), last_cluster_put = last_flush;
    while (!stop_requested) {
        h2o_evloop_run(w.ctx.loop, HOUSEKEEPING_MS);
        uint64_t now = sl_now_ms();
        if (now - last_flush >= HOUSEKEEPING_MS) {
            sl_log_flush();
            count_access_dropped(&w);
            gw_stats_srv_set(w.stats, STATE_SRV_BUFFERED_BYTES, w.budget.used);
            gw_stats_srv_set(w.stats, STATE_SRV_BUFFERED_PEAK, w.budget.peak);
            if (cfg->state.flush_ms != 0)
                gw_stats_flush(w.stats);
            if (w.cluster != NULL && now - last_cluster_put >= 1000) {
                if (state_cluster_counters_put(w.cluster, args->slot) != SL_OK)
                    sl_log_debug("cluster: cannot write this worker's command count");
                last_cluster_put = now;
            }
            last_flush = now;
        }
    }
    worker_drain(&w);
    if (gw_limit_failures(w.limit) != 0)
        sl_log_warn("rate limiter: shared cells failed %llu time(s); %llu call(s) were decided by this worker's "
                    "share of the limits", (unsigned long long)gw_limit_failures(w.limit),
                    (unsigned long long)state_degraded_decisions(w.state, STATE_PART_LIMITS));
    sl_log_flush_final(ACCESS_FINAL_WAIT_MS);
    count_access_dropped(&w);
    gw_stats_flush(w.stats);
    if (w.handler->inflight == 0) { /* else calls still reference the pool: just exit */
        pool_destroy(w.pool);
        state_cache_close(w.cache);
    } else
        pool_close_idle(w.pool);
    gw_ws_destroy(w.handler->ws);
    gw_conns_destroy(w.conns);
    gw_keys_destroy(w.handler->keys); /* after the connections: their calls may name a key */
    SSL_CTX_free(w.ssl_ctx); /* connections still open hold their own reference */
    gw_limit_destroy(w.limit);
    gw_stats_destroy(w.stats);
    state_cluster_destroy(w.cluster);
    state_close(w.state);
    return 0;
}
