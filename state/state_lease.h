/* state/state_lease.h: the callers of one worker waiting for a lease that
 * is being asked of the cluster (cluster:).
 *
 * Redis answers a lease of limit cells or credit ledgers later, on the
 * worker's event loop (state_cluster_limit_lease, state_cluster_credit_lease).
 * The calls that found nothing held wait here, and the answer wakes them
 * (all of them, or those of one caller) to climb the ladder again
 * (policy/lease.h): the lease now held serves them, or, when Redis failed
 * meanwhile, the host's store decides. One worker, one event loop: no locks. */
#ifndef STATE_LEASE_H
#define STATE_LEASE_H

#include <h2o/linklist.h>

/* Embedded in the waiting caller's storage; zero-filled it is not waiting. */
typedef struct state_lease_wait {
    h2o_linklist_t link;
    void (*cb)(struct state_lease_wait *w);
} state_lease_wait_t;

typedef struct state_lease_waiters {
    h2o_linklist_t anchor;
} state_lease_waiters_t;

void state_lease_waiters_init(state_lease_waiters_t *ws);
/* w waits in ws until woken (cb runs once, w no longer waiting) or cancelled. */
void state_lease_wait(state_lease_waiters_t *ws, state_lease_wait_t *w, void (*cb)(state_lease_wait_t *w));
/* Stops waiting (the caller went away); harmless when not waiting. */
void state_lease_wait_cancel(state_lease_wait_t *w);
/* Wakes the waiters match accepts (every one when match is NULL). They are
 * taken off ws first, so a callback may wait again (for the next lease)
 * without being woken twice, and may cancel another woken waiter. */
void state_lease_wake(state_lease_waiters_t *ws, int (*match)(const state_lease_wait_t *w, const void *arg),
                      const void *arg);

#endif
