/* pool/pool_exchange.c: one request and its answer on an upstream connection
 * (pool_conn.c): its deadlines (connect or first byte, and the whole
 * attempt), the end that hands the connection back, cancellation, and the
 * answer bytes charged to the worker's budget. The socket transport's table
 * of operations. */
#include <string.h>

#include "base/sl_time.h"
#include "wire/traceparent.h"
#include "pool/pool_link_int.h"

/* The failure of an exchange whose connection is not open yet. */
static pool_fail_t connect_fail(const pool_conn_t *c)
{
    return c->sock == NULL ? POOL_FAIL_DNS : POOL_FAIL_CONNECT_TIMEOUT; /* no socket: still looking up */
}

static void on_phase_timeout(h2o_timeout_entry_t *entry)
{
    pool_exchange_t *ex = H2O_STRUCT_FROM_MEMBER(pool_exchange_t, phase_timer, entry);
    pool_conn_state_t st = ex->conn->state;
    int connecting = st == POOL_CONN_CONNECTING || st == POOL_CONN_HANDSHAKE;
    pool_exchange_finish(ex, connecting ? connect_fail(ex->conn) : POOL_FAIL_FIRST_BYTE_TIMEOUT);
}

static void on_attempt_timeout(h2o_timeout_entry_t *entry)
{
    pool_exchange_t *ex = H2O_STRUCT_FROM_MEMBER(pool_exchange_t, attempt_timer, entry);
    pool_conn_state_t st = ex->conn->state;
    int connecting = st == POOL_CONN_CONNECTING || st == POOL_CONN_HANDSHAKE;
    pool_exchange_finish(ex, connecting ? connect_fail(ex->conn) : POOL_FAIL_ATTEMPT_TIMEOUT);
}

static void unlink_timers(pool_exchange_t *ex)
{
    if (h2o_timeout_is_linked(&ex->phase_timer))
        h2o_timeout_unlink(&ex->phase_timer);
    if (h2o_timeout_is_linked(&ex->attempt_timer))
        h2o_timeout_unlink(&ex->attempt_timer);
    if (h2o_timeout_is_linked(&ex->send_soon))
        h2o_timeout_unlink(&ex->send_soon);
}

/* A kept-alive connection's request goes out a loop turn after the call
 * took the connection: a client stream reset in the same read as its
 * request (HTTP/2 rapid reset) cancels the exchange before anything is
 * written, and the connection stays pooled (pool_conn_unsent) instead of
 * being closed with an answer nobody reads. */
static void on_send_soon(h2o_timeout_entry_t *entry)
{
    pool_exchange_t *ex = H2O_STRUCT_FROM_MEMBER(pool_exchange_t, send_soon, entry);
    pool_conn_send(ex->conn);
}

/* Ends the exchange: the connection goes back to the pool when reusable. */
void pool_exchange_finish(pool_exchange_t *ex, pool_fail_t fail)
{
    pool_conn_t *c = ex->conn;
    unlink_timers(ex);
    ex->fail = fail;
    ex->latency_us = (uint32_t)(sl_now_us() - ex->started_us);
    ex->conn = NULL;
    pool_link_t *link = ex->link; /* ex may be gone once its callback returns */
    link->inflight--;
    if (c != NULL) {
        c->ex = NULL;
        /* An upstream may answer before it read the whole request (a 429 or
         * 401 from a front proxy): h2o still holds our buffers then, and a
         * connection it closed as it answered must not meet the next send. */
        int reusable = fail == POOL_FAIL_NONE && ex->head.keep_alive && ex->write_done && !ex->peer_closed &&
                       c->sock->input->size == 0;
        pool_conn_put_back(c, reusable);
    }
    ex->cb(ex);
    link->timers->t->slot_freed(link);
}

pool_fail_t pool_exchange_start(pool_exchange_t *ex, pool_link_t *link, const char *body, size_t len, int is_write,
                                pool_exchange_cb cb, void *data)
{
    pool_link_timers_t *tm = link->timers;
    memset(ex, 0, sizeof(*ex));
    ex->link = link;
    ex->cb = cb;
    ex->data = data;
    ex->is_write = is_write;
    ex->phase_timer.cb = on_phase_timeout;
    ex->attempt_timer.cb = on_attempt_timeout;
    ex->send_soon.cb = on_send_soon;
    ex->started_us = sl_now_us();
    ex->bufs[0] = h2o_iovec_init(link->prefix.base, link->prefix.len);
    size_t n = sl_u64_str(ex->clen, len);
    memcpy(ex->clen + n, "\r\n\r\n", 5);
    ex->bufs[1] = h2o_iovec_init(ex->clen, n + 4);
    ex->bufs[2] = h2o_iovec_init(body, len);

    pool_fail_t fail = POOL_FAIL_NONE;
    pool_conn_t *c = pool_conn_take(link, is_write, &fail);
    if (c == NULL)
        return fail;
    c->ex = ex;
    ex->conn = c;
    link->inflight++;
    h2o_timeout_link(tm->t->loop, &tm->attempt, &ex->attempt_timer);
    if (c->state == POOL_CONN_IDLE) {
        ex->reused = 1;
        h2o_socket_read_stop(c->sock); /* its idle reader would free it under us; the send reads again */
        h2o_timeout_link(tm->t->loop, &tm->t->zero_timeout, &ex->send_soon);
    } else {
        h2o_timeout_link(tm->t->loop, &tm->connect, &ex->phase_timer);
    }
    return POOL_FAIL_NONE;
}

void pool_exchange_traceparent(pool_exchange_t *ex, const char *tp)
{
    size_t n = ex->bufs[1].len - 4; /* the Content-Length value, before "\r\n\r\n" */
    static const char name[] = "\r\ntraceparent: ";
    if (n + sizeof(name) - 1 + WIRE_TRACEPARENT_LEN + 5 > sizeof(ex->clen))
        return;
    memcpy(ex->clen + n, name, sizeof(name) - 1);
    n += sizeof(name) - 1;
    memcpy(ex->clen + n, tp, WIRE_TRACEPARENT_LEN);
    n += WIRE_TRACEPARENT_LEN;
    memcpy(ex->clen + n, "\r\n\r\n", 5);
    ex->bufs[1] = h2o_iovec_init(ex->clen, n + 4);
}

void pool_exchange_cancel(pool_exchange_t *ex)
{
    if (ex->conn == NULL)
        return;
    unlink_timers(ex);
    ex->conn->ex = NULL;
    if (ex->sent)
        pool_conn_drain(ex->conn, ex);
    else
        pool_conn_unsent(ex->conn);
    ex->conn = NULL;
    ex->link->inflight--;
    pool_exchange_body_dispose(ex);
}

void pool_budget_release(pool_transport_t *t, size_t bytes)
{
    if (t->budget != NULL && bytes > 0)
        sl_budget_release(t->budget, bytes);
}

void pool_exchange_body_dispose(pool_exchange_t *ex)
{
    pool_transport_t *t = ex->link->timers->t;
    pool_budget_release(t, ex->charged);
    ex->charged = 0;
    sl_buf_dispose(&ex->body);
    if (ex->in != NULL)
        h2o_buffer_dispose(&ex->in);
    t->slot_freed(ex->link);
}

const pool_transport_ops_t pool_transport_sockets = {pool_exchange_start, pool_exchange_cancel};
