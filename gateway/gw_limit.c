#include "gateway/gw_limit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sl_buf.h"
#include "base/sl_hash.h"
#include "base/sl_log.h"
#include "base/sl_time.h"
#include "policy/lease.h"
#include "state/state_cluster.h"
#include "state/state_key.h"

#define NWINDOWS 4                /* the last (30 days) only for a key's credits: */
#define TABLE_SIZE 4096           /* local lease entries per worker (a power of 2) */
#define LEASE_TTL_US 1000000      /* leased calls not spent within a second are dropped */
#define LEASE_MAX 1024            /* calls per lease, at most (1/20 of the smallest limit below that) */
#define RETRY_SHARED_US 1000000   /* degraded: the shared cells are tried again this often */

static const struct {
    const char *name;
    uint64_t window_us;
} windows[NWINDOWS] = {{"1", 1000000ull}, {"60", 60000000ull}, {"86400", 86400000000ull},
                       {"2592000", 2592000000000ull}};

typedef struct lease {
    char identity[80];
    uint8_t bucket;
    uint8_t used;
    uint32_t tokens;              /* leased, not yet spent */
    uint64_t lease_until_us;
    uint64_t blocked_until_us;    /* refused until then without asking state/ */
    uint64_t tat_us[NWINDOWS];    /* the cells as the last lease left them */
    uint64_t local_tat_us[NWINDOWS]; /* degraded: this worker's own cells, for its share */
    uint8_t pending;              /* cluster: a lease from Redis is under way */
    uint64_t quiet_until_us;      /* cluster: Redis refused more; no early lease until then */
} lease_t;

struct gw_limit {
    const cfg_t *cfg;
    state_t *st;
    lease_t *table;
    uint32_t nworkers;            /* a degraded worker enforces 1/nworkers of each limit */
    uint64_t failures;
    policy_lease_ladder_t ladder; /* the lease ladder, in µs: when a degraded worker tries the shared cells */
    state_cluster_t *cluster;     /* cluster: the cells are Redis'; NULL without */
    uint32_t divisor;             /* cluster, Redis away: this host enforces limit / hosts */
    state_lease_waiters_t waiters; /* gw_limit_wait_t waiting for a lease from Redis */
};

gw_limit_t *gw_limit_create(const cfg_t *cfg, state_t *st)
{
    gw_limit_t *l = sl_xcalloc(1, sizeof(*l));
    l->cfg = cfg;
    l->st = st;
    l->table = sl_xcalloc(TABLE_SIZE, sizeof(*l->table));
    l->nworkers = cfg->server.workers ? cfg->server.workers : 1;
    l->cluster = state_cluster_of(st);
    l->divisor = 1;
    policy_lease_init(&l->ladder, RETRY_SHARED_US);
    state_lease_waiters_init(&l->waiters);
    return l;
}

void gw_limit_destroy(gw_limit_t *l)
{
    if (l == NULL)
        return;
    free(l->table);
    free(l);
}

uint64_t gw_limit_failures(const gw_limit_t *l)
{
    return l->failures;
}

/* The tier's limit per window for this bucket (0 = none). The cells count in
 * whole µs, so a window holds at most one call per µs of it: the limit is
 * capped there, and the headers say what is enforced. */
static uint32_t window_limit(const gw_limit_t *l, const cfg_tier_conf_t *tier, policy_bucket_t bucket, int w)
{
    const cfg_limit_conf_t *m = &tier->limits;
    uint32_t base = w == 0 ? m->per_second : w == 1 ? m->per_minute : w == 2 ? m->per_day : m->per_month;
    uint64_t v = (uint64_t)base * (bucket == POLICY_BUCKET_READ ? l->cfg->server.read_multiplier : 1);
    if (v != 0 && l->divisor > 1)
        v = v / l->divisor > 0 ? v / l->divisor : 1; /* this host's share while Redis is away */
    if (v > windows[w].window_us)
        v = windows[w].window_us;
    return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static lease_t *find(gw_limit_t *l, const char *identity, policy_bucket_t bucket)
{
    uint64_t h = sl_fnv1a_str(SL_FNV1A_OFFSET ^ (uint64_t)bucket, identity);
    lease_t *e = &l->table[h & (TABLE_SIZE - 1)];
    if (!e->used || e->bucket != bucket || strcmp(e->identity, identity) != 0) {
        /* a different caller in this slot: its local lease is simply dropped */
        memset(e, 0, sizeof(*e));
        snprintf(e->identity, sizeof(e->identity), "%s", identity);
        e->bucket = (uint8_t)bucket;
        e->used = 1;
    }
    return e;
}

/* Fills the headers from the window closest to exhaustion. */
static void describe(gw_limit_t *l, const cfg_tier_conf_t *tier, policy_bucket_t bucket, const lease_t *e,
                     uint64_t now, gw_limit_result_t *out)
{
    double best = 2;
    for (int w = 0; w < NWINDOWS; w++) {
        policy_gcra_t g = {windows[w].window_us, window_limit(l, tier, bucket, w)};
        if (g.limit == 0)
            continue;
        policy_gcra_result_t r;
        policy_gcra_check(&g, e->tat_us[w], now, 0, &r);
        uint32_t remaining = r.remaining > UINT32_MAX - e->tokens ? UINT32_MAX : r.remaining + e->tokens;
        double ratio = (double)remaining / g.limit;
        if (ratio >= best)
            continue;
        best = ratio;
        out->limit = g.limit;
        out->remaining = remaining;
        uint64_t reset = e->tat_us[w] > now ? e->tat_us[w] - now : 0;
        out->reset_s = (uint32_t)((reset + 999999) / 1000000);
        out->window_s = (uint32_t)(windows[w].window_us / 1000000);
    }
}

typedef struct lease_ctx {
    gw_limit_t *l;
    const cfg_tier_conf_t *tier;
    policy_bucket_t bucket;
    uint64_t now;
    uint32_t n, want, granted;
    uint64_t retry_us;
    uint64_t tat[NWINDOWS];
} lease_ctx_t;

/* Inside the write transaction: grants min(available) >= n, or nothing. */
static int lease_cb(void *arg, void *recs, size_t nrecs, state_event_t *events, size_t *nevents)
{
    lease_ctx_t *c = arg;
    state_cell_rec_t *cells = recs;
    (void)events;
    (void)nevents;
    uint32_t grant = c->want;
    size_t k = 0;
    for (int w = 0; w < NWINDOWS && k < nrecs; w++) {
        policy_gcra_t g = {windows[w].window_us, window_limit(c->l, c->tier, c->bucket, w)};
        if (g.limit == 0)
            continue;
        uint32_t avail = policy_gcra_available(&g, cells[k].tat_us, c->now, c->want);
        if (avail < c->n) {
            policy_gcra_result_t r;
            policy_gcra_check(&g, cells[k].tat_us, c->now, c->n, &r);
            /* a batch larger than the limit never fits: say "a window" */
            uint64_t wait = r.retry_after_us > g.window_us ? g.window_us : r.retry_after_us;
            if (wait > c->retry_us)
                c->retry_us = wait;
        }
        if (avail < grant)
            grant = avail;
        k++;
    }
    if (grant < c->n)
        return 0;
    k = 0;
    for (int w = 0; w < NWINDOWS && k < nrecs; w++) {
        policy_gcra_t g = {windows[w].window_us, window_limit(c->l, c->tier, c->bucket, w)};
        if (g.limit == 0)
            continue;
        policy_gcra_result_t r;
        policy_gcra_check(&g, cells[k].tat_us, c->now, grant, &r);
        cells[k].tat_us = r.new_tat_us;
        cells[k].interval_us = policy_gcra_interval(&g); /* for eviction by calls owed */
        c->tat[w] = r.new_tat_us;
        k++;
    }
    c->granted = grant;
    return 1;
}

static uint32_t lease_size(gw_limit_t *l, const cfg_tier_conf_t *tier, policy_bucket_t bucket, uint32_t n)
{
    if (tier->exact)
        return n;
    uint32_t smallest = UINT32_MAX;
    for (int w = 0; w < NWINDOWS; w++) {
        uint32_t lim = window_limit(l, tier, bucket, w);
        if (lim != 0 && lim < smallest)
            smallest = lim;
    }
    uint32_t size = smallest / 20;
    size = size < 1 ? 1 : size > LEASE_MAX ? LEASE_MAX : size;
    return size > n ? size : n;
}

/* Leases from the shared cells: YES granted, NO refused, FALL the storage
 * failed (*err says how). */
static policy_lease_result_t lease(gw_limit_t *l, const cfg_tier_conf_t *tier, lease_t *e, uint32_t n, uint64_t now,
                                   sl_err_t *err)
{
    char keys[NWINDOWS][160];
    const char *kp[NWINDOWS];
    size_t nk = 0;
    lease_ctx_t c = {l, tier, (policy_bucket_t)e->bucket, now, n, lease_size(l, tier, e->bucket, n), 0, 0, {0}};
    for (int w = 0; w < NWINDOWS; w++) {
        if (window_limit(l, tier, e->bucket, w) == 0)
            continue;
        state_key_cell(keys[nk], sizeof(keys[nk]), e->identity, policy_bucket_name(e->bucket), windows[w].name);
        kp[nk] = keys[nk];
        nk++;
    }
    *err = l->st == NULL ? SL_ERR_STATE : state_cells_update(l->st, kp, nk, now, lease_cb, &c);
    if (*err != SL_OK)
        return POLICY_LEASE_FALL;
    if (c.granted == 0) {
        e->blocked_until_us = now + (c.retry_us ? c.retry_us : 1000);
        return POLICY_LEASE_NO;
    }
    memcpy(e->tat_us, c.tat, sizeof(e->tat_us));
    e->tokens = c.granted - n;
    e->lease_until_us = now + LEASE_TTL_US;
    return POLICY_LEASE_YES;
}

/* Degraded: this worker's own GCRA cells, each holding its share of the
 * limit (rounded up), so the workers together admit about the limit
 * (at most workers - 1 more per window), never an unlimited number. */
static policy_lease_result_t local_charge(gw_limit_t *l, const cfg_tier_conf_t *tier, lease_t *e, uint32_t n,
                                          uint64_t now)
{
    uint64_t wait = 0;
    int ok = 1;
    policy_gcra_t g[NWINDOWS];
    for (int w = 0; w < NWINDOWS; w++) {
        uint32_t lim = window_limit(l, tier, e->bucket, w);
        g[w] = (policy_gcra_t){windows[w].window_us, lim == 0 ? 0 : (lim + l->nworkers - 1) / l->nworkers};
        policy_gcra_result_t r;
        policy_gcra_check(&g[w], e->local_tat_us[w], now, n, &r);
        if (!r.allowed) {
            ok = 0;
            uint64_t rw = r.retry_after_us > g[w].window_us ? g[w].window_us : r.retry_after_us;
            wait = rw > wait ? rw : wait;
        }
    }
    if (!ok) {
        e->blocked_until_us = now + (wait ? wait : 1000);
        return POLICY_LEASE_NO;
    }
    for (int w = 0; w < NWINDOWS; w++) {
        policy_gcra_result_t r;
        policy_gcra_check(&g[w], e->local_tat_us[w], now, n, &r);
        e->local_tat_us[w] = r.new_tat_us;
    }
    return POLICY_LEASE_YES;
}

/* Headers of a degraded decision: the worker's share and its own cells. */
static void describe_local(gw_limit_t *l, const cfg_tier_conf_t *tier, const lease_t *e, uint64_t now,
                           gw_limit_result_t *out)
{
    double best = 2;
    for (int w = 0; w < NWINDOWS; w++) {
        uint32_t lim = window_limit(l, tier, e->bucket, w);
        if (lim == 0)
            continue;
        policy_gcra_t g = {windows[w].window_us, (lim + l->nworkers - 1) / l->nworkers};
        policy_gcra_result_t r;
        policy_gcra_check(&g, e->local_tat_us[w], now, 0, &r);
        double ratio = (double)r.remaining / g.limit;
        if (ratio >= best)
            continue;
        best = ratio;
        out->limit = g.limit;
        out->remaining = r.remaining;
        out->reset_s = (uint32_t)((r.reset_us + 999999) / 1000000);
        out->window_s = (uint32_t)(windows[w].window_us / 1000000);
    }
}

/* ---- cluster: the cells in Redis ---- */

typedef struct cl_ask {
    gw_limit_t *l;
    size_t slot;                  /* the entry it was asked for ... */
    char identity[80];            /* ... if it is still that caller's */
    uint8_t bucket;
    uint8_t cells;                /* bit w: window w has a cell (in that order in the answer) */
} cl_ask_t;

/* A waiter of the caller the answer was for (a cl_ask_t). */
static int waits_for(const state_lease_wait_t *sw, const void *arg)
{
    const gw_limit_wait_t *w = H2O_STRUCT_FROM_MEMBER(gw_limit_wait_t, wait, sw);
    const cl_ask_t *a = arg;
    return w->bucket == a->bucket && strcmp(w->identity, a->identity) == 0;
}

static void on_cluster_lease(void *data, const state_cluster_lease_t *r)
{
    cl_ask_t *a = data;
    gw_limit_t *l = a->l;
    lease_t *e = &l->table[a->slot];
    uint64_t now = sl_shared_us();
    int ours = e->used && e->bucket == a->bucket && strcmp(e->identity, a->identity) == 0;
    if (ours) {
        e->pending = 0;
        if (r->ok && r->granted > 0) {
            /* Redis' clock: the cells' TATs in this host's, for the headers */
            int64_t skew = (int64_t)r->redis_now_us - (int64_t)now;
            size_t k = 0;
            for (int w = 0; w < NWINDOWS; w++)
                if ((a->cells >> w) & 1)
                    e->tat_us[w] = (uint64_t)((int64_t)r->tat_us[k++] - skew);
            e->tokens = (now < e->lease_until_us ? e->tokens : 0) + r->granted;
            e->lease_until_us = now + LEASE_TTL_US;
        } else if (r->ok) {
            uint64_t wait = r->retry_us ? r->retry_us : 1000;
            if (e->tokens == 0 || now >= e->lease_until_us)
                e->blocked_until_us = now + wait;
            else
                e->quiet_until_us = now + wait;
        }
    }
    /* a failure leaves the link down: the waiters decide locally */
    state_lease_wake(&l->waiters, waits_for, a);
    free(a);
}

/* Asks Redis for a lease of e's caller (at least n calls): WAIT if asked,
 * FALL if it cannot be (the link is down). */
static policy_lease_result_t cluster_ask(gw_limit_t *l, const cfg_tier_conf_t *tier, lease_t *e, uint32_t n)
{
    char keys[NWINDOWS][STATE_KEY_MAX];
    state_cluster_cell_t cells[NWINDOWS];
    size_t nc = 0;
    uint8_t mask = 0;
    for (int w = 0; w < NWINDOWS; w++) {
        policy_gcra_t g = {windows[w].window_us, window_limit(l, tier, e->bucket, w)};
        if (g.limit == 0)
            continue;
        mask |= (uint8_t)(1u << w);
        state_key_cell(keys[nc], sizeof(keys[nc]), e->identity, policy_bucket_name(e->bucket), windows[w].name);
        cells[nc].key = keys[nc];
        cells[nc].window_us = g.window_us;
        policy_gcra_shape(&g, &cells[nc].interval_us, &cells[nc].capacity_us);
        nc++;
    }
    cl_ask_t *a = sl_xcalloc(1, sizeof(*a));
    *a = (cl_ask_t){.l = l, .slot = (size_t)(e - l->table), .bucket = e->bucket, .cells = mask};
    snprintf(a->identity, sizeof(a->identity), "%s", e->identity);
    if (state_cluster_limit_lease(l->cluster, cells, nc, n, lease_size(l, tier, e->bucket, n), on_cluster_lease, a) != 0) {
        free(a);
        return POLICY_LEASE_FALL;
    }
    e->pending = 1;
    return POLICY_LEASE_WAIT;
}

/* The rungs of the ladder (policy/lease.h) for one charge. */
typedef struct charge {
    gw_limit_t *l;
    const cfg_tier_conf_t *tier;
    lease_t *e;
    uint32_t n;
    uint64_t now;
} charge_t;

/* Refused until blocked_until_us, or the lease covers n (with cluster:, the
 * next lease is asked for before this one runs out); FALL when neither. */
static policy_lease_result_t on_held(void *arg)
{
    charge_t *c = arg;
    lease_t *e = c->e;
    if (c->now < e->blocked_until_us)
        return POLICY_LEASE_NO;
    if (e->tokens < c->n || c->now >= e->lease_until_us)
        return POLICY_LEASE_FALL;
    e->tokens -= c->n;
    if (c->l->cluster != NULL && e->tokens < LEASE_MAX / 2 && !e->pending && c->now >= e->quiet_until_us &&
        e->tokens < lease_size(c->l, c->tier, e->bucket, 1) / 2 && state_cluster_up(c->l->cluster))
        (void)cluster_ask(c->l, c->tier, e, 1);
    return POLICY_LEASE_YES;
}

/* WAIT for Redis' lease (one under way is waited for, not asked again);
 * FALL when Redis is away: this host's share, on its own cells. */
static policy_lease_result_t on_cluster(void *arg)
{
    charge_t *c = arg;
    if (state_cluster_up(c->l->cluster) &&
        (c->e->pending || cluster_ask(c->l, c->tier, c->e, c->n) == POLICY_LEASE_WAIT))
        return POLICY_LEASE_WAIT;
    c->l->divisor = state_cluster_hosts(c->l->cluster);
    return POLICY_LEASE_FALL;
}

static policy_lease_result_t on_host(void *arg)
{
    charge_t *c = arg;
    sl_err_t err = SL_OK;
    policy_lease_result_t said = lease(c->l, c->tier, c->e, c->n, c->now, &err);
    if (c->l->st != NULL)
        state_degraded_note(c->l->st, STATE_PART_LIMITS, err, c->now / 1000);
    c->l->failures += said == POLICY_LEASE_FALL;
    return said;
}

/* Fail safe: this worker's share of the limit, on its own cells. */
static policy_lease_result_t on_share(void *arg)
{
    charge_t *c = arg;
    return local_charge(c->l, c->tier, c->e, c->n, c->now);
}

static const policy_lease_ops_t rungs = {.held = on_held, .cluster = on_cluster, .host = on_host, .share = on_share};

static void woken(state_lease_wait_t *sw)
{
    gw_limit_wait_t *w = H2O_STRUCT_FROM_MEMBER(gw_limit_wait_t, wait, sw);
    w->cb(w);
}

void gw_limit_wait(gw_limit_t *l, const char *identity, policy_bucket_t bucket, gw_limit_wait_t *w,
                   void (*cb)(gw_limit_wait_t *w))
{
    snprintf(w->identity, sizeof(w->identity), "%s", identity);
    w->bucket = (uint8_t)bucket;
    w->cb = cb;
    state_lease_wait(&l->waiters, &w->wait, woken);
}

void gw_limit_wait_cancel(gw_limit_wait_t *w)
{
    state_lease_wait_cancel(&w->wait);
}

void gw_limit_charge(gw_limit_t *l, const cfg_tier_conf_t *tier, const char *identity, policy_bucket_t bucket,
                     uint32_t n, gw_limit_result_t *out)
{
    memset(out, 0, sizeof(*out));
    out->said = POLICY_LEASE_YES;
    out->bucket = bucket;
    if (tier == NULL ||
        (tier->limits.per_second | tier->limits.per_minute | tier->limits.per_day | tier->limits.per_month) == 0)
        return;
    out->limited = 1;
    /* shared time: a backward step of the wall clock must not make every
     * cell look a step's length in debt (base/sl_time.h) */
    uint64_t now = sl_shared_us();
    lease_t *e = find(l, identity, bucket);
    policy_lease_mode_t mode = {.cluster = l->cluster != NULL,
                                .degraded = l->st != NULL && state_degraded(l->st, STATE_PART_LIMITS)};
    charge_t c = {l, tier, e, n, now};
    policy_lease_rung_t by;
    policy_lease_result_t said = policy_lease_climb(&l->ladder, mode, now, &rungs, &c, &by);
    out->said = said;
    if (said == POLICY_LEASE_WAIT)
        return;
    /* decided on this worker's own cells: its share, or (without cluster:)
     * a refusal it holds while degraded */
    int local = by == POLICY_LEASE_RUNG_SHARE ||
                (by == POLICY_LEASE_RUNG_HELD && said == POLICY_LEASE_NO && mode.degraded && !mode.cluster);
    if (local) {
        if (l->st != NULL)
            state_degraded_count(l->st, STATE_PART_LIMITS, n);
        describe_local(l, tier, e, now, out);
    } else {
        describe(l, tier, bucket, e, now, out);
    }
    l->divisor = 1;
    if (said == POLICY_LEASE_NO) {
        uint64_t wait = e->blocked_until_us > now ? e->blocked_until_us - now : 1000;
        out->remaining = 0;
        out->retry_after_ms = (wait + 999) / 1000;
        out->retry_after_s = (uint32_t)((wait + 999999) / 1000000);
        out->reset_s = out->retry_after_s;
    }
}
