/* pool/pool_link_int.h: the transport's inside (connections, lookups, TLS),
 * for pool/'s transport files and their tests only: the call layer and the
 * endpoint state above it see pool/pool_link.h. */
#ifndef POOL_LINK_INT_H
#define POOL_LINK_INT_H

#include "pool/pool_link.h"

typedef enum pool_conn_state {
    POOL_CONN_CONNECTING,
    POOL_CONN_HANDSHAKE,
    POOL_CONN_SENDING,            /* request written or being written; awaiting the head */
    POOL_CONN_BODY,               /* head parsed; reading the body */
    POOL_CONN_IDLE,
    POOL_CONN_STATE_COUNT
} pool_conn_state_t;

/* 1 if from -> to is an edge of the connection's machine (pool_conn.c's one
 * writer of ->state checks every transition against it; a connection is
 * created CONNECTING). */
int pool_conn_edge_allowed(pool_conn_state_t from, pool_conn_state_t to);

struct pool_conn {
    pool_link_t *link;
    h2o_socket_t *sock;
    pool_conn_state_t state;
    pool_exchange_t *ex;          /* the exchange in progress, NULL when idle */
    h2o_linklist_t idle_link;     /* in link->idle while IDLE */
    h2o_timeout_entry_t idle_timer;
    uint64_t idle_since_ms;
    h2o_linklist_t wait_link;     /* in link->dns_waiting while its address is being looked up (sock NULL),
                                     or in link->draining while it drains */
    size_t drain_left;            /* draining: body bytes still to read and drop */
    uint32_t requests;            /* served on this connection */
    pool_chunked_t chunked;
    pool_sock_t opening;          /* pool_sock_connect's, while CONNECTING or HANDSHAKE */
};

/* pool_exchange.c: ends ex with fail (POOL_FAIL_NONE: answered): its
 * connection goes back to the link when it can be reused, then ex->cb runs.
 * Called by the connection's read, write and connect paths and by the
 * deadlines. */
void pool_exchange_finish(pool_exchange_t *ex, pool_fail_t fail);

/* pool_conn.c: an idle connection of link fit for the request (is_write: not
 * one idle for long, which the upstream may be closing), or a new one being
 * opened; NULL and *fail if none could be started. */
pool_conn_t *pool_conn_take(pool_link_t *link, int is_write, pool_fail_t *fail);
/* Sends c->ex's request (the connection is open). */
void pool_conn_send(pool_conn_t *c);
/* After an exchange: keep c for the next one (reusable) or close it. */
void pool_conn_put_back(pool_conn_t *c, int reusable);
/* An exchange cancelled before its request was written (nothing was asked
 * of the upstream): c is kept. An idle one goes back to the idle list; one
 * connecting or in its TLS handshake goes idle once open (closed if that
 * takes past the idle timeout); one still waiting for its address is dropped. */
void pool_conn_unsent(pool_conn_t *c);
/* After an exchange cancelled once its request was sent (ex, c->ex already
 * NULL): its answer is read and dropped within POOL_DRAIN_MAX_BYTES and
 * POOL_DRAIN_MS, then c is pooled again; else (the request not all written,
 * a chunked or larger answer, a close) c is closed. */
void pool_conn_drain(pool_conn_t *c, const pool_exchange_t *ex);
/* The link's first lookup ended: connections waiting for it connect now,
 * or fail with POOL_FAIL_DNS if no address is known. */
void pool_conn_dns_done(pool_link_t *link);

/* pool_dns.c: an IP literal's address at once; a host name's first lookup
 * started (never blocking). */
void pool_dns_init(pool_link_t *link);
void pool_dns_dispose(pool_link_t *link);
/* The address for a new connection, or NULL when none is known; starts an
 * asynchronous refresh when the cached addresses are old. */
const struct sockaddr *pool_link_addr(pool_link_t *link, socklen_t *len);
/* A connection to the next address failed: rotate. */
void pool_link_addr_failed(pool_link_t *link);

/* pool_sock.c: how the opening of a connection ended, for its owner (the
 * pool_conn_t or pool_ws_t that holds the pool_sock_t). */
struct pool_sock_cbs {
    void (*handshaking)(void *owner); /* connected; the TLS handshake begins (may be NULL) */
    /* once: POOL_FAIL_NONE (open, TLS done), POOL_FAIL_CONNECT (the address
     * was rotated) or POOL_FAIL_TLS (logged); sock->data is owner again */
    void (*done)(void *owner, pool_fail_t fail);
};
/* Connects to link's current address and, for an https link
 * (link->ssl_ctx), runs the TLS handshake: an IP-literal host's certificate
 * is checked by the context (pool_tls.c), so h2o's name check, which ignores
 * IP SANs, is overruled for it. Returns the socket (its data is sk until
 * cbs->done runs, then owner). NULL if none could be started, and no
 * callback runs: *fail POOL_FAIL_DNS (no address known; pool_dns_pending says
 * whether one is coming), POOL_FAIL_LOCAL (sluice's own resources, logged,
 * the address kept) or POOL_FAIL_CONNECT (the address was rotated). */
h2o_socket_t *pool_sock_connect(pool_sock_t *sk, pool_link_t *link, const pool_sock_cbs_t *cbs, void *owner,
                                pool_fail_t *fail);
/* Logs a failure for want of sluice's own resources: at most one line a
 * second per worker (a descriptor shortage fails every attempt at once),
 * with how many since. */
void pool_link_log_local(pool_link_t *link, const char *what);

/* pool_tls.c */
SL_MUST_CHECK sl_err_t pool_tls_ctx_create(const wire_url_t *url, const char *ca_file, SSL_CTX **out);

#endif
