/* pool/pool_held.h: the held satellite: a failure that may be the
 * request's own doing (policy/shape.h) is held back from the endpoint's
 * record until the next endpoint's attempt settles it. Its row: pool_held_row. */
#ifndef POOL_HELD_H
#define POOL_HELD_H

#include "policy/attempt.h"
#include "policy/shape.h"
#include "pool/pool_link.h"
#include "state/state.h"

/* pool_held.c: the endpoint's record of the attempt at ep (a->record), and
 * the penalty held back from an earlier endpoint (a->held): released as
 * that endpoint's, or spared when the call proved the request's shape. */
void pool_held_carry(pool_call_t *call, int ep, const policy_attempt_actions_t *a, uint32_t latency_us);
/* A held penalty nobody settled (no other endpoint was tried): counted as
 * its shape's outcome, no verdict, and the endpoint asked a cheap read to
 * confirm (pool_probe_confirm): a fault still counts, through the probe. */
void pool_held_release(pool_call_t *call);

/* What a call holds: a failure that may be the request's own, until the
 * next endpoint's attempt settles it. */
typedef struct pool_held_call {
    int16_t ep;                   /* -1: nothing held */
    uint8_t shape;                /* policy_shape_t */
    uint8_t outcome;              /* state_outcome_t it counts as if it was the endpoint's */
    uint32_t latency_us;
} pool_held_call_t;

#endif
