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
 * skipped by the plan, before any request is sent.
 *
 * Windows are computed in shared time (base/sl_time.h), which ignores a
 * backward step of the wall clock, and a ledger's window never moves back
 * either (a record ahead of this process's clock keeps its window): a step
 * back over the start of a month must not open the previous month's budget
 * again, nor the current one after it.
 *
 * If the ledger cannot be read or written, the worker does not spend
 * blindly: it spends 1/workers of what the ledger had left when it last saw
 * it (of the whole budget for a window it never saw), tries the ledger
 * again every second, and a state_degraded event says so (fail safe).
 *
 * With cluster: the ledgers are Redis' (pool_credit_cluster.c); while Redis
 * is away this host spends its share of what Redis last said was left. */
#include <string.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "pool/pool_net.h"
#include "state/state_cluster.h"
#include "state/state_key.h"

#define RETRY_SHARED_MS 1000      /* degraded: the ledger is tried again this often */

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
    uint64_t spent[POLICY_CREDIT_WINDOW_COUNT]; /* the ledger's spent in that window, before this lease */
    int read;                       /* the callback ran (start, end, spent are known) */
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
 * a window Redis has not counted yet), counted in the host's ledger and in
 * what it spent alone ("cu/", told to Redis when it returns). The records
 * are the host's ledgers, then the copies, then the unsynced counts, n of
 * each. No budget events: the share is this host's, the budget everyone's. */
static int share_cb(lease_ctx_t *c, state_ledger_rec_t *led, size_t n)
{
    const pool_credits_conf_t *conf = &c->ep->conf->credits;
    state_ledger_rec_t *copy = led + n, *unsynced = led + 2 * n;
    for (size_t i = 0; i < n; i++) {
        policy_credit_window_t w = c->win[i];
        uint64_t budget = policy_credit_budget(conf, w), need = units(c->cost, w);
        policy_credit_window_bounds(w, c->now, conf->month_reset_day, &c->start[i], &c->end[i]);
        if (led[i].window_start_ms > c->start[i]) /* windows never move back */
            policy_credit_window_bounds(w, led[i].window_start_ms, conf->month_reset_day, &c->start[i], &c->end[i]);
        uint64_t start = c->start[i];
        if (led[i].window_start_ms != start)
            led[i] = (state_ledger_rec_t){start, 0, 0, 0};
        if (unsynced[i].window_start_ms != start)
            unsynced[i] = (state_ledger_rec_t){start, 0, 0, 0};
        c->spent[i] = led[i].spent;
        c->read = 1;
        uint64_t seen = copy[i].window_start_ms == start ? copy[i].spent : 0;
        uint64_t mine = seen + (budget > seen ? (budget - seen) / c->hosts : 0);
        uint64_t left = mine > led[i].spent ? mine - led[i].spent : 0;
        if (left < need) {
            uint64_t until = c->end[i] > c->now ? c->end[i] - c->now : 1;
            if (c->retry_ms == 0 || until < c->retry_ms)
                c->retry_ms = until;
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
        /* a record ahead of this clock keeps its window: windows never move back */
        if (led[i].window_start_ms > c->start[i])
            policy_credit_window_bounds(w, led[i].window_start_ms, conf->month_reset_day, &c->start[i], &c->end[i]);
        uint64_t start = c->start[i], end = c->end[i];
        if (led[i].window_start_ms != start)
            led[i] = (state_ledger_rec_t){start, 0, 0, 0};
        c->spent[i] = led[i].spent;
        c->read = 1;
        uint64_t left = budget > led[i].spent ? budget - led[i].spent : 0;
        if (left < need) {
            uint64_t until = end > c->now ? end - c->now : 1;
            if (c->retry_ms == 0 || until < c->retry_ms)
                c->retry_ms = until;
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

/* 1 if this worker's lease of window w still covers cost. A now before the
 * lease's window is in it too: windows never move back. */
static int local_covers(const pool_endpoint_t *ep, policy_credit_window_t w, policy_cost_t cost, uint64_t now)
{
    const pool_credit_t *cr = &ep->credit;
    return now < cr->window_end[w] && cr->remaining[w] >= units(cost, w);
}

/* Leases, from the ledger, every window whose local lease falls short (the
 * others keep theirs: they were counted as spent when leased): YES granted,
 * NO lacking (*retry_ms set), FALL failure (*err says how). */
static policy_lease_result_t lease(pool_endpoint_t *ep, policy_cost_t cost, uint64_t now, uint64_t *retry_ms,
                                   sl_err_t *err, uint32_t hosts)
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
        /* cluster, Redis away: the copies of Redis' ledgers and the unsynced counts too */
        state_cluster_ledger_mirror_key(extra[i], sizeof(extra[i]), keys[i]);
        state_cluster_ledger_unsynced_key(extra[c.n + i], sizeof(extra[0]), keys[i]);
        keys[c.n + i] = extra[i];
        keys[2 * c.n + i] = extra[c.n + i];
        nkeys = 3 * c.n;
    }
    *err = state_budget_update(ep->net->pool->state, STATE_BUDGET_LEDGERS, keys, nkeys, lease_cb, &c);
    for (size_t i = 0; i < c.n && c.read; i++) {
        cr->seen_start[c.win[i]] = c.start[i];
        cr->seen_spent[c.win[i]] = c.spent[i] + (*err == SL_OK ? c.grant[i] : 0);
    }
    if (*err != SL_OK)
        return POLICY_LEASE_FALL;
    for (size_t i = 0; i < c.n; i++)
        if (c.grant[i] == 0) {
            *retry_ms = c.retry_ms ? c.retry_ms : 1000;
            return POLICY_LEASE_NO;
        }
    for (size_t i = 0; i < c.n; i++) {
        policy_credit_window_t w = c.win[i];
        cr->remaining[w] = (cr->window_start[w] == c.start[i] ? cr->remaining[w] : 0) + c.grant[i];
        cr->window_start[w] = c.start[i];
        cr->window_end[w] = c.end[i];
    }
    return POLICY_LEASE_YES;
}

/* Degraded: spends from this worker's share of what the ledger had left;
 * YES if it covers cost, else NO (*retry_ms: until that window turns over). */
static policy_lease_result_t local_take(pool_endpoint_t *ep, policy_cost_t cost, uint64_t now, uint64_t *retry_ms)
{
    pool_credit_t *cr = &ep->credit;
    const pool_credits_conf_t *conf = &ep->conf->credits;
    for (policy_credit_window_t w = 0; w < POLICY_CREDIT_WINDOW_COUNT; w++) {
        uint64_t budget = policy_credit_budget(conf, w), start, end;
        if (budget == 0)
            continue;
        policy_credit_window_bounds(w, now, conf->month_reset_day, &start, &end);
        if (cr->local_start[w] > start)
            policy_credit_window_bounds(w, cr->local_start[w], conf->month_reset_day, &start, &end);
        if (cr->local_start[w] != start) {
            uint64_t spent = cr->seen_start[w] == start ? cr->seen_spent[w] : 0;
            cr->local_left[w] = (budget > spent ? budget - spent : 0) / cr->nworkers;
            cr->local_start[w] = start;
        }
        if (cr->local_left[w] < units(cost, w)) {
            *retry_ms = end > now ? end - now : 1;
            return POLICY_LEASE_NO;
        }
    }
    for (policy_credit_window_t w = 0; w < POLICY_CREDIT_WINDOW_COUNT; w++)
        if (policy_credit_budget(conf, w) != 0)
            cr->local_left[w] -= units(cost, w);
    state_degraded_count(ep->net->pool->state, STATE_PART_CREDITS, 1);
    return POLICY_LEASE_YES;
}

/* The rungs of the ladder (policy/lease.h) for one take. */
typedef struct take {
    pool_endpoint_t *ep;
    policy_cost_t cost;
    uint64_t now;
    uint64_t *retry_ms;
    state_cluster_t *cl;
} take_t;

/* The ledger said no until lacking_until_ms, or every window's lease covers
 * cost; FALL when neither. */
static policy_lease_result_t on_held(void *arg)
{
    take_t *t = arg;
    pool_credit_t *cr = &t->ep->credit;
    if (t->now < cr->lacking_until_ms) {
        *t->retry_ms = cr->lacking_until_ms - t->now;
        return POLICY_LEASE_NO;
    }
    for (policy_credit_window_t w = 0; w < POLICY_CREDIT_WINDOW_COUNT; w++)
        if (policy_credit_budget(&t->ep->conf->credits, w) != 0 && !local_covers(t->ep, w, t->cost, t->now))
            return POLICY_LEASE_FALL;
    return POLICY_LEASE_YES;
}

/* Redis decides; the call waits for it. */
static policy_lease_result_t on_cluster(void *arg)
{
    take_t *t = arg;
    return pool_credit_cluster_ask(t->ep, t->cost, t->now);
}

/* With cluster, Redis away: this host spends its share of what was left. */
static policy_lease_result_t on_host(void *arg)
{
    take_t *t = arg;
    sl_err_t err = SL_OK;
    policy_lease_result_t said =
        lease(t->ep, t->cost, t->now, t->retry_ms, &err, t->cl != NULL ? state_cluster_hosts(t->cl) : 0);
    state_degraded_note(t->ep->net->pool->state, STATE_PART_CREDITS, err, t->now);
    if (said == POLICY_LEASE_NO)
        t->ep->credit.lacking_until_ms = t->now + *t->retry_ms;
    return said;
}

/* Fail safe, never unlimited. */
static policy_lease_result_t on_share(void *arg)
{
    take_t *t = arg;
    return local_take(t->ep, t->cost, t->now, t->retry_ms);
}

static const policy_lease_ops_t rungs = {.held = on_held, .cluster = on_cluster, .host = on_host, .share = on_share};

policy_lease_result_t pool_credit_take(pool_endpoint_t *ep, policy_cost_t cost, uint64_t *retry_ms)
{
    pool_credit_t *cr = &ep->credit;
    state_t *st = ep->net->pool->state;
    if (!cr->active || st == NULL)
        return POLICY_LEASE_YES;
    /* with cluster: the windows are bounded by Redis' clock */
    state_cluster_t *cl = state_cluster_of(st);
    take_t t = {ep, cost, cl != NULL ? state_cluster_now_ms(cl) : sl_shared_ms(), retry_ms, cl};
    policy_lease_mode_t mode = {.cluster = cl != NULL, .degraded = state_degraded(st, STATE_PART_CREDITS)};
    policy_lease_rung_t by;
    policy_lease_result_t said = policy_lease_climb(&cr->ladder, mode, t.now, &rungs, &t, &by);
    if (said != POLICY_LEASE_YES || by == POLICY_LEASE_RUNG_SHARE)
        return said; /* the degraded share was spent by local_take */
    for (policy_credit_window_t w = 0; w < POLICY_CREDIT_WINDOW_COUNT; w++)
        if (policy_credit_budget(&ep->conf->credits, w) != 0)
            cr->remaining[w] -= units(cost, w);
    if (cl != NULL)
        pool_credit_cluster_prefetch(ep, cost, t.now);
    return said;
}

void pool_credit_init(pool_endpoint_t *ep, uint32_t nworkers)
{
    pool_credit_t *cr = &ep->credit;
    memset(cr, 0, sizeof(*cr));
    policy_lease_init(&cr->ladder, RETRY_SHARED_MS);
    state_lease_waiters_init(&cr->waiters);
    cr->nworkers = nworkers ? nworkers : 1;
    cr->profile = policy_cost_profile(ep->conf->cost_profile ? ep->conf->cost_profile : "flat");
    if (cr->profile == NULL)
        cr->profile = policy_cost_profile("flat");
    for (policy_credit_window_t w = 0; w < POLICY_CREDIT_WINDOW_COUNT; w++) {
        state_key_ledger(cr->key[w], sizeof(cr->key[w]), ep->net->conf->name, ep->conf->id, policy_credit_window_name(w));
        cr->active |= ep->conf->has_credits && policy_credit_budget(&ep->conf->credits, w) != 0;
    }
}
