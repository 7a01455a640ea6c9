/* server/srv_master_cluster.c: the master's two moments with Redis, the
 * look before the workers start and the leave after they are gone (with
 * the probe leases handed back). */
#include <stdlib.h>

#include "base/sl_buf.h"
#include "base/sl_log.h"
#include "base/sl_time.h"
#include "server/srv_master_int.h"
#include "state/state_cluster.h"
#include "state/state_key.h"

#define CLUSTER_PROBE_MS 2000

/* With cluster:, one look at Redis before the workers start: a wrong
 * password or a port that is not Redis stops the start; Redis not answering
 * does not (the workers start degraded and connect when it comes). */
int srv_master_cluster_check(master_t *m)
{
    const cfg_t *cfg = m->cfg;
    if (!cfg->has_cluster)
        return 0;
    char why[400];
    sl_err_t err = state_cluster_probe(&cfg->cluster, CLUSTER_PROBE_MS, why, sizeof(why));
    if (err == SL_ERR_IO) {
        sl_log_error("cluster: Redis at %s does not answer (%s): starting DEGRADED; each host enforces limits, "
                     "budgets and breakers on its own until Redis answers", cfg->cluster.url_shown, why);
    } else if (err != SL_OK) {
        sl_log_error("cluster: Redis at %s: %s", cfg->cluster.url_shown, why);
        return -1;
    } else {
        sl_log_info("cluster: host %s, Redis at %s (%s), prefix %s", cfg->cluster.host, cfg->cluster.url_shown, why,
                    cfg->cluster.prefix);
        if (cfg->cache.enabled && cfg->cache.redis &&
            state_cluster_probe_memory(&cfg->cluster, CLUSTER_PROBE_MS, why, sizeof(why)) == SL_ERR_INVALID)
            sl_log_warn("cache: the Redis tier: %s", why);
    }
    state_set_host(m->state, cfg->cluster.host);
    if (state_cluster_mode_reset(m->state, sl_wall_ms()) != SL_OK)
        sl_log_warn("cluster: cannot record the host's mode in the shared state");
    return 0;
}

/* Stopped cleanly: the probe leases this host holds go back at once (a
 * compare-and-delete each), so another host takes each job over now rather
 * than a TTL later. */
static void leases_release(const cfg_t *cfg)
{
    size_t n = 0, k = 0, released = 0;
    for (size_t i = 0; i < cfg->nnetworks; i++)
        n += cfg->networks[i].nendpoints;
    char (*keys)[STATE_KEY_MAX] = sl_xcalloc(n ? n : 1, sizeof(*keys));
    const char **jobs = sl_xcalloc(n ? n : 1, sizeof(*jobs));
    for (size_t i = 0; i < cfg->nnetworks; i++)
        for (size_t j = 0; j < cfg->networks[i].nendpoints; j++) {
            state_key_endpoint(keys[k], sizeof(keys[k]), cfg->networks[i].name, cfg->networks[i].endpoints[j].id);
            jobs[k] = keys[k];
            k++;
        }
    char why[400];
    if (state_cluster_leases_release(&cfg->cluster, jobs, n, CLUSTER_PROBE_MS, &released, why, sizeof(why)) != SL_OK)
        sl_log_warn("cluster: could not hand host %s's probe leases back (%s): the others take them over within a "
                    "TTL", cfg->cluster.host, why);
    else if (released > 0)
        sl_log_info("cluster: host %s handed %zu probe lease(s) back", cfg->cluster.host, released);
    free(jobs);
    free(keys);
}

/* Stopped cleanly with every worker gone: the other hosts need not hold this
 * one's share back. Not when degraded: what it spent alone is not in Redis
 * yet, and its share must stay held until it returns and pays it in. */
void srv_master_cluster_leave(master_t *m)
{
    const cfg_t *cfg = m->cfg;
    if (!cfg->has_cluster || state_cluster_mode_get(m->state).mode != STATE_CLUSTER_SHARED)
        return;
    char why[400];
    leases_release(cfg);
    if (state_cluster_leave(&cfg->cluster, CLUSTER_PROBE_MS, why, sizeof(why)) != SL_OK)
        sl_log_warn("cluster: could not take host %s out of Redis' hosts (%s): the others hold its share of the "
                    "limits back for a window", cfg->cluster.host, why);
    else
        sl_log_info("cluster: host %s left the cluster", cfg->cluster.host);
}
