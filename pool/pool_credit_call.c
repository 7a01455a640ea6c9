/* pool/pool_credit_call.c: the call loop's row for credit budgets: an
 * attempt takes its credits at the endpoint before it is sent, or the call
 * waits for a lease from Redis (cluster:) and goes on when it is decided. */
#include "pool/pool_call_int.h"

static void on_credit_decided(pool_credit_wait_t *w)
{
    pool_call_next(H2O_STRUCT_FROM_MEMBER(pool_call_t, credit_wait, w));
}

static pool_gate_t row_gate(pool_call_t *call, int ep)
{
    int r = pool_credit_take_call(call, ep, on_credit_decided);
    return r > 0 ? POOL_GATE_GO : r == 0 ? POOL_GATE_SKIP : POOL_GATE_WAIT;
}

static void row_stop(pool_call_t *call, pool_call_stop_t why)
{
    (void)why;
    pool_credit_wait_cancel(&call->credit_wait);
}

const pool_call_row_t pool_credit_row = {.name = "credit", .gate = row_gate, .stop = row_stop};
