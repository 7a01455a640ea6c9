/* state/state_sum.h: the workers' slots of one endpoint or network, merged.
 *
 * Each worker flushes its own counters into its slot (1..nslots); readers
 * add the slots up here, inside a snapshot (state_read_begin). Absent or
 * undecodable slots count as zero. */
#ifndef STATE_SUM_H
#define STATE_SUM_H

#include <stdint.h>

#include "state/state.h"

typedef struct state_stats_sum {
    state_stats_rec_t total;      /* counters added; max_inflight_seen is the sum of the
                                   * slots' peaks (an upper bound of the simultaneous peak) */
    state_stats_rec_t freshest;   /* the slot flushed last: its ranking fields are current */
    int has_freshest;
    uint64_t inflight;            /* in flight in the slots flushed within fresh_ms */
    double ewma_us;               /* the slots' latency EWMAs weighted by their attempts */
    unsigned slots;               /* slots found */
} state_stats_sum_t;

/* Sums the stats slots of network/endpoint. */
void state_stats_sum(state_t *st, const char *network, const char *endpoint, unsigned nslots, uint64_t now_ms,
                     uint64_t fresh_ms, state_stats_sum_t *out);

typedef enum state_counters_kind {
    STATE_COUNTERS_PER_METHOD,    /* "pm/<network>/<endpoint>/<slot>" */
    STATE_COUNTERS_REQUESTS,      /* "req/<network>/<slot>" (endpoint unused) */
    STATE_COUNTERS_CACHE,         /* "cache/<network>/<slot>" (endpoint unused) */
    STATE_COUNTERS_SUBS,          /* "subs/<network>/<slot>" (endpoint unused) */
} state_counters_kind_t;

/* Adds up the counters records of the slots into sum->v[0..want) (sum->n =
 * want); a slot whose record does not hold exactly want counters (written by
 * another version of the method tables) is skipped. */
void state_counters_sum(state_t *st, state_counters_kind_t kind, const char *network, const char *endpoint,
                        unsigned nslots, uint32_t want, state_counters_rec_t *sum);

#endif
