/* admin/admin_lease.c: who probes an endpoint, with cluster: (the lease of
 * its probes, pool/pool_lease.c), as this host last heard it. */
#include "admin/admin_int.h"
#include "policy/joblease.h"
#include "state/state_cluster.h"

void admin_lease_add(admin_t *a, cJSON *cluster, const state_endpoint_rec_t *rec,
                     const struct state_cluster_mode_rec *mode, uint64_t now_ms)
{
    policy_joblease_view_t v = {.cluster = 1,
                                .redis_up = mode->mode == STATE_CLUSTER_SHARED,
                                .me = a->conf.cluster_host,
                                .holder = rec->lease_holder,
                                .until_ms = rec->lease_until_ms};
    policy_joblease_role_t role = policy_joblease_role(&v, now_ms);
    cJSON *o = cJSON_CreateObject();
    /* this host's part: holder (it probes for every host), follower (it applies the
     * holder's results), local (Redis away: it probes for itself), pending */
    cJSON_AddStringToObject(o, "role", policy_joblease_role_name(role));
    switch (role) {
    case POLICY_JOBLEASE_HOLDER:
    case POLICY_JOBLEASE_FOLLOWER:
        cJSON_AddStringToObject(o, "holder", rec->lease_holder);
        cJSON_AddNumberToObject(o, "token", (double)rec->lease_token);
        cJSON_AddNumberToObject(o, "expires_in_ms", (double)(rec->lease_until_ms - now_ms));
        break;
    case POLICY_JOBLEASE_LOCAL:
        cJSON_AddStringToObject(o, "holder", a->conf.cluster_host);
        break;
    case POLICY_JOBLEASE_ALONE:
    case POLICY_JOBLEASE_PENDING:
    case POLICY_JOBLEASE_ROLE_COUNT:
        cJSON_AddNullToObject(o, "holder");
        break;
    }
    cJSON_AddItemToObject(cluster, "probes", o);
}
