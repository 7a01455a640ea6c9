/* admin/admin_cache.c: the response cache as an operator sees it.
 *
 * Lookups per network and method come from the workers' "cache/<network>/
 * <slot>" counters (gateway/gw_stats.c), summed; credits saved are the hits
 * priced by the network's first endpoint's cost profile (the endpoint the
 * plan would try first when every endpoint is healthy), in its units. The
 * store's own figures (entries, bytes, evictions) are read from the cache's
 * environment. POST /admin/cache/purge[?network=NAME] drops entries, with a
 * cache_purged event; with the Redis tier (cache.redis) it moves the
 * networks' generations in Redis on too, and answers once Redis has (so
 * every host misses from then on). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/admin_int.h"
#include "base/sl_log.h"
#include "base/sl_time.h"
#include "policy/cost.h"
#include "policy/method.h"
#include "state/state_cache.h"
#include "state/state_cache_redis.h"
#include "state/state_counters.h"
#include "state/state_sum.h"

typedef struct cache_sums {
    uint64_t hits, misses, saved;
    uint64_t redis_hits;          /* of hits: from the Redis tier */
    uint64_t redis_timeouts, redis_errors;
} cache_sums_t;

#define AT(sum, m, k) ((sum)->v[(m) * STATE_CACHE_COUNTER_COUNT + (k)])

/* The per-method counters of net summed; cb (if any) sees each method's. */
typedef void (*method_fn)(void *arg, const pool_network_conf_t *net, const char *method, uint64_t hits,
                          uint64_t misses);

static cache_sums_t sum_network(admin_t *a, const pool_network_conf_t *net, method_fn fn, void *arg)
{
    cache_sums_t s = {0};
    size_t nmethods;
    const policy_method_t *table = policy_method_table(net->chain, &nmethods);
    uint32_t want = (uint32_t)((nmethods + 1) * STATE_CACHE_COUNTER_COUNT);
    const char *pname = net->nendpoints != 0 ? net->endpoints[0].cost_profile : NULL;
    const policy_cost_profile_t *profile = policy_cost_profile(pname != NULL ? pname : "flat");
    state_counters_rec_t *sum = sl_xmalloc(sizeof(*sum));
    state_counters_sum(a->conf.state, STATE_COUNTERS_CACHE, net->name, NULL, a->conf.nworkers, want, sum);
    for (size_t m = 0; m <= nmethods; m++) {
        uint64_t redis_hits = AT(sum, m, STATE_CACHE_HIT_REDIS);
        uint64_t hits = AT(sum, m, STATE_CACHE_HIT) + redis_hits;
        uint64_t misses = AT(sum, m, STATE_CACHE_MISS);
        s.redis_timeouts += AT(sum, m, STATE_CACHE_REDIS_TIMEOUT);
        s.redis_errors += AT(sum, m, STATE_CACHE_REDIS_ERROR);
        if (hits == 0 && misses == 0)
            continue;
        const char *name = m < nmethods ? table[m].name : "other";
        s.hits += hits;
        s.redis_hits += redis_hits;
        s.misses += misses;
        if (m < nmethods && profile != NULL)
            s.saved += hits * policy_cost_of(profile, net->chain, NULL, 0, name, strlen(name)).billed;
        if (fn != NULL)
            fn(arg, net, name, hits, misses);
    }
    free(sum);
    return s;
}

cJSON *admin_cache_network_json(admin_t *a, const pool_network_conf_t *net)
{
    if (a->conf.cache == NULL)
        return cJSON_CreateNull();
    if (state_read_begin(a->conf.state) != SL_OK)
        return cJSON_CreateNull();
    cache_sums_t s = sum_network(a, net, NULL, NULL);
    state_read_end(a->conf.state);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "hits", (double)s.hits);
    cJSON_AddNumberToObject(o, "misses", (double)s.misses);
    if (s.hits + s.misses != 0)
        cJSON_AddNumberToObject(o, "hit_ratio", (double)s.hits / (double)(s.hits + s.misses));
    else
        cJSON_AddNullToObject(o, "hit_ratio");
    cJSON_AddNumberToObject(o, "credits_saved", (double)s.saved);
    int tier = state_cache_tier(a->conf.cache, NULL) != NULL;
    cJSON *by = cJSON_AddObjectToObject(o, "hits_by_tier");
    cJSON_AddNumberToObject(by, "local", (double)(s.hits - s.redis_hits));
    cJSON_AddNumberToObject(by, "redis", (double)s.redis_hits);
    cJSON_AddStringToObject(o, "tiers", tier ? "local+redis" : "local");
    if (tier) {
        cJSON *r = cJSON_AddObjectToObject(o, "redis");
        cJSON_AddNumberToObject(r, "timeouts", (double)s.redis_timeouts);
        cJSON_AddNumberToObject(r, "errors", (double)s.redis_errors);
    }
    return o;
}

static void method_lines(void *arg, const pool_network_conf_t *net, const char *method, uint64_t hits,
                         uint64_t misses)
{
    sl_buf_t *b = arg;
    sl_buf_printf(b, "sluice_cache_lookups_total{network=\"%s\",method=\"%s\",result=\"hit\"} %llu\n", net->name,
                  method, (unsigned long long)hits);
    sl_buf_printf(b, "sluice_cache_lookups_total{network=\"%s\",method=\"%s\",result=\"miss\"} %llu\n", net->name,
                  method, (unsigned long long)misses);
}

/* Hits by tier; with the Redis tier, the lookups it failed. */
static void tier_lines(admin_t *a, sl_buf_t *b, const cache_sums_t *sums)
{
    sl_buf_append_str(b, "# HELP sluice_cache_hits_total Response-cache hits, by network and the tier that had the "
                         "answer (local: this host's LMDB; redis: the cluster's, cache.redis).\n"
                         "# TYPE sluice_cache_hits_total counter\n");
    for (size_t i = 0; i < a->conf.nnetworks; i++) {
        const char *net = a->conf.networks[i].name;
        sl_buf_printf(b, "sluice_cache_hits_total{network=\"%s\",tier=\"local\"} %llu\n", net,
                      (unsigned long long)(sums[i].hits - sums[i].redis_hits));
        sl_buf_printf(b, "sluice_cache_hits_total{network=\"%s\",tier=\"redis\"} %llu\n", net,
                      (unsigned long long)sums[i].redis_hits);
    }
    if (state_cache_tier(a->conf.cache, NULL) == NULL)
        return;
    sl_buf_append_str(b, "# HELP sluice_cache_redis_failures_total Local misses the Redis tier could not answer: "
                         "too late (timeout: cache.redis_wait_ms) or not at all (error: Redis down or refusing).\n"
                         "# TYPE sluice_cache_redis_failures_total counter\n");
    for (size_t i = 0; i < a->conf.nnetworks; i++) {
        const char *net = a->conf.networks[i].name;
        sl_buf_printf(b, "sluice_cache_redis_failures_total{network=\"%s\",kind=\"timeout\"} %llu\n", net,
                      (unsigned long long)sums[i].redis_timeouts);
        sl_buf_printf(b, "sluice_cache_redis_failures_total{network=\"%s\",kind=\"error\"} %llu\n", net,
                      (unsigned long long)sums[i].redis_errors);
    }
}

void admin_cache_metrics(admin_t *a, sl_buf_t *b)
{
    if (a->conf.cache == NULL)
        return;
    sl_buf_append_str(b, "# HELP sluice_cache_lookups_total Response-cache lookups, by network, method and result.\n"
                         "# TYPE sluice_cache_lookups_total counter\n");
    cache_sums_t *sums = sl_xcalloc(a->conf.nnetworks + 1, sizeof(*sums));
    if (state_read_begin(a->conf.state) == SL_OK) {
        for (size_t i = 0; i < a->conf.nnetworks; i++)
            sums[i] = sum_network(a, &a->conf.networks[i], method_lines, b);
        state_read_end(a->conf.state);
    }
    sl_buf_append_str(b, "# HELP sluice_cache_credits_saved_total Credits the cache's hits did not spend, in the "
                         "units of the network's first endpoint's cost profile.\n"
                         "# TYPE sluice_cache_credits_saved_total counter\n");
    for (size_t i = 0; i < a->conf.nnetworks; i++)
        sl_buf_printf(b, "sluice_cache_credits_saved_total{network=\"%s\"} %llu\n", a->conf.networks[i].name,
                      (unsigned long long)sums[i].saved);
    tier_lines(a, b, sums);
    free(sums);
    state_cache_usage_t u;
    state_cache_usage(a->conf.cache, &u);
    sl_buf_printf(b, "# HELP sluice_cache_entries Answers kept in the response cache.\n"
                     "# TYPE sluice_cache_entries gauge\nsluice_cache_entries %zu\n"
                     "# HELP sluice_cache_bytes Bytes the response cache's pages take, and its map's size.\n"
                     "# TYPE sluice_cache_bytes gauge\nsluice_cache_bytes{of=\"used\"} %zu\n"
                     "sluice_cache_bytes{of=\"max\"} %zu\n"
                     "# HELP sluice_cache_evictions_total Entries evicted (least recently used first).\n"
                     "# TYPE sluice_cache_evictions_total counter\nsluice_cache_evictions_total %llu\n",
                  u.entries, u.used, u.size, (unsigned long long)u.evictions);
}

/* The configured network the query names, or NULL (none named: *all = 1). */
static const pool_network_conf_t *purge_target(admin_t *a, h2o_req_t *req, int *all)
{
    size_t len;
    const char *v = admin_query_value(req, "network", &len);
    *all = v == NULL;
    for (size_t i = 0; v != NULL && i < a->conf.nnetworks; i++)
        if (strlen(a->conf.networks[i].name) == len && memcmp(a->conf.networks[i].name, v, len) == 0)
            return &a->conf.networks[i];
    return NULL;
}

/* A purge waiting for Redis: the request may go away meanwhile (its pool
 * then drops the hold, and the answer finds no request). */
typedef struct purge_op {
    h2o_req_t *req;               /* NULL once the request is gone */
    size_t removed;
    const char *network;          /* NULL: all of them */
    int refs;                     /* the hold and the Redis purge */
} purge_op_t;

typedef struct purge_hold {
    purge_op_t *op;
} purge_hold_t;

static void purge_op_unref(purge_op_t *op)
{
    if (--op->refs == 0)
        free(op);
}

static void purge_hold_dispose(void *p)
{
    purge_op_t *op = ((purge_hold_t *)p)->op;
    op->req = NULL;
    purge_op_unref(op);
}

static int send_purged(h2o_req_t *req, size_t removed, const char *network, const char *redis)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "removed", (double)removed);
    if (network != NULL)
        cJSON_AddStringToObject(o, "network", network);
    if (redis == NULL)
        return admin_send_json(req, 200, o);
    cJSON_AddStringToObject(o, "redis", redis);
    if (strcmp(redis, "purged") == 0)
        return admin_send_json(req, 200, o);
    /* this host's entries are gone, Redis' still count: the operator must purge again */
    cJSON_AddStringToObject(o, "error", "the Redis tier was not purged (Redis unreachable or refusing): purge again");
    return admin_send_json(req, 503, o);
}

static void on_redis_purged(void *data, int ok)
{
    purge_op_t *op = data;
    if (!ok)
        sl_log_warn("admin: the response cache's Redis tier could not be purged");
    if (op->req != NULL)
        send_purged(op->req, op->removed, op->network, ok ? "purged" : "failed");
    purge_op_unref(op);
}

/* Moves the Redis tier's generations on, then answers; 0 if under way. */
static int purge_redis(admin_t *a, h2o_req_t *req, state_cluster_t *cl, const pool_network_conf_t *net, size_t removed)
{
    size_t n = net != NULL ? 1 : a->conf.nnetworks;
    const char **names = sl_xmalloc((n ? n : 1) * sizeof(*names));
    for (size_t i = 0; i < n; i++)
        names[i] = net != NULL ? net->name : a->conf.networks[i].name;
    purge_op_t *op = sl_xcalloc(1, sizeof(*op));
    *op = (purge_op_t){req, removed, net != NULL ? net->name : NULL, 2};
    int rc = state_cache_redis_purge(cl, names, n, on_redis_purged, op);
    free(names);
    if (rc != 0) {
        free(op);
        sl_log_warn("admin: the response cache's Redis tier could not be purged: Redis is not reachable");
        return send_purged(req, removed, net != NULL ? net->name : NULL, "unreachable");
    }
    purge_hold_t *hold = h2o_mem_alloc_shared(&req->pool, sizeof(*hold), purge_hold_dispose);
    hold->op = op;
    return 0;
}

int admin_route_cache_purge(admin_t *a, h2o_req_t *req)
{
    if (a->conf.cache == NULL)
        return admin_send_text(req, 409, "application/json",
                               H2O_STRLIT("{\"error\":\"the response cache is off (cache.enabled: false)\"}"));
    int all;
    const pool_network_conf_t *net = purge_target(a, req, &all);
    if (!all && net == NULL)
        return admin_send_text(req, 404, "application/json", H2O_STRLIT("{\"error\":\"no such network\"}"));
    size_t removed = 0;
    if (state_cache_purge(a->conf.cache, all ? NULL : net->name, &removed) != SL_OK)
        return admin_send_text(req, 500, "application/json", H2O_STRLIT("{\"error\":\"the cache could not be purged\"}"));
    state_cluster_t *cl = state_cache_tier(a->conf.cache, NULL);
    state_event_t ev;
    state_event_init(&ev, STATE_EVENT_CACHE_PURGED, all ? "" : net->name, "", sl_shared_ms());
    ev.count = removed;
    snprintf(ev.reason, sizeof(ev.reason), "purged by the operator: %zu entries%s", removed,
             cl != NULL ? " here (and the Redis tier asked to forget its own)" : "");
    if (state_event_append(a->conf.state, &ev) != SL_OK)
        sl_log_warn("admin: the cache_purged event could not be recorded");
    if (cl != NULL)
        return purge_redis(a, req, cl, all ? NULL : net, removed);
    return send_purged(req, removed, all ? NULL : net->name, NULL);
}
