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

#include "pool/pool.h"
#include "state/state.h"
#include "state/state_counters.h"
#include "wire/envelope.h"

typedef struct sub_reg sub_reg_t;
typedef struct sub_client sub_client_t;

#define SUB_IDENT_MAX 96 /* a caller's identity with its NUL ("key:<name>" / "ip:<address>") */

/* One network as sub/ knows it: the gateway's view of it (sub_net_t) holds
 * this and adds what only the client edge asks (its blocked methods). */
typedef struct sub_net {
    size_t index;                 /* in the config's network list: the counters' network */
    const pool_network_conf_t *conf;
    pool_network_t *pool_net;
} sub_net_t;

/* The bounds of server: (cfg_server_conf_t's ws_* keys), copied at create. */
typedef struct sub_limits {
    uint32_t per_connection;      /* server.ws_max_subscriptions_per_connection */
    uint32_t per_identity;        /* server.ws_max_subscriptions_per_identity */
    uint32_t sources_per_identity; /* server.ws_max_sources_per_identity */
    uint32_t polled_sources_per_identity; /* server.ws_max_polled_sources_per_identity */
    uint32_t logs_retry_s;        /* server.ws_logs_retry_s */
    int resume;                   /* server.ws_resume: a policy_resume_mode_t (policy/resume.h) */
    uint32_t resume_s;            /* server.ws_resume_s */
} sub_limits_t;

/* Where sub/ counts, by state/'s counters (state_counters.h): the worker's
 * request counters (gateway/gw_stats.h), which flush them to state/. Any
 * member may be NULL. */
typedef struct sub_counters {
    void *ctx;
    void (*srv_add)(void *ctx, state_srv_counter_t c, uint64_t n);      /* the worker's total */
    void (*srv_set)(void *ctx, state_srv_counter_t c, uint64_t value);  /* a gauge's total */
    void (*cost_add)(void *ctx, size_t net, state_sub_counter_t c, int64_t n); /* upstream calls */
    void (*net_add)(void *ctx, size_t net, size_t i, int64_t delta);    /* STATE_SUBS_* / STATE_SRV_* of a network */
} sub_counters_t;

/* Queues bytes (one text message) for the client; copies them. */
typedef void (*sub_send_fn)(sub_client_t *c, const char *bytes, size_t len);

typedef enum sub_hold_result {
    SUB_HOLD_OK,                  /* held: *token is what unhold takes back */
    SUB_HOLD_SHARE,               /* past the caller's share of the worker's held bytes */
    SUB_HOLD_BUDGET,              /* past the worker's held bytes */
} sub_hold_result_t;

/* What the client edge (gateway/gw_ws_sub.c) does for sub/, which knows
 * nothing of the caller's tier, key or the worker's byte budget:
 *   admit:  charges a subscription call (body[0..len), its id at id) to the
 *           caller's rate limit, as one standard call over HTTP is, and holds
 *           it to the caller's access scope: 1 to go on, 0 after answering
 *           the refusal itself (by c->send);
 *   hold:   charges bytes a subscription keeps while it lives (its filter) to
 *           the worker's held bytes (server.max_buffered_bytes) and the
 *           caller's share of them (max_buffered_share);
 *   unhold: gives them back. */
typedef struct sub_edge {
    int (*admit)(sub_client_t *c, const char *body, size_t len, wire_span_t id);
    sub_hold_result_t (*hold)(sub_client_t *c, size_t bytes, void **token);
    void (*unhold)(void *token);
} sub_edge_t;

struct sub_client {
    sub_reg_t *reg;
    sub_net_t *net;
    char ident[SUB_IDENT_MAX];    /* "key:<name>" / "ip:<address>": the per-identity bound */
    sub_send_fn send;
    const sub_edge_t *edge;       /* NULL: every call admitted, nothing held */
    h2o_linklist_t subs;          /* sub_t, oldest first */
    h2o_linklist_t link;          /* in the registry's clients */
    uint32_t nsubs;
};

/* counters and st (st may be NULL: no events) are copied / must outlive the result. */
sub_reg_t *sub_create(h2o_loop_t *loop, const sub_limits_t *limits, const sub_counters_t *counters, state_t *st);
/* Every client must be disposed of first. */
void sub_destroy(sub_reg_t *r);

/* ident is the client edge's: whose bounds a subscription counts in. */
void sub_client_init(sub_client_t *c, sub_reg_t *r, sub_net_t *net, const char *ident, sub_send_fn send,
                     const sub_edge_t *edge);
/* The socket is gone: its subscriptions end (sources without subscribers stop). */
void sub_client_dispose(sub_client_t *c);

/* Returns 1 when body[0..len) was a subscription call this answered (by
 * c->send), 0 when it is not one (gw_exec takes it). */
int sub_message(sub_client_t *c, const char *body, size_t len);

#endif
