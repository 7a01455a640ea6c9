/* gateway/gw_conns.h: accepting, and the connections of one worker.
 *
 * The client listener keeps at most server.max_connections connections
 * open. At the limit a new connection is accepted and the oldest one
 * waiting on its client (h2o reads it and writes nothing: kept alive with
 * no request, or a request not yet whole; or lingering) is shut for it. A
 * connection whose call is being answered never gives way: when every one
 * is, the listener stops accepting until one closes, and connections the
 * kernel already gave this worker's socket wait in its listen queue.
 *
 * One address (IPv6: its server.ipv6_prefix network; trusted proxies
 * excepted) holds at most server.max_connections_per_address of them: past
 * it a new connection is closed at accept. A connection accepted while over
 * 3/4 of max_connections are open must send its first whole request within
 * server.first_request_timeout_ms. On TLS (server.tls) the same bounds
 * hold from the accept, before the handshake, and h2o closes a handshake
 * not finished within first_request_timeout_ms (srv_worker.c sets it).
 *
 * When accept fails for want of descriptors or kernel memory (EMFILE,
 * ENFILE, ENOBUFS, ENOMEM) a listener stops reading for GW_CONNS_PAUSE_MS
 * and tries again, instead of spinning on a socket it cannot empty. A
 * descriptor is kept for the admin listener, released to accept an admin
 * connection at EMFILE, taken back when any connection closes. The admin
 * listener keeps at most admin.max_connections open (pausing at it).
 *
 * A client connection whose answer is being written but whose peer has
 * acknowledged no byte of it for server.write_timeout_ms is reset: h2o
 * sees the write fail and frees the request, its answer and the
 * connection. Idle connections and slow request senders are otherwise
 * h2o's (server.idle_timeout_ms, its request timeout).
 *
 * Counters go to gw_stats (STATE_SRV_*); repeated log lines are rate-limited. */
#ifndef GW_CONNS_H
#define GW_CONNS_H

#include <stddef.h>

#include <h2o.h>

#include "config/cfg.h"
#include "gateway/gw_stats.h"

#define GW_CONNS_PAUSE_MS 100     /* accepting pauses this long after EMFILE and kin */

typedef struct gw_conns gw_conns_t;

/* srv and stats (may be NULL) must outlive the result; admin_max is
 * admin.max_connections. */
gw_conns_t *gw_conns_create(h2o_loop_t *loop, const cfg_server_conf_t *srv, uint32_t admin_max, gw_stats_t *stats);
/* Stops accepting; connections still open are left to the process exit. */
void gw_conns_destroy(gw_conns_t *c);

/* Accepts on fd (a listening, non-blocking socket) into actx. clients = 1 for
 * the client listener: max_connections and the write timeout apply to its
 * connections. Returns 0, or -1 (too many listeners). */
int gw_conns_listen(gw_conns_t *c, int fd, h2o_accept_ctx_t *actx, int clients);

/* Closes every listener (shutdown); open connections carry on. */
void gw_conns_stop_accepting(gw_conns_t *c);

/* Asks for a lingering close of a client connection whose answer closes
 * it while the client may still be sending (a body refused unread, bytes
 * after a request refused for its framing): when h2o closes the connection
 * sluice shuts down its sending side, so the answer is followed by a FIN
 * instead of a reset that could destroy the answer unread, then reads and
 * drops what the client still sends until it closes, for at most 10 s
 * (2 s between reads) and 64 MiB. The connection counts against
 * max_connections meanwhile. sock is h2o's socket of the request
 * (req->conn->callbacks->get_socket); a socket this module does not track
 * (admin) is left to an ordinary close. Call it before the answer is sent. */
void gw_conns_linger(h2o_socket_t *sock);
/* How long, in ms, the client of sock has acknowledged no byte of the
 * answer being written: the write timeout's notion of progress, read now
 * (0 when it is not writing, moved since the last look, or sock is not a
 * client connection this module tracks); GW_CONNS_RESETTING once it is
 * being reset. */
#define GW_CONNS_RESETTING UINT64_MAX
uint64_t gw_conns_stalled_ms(h2o_socket_t *sock, uint64_t now_ms);
/* Resets the client connection of sock as the write timeout does (h2o then
 * frees its request and answer) and counts it in STATE_SRV_STALLED_RESETS.
 * Returns 1, or 0 for a socket not tracked or already being reset. */
int gw_conns_reset_stalled(h2o_socket_t *sock);
/* A request being answered on a connection: while one is open the
 * connection never gives way at max_connections nor to the first-request
 * timeout, even though h2o reads it meanwhile (HTTP/2 does, for its other
 * streams; HTTP/1 stops reading). Zeroed by its owner; begin links it to
 * the tracked connection of sock (nothing for one not tracked), end
 * unlinks it (again: nothing). A connection that goes first unlinks its
 * requests, so either may outlive the other. */
typedef struct gw_conns_req {
    h2o_linklist_t link;
} gw_conns_req_t;
void gw_conns_req_begin(h2o_socket_t *sock, gw_conns_req_t *r);
void gw_conns_req_end(gw_conns_req_t *r);

/* The HTTP/2 rapid-reset guard (h2o 2.2.5 has none): begin counts a call
 * run on the connection of sock; reset, one whose stream the client reset
 * before its answer (tearing down the work sluice started for it). A
 * connection with at least 100 calls reset, more than half of its calls, is
 * reset (counted in STATE_SRV_RAPID_RESETS, logged at most every 10 s).
 * reset must only be called while the connection is open (its
 * gw_conns_req_t still linked); a socket not tracked is ignored. */
void gw_conns_h2_call_begin(h2o_socket_t *sock);
void gw_conns_h2_call_reset(h2o_socket_t *sock);

/* Client connections open now (those being closed included). */
size_t gw_conns_open(const gw_conns_t *c);

/* Raises the open files soft limit to the hard one and warns when that is
 * below what max_connections needs (a client and an upstream descriptor
 * each); the master calls it once, before the workers start. */
void gw_conns_raise_open_files(unsigned max_connections);

#endif
