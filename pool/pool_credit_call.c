/* pool/pool_credit_call.c: the call loop's row for credit budgets: an
 * attempt takes its credits at the endpoint before it is sent, or the call
 * waits for a lease from Redis (cluster:) and goes on when it is decided. */
#include <stdlib.h>

#include "base/sl_time.h"
#include "pool/pool_call_int.h"

static void on_credit_decided(pool_credit_wait_t *w)
{
    pool_call_next(H2O_STRUCT_FROM_MEMBER(pool_call_t, credit_wait, w));
}

/* The credits the attempt in call->sent costs at endpoint ep: GO, taken;
 * SKIP (and ep marked tried) if its budget lacks them; WAIT if the call
 * waits for a lease from Redis (cluster:; it goes on when it is decided). A
 * hedge may not wait: SKIP then, ep left untried. */
static pool_gate_t row_gate(pool_call_t *call, int ep, int may_wait)
{
    pool_endpoint_t *e = &call->net->endpoints[ep];
    const char *names_small[16];
    size_t lens_small[16], n = 0;
    int heap = call->nsent > 16; /* most calls are single: no allocation */
    const char **names = heap ? sl_xmalloc(call->nsent * sizeof(*names)) : names_small;
    size_t *lens = heap ? sl_xmalloc(call->nsent * sizeof(*lens)) : lens_small;
    for (size_t i = 0; i < call->nsent; i++) {
        const pool_item_t *it = &call->items[call->sent[i]];
        names[n] = it->name ? it->name : "";
        lens[n++] = it->name_len;
    }
    pool_gate_t ok = POOL_GATE_GO;
    policy_cost_t cost = policy_cost_of_request(e->credit.profile, call->net->conf->chain, NULL, 0, names, lens, n,
                                                call->batch);
    uint64_t retry_ms = 0;
    policy_lease_result_t took = pool_credit_take(e, cost, &retry_ms);
    if (took == POLICY_LEASE_WAIT) {
        if (may_wait)
            pool_credit_wait(e, &call->credit_wait, on_credit_decided);
        ok = may_wait ? POOL_GATE_WAIT : POOL_GATE_SKIP;
    } else if (took == POLICY_LEASE_YES) {
        /* instrument usage in the provider's own units, budget or not */
        POOL_STAT_ADD(e, credits_spent, cost.billed);
        call->credits += cost.billed;
        pool_pressure_spent(e, (uint32_t)call->nsent, cost);
        for (size_t i = 0; i < call->nsent; i++) {
            const pool_item_t *it = &call->items[call->sent[i]];
            policy_cost_t one = call->nsent == 1 && !call->batch
                                    ? cost /* a single call is its own request */
                                    : policy_cost_of(e->credit.profile, call->net->conf->chain, NULL, 0, names[i], lens[i]);
            pool_method_count(e, it->method, STATE_MC_REQUESTS, 1);
            pool_method_count(e, it->method, STATE_MC_CREDITS, one.billed);
        }
    } else {
        call->tried[ep] = 1;
        uint64_t until = sl_shared_ms() + retry_ms;
        if (call->rate_limited_until_ms == 0 || until < call->rate_limited_until_ms)
            call->rate_limited_until_ms = until;
        ok = POOL_GATE_SKIP;
    }
    if (heap) {
        free(names);
        free(lens);
    }
    return ok;
}

static void row_stop(pool_call_t *call, pool_call_stop_t why)
{
    (void)why;
    pool_credit_wait_cancel(&call->credit_wait);
}

const pool_call_row_t pool_credit_row = {
    .name = "credit",
    .gate = row_gate,
    .stop = row_stop,
};
