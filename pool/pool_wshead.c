/* pool/pool_wshead.c: heads from an endpoint's WebSocket (ws_url), for the
 * chain view (pool_net.h says what; pool_ws.c is the socket).
 *
 * The probes move a network's head every probe_interval_ms; a node tells its
 * subscribers of a new block as it has it. So for each endpoint with a
 * ws_url one worker per host (the holder, claimed in the endpoint's shared
 * record and renewed every tick it lives; with cluster:, on the host that
 * holds the endpoint's lease only, which publishes each head to the other
 * hosts: pool_lease.c) keeps a stream subscribed to
 * newHeads (Solana: slotSubscribe) and feeds each head to its own view at
 * once, as a probe answer would be (Ethereum: with its hash, into the ring;
 * a head that would reorg the ring or leave a gap in it is read over HTTP
 * at its height first, and dropped, counted and the stream closed when the
 * read does not confirm it: one endpoint's socket is not the chain's word),
 * and to the shared record, from which every other worker's view takes it
 * at its next tick (pool_chain_refresh, pool_chainprobe_feed). The stream
 * is an addition: the probes run as ever, and while it is down nothing
 * else changes.
 *
 * Deadlines are checked on the tick (~50 ms), decided by policy/wsstream.h:
 * the Upgrade and the subscription's answer within connect + first byte; a
 * head within ws_stall_ms; some bytes (a pong at least) within
 * POLICY_WS_SILENT_MS of each other. A stream that misses one, says
 * something malformed, or closes is reopened after a backoff with jitter
 * (250 ms doubling to 30 s; back to 250 ms once a stream gave a head). */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "pool/pool_net.h"
#include "wire/envelope.h"
#include "wire/json_scan.h"

typedef struct pool_wshead {
    pool_endpoint_t *ep;
    pool_endpoint_conf_t conf;    /* the endpoint's, with the ws_url (in its http form) as url */
    pool_link_t link;
    int link_ok;
    pool_ws_t ws;
    uint8_t holder;               /* this worker holds the stream */
    uint8_t subscribed;           /* the subscription was confirmed */
    uint8_t state;                /* STATE_WS_*, as last written to the shared record */
    uint8_t lost_reported;        /* the last loss had its event (a connect after it gets one) */
    uint8_t refused_reported;     /* the socket's wrong chain had its event (again after a connect) */
    uint64_t renewed_ms;          /* shared time: the claim last renewed */
    uint64_t began_ms;            /* monotonic: this try started */
    uint64_t next_try_ms;         /* monotonic: the next try */
    uint32_t backoff_ms;
    uint64_t last_head_ms;        /* monotonic: the last head (or the stream's opening) */
    uint64_t ping_ms;             /* monotonic: the last ping */
    uint64_t lost_event_ms;       /* monotonic: the last upstream_ws_lost event */
    uint64_t alive_checked_ms;    /* monotonic: the holder's pid last looked for */
    uint32_t lost_held;           /* losses since, not in an event */
    /* a pushed head that would move the ring otherwise than by one block,
       read over HTTP at its height before it is believed */
    pool_exchange_t confirm;
    uint8_t confirming;           /* the read is out: other such heads meanwhile are dropped */
    uint64_t confirm_at_ms;       /* monotonic: the last read started */
    uint64_t confirm_height;
    char confirm_hash[67], confirm_parent[67];
    char confirm_req[128];
    /* the newest such head that came while a read was out or too soon after
       one: read next (a reorg's heads come together; the last tells it) */
    uint8_t pending;
    uint64_t pending_height;
    char pending_hash[67], pending_parent[67];
    pool_delay_t confirm_later;   /* the pending head's read, once POOL_WS_CONFIRM_MS has passed */
} pool_wshead_t;

static const char eth_sub[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_subscribe\",\"params\":[\"newHeads\"]}";
static const char sol_sub[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"slotSubscribe\"}";

static int is_solana(const pool_wshead_t *w)
{
    return w->ep->net->conf->chain == POLICY_CHAIN_SOLANA;
}

static uint32_t stall_ms(const pool_wshead_t *w)
{
    return policy_ws_stall_ms(w->ep->net->conf->chain, w->ep->net->conf->ws_stall_ms);
}

/* ---- the shared record ----------------------------------------------------- */

typedef struct share_ctx {
    uint32_t pid;
    uint32_t dead;                /* a holder's pid found dead: its claim is void now */
    uint64_t now;
    int claim;                    /* claim or renew (fails if another live worker holds it) */
    int release;
    int state;                    /* STATE_WS_*, or -1: unchanged */
    uint64_t head;                /* a head to write (0: none) */
    const char *hash, *parent;
    int unconfirmed;              /* a pushed head the HTTP read did not confirm: counted */
} share_ctx_t;

static int share_cb(void *arg, state_endpoint_rec_t *rec, int exists, state_event_t *events, size_t *nevents)
{
    share_ctx_t *c = arg;
    (void)exists;
    (void)events;
    (void)nevents;
    int mine = rec->ws_pid == c->pid;
    if (c->claim && !mine && rec->ws_pid != 0 && rec->ws_renew_ms > c->now && rec->ws_pid != c->dead)
        return 0;
    if (!c->claim && !mine)
        return 0; /* no longer ours: the new holder writes */
    if (c->release) {
        rec->ws_pid = 0;
        rec->ws_renew_ms = 0;
        rec->ws_state = STATE_WS_NONE;
        return 1;
    }
    rec->ws_pid = c->pid;
    rec->ws_renew_ms = c->now + POOL_WS_CLAIM_MS;
    if (c->state >= 0)
        rec->ws_state = (uint8_t)c->state;
    rec->ws_unconfirmed += (uint64_t)c->unconfirmed;
    if (c->head != 0) {
        (void)pool_chain_head_write(rec, c->head, 1, c->now); /* a pushed head: the endpoint's own */
        rec->ws_heads++;
        rec->ws_head_at_ms = c->now;
        if (c->hash != NULL) { /* the other workers' rings, as the chain probe shares its tip */
            rec->hash_height = c->head;
            snprintf(rec->head_hash, sizeof(rec->head_hash), "%s", c->hash);
            snprintf(rec->head_parent, sizeof(rec->head_parent), "%s", c->parent != NULL ? c->parent : "");
            rec->chain_at_ms = c->now;
        }
    }
    return 1;
}

/* Writes c into the endpoint's record; 0 if the stream is not (or no
 * longer) this worker's. */
static int share(pool_wshead_t *w, share_ctx_t *c)
{
    pool_endpoint_t *ep = w->ep;
    state_endpoint_rec_t out;
    int changed = 0;
    c->pid = (uint32_t)getpid();
    c->now = sl_shared_ms();
    if (state_endpoint_update_local(ep->net->pool->state, ep->health.key, share_cb, c, &changed, &out) != SL_OK)
        return w->holder; /* state is failing: keep what we have */
    if (!changed)
        return 0;
    ep->health.shared = out;
    if (c->head != 0) { /* this worker's view has it already */
        ep->chain_fed_ms = out.head_at_ms;
        ep->chain_fed_at = out.chain_at_ms;
        pool_lease_publish(ep, &out, c->now); /* cluster: the other hosts apply it */
    }
    w->renewed_ms = c->now;
    return 1;
}

static void set_state(pool_wshead_t *w, int state)
{
    share_ctx_t c = {.state = state};
    w->state = (uint8_t)state;
    if (!share(w, &c))
        w->holder = 0;
}

/* ---- events ----------------------------------------------------------------- */

static void ws_event(pool_wshead_t *w, state_event_kind_t kind, const char *reason, uint64_t count)
{
    pool_endpoint_t *ep = w->ep;
    state_event_t ev;
    state_event_init(&ev, kind, ep->net->conf->name, ep->conf->id, sl_shared_ms());
    ev.count = count;
    snprintf(ev.reason, sizeof(ev.reason), "%s", reason);
    if (state_event_append(ep->net->pool->state, &ev) != SL_OK)
        sl_log_warn("endpoint %s/%s: could not record %s", ep->net->conf->name, ep->conf->id,
                    state_event_kind_name(kind));
}

/* ---- the stream ------------------------------------------------------------- */

/* The stream ended (why: fixed text, never the URL): reported, and tried
 * again after the backoff. */
static void stream_lost(pool_wshead_t *w, const char *why)
{
    pool_endpoint_t *ep = w->ep;
    uint64_t mono = sl_now_ms();
    int was_up = w->subscribed;
    pool_ws_close(&w->ws);
    w->subscribed = 0;
    w->pending = 0; /* a head of the stream that ended: the next one starts afresh */
    pool_delay_cancel(&w->confirm_later);
    w->next_try_ms = mono + policy_ws_retry_ms(&w->backoff_ms, (uint32_t)random());
    if (w->holder)
        set_state(w, STATE_WS_DOWN);
    if (w->lost_event_ms != 0 && mono - w->lost_event_ms < POOL_WS_LOST_EVENT_MS) {
        w->lost_held++;
        return;
    }
    char reason[200];
    snprintf(reason, sizeof(reason), "%s: %s (%s; %" PRIu32 " more since the last report)", ep->conf->id, why,
             was_up ? "heads come from the probes until it is back" : "not connected", w->lost_held);
    sl_log_warn("endpoint %s/%s: WebSocket stream lost: %s", ep->net->conf->name, ep->conf->id, why);
    ws_event(w, STATE_EVENT_UPSTREAM_WS_LOST, reason, w->lost_held + 1);
    w->lost_event_ms = mono;
    w->lost_held = 0;
    w->lost_reported = 1;
}

/* The socket answered another chain than the network's (pool_ws_check_chain):
 * its heads would move the view to another chain's, so it is closed before
 * subscribing and tried again after the backoff, as a lost one is; one
 * event and warning until a socket is subscribed again. */
static void stream_refused(pool_wshead_t *w, const char *why)
{
    pool_endpoint_t *ep = w->ep;
    pool_ws_close(&w->ws);
    w->subscribed = 0;
    w->next_try_ms = sl_now_ms() + policy_ws_retry_ms(&w->backoff_ms, (uint32_t)random());
    if (w->holder)
        set_state(w, STATE_WS_WRONG_CHAIN);
    if (w->refused_reported)
        return;
    char reason[200];
    snprintf(reason, sizeof(reason), "%s: ws_url refused: %s (heads come from the probes)", ep->conf->id, why);
    sl_log_warn("endpoint %s/%s: WebSocket refused: %s", ep->net->conf->name, ep->conf->id, why);
    ws_event(w, STATE_EVENT_UPSTREAM_WS_WRONG_CHAIN, reason, 0);
    w->refused_reported = 1;
    w->lost_reported = 1; /* the next subscription is told */
}

static void on_ws_closed(pool_ws_t *ws, const char *why)
{
    if (ws->wrong_chain)
        stream_refused(ws->data, why);
    else
        stream_lost(ws->data, why);
}

static void on_ws_open(pool_ws_t *ws)
{
    pool_wshead_t *w = ws->data;
    int sol = is_solana(w);
    if (!pool_ws_send_text(ws, sol ? sol_sub : eth_sub, sol ? sizeof(sol_sub) - 1 : sizeof(eth_sub) - 1))
        stream_lost(w, "the subscription could not be sent");
}

/* The subscription's answer: the stream is up. */
static void subscribed(pool_wshead_t *w)
{
    w->subscribed = 1;
    w->last_head_ms = w->ping_ms = sl_now_ms(); /* the stall and the pings count from here */
    set_state(w, STATE_WS_CONNECTED);
    if (w->lost_reported || w->lost_event_ms == 0) { /* logged as its event is: not every reconnect */
        sl_log_info("endpoint %s/%s: WebSocket stream subscribed to %s", w->ep->net->conf->name, w->ep->conf->id,
                    is_solana(w) ? "slots" : "new heads");
        char reason[160];
        snprintf(reason, sizeof(reason), "%s: subscribed to %s", w->ep->conf->id,
                 is_solana(w) ? "slotSubscribe" : "newHeads");
        ws_event(w, STATE_EVENT_UPSTREAM_WS_CONNECTED, reason, 0);
        w->lost_reported = 0;
        w->refused_reported = 0;
        if (w->lost_event_ms == 0)
            w->lost_event_ms = 1; /* the first connect reported; later ones follow a reported loss */
    }
}

/* A height: a hex string (Ethereum) or a number (Solana). */
static int height_of(const char *buf, wire_span_t v, uint64_t *out)
{
    int64_t n;
    char hex[24], *end;
    if (v.len == 0)
        return 0;
    if (wire_json_kind(buf, v) == WIRE_JSON_NUMBER)
        return wire_json_int64(buf, v, &n) == SL_OK && n > 0 && (*out = (uint64_t)n, 1);
    if (wire_json_string(buf, v, hex, sizeof(hex)) != SL_OK || strncmp(hex, "0x", 2) != 0 || hex[2] == '\0')
        return 0;
    *out = strtoull(hex + 2, &end, 16);
    return *end == '\0' && *out > 0;
}

/* A head the stream or its confirmation gave: into this worker's view and
 * the shared record. */
static void head_share(pool_wshead_t *w, uint64_t height, const char *hash, const char *parent)
{
    share_ctx_t c = {.state = -1, .head = height, .hash = strlen(hash) == 66 ? hash : NULL,
                     .parent = strlen(parent) == 66 ? parent : NULL};
    if (!share(w, &c)) {
        w->holder = 0;
        pool_ws_close(&w->ws);
    }
}

static void head_feed(pool_wshead_t *w, uint64_t height, const char *hash, const char *parent)
{
    pool_chainprobe_observe_tip(w->ep, height, hash[0] ? hash : NULL, parent[0] ? parent : NULL);
    head_share(w, height, hash, parent);
}

static void on_confirm_done(pool_exchange_t *ex);

static void on_confirm_later(pool_delay_t *d);

/* Keeps the head as the one to read next (the newest wins); its read starts
 * when the one out is done, or once POOL_WS_CONFIRM_MS has passed. */
static void confirm_defer(pool_wshead_t *w, uint64_t height, const char *hash, const char *parent, uint64_t wait_ms)
{
    if (!w->pending || height >= w->pending_height) {
        w->pending = 1;
        w->pending_height = height;
        snprintf(w->pending_hash, sizeof(w->pending_hash), "%s", hash);
        snprintf(w->pending_parent, sizeof(w->pending_parent), "%s", parent);
    }
    if (!w->confirming && !h2o_linklist_is_linked(&w->confirm_later.link))
        pool_delay_add(&w->ep->net->pool->t.delays, &w->confirm_later, (uint32_t)wait_ms, on_confirm_later);
}

/* A pushed head that would reorg the ring (or leave a gap in it) is not
 * believed on the stream's word: the endpoint's url is read at that height
 * (eth_getBlockByNumber) first. One read at a time and one per
 * POOL_WS_CONFIRM_MS; such heads meanwhile wait, the newest only, for the
 * next read (a reorg pushes its heads together: the last one tells it). */
static void confirm_start(pool_wshead_t *w, uint64_t height, const char *hash, const char *parent)
{
    pool_endpoint_t *ep = w->ep;
    uint64_t mono = sl_now_ms();
    if (w->confirming || mono - w->confirm_at_ms < POOL_WS_CONFIRM_MS) {
        confirm_defer(w, height, hash, parent,
                      w->confirming ? POOL_WS_CONFIRM_MS : POOL_WS_CONFIRM_MS - (mono - w->confirm_at_ms));
        return; /* one read at a time, and a stream of such heads costs one read per POOL_WS_CONFIRM_MS */
    }
    w->confirm_at_ms = mono;
    w->confirm_height = height;
    snprintf(w->confirm_hash, sizeof(w->confirm_hash), "%s", hash);
    snprintf(w->confirm_parent, sizeof(w->confirm_parent), "%s", parent);
    int n = snprintf(w->confirm_req, sizeof(w->confirm_req), "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                     "\"eth_getBlockByNumber\",\"params\":[\"0x%" PRIx64 "\",false]}", height);
    if (ep->net->pool->t.ops->start(&w->confirm, &ep->link, w->confirm_req, (size_t)n, 0, on_confirm_done, w) ==
        POOL_FAIL_NONE)
        w->confirming = 1;
}

/* The read's block hash into out ("": no answer that says one). */
static void confirm_read(const pool_exchange_t *ex, char out[80])
{
    const char *body = pool_exchange_bytes(ex);
    wire_envelope_t env;
    out[0] = '\0';
    if (ex->fail != POOL_FAIL_NONE || ex->head.status < 200 || ex->head.status >= 300 ||
        wire_envelope_scan(body, pool_exchange_len(ex), &env) != SL_OK || env.error.len != 0 || env.result.len == 0)
        return;
    if (wire_json_kind(body, env.result) == WIRE_JSON_NULL) {
        snprintf(out, 80, "null"); /* no block at that height (yet) */
        return;
    }
    wire_span_t h = wire_json_kind(body, env.result) == WIRE_JSON_OBJECT ? wire_json_member(body, env.result, "hash")
                                                                        : (wire_span_t){0};
    if (h.len == 0 || wire_json_string(body, h, out, 80) != SL_OK)
        out[0] = '\0';
}

/* The pending head's turn. */
static void on_confirm_later(pool_delay_t *d)
{
    pool_wshead_t *w = H2O_STRUCT_FROM_MEMBER(pool_wshead_t, confirm_later, d);
    if (!w->pending || w->confirming || w->ws.state == POOL_WS_CLOSED)
        return;
    w->pending = 0;
    confirm_start(w, w->pending_height, w->pending_hash, w->pending_parent);
}

static void on_confirm_done(pool_exchange_t *ex)
{
    pool_wshead_t *w = ex->data;
    pool_endpoint_t *ep = w->ep;
    char got[80];
    w->confirming = 0;
    confirm_read(ex, got);
    pool_exchange_body_dispose(ex);
    if (w->pending && !h2o_linklist_is_linked(&w->confirm_later.link)) /* the next read after the window */
        pool_delay_add(&ep->net->pool->t.delays, &w->confirm_later, POOL_WS_CONFIRM_MS, on_confirm_later);
    /* the read failed, or the url has no block there (yet: its backend may be
       behind the socket's node): the head is dropped, the stream not blamed */
    if (got[0] == '\0' || strcmp(got, "null") == 0)
        return;
    if (strcasecmp(got, w->confirm_hash) == 0 || w->confirm_hash[0] == '\0') {
        head_feed(w, w->confirm_height, w->confirm_hash, w->confirm_parent);
        return;
    }
    share_ctx_t c = {.state = -1, .unconfirmed = 1};
    if (!share(w, &c))
        w->holder = 0;
    char why[160];
    snprintf(why, sizeof(why), "a pushed head at height %" PRIu64 " that its url does not confirm (dropped; the stream "
             "is distrusted)", w->confirm_height);
    sl_log_debug("endpoint %s/%s: %s", ep->net->conf->name, ep->conf->id, why);
    if (w->ws.state != POOL_WS_CLOSED)
        stream_lost(w, why);
}

/* One head of the stream: Ethereum's with its hash, confirmed first when
 * it would move the ring otherwise than by one block. */
static void head_seen(pool_wshead_t *w, const char *buf, wire_span_t result)
{
    pool_endpoint_t *ep = w->ep;
    uint64_t height = 0, slot = 0;
    char hash[80] = "", parent[80] = "";
    int sol = is_solana(w);
    /* Solana: the root is what a probe's getSlot (finalized) reads; the slot is the latest */
    if (!height_of(buf, wire_json_member(buf, result, sol ? "root" : "number"), &height) ||
        (sol && !height_of(buf, wire_json_member(buf, result, "slot"), &slot))) {
        stream_lost(w, "a notification without a head");
        return;
    }
    w->last_head_ms = sl_now_ms();
    if (sol) {
        w->backoff_ms = 0;
        uint64_t now = sl_shared_ms();
        pool_chain_observe_head(ep, pool_chain_probe_kind(ep->net), height, now);
        if (pool_chain_probe_kind(ep->net) != POLICY_HEAD_LATEST)
            pool_chain_observe_head(ep, POLICY_HEAD_LATEST, slot, now);
        head_share(w, height, "", "");
        return;
    }
    wire_span_t h = wire_json_member(buf, result, "hash"), p = wire_json_member(buf, result, "parentHash");
    if (h.len == 0 || wire_json_string(buf, h, hash, sizeof(hash)) != SL_OK || strlen(hash) != 66)
        hash[0] = '\0';
    if (p.len == 0 || wire_json_string(buf, p, parent, sizeof(parent)) != SL_OK || strlen(parent) != 66)
        parent[0] = '\0';
    if (pool_chainprobe_unconfirmed(ep, height, hash[0] ? hash : NULL, parent[0] ? parent : NULL)) {
        confirm_start(w, height, hash, parent);
        return;
    }
    w->backoff_ms = 0; /* a head that extends the ring: the stream is good */
    head_feed(w, height, hash, parent);
}

static void on_ws_message(pool_ws_t *ws, const char *msg, size_t len)
{
    pool_wshead_t *w = ws->data;
    wire_envelope_t env;
    if (wire_envelope_scan(msg, len, &env) != SL_OK) {
        stream_lost(w, "a malformed message");
        return;
    }
    if (env.id.len != 0 && !w->subscribed) {
        if (env.error.len != 0 || env.result.len == 0)
            stream_lost(w, "the upstream refused the subscription");
        else
            subscribed(w);
        return;
    }
    if (env.params.len == 0 || wire_json_kind(msg, env.params) != WIRE_JSON_OBJECT)
        return; /* an answer or a notice we did not ask for */
    wire_span_t result = wire_json_member(msg, env.params, "result");
    if (!w->subscribed || result.len == 0 || wire_json_kind(msg, result) != WIRE_JSON_OBJECT) {
        stream_lost(w, "a malformed notification");
        return;
    }
    head_seen(w, msg, result);
}

static const pool_ws_cbs_t ws_cbs = {on_ws_open, on_ws_message, on_ws_closed};

/* ---- the tick --------------------------------------------------------------- */

static void stream_try(pool_wshead_t *w, uint64_t mono)
{
    if (pool_dns_pending(&w->link))
        return; /* the host name's first lookup: tried again on the next tick */
    w->began_ms = mono;
    set_state(w, STATE_WS_CONNECTING);
    if (!w->holder)
        return;
    const char *why = pool_ws_open(&w->ws, &w->link, POOL_WS_MAX_MESSAGE, &ws_cbs, w);
    if (why != NULL)
        stream_lost(w, why);
    else
        pool_ws_check_chain(&w->ws, w->ep->net->conf->chain, w->ep->net->chain_want);
}

/* The deadlines of an open or opening stream. */
static void stream_check(pool_wshead_t *w, uint64_t mono)
{
    const pool_timeouts_t *t = &w->ep->net->conf->timeouts;
    uint32_t handshake = t->connect_ms + t->first_byte_ms;
    policy_ws_times_t times = {.began_ms = w->began_ms, .last_head_ms = w->last_head_ms,
                               .last_rx_ms = w->ws.last_rx_ms, .ping_ms = w->ping_ms, .subscribed = w->subscribed};
    char why[96];
    switch (policy_ws_check(&times, handshake, stall_ms(w), mono)) {
    case POLICY_WS_FINE:
        return;
    case POLICY_WS_PING:
        w->ping_ms = mono;
        pool_ws_ping(&w->ws);
        return;
    case POLICY_WS_NOT_SUBSCRIBED:
        snprintf(why, sizeof(why), "not subscribed within %" PRIu32 " ms", handshake);
        stream_lost(w, why);
        return;
    case POLICY_WS_STALLED:
        snprintf(why, sizeof(why), "no head for %" PRIu32 " ms", stall_ms(w));
        stream_lost(w, why);
        return;
    case POLICY_WS_SILENT:
        stream_lost(w, "no pong");
        return;
    }
}

void pool_wshead_init(pool_endpoint_t *ep)
{
    char *http = wire_url_ws_as_http(ep->conf->ws_url);
    if (http == NULL)
        return;
    pool_wshead_t *w = sl_xcalloc(1, sizeof(*w));
    w->ep = ep;
    w->conf = *ep->conf;
    w->conf.url = http;
    w->conf.url_redacted = ep->conf->ws_url_redacted;
    w->link_ok = pool_link_init(&w->link, &ep->net->timers, ep->index, &w->conf) == SL_OK;
    ep->wshead = w;
}

/* pid if the worker holding the stream is gone (a crash: the master starts
 * another), so its claim need not run out first; 0 if it lives or was looked
 * for within the last second. The claim is this host's: the pid is too. */
static uint32_t holder_dead(pool_wshead_t *w, uint32_t pid)
{
    uint64_t mono = sl_now_ms();
    if (mono - w->alive_checked_ms < 1000)
        return 0;
    w->alive_checked_ms = mono;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH ? pid : 0;
}

void pool_wshead_tick(pool_endpoint_t *ep, uint64_t now_ms)
{
    if (ep->wshead == NULL && ep->conf->ws_url != NULL && ep->net->pool->state != NULL)
        pool_wshead_init(ep);
    pool_wshead_t *w = ep->wshead;
    if (w == NULL || !w->link_ok)
        return;
    if (!pool_lease_does_job(ep, now_ms)) {
        /* cluster: another host holds the endpoint's lease: it streams, and publishes the heads */
        if (w->holder) {
            pool_ws_close(&w->ws);
            w->subscribed = 0;
            share_ctx_t c = {.release = 1, .state = -1};
            (void)share(w, &c);
            w->holder = 0;
        }
        return;
    }
    const state_endpoint_rec_t *r = &ep->health.shared;
    uint32_t me = (uint32_t)getpid();
    if (!w->holder) {
        uint32_t dead = 0;
        if (r->ws_pid != 0 && r->ws_pid != me && r->ws_renew_ms > now_ms && !(dead = holder_dead(w, r->ws_pid)))
            return; /* another worker of this host holds it */
        share_ctx_t c = {.claim = 1, .state = STATE_WS_CONNECTING, .dead = dead};
        if (!share(w, &c))
            return;
        w->holder = 1;
        w->next_try_ms = 0;
    } else if (r->ws_pid != me && r->ws_pid != 0) {
        w->holder = 0; /* taken over (this worker stalled past the claim) */
        pool_ws_close(&w->ws);
        w->subscribed = 0;
        return;
    } else if (now_ms - w->renewed_ms >= POOL_WS_CLAIM_MS / 3) {
        share_ctx_t c = {.claim = 1, .state = -1};
        if (!share(w, &c)) {
            w->holder = 0;
            pool_ws_close(&w->ws);
            w->subscribed = 0;
            return;
        }
    }
    uint64_t mono = sl_now_ms();
    if (w->ws.state == POOL_WS_CLOSED) {
        if (mono >= w->next_try_ms)
            stream_try(w, mono);
        return;
    }
    if (pool_ws_chain_stale(&w->ws, ep->net->chain_want)) {
        stream_lost(w, "the network's chain changed since it opened (asked again)");
        return;
    }
    stream_check(w, mono);
}

void pool_wshead_dispose(pool_endpoint_t *ep)
{
    pool_wshead_t *w = ep->wshead;
    if (w == NULL)
        return;
    pool_ws_close(&w->ws);
    if (w->confirming)
        ep->net->pool->t.ops->cancel(&w->confirm);
    w->confirming = 0;
    pool_delay_cancel(&w->confirm_later);
    w->pending = 0;
    if (w->holder) {
        share_ctx_t c = {.release = 1, .state = -1};
        (void)share(w, &c);
    }
    if (w->link.timers != NULL)
        pool_link_dispose(&w->link);
    free(w->conf.url);
    free(w);
    ep->wshead = NULL;
}
