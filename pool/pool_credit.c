/* pool/pool_credit.c: an endpoint's credit budget, in its provider's units.
 *
 * Per endpoint there is a ledger record per window (second, minute, day,
 * calendar month) in state/, shared by every worker and kept across
 * restarts. A worker leases credits from it (the ledger's `spent` grows by
 * the lease in one write transaction) and spends them locally; it goes back
 * to LMDB only when its lease runs out or the window turns over. Leased
 * credits count as spent whether used or not, so the workers together never
 * spend more than the budget; a worker killed with leased credits leaves at
 * most one lease per window unused. The per-second and per-minute windows
 * count throughput units (what a provider's rate limit counts), the day and
 * month windows billed units. An endpoint lacking credits for a call is
 * skipped by the plan, before any request is sent. */
#include <string.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "pool/pool_int.h"
#include "state/state_cluster.h"
#include "state/state_key.h"

/* The units of cost a window counts. */
static uint64_t units(policy_cost_t cost, policy_credit_window_t w)
{
    return policy_credit_counts_throughput(w) ? cost.throughput : cost.billed;
}

uint64_t pool_credit_units(policy_cost_t cost, policy_credit_window_t w)
{
    return units(cost, w);
}

uint64_t pool_credit_lease_size(const pool_endpoint_t *ep, policy_credit_window_t w, policy_cost_t cost)
{
    uint64_t budget = policy_credit_budget(&ep->conf->credits, w), need = units(cost, w);
    uint64_t size = budget / 100 < 100000 ? budget / 100 : 100000;
    return size < need ? need : size;
}

typedef struct lease_ctx {
    pool_endpoint_t *ep;
    policy_cost_t cost;
    uint64_t now;
    policy_credit_window_t win[POLICY_CREDIT_WINDOW_COUNT];   /* record index -> window */
    size_t n;
    uint64_t grant[POLICY_CREDIT_WINDOW_COUNT];
    uint64_t start[POLICY_CREDIT_WINDOW_COUNT], end[POLICY_CREDIT_WINDOW_COUNT]; /* of each record's window */
    uint64_t retry_ms;              /* lacking: until the earliest short window turns over */
    uint32_t hosts;                 /* cluster, Redis away: this host's share (0: the whole budget) */
} lease_ctx_t;

void pool_credit_event(const pool_endpoint_t *ep, state_event_t *ev, state_event_kind_t kind, policy_credit_window_t w,
                       uint64_t left, uint64_t budget, uint64_t now_ms)
{
    state_event_init(ev, kind, ep->net->conf->name, ep->conf->id, now_ms);
    ev->count = left;
    snprintf(ev->reason, sizeof(ev->reason), "%s budget: %llu of %llu credits left", policy_credit_window_name(w),
             (unsigned long long)left, (unsigned long long)budget);
}

static void budget_event(lease_ctx_t *c, state_event_t *ev, state_event_kind_t kind, policy_credit_window_t w, uint64_t left,
                         uint64_t budget)
{
    pool_credit_event(c->ep, ev, kind, w, left, budget, c->now);
}

/* Cluster, Redis away: what this host may spend alone in a window: its
 * share of what Redis last said was left ("cl/" copy; all of the budget in
 * a window Redis has not counted yet). The records are the host's ledgers,
 * then the copies, then the unsynced counts ("cu/"), n of each. */
static int share_cb(lease_ctx_t *c, state_ledger_rec_t *led, size_t n)
{
    const pool_credits_conf_t *conf = &c->ep->conf->credits;
    state_ledger_rec_t *copy = led + n, *unsynced = led + 2 * n;
    for (size_t i = 0; i < n; i++) {
        policy_credit_window_t w = c->win[i];
        uint64_t budget = policy_credit_budget(conf, w), need = units(c->cost, w);
        policy_credit_window_bounds(w, c->now, conf->month_reset_day, &c->start[i], &c->end[i]);
        uint64_t start = c->start[i];
        if (led[i].window_start_ms != start)
            led[i] = (state_ledger_rec_t){start, 0, 0, 0};
        if (unsynced[i].window_start_ms != start)
            unsynced[i] = (state_ledger_rec_t){start, 0, 0, 0};
        uint64_t seen = copy[i].window_start_ms == start ? copy[i].spent : 0;
        uint64_t mine = seen + (budget > seen ? (budget - seen) / c->hosts : 0);
        uint64_t left = mine > led[i].spent ? mine - led[i].spent : 0;
        if (left < need) {
            if (c->retry_ms == 0 || c->end[i] - c->now < c->retry_ms)
                c->retry_ms = c->end[i] - c->now;
            continue;
        }
        uint64_t size = pool_credit_lease_size(c->ep, w, c->cost);
        c->grant[i] = size > left ? left : size;
    }
    for (size_t i = 0; i < n; i++)
        if (c->grant[i] == 0)
            return 0;
    for (size_t i = 0; i < n; i++) {
        led[i].spent += c->grant[i];
        unsynced[i].spent += c->grant[i];
    }
    return 1;
}

/* Inside the write transaction: every window must grant at least the cost. */
static int lease_cb(void *arg, void *recs, size_t nrecs, state_event_t *events, size_t *nevents)
{
    lease_ctx_t *c = arg;
    state_ledger_rec_t *led = recs;
    const pool_credits_conf_t *conf = &c->ep->conf->credits;
    if (c->hosts > 0)
        return share_cb(c, led, nrecs / 3);
    for (size_t i = 0; i < nrecs; i++) {
        policy_credit_window_t w = c->win[i];
        uint64_t budget = policy_credit_budget(conf, w), need = units(c->cost, w);
        policy_credit_window_bounds(w, c->now, conf->month_reset_day, &c->start[i], &c->end[i]);
        uint64_t start = c->start[i], end = c->end[i];
        if (led[i].window_start_ms != start)
            led[i] = (state_ledger_rec_t){start, 0, 0, 0};
        uint64_t left = budget > led[i].spent ? budget - led[i].spent : 0;
        if (left < need) {
            if (c->retry_ms == 0 || end - c->now < c->retry_ms)
                c->retry_ms = end - c->now;
            if (!led[i].exhausted_reported && *nevents < STATE_MAX_TXN_EVENTS) {
                budget_event(c, &events[(*nevents)++], STATE_EVENT_BUDGET_EXHAUSTED, w, left, budget);
                led[i].exhausted_reported = 1;
            }
            continue;
        }
        uint64_t size = budget / 100 < 100000 ? budget / 100 : 100000;
        c->grant[i] = size < need ? need : size > left ? left : size;
    }
    for (size_t i = 0; i < nrecs; i++)
        if (c->grant[i] == 0)
            return *nevents > 0; /* lacking: write only the exhausted flag, spend nothing */
    for (size_t i = 0; i < nrecs; i++) {
        policy_credit_window_t w = c->win[i];
        uint64_t budget = policy_credit_budget(conf, w);
        led[i].spent += c->grant[i];
        uint64_t left = budget - led[i].spent;
        if (!led[i].low_reported && left * 100 <= budget * POOL_CREDIT_LOW_PCT && *nevents < STATE_MAX_TXN_EVENTS) {
            budget_event(c, &events[(*nevents)++], STATE_EVENT_BUDGET_LOW, w, left, budget);
            led[i].low_reported = 1;
        }
    }
    return 1;
}

/* 1 if this worker's lease of window w still covers cost. */
static int local_covers(const pool_endpoint_t *ep, policy_credit_window_t w, policy_cost_t cost, uint64_t now)
{
    const pool_credit_t *cr = &ep->credit;
    return now >= cr->window_start[w] && now < cr->window_end[w] && cr->remaining[w] >= units(cost, w);
}

/* Leases, from the ledger, every window whose local lease falls short (the
 * others keep theirs: they were counted as spent when leased); 1 granted, 0
 * lacking (*retry_ms set), -1 failure. */
static int lease(pool_endpoint_t *ep, policy_cost_t cost, uint64_t now, uint64_t *retry_ms, uint32_t hosts)
{
    pool_credit_t *cr = &ep->credit;
    lease_ctx_t c = {.ep = ep, .cost = cost, .now = now, .hosts = hosts};
    const char *keys[3 * POLICY_CREDIT_WINDOW_COUNT];
    char extra[2 * POLICY_CREDIT_WINDOW_COUNT][STATE_KEY_MAX + 4];
    for (policy_credit_window_t w = 0; w < POLICY_CREDIT_WINDOW_COUNT; w++) {
        if (policy_credit_budget(&ep->conf->credits, w) == 0 || local_covers(ep, w, cost, now))
            continue;
        c.win[c.n] = w;
        keys[c.n++] = cr->key[w];
    }
    size_t nkeys = c.n;
    for (size_t i = 0; hosts > 0 && i < c.n; i++) {
        state_cluster_ledger_mirror_key(extra[i], sizeof(extra[i]), keys[i]);
        state_cluster_ledger_unsynced_key(extra[c.n + i], sizeof(extra[0]), keys[i]);
        keys[c.n + i] = extra[i];
        keys[2 * c.n + i] = extra[c.n + i];
        nkeys = 3 * c.n;
    }
    if (state_budget_update(ep->net->pool->state, STATE_BUDGET_LEDGERS, keys, nkeys, lease_cb, &c) != SL_OK)
        return -1;
    for (size_t i = 0; i < c.n; i++)
        if (c.grant[i] == 0) {
            *retry_ms = c.retry_ms ? c.retry_ms : 1000;
            return 0;
        }
    for (size_t i = 0; i < c.n; i++) {
        policy_credit_window_t w = c.win[i];
        cr->remaining[w] = (cr->window_start[w] == c.start[i] ? cr->remaining[w] : 0) + c.grant[i];
        cr->window_start[w] = c.start[i];
        cr->window_end[w] = c.end[i];
    }
    return 1;
}

int pool_credit_take(pool_endpoint_t *ep, policy_cost_t cost, uint64_t *retry_ms)
{
    pool_credit_t *cr = &ep->credit;
    if (!cr->active || ep->net->pool->state == NULL)
        return 1;
    /* with cluster: the windows are bounded by Redis' clock */
    uint64_t now = state_cluster_now_ms(state_cluster_of(ep->net->pool->state));
    if (now < cr->lacking_until_ms) {
        *retry_ms = cr->lacking_until_ms - now;
        return 0;
    }
    int local = 1;
    for (policy_credit_window_t w = 0; w < POLICY_CREDIT_WINDOW_COUNT && local; w++)
        local = policy_credit_budget(&ep->conf->credits, w) == 0 || local_covers(ep, w, cost, now);
    state_cluster_t *cl = state_cluster_of(ep->net->pool->state);
    if (!local && cl != NULL && pool_credit_cluster_ask(ep, cost, now) == 0)
        return POOL_CREDIT_WAIT; /* Redis decides; the call waits for it */
    if (!local) {
        /* Redis away: this host spends its share of what was left */
        int got = lease(ep, cost, now, retry_ms, cl != NULL ? state_cluster_hosts(cl) : 0);
        if (got < 0)
            return 1; /* the ledger failed: do not starve the network (logged by state/) */
        if (got == 0) {
            cr->lacking_until_ms = now + *retry_ms;
            return 0;
        }
    }
    for (policy_credit_window_t w = 0; w < POLICY_CREDIT_WINDOW_COUNT; w++)
        if (policy_credit_budget(&ep->conf->credits, w) != 0)
            cr->remaining[w] -= units(cost, w);
    if (cl != NULL)
        pool_credit_cluster_prefetch(ep, cost, now);
    return 1;
}

void pool_credit_init(pool_endpoint_t *ep)
{
    pool_credit_t *cr = &ep->credit;
    memset(cr, 0, sizeof(*cr));
    h2o_linklist_init_anchor(&cr->waiters);
    cr->profile = policy_cost_profile(ep->conf->cost_profile ? ep->conf->cost_profile : "flat");
    if (cr->profile == NULL)
        cr->profile = policy_cost_profile("flat");
    for (policy_credit_window_t w = 0; w < POLICY_CREDIT_WINDOW_COUNT; w++) {
        state_key_ledger(cr->key[w], sizeof(cr->key[w]), ep->net->conf->name, ep->conf->id, policy_credit_window_name(w));
        cr->active |= ep->conf->has_credits && policy_credit_budget(&ep->conf->credits, w) != 0;
    }
}
