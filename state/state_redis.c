/* state/state_redis.c: one hiredis asynchronous connection driven by the
 * worker's h2o event loop.
 *
 * h2o 2.2.5 has no hiredis bridge, so this is one: hiredis owns its socket
 * and does its own reads and writes; the loop only tells it when the socket
 * is readable or writable. The loop watches a dup() of the socket (h2o
 * closes what it watches, hiredis closes its own), created with
 * H2O_SOCKET_FLAG_DONT_READ so that h2o calls back without reading.
 * hiredis' hooks map to h2o_socket_read_start/stop (reads) and
 * h2o_socket_notify_write (one write notification at a time; a "delete"
 * only makes the next one do nothing). A socket per connection, no thread:
 * the callbacks run on the worker's loop like everything else there.
 *
 * hiredis frees a context itself when the connection fails; its cleanup hook
 * is the one place that learns it for sure, so that is where the watch is
 * closed and the owner told. */
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "state/state_cluster_int.h"

typedef struct cmd_op {
    state_redis_t *r;
    state_redis_fn fn;
    void *data;
    int tracked;                  /* counted in r->sent_ms */
} cmd_op_t;

static void on_readable(h2o_socket_t *sock, const char *err)
{
    (void)err; /* hiredis reads the socket and sees the error itself */
    state_redis_t *r = sock->data;
    if (r->ac != NULL)
        redisAsyncHandleRead(r->ac);
}

static void on_writable(h2o_socket_t *sock, const char *err)
{
    (void)err;
    state_redis_t *r = sock->data;
    r->write_armed = 0;
    if (r->ac != NULL && r->want_write)
        redisAsyncHandleWrite(r->ac);
}

static void hook_add_read(void *p)
{
    state_redis_t *r = p;
    if (r->sock != NULL && !r->reading) {
        r->reading = 1;
        h2o_socket_read_start(r->sock, on_readable);
    }
}

static void hook_del_read(void *p)
{
    state_redis_t *r = p;
    if (r->sock != NULL && r->reading) {
        r->reading = 0;
        h2o_socket_read_stop(r->sock);
    }
}

static void hook_add_write(void *p)
{
    state_redis_t *r = p;
    r->want_write = 1;
    if (r->sock != NULL && !r->write_armed) {
        r->write_armed = 1;
        h2o_socket_notify_write(r->sock, on_writable);
    }
}

static void hook_del_write(void *p)
{
    ((state_redis_t *)p)->want_write = 0;
}

static void hook_cleanup(void *p)
{
    state_redis_t *r = p;
    snprintf(r->error, sizeof(r->error), "%s", state_redis_error(r));
    if (r->sock != NULL) {
        r->sock->data = NULL;
        h2o_socket_close(r->sock);
        r->sock = NULL;
    }
    r->ac = NULL;
    r->reading = r->want_write = r->write_armed = r->ready = 0;
    if (r->on_closed != NULL)
        r->on_closed(r);
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    state_redis_t *r = ac->data;
    if (status == REDIS_OK)
        r->ready = 1;
    /* on failure hiredis frees the context next: the cleanup hook reports it */
}

static int attach(state_redis_t *r)
{
    int fd = fcntl(r->ac->c.fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) {
        sl_log_error("cluster: redis %s connection: dup: %s", r->name, strerror(errno));
        return -1;
    }
    r->sock = h2o_evloop_socket_create(r->cl->loop, fd, H2O_SOCKET_FLAG_DONT_READ);
    r->sock->data = r;
    r->ac->data = r;
    r->ac->ev.data = r;
    r->ac->ev.addRead = hook_add_read;
    r->ac->ev.delRead = hook_del_read;
    r->ac->ev.addWrite = hook_add_write;
    r->ac->ev.delWrite = hook_del_write;
    r->ac->ev.cleanup = hook_cleanup;
    redisAsyncSetConnectCallback(r->ac, on_connect);
    /* the first writable event tells hiredis whether connect(2) succeeded */
    hook_add_read(r);
    hook_add_write(r);
    return 0;
}

int state_redis_open(state_redis_t *r, const char *addr, uint16_t port)
{
    r->head = r->count = 0;
    r->ac = redisAsyncConnect(addr, port);
    if (r->ac == NULL || r->ac->err) {
        sl_log_debug("cluster: redis %s connection to %s:%u: %s", r->name, addr, (unsigned)port,
                     r->ac ? r->ac->errstr : "out of memory");
        if (r->ac != NULL)
            redisAsyncFree(r->ac); /* not attached: no hook runs */
        r->ac = NULL;
        return -1;
    }
    if (attach(r) != 0) {
        redisAsyncContext *ac = r->ac;
        r->on_closed = NULL;
        redisAsyncFree(ac);
        r->ac = NULL;
        return -1;
    }
    return 0;
}

void state_redis_close(state_redis_t *r)
{
    if (r->ac != NULL)
        redisAsyncFree(r->ac); /* deferred by hiredis when inside a callback */
}

static void untrack(state_redis_t *r)
{
    if (r->count > 0) {
        r->head = (r->head + 1) % STATE_REDIS_MAX_PENDING;
        r->count--;
    }
}

static void on_reply(redisAsyncContext *ac, void *reply, void *priv)
{
    (void)ac;
    cmd_op_t *op = priv;
    if (op->tracked)
        untrack(op->r);
    if (op->fn != NULL)
        op->fn(op->data, reply);
    free(op);
}

int state_redis_send(state_redis_t *r, state_redis_fn fn, void *data, int argc, const char **argv,
                     const size_t *argvlen)
{
    if (r->ac == NULL || r->count >= STATE_REDIS_MAX_PENDING)
        return -1;
    cmd_op_t *op = sl_xmalloc(sizeof(*op));
    *op = (cmd_op_t){r, fn, data, 1};
    if (redisAsyncCommandArgv(r->ac, on_reply, op, argc, argv, argvlen) != REDIS_OK) {
        free(op);
        return -1;
    }
    r->sent_ms[(r->head + r->count) % STATE_REDIS_MAX_PENDING] = sl_now_ms();
    r->count++;
    r->cl->commands++;
    return 0;
}

static void on_message(redisAsyncContext *ac, void *reply, void *priv)
{
    (void)ac;
    state_redis_t *r = priv;
    if (r->sub_fn != NULL)
        r->sub_fn(r->sub_data, reply);
}

int state_redis_subscribe(state_redis_t *r, state_redis_fn fn, void *data, int argc, const char **argv,
                          const size_t *argvlen)
{
    if (r->ac == NULL)
        return -1;
    /* the callback stays registered for every message (and gets NULL when
     * the connection goes) */
    r->sub_fn = fn;
    r->sub_data = data;
    if (redisAsyncCommandArgv(r->ac, on_message, r, argc, argv, argvlen) != REDIS_OK)
        return -1;
    r->cl->commands++;
    return 0;
}

const char *state_redis_error(const state_redis_t *r)
{
    if (r->ac != NULL && r->ac->c.err != 0 && r->ac->c.errstr[0] != '\0')
        return r->ac->c.errstr;
    return r->ready ? "connection closed" : "connection refused or lost";
}

uint64_t state_redis_oldest_ms(const state_redis_t *r)
{
    return r->count > 0 ? r->sent_ms[r->head] : 0;
}
