/* pool/pool_hedge.h: the hedge satellite: a read whose first attempt is
 * slow is sent on to the next endpoint as well, within a budget; the first
 * answer wins and the other attempt is cancelled (its slot held until its
 * own deadline). Its row: pool_hedge_row (pool/pool_call_int.h). */
#ifndef POOL_HEDGE_H
#define POOL_HEDGE_H

#include "pool/pool_link.h"

/* pool_hedge.c: hedged reads. A call's hedge is a state machine:
 *   IDLE --arm--> ARMED --timer, sent--> SENT --its exchange done or cancelled--> IDLE
 *   ARMED --disarmed (the attempt ended, no endpoint, no budget)--> IDLE
 * hedge_move is the one writer of call->hedge.state, checked against
 * pool_hedge_edge_allowed. */
typedef enum pool_hedge_state {
    POOL_HEDGE_IDLE,
    POOL_HEDGE_ARMED,             /* the delay timer runs */
    POOL_HEDGE_SENT,              /* the hedge's exchange is in flight */
    POOL_HEDGE_STATE_COUNT
} pool_hedge_state_t;
int pool_hedge_edge_allowed(pool_hedge_state_t from, pool_hedge_state_t to);
/* The hedge's exchange finished (before its outcome is applied). */
void pool_hedge_landed(pool_call_t *call);
/* An upstream request of a call was sent (the budget's denominator). */
void pool_hedge_count(pool_network_t *net, int hedge);
/* The call's attempt at ep just started: schedules a hedge if the call may
 * be hedged (policy/hedge.h). */
void pool_hedge_arm(pool_call_t *call, int ep);
/* An answered exchange's latency, for the hedge delay of its endpoint. */
void pool_hedge_sample(pool_call_t *call, const pool_exchange_t *ex);
/* One of the call's exchanges finished (hedge: it was the hedge's) and its
 * outcome was applied. Returns 1 if the call must wait for the other one
 * still in flight; otherwise cancels the other one (the call is answered)
 * or the pending hedge timer, and returns 0: the loop goes on. */
int pool_hedge_settle(pool_call_t *call, int hedge);
/* The call ends (deadline, release): the hedge and its timer stop. */
void pool_hedge_stop(pool_call_t *call);

/* A call's hedge. */
typedef struct pool_hedge_call {
    pool_exchange_t ex;           /* the hedge: the same body at the next endpoint */
    uint8_t state;                /* pool_hedge_state_t; written only by hedge_move */
    pool_delay_t timer;           /* the hedge delay after the first attempt started (ARMED) */
    int16_t primary;              /* endpoint of the attempt being hedged, -1 */
    int16_t ep;                   /* endpoint of the hedge, -1 */
} pool_hedge_call_t;

#endif
