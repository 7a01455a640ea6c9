/* gateway/gw_ws.h: JSON-RPC over WebSocket on the client side.
 *
 * The handler (gw_handler.c) hands a GET with Upgrade: websocket on
 * /{network}[/{key}] here, on the main listener and on the second one
 * (server.ws_listen), once the path and the key are checked. The socket is
 * h2o's own (h2o/websocket.h, wslay): one text (or binary) message is one
 * JSON-RPC body, a call or a batch, taken through gw_exec exactly as an
 * HTTP POST is (identity from the upgrade, limits charged per message,
 * budget, pressure, pool/), and answered with one text message. A
 * notification alone gets no answer, as HTTP gets 204.
 *
 * A browser's upgrade (it carries Origin) needs an origin server.cors_origins
 * allows (403 otherwise). Bounds, each per worker: server.ws_max_connections sockets, and
 * ws_max_connections_per_identity per key or client address (the upgrade
 * is refused with 503 / 429); a message at most server.max_body_bytes
 * (wslay closes with 1009); ws_max_inflight calls in flight per socket
 * (more get -32005 at their id); answers queued for a client past
 * ws_max_queued_bytes close it with 1008 (a client that does not read);
 * a ping every ws_ping_interval_ms, and nothing received, pongs included,
 * for ws_idle_timeout_ms closes it. A socket that closes releases its
 * calls in flight (pool_call_release: no callback). A close sluice starts
 * waits 5 s for the client's close frame, then resets the connection.
 * Subscription calls, alone in a message, are served by sub.h (its
 * notifications go through the same bounded queue); inside a batch they
 * get -32601. Worker-local, one event loop. */
#ifndef GW_WS_H
#define GW_WS_H

#include <stddef.h>

#include <h2o.h>

#include "config/cfg.h"
#include "gateway/gw_exec.h"
#include "gateway/gw_handler.h"
#include "gateway/gw_stats.h"

/* srv, stats and st (each may be NULL: no counters, no events) must outlive the result. */
gw_ws_t *gw_ws_create(gw_handler_t *h, h2o_loop_t *loop, const cfg_server_conf_t *srv, gw_stats_t *stats,
                      state_t *st);
/* Frees the table; sockets still open are left to the process exit. */
void gw_ws_destroy(gw_ws_t *w);

/* Upgrades req (a WebSocket handshake with client_key, its path and key
 * checked) into a socket for x's network and caller, or refuses it through
 * x (draining, or at a connection cap). Returns 0 (h2o's "handled"). */
int gw_ws_accept(gw_ws_t *w, h2o_req_t *req, const char *client_key, gw_exec_t *x);

/* Shutdown or reload: refuses new upgrades and closes every socket with
 * 1001 once its calls in flight are answered (messages arriving meanwhile
 * are not served). */
void gw_ws_shutdown(gw_ws_t *w);
/* Closes with 1008 every socket whose key was revoked (gw_keys_revoked). */
void gw_ws_sweep_revoked(gw_ws_t *w, const struct gw_keys *keys);
/* Sockets open now. */
size_t gw_ws_open(const gw_ws_t *w);

#endif
