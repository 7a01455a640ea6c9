/* admin/admin_networks.c: GET /admin/networks, and the pressure series of /metrics.
 *
 * Per network: the pressure level every worker serves (the shared record,
 * which only the workers' compare-and-set changes), the inputs it is computed
 * from as they are now (every worker's slot summed, the ceiling from the
 * endpoints' shared records, with the same policy functions the workers
 * use), the shed order, merged-poll counters and, per endpoint and budget
 * window, the capacity forecast. A JSON array, one object per network in
 * config order; its shape is documented in docs/guide/backpressure.md,
 * with the cache's figures (admin_cache.c) and the subscriptions' (admin_subs.c). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/admin_int.h"
#include "base/sl_time.h"
#include "policy/pressure.h"

#define SLOT_FRESH_MS 2000

/* The tightest per-second budget of ep x 1000 (throughput units), 0 = none. */
/* Fills nv[0..nnetworks) from one snapshot; v are the endpoint views. */
static void collect(admin_t *a, admin_net_view_t *nv, const admin_ep_view_t *v, size_t n, uint64_t now)
{
    int snapshot = state_read_begin(a->conf.state) == SL_OK;
    for (size_t i = 0; i < a->conf.nnetworks; i++) {
        admin_net_view_t *x = &nv[i];
        x->net = &a->conf.networks[i];
        if (!snapshot || state_pressure_get(a->conf.state, x->net->name, &x->rec) != SL_OK)
            memset(&x->rec, 0, sizeof(x->rec));
        if (!snapshot || state_chain_get(a->conf.state, x->net->name, &x->chain) != SL_OK)
            memset(&x->chain, 0, sizeof(x->chain));
        if (snapshot)
            state_pressure_slots_sum(a->conf.state, x->net->name, a->conf.nworkers, 0, now, SLOT_FRESH_MS, &x->sum);
        uint64_t settles;
        x->in.depth = x->sum.depth;
        x->in.settle_p90_us = policy_settle_p90_us(x->sum.settle_hist, &settles);
        x->in.settles = settles > UINT32_MAX ? UINT32_MAX : (uint32_t)settles;
        x->in.baseline_us = x->rec.baseline_us;
        x->in.tries = x->sum.tries;
        x->in.refusals = x->sum.refusals;
        uint64_t ceiling = 0;
        for (size_t k = 0; k < n; k++) {
            if (v[k].net != x->net || v[k].index >= POOL_MAX_ENDPOINTS || !v[k].usable)
                continue;
            const uint64_t *r = v[k].rate_milli;
            uint64_t cost = r[STATE_RATE_CALLS] ? r[STATE_RATE_THROUGHPUT] * 1000 / r[STATE_RATE_CALLS] : 0;
            uint32_t max = v[k].ep->max_inflight ? v[k].ep->max_inflight : POOL_DEFAULT_MAX_INFLIGHT;
            uint64_t rate = v[k].ep->has_credits ? policy_credit_rate_milli(&v[k].ep->credits) : 0;
            x->slots[v[k].index] = policy_pressure_endpoint_slots(max, rate, cost, (uint64_t)(v[k].ewma_ms * 1000));
            ceiling += x->slots[v[k].index];
        }
        x->in.ceiling = ceiling > UINT32_MAX ? UINT32_MAX : (uint32_t)ceiling;
    }
    if (snapshot)
        state_read_end(a->conf.state);
}

static policy_pressure_level_t level_of(const admin_net_view_t *x)
{
    return x->rec.level < POLICY_PRESSURE_LEVEL_COUNT ? (policy_pressure_level_t)x->rec.level : POLICY_PRESSURE_OK;
}

static double ratio(uint64_t part, uint64_t whole)
{
    return whole ? (double)part / (double)whole : 0;
}

static cJSON *endpoints_json(const admin_net_view_t *x, const admin_ep_view_t *v, size_t n, uint64_t now)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t k = 0; k < n; k++) {
        if (v[k].net != x->net)
            continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", v[k].ep->id);
        cJSON_AddBoolToObject(o, "usable", v[k].usable);
        cJSON_AddNumberToObject(o, "max_inflight", v[k].ep->max_inflight ? v[k].ep->max_inflight : POOL_DEFAULT_MAX_INFLIGHT);
        cJSON_AddNumberToObject(o, "slots", v[k].index < POOL_MAX_ENDPOINTS ? x->slots[v[k].index] : 0);
        cJSON_AddNumberToObject(o, "inflight", v[k].inflight);
        cJSON_AddNumberToObject(o, "latency_ms", v[k].ewma_ms);
        cJSON *cr = cJSON_AddObjectToObject(o, "credits");
        for (policy_credit_window_t w = 0; w < POLICY_CREDIT_WINDOW_COUNT; w++) {
            cJSON *win = admin_credit_window_json(&v[k], w, now);
            if (win != NULL)
                cJSON_AddItemToObject(cr, policy_credit_window_name(w), win);
        }
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

/* The network's head (kind 0), safe (1) or finalized (2), as the workers
 * take it (policy/chainview.h): the head the highest of its usable
 * endpoints' whose head is not an unconfirmed lead; safe and finalized the
 * second-highest when two or more report one (what another endpoint
 * confirms), each at most its endpoint's own head. Shared records; with
 * none usable, the same over every endpoint; 0 unknown. */
static uint64_t net_height(const admin_net_view_t *x, const admin_ep_view_t *v, size_t n, int kind)
{
    for (int pass = 0; pass < 2; pass++) {
        uint64_t top = 0, next = 0;
        size_t known = 0;
        for (size_t k = 0; k < n; k++) {
            if (v[k].net != x->net || (pass == 0 && !v[k].usable) ||
                (kind == 0 && v[k].has_ranked && v[k].ranked.excluded == STATE_EXCLUDED_HEAD_AHEAD))
                continue;
            uint64_t h = kind == 0 ? v[k].rec.head : kind == 1 ? v[k].rec.safe : v[k].rec.finalized;
            /* the record's head is Ethereum's latest (Solana's: the finalized slot the probe reads) */
            if (kind != 0 && x->net->chain == POLICY_CHAIN_ETHEREUM && v[k].rec.head != 0 && h > v[k].rec.head)
                h = v[k].rec.head;
            if (h == 0)
                continue;
            known++;
            if (h > top) {
                next = top;
                top = h;
            } else if (h > next) {
                next = h;
            }
        }
        if (known != 0)
            return kind != 0 && known >= 2 ? next : top;
    }
    return 0;
}

/* head, safe, finalized (null: unknown); served_head: the floor
 * eth_blockNumber / getSlot answers keep to; reorgs reported. */
static void add_heads(cJSON *o, const admin_net_view_t *x, const admin_ep_view_t *v, size_t n)
{
    static const char *const names[3] = {"head", "safe", "finalized"};
    for (int kind = 0; kind < 3; kind++) {
        uint64_t h = net_height(x, v, n, kind);
        if (h != 0)
            cJSON_AddNumberToObject(o, names[kind], (double)h);
        else
            cJSON_AddNullToObject(o, names[kind]);
    }
    uint64_t served = x->chain.floor[0];
    if (served != 0)
        cJSON_AddNumberToObject(o, "served_head", (double)served);
    else
        cJSON_AddNullToObject(o, "served_head");
    cJSON_AddNumberToObject(o, "reorgs", (double)x->chain.reorgs);
}

/* The chain view in /metrics: the network's heads, reorgs, and how far each
 * endpoint's head is behind the network's (unknown heads are left out). */
static void chain_metrics(sl_buf_t *b, const admin_net_view_t *nv, size_t nnets, const admin_ep_view_t *v, size_t n)
{
    static const char *const heads[3][2] = {
        {"sluice_chain_head", "The network's head: the highest head of its usable endpoints, unconfirmed leads left out."},
        {"sluice_chain_safe", "The network's safe block (Solana: confirmed slot), as a second endpoint confirms it."},
        {"sluice_chain_finalized", "The network's finalized block (slot), as a second endpoint confirms it."},
    };
    for (int kind = 0; kind < 3; kind++) {
        sl_buf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n", heads[kind][0], heads[kind][1], heads[kind][0]);
        for (size_t i = 0; i < nnets; i++)
            sl_buf_printf(b, "%s{network=\"%s\"} %llu\n", heads[kind][0], nv[i].net->name,
                          (unsigned long long)net_height(&nv[i], v, n, kind));
    }
    sl_buf_printf(b, "# HELP sluice_chain_reorgs_total Reorgs seen on the network (one `reorg` event each).\n"
                     "# TYPE sluice_chain_reorgs_total counter\n");
    for (size_t i = 0; i < nnets; i++)
        sl_buf_printf(b, "sluice_chain_reorgs_total{network=\"%s\"} %llu\n", nv[i].net->name,
                      (unsigned long long)nv[i].chain.reorgs);
    sl_buf_printf(b, "# HELP sluice_chain_reorg_depth Depth of the network's last reorg.\n"
                     "# TYPE sluice_chain_reorg_depth gauge\n");
    for (size_t i = 0; i < nnets; i++)
        sl_buf_printf(b, "sluice_chain_reorg_depth{network=\"%s\"} %u\n", nv[i].net->name, nv[i].chain.reorg_depth);
    sl_buf_printf(b, "# HELP sluice_endpoint_lag_blocks The network's head minus the endpoint's (blocks or slots).\n"
                     "# TYPE sluice_endpoint_lag_blocks gauge\n");
    for (size_t i = 0; i < nnets; i++) {
        uint64_t top = net_height(&nv[i], v, n, 0);
        for (size_t k = 0; k < n; k++)
            if (v[k].net == nv[i].net && v[k].rec.head != 0)
                sl_buf_printf(b, "sluice_endpoint_lag_blocks{network=\"%s\",endpoint=\"%s\"} %llu\n",
                              nv[i].net->name, v[k].ep->id,
                              (unsigned long long)(top > v[k].rec.head ? top - v[k].rec.head : 0));
    }
}

/* chain_id: the identity endpoints are checked against (Ethereum's chain id,
 * Solana's genesis hash), configured or learned from the endpoints'
 * majority (kept in state); null while not learned yet. */
static void add_identity(cJSON *o, const admin_net_view_t *x)
{
    const pool_network_conf_t *c = x->net;
    char id[40];
    const char *source = "configured";
    if (c->chain == POLICY_CHAIN_ETHEREUM && c->has_chain_id)
        snprintf(id, sizeof(id), "0x%" PRIx64, c->chain_id);
    if (c->chain == POLICY_CHAIN_SOLANA && c->genesis_hash != NULL)
        cJSON_AddStringToObject(o, "chain_id", c->genesis_hash);
    else if (c->chain == POLICY_CHAIN_ETHEREUM && c->has_chain_id)
        cJSON_AddStringToObject(o, "chain_id", id);
    else if (x->chain.identity[0] != '\0')
        cJSON_AddStringToObject(o, "chain_id", x->chain.identity), source = "learned";
    else
        cJSON_AddNullToObject(o, "chain_id"), source = "not_learned_yet";
    cJSON_AddStringToObject(o, "chain_id_source", source);
}

static cJSON *network_json(const admin_net_view_t *x, const admin_ep_view_t *v, size_t n, uint64_t now)
{
    const policy_pressure_conf_t *c = &x->net->pressure;
    cJSON *o = cJSON_CreateObject();
    char iso[32];
    cJSON_AddStringToObject(o, "network", x->net->name);
    cJSON_AddStringToObject(o, "chain", policy_chain_name(x->net->chain));
    add_identity(o, x);
    add_heads(o, x, v, n);
    cJSON_AddBoolToObject(o, "enabled", c->enabled);
    cJSON_AddStringToObject(o, "level", policy_pressure_level_name(level_of(x)));
    if (x->rec.since_ms) {
        admin_iso_time(x->rec.since_ms, iso);
        cJSON_AddStringToObject(o, "since", iso);
        cJSON_AddNumberToObject(o, "level_for_ms", now > x->rec.since_ms ? (double)(now - x->rec.since_ms) : 0);
    } else {
        cJSON_AddNullToObject(o, "since");
        cJSON_AddNullToObject(o, "level_for_ms");
    }
    cJSON_AddNumberToObject(o, "changes", (double)x->rec.changes);
    cJSON_AddNumberToObject(o, "depth", x->in.depth);
    cJSON_AddNumberToObject(o, "ceiling", x->in.ceiling);
    cJSON_AddNumberToObject(o, "utilisation", policy_pressure_utilisation(x->in.depth, x->in.ceiling));
    cJSON_AddNumberToObject(o, "settle_p90_ms", x->in.settle_p90_us / 1000.0);
    cJSON_AddNumberToObject(o, "settle_baseline_ms", x->in.baseline_us / 1000.0);
    cJSON_AddNumberToObject(o, "settles", x->in.settles);
    cJSON_AddNumberToObject(o, "refusal_ratio", ratio(x->in.refusals, x->in.tries));
    cJSON_AddNumberToObject(o, "tries", (double)x->in.tries);
    cJSON_AddNumberToObject(o, "refusals", (double)x->in.refusals);
    cJSON *last = cJSON_AddObjectToObject(o, "at_last_change");
    cJSON_AddNumberToObject(last, "depth", x->rec.depth);
    cJSON_AddNumberToObject(last, "ceiling", x->rec.ceiling);
    cJSON_AddNumberToObject(last, "settle_p90_ms", x->rec.settle_p90_us / 1000.0);
    cJSON_AddNumberToObject(last, "refusal_ratio", x->rec.refusal_ppm / 1e6);
    cJSON *th = cJSON_AddObjectToObject(o, "thresholds");
    cJSON_AddNumberToObject(th, "elevated", c->elevated);
    cJSON_AddNumberToObject(th, "critical", c->critical);
    cJSON_AddNumberToObject(th, "hysteresis", c->hysteresis);
    cJSON_AddNumberToObject(th, "rise_ms", c->rise_ms);
    cJSON_AddNumberToObject(th, "hold_ms", c->hold_ms);
    cJSON_AddNumberToObject(th, "slow_factor", c->slow_factor);
    cJSON_AddNumberToObject(th, "slow_min_ms", c->slow_min_ms);
    cJSON_AddNumberToObject(th, "refusal_ratio", c->refusal_ratio);
    cJSON_AddNumberToObject(th, "window_ms", c->window_ms);
    cJSON_AddNumberToObject(th, "min_samples", c->min_samples);
    cJSON_AddNumberToObject(o, "identity_share", c->identity_share);
    cJSON *shed = cJSON_AddObjectToObject(o, "shed");
    for (int p = 0; p < POLICY_PRIO_COUNT; p++)
        cJSON_AddStringToObject(shed, policy_priority_name((policy_priority_t)p),
                                policy_pressure_level_name((policy_pressure_level_t)c->shed[p]));
    cJSON *merge = cJSON_AddObjectToObject(o, "merge");
    cJSON_AddNumberToObject(merge, "window_ms", c->merge_window_ms);
    cJSON_AddNumberToObject(merge, "polls_merged", (double)x->sum.polls_merged);
    cJSON_AddNumberToObject(merge, "calls_saved", (double)x->sum.calls_saved);
    cJSON_AddNumberToObject(o, "confirm_waits", (double)x->sum.waits);
    cJSON_AddItemToObject(o, "endpoints", endpoints_json(x, v, n, now));
    return o;
}

int admin_route_networks(admin_t *a, h2o_req_t *req)
{
    size_t n;
    admin_ep_view_t *v = admin_view_collect(a, &n);
    uint64_t now = sl_shared_ms();
    admin_net_view_t *nv = sl_xcalloc(a->conf.nnetworks ? a->conf.nnetworks : 1, sizeof(*nv));
    collect(a, nv, v, n, now);
    size_t nevs;
    state_event_t *evs = admin_subs_recent_events(a, &nevs);
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; i < a->conf.nnetworks; i++) {
        cJSON *o = network_json(&nv[i], v, n, now);
        cJSON_AddItemToObject(o, "cache", admin_cache_network_json(a, &a->conf.networks[i]));
        cJSON_AddItemToObject(o, "subscriptions", admin_subs_network_json(a, &a->conf.networks[i], evs, nevs));
        cJSON_AddItemToArray(arr, o);
    }
    free(evs);
    free(nv);
    admin_view_free(v, n);
    return admin_send_json(req, 200, arr);
}

typedef enum gauge_value { G_LEVEL, G_DEPTH, G_CEILING, G_UTIL, G_P90, G_BASELINE, G_REFUSAL, G_CHANGES, G_MERGED, G_SAVED, G_WAITS } gauge_value_t;

static double gauge(const admin_net_view_t *x, gauge_value_t g)
{
    switch (g) {
    case G_LEVEL: return (double)level_of(x);
    case G_DEPTH: return x->in.depth;
    case G_CEILING: return x->in.ceiling;
    case G_UTIL: return policy_pressure_utilisation(x->in.depth, x->in.ceiling);
    case G_P90: return x->in.settle_p90_us / 1e6;
    case G_BASELINE: return x->in.baseline_us / 1e6;
    case G_REFUSAL: return ratio(x->in.refusals, x->in.tries);
    case G_CHANGES: return (double)x->rec.changes;
    case G_MERGED: return (double)x->sum.polls_merged;
    case G_SAVED: return (double)x->sum.calls_saved;
    case G_WAITS: return (double)x->sum.waits;
    }
    return 0;
}

/* eth_getLogs splitting (pool/pool_split.c), per Ethereum network. */
static void logs_metrics(sl_buf_t *b, const admin_conf_t *conf, const admin_net_view_t *nv)
{
    static const struct {
        const char *name, *help;
    } series[] = {
        {"sluice_logs_splits_total", "eth_getLogs calls served by sub-calls over narrower ranges."},
        {"sluice_logs_split_subcalls_total", "Sub-calls those sent (halvings after a refusal included)."},
        {"sluice_logs_split_refused_total", "eth_getLogs calls refused with -32005: more sub-calls than max_logs_split."},
    };
    for (size_t s = 0; s < 3; s++) {
        sl_buf_printf(b, "# HELP %s %s\n# TYPE %s counter\n", series[s].name, series[s].help, series[s].name);
        for (size_t i = 0; i < conf->nnetworks; i++) {
            const state_pressure_slot_rec_t *x = &nv[i].sum;
            uint64_t v = s == 0 ? x->logs_splits : s == 1 ? x->logs_subcalls : x->logs_refused;
            if (nv[i].net->chain == POLICY_CHAIN_ETHEREUM)
                sl_buf_printf(b, "%s{network=\"%s\"} %llu\n", series[s].name, nv[i].net->name, (unsigned long long)v);
        }
    }
}

void admin_networks_metrics(admin_t *a, sl_buf_t *b, const admin_ep_view_t *v, size_t n)
{
    static const struct {
        const char *name, *type, *help;
        gauge_value_t value;
    } series[] = {
        {"sluice_pressure_level", "gauge", "Pressure level: 0 ok, 1 elevated, 2 critical.", G_LEVEL},
        {"sluice_pressure_depth", "gauge", "Calls admitted and not yet settled, all workers.", G_DEPTH},
        {"sluice_pressure_ceiling", "gauge", "Concurrency the usable endpoints offer (max_inflight, or what a credit rate allows).", G_CEILING},
        {"sluice_pressure_utilisation", "gauge", "depth / ceiling.", G_UTIL},
        {"sluice_pressure_settle_p90_seconds", "gauge", "p90 time from admission to answer over pressure.window_ms.", G_P90},
        {"sluice_pressure_settle_baseline_seconds", "gauge", "The slow-moving baseline of the p90 settle time.", G_BASELINE},
        {"sluice_pressure_refusal_ratio", "gauge", "Client calls answered with the upstreams' refusal (every endpoint rate-limited or out of credits) per call settled over pressure.window_ms.", G_REFUSAL},
        {"sluice_pressure_changes_total", "counter", "Pressure level changes.", G_CHANGES},
        {"sluice_polls_merged_total", "counter", "Confirmation polls sent upstream inside a merged call.", G_MERGED},
        {"sluice_upstream_calls_saved_total", "counter", "Upstream calls merging saved.", G_SAVED},
        {"sluice_confirm_waits_total", "counter", "Calls of confirmation polls (a merged one counts once) that waited for a free slot instead of a 503.", G_WAITS},
    };
    uint64_t now = sl_shared_ms();
    admin_net_view_t *nv = sl_xcalloc(a->conf.nnetworks ? a->conf.nnetworks : 1, sizeof(*nv));
    collect(a, nv, v, n, now);
    for (size_t s = 0; s < sizeof(series) / sizeof(series[0]); s++) {
        sl_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", series[s].name, series[s].help, series[s].name, series[s].type);
        for (size_t i = 0; i < a->conf.nnetworks; i++)
            if (nv[i].net->pressure.enabled)
                sl_buf_printf(b, "%s{network=\"%s\"} %g\n", series[s].name, nv[i].net->name, gauge(&nv[i], series[s].value));
    }
    chain_metrics(b, nv, a->conf.nnetworks, v, n);
    logs_metrics(b, &a->conf, nv);
    free(nv);
}
