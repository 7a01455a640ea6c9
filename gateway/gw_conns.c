/* gateway/gw_conns.c: the accept loop with its two pauses (max_connections,
 * accept errors) and the stalled-writer sweep. */
#include "gateway/gw_conns.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/sl_buf.h"
#include "base/sl_log.h"
#include "base/sl_tcp.h"
#include "base/sl_time.h"

#define MAX_LISTENERS 2
#define ACCEPTS_PER_EVENT 32
#define LOG_EVERY_MS 10000        /* at most one line per kind of trouble per 10 s */
#define SWEEP_MIN_MS 50
#define SWEEP_MAX_MS 1000
/* Lingering close (see gw_conns_linger): the client has this long in all,
 * and this long between two reads, to finish sending; what it sends is
 * read and dropped up to this many bytes. Past a bound the close may be a
 * reset, which is then the client's doing. */
#define LINGER_MAX_MS 10000
#define LINGER_IDLE_MS 2000
#define LINGER_MAX_BYTES (64u * 1024 * 1024)

typedef struct gw_listener {
    gw_conns_t *owner;
    h2o_socket_t *sock;
    h2o_accept_ctx_t *actx;
    int clients;                  /* the client listener: connections are tracked */
    int reading;                  /* the loop watches it for new connections */
    int paused_full;              /* at max_connections */
    int paused_error;             /* after an accept error, until the timer */
    h2o_timeout_entry_t resume;
} gw_listener_t;

/* One client connection, from accept until h2o disposes its socket. */
typedef struct gw_conn {
    h2o_linklist_t link;          /* in gw_conns_t.conns */
    gw_conns_t *owner;
    h2o_socket_t *sock;
    uint64_t acked;               /* the peer's acknowledged bytes at the last look */
    uint64_t since_ms;            /* when acked last moved; 0: not writing then */
    int resetting;
    int linger_fd;                /* a duplicate kept for the lingering close, or -1 */
    int lingering;                /* sock is now our own socket on linger_fd's connection */
    uint64_t linger_since_ms;
    uint64_t linger_bytes;        /* dropped so far */
    h2o_timeout_entry_t linger_idle;
} gw_conn_t;

struct gw_conns {
    h2o_loop_t *loop;
    const gw_server_conf_t *srv;
    gw_stats_t *stats;
    gw_listener_t listeners[MAX_LISTENERS];
    size_t nlisteners;
    h2o_linklist_t conns;
    size_t nconns;
    h2o_timeout_t pause_timeout;  /* GW_CONNS_PAUSE_MS */
    h2o_timeout_t sweep_timeout;  /* a quarter of write_timeout_ms, within [50, 1000] */
    h2o_timeout_t linger_timeout; /* LINGER_IDLE_MS */
    h2o_timeout_entry_t sweep;
    sl_log_limit_t log_full, log_error, log_stall;
};

static void on_accept(h2o_socket_t *sock, const char *err);

/* Starts or stops watching the listener to match its pauses. */
static void listener_update(gw_listener_t *l)
{
    int want = l->sock != NULL && !l->paused_full && !l->paused_error;
    if (want == l->reading)
        return;
    if (want)
        h2o_socket_read_start(l->sock, on_accept);
    else
        h2o_socket_read_stop(l->sock);
    l->reading = want;
}

static void on_resume(h2o_timeout_entry_t *entry)
{
    gw_listener_t *l = H2O_STRUCT_FROM_MEMBER(gw_listener_t, resume, entry);
    l->paused_error = 0;
    listener_update(l);
}

static unsigned long long open_files_limit(void)
{
    struct rlimit rl;
    return getrlimit(RLIMIT_NOFILE, &rl) == 0 ? (unsigned long long)rl.rlim_cur : 0;
}

static void pause_full(gw_listener_t *l)
{
    gw_conns_t *c = l->owner;
    uint64_t held;
    char tail[SL_LOG_HELD_MAX];
    l->paused_full = 1;
    listener_update(l);
    gw_stats_srv_add(c->stats, STATE_SRV_MAX_CONN_PAUSES, 1);
    if (sl_log_limit_pass(&c->log_full, sl_now_ms(), LOG_EVERY_MS, &held))
        sl_log_warn("%u client connections open (server.max_connections): not accepting until one closes%s",
                    c->srv->max_connections, sl_log_held_text(held, tail));
}

static void pause_error(gw_listener_t *l, int error)
{
    gw_conns_t *c = l->owner;
    uint64_t held;
    char tail[SL_LOG_HELD_MAX];
    l->paused_error = 1;
    listener_update(l);
    h2o_timeout_link(c->loop, &c->pause_timeout, &l->resume);
    gw_stats_srv_add(c->stats, STATE_SRV_ACCEPT_ERRORS, 1);
    if (sl_log_limit_pass(&c->log_error, sl_now_ms(), LOG_EVERY_MS, &held))
        sl_log_error("accept: %s (open files limit %llu, %zu client connections); pausing accepts for %u ms%s",
                     strerror(error), open_files_limit(), c->nconns, GW_CONNS_PAUSE_MS, sl_log_held_text(held, tail));
}

/* The connection is gone: its record, its count and maybe a paused listener. */
static void conn_forget(gw_conn_t *k)
{
    gw_conns_t *c = k->owner;
    h2o_linklist_unlink(&k->link);
    free(k);
    c->nconns--;
    gw_stats_srv_set(c->stats, STATE_SRV_CONNECTIONS, c->nconns);
    for (size_t i = 0; i < c->nlisteners; i++) {
        gw_listener_t *l = &c->listeners[i];
        if (l->clients && l->paused_full && c->nconns < c->srv->max_connections) {
            l->paused_full = 0;
            listener_update(l);
        }
    }
}

static void linger_end(gw_conn_t *k)
{
    if (h2o_timeout_is_linked(&k->linger_idle))
        h2o_timeout_unlink(&k->linger_idle);
    h2o_socket_close(k->sock);
    conn_forget(k);
}

static void on_linger_idle(h2o_timeout_entry_t *entry)
{
    linger_end(H2O_STRUCT_FROM_MEMBER(gw_conn_t, linger_idle, entry));
}

/* Drops what the client still sends; its end of the stream (or an error,
 * or a bound) ends the linger. */
static void on_linger_read(h2o_socket_t *sock, const char *err)
{
    gw_conn_t *k = sock->data;
    if (err == NULL) {
        k->linger_bytes += sock->input->size;
        h2o_buffer_consume(&sock->input, sock->input->size);
    }
    if (err != NULL || k->linger_bytes > LINGER_MAX_BYTES || sl_now_ms() - k->linger_since_ms > LINGER_MAX_MS) {
        linger_end(k);
        return;
    }
    h2o_timeout_unlink(&k->linger_idle);
    h2o_timeout_link(k->owner->loop, &k->owner->linger_timeout, &k->linger_idle);
}

/* h2o has closed its descriptor; the connection lives on in linger_fd.
 * Its answer is queued already: the FIN goes after it, then the reads. */
static void linger_start(gw_conn_t *k)
{
    gw_conns_t *c = k->owner;
    shutdown(k->linger_fd, SHUT_WR);
    k->sock = h2o_evloop_socket_create(c->loop, k->linger_fd, 0);
    k->sock->data = k;
    k->linger_fd = -1;
    k->lingering = 1;
    k->linger_since_ms = sl_now_ms();
    k->linger_idle.cb = on_linger_idle;
    h2o_timeout_link(c->loop, &c->linger_timeout, &k->linger_idle);
    h2o_socket_read_start(k->sock, on_linger_read);
}

static void on_conn_close(void *data)
{
    gw_conn_t *k = data;
    if (k->linger_fd >= 0 && !k->resetting) {
        linger_start(k);
        return;
    }
    if (k->linger_fd >= 0)
        close(k->linger_fd);
    conn_forget(k);
}

void gw_conns_linger(h2o_socket_t *sock)
{
    if (sock == NULL || sock->on_close.cb != on_conn_close)
        return; /* not a client connection this module tracks (admin) */
    gw_conn_t *k = sock->on_close.data;
    if (k->linger_fd >= 0 || k->resetting)
        return;
    k->linger_fd = fcntl(h2o_socket_get_fd(sock), F_DUPFD_CLOEXEC, 0); /* -1: an ordinary close */
}

static void track(gw_conns_t *c, h2o_socket_t *sock)
{
    gw_conn_t *k = sl_xcalloc(1, sizeof(*k));
    k->owner = c;
    k->sock = sock;
    k->linger_fd = -1;
    h2o_linklist_insert(&c->conns, &k->link);
    sock->on_close.cb = on_conn_close;
    sock->on_close.data = k;
    c->nconns++;
    gw_stats_srv_add(c->stats, STATE_SRV_ACCEPTED, 1);
    gw_stats_srv_set(c->stats, STATE_SRV_CONNECTIONS, c->nconns);
    if (!h2o_timeout_is_linked(&c->sweep))
        h2o_timeout_link(c->loop, &c->sweep_timeout, &c->sweep);
}

static int is_resource_error(int e)
{
    return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;
}

static void on_accept(h2o_socket_t *lsock, const char *err)
{
    gw_listener_t *l = lsock->data;
    gw_conns_t *c = l->owner;
    if (err != NULL)
        return;
    for (int i = 0; i < ACCEPTS_PER_EVENT; i++) {
        if (l->clients && c->nconns >= c->srv->max_connections) {
            pause_full(l);
            return;
        }
        errno = 0;
        h2o_socket_t *sock = h2o_evloop_socket_accept(lsock);
        if (sock == NULL) {
            if (is_resource_error(errno))
                pause_error(l, errno);
            return; /* EAGAIN: the queue is empty; others (ECONNABORTED): the next event */
        }
        if (l->clients)
            track(c, sock);
        h2o_accept(l->actx, sock);
    }
}

/* Resets a connection: h2o's pending write then fails and it frees the
 * connection. SO_LINGER 0 makes the close a RST, so the kernel drops the
 * unsent bytes at once instead of trying to deliver them. */
static void conn_reset(gw_conn_t *k)
{
    int fd = h2o_socket_get_fd(k->sock);
    struct linger lg = {1, 0};
    k->resetting = 1;
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    shutdown(fd, SHUT_RDWR);
}

static gw_conn_t *tracked(h2o_socket_t *sock)
{
    return sock != NULL && sock->on_close.cb == on_conn_close ? sock->on_close.data : NULL;
}

uint64_t gw_conns_stalled_ms(h2o_socket_t *sock, uint64_t now_ms)
{
    gw_conn_t *k = tracked(sock);
    uint64_t acked;
    if (k == NULL || k->lingering)
        return 0;
    if (k->resetting)
        return GW_CONNS_RESETTING;
    if (!h2o_socket_is_writing(sock) || sl_tcp_bytes_acked(h2o_socket_get_fd(sock), &acked) != SL_OK)
        return 0;
    if (k->since_ms == 0 || acked != k->acked) { /* as the sweep would see it */
        k->acked = acked;
        k->since_ms = now_ms;
        return 0;
    }
    return now_ms > k->since_ms ? now_ms - k->since_ms : 0;
}

int gw_conns_reset_stalled(h2o_socket_t *sock)
{
    gw_conn_t *k = tracked(sock);
    if (k == NULL || k->lingering || k->resetting)
        return 0;
    conn_reset(k);
    gw_stats_srv_add(k->owner->stats, STATE_SRV_STALLED_RESETS, 1);
    return 1;
}

static void on_sweep(h2o_timeout_entry_t *entry)
{
    gw_conns_t *c = H2O_STRUCT_FROM_MEMBER(gw_conns_t, sweep, entry);
    uint64_t now = sl_now_ms(), held;
    char tail[SL_LOG_HELD_MAX];
    size_t stalled = 0;
    for (h2o_linklist_t *n = c->conns.next; n != &c->conns; n = n->next) {
        gw_conn_t *k = H2O_STRUCT_FROM_MEMBER(gw_conn_t, link, n);
        uint64_t acked;
        if (k->resetting || k->lingering)
            continue;
        if (!h2o_socket_is_writing(k->sock)) {
            k->since_ms = 0;
            continue;
        }
        if (sl_tcp_bytes_acked(h2o_socket_get_fd(k->sock), &acked) != SL_OK)
            continue;
        if (k->since_ms == 0 || acked != k->acked) {
            k->acked = acked;
            k->since_ms = now;
        } else if (now - k->since_ms >= c->srv->write_timeout_ms) {
            conn_reset(k);
            stalled++;
        }
    }
    if (stalled > 0) {
        gw_stats_srv_add(c->stats, STATE_SRV_WRITE_TIMEOUTS, stalled);
        if (sl_log_limit_pass(&c->log_stall, now, LOG_EVERY_MS, &held))
            sl_log_warn("reset %zu client connection(s) that took no answer bytes for %u ms "
                        "(server.write_timeout_ms)%s",
                        stalled, c->srv->write_timeout_ms, sl_log_held_text(held, tail));
    }
    if (!h2o_linklist_is_empty(&c->conns))
        h2o_timeout_link(c->loop, &c->sweep_timeout, &c->sweep);
}

gw_conns_t *gw_conns_create(h2o_loop_t *loop, const gw_server_conf_t *srv, gw_stats_t *stats)
{
    gw_conns_t *c = sl_xcalloc(1, sizeof(*c));
    c->loop = loop;
    c->srv = srv;
    c->stats = stats;
    h2o_linklist_init_anchor(&c->conns);
    uint32_t every = srv->write_timeout_ms / 4;
    every = every < SWEEP_MIN_MS ? SWEEP_MIN_MS : every > SWEEP_MAX_MS ? SWEEP_MAX_MS : every;
    h2o_timeout_init(loop, &c->pause_timeout, GW_CONNS_PAUSE_MS);
    h2o_timeout_init(loop, &c->sweep_timeout, every);
    h2o_timeout_init(loop, &c->linger_timeout, LINGER_IDLE_MS);
    c->sweep.cb = on_sweep;
    return c;
}

int gw_conns_listen(gw_conns_t *c, int fd, h2o_accept_ctx_t *actx, int clients)
{
    if (c->nlisteners >= MAX_LISTENERS)
        return -1;
    gw_listener_t *l = &c->listeners[c->nlisteners++];
    l->owner = c;
    l->actx = actx;
    l->clients = clients;
    l->resume.cb = on_resume;
    l->sock = h2o_evloop_socket_create(c->loop, fd, H2O_SOCKET_FLAG_DONT_READ);
    l->sock->data = l;
    listener_update(l);
    return 0;
}

void gw_conns_stop_accepting(gw_conns_t *c)
{
    for (size_t i = 0; i < c->nlisteners; i++) {
        gw_listener_t *l = &c->listeners[i];
        if (l->sock == NULL)
            continue;
        if (h2o_timeout_is_linked(&l->resume))
            h2o_timeout_unlink(&l->resume);
        if (l->reading)
            h2o_socket_read_stop(l->sock);
        l->reading = 0;
        h2o_socket_close(l->sock);
        l->sock = NULL;
    }
}

size_t gw_conns_open(const gw_conns_t *c)
{
    return c->nconns;
}

void gw_conns_destroy(gw_conns_t *c)
{
    if (c == NULL)
        return;
    gw_conns_stop_accepting(c);
    if (h2o_timeout_is_linked(&c->sweep))
        h2o_timeout_unlink(&c->sweep);
    /* sockets h2o still holds must not call back into freed records */
    while (!h2o_linklist_is_empty(&c->conns)) {
        gw_conn_t *k = H2O_STRUCT_FROM_MEMBER(gw_conn_t, link, c->conns.next);
        if (k->lingering) {
            h2o_timeout_unlink(&k->linger_idle);
            h2o_socket_close(k->sock);
        } else {
            k->sock->on_close.cb = NULL;
            k->sock->on_close.data = NULL;
            if (k->linger_fd >= 0)
                close(k->linger_fd);
        }
        h2o_linklist_unlink(&k->link);
        free(k);
    }
    h2o_timeout_dispose(c->loop, &c->pause_timeout);
    h2o_timeout_dispose(c->loop, &c->sweep_timeout);
    h2o_timeout_dispose(c->loop, &c->linger_timeout);
    free(c);
}

/* Every client connection takes a descriptor, and most one upstream as
 * well, while the usual soft limit is 1024: the soft limit goes up to the
 * hard one (what the administrator allows), for the workers to inherit.
 * Called by the master before it starts any. */
void gw_conns_raise_open_files(unsigned max_connections)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    rlim_t before = rl.rlim_cur;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || getrlimit(RLIMIT_NOFILE, &rl) != 0)
            rl.rlim_cur = before;
    }
    unsigned long long need = (unsigned long long)max_connections * 2 + 64;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need)
        sl_log_warn("open files limit is %llu (hard limit %llu), below the %llu that server.max_connections %u "
                    "needs (a client and an upstream descriptor each): at the limit, workers pause accepting; "
                    "raise the hard limit (ulimit -Hn, systemd LimitNOFILE=) or lower max_connections",
                    (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max, need,
                    max_connections);
    else if (rl.rlim_cur != before)
        sl_log_info("open files limit raised from %llu to %llu", (unsigned long long)before,
                    (unsigned long long)rl.rlim_cur);
}
