/* pool/pool_hedge.c: hedged reads.
 *
 * When a call's attempt starts and the call may be hedged (every member a
 * cheap, retry-safe read, hedging on, pressure ok: policy/hedge.h), a timer
 * of the hedge delay is set: the endpoint's p95 answer latency (at least
 * twice its median) for the call's method class, clamped to [hedge.min_ms,
 * hedge.max_ms]. If the
 * attempt is still out when it fires and the budget allows (hedges at most
 * hedge.max_ratio of this worker's upstream requests over hedge.window_ms,
 * plus hedge.burst), the same body goes to the next endpoint of the plan,
 * credits charged as for any attempt. The first answer that settles the call
 * wins; the other exchange is cancelled (its connection closed; it counts
 * as hedges_cancelled there, never as a failure: a slow but correct
 * endpoint is not penalised for having been beaten). An answer that does
 * not settle the call (a failure, a transient error) waits for the other. */
#include <stdlib.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "pool/pool_call_int.h"

#define HEDGE_MAX_MEMBERS 128
enum { ROLL_REQUESTS, ROLL_HEDGES };

static const uint8_t hedge_edges[POOL_HEDGE_STATE_COUNT][POOL_HEDGE_STATE_COUNT] = {
    [POOL_HEDGE_IDLE] = {[POOL_HEDGE_ARMED] = 1},
    [POOL_HEDGE_ARMED] = {[POOL_HEDGE_IDLE] = 1, [POOL_HEDGE_SENT] = 1},
    [POOL_HEDGE_SENT] = {[POOL_HEDGE_IDLE] = 1},
};

int pool_hedge_edge_allowed(pool_hedge_state_t from, pool_hedge_state_t to)
{
    return from < POOL_HEDGE_STATE_COUNT && to < POOL_HEDGE_STATE_COUNT && hedge_edges[from][to];
}

/* The one writer of call->hedge.state. A move that is no edge is a bug. */
static void hedge_move(pool_call_t *call, pool_hedge_state_t to)
{
    pool_hedge_state_t from = (pool_hedge_state_t)call->hedge.state;
    if (!pool_hedge_edge_allowed(from, to)) {
        sl_log_error("hedge: no edge %d -> %d", (int)from, (int)to);
        abort();
    }
    if (from == POOL_HEDGE_ARMED)
        pool_delay_cancel(&call->hedge.timer);
    call->hedge.state = (uint8_t)to;
}

static int hedge_sent(const pool_call_t *call)
{
    return call->hedge.state == POOL_HEDGE_SENT;
}

void pool_hedge_landed(pool_call_t *call)
{
    hedge_move(call, POOL_HEDGE_IDLE);
}

/* The attempt being hedged ended (or a new one starts): no hedge for it. */
static void disarm(pool_call_t *call)
{
    if (call->hedge.state == POOL_HEDGE_ARMED)
        hedge_move(call, POOL_HEDGE_IDLE);
}

static size_t count_pending(const pool_call_t *call)
{
    size_t n = 0;
    for (size_t i = 0; i < call->nitems; i++)
        n += call->items[i].state == POOL_ITEM_PENDING;
    return n;
}

void pool_hedge_count(pool_network_t *net, int hedge)
{
    const policy_hedge_conf_t *c = &net->conf->hedge;
    policy_roll_add(&net->hedge_roll, &net->hedge_v[0][0], 2, c->window_ms, sl_now_ms(),
                    hedge ? ROLL_HEDGES : ROLL_REQUESTS, 1);
}

static int budget_ok(pool_network_t *net)
{
    const policy_hedge_conf_t *c = &net->conf->hedge;
    uint64_t sum[2];
    policy_roll_sum(&net->hedge_roll, &net->hedge_v[0][0], 2, c->window_ms, sl_now_ms(), sum);
    return policy_hedge_budget_ok(c, sum[ROLL_REQUESTS], sum[ROLL_HEDGES]);
}

static policy_method_class_t call_class(const pool_call_t *call)
{
    return call->nsent > 0 ? call->items[call->sent[0]].method->cls : POLICY_CLASS_READ;
}

void pool_hedge_sample(pool_call_t *call, const pool_exchange_t *ex)
{
    if (ex->fail == POOL_FAIL_NONE && ex->head.status >= 200 && ex->head.status < 300) {
        pool_endpoint_t *e = pool_link_endpoint(ex->link);
        policy_hedge_hist_add(&e->hedge_hist[call_class(call)], ex->latency_us);
        e->hedges_lost_in_row = 0;
    }
}

/* 1 if the attempt in call->sent may be hedged now (budget aside). */
static int eligible(const pool_call_t *call)
{
    if (call->carrier || call->nsent == 0 || call->nsent > HEDGE_MAX_MEMBERS || hedge_sent(call))
        return 0;
    const policy_method_t *m[HEDGE_MAX_MEMBERS];
    for (size_t i = 0; i < call->nsent; i++) {
        m[i] = call->items[call->sent[i]].method;
        if (!call->items[call->sent[i]].cheap) /* a cheap method made heavy by its params */
            return 0;
    }
    return policy_hedge_eligible(&call->net->conf->hedge, m, call->nsent, call->pinned >= 0,
                                 pool_network_pressure(call->net)) == POLICY_HEDGE_YES;
}

static void on_hedge_timer(pool_delay_t *d)
{
    pool_call_t *call = H2O_STRUCT_FROM_MEMBER(pool_call_t, hedge.timer, d);
    pool_network_t *net = call->net;
    if (call->hedge.state != POOL_HEDGE_ARMED)
        return;
    if (call->state == POOL_CALL_DONE || !call->ex_active || !eligible(call) || !budget_ok(net)) {
        hedge_move(call, POOL_HEDGE_IDLE);
        return;
    }
    int primary = call->hedge.primary;
    uint8_t was = call->tried[primary];
    call->tried[primary] = 1; /* the hedge goes elsewhere */
    int ep = call->attempts < net->max_attempts ? pool_call_plan_next(call) : -1;
    call->tried[primary] = was;
    if (ep < 0 || ep == primary || pool_call_gate(call, ep, 0) != POOL_GATE_GO) {
        hedge_move(call, POOL_HEDGE_IDLE);
        return;
    }
    pool_fail_t fail =
        pool_call_attempt_start(call, &call->hedge.ex, ep, call->body, call->body_len, 0, pool_call_on_exchange_done);
    pool_hedge_count(net, 1);
    call->hedge.ep = (int16_t)ep;
    call->tried[ep] = 1;
    pool_endpoint_t *e = &net->endpoints[ep];
    if (fail != POOL_FAIL_NONE) {
        hedge_move(call, POOL_HEDGE_IDLE);
        pool_call_start_failed(call, ep, &call->hedge.ex, fail);
        return;
    }
    POOL_STAT_ADD(e, hedges_sent, 1);
    hedge_move(call, POOL_HEDGE_SENT);
    sl_log_debug("network %s: no answer from %s yet: hedged to %s", net->conf->name,
                 net->endpoints[primary].conf->id, e->conf->id);
}

void pool_hedge_arm(pool_call_t *call, int ep)
{
    pool_network_t *net = call->net;
    disarm(call);
    if (!eligible(call) || net->nendpoints < 2)
        return;
    pool_endpoint_t *e = &net->endpoints[ep];
    uint32_t delay = policy_hedge_delay_ms(&net->conf->hedge, &e->hedge_hist[call_class(call)],
                                           e->health.shared.probe_ewma_us);
    call->hedge.primary = (int16_t)ep;
    call->hedge.ep = -1;
    hedge_move(call, POOL_HEDGE_ARMED);
    pool_delay_add(&net->pool->t.delays, &call->hedge.timer, delay, on_hedge_timer);
}

/* A cancelled request may still be worked on by its provider (closing the
 * connection does not stop a node mid-call): its slot of max_inflight stays
 * taken until the attempt's own deadline would have ended, so a provider's
 * concurrency limit holds even while sluice hedges around it. */
typedef struct held_slot {
    pool_delay_t delay;
    h2o_linklist_t link;          /* in net->held_slots */
    pool_endpoint_t *ep;
} held_slot_t;

static void slot_free(held_slot_t *h)
{
    pool_delay_cancel(&h->delay);
    h2o_linklist_unlink(&h->link);
    h->ep->link.inflight--;
    free(h);
}

static void on_slot_due(pool_delay_t *d)
{
    held_slot_t *h = H2O_STRUCT_FROM_MEMBER(held_slot_t, delay, d);
    pool_network_t *net = h->ep->net;
    slot_free(h);
    pool_call_wake_waiters(net);
}

static void hold_slot(pool_endpoint_t *ep, uint64_t started_us)
{
    uint64_t elapsed_ms = (sl_now_us() - started_us) / 1000;
    uint32_t attempt_ms = ep->net->conf->timeouts.attempt_ms;
    if (elapsed_ms >= attempt_ms)
        return;
    held_slot_t *h = sl_xcalloc(1, sizeof(*h));
    h->ep = ep;
    ep->link.inflight++;
    h2o_linklist_insert(&ep->net->held_slots, &h->link);
    pool_delay_add(&ep->net->pool->t.delays, &h->delay, (uint32_t)(attempt_ms - elapsed_ms), on_slot_due);
}

static void pool_hedge_init(pool_network_t *net)
{
    h2o_linklist_init_anchor(&net->held_slots);
}

static void pool_hedge_dispose(pool_network_t *net)
{
    while (!h2o_linklist_is_empty(&net->held_slots))
        slot_free(H2O_STRUCT_FROM_MEMBER(held_slot_t, link, net->held_slots.next));
}

/* The exchange still out lost: it is cancelled (its slot held, above),
 * logged, counted there. */
static void cancel_loser(pool_call_t *call, pool_exchange_t *ex)
{
    pool_endpoint_t *e = pool_link_endpoint(ex->link);
    uint64_t started_us = ex->started_us;
    uint32_t waited = (uint32_t)(sl_now_us() - started_us);
    int got_bytes = ex->got_bytes;
    hold_slot(e, started_us); /* first: the cancel wakes waiters, who must not take it */
    pool_call_attempt_cancel(call, ex);
    /* a hung endpoint's reads never time out while hedges beat them: losing
     * a few races in a row without a byte says it as well. Only the hedged
     * attempt counts, which had outlived its own p90 (a hedge beaten a moment
     * after it was sent says nothing about its endpoint). */
    if (ex == &call->ex) {
        /* its answer would have taken at least this long: without the sample
         * the slow tail a hedge cuts off is never seen, and the delay drifts
         * down until every read past the median is hedged */
        policy_hedge_hist_add(&e->hedge_hist[call_class(call)], waited);
        e->hedges_lost_in_row = got_bytes ? 0 : e->hedges_lost_in_row + 1;
        pool_demote(e, policy_demote_on_loss(e->hedges_lost_in_row, got_bytes));
    }
    uint8_t flags = POOL_ATTEMPT_CANCELLED | (ex == &call->hedge.ex ? POOL_ATTEMPT_HEDGE : 0);
    pool_call_log_attempt(call, e->index, POOL_FAIL_NONE, 0, waited, flags);
    POOL_STAT_ADD(e, hedges_cancelled, 1);
}

int pool_hedge_settle(pool_call_t *call, int hedge)
{
    int other_active = hedge ? call->ex_active : hedge_sent(call);
    int settled = count_pending(call) == 0;
    if (!hedge)
        disarm(call); /* the attempt it would hedge is over */
    if (hedge && settled && call->hedge.ep >= 0) {
        pool_endpoint_t *e = &call->net->endpoints[call->hedge.ep];
        POOL_STAT_ADD(e, hedges_won, 1);
    }
    if (!other_active)
        return 0;
    if (!settled)
        return 1;
    if (hedge) {
        cancel_loser(call, &call->ex);
        call->ex_active = 0;
    } else {
        cancel_loser(call, &call->hedge.ex);
        hedge_move(call, POOL_HEDGE_IDLE);
    }
    return 0;
}

void pool_hedge_stop(pool_call_t *call)
{
    disarm(call);
    if (hedge_sent(call)) {
        pool_call_attempt_cancel(call, &call->hedge.ex);
        hedge_move(call, POOL_HEDGE_IDLE);
    }
}

static void row_started(pool_call_t *call, int ep, int is_write)
{
    pool_hedge_count(call->net, 0);
    if (!is_write)
        pool_hedge_arm(call, ep);
}

static int row_done(pool_call_t *call, pool_exchange_t *ex)
{
    int hedge = ex == &call->hedge.ex;
    if (hedge)
        pool_hedge_landed(call);
    pool_hedge_sample(call, ex);
    return pool_hedge_settle(call, hedge);
}

static void row_stop(pool_call_t *call, pool_call_stop_t why)
{
    (void)why;
    pool_hedge_stop(call);
}

static size_t row_bytes(const pool_call_t *call)
{
    return call->hedge.ex.charged; /* the hedge's answer, being read */
}

const pool_call_row_t pool_hedge_row = {
    .name = "hedge",
    .started = row_started,
    .done = row_done,
    .stop = row_stop,
    .bytes = row_bytes,
    .net_init = pool_hedge_init,
    .net_dispose = pool_hedge_dispose,
};
