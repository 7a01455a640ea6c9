/* pool/pool_split.h: a client's eth_getLogs over more blocks than the
 * network's endpoints take, served as sub-calls and answered as one.
 *
 * The handler (gw_handler.c) hands the forwarded items of a request to
 * pool_split_take before it starts its pool call: each eth_getLogs wider
 * than the endpoints take is taken out and split (its sub-calls start at
 * once) or refused with -32005; the others stay for the request's own call
 * (pool_split_rest). When that call settled, pool_split_settle puts its
 * answers back and splits what every endpoint refused as too wide. The
 * reply is built when both are done. The rules: pool_split.c's header. */
#ifndef POOL_SPLIT_H
#define POOL_SPLIT_H

#include <stddef.h>
#include <stdint.h>

#include "pool/pool.h"

/* Sub-calls of one request in flight at once (a batch's eth_getLogs together). */
#define POOL_SPLIT_INFLIGHT 4

typedef struct pool_split pool_split_t;

/* What the request gives its split. */
typedef struct pool_split_hooks {
    /* the last sub-call is done: the request may build its reply (from the
     * loop, never from a pool_split_* call) */
    void (*done)(void *data);
    /* charges calls more upstream calls to the caller's limits (a range
     * halved after every endpoint refused it): 1 if they may go, 0 if the
     * caller is over its limit (the job then ends with -32005) */
    int (*charge)(void *data, uint32_t calls);
    size_t max_bytes;             /* a job's merged answer at most (server.max_response_bytes) */
} pool_split_hooks_t;

/* NULL when no item of items[0..n) is an eth_getLogs over a range (the
 * request goes on as before). Else the split's state, planned: nothing is
 * sent until pool_split_start, so the request can charge the caller for
 * the plan first (pool_split_planned) or drop it (pool_split_dispose).
 * Taken items are answered in place once their sub-calls are done.
 * hooks and data must outlive the split. */
pool_split_t *pool_split_take(pool_network_t *net, pool_item_t *items, size_t n, uint64_t owner,
                                const pool_split_hooks_t *hooks, void *data);
/* The plan: sub-calls that will go out past one per split item (what the
 * caller's limits have not been charged yet: each item was charged as one
 * call), and the items split (*jobs). */
uint32_t pool_split_planned(const pool_split_t *s, size_t *jobs);
/* Sends the plan's first sub-calls. */
void pool_split_start(pool_split_t *s);
/* The items left for the request's own call (the split's copies), *n of them (0: no call). */
pool_item_t *pool_split_rest(pool_split_t *s, size_t *n);
/* The request's call settled the rest: copies them back into items (the
 * array given to take); an eth_getLogs among them that every endpoint
 * refused as too wide is split in halves. 1 if sub-calls are pending (cb
 * runs when they are done), else 0. */
int pool_split_settle(pool_split_t *s);
/* 1 while sub-calls are pending. NULL: 0. */
int pool_split_pending(const pool_split_t *s);
/* Answer bytes the split holds (sub-answers and merged answers). NULL: 0. */
size_t pool_split_held(const pool_split_t *s);
/* The attempts of the sub-calls that ended so far, in that order (at most
 * POOL_SPLIT_TRACE), *ids[i] the endpoint id of the i-th (valid while the
 * network's config is), *credits what they billed. NULL: none. */
#define POOL_SPLIT_TRACE 64
const pool_attempt_rec_t *pool_split_trace(const pool_split_t *s, size_t *n, const char *const **ids,
                                           uint64_t *credits);
/* Stops the sub-calls still running and frees everything (NULL: nothing). */
void pool_split_dispose(pool_split_t *s);

#endif
