/* state/state_counters.h: one worker's counters record in its slot of the
 * stats database, with the key it is flushed to and whether it changed.
 *
 * Counted in memory on the hot path, flushed by the worker every ~100 ms
 * when something changed (gateway/gw_stats.c). Every change goes through
 * state_counters_slot_add / _set, which mark the slot dirty, so no change is
 * left out of the next flush and an unchanged slot costs no write. One
 * worker owns a slot: no locking. */
#ifndef STATE_COUNTERS_H
#define STATE_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

#include "state/state.h"
#include "state/state_key.h"

typedef struct state_counters_slot {
    char key[STATE_KEY_MAX];      /* its record in the stats database (the caller builds it) */
    state_counters_rec_t *rec;    /* heap: state_counters_slot_load, freed by _dispose */
    int dirty;                    /* changed since the last flush that wrote it */
} state_counters_slot_t;

/* Loads s->rec from s->key (allocating it on the first call). Inside a
 * snapshot (state_read_begin); st NULL means there is nothing to load. A
 * record that is absent, unreadable or not exactly want counters long
 * (written by another version of the tables) starts again at zero, want
 * long. Leaves s->dirty as it was. */
void state_counters_slot_load(state_counters_slot_t *s, state_t *st, uint32_t want);

/* Adds n to counter i (below s->rec->n) and marks the slot dirty. */
void state_counters_slot_add(state_counters_slot_t *s, size_t i, uint64_t n);

/* Sets counter i (a gauge) to value; marks the slot dirty only if that
 * changed it. */
void state_counters_slot_set(state_counters_slot_t *s, size_t i, uint64_t value);

/* Marks the slot to be written by the next flush even if nothing changes
 * (a worker's first flush writes its gauges as they now are). */
void state_counters_slot_touch(state_counters_slot_t *s);

void state_counters_slot_dispose(state_counters_slot_t *s);

/* The response cache's counters per method in a "cache/<network>/<slot>"
 * record: (method index) * STATE_CACHE_COUNTER_COUNT + one of these. */
typedef enum state_cache_counter {
    STATE_CACHE_HIT,              /* answered from the cache's local tier */
    STATE_CACHE_MISS,             /* looked up, not there: it went upstream */
    STATE_CACHE_HIT_REDIS,        /* answered from the Redis tier (cache.redis) */
    STATE_CACHE_REDIS_TIMEOUT,    /* a miss Redis did not answer in time (cache.redis_wait_ms) */
    STATE_CACHE_REDIS_ERROR,      /* a miss Redis could not be asked about, or answered with an error */
    STATE_CACHE_COUNTER_COUNT
} state_cache_counter_t;

/* What a network's subscriptions cost upstream: entries of the network's
 * "subs/<network>/<slot>" record from STATE_SUBS_COST (below). */
typedef enum state_sub_counter {
    STATE_SUB_POLLS_HEADS,        /* header polls of the head follower (newHeads, logs) */
    STATE_SUB_POLLS_LOGS,         /* eth_getLogs of logs sources (shared or filtered) */
    STATE_SUB_POLLS_SLOT,         /* getSlot of slot and root sources */
    STATE_SUB_POLLS_ACCOUNT,      /* getMultipleAccounts of account sources */
    STATE_SUB_POLLS_SIGNATURE,    /* getSignatureStatuses of signature sources */
    STATE_SUB_POLLS_SOL_LOGS,     /* getSignaturesForAddress and getTransaction of Solana logs sources */
    STATE_SUB_POLLS_PROGRAM,      /* getProgramAccounts of program sources */
    STATE_SUB_LOGS_SHARED,        /* gauge: 1 while the network's logs are fetched shared */
    STATE_SUB_COUNTER_COUNT
} state_sub_counter_t;

/* An API key's counters in a "key/<name>/<slot>" record (by the key's
 * name, never its secret): its calls (each member of a batch), its
 * refusals by data.reason, the credits its admitted calls cost. */
typedef enum state_key_counter {
    STATE_KEYC_CALLS,             /* members answered under the key (those its scope refused included;
                                     a request refused whole counts only as its refusal) */
    STATE_KEYC_NETWORK,           /* refused network_not_allowed */
    STATE_KEYC_METHOD,            /* method_not_allowed */
    STATE_KEYC_CONTRACT,          /* contract_not_allowed */
    STATE_KEYC_ORIGIN,            /* origin_not_allowed */
    STATE_KEYC_PER_ADDRESS,       /* per_address */
    STATE_KEYC_CREDITS,           /* key_credits */
    STATE_KEYC_JWT,               /* jwt_invalid */
    STATE_KEYC_SPENT,             /* credits the admitted calls cost (the key's cost profile) */
    STATE_KEYC_LAST_USE_S,        /* a gauge: the wall-clock second of the last call answered under the key
                                     (workers fold by max, not sum); added last, so a record of the table
                                     before it (STATE_KEYC_COUNT_V1 long) still reads */
    STATE_KEYC_COUNT
} state_key_counter_t;

#define STATE_KEYC_COUNT_V1 STATE_KEYC_LAST_USE_S

/* A network's WebSocket and subscription counters in a "subs/<network>/<slot>"
 * record, STATE_SUBS_COUNTERS long: entry STATE_SRV_<name> is the network's
 * share of that server counter (counted: WS_CONNECTIONS, WS_SLOW_CLOSES,
 * WS_IDLE_CLOSES, the SUBS_<kind> gauges and every SUB_ counter; the other
 * entries stay 0);
 * entry STATE_SUBS_SOURCES + STATE_SRV_SUBS_<kind> is the sources (distinct
 * upstream polls or streams) of that kind running; entry STATE_SUBS_COST +
 * STATE_SUB_<name> is what the subscriptions cost upstream (above). Gauges
 * start at 0 with the worker, as the server's do. */
#define STATE_SUBS_SOURCES STATE_SRV_COUNT
#define STATE_SUBS_COST (2 * STATE_SRV_COUNT)
#define STATE_SUBS_COUNTERS (2 * STATE_SRV_COUNT + STATE_SUB_COUNTER_COUNT)
_Static_assert(STATE_SUBS_COUNTERS <= STATE_COUNTERS_MAX, "a subs/ record fits a counters record");

#endif
