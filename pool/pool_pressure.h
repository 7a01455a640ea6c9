/* pool/pool_pressure.h: the pressure satellite: a call counts in its
 * network's depth (and its owner's share of it, pool_share.c) while it holds
 * an upstream slot; its end is a settle-time sample and a try of the refusal
 * ratio. Its row: pool_pressure_row. The network's level: pool/pool_net.h. */
#ifndef POOL_PRESSURE_H
#define POOL_PRESSURE_H

#include "pool/pool.h"

/* A client call was admitted / settled (answered = it got an answer or a
 * failure, not a cancel: only those are settle-time samples, and each is one
 * try of the refusal ratio, refused when the client got the upstreams' rate
 * limit: a refusal another endpoint answered for cost the client nothing). */
void pool_pressure_admit(pool_call_t *call);
void pool_pressure_settle(pool_call_t *call, int answered);
/* The depth counts what holds an upstream slot: a call that waits on another
 * one's upstream call (a coalesced group's leader, a merged poll's carrier)
 * shares it and leaves the depth; it holds again when it goes upstream itself
 * (a waiter handed a group, a poll going alone), as a carrier does. */
void pool_pressure_share(pool_call_t *call);
void pool_pressure_hold(pool_call_t *call);

/* pool_share.c: the depth per identity (call->owner), bounded. */
/* The network's rows of identities (the pressure row's network state). */
void pool_share_init(pool_network_t *net);
void pool_share_dispose(pool_network_t *net);
void pool_share_hold(pool_call_t *call);
void pool_share_release(pool_call_t *call);
uint32_t pool_share_held(const pool_network_t *net, uint64_t owner);
/* A call's part in the depth. */
typedef struct pool_pressure_call {
    uint64_t started_us;          /* admitted (its settle time) */
    uint8_t counted;              /* in the network's depth: holds an upstream slot */
    uint8_t timed;                /* a client's call: its settle time and try are counted */
    uint8_t share_overflow;       /* held in pool_share.c's overflow group, not its own row */
} pool_pressure_call_t;

#endif
