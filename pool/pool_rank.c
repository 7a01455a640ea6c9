/* pool/pool_rank.c: the order in which a network's endpoints are tried.
 *
 * Recomputed on every tick (~50 ms) from what the probes put in shared state
 * (latency, head) and this worker's windows (errors, rate limits), scored by
 * policy/score.c. Usable endpoints come first by tier (primary before
 * fallback) and cost; demoted ones (a cheap read timed out or was reset
 * there lately, pool_demote.c) after every other; excluded ones (far behind,
 * failing) follow only when nothing else is usable. The primary stays first
 * until a challenger of the same tier has been clearly better for
 * ranking.switch_after_ms, unless it is demoted: then it gives way at once. */
#include <stdlib.h>
#include <string.h>

#include "base/sl_time.h"
#include "pool/pool_net.h"

typedef struct ranked {
    int index;
    int fallback;
    int excluded;
    int demoted;                  /* timed out or reset lately (pool_demote.c): behind the others */
    double cost;
} ranked_t;

static int ranked_cmp(const void *a, const void *b)
{
    const ranked_t *x = a, *y = b;
    if (x->excluded != y->excluded)
        return x->excluded - y->excluded;
    if (x->demoted != y->demoted)
        return x->demoted - y->demoted;
    if (x->fallback != y->fallback)
        return x->fallback - y->fallback;
    if (x->cost != y->cost)
        return x->cost < y->cost ? -1 : 1;
    return x->index - y->index; /* config order breaks ties */
}

static int double_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The best head any endpoint reported recently. */
static uint64_t best_head(pool_network_t *net, uint64_t now, uint64_t fresh_ms)
{
    uint64_t best = 0;
    for (size_t i = 0; i < net->nendpoints; i++) {
        const state_endpoint_rec_t *r = &net->endpoints[i].health.shared;
        if (net->endpoints[i].wrong_chain || (net->head_implausible >> i & 1))
            continue; /* another chain's head, or one nobody confirms, measures nothing here */
        if (r->head_at_ms != 0 && now - r->head_at_ms <= fresh_ms && r->head > best)
            best = r->head;
    }
    return best;
}

static double median_latency(pool_network_t *net)
{
    double v[POOL_MAX_ENDPOINTS];
    size_t n = 0;
    for (size_t i = 0; i < net->nendpoints; i++)
        if (net->endpoints[i].health.shared.probe_ewma_us != 0)
            v[n++] = net->endpoints[i].health.shared.probe_ewma_us / 1000.0;
    if (n == 0)
        return 0;
    qsort(v, n, sizeof(v[0]), double_cmp);
    return v[n / 2];
}

static void score_endpoint(pool_network_t *net, pool_endpoint_t *ep, uint64_t now, uint64_t fresh_ms, double median)
{
    const policy_score_conf_t *conf = &net->conf->ranking;
    const state_endpoint_rec_t *r = &ep->health.shared;
    policy_score_input_t in = {.latency_ms = r->probe_ewma_us ? r->probe_ewma_us / 1000.0 : -1, .lag = -1};
    uint64_t mono = sl_now_ms();
    uint32_t rl_calls;
    policy_window_totals(&ep->health.window, &net->conf->breaker, mono, &in.calls, &in.failures);
    policy_window_totals(&ep->health.rl_window, &net->conf->breaker, mono, &rl_calls, &in.rate_limited);
    if (in.rate_limited > in.calls)
        in.calls = in.rate_limited;
    in.disagreed = policy_consensus_disagreed(&ep->disagreed, &ep->disagreed_at_ms, mono, 0);
    if (r->head_at_ms != 0 && now - r->head_at_ms <= fresh_ms && net->best_head >= r->head)
        in.lag = (int64_t)(net->best_head - r->head);
    policy_score_compute(conf, &in, median, &ep->health.score);
    if (ep->index < 64 && (net->head_implausible >> ep->index & 1))
        ep->health.score.excluded = "head ahead of every other endpoint"; /* last in the plan */
}

/* Applies stickiness: moves the current primary back to the front unless the
 * leader has been clearly better for long enough. */
static void keep_primary(pool_network_t *net, ranked_t *rk, size_t n, uint64_t now)
{
    const policy_score_conf_t *conf = &net->conf->ranking;
    size_t at = n;
    for (size_t i = 0; i < n; i++)
        if (rk[i].index == net->primary)
            at = i;
    /* stickiness is for latency between healthy endpoints: a demoted
     * primary gives first place up at once */
    if (at == n || at == 0 || rk[at].excluded || rk[at].demoted || rk[at].fallback != rk[0].fallback) {
        net->challenger = -1;
        net->challenger_since_ms = 0;
        net->primary = n > 0 ? rk[0].index : -1;
        return;
    }
    if (net->challenger != rk[0].index) {
        net->challenger = rk[0].index;
        net->challenger_since_ms = 0;
    }
    if (!policy_rank_keep(conf, rk[at].cost, rk[0].cost, now, &net->challenger_since_ms)) {
        net->primary = rk[0].index;
        net->challenger = -1;
        net->challenger_since_ms = 0;
        return;
    }
    ranked_t keep = rk[at];
    memmove(&rk[1], &rk[0], at * sizeof(rk[0]));
    rk[0] = keep;
}

/* Puts the endpoint's place and score parts into this worker's counters, so
 * the admin API shows the ranking the workers actually use. */
static void publish(pool_endpoint_t *ep, uint32_t rank)
{
    state_stats_rec_t *s = &ep->health.stats;
    const policy_score_t *sc = &ep->health.score;
    uint8_t excluded = sc->excluded == NULL ? 0 : sc->lag >= 0 && sc->lag > (int64_t)ep->net->conf->ranking.max_lag ? 1 : 2;
    if (ep->index < 64 && (ep->net->head_implausible >> ep->index & 1))
        excluded = STATE_EXCLUDED_HEAD_AHEAD;
    if (pool_endpoint_dns_excluded(ep) != STATE_EXCLUDED_NO)
        excluded = pool_endpoint_dns_excluded(ep); /* the reason /admin/endpoints gives */
    uint64_t score = (uint64_t)(sc->cost * 1000);
    if (s->rank != rank || s->excluded != excluded || s->score_milli / 1000 != score / 1000)
        ep->health.dirty = 1;
    s->rank = rank;
    s->score_milli = score;
    s->latency_us = (uint64_t)(sc->latency_ms * 1000);
    s->error_ppm = (uint32_t)(sc->error_ratio * 1e6);
    s->rate_limit_ppm = (uint32_t)(sc->rate_limit_ratio * 1e6);
    s->lag_plus1 = sc->lag >= 0 ? (uint64_t)sc->lag + 1 : 0;
    s->excluded = excluded;
}

void pool_rank_update(pool_network_t *net, uint64_t now)
{
    uint64_t fresh_ms = (uint64_t)net->conf->ranking.probe_interval_ms * 3;
    net->best_head = best_head(net, now, fresh_ms);
    double median = median_latency(net);
    ranked_t rk[POOL_MAX_ENDPOINTS];
    size_t n = 0, excluded = 0;
    for (size_t i = 0; i < net->nendpoints; i++) {
        pool_endpoint_t *ep = &net->endpoints[i];
        score_endpoint(net, ep, now, fresh_ms, median);
        if (!pool_health_usable(ep, now))
            continue;
        int ex = ep->health.score.excluded != NULL;
        rk[n++] = (ranked_t){(int)i, ep->conf->tier == POOL_TIER_FALLBACK, ex, pool_demoted(ep, now),
                             ep->health.score.cost};
        excluded += ex;
    }
    qsort(rk, n, sizeof(rk[0]), ranked_cmp);
    keep_primary(net, rk, n - (excluded < n ? excluded : 0), now);
    net->norder = n;
    for (size_t i = 0; i < net->nendpoints; i++)
        publish(&net->endpoints[i], 0);
    for (size_t i = 0; i < n; i++) {
        net->order[i] = (uint8_t)rk[i].index;
        publish(&net->endpoints[rk[i].index], (uint32_t)i + 1);
    }
}

int pool_rank_parse_head(const char *body, size_t len, uint64_t *head)
{
    wire_envelope_t env;
    if (wire_envelope_scan(body, len, &env) != SL_OK || env.result.len == 0 || env.error.len != 0)
        return 0;
    return pool_rank_head_value(body, env.result, head);
}

int pool_rank_head_value(const char *body, wire_span_t result, uint64_t *head)
{
    wire_json_kind_t kind = wire_json_kind(body, result);
    if (kind == WIRE_JSON_NUMBER) {
        int64_t v;
        if (wire_json_int64(body, result, &v) != SL_OK || v < 0)
            return 0;
        *head = (uint64_t)v;
        return 1;
    }
    char hex[40];
    if (kind != WIRE_JSON_STRING || wire_json_string(body, result, hex, sizeof(hex)) != SL_OK ||
        strncmp(hex, "0x", 2) != 0 || hex[2] == '\0')
        return 0;
    char *end;
    unsigned long long v = strtoull(hex + 2, &end, 16);
    if (*end != '\0')
        return 0;
    *head = v;
    return 1;
}
