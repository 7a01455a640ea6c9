/* pool/pool_held.h: the held satellite: a failure that may be the
 * request's own doing (policy/shape.h) is held back from the endpoint's
 * record until the next endpoint's attempt settles it. Its row: pool_held_row. */
#ifndef POOL_HELD_H
#define POOL_HELD_H

#include "policy/shape.h"
#include "pool/pool_link.h"
#include "state/state.h"

struct pool_attempt_result;

/* pool_held.c:
 * Records what the attempt at ep taught about it: a failure that may be the
 * request's doing is held until the next endpoint's attempt settles it (the
 * same failure there spares both endpoints and settles the call's items);
 * otherwise the outcome is recorded as usual. */
void pool_held_judge(pool_call_t *call, int ep, state_outcome_t outcome, policy_attempt_end_t end,
                     uint32_t latency_us);
/* Records a held penalty nobody settled as the endpoint's (no other endpoint
 * was tried: without a second opinion a fault must still count). */
void pool_held_release(pool_call_t *call);
/* How a transport failure ended an attempt, for pool_held_judge. */
policy_attempt_end_t pool_held_fail_end(pool_fail_t fail);
/* How an answered attempt ended (pool_answer_apply's result), for pool_held_judge. */
policy_attempt_end_t pool_held_answer_end(const struct pool_attempt_result *res);

/* What a call holds: a failure that may be the request's own, until the
 * next endpoint's attempt settles it. */
typedef struct pool_held_call {
    int16_t ep;                   /* -1: nothing held */
    uint8_t shape;                /* policy_shape_t */
    uint8_t outcome;              /* state_outcome_t it counts as if it was the endpoint's */
    uint32_t latency_us;
} pool_held_call_t;

#endif
