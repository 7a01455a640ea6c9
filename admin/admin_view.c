/* admin/admin_view.c: every endpoint, merged across workers, from state/. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "admin/admin_int.h"
#include "base/sl_buf.h"
#include "base/sl_time.h"
#include "state/state_key.h"
#include "state/state_sum.h"
#include "policy/breaker.h"
#include "policy/method.h"

_Static_assert(STATE_BREAKER_STATES == POLICY_BREAKER_STATE_COUNT, "state/ must know every breaker state");

/* a worker whose counters are older than this no longer has requests in flight */
#define INFLIGHT_FRESH_MS 2000

void admin_iso_time(uint64_t ms, char out[32])
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, 32 - n, ".%03uZ", (unsigned)(ms % 1000));
}

/* The 90th percentile from the histogram, interpolated inside its bucket. */
static double p90_ms(const state_stats_rec_t *s)
{
    uint64_t total = 0;
    for (size_t k = 0; k < STATE_LAT_BUCKETS; k++)
        total += s->lat_hist[k];
    if (total == 0)
        return 0;
    uint64_t want = (total * 9 + 9) / 10, seen = 0;
    for (size_t k = 0; k < STATE_LAT_BUCKETS; k++) {
        if (seen + s->lat_hist[k] < want) {
            seen += s->lat_hist[k];
            continue;
        }
        double lo = k == 0 ? 0 : (double)state_lat_bounds_us[k - 1];
        double hi = k + 1 == STATE_LAT_BUCKETS ? lo * 2 : (double)state_lat_bounds_us[k];
        double frac = (double)(want - seen) / (double)s->lat_hist[k];
        return (lo + (hi - lo) * frac) / 1000.0;
    }
    return 0;
}

/* 1 if a budget window of the endpoint is spent (the workers skip it). */
static int credits_out(const admin_ep_view_t *v, uint64_t now)
{
    for (policy_credit_window_t w = 0; v->ep->has_credits && w < POLICY_CREDIT_WINDOW_COUNT; w++) {
        uint64_t budget = policy_credit_budget(&v->ep->credits, w), start, end;
        policy_credit_window_bounds(w, now, v->ep->credits.month_reset_day, &start, &end);
        if (budget != 0 && v->ledger[w].window_start_ms >= start && v->ledger[w].spent >= budget)
            return 1;
    }
    return 0;
}

static void view_one(admin_t *a, admin_ep_view_t *v, uint64_t now)
{
    char key[STATE_KEY_MAX];
    state_key_endpoint(key, sizeof(key), v->net->name, v->ep->id);
    if (state_endpoint_get(a->conf.state, key, &v->rec) != SL_OK)
        memset(&v->rec, 0, sizeof(v->rec));
    state_stats_sum_t sum;
    state_stats_sum(a->conf.state, v->net->name, v->ep->id, a->conf.nworkers, now, INFLIGHT_FRESH_MS, &sum);
    v->stats = sum.total;
    v->concurrency_reached = sum.total.max_inflight_seen;
    v->inflight = (uint32_t)sum.inflight;
    v->ranked = sum.freshest;
    v->has_ranked = sum.has_freshest;
    v->ewma_ms = sum.ewma_us / 1000.0;
    policy_method_table(v->net->chain, &v->nmethods);
    uint32_t want = state_mc_len(v->nmethods);
    state_counters_rec_t *rec = sl_xmalloc(sizeof(*rec));
    state_counters_sum(a->conf.state, STATE_COUNTERS_PER_METHOD, v->net->name, v->ep->id, a->conf.nworkers, want, rec);
    v->per_method = sl_xcalloc(want, sizeof(uint64_t));
    memcpy(v->per_method, rec->v, rec->n * sizeof(uint64_t));
    free(rec);
    for (policy_credit_window_t w = 0; w < POLICY_CREDIT_WINDOW_COUNT; w++) {
        state_key_ledger(key, sizeof(key), v->net->name, v->ep->id, policy_credit_window_name(w));
        if (state_budget_get(a->conf.state, STATE_BUDGET_LEDGERS, key, &v->ledger[w]) != SL_OK)
            memset(&v->ledger[w], 0, sizeof(v->ledger[w]));
    }
    v->p90_ms = p90_ms(&v->stats);
    state_chain_rec_t chain; /* a learned identity, when none is configured */
    if (state_chain_get(a->conf.state, v->net->name, &chain) != SL_OK)
        chain.identity[0] = '\0';
    if (v->net->has_chain_id)
        snprintf(v->wrong_chain, sizeof(v->wrong_chain), "wrong chain (want 0x%" PRIx64 ")", v->net->chain_id);
    else
        snprintf(v->wrong_chain, sizeof(v->wrong_chain), "wrong chain (want %s)",
                 v->net->genesis_hash != NULL ? v->net->genesis_hash
                 : chain.identity[0] != '\0' ? chain.identity : "the network's");
    if (v->rec.breaker != POLICY_BREAKER_CLOSED)
        v->excluded = v->rec.breaker == POLICY_BREAKER_OPEN ? "breaker open" : "breaker half-open (probing)";
    else if (v->rec.drained)
        v->excluded = "drained";
    else if (v->rec.rate_limited_until_ms > now)
        v->excluded = "rate limited";
    else if (credits_out(v, now))
        v->excluded = "out of credits";
    else if (v->has_ranked && v->ranked.excluded == STATE_EXCLUDED_DNS_FAILED)
        v->excluded = ADMIN_DNS_FAILED; /* what the freshest worker saw */
    else if (v->has_ranked && v->ranked.excluded == STATE_EXCLUDED_DNS_TIMEOUT)
        v->excluded = ADMIN_DNS_TIMEOUT;
    else if (v->has_ranked && v->ranked.excluded == STATE_EXCLUDED_WRONG_CHAIN)
        v->excluded = v->wrong_chain; /* "wrong chain (want 0x1)": what the freshest worker saw */
    v->usable = v->excluded == NULL;
    v->demoted = v->rec.demoted_until_ms > now;
}

/* An endpoint whose head the workers do not trust (pool_chain.c): excluded,
 * saying by how much it leads the others' heads (the shared records'). */
static void head_ahead(admin_ep_view_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!v[i].has_ranked || v[i].ranked.excluded != STATE_EXCLUDED_HEAD_AHEAD || v[i].excluded != NULL)
            continue;
        uint64_t next = 0;
        for (size_t j = 0; j < n; j++)
            if (j != i && v[j].rec.head > next && v[j].rec.head <= v[i].rec.head)
                next = v[j].rec.head;
        snprintf(v[i].ahead, sizeof(v[i].ahead), "head ahead of every other endpoint by %" PRIu64,
                 v[i].rec.head - next);
        v[i].excluded = v[i].ahead;
        v[i].usable = 0;
        v[i].position = 0;
    }
}

/* 1 if v has a place in its network's plan. */
static int placed(const admin_ep_view_t *v)
{
    return v->usable && !(v->has_ranked && v->ranked.rank == 0); /* rank 0: out of the workers' plan */
}

/* Each usable endpoint's place among the network's usable ones: in the
 * order of the rank the workers published (those without one after, in
 * config order). Counted here, so the places are 1..n with no hole: a rank
 * published before another endpoint was drained still says 2 for the one
 * endpoint left until the workers publish again. */
static void positions(admin_ep_view_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        v[i].position = 0;
        if (!placed(&v[i]))
            continue;
        uint64_t key_i = v[i].has_ranked ? v[i].ranked.rank : UINT32_MAX + (uint64_t)i;
        int before = 0;
        for (size_t j = 0; j < n; j++) {
            uint64_t key_j = v[j].has_ranked ? v[j].ranked.rank : UINT32_MAX + (uint64_t)j;
            before += j != i && placed(&v[j]) && (key_j < key_i || (key_j == key_i && j < i));
        }
        v[i].position = before + 1;
    }
}

admin_ep_view_t *admin_view_collect(admin_t *a, size_t *n)
{
    size_t total = 0;
    for (size_t i = 0; i < a->conf.nnetworks; i++)
        total += a->conf.networks[i].nendpoints;
    admin_ep_view_t *v = sl_xcalloc(total ? total : 1, sizeof(*v));
    uint64_t now = sl_shared_ms();
    int snapshot = state_read_begin(a->conf.state) == SL_OK;
    size_t k = 0;
    state_pressure_slot_rec_t *sum = sl_xmalloc(sizeof(*sum));
    for (size_t i = 0; i < a->conf.nnetworks; i++) {
        if (snapshot)
            state_pressure_slots_sum(a->conf.state, a->conf.networks[i].name, a->conf.nworkers, 0, now,
                                     INFLIGHT_FRESH_MS, sum);
        for (size_t e = 0; e < a->conf.networks[i].nendpoints; e++, k++) {
            v[k].net = &a->conf.networks[i];
            v[k].ep = &a->conf.networks[i].endpoints[e];
            v[k].index = e;
            if (snapshot && e < STATE_PRESSURE_MAX_EP)
                for (int r = 0; r < STATE_RATE_COUNT; r++)
                    v[k].rate_milli[r] = state_slot_rate_milli(sum, e, (state_rate_t)r);
            if (snapshot)
                view_one(a, &v[k], now);
            else
                v[k].excluded = "shared state unreadable (see the log)"; /* /readyz says 503 */
        }
        head_ahead(&v[k - a->conf.networks[i].nendpoints], a->conf.networks[i].nendpoints);
        positions(&v[k - a->conf.networks[i].nendpoints], a->conf.networks[i].nendpoints);
    }
    free(sum);
    if (snapshot)
        state_read_end(a->conf.state);
    *n = total;
    return v;
}

void admin_view_free(admin_ep_view_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i].per_method);
    free(v);
}

int admin_view_ready(const admin_ep_view_t *v, size_t n, const admin_conf_t *conf, char *why, size_t why_len)
{
    for (size_t i = 0; i < conf->nnetworks; i++) {
        int usable = 0;
        for (size_t k = 0; k < n; k++)
            usable += v[k].net == &conf->networks[i] && v[k].usable;
        if (!usable) {
            snprintf(why, why_len, "network %s has no usable endpoint", conf->networks[i].name);
            return 0;
        }
    }
    return 1;
}
