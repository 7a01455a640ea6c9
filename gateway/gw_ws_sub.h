/* gateway/gw_ws_sub.h: what the WebSocket edge wires into sub/ (sub/sub.h):
 * the server's ws_* bounds, the worker's counters (gw_stats.h), and its
 * sub_edge_t: the admission of a subscription call by the caller's rate limit
 * (gw_limit.h) and key scope (gw_scope.h), and a subscription's filter bytes
 * held in the worker's budget and its caller's share (gw_buffered.h), all of
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

/* A socket's subscriptions, with what the edge knows of their caller. */
typedef struct gw_ws_subs {
    sub_client_t client;
    gw_handler_t *h;              /* its limits, scope and held bytes */
    gw_net_t *net;                /* the socket's network (its cost profile, for the key's credits) */
    const cfg_key_conf_t *key;    /* NULL: anonymous */
    char ip[64];                  /* the caller's address, GW_EXEC_IP_MAX (the key's per_address limit) */
} gw_ws_subs_t;

/* sub_client_init with the edge: a subscription call is charged one
 * standard call to its key's per_address limit (ip's) and to the caller's
 * tier (a charge waiting for a lease from Redis, cluster:, is let through,
 * as gw_exec_admit_refusal does), then held to its key's scope
 * (gw_scope_sub), then charged its cost to the key's credits
 * (gw_keylimit.h); the refusal (429, or the scope's) goes out through send.
 * A filter of SUB_FILTER_FREE bytes or more is charged to h's budget and the
 * caller's share while its subscription lives. */
void gw_ws_subs_init(gw_ws_subs_t *s, sub_reg_t *r, gw_handler_t *h, gw_net_t *net, const cfg_key_conf_t *key,
                     const char *ident, const char *ip, sub_send_fn send);

#endif
