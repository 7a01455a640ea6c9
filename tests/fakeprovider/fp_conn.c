/* fp_conn.c: connection lifecycle, socket/TLS I/O and answer delivery.
 *
 * Level-triggered epoll. A connection handles one request at a time: the
 * next pipelined request is parsed only once the previous answer is fully
 * written, which is what makes "in flight" (and max_concurrent) well defined.
 * Held answers (slow, slow_body) sit in the output buffer behind out_limit;
 * timers move out_limit forward. Only conn_drive, fp_conn_on_event and
 * fp_conn_on_timer free a connection, always as their last act. */
#include "fp.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>

#define FP_READ_CHUNK   16384
#define FP_OUT_KEEP     (256 * 1024)    /* output buffer kept between answers */

/* Interest per state; EPOLLOUT is added while a write is pending. */
static const uint32_t state_events[FP_CONN_STATE_COUNT] = {
    [FP_CONN_READING] = EPOLLIN,
    [FP_CONN_ANSWERING] = EPOLLRDHUP,
    [FP_CONN_HUNG] = EPOLLRDHUP,
    [FP_CONN_MUTE] = EPOLLRDHUP,
    [FP_CONN_LINGERING] = EPOLLIN,
    [FP_CONN_WS] = EPOLLIN,
};

/* Allowed transitions: [from] is a bit set of the states it may move to. */
#define BIT(s) (1u << (s))
static const unsigned state_edges[FP_CONN_STATE_COUNT] = {
    [FP_CONN_READING] = BIT(FP_CONN_ANSWERING) | BIT(FP_CONN_HUNG) | BIT(FP_CONN_LINGERING) | BIT(FP_CONN_WS),
    [FP_CONN_ANSWERING] = BIT(FP_CONN_READING),
    [FP_CONN_HUNG] = 0,
    [FP_CONN_MUTE] = 0,
    [FP_CONN_LINGERING] = 0,
    [FP_CONN_WS] = 0,
};

/* The only writer of c->state. */
static void conn_set_state(fp_conn_t *c, fp_conn_state_t to)
{
    if (!(state_edges[c->state] & BIT(to)))
        abort();    /* a bug in this file, never a peer's doing */
    c->state = to;
}

void fp_inflight_begin(fp_conn_t *c)
{
    fp_server_t *srv = c->srv;
    if (c->in_flight)
        return;
    c->in_flight = true;
    if (++srv->inflight > srv->stats.max_concurrent)
        srv->stats.max_concurrent = srv->inflight;
}

void fp_inflight_end(fp_conn_t *c)
{
    if (!c->in_flight)
        return;
    c->in_flight = false;
    c->srv->inflight--;
}

void fp_conn_accept(fp_server_t *srv, int fd, bool mute)
{
    fp_conn_t *c = calloc(1, sizeof *c);
    if (!c)
        abort();
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->srv = srv;
    c->fd = fd;
    c->timer_idx = SIZE_MAX;
    c->state = mute ? FP_CONN_MUTE : FP_CONN_READING;
    c->events = state_events[c->state];
    if (srv->tls) {
        c->ssl = SSL_new(srv->tls);
        if (!c->ssl)
            abort();
        SSL_set_fd(c->ssl, fd);
        SSL_set_accept_state(c->ssl);
    }
    struct epoll_event ev = {.events = c->events, .data.ptr = c};
    if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
        abort();
    c->next = srv->conns;
    if (srv->conns)
        srv->conns->prev = c;
    srv->conns = c;
    srv->stats.connections_total++;
    srv->conns_open++;
}

void fp_conn_close(fp_conn_t *c, bool reset)
{
    fp_server_t *srv = c->srv;
    if (reset) {
        struct linger lg = {.l_onoff = 1, .l_linger = 0};
        setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    } else if (c->ssl && SSL_is_init_finished(c->ssl)) {
        SSL_shutdown(c->ssl);   /* best effort close_notify; never waits */
    }
    fp_timer_cancel(srv, c);
    fp_inflight_end(c);
    if (c->ssl)
        SSL_free(c->ssl);
    close(c->fd);   /* also removes it from the epoll set */
    fp_ws_dispose(c);
    fp_buf_dispose(&c->in);
    fp_buf_dispose(&c->out);
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    srv->conns_open--;
    free(c);
}

/* > 0 bytes read, 0 nothing now (sets drained or eof), -1 broken. */
static ssize_t conn_recv(fp_conn_t *c, char *p, size_t n)
{
    if (!c->ssl) {
        ssize_t r = recv(c->fd, p, n, 0);
        if (r > 0 && (size_t)r < n)
            c->drained = true;  /* level-triggered: EPOLLIN will say when there is more */
        if (r > 0)
            return r;
        if (r == 0)
            c->eof = true;
        else if (errno == EAGAIN || errno == EINTR)
            c->drained = errno == EAGAIN;
        else
            return -1;
        return 0;
    }
    size_t got = 0;
    ERR_clear_error();
    if (SSL_read_ex(c->ssl, p, n, &got))
        return (ssize_t)got;
    switch (SSL_get_error(c->ssl, 0)) {
    case SSL_ERROR_WANT_READ: c->drained = true; return 0;
    case SSL_ERROR_WANT_WRITE: c->want_write = true; return 0;    /* retried on EPOLLOUT */
    case SSL_ERROR_ZERO_RETURN: c->eof = true; return 0;
    default: return -1;
    }
}

/* Makes room for a read: reuses consumed space before growing. */
static void conn_in_room(fp_conn_t *c)
{
    fp_buf_t *in = &c->in;
    if (c->in_off == in->len) {
        in->len = c->in_off = 0;
    } else if (c->in_off > 0 && in->cap - in->len < FP_READ_CHUNK / 4) {
        memmove(in->data, in->data + c->in_off, in->len - c->in_off);
        in->len -= c->in_off;
        c->in_off = 0;
    }
    fp_buf_reserve(in, in->cap == 0 ? FP_READ_CHUNK : FP_READ_CHUNK / 4);
}

static ssize_t conn_read(fp_conn_t *c)
{
    conn_in_room(c);
    ssize_t n = conn_recv(c, c->in.data + c->in.len, c->in.cap - c->in.len);
    if (n > 0)
        c->in.len += (size_t)n;
    return n;
}

/* > 0 written, 0 would block (want_write set), -1 broken. */
static ssize_t conn_send(fp_conn_t *c, const char *p, size_t n)
{
    if (!c->ssl) {
        ssize_t r = send(c->fd, p, n, MSG_NOSIGNAL);
        if (r >= 0 && (size_t)r < n)
            c->want_write = true;
        if (r > 0)
            return r;
        if (r < 0 && errno != EAGAIN && errno != EINTR)
            return -1;
        c->want_write = errno == EAGAIN || r == 0;
        return 0;
    }
    size_t put = 0;
    ERR_clear_error();
    if (SSL_write_ex(c->ssl, p, n, &put))
        return (ssize_t)put;
    int e = SSL_get_error(c->ssl, 0);
    if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
        c->want_write = true;
        return 0;
    }
    return -1;
}

static int conn_flush(fp_conn_t *c)
{
    while (c->out_off < c->out_limit && !c->want_write) {
        ssize_t n = conn_send(c, c->out.data + c->out_off, c->out_limit - c->out_off);
        if (n < 0)
            return -1;
        c->out_off += (size_t)n;
    }
    return 0;
}

static void conn_update_events(fp_conn_t *c)
{
    uint32_t ev = state_events[c->state];
    if (c->eof)
        ev &= ~(uint32_t)(EPOLLIN | EPOLLRDHUP);    /* nothing more will come */
    if (c->want_write)
        ev |= EPOLLOUT;
    if (ev == c->events)
        return;
    struct epoll_event e = {.events = ev, .data.ptr = c};
    if (epoll_ctl(c->srv->epfd, EPOLL_CTL_MOD, c->fd, &e) == 0)
        c->events = ev;
}

static bool can_read(const fp_conn_t *c)
{
    if (c->eof)
        return false;
    return !c->drained || (c->ssl && SSL_has_pending(c->ssl));
}

static bool drive_reading(fp_conn_t *c)
{
    int r = fp_http_handle_next(c);
    if (r != 0)
        return true;
    if (c->eof) {
        if (c->out_off == c->out.len)
            c->doom = FP_DOOM_CLOSE;
        return false;
    }
    if (!can_read(c))
        return false;
    ssize_t n = conn_read(c);
    if (n < 0)
        c->doom = FP_DOOM_CLOSE;
    return n > 0 || c->eof;
}

/* The answer is complete once everything is released and written. */
static bool drive_answering(fp_conn_t *c)
{
    if (c->out_off < c->out.len || c->out_limit < c->out.len || c->timer_idx != SIZE_MAX)
        return false;
    fp_inflight_end(c);
    c->out.len = c->out_off = c->out_limit = 0;
    c->drip_step = 0;
    fp_buf_shrink(&c->out, FP_OUT_KEEP);
    if (c->close_after) {
        c->doom = FP_DOOM_CLOSE;
        return false;
    }
    conn_set_state(c, FP_CONN_READING);
    return true;
}

/* After an error answer: send FIN, then swallow what the peer still sends so
 * the close does not turn into an RST that destroys our answer in flight. */
static bool drive_lingering(fp_conn_t *c)
{
    if (c->out_off < c->out.len)
        return false;
    if (!c->fin_sent) {
        c->fin_sent = true;
        shutdown(c->fd, SHUT_WR);
    }
    if (c->eof) {
        c->doom = FP_DOOM_CLOSE;
        return false;
    }
    if (!can_read(c))
        return false;
    ssize_t n = conn_read(c);
    c->in.len = c->in_off = 0;
    if (n < 0)
        c->doom = FP_DOOM_CLOSE;
    return n > 0 || c->eof;
}

/* Upgraded: frames in, answers and pushes out (fp_ws.c). */
static bool drive_ws(fp_conn_t *c)
{
    if (c->close_after) { /* a close frame answered, or a frame we refuse */
        if (c->out_off == c->out.len)
            c->doom = FP_DOOM_CLOSE;
        return false;
    }
    if (c->out_off == c->out.len)
        c->out.len = c->out_off = c->out_limit = 0;
    int r = fp_ws_handle_next(c);
    if (r != 0) {
        c->close_after = r < 0;
        return true;
    }
    if (c->eof) {
        c->doom = FP_DOOM_CLOSE;
        return false;
    }
    if (!can_read(c))
        return false;
    ssize_t n = conn_read(c);
    if (n < 0)
        c->doom = FP_DOOM_CLOSE;
    return n > 0 || c->eof;
}

void fp_conn_to_ws(fp_conn_t *c)
{
    conn_set_state(c, FP_CONN_WS);
}

void fp_conn_kick(fp_conn_t *c)
{
    if (conn_flush(c) < 0)
        c->want_write = true; /* its next event finds it broken and closes it */
    conn_update_events(c);
}

static bool drive_step(fp_conn_t *c)
{
    switch (c->state) {
    case FP_CONN_READING: return drive_reading(c);
    case FP_CONN_ANSWERING: return drive_answering(c);
    case FP_CONN_LINGERING: return drive_lingering(c);
    case FP_CONN_WS: return drive_ws(c);
    case FP_CONN_HUNG:
    case FP_CONN_MUTE:
    case FP_CONN_STATE_COUNT:
        return false;
    }
    return false;
}

/* Runs the connection until it has to wait for the peer or a timer. */
static void conn_drive(fp_conn_t *c)
{
    for (;;) {
        if (conn_flush(c) < 0) {
            c->doom = FP_DOOM_CLOSE;
            break;
        }
        bool progress = drive_step(c);
        if (c->doom != FP_DOOM_NONE || !progress)
            break;
    }
    if (c->doom != FP_DOOM_NONE) {
        fp_conn_close(c, c->doom == FP_DOOM_RESET);
        return;
    }
    conn_update_events(c);
}

void fp_conn_on_event(fp_conn_t *c, uint32_t events)
{
    if (events & EPOLLERR) {
        fp_conn_close(c, false);
        return;
    }
    if (events & (EPOLLHUP | EPOLLRDHUP)) {
        if (c->state == FP_CONN_HUNG || c->state == FP_CONN_MUTE || (events & EPOLLHUP)) {
            fp_conn_close(c, false);
            return;
        }
        c->eof = true;      /* half-close: finish the answer, then close */
    }
    if (events & EPOLLIN)
        c->drained = false;
    if (events & EPOLLOUT)
        c->want_write = false;
    conn_drive(c);
}

void fp_conn_on_timer(fp_conn_t *c)
{
    fp_server_t *srv = c->srv;
    if (c->state == FP_CONN_LINGERING) {
        fp_conn_close(c, false);
        return;
    }
    if (c->drip_step && c->out.len - c->out_limit > c->drip_step) {
        c->out_limit += c->drip_step;
        fp_timer_set(srv, c, srv->now_ms + c->drip_every_ms);
    } else {
        c->out_limit = c->out.len;
    }
    conn_drive(c);
}

static void reply_hold(fp_conn_t *c, const fp_reply_t *r, size_t body_at, size_t body_n)
{
    fp_server_t *srv = c->srv;
    uint64_t delay = r->delay_ms > 0 ? (uint64_t)r->delay_ms : 0;
    if (r->delivery == FP_DELIVER_DELAY) {
        fp_timer_set(srv, c, srv->now_ms + delay);
        return;
    }
    /* drip: 10 body bytes now, the rest in ten steps spread over delay_ms */
    size_t first = body_n < 10 ? body_n : 10;
    c->out_limit = body_at + first;
    c->drip_step = (body_n - first + 9) / 10;
    c->drip_every_ms = (uint32_t)(delay / 10 ? delay / 10 : 1);
    if (c->drip_step == 0) {
        c->out_limit = c->out.len;
        return;
    }
    fp_timer_set(srv, c, srv->now_ms + c->drip_every_ms);
}

void fp_conn_reply(fp_conn_t *c, const fp_reply_t *r)
{
    fp_reply_t head = *r;
    head.close = r->close || !c->req.keep_alive || r->delivery == FP_DELIVER_TRUNCATE;
    c->close_after = head.close;
    conn_set_state(c, r->delivery == FP_DELIVER_HANG ? FP_CONN_HUNG : FP_CONN_ANSWERING);
    switch (r->delivery) {
    case FP_DELIVER_RESET:
        c->doom = FP_DOOM_RESET;
        return;
    case FP_DELIVER_HANG:
        return;
    case FP_DELIVER_NOW:
    case FP_DELIVER_DELAY:
    case FP_DELIVER_DRIP:
    case FP_DELIVER_TRUNCATE:
        break;
    }
    size_t start = c->out.len;
    fp_http_write_head(&c->out, &head);
    size_t body_at = c->out.len;
    size_t body_n = r->delivery == FP_DELIVER_TRUNCATE ? r->body_len / 2 : r->body_len;
    fp_buf_put(&c->out, r->body, body_n);
    c->out_limit = c->out.len;
    if (r->delivery == FP_DELIVER_DELAY || r->delivery == FP_DELIVER_DRIP) {
        c->out_limit = start;
        reply_hold(c, r, body_at, body_n);
    }
}

void fp_conn_fail(fp_conn_t *c, int status)
{
    static const char body[] = "{\"error\":\"bad request\"}";
    fp_reply_t r = {
        .status = status, .content_type = "application/json", .retry_after = -1,
        .body = body, .body_len = sizeof body - 1, .close = true,
    };
    conn_set_state(c, FP_CONN_LINGERING);
    c->head_done = false;
    c->in.len = c->in_off = 0;
    fp_http_write_head(&c->out, &r);
    fp_buf_put(&c->out, r.body, r.body_len);
    c->out_limit = c->out.len;
    fp_timer_set(c->srv, c, c->srv->now_ms + FP_LINGER_MS);
}
