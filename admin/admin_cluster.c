/* admin/admin_cluster.c: what the operator sees of the cluster (cluster:
 * section): this host's mode and the number of hosts, from the host's mode
 * record in LMDB (the workers keep it; state_cluster_mode_move). */
#include "admin/admin_int.h"
#include "state/state_cluster.h"

static const state_cluster_mode_t shown_modes[] = {STATE_CLUSTER_STARTING, STATE_CLUSTER_SHARED,
                                                   STATE_CLUSTER_DEGRADED};

void admin_cluster_metrics(admin_t *a, sl_buf_t *b)
{
    if (a->conf.cluster_host == NULL)
        return;
    state_cluster_mode_rec_t m = state_cluster_mode_get(a->conf.state);
    sl_buf_printf(b, "# HELP sluice_cluster_mode 1 for this host's cluster mode: shared (Redis answers), degraded "
                     "(each host on its own), starting.\n# TYPE sluice_cluster_mode gauge\n");
    for (size_t i = 0; i < sizeof(shown_modes) / sizeof(shown_modes[0]); i++)
        sl_buf_printf(b, "sluice_cluster_mode{host=\"%s\",mode=\"%s\"} %d\n", a->conf.cluster_host,
                      state_cluster_mode_name(shown_modes[i]), m.mode == shown_modes[i]);
    sl_buf_printf(b, "# HELP sluice_cluster_hosts Hosts seen in Redis within the last 10 s (as last seen).\n"
                     "# TYPE sluice_cluster_hosts gauge\nsluice_cluster_hosts{host=\"%s\"} %u\n",
                  a->conf.cluster_host, m.hosts ? m.hosts : 1);
    uint64_t commands = 0, errors = 0;
    if (state_read_begin(a->conf.state) == SL_OK) {
        commands = state_cluster_commands_sum(a->conf.state, a->conf.nworkers);
        errors = state_cluster_errors_sum(a->conf.state, a->conf.nworkers);
        state_read_end(a->conf.state);
    }
    sl_buf_printf(b, "# HELP sluice_cluster_redis_commands_total Commands this host's workers sent to Redis.\n"
                     "# TYPE sluice_cluster_redis_commands_total counter\n"
                     "sluice_cluster_redis_commands_total{host=\"%s\"} %llu\n",
                  a->conf.cluster_host, (unsigned long long)commands);
    sl_buf_printf(b, "# HELP sluice_cluster_redis_errors_total Error replies from Redis (out of memory, read-only): "
                     "each such decision was made locally.\n"
                     "# TYPE sluice_cluster_redis_errors_total counter\n"
                     "sluice_cluster_redis_errors_total{host=\"%s\"} %llu\n",
                  a->conf.cluster_host, (unsigned long long)errors);
}

cJSON *admin_cluster_scope_json(admin_t *a, const state_cluster_mode_rec_t *m)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "counters", a->conf.cluster_host); /* requests, outcomes, latency: this host's */
    /* breaker, drain, rate-limit mark and credits: every host's, unless Redis is away */
    cJSON_AddStringToObject(o, "shared_state", m->mode == STATE_CLUSTER_SHARED ? "cluster" : "this host");
    return o;
}

cJSON *admin_cluster_json(admin_t *a)
{
    if (a->conf.cluster_host == NULL)
        return NULL;
    state_cluster_mode_rec_t m = state_cluster_mode_get(a->conf.state);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "host", a->conf.cluster_host);
    cJSON_AddStringToObject(o, "mode", state_cluster_mode_name((state_cluster_mode_t)m.mode));
    cJSON_AddNumberToObject(o, "hosts", m.hosts ? m.hosts : 1);
    char iso[32];
    admin_iso_time(m.since_ms, iso);
    if (m.since_ms != 0)
        cJSON_AddStringToObject(o, "since", iso);
    return o;
}
