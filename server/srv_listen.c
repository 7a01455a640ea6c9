#include "server/srv_listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/sl_log.h"

static void format_addr(srv_listen_addr_t *a)
{
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (a->sa.ss_family == AF_INET) {
        struct sockaddr_in *v4 = (struct sockaddr_in *)&a->sa;
        inet_ntop(AF_INET, &v4->sin_addr, host, sizeof(host));
        port = ntohs(v4->sin_port);
        a->loopback = (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
        snprintf(a->text, sizeof(a->text), "%s:%u", host, port);
    } else {
        struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&a->sa;
        inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof(host));
        port = ntohs(v6->sin6_port);
        a->loopback = IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr);
        snprintf(a->text, sizeof(a->text), "[%s]:%u", host, port);
    }
}

sl_err_t srv_listen_resolve(const char *hostport, srv_listen_addr_t *out)
{
    char host[256];
    const char *colon = strrchr(hostport, ':');
    if (colon == NULL || colon == hostport || (size_t)(colon - hostport) >= sizeof(host)) {
        sl_log_error("listen address \"%s\": expected host:port", hostport);
        return SL_ERR_INVALID;
    }
    size_t hlen = (size_t)(colon - hostport);
    memcpy(host, hostport, hlen);
    host[hlen] = '\0';
    if (host[0] == '[' && hlen >= 2 && host[hlen - 1] == ']') {
        memmove(host, host + 1, hlen - 2);
        host[hlen - 2] = '\0';
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(host, colon + 1, &hints, &res);
    if (rc != 0) {
        sl_log_error("listen address \"%s\": %s", hostport, gai_strerror(rc));
        return SL_ERR_INVALID;
    }
    memset(out, 0, sizeof(*out));
    memcpy(&out->sa, res->ai_addr, res->ai_addrlen);
    out->salen = res->ai_addrlen;
    freeaddrinfo(res);
    format_addr(out);
    return SL_OK;
}

/* Binds without SO_REUSEPORT, then lets go: with SO_REUSEPORT alone a second
 * sluice (same user) would silently share the port and half the traffic.
 * quiet: the failure is the caller's to tell (errno is kept). */
static int probe_free(srv_listen_addr_t *addr, int quiet)
{
    int fd = socket(addr->sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
    if (fd < 0)
        return -1;
    int on = 1, rc = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    if (addr->sa.ss_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
    if (bind(fd, (struct sockaddr *)&addr->sa, addr->salen) != 0) {
        int e = errno;
        if (!quiet)
            sl_log_error("cannot bind %s: %s", addr->text, strerror(e));
        rc = -1;
        close(fd);
        errno = e;
        return rc;
    } else {
        socklen_t len = sizeof(addr->sa);
        getsockname(fd, (struct sockaddr *)&addr->sa, &len);
        format_addr(addr);
    }
    close(fd);
    return rc;
}

int srv_listen_reserve(srv_listen_addr_t *addr)
{
    if (probe_free(addr, 0) != 0)
        return -1;
    return srv_listen_bind(addr, 0);
}

int srv_listen_try_reserve(srv_listen_addr_t *addr)
{
    if (probe_free(addr, 1) != 0)
        return -1;
    return srv_listen_bind(addr, 0);
}

int srv_listen_next_port(const srv_listen_addr_t *addr, srv_listen_addr_t *out)
{
    *out = *addr;
    in_port_t *port = out->sa.ss_family == AF_INET ? &((struct sockaddr_in *)&out->sa)->sin_port
                                                   : &((struct sockaddr_in6 *)&out->sa)->sin6_port;
    unsigned p = ntohs(*port);
    if (p == 0 || p >= 65535)
        return -1;
    *port = htons((in_port_t)(p + 1));
    format_addr(out);
    return 0;
}

int srv_listen_bind(srv_listen_addr_t *addr, int listen_backlog)
{
    int fd = socket(addr->sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
    if (fd < 0) {
        sl_log_error("socket for %s: %s", addr->text, strerror(errno));
        return -1;
    }
    int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on));
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
    if (addr->sa.ss_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
    if (bind(fd, (struct sockaddr *)&addr->sa, addr->salen) != 0) {
        sl_log_error("cannot bind %s: %s", addr->text, strerror(errno));
        close(fd);
        return -1;
    }
    socklen_t len = sizeof(addr->sa);
    getsockname(fd, (struct sockaddr *)&addr->sa, &len);
    format_addr(addr);
    if (listen_backlog > 0) {
        if (listen(fd, listen_backlog) != 0) {
            sl_log_error("cannot listen on %s: %s", addr->text, strerror(errno));
            close(fd);
            return -1;
        }
        fcntl(fd, F_SETFL, O_NONBLOCK);
    }
    return fd;
}
