/* pool/pool_delay.h: timers of any length on one h2o timeout (pool_delay.c).
 * Used by every layer of pool/: it knows nothing but the loop. */
#ifndef POOL_DELAY_H
#define POOL_DELAY_H

#include <stdint.h>

#include <h2o.h>

/* A delayed callback, embedded in its owner. */
typedef struct pool_delay {
    h2o_linklist_t link;
    uint64_t due_ms;
    void (*cb)(struct pool_delay *d);
} pool_delay_t;

/* The worker's delays, soonest first, polled by one short timeout. */
typedef struct pool_delays {
    h2o_loop_t *loop;
    h2o_linklist_t list;
    h2o_timeout_t timeout;
    h2o_timeout_entry_t tick;
} pool_delays_t;

void pool_delays_init(pool_delays_t *ds, h2o_loop_t *loop);
void pool_delays_dispose(pool_delays_t *ds);
/* Runs cb(d) once, ms from now (5 ms granularity); d must not be waiting. */
void pool_delay_add(pool_delays_t *ds, pool_delay_t *d, uint32_t ms, void (*cb)(pool_delay_t *));
/* Stops d if it waits; harmless otherwise. */
void pool_delay_cancel(pool_delay_t *d);

#endif
