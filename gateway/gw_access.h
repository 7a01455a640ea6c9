/* gateway/gw_access.h: one JSON access-log line per client request (an
 * HTTP request, or a WebSocket message: "ws":true).
 *
 * Built only from fields that carry no secret: network name, method names,
 * endpoint ids (never URLs), status, attempts, latency, client address and
 * the key's configured name (never the key). */
#ifndef GW_ACCESS_H
#define GW_ACCESS_H

#include <stdint.h>

#include <h2o.h>

#include "config/cfg.h"
#include "gateway/gw_rpc.h"
#include "pool/pool.h"

/* sock: the client's connection (its peer is the "client"); NULL: none. */
void gw_access_log(h2o_socket_t *sock, int websocket, const char *network, const gw_rpc_request_t *rpc,
                   const pool_call_t *call, int status, const char *outcome, uint64_t latency_us,
                   const cfg_key_conf_t *key, const char *trace_id);

#endif
