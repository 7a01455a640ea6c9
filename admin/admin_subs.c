/* admin/admin_subs.c: client WebSockets and subscriptions per network, as
 * an operator sees them: the "subscriptions" object of each network in
 * GET /admin/networks (admin_networks.c) and the per-network series of
 * /metrics (admin_metrics.c).
 *
 * The figures are the workers' "subs/<network>/<slot>" counters
 * (gateway/gw_stats.c, laid out as state_counters.h's STATE_SUBS_*), summed
 * over the slots: sockets open, subscriptions and sources open by kind,
 * notifications, heights backfilled / skipped / reorged, logs sent, closes.
 * The last subscription_source_changed of a network is looked for among
 * the newest events only (RECENT_EVENTS): an older one is shown as null. */
#include <stdlib.h>
#include <string.h>

#include "admin/admin_int.h"
#include "state/state_counters.h"
#include "state/state_sum.h"

#define RECENT_EVENTS 256

/* The kinds' names as clients say them, and the chain they are served on;
 * a gauge not listed (a kind added later) is shown on every chain by its
 * counter name. */
static const struct {
    state_srv_counter_t gauge;
    const char *name;
    policy_chain_t chain;
} kinds[] = {
    {STATE_SRV_SUBS_NEWHEADS, "newHeads", POLICY_CHAIN_ETHEREUM},
    {STATE_SRV_SUBS_LOGS, "logs", POLICY_CHAIN_ETHEREUM},
    {STATE_SRV_SUBS_PENDING, "newPendingTransactions", POLICY_CHAIN_ETHEREUM},
    {STATE_SRV_SUBS_SLOT, "slot", POLICY_CHAIN_SOLANA},
    {STATE_SRV_SUBS_ROOT, "root", POLICY_CHAIN_SOLANA},
    {STATE_SRV_SUBS_SIGNATURE, "signature", POLICY_CHAIN_SOLANA},
    {STATE_SRV_SUBS_ACCOUNT, "account", POLICY_CHAIN_SOLANA},
    {STATE_SRV_SUBS_SOL_LOGS, "sol_logs", POLICY_CHAIN_SOLANA},
    {STATE_SRV_SUBS_PROGRAM, "program", POLICY_CHAIN_SOLANA},
};

/* The kind's name if counter k is a subscription gauge shown on chain,
 * else NULL. */
static const char *kind_name(state_srv_counter_t k, policy_chain_t chain)
{
    const char *n = state_srv_counter_name(k);
    if (!state_srv_counter_is_gauge(k) || strncmp(n, "subs_", 5) != 0)
        return NULL;
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (kinds[i].gauge == k)
            return kinds[i].chain == chain ? kinds[i].name : NULL;
    return n + 5;
}

static state_counters_rec_t *subs_sum(admin_t *a, const pool_network_conf_t *net)
{
    state_counters_rec_t *sum = sl_xcalloc(1, sizeof(*sum));
    sum->n = STATE_SUBS_COUNTERS;
    if (state_read_begin(a->conf.state) != SL_OK)
        return sum; /* zeros: no snapshot */
    state_counters_sum(a->conf.state, STATE_COUNTERS_SUBS, net->name, NULL, a->conf.nworkers, STATE_SUBS_COUNTERS,
                       sum);
    state_read_end(a->conf.state);
    return sum;
}

state_event_t *admin_subs_recent_events(admin_t *a, size_t *n)
{
    *n = 0;
    uint64_t last = state_events_last_seq(a->conf.state);
    state_event_t *evs = sl_xmalloc(RECENT_EVENTS * sizeof(*evs));
    if (state_events_read(a->conf.state, last > RECENT_EVENTS ? last - RECENT_EVENTS : 0, evs, RECENT_EVENTS, n) !=
        SL_OK)
        *n = 0;
    return evs;
}

static void add_last_change(cJSON *o, const pool_network_conf_t *net, const state_event_t *evs, size_t nevs)
{
    for (size_t i = nevs; i-- > 0;) {
        const state_event_t *ev = &evs[i];
        if (ev->kind != STATE_EVENT_SUBSCRIPTION_SOURCE_CHANGED || strcmp(ev->network, net->name) != 0)
            continue;
        char iso[32];
        cJSON *c = cJSON_AddObjectToObject(o, "last_source_change");
        admin_iso_time(ev->ts_ms, iso);
        cJSON_AddStringToObject(c, "time", iso);
        cJSON_AddStringToObject(c, "to", ev->endpoint);
        cJSON_AddNumberToObject(c, "backfilled", (double)ev->count);
        cJSON_AddStringToObject(c, "reason", ev->reason); /* the kind and the endpoint it moved from */
        return;
    }
    cJSON_AddNullToObject(o, "last_source_change");
}

cJSON *admin_subs_network_json(admin_t *a, const pool_network_conf_t *net, const state_event_t *evs, size_t nevs)
{
    state_counters_rec_t *s = subs_sum(a, net);
    const uint64_t *v = s->v;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "sockets", (double)v[STATE_SRV_WS_CONNECTIONS]);
    cJSON *open = cJSON_AddObjectToObject(o, "open");
    cJSON *sources = cJSON_AddObjectToObject(o, "sources");
    for (int k = 0; k < STATE_SRV_COUNT; k++) {
        const char *name = kind_name((state_srv_counter_t)k, net->chain);
        if (name == NULL)
            continue;
        cJSON_AddNumberToObject(open, name, (double)v[k]);
        cJSON_AddNumberToObject(sources, name, (double)v[STATE_SUBS_SOURCES + k]);
    }
    cJSON_AddNumberToObject(o, "notifications", (double)v[STATE_SRV_SUB_NOTIFICATIONS]);
    cJSON_AddNumberToObject(o, "logs_sent", (double)v[STATE_SRV_SUB_LOGS_SENT]);
    cJSON_AddNumberToObject(o, "logs_skipped", (double)v[STATE_SRV_SUB_LOGS_SKIPPED]);
    cJSON *h = cJSON_AddObjectToObject(o, "heights");
    cJSON_AddNumberToObject(h, "backfilled", (double)v[STATE_SRV_SUB_BACKFILLED]);
    cJSON_AddNumberToObject(h, "skipped", (double)v[STATE_SRV_SUB_SKIPPED]);
    cJSON_AddNumberToObject(h, "reorged", (double)v[STATE_SRV_SUB_REORGED]);
    cJSON *closed = cJSON_AddObjectToObject(o, "closed");
    cJSON_AddNumberToObject(closed, "slow_reader", (double)v[STATE_SRV_WS_SLOW_CLOSES]);
    cJSON_AddNumberToObject(closed, "idle", (double)v[STATE_SRV_WS_IDLE_CLOSES]);
    cJSON_AddNumberToObject(o, "refused", (double)v[STATE_SRV_SUB_REFUSED]);
    add_last_change(o, net, evs, nevs);
    free(s);
    return o;
}

/* One series: its help, then a line per network (and kind, when by_kind). */
typedef struct subs_series {
    const char *name, *type, *help;
    size_t at;                    /* entry of the record; by_kind: added to the kind's gauge */
    const char *labels;           /* more labels after network's, or NULL */
    int by_kind;
} subs_series_t;

static const subs_series_t series[] = {
    {"sluice_websocket_connections_by_network", "gauge", "Client WebSocket connections open, per network.",
     STATE_SRV_WS_CONNECTIONS, NULL, 0},
    {"sluice_subscriptions_by_network", "gauge", "Client subscriptions open, per network and kind.", 0, NULL, 1},
    {"sluice_subscription_sources", "gauge",
     "Subscription sources running (one per distinct network, kind and params, shared by its subscribers).",
     STATE_SUBS_SOURCES, NULL, 1},
    {"sluice_subscription_notifications_by_network_total", "counter", "Subscription notifications sent, per network.",
     STATE_SRV_SUB_NOTIFICATIONS, NULL, 0},
    {"sluice_subscription_heights_by_network_total", "counter",
     "Heights fetched by number to fill a gap (backfilled), skipped past the bound, or sent again after a reorg.",
     STATE_SRV_SUB_BACKFILLED, "how=\"backfilled\"", 0},
    {"sluice_subscription_heights_by_network_total", NULL, NULL, STATE_SRV_SUB_SKIPPED, "how=\"skipped\"", 0},
    {"sluice_subscription_heights_by_network_total", NULL, NULL, STATE_SRV_SUB_REORGED, "how=\"reorged\"", 0},
    {"sluice_subscription_logs_by_network_total", "counter", "Logs notified (removed ones included), per network.",
     STATE_SRV_SUB_LOGS_SENT, NULL, 0},
    {"sluice_subscription_logs_skipped_by_network_total", "counter",
     "Logs subscriptions ended with an error naming a block whose logs they could not deliver, per network.",
     STATE_SRV_SUB_LOGS_SKIPPED, NULL, 0},
    {"sluice_websocket_closed_by_network_total", "counter",
     "Client WebSockets sluice closed: slow_reader (1008, its answers queued past the bound) or idle.",
     STATE_SRV_WS_SLOW_CLOSES, "reason=\"slow_reader\"", 0},
    {"sluice_websocket_closed_by_network_total", NULL, NULL, STATE_SRV_WS_IDLE_CLOSES, "reason=\"idle\"", 0},
};

static void series_lines(sl_buf_t *b, const subs_series_t *x, const pool_network_conf_t *net,
                         const state_counters_rec_t *s)
{
    if (!x->by_kind) {
        sl_buf_printf(b, "%s{network=\"%s\"%s%s} %llu\n", x->name, net->name, x->labels ? "," : "",
                      x->labels ? x->labels : "", (unsigned long long)s->v[x->at]);
        return;
    }
    for (int k = 0; k < STATE_SRV_COUNT; k++) {
        const char *kind = kind_name((state_srv_counter_t)k, net->chain);
        if (kind != NULL)
            sl_buf_printf(b, "%s{network=\"%s\",kind=\"%s\"} %llu\n", x->name, net->name, kind,
                          (unsigned long long)s->v[x->at + (size_t)k]);
    }
}

void admin_subs_metrics(admin_t *a, sl_buf_t *b)
{
    size_t nnets = a->conf.nnetworks;
    state_counters_rec_t **sums = sl_xcalloc(nnets ? nnets : 1, sizeof(*sums));
    for (size_t i = 0; i < nnets; i++)
        sums[i] = subs_sum(a, &a->conf.networks[i]);
    for (size_t k = 0; k < sizeof(series) / sizeof(series[0]); k++) {
        if (series[k].help != NULL)
            sl_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", series[k].name, series[k].help, series[k].name,
                          series[k].type);
        for (size_t i = 0; i < nnets; i++)
            series_lines(b, &series[k], &a->conf.networks[i], sums[i]);
    }
    for (size_t i = 0; i < nnets; i++)
        free(sums[i]);
    free(sums);
}
