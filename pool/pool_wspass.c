/* pool/pool_wspass.c: subscriptions passed through to an endpoint's
 * WebSocket (ws_url), for the gateway's passthrough sources
 * (sub/sub_pass.c; the API is in pool/pool.h, pool_wsub_*).
 *
 * One socket per endpoint per worker, opened when its first subscription
 * is asked for and shared by all of them (pool_ws.c is the socket: the
 * Upgrade, TLS, wslay's frames). Each subscription is the upstream's
 * subscribe call with our own request id; its answer's subscription id is
 * kept and each notification naming it hands its `result` to the owner.
 * A subscription closed by its owner is unsubscribed upstream (once its
 * answer came, if it had not). A socket with no subscription left closes on
 * the next tick, its unsubscribes written.
 *
 * Lost, every subscription of the socket told (lost) and the handle freed:
 * the socket closed or failed, its chain not the network's (asked after the
 * Upgrade, before any subscribe: pool_ws_check_chain), a message over POOL_WSPASS_MAX_MESSAGE,
 * bytes queued past POOL_WSPASS_MAX_QUEUED (the upstream does not read), the
 * Upgrade or a subscribe not answered within connect + first byte, nothing
 * at all (not even a pong) for POLICY_WS_SILENT_MS, no message for the
 * network's ws_stall_ms when one is configured (0: quiet is allowed, as a
 * pending-transaction or logs subscription may rightly be), or the endpoint
 * no longer usable (breaker open, drained, rate-limited). The endpoint is
 * then not picked for a backoff (policy/wsstream.h's). Deadlines are
 * checked on the pool's tick. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "pool/pool_net.h"
#include "wire/envelope.h"
#include "wire/json_scan.h"

#define UPSTREAM_ID_MAX 96

typedef struct pool_wspass {
    pool_endpoint_t *ep;
    unsigned index;               /* in ep->wspass */
    pool_endpoint_conf_t conf;    /* the endpoint's, with the ws_url (in its http form) as url */
    pool_link_t link;
    int link_ok;
    pool_ws_t ws;
    h2o_linklist_t subs;          /* pool_wsub_t, the owner's and those closed awaiting their answer */
    size_t live;                  /* subscriptions the owner holds */
    uint32_t next_id;
    uint64_t began_ms;            /* monotonic: this socket's try started */
    uint64_t last_msg_ms;         /* monotonic: the last message (or the Upgrade's answer) */
    uint64_t ping_ms;
    uint64_t retry_at_ms;         /* monotonic: not picked before */
    uint32_t backoff_ms;
} pool_wspass_t;

struct pool_wsub {
    pool_wspass_t *s;
    h2o_linklist_t link;
    const pool_wsub_cbs_t *cbs;   /* NULL: closed by its owner, its answer awaited */
    void *data;
    char *request;                /* the subscribe's params and method, sent once open */
    char *unsubscribe;
    uint32_t req_id;              /* the subscribe's id (0: answered) */
    uint64_t asked_ms;            /* monotonic: sent (0: not yet) */
    char upstream_id[UPSTREAM_ID_MAX]; /* the upstream's subscription id ("": not answered) */
};

/* ---- the socket's subscriptions ----------------------------------------- */

static void sub_free(pool_wsub_t *w)
{
    if (h2o_linklist_is_linked(&w->link))
        h2o_linklist_unlink(&w->link);
    free(w->request);
    free(w->unsubscribe);
    free(w);
}

static int queued_over(const pool_wspass_t *s)
{
    return s->ws.out.len + s->ws.writing.len > POOL_WSPASS_MAX_QUEUED;
}

static void sock_lost(pool_wspass_t *s, const char *why);

/* Sends the subscribe of w (the socket is open). */
static void sub_send(pool_wspass_t *s, pool_wsub_t *w)
{
    char head[64];
    sl_buf_t b;
    w->req_id = ++s->next_id != 0 ? s->next_id : ++s->next_id;
    snprintf(head, sizeof(head), "{\"jsonrpc\":\"2.0\",\"id\":%" PRIu32 ",", w->req_id);
    sl_buf_init(&b);
    sl_buf_append_str(&b, head);
    sl_buf_append_str(&b, w->request);
    sl_buf_append_char(&b, '}');
    w->asked_ms = sl_now_ms();
    int ok = pool_ws_send_text(&s->ws, b.base, b.len);
    sl_buf_dispose(&b);
    if (!ok || queued_over(s))
        sock_lost(s, ok ? "bytes queued past the bound (the upstream does not read)" : "a subscribe not sent");
}

static void sub_unsubscribe(pool_wspass_t *s, pool_wsub_t *w)
{
    sl_buf_t b;
    sl_buf_init(&b);
    uint32_t id = ++s->next_id != 0 ? s->next_id : ++s->next_id;
    sl_buf_printf(&b, "{\"jsonrpc\":\"2.0\",\"id\":%" PRIu32 ",\"method\":\"%s\",\"params\":[%s]}", id,
                  w->unsubscribe, w->upstream_id);
    (void)pool_ws_send_text(&s->ws, b.base, b.len);
    sl_buf_dispose(&b);
}

/* The socket is gone: closed now, each subscription told once and freed. */
static void sock_lost(pool_wspass_t *s, const char *why)
{
    h2o_linklist_t gone;
    pool_ws_close(&s->ws);
    s->retry_at_ms = sl_now_ms() + policy_ws_retry_ms(&s->backoff_ms, (uint32_t)random());
    h2o_linklist_init_anchor(&gone);
    h2o_linklist_insert_list(&gone, &s->subs);
    if (s->live != 0)
        sl_log_warn("endpoint %s/%s: subscription WebSocket %u lost: %s (%zu subscriptions)", s->ep->net->conf->name,
                    s->ep->conf->id, s->index + 1, why, s->live);
    s->live = 0;
    while (!h2o_linklist_is_empty(&gone)) {
        pool_wsub_t *w = H2O_STRUCT_FROM_MEMBER(pool_wsub_t, link, gone.next);
        const pool_wsub_cbs_t *cbs = w->cbs;
        void *data = w->data;
        sub_free(w);
        if (cbs != NULL)
            cbs->lost(data, why);
    }
}

/* ---- what arrives ------------------------------------------------------- */

/* A JSON value as an id: a string's text, or a number's digits; 0 if neither. */
static int id_text(const char *buf, wire_span_t v, char *out, size_t cap)
{
    if (v.len == 0)
        return 0;
    if (wire_json_kind(buf, v) == WIRE_JSON_STRING)
        return wire_json_string(buf, v, out, cap) == SL_OK && out[0] != '\0';
    if (wire_json_kind(buf, v) != WIRE_JSON_NUMBER || v.len >= cap)
        return 0;
    memcpy(out, buf + v.off, v.len);
    out[v.len] = '\0';
    return 1;
}

/* The answer to a subscribe (or to an unsubscribe: ignored). */
static void on_answer(pool_wspass_t *s, const char *msg, const wire_envelope_t *env)
{
    int64_t id;
    if (wire_json_int64(msg, env->id, &id) != SL_OK || id <= 0)
        return;
    for (h2o_linklist_t *l = s->subs.next; l != &s->subs; l = l->next) {
        pool_wsub_t *w = H2O_STRUCT_FROM_MEMBER(pool_wsub_t, link, l);
        if (w->req_id != (uint32_t)id)
            continue;
        w->req_id = 0;
        char up[UPSTREAM_ID_MAX - 2];
        int ok = env->error.len == 0 && id_text(msg, env->result, up, sizeof(up));
        if (ok) /* kept as the JSON an unsubscribe names it with */
            snprintf(w->upstream_id, sizeof(w->upstream_id),
                     wire_json_kind(msg, env->result) == WIRE_JSON_STRING ? "\"%s\"" : "%s", up);
        if (w->cbs == NULL) { /* closed while asked: unsubscribed now */
            if (ok)
                sub_unsubscribe(s, w);
            sub_free(w);
        } else if (!ok) {
            const pool_wsub_cbs_t *cbs = w->cbs;
            void *data = w->data;
            s->live--;
            sub_free(w);
            cbs->lost(data, "the upstream refused the subscription");
        }
        return;
    }
}

static void on_notification(pool_wspass_t *s, const char *msg, const wire_envelope_t *env)
{
    char sid[UPSTREAM_ID_MAX - 2], quoted[UPSTREAM_ID_MAX];
    if (wire_json_kind(msg, env->params) != WIRE_JSON_OBJECT)
        return;
    wire_span_t v = wire_json_member(msg, env->params, "subscription");
    wire_span_t result = wire_json_member(msg, env->params, "result");
    if (result.len == 0 || !id_text(msg, v, sid, sizeof(sid)))
        return; /* a notice we did not ask for */
    snprintf(quoted, sizeof(quoted), wire_json_kind(msg, v) == WIRE_JSON_STRING ? "\"%s\"" : "%s", sid);
    for (h2o_linklist_t *l = s->subs.next; l != &s->subs; l = l->next) {
        pool_wsub_t *w = H2O_STRUCT_FROM_MEMBER(pool_wsub_t, link, l);
        if (w->cbs != NULL && strcmp(w->upstream_id, quoted) == 0) {
            s->backoff_ms = 0;
            w->cbs->notify(w->data, msg + result.off, result.len);
            return;
        }
    }
}

static void on_ws_message(pool_ws_t *ws, const char *msg, size_t len)
{
    pool_wspass_t *s = ws->data;
    wire_envelope_t env;
    s->last_msg_ms = sl_now_ms();
    if (wire_envelope_scan(msg, len, &env) != SL_OK) {
        sock_lost(s, "a malformed message");
        return;
    }
    if (env.id.len != 0 && env.method.len == 0)
        on_answer(s, msg, &env);
    else if (env.params.len != 0)
        on_notification(s, msg, &env);
}

static void on_ws_open(pool_ws_t *ws)
{
    pool_wspass_t *s = ws->data;
    s->last_msg_ms = s->ping_ms = sl_now_ms();
    for (h2o_linklist_t *l = s->subs.next; l != &s->subs && s->ws.state == POOL_WS_OPEN;) {
        pool_wsub_t *w = H2O_STRUCT_FROM_MEMBER(pool_wsub_t, link, l);
        l = l->next;
        if (w->asked_ms == 0)
            sub_send(s, w);
    }
}

static void on_ws_closed(pool_ws_t *ws, const char *why)
{
    sock_lost(ws->data, why);
}

static const pool_ws_cbs_t ws_cbs = {on_ws_open, on_ws_message, on_ws_closed};

/* ---- the API ------------------------------------------------------------ */

/* Socket k of ep, made (not opened) when first asked for. */
static pool_wspass_t *sock_of(pool_endpoint_t *ep, unsigned k)
{
    if (ep->wspass[k] != NULL || ep->conf->ws_url == NULL)
        return ep->wspass[k];
    char *http = wire_url_ws_as_http(ep->conf->ws_url);
    if (http == NULL)
        return NULL;
    pool_wspass_t *s = sl_xcalloc(1, sizeof(*s));
    s->ep = ep;
    s->index = k;
    s->conf = *ep->conf;
    s->conf.url = http;
    s->conf.url_redacted = ep->conf->ws_url_redacted;
    s->link_ok = pool_link_init(&s->link, &ep->net->timers, ep->index, &s->conf) == SL_OK;
    h2o_linklist_init_anchor(&s->subs);
    ep->wspass[k] = s;
    return s;
}

/* 1 if s may take a new subscription now. */
static int sock_takes(const pool_wspass_t *s, uint64_t mono)
{
    /* a socket already opening waits for its address itself: only a closed one must not be picked
     * while the name is looked up (its open would fail) */
    return s != NULL && s->link_ok && mono >= s->retry_at_ms && s->live < POOL_WSPASS_MAX_SUBS &&
           (s->ws.state != POOL_WS_CLOSED || !pool_dns_pending(&s->link));
}

/* The socket of ep a new subscription goes to: the first one with room; the
 * next one is made only when those before it are full. NULL: none. */
static pool_wspass_t *sock_pick(pool_endpoint_t *ep, uint64_t mono)
{
    for (unsigned k = 0; k < POOL_WSPASS_SOCKETS && ep->conf->ws_url != NULL; k++) {
        pool_wspass_t *s = sock_of(ep, k);
        if (sock_takes(s, mono))
            return s;
        if (s == NULL || s->live < POOL_WSPASS_MAX_SUBS)
            return NULL; /* not full, only unusable now: no second socket for that */
    }
    return NULL;
}

int pool_wsub_configured(const pool_network_t *net)
{
    for (size_t i = 0; i < net->nendpoints; i++)
        if (net->endpoints[i].conf->ws_url != NULL)
            return 1;
    return 0;
}

int pool_wsub_pick(pool_network_t *net)
{
    uint64_t mono = sl_now_ms();
    for (size_t i = 0; i < net->norder; i++) {
        pool_endpoint_t *ep = &net->endpoints[net->order[i]];
        if (sock_pick(ep, mono) != NULL)
            return ep->index;
    }
    return -1;
}

size_t pool_wsub_room(pool_network_t *net, size_t *sockets)
{
    size_t room = 0;
    *sockets = 0;
    for (size_t i = 0; i < net->nendpoints; i++) {
        pool_endpoint_t *ep = &net->endpoints[i];
        pool_wspass_t *s = ep->conf->ws_url != NULL ? sock_of(ep, 0) : NULL;
        if (s == NULL || !s->link_ok)
            continue;
        (*sockets)++;
        for (unsigned k = 0; k < POOL_WSPASS_SOCKETS; k++) { /* a socket not made yet has all its room */
            size_t live = ep->wspass[k] != NULL ? ep->wspass[k]->live : 0;
            room += live < POOL_WSPASS_MAX_SUBS ? POOL_WSPASS_MAX_SUBS - live : 0;
        }
    }
    return room;
}

const char *pool_wsub_endpoint_id(const pool_network_t *net, int endpoint)
{
    return endpoint >= 0 && (size_t)endpoint < net->nendpoints ? net->endpoints[endpoint].conf->id : "none";
}

size_t pool_wsub_sockets(const pool_network_t *net)
{
    size_t n = 0;
    const pool_t *pool = net->pool;
    for (size_t k = 0; k < pool->nnetworks; k++)
        for (size_t i = 0; i < pool->networks[k].nendpoints; i++)
            for (unsigned j = 0; j < POOL_WSPASS_SOCKETS; j++) {
                const pool_wspass_t *s = pool->networks[k].endpoints[i].wspass[j];
                n += s != NULL && s->live != 0 && s->ws.state != POOL_WS_CLOSED;
            }
    return n;
}

pool_wsub_t *pool_wsub_open(pool_network_t *net, int endpoint, const char *method, const char *params,
                            const char *unsubscribe, const pool_wsub_cbs_t *cbs, void *data, const char **why)
{
    pool_endpoint_t *ep = endpoint >= 0 && (size_t)endpoint < net->nendpoints ? &net->endpoints[endpoint] : NULL;
    pool_wspass_t *s = NULL;
    for (unsigned k = 0; ep != NULL && k < POOL_WSPASS_SOCKETS && s == NULL; k++) {
        pool_wspass_t *o = sock_of(ep, k);
        if (o == NULL || !o->link_ok || o->live < POOL_WSPASS_MAX_SUBS) {
            s = o;
            break;
        }
    }
    *why = s == NULL || !s->link_ok ? (ep != NULL && ep->wspass[0] != NULL && ep->wspass[0]->link_ok
                                           ? "the endpoint's subscription sockets are full"
                                           : "the endpoint has no usable ws_url")
                                    : NULL;
    if (*why != NULL)
        return NULL;
    if (s->ws.state == POOL_WS_CLOSED) {
        *why = pool_ws_open(&s->ws, &s->link, POOL_WSPASS_MAX_MESSAGE, &ws_cbs, s);
        if (*why != NULL) {
            s->retry_at_ms = sl_now_ms() + policy_ws_retry_ms(&s->backoff_ms, (uint32_t)random());
            return NULL;
        }
        pool_ws_check_chain(&s->ws, net->conf->chain, net->chain_want); /* another chain's never subscribed */
        s->began_ms = s->last_msg_ms = s->ping_ms = sl_now_ms();
    }
    pool_wsub_t *w = sl_xcalloc(1, sizeof(*w));
    w->s = s;
    w->cbs = cbs;
    w->data = data;
    w->unsubscribe = sl_xstrdup(unsubscribe);
    size_t n = strlen(method) + strlen(params) + 32;
    w->request = sl_xcalloc(1, n);
    snprintf(w->request, n, "\"method\":\"%s\",\"params\":%s", method, params);
    h2o_linklist_insert(&s->subs, &w->link);
    s->live++;
    if (s->ws.state == POOL_WS_OPEN) {
        w->cbs = NULL; /* a socket lost while sending frees w untold: the caller hears why */
        sub_send(s, w);
        if (s->ws.state != POOL_WS_OPEN) {
            *why = "the endpoint's subscription socket was lost";
            return NULL;
        }
        w->cbs = cbs;
    }
    return w;
}

/* Not from inside a callback of the socket's other subscriptions' owner
 * while it iterates: the owner's own lost/notify may close its own. */
void pool_wsub_close(pool_wsub_t *w)
{
    if (w == NULL)
        return;
    pool_wspass_t *s = w->s;
    s->live--;
    if (w->upstream_id[0] != '\0' && s->ws.state == POOL_WS_OPEN)
        sub_unsubscribe(s, w);
    if (w->req_id != 0 && s->ws.state == POOL_WS_OPEN) {
        w->cbs = NULL; /* its answer unsubscribes it */
        w->data = NULL;
        return;
    }
    sub_free(w);
}

/* ---- the tick ----------------------------------------------------------- */

static const char *sock_verdict(pool_wspass_t *s, uint64_t mono, char *why, size_t cap)
{
    const pool_timeouts_t *t = &s->ep->net->conf->timeouts;
    uint32_t handshake = t->connect_ms + t->first_byte_ms;
    uint32_t stall = s->ep->net->conf->ws_stall_ms != 0 ? s->ep->net->conf->ws_stall_ms : UINT32_MAX / 2;
    for (h2o_linklist_t *l = s->subs.next; l != &s->subs; l = l->next) {
        const pool_wsub_t *w = H2O_STRUCT_FROM_MEMBER(pool_wsub_t, link, l);
        if (w->req_id != 0 && w->asked_ms != 0 && mono - w->asked_ms > handshake) {
            snprintf(why, cap, "a subscribe not answered within %" PRIu32 " ms", handshake);
            return why;
        }
    }
    policy_ws_times_t times = {.began_ms = s->began_ms, .last_head_ms = s->last_msg_ms,
                               .last_rx_ms = s->ws.last_rx_ms, .ping_ms = s->ping_ms,
                               .subscribed = s->ws.state == POOL_WS_OPEN};
    switch (policy_ws_check(&times, handshake, stall, mono)) {
    case POLICY_WS_FINE:
        return NULL;
    case POLICY_WS_PING:
        s->ping_ms = mono;
        pool_ws_ping(&s->ws);
        return NULL;
    case POLICY_WS_NOT_SUBSCRIBED:
        snprintf(why, cap, "not open within %" PRIu32 " ms", handshake);
        return why;
    case POLICY_WS_STALLED:
        snprintf(why, cap, "no message for %" PRIu32 " ms (ws_stall_ms)", stall);
        return why;
    case POLICY_WS_SILENT:
        return "no pong";
    }
    return NULL;
}

static void sock_tick(pool_endpoint_t *ep, pool_wspass_t *s, uint64_t now_ms)
{
    char why[96];
    if (s == NULL || s->ws.state == POOL_WS_CLOSED)
        return;
    if (h2o_linklist_is_empty(&s->subs)) {
        if (s->ws.out.len == 0 && s->ws.writing.len == 0)
            pool_ws_close(&s->ws); /* the last unsubscribe written: nobody needs it */
        return;
    }
    if (s->live != 0 && !pool_health_usable(ep, now_ms)) {
        sock_lost(s, "the endpoint is not usable (breaker open, drained or rate-limited)");
        return;
    }
    if (queued_over(s)) {
        sock_lost(s, "bytes queued past the bound (the upstream does not read)");
        return;
    }
    if (pool_ws_chain_stale(&s->ws, ep->net->chain_want)) {
        sock_lost(s, "the network's chain changed since it opened (asked again)");
        return;
    }
    const char *v = sock_verdict(s, sl_now_ms(), why, sizeof(why));
    if (v != NULL)
        sock_lost(s, v);
}

void pool_wspass_tick(pool_endpoint_t *ep, uint64_t now_ms)
{
    for (unsigned k = 0; k < POOL_WSPASS_SOCKETS; k++)
        sock_tick(ep, ep->wspass[k], now_ms);
}

void pool_wspass_dispose(pool_endpoint_t *ep)
{
    for (unsigned k = 0; k < POOL_WSPASS_SOCKETS; k++) {
        pool_wspass_t *s = ep->wspass[k];
        if (s == NULL)
            continue;
        sock_lost(s, "the worker is stopping");
        if (s->link.timers != NULL)
            pool_link_dispose(&s->link);
        free(s->conf.url);
        free(s);
        ep->wspass[k] = NULL;
    }
}
