/* sub/sub.h: subscriptions over a client WebSocket, served from
 * polling through the pool, or passed through from an endpoint's WebSocket
 * (the kinds that cannot be polled: sub_pass.c), one registry per worker.
 *
 * gw_ws.c gives every socket a sub_client_t and shows each message to
 * sub_message first: a single call of a subscription method of the
 * socket's network (eth_subscribe / eth_unsubscribe; Solana's
 * *Subscribe / *Unsubscribe) is answered here, anything else goes on to
 * gw_exec. Subscription ids are sluice's own (Ethereum: "0x" and 32 random
 * hex digits; Solana: a random integer, as its clients expect), never an
 * upstream's. Fan-in: one source per distinct (network, kind, normalised
 * params) in the worker, shared by every subscriber; it stops when its last
 * subscriber goes (unsubscribe, or its socket closes). Bounds:
 * server.ws_max_subscriptions_per_connection and
 * server.ws_max_subscriptions_per_identity (per worker, per key or client
 * address), server.ws_max_sources_per_identity (distinct sources an identity
 * started that still run), -32005 past them; each call is charged to the caller's rate
 * limit as one standard call (-32005 at its limit). Notifications go out through the client's
 * send (the socket's bounded queue). The kinds are rows of sub_kinds.c
 * (sub_int.h). Worker-local, one event loop. */
#ifndef SUB_H
#define SUB_H

#include <stddef.h>
#include <stdint.h>

#include <h2o.h>

#include "config/cfg.h"
#include "gateway/gw_exec.h"
#include "gateway/gw_handler.h"
#include "gateway/gw_stats.h"

typedef struct sub_reg sub_reg_t;
typedef struct sub_client sub_client_t;

/* Queues bytes (one text message) for the client; copies them. */
typedef void (*sub_send_fn)(sub_client_t *c, const char *bytes, size_t len);

struct sub_client {
    sub_reg_t *reg;
    gw_handler_t *h;              /* its limits (h->limit may be NULL) */
    gw_net_t *net;
    const cfg_key_conf_t *key;     /* NULL: anonymous */
    char ident[GW_EXEC_IDENT_MAX]; /* "key:<name>" / "ip:<address>": the per-identity bound */
    sub_send_fn send;
    h2o_linklist_t subs;          /* sub_t, oldest first */
    h2o_linklist_t link;          /* in the registry's clients */
    uint32_t nsubs;
};

/* srv, stats and st (each may be NULL: no counters, no events) must outlive the result. */
sub_reg_t *sub_create(h2o_loop_t *loop, const cfg_server_conf_t *srv, gw_stats_t *stats, state_t *st);
/* Every client must be disposed of first. */
void sub_destroy(sub_reg_t *r);

/* ident is gw_exec_caller's: whose limits a subscription call is charged to. */
void sub_client_init(sub_client_t *c, sub_reg_t *r, gw_handler_t *h, gw_net_t *net,
                        const cfg_key_conf_t *key, const char *ident, sub_send_fn send);
/* The socket is gone: its subscriptions end (sources without subscribers stop). */
void sub_client_dispose(sub_client_t *c);

/* Returns 1 when body[0..len) was a subscription call this answered (by
 * c->send), 0 when it is not one (gw_exec takes it). */
int sub_message(sub_client_t *c, const char *body, size_t len);

#endif
