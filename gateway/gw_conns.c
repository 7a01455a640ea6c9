/* gateway/gw_conns.c: the accept loop with its pauses (max_connections when
 * no connection can give way, accept errors), the per-address cap, eviction
 * of connections waiting on their clients, the admin listener's cap and
 * spare descriptor, and the stalled-writer sweep. */
#include "gateway/gw_conns.h"
#include "gateway/gw_conns_int.h"

#include <arpa/inet.h>
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
#include "gateway/gw_identity.h"
#include "gateway/gw_peers.h"

static void on_accept(h2o_socket_t *sock, const char *err);

/* Keeps one descriptor for the admin listener: at EMFILE it is closed and
 * the admin connection takes its number, so /healthz and /metrics answer
 * exactly when the client side has used up every descriptor. Taken again
 * whenever a connection closes (before a listener can take the number). */
static void spare_take(gw_conns_t *c)
{
    if (c->spare_fd < 0)
        c->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static int spare_release(gw_conns_t *c)
{
    if (c->spare_fd < 0)
        return 0;
    close(c->spare_fd);
    c->spare_fd = -1;
    return 1;
}

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
    if (l->owner->has_admin)
        spare_take(l->owner);
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
    gw_stats_srv_add(c->stats, l->clients ? STATE_SRV_MAX_CONN_PAUSES : STATE_SRV_ADMIN_CONN_PAUSES, 1);
    if (!sl_log_limit_pass(&c->log_full, sl_now_ms(), LOG_EVERY_MS, &held))
        return;
    if (l->clients)
        sl_log_warn("%u client connections open (server.max_connections), none waiting on its client: "
                    "not accepting until one closes%s",
                    c->srv->max_connections, sl_log_held_text(held, tail));
    else
        sl_log_warn("%u admin connections open (admin.max_connections): not accepting until one closes%s",
                    c->admin_max, sl_log_held_text(held, tail));
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

static void resume_full(gw_conns_t *c)
{
    for (size_t i = 0; i < c->nlisteners; i++) {
        gw_listener_t *l = &c->listeners[i];
        int room = l->clients ? c->nconns - c->nclosing < c->srv->max_connections : c->nadmin < c->admin_max;
        if (l->paused_full && room) {
            l->paused_full = 0;
            listener_update(l);
        }
    }
}

static void unlink_reqs(gw_conn_t *k)
{
    while (!h2o_linklist_is_empty(&k->reqs))
        h2o_linklist_unlink(k->reqs.next);
}

void gw_conns_req_begin(h2o_socket_t *sock, gw_conns_req_t *r)
{
    gw_conn_t *k = gw_conns_tracked(sock);
    if (k != NULL && !h2o_linklist_is_linked(&r->link))
        h2o_linklist_insert(&k->reqs, &r->link);
}

void gw_conns_req_end(gw_conns_req_t *r)
{
    if (h2o_linklist_is_linked(&r->link))
        h2o_linklist_unlink(&r->link);
}

/* The connection is gone: its record, its counts and maybe a paused listener. */
void gw_conns_forget(gw_conn_t *k)
{
    gw_conns_t *c = k->owner;
    unlink_reqs(k);
    h2o_linklist_unlink(&k->link);
    if (h2o_timeout_is_linked(&k->first_request))
        h2o_timeout_unlink(&k->first_request);
    if (k->admin) {
        c->nadmin--;
        gw_stats_srv_set(c->stats, STATE_SRV_ADMIN_CONNECTIONS, c->nadmin);
    } else {
        if (k->has_peer)
            gw_peers_remove(c->peers, k->peer);
        c->nclosing -= k->resetting ? 1 : 0;
        c->nconns--;
        gw_stats_srv_set(c->stats, STATE_SRV_CONNECTIONS, c->nconns);
    }
    free(k);
    if (c->has_admin)
        spare_take(c);
    resume_full(c);
}

static void on_conn_close(void *data)
{
    gw_conn_t *k = data;
    if (k->linger_fd >= 0 && !k->resetting) {
        gw_conns_linger_start(k);
        return;
    }
    if (k->linger_fd >= 0)
        close(k->linger_fd);
    gw_conns_forget(k);
}

gw_conn_t *gw_conns_tracked(h2o_socket_t *sock)
{
    return sock != NULL && sock->on_close.cb == on_conn_close ? sock->on_close.data : NULL;
}

/* Closes a connection h2o holds: shutdown makes its next read or write
 * fail, and h2o frees the connection. hard: SO_LINGER 0 makes the close a
 * RST, so the kernel drops unsent bytes at once instead of trying to
 * deliver them; otherwise the client sees an ordinary FIN. */
static void conn_close_soon(gw_conn_t *k, int hard)
{
    int fd = h2o_socket_get_fd(k->sock);
    k->resetting = 1;
    k->owner->nclosing++;
    if (hard) {
        struct linger lg = {1, 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    }
    shutdown(fd, SHUT_RDWR);
}

/* 1 if the connection waits on its client: h2o reads it and writes nothing
 * (kept alive with no request, or a request not yet whole), or it lingers
 * after its answer; and no request of it is being answered (an HTTP/2
 * connection reads while its calls are upstream). Such a connection may
 * give way to a new one. */
static int waits_on_client(gw_conn_t *k)
{
    if (k->resetting || !h2o_linklist_is_empty(&k->reqs))
        return 0;
    return k->lingering || (h2o_socket_is_reading(k->sock) && !h2o_socket_is_writing(k->sock));
}

/* The oldest connection that may give way, or NULL: a scan, but only at
 * max_connections, and it stops at the first one. */
static gw_conn_t *oldest_waiting(gw_conns_t *c)
{
    for (h2o_linklist_t *n = c->conns.next; n != &c->conns; n = n->next) {
        gw_conn_t *k = H2O_STRUCT_FROM_MEMBER(gw_conn_t, link, n);
        if (waits_on_client(k))
            return k;
    }
    return NULL;
}

static void evict(gw_conns_t *c, gw_conn_t *k)
{
    uint64_t held;
    char tail[SL_LOG_HELD_MAX];
    conn_close_soon(k, 0);
    gw_stats_srv_add(c->stats, STATE_SRV_EVICTED, 1);
    if (sl_log_limit_pass(&c->log_evict, sl_now_ms(), LOG_EVERY_MS, &held))
        sl_log_warn("%u client connections open (server.max_connections): closing the oldest waiting on its "
                    "client (idle, or its request unfinished) for a new one%s",
                    c->srv->max_connections, sl_log_held_text(held, tail));
}

/* Near max_connections a new connection has first_request_timeout_ms to
 * send a whole request: a slow sender cannot hold a seat for the whole
 * idle timeout when seats are scarce. */
static void on_first_request(h2o_timeout_entry_t *entry)
{
    gw_conn_t *k = H2O_STRUCT_FROM_MEMBER(gw_conn_t, first_request, entry);
    if (k->lingering || k->sock->bytes_written != 0 || !waits_on_client(k))
        return;
    conn_close_soon(k, 0);
    gw_stats_srv_add(k->owner->stats, STATE_SRV_FIRST_REQUEST_TIMEOUTS, 1);
}

static void track(gw_conns_t *c, h2o_socket_t *sock, int admin, const uint8_t *peer)
{
    gw_conn_t *k = sl_xcalloc(1, sizeof(*k));
    k->owner = c;
    k->sock = sock;
    k->admin = admin;
    k->linger_fd = -1;
    h2o_linklist_init_anchor(&k->reqs);
    k->first_request.cb = on_first_request;
    sock->on_close.cb = on_conn_close;
    sock->on_close.data = k;
    if (admin) {
        h2o_linklist_insert(&c->admin_conns, &k->link);
        c->nadmin++;
        gw_stats_srv_set(c->stats, STATE_SRV_ADMIN_CONNECTIONS, c->nadmin);
        return;
    }
    h2o_linklist_insert(&c->conns, &k->link);
    if (peer != NULL) {
        k->has_peer = 1;
        memcpy(k->peer, peer, 16);
        gw_peers_add(c->peers, peer);
    }
    c->nconns++;
    if ((c->nconns - c->nclosing) * 4 > (size_t)c->srv->max_connections * 3)
        h2o_timeout_link(c->loop, &c->first_request_timeout, &k->first_request);
    gw_stats_srv_add(c->stats, STATE_SRV_ACCEPTED, 1);
    gw_stats_srv_set(c->stats, STATE_SRV_CONNECTIONS, c->nconns);
    if (!h2o_timeout_is_linked(&c->sweep))
        h2o_timeout_link(c->loop, &c->sweep_timeout, &c->sweep);
}

static int is_resource_error(int e)
{
    return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;
}

/* The client's address as a gw_peers key into key; 0 if it is not limited
 * per address (a trusted proxy speaks for many clients; not IP). */
static int peer_key(gw_conns_t *c, h2o_socket_t *sock, uint8_t key[16])
{
    struct sockaddr_storage ss;
    if (h2o_socket_getpeername(sock, (struct sockaddr *)&ss) == 0 ||
        !gw_identity_group_key((struct sockaddr *)&ss, c->srv->ipv6_prefix, key))
        return 0;
    if (c->srv->ntrusted_proxies != 0) {
        char text[INET6_ADDRSTRLEN];
        const void *a = ss.ss_family == AF_INET ? (void *)&((struct sockaddr_in *)&ss)->sin_addr
                                                : (void *)&((struct sockaddr_in6 *)&ss)->sin6_addr;
        if (inet_ntop(ss.ss_family, a, text, sizeof(text)) != NULL &&
            gw_identity_in_cidrs(text, c->srv->trusted_proxies, c->srv->ntrusted_proxies))
            return 0;
    }
    return 1;
}

/* Takes a new client connection into the count, or closes it (its
 * address is at max_connections_per_address). make_room: a connection
 * to close for it, the worker being full. */
static void admit_client(gw_conns_t *c, gw_listener_t *l, h2o_socket_t *sock, gw_conn_t *make_room)
{
    uint8_t key[16];
    int keyed = peer_key(c, sock, key);
    if (keyed && gw_peers_get(c->peers, key) >= c->srv->max_connections_per_address) {
        h2o_socket_close(sock);
        gw_stats_srv_add(c->stats, STATE_SRV_PER_ADDRESS, 1);
        return;
    }
    if (make_room != NULL)
        evict(c, make_room);
    track(c, sock, 0, keyed ? key : NULL);
    h2o_accept(l->actx, sock);
}

static void on_accept(h2o_socket_t *lsock, const char *err)
{
    gw_listener_t *l = lsock->data;
    gw_conns_t *c = l->owner;
    if (err != NULL)
        return;
    for (int i = 0; i < ACCEPTS_PER_EVENT; i++) {
        gw_conn_t *make_room = NULL;
        if (l->clients && c->nconns - c->nclosing >= c->srv->max_connections &&
            (make_room = oldest_waiting(c)) == NULL) {
            pause_full(l);
            return;
        }
        if (!l->clients && c->nadmin >= c->admin_max) {
            pause_full(l);
            return;
        }
        errno = 0;
        h2o_socket_t *sock = h2o_evloop_socket_accept(lsock);
        if (sock == NULL && !l->clients && is_resource_error(errno) && spare_release(c)) {
            sock = h2o_evloop_socket_accept(lsock);
            gw_stats_srv_add(c->stats, STATE_SRV_ADMIN_RESERVE, sock != NULL);
        }
        if (sock == NULL) {
            if (is_resource_error(errno))
                pause_error(l, errno);
            return; /* EAGAIN: the queue is empty; others (ECONNABORTED): the next event */
        }
        if (l->clients) {
            admit_client(c, l, sock, make_room);
        } else {
            track(c, sock, 1, NULL);
            h2o_accept(l->actx, sock);
        }
    }
}

/* How long k's answer has made no progress, looked at now: neither the
 * peer's acknowledged bytes nor h2o's written ones moved since the last look
 * (0 when they just did). Without the written count a look that saw the last
 * answer wholly acknowledged, followed within a sweep by the next answer not
 * yet acknowledged, read as a stall as long as the time between the looks. */
static uint64_t stall_look(gw_conn_t *k, uint64_t acked, uint64_t now)
{
    size_t written = k->sock->bytes_written;
    if (k->since_ms == 0 || acked != k->acked || written != k->written) {
        k->acked = acked;
        k->written = written;
        k->since_ms = now;
        return 0;
    }
    return now > k->since_ms ? now - k->since_ms : 0;
}

uint64_t gw_conns_stalled_ms(h2o_socket_t *sock, uint64_t now_ms)
{
    gw_conn_t *k = gw_conns_tracked(sock);
    uint64_t acked;
    if (k == NULL || k->lingering)
        return 0;
    if (k->resetting)
        return GW_CONNS_RESETTING;
    if (!h2o_socket_is_writing(sock) || sl_tcp_bytes_acked(h2o_socket_get_fd(sock), &acked) != SL_OK)
        return 0;
    return stall_look(k, acked, now_ms); /* as the sweep sees it */
}

int gw_conns_reset_stalled(h2o_socket_t *sock)
{
    gw_conn_t *k = gw_conns_tracked(sock);
    if (k == NULL || k->lingering || k->resetting)
        return 0;
    conn_close_soon(k, 1);
    gw_stats_srv_add(k->owner->stats, STATE_SRV_STALLED_RESETS, 1);
    return 1;
}

void gw_conns_h2_call_begin(h2o_socket_t *sock)
{
    gw_conn_t *k = gw_conns_tracked(sock);
    if (k != NULL)
        k->h2_calls++;
}

void gw_conns_h2_call_reset(h2o_socket_t *sock)
{
    gw_conn_t *k = gw_conns_tracked(sock);
    uint64_t held;
    char tail[SL_LOG_HELD_MAX];
    if (k == NULL || k->resetting || k->lingering)
        return;
    k->h2_resets++;
    if (k->h2_resets < RAPID_RESETS_MIN || k->h2_resets * 2 <= k->h2_calls)
        return;
    /* Linux goes on delivering what arrives after SHUT_RD, and with every
     * stream reset h2o may have nothing to write that would fail: first
     * dissolve the association (a RST to the peer, whose next frames then
     * meet a RST too), so h2o's next read fails as well */
    struct sockaddr unspec = {.sa_family = AF_UNSPEC};
    (void)connect(h2o_socket_get_fd(k->sock), &unspec, sizeof(unspec));
    conn_close_soon(k, 1);
    gw_stats_srv_add(k->owner->stats, STATE_SRV_RAPID_RESETS, 1);
    if (sl_log_limit_pass(&k->owner->log_rapid, sl_now_ms(), LOG_EVERY_MS, &held))
        sl_log_warn("reset an HTTP/2 client connection that reset %u of its %u calls before their answers "
                    "(rapid reset)%s", k->h2_resets, k->h2_calls, sl_log_held_text(held, tail));
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
        if (stall_look(k, acked, now) >= c->srv->write_timeout_ms) {
            conn_close_soon(k, 1);
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

gw_conns_t *gw_conns_create(h2o_loop_t *loop, const cfg_server_conf_t *srv, uint32_t admin_max, gw_stats_t *stats)
{
    gw_conns_t *c = sl_xcalloc(1, sizeof(*c));
    c->loop = loop;
    c->srv = srv;
    c->admin_max = admin_max;
    c->stats = stats;
    c->spare_fd = -1;
    c->peers = gw_peers_create();
    h2o_linklist_init_anchor(&c->conns);
    h2o_linklist_init_anchor(&c->admin_conns);
    uint32_t every = srv->write_timeout_ms / 4;
    every = every < SWEEP_MIN_MS ? SWEEP_MIN_MS : every > SWEEP_MAX_MS ? SWEEP_MAX_MS : every;
    h2o_timeout_init(loop, &c->pause_timeout, GW_CONNS_PAUSE_MS);
    h2o_timeout_init(loop, &c->sweep_timeout, every);
    h2o_timeout_init(loop, &c->linger_timeout, LINGER_IDLE_MS);
    h2o_timeout_init(loop, &c->first_request_timeout, srv->first_request_timeout_ms);
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
    if (!clients) {
        c->has_admin = 1;
        spare_take(c);
    }
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

/* Sockets h2o still holds must not call back into freed records. */
static void forget_all(h2o_linklist_t *list)
{
    while (!h2o_linklist_is_empty(list)) {
        gw_conn_t *k = H2O_STRUCT_FROM_MEMBER(gw_conn_t, link, list->next);
        unlink_reqs(k);
        if (h2o_timeout_is_linked(&k->first_request))
            h2o_timeout_unlink(&k->first_request);
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
}

void gw_conns_destroy(gw_conns_t *c)
{
    if (c == NULL)
        return;
    gw_conns_stop_accepting(c);
    if (h2o_timeout_is_linked(&c->sweep))
        h2o_timeout_unlink(&c->sweep);
    forget_all(&c->conns);
    forget_all(&c->admin_conns);
    if (c->spare_fd >= 0)
        close(c->spare_fd);
    gw_peers_destroy(c->peers);
    h2o_timeout_dispose(c->loop, &c->pause_timeout);
    h2o_timeout_dispose(c->loop, &c->sweep_timeout);
    h2o_timeout_dispose(c->loop, &c->linger_timeout);
    h2o_timeout_dispose(c->loop, &c->first_request_timeout);
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
