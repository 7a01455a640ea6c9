/* policy/lease.h: the lease ladder of client limits and credit budgets.
 *
 * A worker spends what it holds (a lease of calls or of credits) and, when
 * that does not cover a call, climbs down the ladder of stores until one
 * answers:
 *
 *   HELD     what this worker holds: refused until a time it knows, or a
 *            lease that covers the call
 *   CLUSTER  with cluster: the store every host shares (Redis), asked
 *            asynchronously: the caller waits for the answer
 *   HOST     this host's store (LMDB); with cluster:, Redis is away and the
 *            host spends its share of what was left
 *   SHARE    degraded: this worker's own share (1/workers), on its own counts
 *
 * A rung that cannot answer (nothing held covers the call, Redis is away,
 * LMDB failed) says FALL and the next one decides. HOST failing starts the
 * degraded timer: until it runs out, a climb that gets past HELD and CLUSTER
 * while the part is degraded goes straight to SHARE; then HOST is tried
 * again, and once it answers the part is no longer degraded
 * (state_degraded_note) and climbs stop at HOST.
 *
 * Pure: the caller acts on each rung and keeps the ladder; it passes the
 * time (in a unit of its choosing, the same for every call on one ladder),
 * whether a cluster is configured and whether its part is degraded in this
 * process (state_degraded). */
#ifndef POLICY_LEASE_H
#define POLICY_LEASE_H

#include <stdint.h>

/* What a rung, and then the whole climb, says about a call. */
typedef enum policy_lease_result {
    POLICY_LEASE_NO,              /* refused; the rung says until when */
    POLICY_LEASE_YES,             /* granted: the caller spends it */
    POLICY_LEASE_WAIT,            /* the cluster was asked: wait for its answer, then climb again */
    POLICY_LEASE_FALL,            /* this rung cannot answer: the next one decides (never a climb's result) */
    POLICY_LEASE_RESULT_COUNT
} policy_lease_result_t;

typedef enum policy_lease_rung {
    POLICY_LEASE_RUNG_HELD,       /* every climb starts here */
    POLICY_LEASE_RUNG_CLUSTER,
    POLICY_LEASE_RUNG_HOST,
    POLICY_LEASE_RUNG_SHARE,
    POLICY_LEASE_RUNG_DONE,       /* a rung answered: the climb is over */
    POLICY_LEASE_RUNG_COUNT
} policy_lease_rung_t;

/* The caller's ladder: one per set of leases that fail together (the
 * worker's client limits; each endpoint's credit budget). */
typedef struct policy_lease_ladder {
    uint64_t retry_every;         /* degraded: the shared store is tried again this often */
    uint64_t retry_shared_at;     /* degraded: SHARE decides until then */
} policy_lease_ladder_t;

/* Where the climb is: what the caller knows at its start. */
typedef struct policy_lease_mode {
    uint8_t cluster;              /* a cluster store is configured (cluster:) */
    uint8_t degraded;             /* the part is degraded in this process (state_degraded) */
} policy_lease_mode_t;

void policy_lease_init(policy_lease_ladder_t *l, uint64_t retry_every);

/* The rung after `tried`, which said `said` at now: DONE once a rung
 * answered (NO, YES, WAIT), else the next rung down. The one writer of the
 * degraded timer: HOST falling starts it. SHARE always answers; a FALL from
 * it (a caller's bug) ends the climb. */
policy_lease_rung_t policy_lease_next(policy_lease_ladder_t *l, policy_lease_mode_t mode, policy_lease_rung_t tried,
                                      policy_lease_result_t said, uint64_t now);

/* The caller's actions, one per rung: what the rung says about the call
 * (ctx is the caller's). cluster is called only with mode.cluster; share
 * must answer (NO or YES). */
typedef struct policy_lease_ops {
    policy_lease_result_t (*held)(void *ctx);
    policy_lease_result_t (*cluster)(void *ctx);
    policy_lease_result_t (*host)(void *ctx);
    policy_lease_result_t (*share)(void *ctx);
} policy_lease_ops_t;

/* Climbs from HELD, acting on each rung policy_lease_next leads to until
 * one answers, and returns that answer: NO, YES or WAIT (a climb that ends
 * with a FALL, a caller's bug, is NO: fail safe). *decided, when not NULL,
 * is the rung that answered. Pure itself: the ops do the acting. */
policy_lease_result_t policy_lease_climb(policy_lease_ladder_t *l, policy_lease_mode_t mode, uint64_t now,
                                         const policy_lease_ops_t *ops, void *ctx, policy_lease_rung_t *decided);

/* 1 if from -> to is a step of the ladder (policy_lease_next takes no other). */
int policy_lease_edge_allowed(policy_lease_rung_t from, policy_lease_rung_t to);

#endif
