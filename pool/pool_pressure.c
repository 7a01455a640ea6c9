/* pool/pool_pressure.c: the inputs of a network's pressure level, and the level.
 *
 * Per request nothing is computed: a call admitted adds one to this worker's
 * depth (a call riding on another's upstream call leaves it: the depth is
 * upstream slots held), a call settled takes it off and counts its settle
 * time and one try (a refusal when the client got the upstreams' rate limit:
 * a 429 another endpoint answered for is no pressure).
 * Every flush (~100 ms) the worker writes those into its slot
 * "pr/<network>/<slot>"; every snapshot (~50 ms) it reads the other workers'
 * slots, adds its own live counts, and policy/pressure.c says which level the
 * network should be at. A change is a compare-and-set on "pressure/<network>"
 * with its pressure_changed event in the same transaction: one event however
 * many workers see the change at once. The gateway reads the level the last
 * snapshot left in net->pressure.local.level (no work per request). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "pool/pool_net.h"

_Static_assert(STATE_SETTLE_BUCKETS == POLICY_SETTLE_BUCKETS, "settle histogram sizes");
_Static_assert(STATE_PRESSURE_MAX_EP == POOL_MAX_ENDPOINTS, "per-endpoint rate arrays");

/* a slot not written for this long is a dead (or idle) worker's: no depth */
#define POOL_PRESSURE_FRESH_MS 2000
/* a slot that still holds something is written again at least this often */
#define POOL_PRESSURE_REFLUSH_MS 1000

void pool_pressure_init(pool_network_t *net)
{
    pool_pressure_t *pr = &net->pressure;
    memset(pr, 0, sizeof(*pr));
    state_key_pressure_slot(pr->slot_key, sizeof(pr->slot_key), net->conf->name, net->pool->slot);
    pr->others = sl_xcalloc(1, sizeof(*pr->others));
    pr->written = sl_xcalloc(1, sizeof(*pr->written));
}

void pool_pressure_load(pool_network_t *net)
{
    pool_pressure_t *pr = &net->pressure;
    /* a respawned worker takes its slot over: the growing counters go on */
    if (state_pressure_slot_get(net->pool->state, pr->slot_key, pr->written) != SL_OK) {
        memset(pr->written, 0, sizeof(*pr->written));
        return;
    }
    pr->polls_merged = pr->written->polls_merged;
    pr->calls_saved = pr->written->calls_saved;
    pr->waits = pr->written->waits;
    pr->logs[0] = pr->written->logs_splits;
    pr->logs[1] = pr->written->logs_subcalls;
    pr->logs[2] = pr->written->logs_refused;
}

void pool_pressure_dispose(pool_network_t *net)
{
    free(net->pressure.others);
    free(net->pressure.written);
    net->pressure.others = net->pressure.written = NULL;
}

policy_pressure_level_t pool_network_pressure(const pool_network_t *net)
{
    return net->pressure.local.level;
}

void pool_pressure_spent(pool_endpoint_t *ep, uint32_t ncalls, policy_cost_t cost)
{
    if (!ep->credit.active)
        return; /* the forecast and the credit-bound ceiling are about budgets */
    uint64_t now = sl_now_ms();
    policy_roll_add(&ep->rate_roll, &ep->rate_v[0][0], POOL_RATE_COUNT, POOL_RATE_WINDOW_MS, now, POOL_RATE_CALLS, ncalls);
    policy_roll_add(&ep->rate_roll, &ep->rate_v[0][0], POOL_RATE_COUNT, POOL_RATE_WINDOW_MS, now, POOL_RATE_BILLED,
                    cost.billed);
    policy_roll_add(&ep->rate_roll, &ep->rate_v[0][0], POOL_RATE_COUNT, POOL_RATE_WINDOW_MS, now,
                    POOL_RATE_THROUGHPUT, cost.throughput);
}

/* ---- this worker's slot ---- */

static void own_rates(pool_endpoint_t *ep, uint64_t now, uint64_t out[POOL_RATE_COUNT])
{
    uint64_t sum[POOL_RATE_COUNT];
    policy_roll_sum(&ep->rate_roll, &ep->rate_v[0][0], POOL_RATE_COUNT, POOL_RATE_WINDOW_MS, now, sum);
    uint64_t span = policy_roll_span_ms(&ep->rate_roll, POOL_RATE_WINDOW_MS, now);
    for (int k = 0; k < POOL_RATE_COUNT; k++)
        out[k] = policy_roll_rate_milli(sum[k], span);
}

/* This worker's slot as it is now (monotonic now for the windows). */
static void own_slot(pool_network_t *net, uint64_t mono, state_pressure_slot_rec_t *r)
{
    pool_pressure_t *pr = &net->pressure;
    uint32_t window = net->conf->pressure.window_ms;
    uint64_t tries[2];
    memset(r, 0, sizeof(*r));
    r->pid = (uint32_t)getpid();
    r->depth = pr->depth;
    policy_roll_sum(&pr->settle_roll, &pr->settle_v[0][0], POLICY_SETTLE_BUCKETS, window, mono, r->settle_hist);
    policy_roll_sum(&pr->try_roll, &pr->try_v[0][0], 2, window, mono, tries);
    r->tries = tries[0];
    r->refusals = tries[1];
    r->polls_merged = pr->polls_merged;
    r->calls_saved = pr->calls_saved;
    r->waits = pr->waits;
    r->logs_splits = pr->logs[0];
    r->logs_subcalls = pr->logs[1];
    r->logs_refused = pr->logs[2];
    for (size_t i = 0; i < net->nendpoints && i < STATE_PRESSURE_MAX_EP; i++) {
        uint64_t rate[POOL_RATE_COUNT];
        own_rates(&net->endpoints[i], mono, rate);
        r->ep_calls_milli[i] = rate[POOL_RATE_CALLS];
        r->ep_billed_milli[i] = rate[POOL_RATE_BILLED];
        r->ep_throughput_milli[i] = rate[POOL_RATE_THROUGHPUT];
    }
}

/* 1 if the slot holds counts that will age (so it must be rewritten). */
static int slot_live(const state_pressure_slot_rec_t *r)
{
    if (r->depth || r->tries)
        return 1;
    for (size_t k = 0; k < STATE_SETTLE_BUCKETS; k++)
        if (r->settle_hist[k])
            return 1;
    for (size_t k = 0; k < STATE_PRESSURE_MAX_EP; k++)
        if (r->ep_calls_milli[k])
            return 1;
    return 0;
}

void pool_pressure_flush(pool_t *pool, uint64_t now)
{
    size_t nn = pool->nnetworks, n = 0;
    const char **keys = sl_xmalloc(nn * sizeof(*keys));
    state_pressure_slot_rec_t **recs = sl_xmalloc(nn * sizeof(*recs));
    pool_network_t **nets = sl_xmalloc(nn * sizeof(*nets));
    uint64_t mono = sl_now_ms();
    for (size_t k = 0; k < nn; k++) {
        pool_network_t *net = &pool->networks[k];
        pool_pressure_t *pr = &net->pressure;
        /* without pressure, the slot is written only for the eth_getLogs counters (pool/pool_logs.h) */
        if (!net->conf->pressure.enabled && (pr->logs[0] | pr->logs[1] | pr->logs[2]) == 0)
            continue;
        state_pressure_slot_rec_t *r = sl_xmalloc(sizeof(*r));
        own_slot(net, mono, r);
        r->updated_ms = pr->written->updated_ms; /* compare without the time */
        int changed = memcmp(r, pr->written, sizeof(*r)) != 0;
        int due = slot_live(r) && now >= pr->flushed_ms + POOL_PRESSURE_REFLUSH_MS;
        if (!changed && !due) {
            free(r);
            continue;
        }
        r->updated_ms = now;
        keys[n] = pr->slot_key;
        recs[n] = r;
        nets[n++] = net;
    }
    if (n > 0 && state_pressure_slots_put(pool->state, keys, (const state_pressure_slot_rec_t *const *)recs, n) == SL_OK) {
        for (size_t i = 0; i < n; i++) {
            memcpy(nets[i]->pressure.written, recs[i], sizeof(*recs[i]));
            nets[i]->pressure.flushed_ms = now;
        }
    } else if (n > 0) {
        sl_log_warn("state: could not flush this worker's pressure counts (kept in memory, retried)");
    }
    for (size_t i = 0; i < n; i++)
        free(recs[i]);
    free(keys);
    free(recs);
    free(nets);
}

/* ---- the level ---- */

void pool_pressure_read(pool_network_t *net, uint64_t now)
{
    pool_pressure_t *pr = &net->pressure;
    pool_t *pool = net->pool;
    if (!net->conf->pressure.enabled)
        return;
    if (state_pressure_get(pool->state, net->conf->name, &pr->shared) != SL_OK)
        memset(&pr->shared, 0, sizeof(pr->shared));
    state_pressure_slots_sum(pool->state, net->conf->name, pool->nworkers, pool->slot, now, POOL_PRESSURE_FRESH_MS,
                             pr->others);
    /* another worker moved the level: take it, and start the calm afresh */
    if (pr->shared.level != pr->local.level || pr->shared.since_ms != pr->local.since_ms) {
        pr->local.level = pr->shared.level < POLICY_PRESSURE_LEVEL_COUNT ? (policy_pressure_level_t)pr->shared.level
                                                                          : POLICY_PRESSURE_OK;
        pr->local.since_ms = pr->shared.since_ms;
        pr->local.calm_since_ms = 0;
        pr->local.high_since_ms = 0;
    }
}

static void compute_inputs(pool_network_t *net, uint64_t now, policy_pressure_inputs_t *in)
{
    pool_pressure_t *pr = &net->pressure;
    state_pressure_slot_rec_t *own = sl_xmalloc(sizeof(*own));
    uint64_t mono = sl_now_ms();
    own_slot(net, mono, own);
    memset(in, 0, sizeof(*in));
    in->depth = pr->others->depth + own->depth;
    uint64_t hist[POLICY_SETTLE_BUCKETS], settles;
    for (size_t k = 0; k < POLICY_SETTLE_BUCKETS; k++)
        hist[k] = pr->others->settle_hist[k] + own->settle_hist[k];
    in->settle_p90_us = policy_settle_p90_us(hist, &settles);
    in->settles = settles > UINT32_MAX ? UINT32_MAX : (uint32_t)settles;
    in->baseline_us = pr->shared.baseline_us;
    in->tries = pr->others->tries + own->tries;
    in->refusals = pr->others->refusals + own->refusals;
    uint64_t ceiling = 0;
    for (size_t i = 0; i < net->nendpoints; i++) {
        pool_endpoint_t *ep = &net->endpoints[i];
        if (!pool_health_usable(ep, now) || now < ep->credit.lacking_until_ms)
            continue;
        uint64_t calls = pr->others->ep_calls_milli[i] + own->ep_calls_milli[i];
        uint64_t thr = pr->others->ep_throughput_milli[i] + own->ep_throughput_milli[i];
        uint64_t cost_milli = calls ? thr * 1000 / calls : 0;
        uint32_t max = ep->conf->max_inflight ? ep->conf->max_inflight : POOL_DEFAULT_MAX_INFLIGHT;
        uint64_t rate = ep->conf->has_credits ? policy_credit_rate_milli(&ep->conf->credits) : 0;
        ceiling += policy_pressure_endpoint_slots(max, rate, cost_milli, ep->health.stats.ewma_us);
    }
    in->ceiling = ceiling > UINT32_MAX ? UINT32_MAX : (uint32_t)ceiling;
    free(own);
}

typedef struct level_ctx {
    pool_network_t *net;
    policy_pressure_level_t from, to;
    const policy_pressure_inputs_t *in;
    unsigned why;
    uint64_t now;
    state_pressure_rec_t result;
} level_ctx_t;

static void describe(char *out, size_t cap, const policy_pressure_inputs_t *in, unsigned why)
{
    double refusal = in->tries ? (double)in->refusals / (double)in->tries : 0;
    snprintf(out, cap, "utilisation %.2f (depth %u of %u); p90 settle %u ms, baseline %u ms; refusal ratio %.2f%s%s%s",
             policy_pressure_utilisation(in->depth, in->ceiling), in->depth, in->ceiling, in->settle_p90_us / 1000,
             in->baseline_us / 1000, refusal, why & POLICY_PRESSURE_WHY_UTILISATION ? " [utilisation]" : "",
             why & POLICY_PRESSURE_WHY_SLOW ? " [slow]" : "", why & POLICY_PRESSURE_WHY_REFUSALS ? " [refusals]" : "");
}

static int level_cb(void *arg, state_pressure_rec_t *rec, int exists, state_event_t *events, size_t *nevents)
{
    level_ctx_t *c = arg;
    (void)exists;
    if (rec->level != c->from)
        return 0; /* another worker moved it first */
    policy_pressure_t p = {(policy_pressure_level_t)rec->level, rec->since_ms, 0};
    uint64_t lasted = c->now > rec->since_ms && rec->since_ms != 0 ? c->now - rec->since_ms : 0;
    if (policy_pressure_transition(&p, c->to, c->now) != SL_OK)
        return 0;
    rec->level = (uint8_t)p.level;
    rec->since_ms = p.since_ms;
    rec->changes++;
    rec->depth = c->in->depth;
    rec->ceiling = c->in->ceiling;
    rec->settle_p90_us = c->in->settle_p90_us;
    rec->refusal_ppm = c->in->tries ? (uint32_t)(c->in->refusals * 1000000 / c->in->tries) : 0;
    state_event_t *ev = &events[0];
    state_event_init(ev, STATE_EVENT_PRESSURE_CHANGED, c->net->conf->name, NULL, c->now);
    ev->from = (uint8_t)c->from;
    ev->to = (uint8_t)c->to;
    ev->duration_ms = lasted; /* how long the level before lasted (0: since start) */
    ev->count = c->in->depth;
    describe(ev->reason, sizeof(ev->reason), c->in, c->why);
    *nevents = 1;
    c->result = *rec;
    return 1;
}

typedef struct baseline_ctx {
    uint64_t now;
    uint32_t baseline_us;
    state_pressure_rec_t result;
} baseline_ctx_t;

static int baseline_cb(void *arg, state_pressure_rec_t *rec, int exists, state_event_t *events, size_t *nevents)
{
    baseline_ctx_t *c = arg;
    (void)exists;
    (void)events;
    (void)nevents;
    if (rec->baseline_at_ms != 0 && c->now < rec->baseline_at_ms + POLICY_BASELINE_STEP_MS)
        return 0; /* another worker moved it this step */
    rec->baseline_us = c->baseline_us;
    rec->baseline_at_ms = c->now;
    c->result = *rec;
    return 1;
}

static void baseline_step(pool_network_t *net, const policy_pressure_inputs_t *in, uint64_t now)
{
    pool_pressure_t *pr = &net->pressure;
    if (pr->shared.baseline_at_ms != 0 && now < pr->shared.baseline_at_ms + POLICY_BASELINE_STEP_MS)
        return;
    uint32_t b = policy_pressure_baseline(&net->conf->pressure, pr->shared.baseline_us, in);
    if (b == pr->shared.baseline_us)
        return;
    baseline_ctx_t c = {now, b, {0}};
    int changed = 0;
    if (state_pressure_update(net->pool->state, net->conf->name, baseline_cb, &c, &changed) == SL_OK && changed)
        pr->shared = c.result;
}

void pool_pressure_tick(pool_network_t *net, uint64_t now)
{
    pool_pressure_t *pr = &net->pressure;
    const policy_pressure_conf_t *conf = &net->conf->pressure;
    if (!conf->enabled || net->pool->state == NULL)
        return;
    compute_inputs(net, now, &pr->inputs);
    baseline_step(net, &pr->inputs, now);
    unsigned why = 0;
    policy_pressure_level_t target = policy_pressure_target(conf, &pr->inputs, pr->local.level, &why);
    policy_pressure_level_t next = policy_pressure_next(conf, &pr->local, target, now);
    if (next == pr->local.level)
        return;
    level_ctx_t c = {net, pr->local.level, next, &pr->inputs, why, now, {0}};
    int changed = 0;
    if (state_pressure_update(net->pool->state, net->conf->name, level_cb, &c, &changed) != SL_OK) {
        sl_log_warn("network %s: cannot record its pressure level in shared state", net->conf->name);
        return;
    }
    if (!changed)
        return; /* the next snapshot brings the level another worker wrote */
    pr->shared = c.result;
    pr->local.level = next;
    pr->local.since_ms = c.result.since_ms;
    pr->local.calm_since_ms = 0;
    pr->local.high_since_ms = 0;
    char why_text[160];
    describe(why_text, sizeof(why_text), &pr->inputs, why);
    sl_log_info("network %s: pressure %s -> %s (%s)", net->conf->name, policy_pressure_level_name(c.from),
                policy_pressure_level_name(next), why_text);
}
