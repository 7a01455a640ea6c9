/* gateway/gw_ws.c: JSON-RPC over WebSocket (gw_ws.h): the sockets of one
 * worker, their messages through gw_exec, and their bounds. Writes are
 * never made from inside a message's own path: an answer is queued in
 * wslay and a zero timer (on_flush) lets h2o write it, so a socket is
 * freed only from h2o's callbacks or a timer of its own. */
#include "gateway/gw_ws.h"
#include "gateway/gw_ws_int.h"

#include <string.h>
#include <sys/socket.h>

#include <h2o/websocket.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "gateway/gw_access.h"
#include "gateway/gw_cors.h"
#include "gateway/gw_keys.h"
#include "gateway/gw_rpc.h"
#include "gateway/gw_ws_sub.h"
#include "wire/envelope.h"

static void msg_free(ws_msg_t *m)
{
    if (!m->answered)
        m->c->inflight--;
    h2o_linklist_unlink(&m->link);
    gw_exec_dispose(&m->x);
    h2o_mem_clear_pool(&m->mem);
    free(m);
}

void gw_ws_unlink_timer(h2o_timeout_entry_t *e)
{
    if (h2o_timeout_is_linked(e))
        h2o_timeout_unlink(e);
}

/* What the socket's queue holds (wslay's, not yet taken by h2o). */
size_t gw_ws_queued_bytes(const ws_conn_t *c)
{
    return c->wc != NULL && c->wc->ws_ctx != NULL ? wslay_event_get_queued_msg_length(c->wc->ws_ctx) : 0;
}

/* gw_held_bytes_cb: a socket closing does not count against its caller's
 * share (nothing more is queued to it and it goes within CLOSE_WAIT_MS);
 * the budget still counts it until then. */
static size_t held_bytes(const gw_held_entry_t *e)
{
    const ws_conn_t *c = H2O_STRUCT_FROM_MEMBER(ws_conn_t, held, e);
    return c->closing ? 0 : gw_ws_queued_bytes(c) + c->partial;
}

static void on_resync(h2o_timeout_entry_t *e);

/* The worker's budget charged with what the queue and the message being
 * received hold now; looked at again every RESYNC_MS while the queue holds
 * something (h2o drains it as the client reads, without telling us). */
void gw_ws_charge_sync(ws_conn_t *c, size_t queued)
{
    sl_budget_t *b = c->w->h->budget;
    if (b == NULL)
        return;
    queued += c->partial;
    if (queued > c->charged)
        sl_budget_charge(b, queued - c->charged);
    else
        sl_budget_release(b, c->charged - queued);
    c->charged = queued;
    if (c->held.sock == NULL && c->wc->sock != NULL)
        c->held.sock = c->wc->sock; /* the stalled-writer resets may pick it (gw_buffered.h) */
    if (queued > 0 && !h2o_timeout_is_linked(&c->resync))
        h2o_timeout_link(c->w->loop, &c->w->resync_timeout, &c->resync);
}

static void on_resync(h2o_timeout_entry_t *e)
{
    ws_conn_t *c = H2O_STRUCT_FROM_MEMBER(ws_conn_t, resync, e);
    gw_ws_charge_sync(c, gw_ws_queued_bytes(c));
}

/* The socket is gone (closed by either side, or the upgrade failed): its
 * calls are released, whatever state they are in. */
static void conn_gone(ws_conn_t *c)
{
    gw_ws_t *w = c->w;
    while (!h2o_linklist_is_empty(&c->msgs))
        msg_free(H2O_STRUCT_FROM_MEMBER(ws_msg_t, link, c->msgs.next));
    sub_client_dispose(&c->sub.client);
    gw_ws_unlink_timer(&c->flush);
    gw_ws_unlink_timer(&c->tick);
    gw_ws_unlink_timer(&c->close_wait);
    gw_ws_unlink_timer(&c->resync);
    if (w->h->budget != NULL)
        sl_budget_release(w->h->budget, c->charged);
    c->charged = 0;
    gw_held_remove(w->h->buffered.held, &c->held);
    gw_ws_unlink_timer(&c->unfinished);
    h2o_linklist_unlink(&c->link);
    w->nconns--;
    gw_stats_srv_set(w->stats, STATE_SRV_WS_CONNECTIONS, w->nconns);
    gw_stats_net_add(w->stats, c->net->sub.index, STATE_SRV_WS_CONNECTIONS, -1);
    h2o_websocket_close(c->wc);
    free(c);
}

static void flush_soon(ws_conn_t *c)
{
    if (!h2o_timeout_is_linked(&c->flush))
        h2o_timeout_link(c->w->loop, &c->w->zero_timeout, &c->flush);
}

/* Queues a close frame (code, reason) after the answers already queued;
 * the client has CLOSE_WAIT_MS to answer it. */
void gw_ws_conn_close(ws_conn_t *c, uint16_t code, const char *reason)
{
    if (c->closing)
        return;
    c->closing = 1;
    wslay_event_queue_close(c->wc->ws_ctx, code, (const uint8_t *)reason, strlen(reason));
    h2o_timeout_link(c->w->loop, &c->w->close_timeout, &c->close_wait);
    flush_soon(c);
}

/* The client did not answer a close in time (or does not read at all):
 * reset, so the kernel drops what it could not deliver; h2o's read or write
 * then fails and conn_gone runs. */
static void on_close_wait(h2o_timeout_entry_t *e)
{
    ws_conn_t *c = H2O_STRUCT_FROM_MEMBER(ws_conn_t, close_wait, e);
    if (c->wc->sock == NULL)
        return;
    int fd = h2o_socket_get_fd(c->wc->sock);
    struct linger lg = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    shutdown(fd, SHUT_RDWR);
}

/* Frees the answered messages and lets h2o write what wslay queued. May
 * free c (h2o_websocket_proceed closes a finished socket). */
static void on_flush(h2o_timeout_entry_t *e)
{
    ws_conn_t *c = H2O_STRUCT_FROM_MEMBER(ws_conn_t, flush, e);
    h2o_linklist_t *n = c->msgs.next;
    while (n != &c->msgs) {
        ws_msg_t *m = H2O_STRUCT_FROM_MEMBER(ws_msg_t, link, n);
        n = n->next;
        if (m->answered)
            msg_free(m);
    }
    if (c->wc->sock != NULL)
        h2o_websocket_proceed(c->wc);
}

/* Answers queued for a client that does not read them, past a bound
 * (named in the log): close with 1008 (policy violation) and count it. */
static void slow_close(ws_conn_t *c, size_t queued, const char *bound)
{
    gw_ws_t *w = c->w;
    uint64_t held;
    char tail[SL_LOG_HELD_MAX];
    gw_stats_net_add(w->stats, c->net->sub.index, STATE_SRV_WS_SLOW_CLOSES, 1);
    if (sl_log_limit_pass(&w->log_slow, sl_now_ms(), LOG_EVERY_MS, &held))
        sl_log_warn("closed a WebSocket (1008) whose client does not read its answers: %zu bytes queued (%s)%s",
                    queued, bound, sl_log_held_text(held, tail));
    gw_ws_conn_close(c, 1008, "answers queued past server.ws_max_queued_bytes: the client does not read them");
}

/* The caller's socket (not closing) with the largest queue, or NULL. */
static ws_conn_t *largest_of(gw_ws_t *w, const char *ident, size_t *queued)
{
    ws_conn_t *big = NULL;
    *queued = 0;
    for (h2o_linklist_t *l = w->conns.next; l != &w->conns; l = l->next) {
        ws_conn_t *o = H2O_STRUCT_FROM_MEMBER(ws_conn_t, link, l);
        size_t q = o->closing ? 0 : gw_ws_queued_bytes(o);
        if (q > *queued && strcmp(o->ident, ident) == 0) {
            big = o;
            *queued = q;
        }
    }
    return big;
}

/* Room for len more bytes on c in the worker's answer bytes
 * (max_buffered_bytes) and its caller's share of them
 * (max_buffered_share: its HTTP answers and all its sockets' queues
 * together). Past the share the caller's largest queues are closed first,
 * as slow readers, until len fits or none holds anything; past the budget a
 * socket already behind is closed. 0 if c itself was closed. */
static int make_room(ws_conn_t *c, size_t len)
{
    gw_buffered_t *b = &c->w->h->buffered;
    size_t queued = gw_ws_queued_bytes(c), q;
    if (b->budget == NULL)
        return 1;
    if (queued > 0 && b->budget->used + len > b->budget->limit) {
        slow_close(c, queued + len, "server.max_buffered_bytes");
        return 0;
    }
    if (b->share >= b->budget->limit) /* a share of 1: the budget's rule only */
        return 1;
    size_t held = gw_held_of(b->held, c->ident);
    while (held + len > b->share) {
        ws_conn_t *big = largest_of(c->w, c->ident, &q);
        if (big == NULL)
            return 1; /* its HTTP answers hold it: those are refused at admission */
        slow_close(big, q, "this caller's server.max_buffered_share, its largest queue first");
        held = held > q ? held - q : 0;
        if (big == c)
            return 0;
    }
    return 1;
}

/* One text message of bytes (copied by wslay), unless the client's queue
 * is past its bound or there is no room for it (then a socket is closed
 * with 1008, this one or its caller's largest). */
static void send_bytes(ws_conn_t *c, const char *bytes, size_t len)
{
    size_t queued = gw_ws_queued_bytes(c);
    if (queued > 0 && queued + len > c->w->srv->ws_max_queued_bytes) {
        slow_close(c, queued + len, "server.ws_max_queued_bytes");
        return;
    }
    if (!make_room(c, len))
        return;
    struct wslay_event_msg msg = {WSLAY_TEXT_FRAME, (const uint8_t *)bytes, len};
    if (wslay_event_queue_msg(c->wc->ws_ctx, &msg) == 0)
        gw_stats_srv_add(c->w->stats, STATE_SRV_WS_MESSAGES_OUT, 1);
    gw_ws_charge_sync(c, gw_ws_queued_bytes(c));
}

/* sub_send_fn: a subscription's answer or notification, written from
 * the loop (flush_soon), as answers are. */
static void sub_send(sub_client_t *s, const char *bytes, size_t len)
{
    ws_conn_t *c = H2O_STRUCT_FROM_MEMBER(ws_conn_t, sub.client, s);
    wire_envelope_t env;
    if (c->sub_call) { /* the answer to the call: an error for the access line? */
        c->sub_call = 0;
        c->sub_error = wire_envelope_scan(bytes, len, &env) == SL_OK && env.error.len != 0;
    }
    if (c->closing || c->wc->sock == NULL)
        return;
    send_bytes(c, bytes, len);
    flush_soon(c);
}

/* One text message with the reply's bytes (copied by wslay). */
static void send_text(ws_conn_t *c, const gw_reply_t *r)
{
    sl_buf_t joined;
    sl_buf_init(&joined);
    const char *bytes = r->body;
    if (r->nparts != 0) {
        sl_buf_reserve_exact(&joined, r->len);
        for (size_t i = 0; i < r->nparts; i++)
            sl_buf_append(&joined, r->parts[i].base, r->parts[i].len);
        bytes = joined.base;
    }
    send_bytes(c, bytes, r->len);
    sl_buf_dispose(&joined);
}

/* gw_exec_ops_t.reply: the answer goes into wslay's queue now; the message
 * is freed at the next flush (gw_exec may still read it on return). */
static void ws_reply(gw_exec_t *x)
{
    ws_msg_t *m = H2O_STRUCT_FROM_MEMBER(ws_msg_t, x, x);
    ws_conn_t *c = m->c;
    if (c->w->srv->access_log)
        gw_access_log(c->wc->sock, 1, c->net->sub.conf->name, &x->rpc, x->call, x->reply.status, x->reply.outcome,
                      sl_now_us() - x->start_us, x->key, NULL);
    gw_exec_commit(x);
    m->answered = 1;
    c->inflight--;
    if (x->reply.len > 0 && !c->closing)
        send_text(c, &x->reply);
    if (c->close_when_done && c->inflight == 0)
        gw_ws_conn_close(c, 1001, "server shutting down");
    flush_soon(c);
}

static const gw_exec_ops_t ws_ops = {.reply = ws_reply};

/* The access line of a subscription call sub answered (subscribe,
 * unsubscribe): its method, status 200 as over HTTP, "ok" or "rpc_error". */
static void access_sub(ws_conn_t *c, const char *body, size_t len, uint64_t start_us)
{
    wire_envelope_t env;
    gw_member_t m = {0};
    gw_rpc_request_t rpc = {.kind = GW_RPC_SINGLE, .members = &m, .nmembers = 1};
    if (wire_envelope_scan(body, len, &env) != SL_OK || wire_json_string(body, env.method, m.name, sizeof(m.name)) != SL_OK)
        return;
    gw_access_log(c->wc->sock, 1, c->net->sub.conf->name, &rpc, NULL, 200, c->sub_error ? "rpc_error" : "ok",
                  sl_now_us() - start_us, c->key, NULL);
}

static void msg_start(ws_conn_t *c, const uint8_t *data, size_t len)
{
    gw_ws_t *w = c->w;
    if (c->closing || w->draining)
        return; /* the close frame is on its way */
    gw_stats_srv_add(w->stats, STATE_SRV_WS_MESSAGES_IN, 1);
    uint64_t start_us = sl_now_us();
    c->sub_call = 1;
    c->sub_error = 0;
    int sub = sub_message(&c->sub.client, (const char *)data, len);
    c->sub_call = 0;
    if (sub) { /* a subscription call, answered */
        if (w->srv->access_log)
            access_sub(c, (const char *)data, len, start_us);
        return;
    }
    ws_msg_t *m = sl_xcalloc(1, sizeof(*m));
    h2o_mem_init_pool(&m->mem);
    char *body = h2o_mem_alloc_pool(&m->mem, len + 1);
    memcpy(body, data, len);
    body[len] = '\0';
    gw_exec_init(&m->x, w->h, &ws_ops, &m->mem);
    m->c = c;
    h2o_linklist_insert(&c->msgs, &m->link);
    c->inflight++;
    gw_exec_t *x = &m->x;
    x->net = c->net;
    x->key = c->key;
    memcpy(x->ip, c->ip, sizeof(x->ip));
    x->sock = c->wc->sock;
    x->body = body;
    x->len = len;
    x->subscribe_error = WS_SUBSCRIBE_ERROR;
    if (c->inflight > w->srv->ws_max_inflight)
        x->refuse_message = "too many calls in flight on this WebSocket (server.ws_max_inflight): wait for answers";
    gw_exec_run(x);
}

/* h2o's message callback: arg NULL when the socket is gone. Pings are
 * answered and closes completed by wslay itself. */
static void on_ws_msg(h2o_websocket_conn_t *wc, const struct wslay_event_on_msg_recv_arg *arg)
{
    ws_conn_t *c = wc->data;
    if (arg == NULL) {
        conn_gone(c);
        return;
    }
    c->last_rx_ms = sl_now_ms();
    if (arg->opcode == WSLAY_TEXT_FRAME || arg->opcode == WSLAY_BINARY_FRAME) {
        gw_ws_unlink_timer(&c->unfinished); /* whole: its frames are freed on return */
        c->fragments = 0;
        c->partial = 0;
        gw_ws_charge_sync(c, gw_ws_queued_bytes(c));
        msg_start(c, arg->msg, arg->msg_length);
    } else if (arg->opcode == WSLAY_PING && !c->closing) {
        /* wslay queues the pong itself: pings from a client that reads
         * nothing would grow that queue without an answer of ours */
        size_t queued = wslay_event_get_queued_msg_length(c->wc->ws_ctx);
        if (queued > c->w->srv->ws_max_queued_bytes ||
            wslay_event_get_queued_msg_count(c->wc->ws_ctx) > MAX_QUEUED_PONGS)
            slow_close(c, queued, "server.ws_max_queued_bytes");
    }
}

/* Every tick: close a socket nothing came from for ws_idle_timeout_ms (a
 * dead peer, or one that does not answer pings), else ping it. */
static void on_tick(h2o_timeout_entry_t *e)
{
    ws_conn_t *c = H2O_STRUCT_FROM_MEMBER(ws_conn_t, tick, e);
    gw_ws_t *w = c->w;
    h2o_timeout_link(w->loop, &w->tick_timeout, &c->tick);
    if (c->wc->sock == NULL || c->closing)
        return;
    if (sl_now_ms() - c->last_rx_ms >= w->srv->ws_idle_timeout_ms) {
        gw_stats_net_add(w->stats, c->net->sub.index, STATE_SRV_WS_IDLE_CLOSES, 1);
        gw_ws_conn_close(c, 1001, "idle: nothing received within server.ws_idle_timeout_ms");
        return;
    }
    if (w->srv->ws_ping_interval_ms != 0) {
        struct wslay_event_msg ping = {WSLAY_PING, NULL, 0};
        if (wslay_event_queue_msg(c->wc->ws_ctx, &ping) == 0)
            flush_soon(c);
    }
}

/* Sockets of the same caller open in this worker. */
static size_t count_ident(const gw_ws_t *w, const char *ident)
{
    size_t n = 0;
    for (h2o_linklist_t *l = w->conns.next; l != &w->conns; l = l->next)
        n += strcmp(H2O_STRUCT_FROM_MEMBER(ws_conn_t, link, l)->ident, ident) == 0;
    return n;
}

/* Refuses an upgrade at a cap; 0 (handled). */
static int refuse(gw_ws_t *w, gw_exec_t *x, int status, const char *message)
{
    gw_stats_srv_add(w->stats, STATE_SRV_WS_REFUSED, 1);
    gw_exec_refuse(x, status, WIRE_RPC_LIMIT_EXCEEDED, message);
    return 0;
}

int gw_ws_accept(gw_ws_t *w, h2o_req_t *req, const char *client_key, gw_exec_t *x)
{
    char ident[GW_EXEC_IDENT_MAX];
    if (w->draining) {
        gw_exec_refuse(x, 503, WIRE_RPC_LIMIT_EXCEEDED, "shutting down: connect again");
        return 0;
    }
    if (req->version >= 0x200)
        return refuse(w, x, 400, "WebSocket needs HTTP/1.1");
    if (!gw_cors_ws_allowed(req, w->h->cfg, x->key))
        return refuse(w, x, 403, "this Origin may not open a WebSocket here (server.cors_origins)");
    gw_exec_caller(x, ident, sizeof(ident));
    if (w->nconns >= w->srv->ws_max_connections)
        return refuse(w, x, 503, "too many WebSocket connections open (server.ws_max_connections)");
    if (count_ident(w, ident) >= w->srv->ws_max_connections_per_identity)
        return refuse(w, x, 429, "too many WebSocket connections for this caller "
                                 "(server.ws_max_connections_per_identity)");
    ws_conn_t *c = sl_xcalloc(1, sizeof(*c));
    c->w = w;
    c->net = x->net;
    c->key = x->key;
    memcpy(c->ip, x->ip, sizeof(c->ip));
    memcpy(c->ident, ident, sizeof(c->ident));
    h2o_linklist_init_anchor(&c->msgs);
    gw_ws_subs_init(&c->sub, w->subs, w->h, c->net, c->key, ident, c->ip, sub_send);
    c->flush.cb = on_flush;
    c->tick.cb = on_tick;
    c->close_wait.cb = on_close_wait;
    c->resync.cb = on_resync;
    c->held.bytes = held_bytes;
    gw_held_add(w->h->buffered.held, &c->held, ident);
    c->unfinished.cb = gw_ws_on_unfinished;
    c->last_rx_ms = sl_now_ms();
    h2o_linklist_insert(&w->conns, &c->link);
    w->nconns++;
    gw_stats_srv_set(w->stats, STATE_SRV_WS_CONNECTIONS, w->nconns);
    gw_stats_net_add(w->stats, c->net->sub.index, STATE_SRV_WS_CONNECTIONS, 1);
    c->wc = h2o_upgrade_to_websocket(req, client_key, c, on_ws_msg);
    wslay_event_config_set_max_recv_msg_length(c->wc->ws_ctx, w->srv->max_body_bytes);
    c->wc->ws_callbacks.on_frame_recv_start_callback = gw_ws_on_frame_start; /* h2o's own callbacks kept */
    wslay_event_config_set_callbacks(c->wc->ws_ctx, &c->wc->ws_callbacks);
    h2o_timeout_link(w->loop, &w->tick_timeout, &c->tick);
    return 0;
}

gw_ws_t *gw_ws_create(gw_handler_t *h, h2o_loop_t *loop, const cfg_server_conf_t *srv, gw_stats_t *stats,
                      state_t *st)
{
    gw_ws_t *w = sl_xcalloc(1, sizeof(*w));
    w->h = h;
    w->srv = srv;
    w->stats = stats;
    w->loop = loop;
    h2o_linklist_init_anchor(&w->conns);
    w->subs = gw_ws_sub_create(loop, srv, stats, st);
    /* without pings the tick only checks for idle sockets: a quarter of the timeout */
    uint32_t tick = srv->ws_ping_interval_ms != 0 ? srv->ws_ping_interval_ms : srv->ws_idle_timeout_ms / 4;
    h2o_timeout_init(loop, &w->zero_timeout, 0);
    h2o_timeout_init(loop, &w->tick_timeout, tick);
    h2o_timeout_init(loop, &w->close_timeout, CLOSE_WAIT_MS);
    h2o_timeout_init(loop, &w->resync_timeout, RESYNC_MS);
    h2o_timeout_init(loop, &w->message_timeout, WS_MAX_MESSAGE_MS);
    return w;
}

void gw_ws_destroy(gw_ws_t *w)
{
    if (w == NULL)
        return;
    /* sockets still open keep their timers: take them off the loop's lists */
    for (h2o_linklist_t *l = w->conns.next; l != &w->conns; l = l->next) {
        ws_conn_t *c = H2O_STRUCT_FROM_MEMBER(ws_conn_t, link, l);
        gw_ws_unlink_timer(&c->flush);
        gw_ws_unlink_timer(&c->tick);
        gw_ws_unlink_timer(&c->close_wait);
        gw_ws_unlink_timer(&c->resync);
        gw_ws_unlink_timer(&c->unfinished);
        sub_client_dispose(&c->sub.client);
    }
    sub_destroy(w->subs);
    free(w);
}

void gw_ws_shutdown(gw_ws_t *w)
{
    w->draining = 1;
    for (h2o_linklist_t *l = w->conns.next; l != &w->conns; l = l->next) {
        ws_conn_t *c = H2O_STRUCT_FROM_MEMBER(ws_conn_t, link, l);
        if (c->inflight == 0) /* a socket still being upgraded sends it once its 101 is out */
            gw_ws_conn_close(c, 1001, "server shutting down");
        else
            c->close_when_done = 1;
    }
}

void gw_ws_sweep_revoked(gw_ws_t *w, const gw_keys_t *keys)
{
    for (h2o_linklist_t *l = w != NULL ? w->conns.next : NULL; l != NULL && l != &w->conns; l = l->next) {
        ws_conn_t *c = H2O_STRUCT_FROM_MEMBER(ws_conn_t, link, l);
        if (gw_keys_revoked(keys, c->key))
            gw_ws_conn_close(c, 1008, "API key revoked");
    }
}

size_t gw_ws_open(const gw_ws_t *w)
{
    return w->nconns;
}
