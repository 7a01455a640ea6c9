/* gateway/gw_handler.h: the client-facing h2o handler, POST /{network}[/{key}]
 * and GET with Upgrade: websocket on the same paths.
 *
 * One gw_handler_t per worker. It routes, checks the HTTP envelope
 * (method, content type), identifies the caller, and hands the body to
 * gw_exec (parse, limits, pool/, reply), then writes the answer with its
 * headers and one access-log line; a WebSocket handshake goes to gw_ws. */
#ifndef GW_HANDLER_H
#define GW_HANDLER_H

#include <stdint.h>

#include <h2o.h>

#include "base/sl_budget.h"
#include "gateway/gw_buffered.h"
#include "base/sl_log.h"
#include "config/cfg.h"
#include "gateway/gw_limit.h"
#include "gateway/gw_stats.h"
#include "pool/pool.h"
#include "sub/sub.h"

typedef struct gw_net {
    sub_net_t sub;                /* index, conf, pool_net: the network as sub/ knows it too */
    const char *const *blocked;   /* patterns: the config's or the chain's default */
    size_t nblocked;
} gw_net_t;

typedef struct gw_ws gw_ws_t;

typedef struct gw_handler {
    h2o_handler_t super;          /* first: h2o calls on_req with this pointer */
    const cfg_t *cfg;
    gw_net_t *nets;
    size_t nnets;
    gw_stats_t *stats;            /* request counters (may be NULL) */
    gw_limit_t *limit;            /* client rate limits (may be NULL) */
    sl_budget_t *budget;          /* the worker's answer bytes (may be NULL: unlimited) */
    gw_buffered_t buffered;       /* who may have more of them (the share, the reserve, resets) */
    uint64_t inflight;            /* requests being handled (drain waits for 0) */
    uint64_t served;
    sl_log_limit_t log_head, log_framing; /* refusals are logged at most every 10 s */
    gw_ws_t *ws;                  /* WebSocket connections (gw_ws.h); NULL: upgrades are not served */
    struct gw_jwt_keys *jwt_keys; /* keys' jwt: public keys, read on first use (gw_jwt.h) */
    struct gw_keys *keys;         /* the keys made at run time (gw_keys.h); NULL: config keys only */
    struct gw_keycache *keycache; /* presented keys already resolved (gw_keycache.h) */
} gw_handler_t;

/* Registers the handler on path "/" of hostconf; nets must outlive it. New
 * calls are refused with 503 as gw_buffered.h says (the budget less its
 * reserve, the caller's share); replies are charged to budget. */
gw_handler_t *gw_handler_register(h2o_hostconf_t *hostconf, const cfg_t *cfg, pool_t *pool, gw_stats_t *stats,
                                  gw_limit_t *limit, sl_budget_t *budget);

#endif
