/* pool/pool_conn.c: one upstream connection: connect and TLS (pool_sock.c), send, read the
 * answer's head and body, keep-alive (pool_exchange.c is the exchange that
 * uses it).
 *
 * sluice's own HTTP/1.1 client on h2o sockets, rather than h2o's http1client:
 * it needs to know whether request bytes left the process (write safety),
 * separate connect / first-byte / attempt deadlines, a cap on answer size, and
 * a keep-alive pool without locks (one per worker; h2o's socketpool ignores
 * its capacity and takes a mutex per operation). */
#include <stdlib.h>
#include <string.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "pool/pool_link_int.h"

static void on_conn_read(h2o_socket_t *sock, const char *err);
static void on_idle_read(h2o_socket_t *sock, const char *err);

/* edges[from][to] of a connection's machine: connect (and TLS handshake),
 * send, read the body, go idle, and from idle send again. Closing is not a
 * state: the connection is destroyed from any of them. */
static const uint8_t conn_edges[POOL_CONN_STATE_COUNT][POOL_CONN_STATE_COUNT] = {
    /* to idle: open, but the exchange it was for was cancelled before its request (pool_conn_unsent) */
    [POOL_CONN_CONNECTING] = {[POOL_CONN_HANDSHAKE] = 1, [POOL_CONN_SENDING] = 1, [POOL_CONN_IDLE] = 1},
    [POOL_CONN_HANDSHAKE] = {[POOL_CONN_SENDING] = 1, [POOL_CONN_IDLE] = 1},
    [POOL_CONN_SENDING] = {[POOL_CONN_BODY] = 1},
    [POOL_CONN_BODY] = {[POOL_CONN_IDLE] = 1},
    [POOL_CONN_IDLE] = {[POOL_CONN_SENDING] = 1},
};

int pool_conn_edge_allowed(pool_conn_state_t from, pool_conn_state_t to)
{
    return (unsigned)from < POOL_CONN_STATE_COUNT && (unsigned)to < POOL_CONN_STATE_COUNT && conn_edges[from][to];
}

/* The one writer of c->state after creation. */
static void conn_enter(pool_conn_t *c, pool_conn_state_t to)
{
    if (!pool_conn_edge_allowed(c->state, to)) {
        sl_log_error("bug: upstream connection moved from state %d to %d", (int)c->state, (int)to);
        abort();
    }
    c->state = to;
}

static pool_transport_t *conn_transport(pool_conn_t *c)
{
    return c->link->timers->t;
}

static void conn_destroy(pool_conn_t *c)
{
    if (h2o_timeout_is_linked(&c->idle_timer))
        h2o_timeout_unlink(&c->idle_timer);
    if (h2o_linklist_is_linked(&c->wait_link))
        h2o_linklist_unlink(&c->wait_link);
    if (h2o_linklist_is_linked(&c->idle_link)) {
        h2o_linklist_unlink(&c->idle_link);
        c->link->nidle--;
    }
    if (c->sock != NULL)
        h2o_socket_close(c->sock);
    free(c);
}

static void on_idle_timeout(h2o_timeout_entry_t *entry)
{
    pool_conn_t *c = H2O_STRUCT_FROM_MEMBER(pool_conn_t, idle_timer, entry);
    conn_destroy(c);
}

/* An idle connection got bytes or EOF: the upstream closed it (or is broken). */
static void on_idle_read(h2o_socket_t *sock, const char *err)
{
    (void)err;
    conn_destroy(sock->data);
}

/* Puts c on its link's idle list (most recent first) with the idle timer;
 * 0 if the list is full (c is then closed). */
static int idle_insert(pool_conn_t *c)
{
    pool_link_t *link = c->link;
    if (h2o_linklist_is_linked(&c->idle_link)) { /* opened while waiting there */
        h2o_linklist_unlink(&c->idle_link);
        link->nidle--;
    }
    if (h2o_timeout_is_linked(&c->idle_timer))
        h2o_timeout_unlink(&c->idle_timer);
    if (link->nidle >= POOL_MAX_IDLE_PER_ENDPOINT) {
        conn_destroy(c);
        return 0;
    }
    c->idle_since_ms = sl_now_ms();
    h2o_linklist_insert(link->idle.next, &c->idle_link);
    link->nidle++;
    h2o_timeout_link(conn_transport(c)->loop, &conn_transport(c)->idle_timeout, &c->idle_timer);
    return 1;
}

static void conn_make_idle(pool_conn_t *c)
{
    if (c->state != POOL_CONN_IDLE) /* an idle one taken and given back unsent stays idle */
        conn_enter(c, POOL_CONN_IDLE);
    c->ex = NULL;
    if (idle_insert(c))
        h2o_socket_read_start(c->sock, on_idle_read);
}

static void on_write_done(h2o_socket_t *sock, const char *err)
{
    pool_conn_t *c = sock->data;
    pool_exchange_t *ex = c->ex;
    if (ex == NULL)
        return;
    if (err == h2o_socket_error_out_of_memory) {
        pool_link_log_local(c->link, "no memory for the request");
        pool_exchange_finish(ex, POOL_FAIL_LOCAL);
        return;
    }
    if (err != NULL) {
        pool_exchange_finish(ex, POOL_FAIL_RESET);
        return;
    }
    ex->write_done = 1;
    if (c->state == POOL_CONN_SENDING && !ex->got_bytes) {
        pool_link_timers_t *tm = c->link->timers;
        h2o_timeout_link(tm->t->loop, &tm->first_byte, &ex->phase_timer);
    }
}

void pool_conn_send(pool_conn_t *c)
{
    pool_exchange_t *ex = c->ex;
    if (h2o_timeout_is_linked(&ex->phase_timer))
        h2o_timeout_unlink(&ex->phase_timer);
    conn_enter(c, POOL_CONN_SENDING);
    c->requests++;
    memset(&c->chunked, 0, sizeof(c->chunked));
    ex->sent = 1;
    h2o_socket_read_start(c->sock, on_conn_read);
    h2o_socket_write(c->sock, ex->bufs, 3, on_write_done);
}

static void conn_handshaking(void *owner)
{
    conn_enter(owner, POOL_CONN_HANDSHAKE);
}

static void conn_opened(void *owner, pool_fail_t fail)
{
    pool_conn_t *c = owner;
    if (c->ex == NULL) { /* its exchange was cancelled meanwhile: kept if it opened */
        if (fail == POOL_FAIL_NONE)
            conn_make_idle(c);
        else
            conn_destroy(c);
        return;
    }
    if (fail != POOL_FAIL_NONE) {
        pool_exchange_finish(c->ex, fail);
        return;
    }
    pool_conn_send(c);
}

static const pool_sock_cbs_t conn_sock_cbs = {.handshaking = conn_handshaking, .done = conn_opened};

/* Upstream answers are read into buffers this large from the first byte.
 * h2o starts a socket's buffer at 8 KB and doubles it as a read fills it,
 * copying what it holds each time (24 KB of copies for a 20 KB answer), and
 * frees it once the bytes are consumed (h2o 2.2.5's h2o_buffer_consume), so
 * every answer paid again. Freed buffers go back to the prototype's recycle
 * list (at most POOL_INPUT_RECYCLE of them kept per worker); larger answers
 * still grow, and past h2o's threshold still go to a temp file. */
#define POOL_INPUT_INITIAL_BYTES (32 * 1024)
#define POOL_INPUT_RECYCLE 16

static h2o_buffer_prototype_t *conn_input_prototype(void)
{
    static h2o_buffer_prototype_t proto = {{POOL_INPUT_RECYCLE}, {POOL_INPUT_INITIAL_BYTES}, NULL};
    proto.mmap_settings = h2o_socket_buffer_prototype.mmap_settings;
    return &proto;
}

/* Brings the body's charge to the worker's budget to held, the bytes of it
 * held now: what was read is what occupies memory (room reserved but not yet
 * written is not). */
static void exchange_charge(pool_conn_t *c, pool_exchange_t *ex, size_t held)
{
    sl_budget_t *b = conn_transport(c)->budget;
    int grew = held > ex->charged;
    if (b != NULL && held > ex->charged)
        sl_budget_charge(b, held - ex->charged);
    else if (held < ex->charged)
        pool_budget_release(conn_transport(c), ex->charged - held);
    ex->charged = held;
    if (grew && ex->grow_call != NULL && conn_transport(c)->grew != NULL)
        conn_transport(c)->grew(ex);
}

/* A body of known length up to this size stays in the socket's buffer as it
 * is read, and is taken whole when complete. A larger one is moved as it
 * arrives into a buffer of its exact size: h2o doubles a socket's buffer and
 * past 32 MiB moves it to a temp file, which a full or missing temp folder
 * would fail (and a 20 MB answer would sit in a 32 MB buffer). */
#define POOL_INPUT_TAKE_MAX (4 * 1024 * 1024)

static int body_in_place(const pool_exchange_t *ex)
{
    return ex->head.content_length > 0 && ex->head.content_length <= POOL_INPUT_TAKE_MAX;
}

/* Room for all of a body read in place, now, so the reads that follow do not
 * grow the buffer (each growth copies what it holds); h2o asks for 4 KB of
 * room before each read, hence the margin. For a larger body, its buffer. */
static void conn_make_room(pool_conn_t *c, pool_exchange_t *ex)
{
    size_t want = (size_t)ex->head.content_length, have = c->sock->input->size;
    if (!body_in_place(ex))
        sl_buf_reserve_exact(&ex->body, want);
    else if (have < want)
        h2o_buffer_reserve(&c->sock->input, want - have + 4096);
}

/* The complete body is all the socket's buffer holds: the exchange takes the
 * buffer itself, and the answer is never copied (the connection starts a new
 * one). A NUL after it, as sl_buf keeps one, where there is room. */
static void conn_take_input(pool_conn_t *c, pool_exchange_t *ex)
{
    h2o_buffer_t *in = c->sock->input;
    h2o_buffer_init(&c->sock->input, conn_input_prototype());
    if (in->bytes + in->size < in->_buf + in->capacity)
        in->bytes[in->size] = '\0';
    ex->in = in;
}

/* A body of Content-Length bytes: held once, in place (taken whole when
 * complete) or moved as it arrives into its own buffer. Returns 1 when it is
 * complete and the exchange finished. */
static int conn_read_sized(pool_conn_t *c, pool_exchange_t *ex)
{
    h2o_buffer_t *in = c->sock->input;
    size_t want = (size_t)ex->head.content_length;
    if (!body_in_place(ex)) {
        size_t n = in->size < want - ex->body.len ? in->size : want - ex->body.len;
        sl_buf_append(&ex->body, in->bytes, n);
        h2o_buffer_consume(&c->sock->input, n);
        exchange_charge(c, ex, ex->body.len);
        if (ex->body.len < want)
            return 0;
    } else if (in->size < want) {
        exchange_charge(c, ex, in->size);
        return 0;
    } else if (in->size == want) {
        conn_take_input(c, ex);
        exchange_charge(c, ex, want);
    } else { /* bytes after the answer: it is copied out of them */
        sl_buf_append(&ex->body, in->bytes, want);
        h2o_buffer_consume(&c->sock->input, want);
        exchange_charge(c, ex, want);
    }
    pool_exchange_finish(ex, POOL_FAIL_NONE);
    return 1;
}

/* Reads the body of an answer whose head was parsed. Returns 1 when the
 * exchange finished (either way). */
static int conn_read_body(pool_conn_t *c, int eof)
{
    pool_exchange_t *ex = c->ex;
    h2o_buffer_t *in = c->sock->input;
    size_t max = conn_transport(c)->max_response_bytes;

    if (ex->head.chunked) {
        size_t used = 0;
        int done = 0;
        sl_err_t err = pool_chunked_feed(&c->chunked, in->bytes, in->size, &ex->body, max, &used, &done);
        h2o_buffer_consume(&c->sock->input, used);
        exchange_charge(c, ex, ex->body.len);
        if (err != SL_OK) {
            pool_exchange_finish(ex, err == SL_ERR_TOO_LARGE ? POOL_FAIL_TOO_LARGE : POOL_FAIL_BAD_HTTP);
            return 1;
        }
        if (done) {
            pool_exchange_finish(ex, POOL_FAIL_NONE);
            return 1;
        }
    } else if (ex->head.content_length >= 0) {
        if (conn_read_sized(c, ex))
            return 1;
    } else {
        /* delimited by EOF (HTTP/1.0 style) */
        if (ex->body.len + in->size > max) {
            pool_exchange_finish(ex, POOL_FAIL_TOO_LARGE);
            return 1;
        }
        sl_buf_append(&ex->body, in->bytes, in->size);
        h2o_buffer_consume(&c->sock->input, in->size);
        exchange_charge(c, ex, ex->body.len);
        ex->head.keep_alive = 0;
        if (eof) {
            pool_exchange_finish(ex, POOL_FAIL_NONE);
            return 1;
        }
        return 0;
    }
    if (eof) {
        pool_exchange_finish(ex, POOL_FAIL_RESET);
        return 1;
    }
    return 0;
}

/* Parses the head; returns 1 if the exchange finished. */
static int conn_read_head(pool_conn_t *c, int eof)
{
    pool_exchange_t *ex = c->ex;
    h2o_buffer_t *in = c->sock->input;
    sl_err_t err = pool_http_parse_head(in->bytes, in->size, &ex->head);
    if (err == SL_ERR_TRUNCATED) {
        if (eof)
            pool_exchange_finish(ex, POOL_FAIL_RESET);
        return eof;
    }
    if (err != SL_OK || ex->head.encoded) {
        pool_exchange_finish(ex, POOL_FAIL_BAD_HTTP);
        return 1;
    }
    if (ex->head.content_length > (int64_t)conn_transport(c)->max_response_bytes) {
        pool_exchange_finish(ex, POOL_FAIL_TOO_LARGE);
        return 1;
    }
    if (h2o_timeout_is_linked(&ex->phase_timer))
        h2o_timeout_unlink(&ex->phase_timer);
    h2o_buffer_consume(&c->sock->input, ex->head.head_len);
    conn_enter(c, POOL_CONN_BODY);
    if (ex->head.content_length > 0)
        conn_make_room(c, ex);
    return conn_read_body(c, eof);
}

static void on_conn_read(h2o_socket_t *sock, const char *err)
{
    pool_conn_t *c = sock->data;
    pool_exchange_t *ex = c->ex;
    if (ex == NULL) { /* bytes after the answer, before we went idle */
        conn_destroy(c);
        return;
    }
    if (err == h2o_socket_error_out_of_memory) {
        /* h2o keeps a large answer in a temp file (TMPDIR): none could be
         * made or grown, or memory ran out. Not the upstream's doing. */
        pool_link_log_local(c->link, "no room to buffer the answer (temp folder full or memory short)");
        pool_exchange_finish(ex, POOL_FAIL_LOCAL);
        return;
    }
    int eof = err != NULL;
    ex->peer_closed |= eof;
    if (sock->input->size > 0)
        ex->got_bytes = 1;
    if (c->state == POOL_CONN_SENDING) {
        conn_read_head(c, eof);
        return;
    }
    if (c->state == POOL_CONN_BODY) {
        conn_read_body(c, eof);
        return;
    }
    if (eof)
        pool_exchange_finish(ex, POOL_FAIL_RESET);
}

/* Takes a reusable idle connection, closing stale ones on the way. */
static pool_conn_t *take_idle(pool_link_t *link, int is_write)
{
    uint64_t now = sl_now_ms();
    while (!h2o_linklist_is_empty(&link->idle)) {
        pool_conn_t *c = H2O_STRUCT_FROM_MEMBER(pool_conn_t, idle_link, link->idle.next);
        h2o_linklist_unlink(&c->idle_link);
        link->nidle--;
        h2o_timeout_unlink(&c->idle_timer);
        /* A write must not meet a connection the upstream may be closing
         * right now: that race makes a send ambiguous for no reason. */
        if (is_write && now - c->idle_since_ms > POOL_WRITE_REUSE_MAX_IDLE_MS) {
            conn_destroy(c);
            continue;
        }
        return c;
    }
    return NULL;
}

/* sock is opening: its data is c->opening until pool_sock_connect's
 * callback gives it back to c */
static void conn_adopt(pool_conn_t *c, h2o_socket_t *sock)
{
    c->sock = sock;
    h2o_buffer_set_prototype(&sock->input, conn_input_prototype());
}

static pool_conn_t *conn_new(pool_link_t *link, h2o_socket_t *sock)
{
    pool_conn_t *c = sl_xcalloc(1, sizeof(*c));
    c->link = link;
    c->state = POOL_CONN_CONNECTING; /* the initial state, not a transition */
    c->idle_timer.cb = on_idle_timeout;
    if (sock != NULL)
        conn_adopt(c, sock);
    return c;
}

static pool_conn_t *conn_connect(pool_link_t *link, pool_fail_t *fail)
{
    pool_conn_t *c = conn_new(link, NULL);
    h2o_socket_t *sock = pool_sock_connect(&c->opening, link, &conn_sock_cbs, c, fail);
    if (sock != NULL) {
        conn_adopt(c, sock);
        return c;
    }
    if (*fail == POOL_FAIL_DNS && pool_dns_pending(link)) {
        /* the first lookup is under way (a worker that just started):
         * wait for it, within connect_ms, rather than fail the attempt */
        h2o_linklist_insert(&link->dns_waiting, &c->wait_link);
        return c;
    }
    free(c);
    return NULL;
}

void pool_conn_dns_done(pool_link_t *link)
{
    /* taken one at a time: a callback may start or cancel other exchanges */
    h2o_linklist_t ready;
    h2o_linklist_init_anchor(&ready);
    h2o_linklist_insert_list(&ready, &link->dns_waiting);
    while (!h2o_linklist_is_empty(&ready)) {
        pool_conn_t *c = H2O_STRUCT_FROM_MEMBER(pool_conn_t, wait_link, ready.next);
        h2o_linklist_unlink(&c->wait_link);
        pool_fail_t fail;
        h2o_socket_t *sock = pool_sock_connect(&c->opening, link, &conn_sock_cbs, c, &fail);
        if (sock == NULL) {
            pool_exchange_finish(c->ex, fail);
            continue;
        }
        conn_adopt(c, sock);
    }
}

pool_conn_t *pool_conn_take(pool_link_t *link, int is_write, pool_fail_t *fail)
{
    pool_conn_t *c = take_idle(link, is_write);
    return c != NULL ? c : conn_connect(link, fail);
}

void pool_conn_put_back(pool_conn_t *c, int reusable)
{
    if (reusable)
        conn_make_idle(c);
    else
        conn_destroy(c);
}

void pool_conn_unsent(pool_conn_t *c)
{
    c->ex = NULL;
    switch (c->state) {
    case POOL_CONN_IDLE:
        conn_make_idle(c);
        return;
    case POOL_CONN_CONNECTING:
    case POOL_CONN_HANDSHAKE:
        if (c->sock == NULL) { /* waiting for the address: no connection yet */
            conn_destroy(c);
            return;
        }
        /* on the idle list while it opens: the next exchange takes it rather than open another (it
         * sends once open); the idle timeout bounds a connect or handshake nobody waits for */
        (void)idle_insert(c);
        return;
    case POOL_CONN_SENDING:
    case POOL_CONN_BODY:
    case POOL_CONN_STATE_COUNT:
        conn_destroy(c); /* asked already: not reusable until its answer, which nobody reads */
        return;
    }
}

/* Reads what is left of the answer a drained connection waits for. */
static void drain_body(pool_conn_t *c)
{
    h2o_buffer_t *in = c->sock->input;
    size_t n = in->size < c->drain_left ? in->size : c->drain_left;
    h2o_buffer_consume(&c->sock->input, n);
    c->drain_left -= n;
    if (c->drain_left > 0)
        return;
    h2o_linklist_unlink(&c->wait_link);
    if (c->sock->input->size != 0) { /* bytes after the answer */
        conn_destroy(c);
        return;
    }
    conn_make_idle(c);
}

static void on_drain_read(h2o_socket_t *sock, const char *err)
{
    pool_conn_t *c = sock->data;
    if (err != NULL) {
        conn_destroy(c);
        return;
    }
    if (c->state == POOL_CONN_SENDING) {
        pool_http_head_t head;
        sl_err_t e = pool_http_parse_head(sock->input->bytes, sock->input->size, &head);
        if (e == SL_ERR_TRUNCATED && sock->input->size < POOL_DRAIN_MAX_BYTES)
            return;
        if (e != SL_OK || head.chunked || !head.keep_alive || head.content_length < 0 ||
            head.content_length > POOL_DRAIN_MAX_BYTES) {
            conn_destroy(c);
            return;
        }
        h2o_buffer_consume(&sock->input, head.head_len);
        conn_enter(c, POOL_CONN_BODY);
        c->drain_left = (size_t)head.content_length;
    }
    drain_body(c);
}

void pool_conn_drain(pool_conn_t *c, const pool_exchange_t *ex)
{
    size_t left = 0;
    if (c->state == POOL_CONN_BODY) {
        /* a Content-Length body read in place is all in the socket's buffer; a larger one was moved out */
        int64_t rest = ex->head.content_length - (int64_t)(body_in_place(ex) ? 0 : ex->body.len);
        if (ex->head.chunked || ex->head.content_length < 0 || !ex->head.keep_alive || rest > POOL_DRAIN_MAX_BYTES) {
            conn_destroy(c);
            return;
        }
        left = (size_t)rest;
    }
    /* h2o writes from the exchange's buffers until the write is done: they go with the call */
    if (!ex->write_done || ex->peer_closed || (c->state != POOL_CONN_SENDING && c->state != POOL_CONN_BODY)) {
        conn_destroy(c);
        return;
    }
    c->drain_left = left;
    h2o_linklist_insert(&c->link->draining, &c->wait_link);
    h2o_timeout_link(conn_transport(c)->loop, &conn_transport(c)->drain_timeout, &c->idle_timer);
    h2o_socket_read_stop(c->sock);
    h2o_socket_read_start(c->sock, on_drain_read);
    if (c->sock->input->size > 0)
        on_drain_read(c->sock, NULL);
}

void pool_link_close_idle(pool_link_t *link)
{
    while (!h2o_linklist_is_empty(&link->draining))
        conn_destroy(H2O_STRUCT_FROM_MEMBER(pool_conn_t, wait_link, link->draining.next));
    while (!h2o_linklist_is_empty(&link->idle)) {
        pool_conn_t *c = H2O_STRUCT_FROM_MEMBER(pool_conn_t, idle_link, link->idle.next);
        conn_destroy(c);
    }
}
