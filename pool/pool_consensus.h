/* pool/pool_consensus.h: the consensus satellite: a single read of a method
 * listed in the network's consensus: goes to `of` endpoints at once and is
 * answered as soon as `quorum` answers are equal (policy/consensus.h); an
 * endpoint in the minority is reported. Its row: pool_consensus_row
 * (pool/pool_call_int.h). */
#ifndef POOL_CONSENSUS_H
#define POOL_CONSENSUS_H

#include <stdint.h>

#include "pool/pool.h"

typedef struct pool_consensus_run pool_consensus_run_t; /* pool_consensus.c: the fan-out's exchanges and votes */

/* A call's consensus. */
typedef struct pool_consensus_call {
    uint8_t on;                   /* the call is compared (set at its start) */
    uint8_t fanning;              /* inside the fan-out: its own gate lets each attempt through */
    uint8_t max;                  /* dispatch: max (policy/method.h): every answer awaited, the highest given */
    uint8_t of;                   /* endpoints asked */
    pool_consensus_run_t *run;    /* NULL until the fan-out (heap: only compared calls pay for it) */
} pool_consensus_call_t;

#endif
