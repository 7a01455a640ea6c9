/* pool/pool_held.c: an attempt's record at its endpoint, and the penalty a
 * call holds back.
 *
 * A failure that may be the request's own doing (policy/shape.h: an answer
 * over the size cap, a heavy call past the deadline or given up on by the
 * provider for time, a call answered at id null) is not recorded against its
 * endpoint at once: the next endpoint's attempt settles it. The same failure
 * again spares both endpoints and ends the call with the shape's outcome;
 * anything else records the held failure as usual. A held penalty nobody
 * settled (the call ended with no other endpoint to ask: the last usable
 * one, a cancel, the deadline) is no verdict by itself: it counts as its
 * shape's outcome and the endpoint is asked a cheap read at once
 * (pool_probe_confirm), whose failure counts toward its breaker as any
 * probe's. So five slow eth_getLogs cannot open the last usable endpoint's
 * breaker, while an endpoint that is really down still fails its probes. Which of these an attempt calls for is
 * policy_attempt_decide's (policy/attempt.h); this file carries it out. */
#include "base/sl_log.h"
#include "pool/pool_call_int.h"

/* Records the held penalty as its endpoint's (the call went on to another
 * attempt after it: a failover). */
static void release(pool_call_t *call)
{
    if (call->held.ep < 0)
        return;
    pool_health_record(&call->net->endpoints[call->held.ep], (state_outcome_t)call->held.outcome,
                       call->held.latency_us, 1);
    call->held.ep = -1;
}

void pool_held_release(pool_call_t *call)
{
    if (call->held.ep < 0)
        return;
    pool_endpoint_t *ep = &call->net->endpoints[call->held.ep];
    state_outcome_t outcome = (state_outcome_t)policy_attempt_unsettled_outcome((policy_shape_t)call->held.shape);
    pool_health_record(ep, outcome, call->held.latency_us, 0);
    call->held.ep = -1;
    pool_probe_confirm(ep);
}

void pool_held_carry(pool_call_t *call, int ep, const policy_attempt_actions_t *a, uint32_t latency_us)
{
    pool_endpoint_t *eps = call->net->endpoints;
    /* one list of outcomes: base/sl_outcome.h */
    state_outcome_t outcome = (state_outcome_t)a->record_outcome;
    switch (a->held) {
    case POLICY_HELD_KEEP:
        break;
    case POLICY_HELD_ENDPOINT:
        release(call);
        break;
    case POLICY_HELD_UNSETTLED: /* the same endpoint again: no second opinion */
        pool_held_release(call);
        break;
    case POLICY_HELD_REQUEST: /* two endpoints failed the call the same way */
        pool_health_record(&eps[call->held.ep], outcome, call->held.latency_us, 1);
        call->held.ep = -1;
        sl_log_debug("network %s: a call failed as %s at two endpoints: the request's doing, no endpoint penalised",
                     call->net->conf->name, policy_shape_name(a->shape));
        break;
    }
    switch (a->record) {
    case POLICY_RECORD_NONE:
        break;
    case POLICY_RECORD_NOW:
        pool_health_record(&eps[ep], outcome, latency_us, 0); /* its failover: pool_attempt_judge */
        break;
    case POLICY_RECORD_HOLD:
        call->held.ep = (int16_t)ep;
        call->held.shape = (uint8_t)a->shape;
        call->held.outcome = (uint8_t)outcome;
        call->held.latency_us = latency_us;
        break;
    }
}

static void row_stop(pool_call_t *call, pool_call_stop_t why)
{
    (void)why; /* a call cancelled half-way: what was held counts too */
    pool_held_release(call);
}

const pool_call_row_t pool_held_row = {
    .name = "held",
    .stop = row_stop,
};
