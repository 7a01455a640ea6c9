/* server/srv_listen.h: listening sockets shared by the worker processes.
 *
 * The master binds each address once, without listening, to fail early on a
 * taken port and to learn the port the kernel picked for ":0"; it keeps that
 * socket so the port stays reserved. Every worker then binds the same
 * address with SO_REUSEPORT and listens itself, so the kernel spreads new
 * connections evenly (an inherited socket split 208k/36k in a trial). */
#ifndef SRV_LISTEN_H
#define SRV_LISTEN_H

#include <stdint.h>
#include <sys/socket.h>

#include "base/sl_err.h"

typedef struct srv_listen_addr {
    struct sockaddr_storage sa;
    socklen_t salen;
    char text[80];            /* "127.0.0.1:8545", "[::1]:8546" with the real port */
    int loopback;             /* 127.0.0.0/8 or ::1 */
} srv_listen_addr_t;

/* Resolves "host:port" (host may be a name, an IPv4 or "[v6]"). Errors:
 * SL_ERR_INVALID (bad form, unresolvable host; logged). */
SL_MUST_CHECK sl_err_t srv_listen_resolve(const char *hostport, srv_listen_addr_t *out);

/* The master's reservation: checks that no other process holds the address
 * (SO_REUSEPORT would otherwise let a second sluice share it silently), then
 * binds without listening. Returns the fd, or -1 (logged). */
int srv_listen_reserve(srv_listen_addr_t *addr);

/* srv_listen_reserve without a log line when the address is taken: -1 with
 * errno set (EADDRINUSE...), for an address sluice only tries. */
int srv_listen_try_reserve(srv_listen_addr_t *addr);

/* out = addr with the next port (the WebSocket listener's default: the
 * main port + 1). Returns -1 when addr's port is 0 or 65535. */
int srv_listen_next_port(const srv_listen_addr_t *addr, srv_listen_addr_t *out);

/* Binds a SO_REUSEPORT socket to addr; listen_backlog > 0 also listens.
 * When addr's port is 0, it is updated to the port the kernel chose.
 * Returns the fd, or -1 (logged). */
int srv_listen_bind(srv_listen_addr_t *addr, int listen_backlog);

#endif
