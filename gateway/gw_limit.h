/* gateway/gw_limit.h: client rate limits (tiers), shared by every worker.
 *
 * Each (caller, bucket, window) is a GCRA cell in state/ (policy/limiter.h).
 * A worker does not touch LMDB per request: it leases a few calls at once
 * (the cell's TAT moves forward by the lease in one write transaction) and
 * spends them locally for up to a second; a refused caller is refused locally
 * until its cell can admit again. Because every leased call is accounted in
 * the shared cell before it is spent, the workers together never admit more
 * than the limit; leased calls a worker did not use within the second are
 * lost (at most workers x lease per window, under-admission, never over).
 *
 * Cells live in shared time (base/sl_time.h), so a backward step of the wall
 * clock neither refuses active callers for the step's length nor frees them.
 * The cells are bounded in number (state_cells_update evicts idle ones,
 * then the one owing the fewest calls: each cell stores its window's
 * interval), so a flood of identities cannot fill the map.
 * If the shared cells still fail, the worker does not admit blindly: it
 * enforces 1/workers of each limit (rounded up) on cells of its own, tries
 * the shared ones again every second, and a state_degraded event (then
 * state_restored) says so (fail safe). */
#ifndef GW_LIMIT_H
#define GW_LIMIT_H

#include <stdint.h>

#include <h2o.h>

#include "config/cfg.h"
#include "policy/lease.h"
#include "policy/limiter.h"
#include "state/state.h"
#include "state/state_lease.h"

typedef struct gw_limit gw_limit_t;

typedef struct gw_limit_result {
    int limited;                  /* a tier applies: the X-RateLimit-* headers go out */
    policy_lease_result_t said;   /* YES admitted, NO refused, WAIT (cluster:) not decided yet:
                                   * wait (gw_limit_wait) and charge again */
    policy_bucket_t bucket;
    uint32_t limit;               /* of the window closest to exhaustion */
    uint32_t remaining;
    uint32_t reset_s;             /* seconds until capacity frees up (GCRA-honest, rounded up) */
    uint32_t window_s;
    uint32_t retry_after_s;       /* refused: seconds until the calls would fit */
    uint64_t retry_after_ms;
} gw_limit_result_t;

gw_limit_t *gw_limit_create(const cfg_t *cfg, state_t *st);
void gw_limit_destroy(gw_limit_t *l);

/* Charges n calls of bucket to identity ("key:<name>" or "ip:<address>";
 * a key's per_address "key:<name>/ip:<address>", its credits
 * "key:<name>/credits" with n its cost) under tier (NULL: no limit). A
 * tier marked exact (a key's credits, with a 30-day window per_month) is
 * never leased ahead: each charge is one write of exactly n, so no budget
 * is lost to leases a worker did not spend. */
void gw_limit_charge(gw_limit_t *l, const cfg_tier_conf_t *tier, const char *identity, policy_bucket_t bucket,
                     uint32_t n, gw_limit_result_t *out);

/* With cluster: the cells are in Redis and leased the same way; a charge
 * that finds no lease left asks Redis for one and comes back WAIT (the
 * next lease is asked for early, so a steady caller rarely waits). The
 * caller waits with gw_limit_wait: cb runs once the lease is decided (or
 * Redis failed), and the charge is made again. While Redis is away the
 * host's own cells enforce the limit divided by the hosts last seen. */
typedef struct gw_limit_wait {
    state_lease_wait_t wait;      /* in the limit's waiters */
    char identity[80];
    uint8_t bucket;
    void (*cb)(struct gw_limit_wait *w);
} gw_limit_wait_t;

void gw_limit_wait(gw_limit_t *l, const char *identity, policy_bucket_t bucket, gw_limit_wait_t *w,
                   void (*cb)(gw_limit_wait_t *w));
/* Stops waiting (the request went away); harmless when not waiting. */
void gw_limit_wait_cancel(gw_limit_wait_t *w);

/* Times the shared cells failed in this worker (each sent it to local
 * enforcement for a second); counted in the worker's exit line. */
uint64_t gw_limit_failures(const gw_limit_t *l);

#endif
