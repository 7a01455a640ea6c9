/* pool/pool_credit_cluster.c: an endpoint's credit ledgers in Redis
 * (cluster:).
 *
 * The same lease model as LMDB's (pool_credit.c): a worker leases 1% of a
 * window's budget (at most 100,000, at least the call's cost) and spends it
 * locally; leased means spent for every host. The lease is asked of Redis
 * asynchronously: a call that finds no local lease waits for the answer
 * (pool_credit_wait), and the next lease is asked for once a window's local
 * lease falls below half of one, so a steady flow rarely waits. Redis'
 * answer also says when a window reaches budget_low or budget_exhausted,
 * once for the whole cluster: that worker appends the event. While Redis
 * is away pool_credit.c leases from the host's ledgers, its share of what
 * was left. */
#include <string.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "pool/pool_net.h"
#include "state/state_cluster.h"

typedef struct ask {
    pool_endpoint_t *ep;
    policy_cost_t cost;
    int prefetch;                 /* asked early: a refusal does not block calls the lease covers */
    size_t n;
    policy_credit_window_t win[POLICY_CREDIT_WINDOW_COUNT];
} ask_t;

/* The events Redis said are due: this worker's to append. */
static void append_events(ask_t *a, const state_cluster_credit_t *r, uint64_t now)
{
    pool_endpoint_t *ep = a->ep;
    for (size_t i = 0; i < r->n; i++) {
        if (r->windows[i].event == 0)
            continue;
        policy_credit_window_t w = a->win[i];
        uint64_t budget = policy_credit_budget(&ep->conf->credits, w);
        uint64_t left = budget > r->windows[i].spent ? budget - r->windows[i].spent : 0;
        state_event_t ev;
        pool_credit_event(ep, &ev, r->windows[i].event == 1 ? STATE_EVENT_BUDGET_LOW : STATE_EVENT_BUDGET_EXHAUSTED, w,
                          left, budget, now);
        if (state_event_append(ep->net->pool->state, &ev) != SL_OK)
            sl_log_warn("endpoint %s/%s: cannot record a budget event", ep->net->conf->name, ep->conf->id);
    }
}

static void on_answer(void *data, const state_cluster_credit_t *r)
{
    ask_t *a = data;
    pool_endpoint_t *ep = a->ep;
    pool_credit_t *cr = &ep->credit;
    uint64_t now = state_cluster_now_ms(state_cluster_of(ep->net->pool->state));
    cr->asking = 0;
    if (r->ok) {
        append_events(a, r, now);
        if (r->granted) {
            for (size_t i = 0; i < r->n; i++) {
                policy_credit_window_t w = a->win[i];
                uint64_t start, end;
                /* Redis' window (a clock behind here gets the newer one) */
                policy_credit_window_bounds(w, r->windows[i].start_ms, ep->conf->credits.month_reset_day, &start, &end);
                cr->remaining[w] = (cr->window_start[w] == start ? cr->remaining[w] : 0) + r->windows[i].grant;
                cr->window_start[w] = start;
                cr->window_end[w] = end;
            }
        } else {
            /* lacking: until the earliest window that lacks turns over */
            uint64_t retry = 0;
            for (size_t i = 0; i < r->n; i++) {
                policy_credit_window_t w = a->win[i];
                uint64_t budget = policy_credit_budget(&ep->conf->credits, w), start, end;
                if (r->windows[i].spent + pool_credit_units(a->cost, w) <= budget)
                    continue;
                policy_credit_window_bounds(w, r->windows[i].start_ms, ep->conf->credits.month_reset_day, &start, &end);
                uint64_t wait = end > now ? end - now : 1;
                if (retry == 0 || wait < retry)
                    retry = wait;
            }
            if (retry == 0)
                retry = 1000;
            if (a->prefetch)
                cr->quiet_until_ms = now + retry;
            else
                cr->lacking_until_ms = now + retry;
        }
    }
    /* a failure: the link is down, the waiters lease from the host's ledgers */
    free(a);
    state_lease_wake(&cr->waiters, NULL, NULL);
}

/* WAIT if asked (or a lease is under way), FALL if it cannot be. */
static policy_lease_result_t ask(pool_endpoint_t *ep, policy_cost_t cost, uint64_t now, int prefetch)
{
    pool_credit_t *cr = &ep->credit;
    state_cluster_t *cl = state_cluster_of(ep->net->pool->state);
    if (cr->asking)
        return POLICY_LEASE_WAIT;
    if (!state_cluster_up(cl))
        return POLICY_LEASE_FALL;
    ask_t *a = sl_xcalloc(1, sizeof(*a));
    *a = (ask_t){.ep = ep, .cost = cost, .prefetch = prefetch};
    state_cluster_ask_t asks[POLICY_CREDIT_WINDOW_COUNT];
    uint64_t rnow = state_cluster_now_ms(cl);
    for (policy_credit_window_t w = 0; w < POLICY_CREDIT_WINDOW_COUNT; w++) {
        uint64_t budget = policy_credit_budget(&ep->conf->credits, w);
        if (budget == 0)
            continue;
        uint64_t need = pool_credit_units(cost, w), size = pool_credit_lease_size(ep, w, cost);
        int covered = now < cr->window_end[w] && cr->remaining[w] >= need;
        if (covered && (!prefetch || cr->remaining[w] * 2 >= size))
            continue;
        state_cluster_ask_t *q = &asks[a->n];
        q->key = cr->key[w];
        policy_credit_window_bounds(w, rnow, ep->conf->credits.month_reset_day, &q->start_ms, &q->end_ms);
        q->budget = budget;
        q->need = need;
        q->size = size;
        a->win[a->n++] = w;
    }
    /* nothing to ask happens only to a prefetch, which does not look at the answer */
    if (a->n == 0 || state_cluster_credit_lease(cl, asks, a->n, POOL_CREDIT_LOW_PCT, on_answer, a) != 0) {
        free(a);
        return POLICY_LEASE_FALL;
    }
    cr->asking = 1;
    return POLICY_LEASE_WAIT;
}

policy_lease_result_t pool_credit_cluster_ask(pool_endpoint_t *ep, policy_cost_t cost, uint64_t now_ms)
{
    return ask(ep, cost, now_ms, 0);
}

void pool_credit_cluster_prefetch(pool_endpoint_t *ep, policy_cost_t cost, uint64_t now_ms)
{
    pool_credit_t *cr = &ep->credit;
    if (cr->asking || now_ms < cr->quiet_until_ms)
        return;
    for (policy_credit_window_t w = 0; w < POLICY_CREDIT_WINDOW_COUNT; w++)
        if (policy_credit_budget(&ep->conf->credits, w) != 0 &&
            cr->remaining[w] * 2 < pool_credit_lease_size(ep, w, cost)) {
            (void)ask(ep, cost, now_ms, 1);
            return;
        }
}

void pool_credit_wait(pool_endpoint_t *ep, pool_credit_wait_t *w, void (*cb)(pool_credit_wait_t *w))
{
    state_lease_wait(&ep->credit.waiters, w, cb);
}

void pool_credit_wait_cancel(pool_credit_wait_t *w)
{
    state_lease_wait_cancel(w);
}
