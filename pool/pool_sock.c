/* pool/pool_sock.c: opening a connection to an endpoint, for pool_conn.c (an
 * exchange's HTTP connection) and pool_ws.c (a WebSocket): connect to the
 * link's current address, then for an https link the TLS handshake, with the
 * one certificate rule for an IP-literal host (below). */
#include <errno.h>
#include <string.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "pool/pool_link_int.h"

/* 1 if errno from socket() or connect() means this process ran short of its
 * own resources (descriptors, memory, local ports), not that the endpoint
 * refused or is unreachable. */
static int errno_is_local(int e)
{
    return e == EMFILE || e == ENFILE || e == ENOMEM || e == ENOBUFS || e == EAGAIN || e == EADDRNOTAVAIL;
}

void pool_link_log_local(pool_link_t *link, const char *what)
{
    static uint64_t last_ms, suppressed;
    uint64_t now = sl_now_ms();
    if (last_ms != 0 && now - last_ms < 1000) {
        suppressed++;
        return;
    }
    sl_log_warn("endpoint %s/%s: %s (sluice's own resources; not counted against the endpoint; %llu more "
                "since the last report)",
                link->timers->network, link->conf->id, what, (unsigned long long)suppressed);
    last_ms = now;
    suppressed = 0;
}

/* The socket goes back to its owner, which hears how the opening ended. */
static void sock_done(h2o_socket_t *sock, pool_sock_t *sk, pool_fail_t fail)
{
    sock->data = sk->owner;
    sk->cbs->done(sk->owner, fail);
}

static void on_handshake(h2o_socket_t *sock, const char *err)
{
    pool_sock_t *sk = sock->data;
    /* For an IP-literal upstream h2o's own name check (it runs under TLS 1.2
     * only) ignores IP SANs. Our SSL_CTX verifies the peer, IP included
     * (X509_VERIFY_PARAM_set1_ip_asc, pool_tls.c), during the handshake: a
     * handshake that got as far as h2o's check has passed OpenSSL's, so that
     * one complaint is overruled. */
    if (err == h2o_socket_error_ssl_cert_name_mismatch && sk->link->url.host_is_ip)
        err = NULL;
    if (err != NULL) {
        sl_log_warn("endpoint %s/%s: TLS handshake with %s failed: %s", sk->link->timers->network, sk->link->conf->id,
                    sk->link->conf->url_redacted, err);
        sock_done(sock, sk, POOL_FAIL_TLS);
        return;
    }
    sock_done(sock, sk, POOL_FAIL_NONE);
}

static void on_connect(h2o_socket_t *sock, const char *err)
{
    pool_sock_t *sk = sock->data;
    if (err != NULL) {
        pool_link_addr_failed(sk->link);
        sock_done(sock, sk, POOL_FAIL_CONNECT);
        return;
    }
    if (sk->link->ssl_ctx != NULL) {
        if (sk->cbs->handshaking != NULL)
            sk->cbs->handshaking(sk->owner);
        h2o_socket_ssl_handshake(sock, sk->link->ssl_ctx, sk->link->url.host, on_handshake);
        return;
    }
    sock_done(sock, sk, POOL_FAIL_NONE);
}

h2o_socket_t *pool_sock_connect(pool_sock_t *sk, pool_link_t *link, const pool_sock_cbs_t *cbs, void *owner,
                                pool_fail_t *fail)
{
    socklen_t alen;
    const struct sockaddr *addr = pool_link_addr(link, &alen);
    if (addr == NULL) {
        *fail = POOL_FAIL_DNS;
        return NULL;
    }
    errno = 0;
    h2o_socket_t *sock = h2o_socket_connect(link->timers->t->loop, (struct sockaddr *)addr, alen, on_connect);
    if (sock == NULL) {
        int e = errno; /* from socket() or connect(): h2o returns NULL right after either */
        if (errno_is_local(e)) {
            char what[96];
            snprintf(what, sizeof(what), "cannot open a connection: %s", strerror(e));
            pool_link_log_local(link, what);
            *fail = POOL_FAIL_LOCAL;
            return NULL;
        }
        pool_link_addr_failed(link);
        *fail = POOL_FAIL_CONNECT;
        return NULL;
    }
    sk->link = link;
    sk->cbs = cbs;
    sk->owner = owner;
    sock->data = sk;
    return sock;
}
