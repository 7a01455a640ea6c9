/* gateway/gw_ws_sub.h: what the WebSocket edge wires into sub/ (sub/sub.h):
 * the server's ws_* bounds, the worker's counters (gw_stats.h) and the
 * admission of a subscription call by the caller's rate limit (gw_limit.h),
 * which sub/ knows nothing of. */
#ifndef GW_WS_SUB_H
#define GW_WS_SUB_H

#include <h2o.h>

#include "config/cfg.h"
#include "gateway/gw_handler.h"
#include "gateway/gw_stats.h"
#include "sub/sub.h"

/* The worker's registry; srv, stats and st (each but srv may be NULL) must
 * outlive it. */
sub_reg_t *gw_ws_sub_create(h2o_loop_t *loop, const cfg_server_conf_t *srv, gw_stats_t *stats, state_t *st);

/* sub_admit_fn's body for a caller with key (NULL: anonymous): charges one
 * standard call to its tier; a charge waiting for a lease from Redis
 * (cluster:) is let through, as gw_exec_admit_refusal does. Then the key's
 * access scope (gw_scope_sub). 0 after sending the refusal's JSON-RPC
 * error (429, or the scope's) through c->send. */
int gw_ws_sub_admit(gw_handler_t *h, const cfg_key_conf_t *key, sub_client_t *c, const char *body, size_t len,
                    wire_span_t id);

#endif
