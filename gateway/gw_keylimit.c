/* gateway/gw_keylimit.c: a key's per_address limit and credits budget
 * (gw_keylimit.h), charged through the worker's limits (gw_limit.c), so
 * they hold across workers (and hosts, cluster:) as a tier does. */
#include "gateway/gw_keylimit.h"

#include <stdio.h>
#include <string.h>

#include "base/sl_hash.h"
#include "gateway/gw_stats.h"

#define IDENT_MAX 96

/* "key:<name>/<what>" into out, or "key#<hash of the name>/<what>" when
 * the name is too long for the limits' identity, so <what> is never cut.
 * Built by hand: it runs on every call of a key with such limits. */
static void ident_of(char out[IDENT_MAX], const cfg_key_conf_t *key, const char *what1, const char *what2)
{
    size_t fits = sizeof(((gw_limit_wait_t *)0)->identity);
    size_t n = strlen(key->name), w1 = strlen(what1), w2 = strlen(what2);
    if (4 + n + 1 + w1 + w2 < fits && 4 + n + 1 + w1 + w2 < IDENT_MAX) {
        memcpy(out, "key:", 4);
        memcpy(out + 4, key->name, n);
        out[4 + n] = '/';
        memcpy(out + 5 + n, what1, w1);
        memcpy(out + 5 + n + w1, what2, w2 + 1);
        return;
    }
    snprintf(out, IDENT_MAX, "key#%016llx/%s%s", (unsigned long long)sl_fnv1a_str(SL_FNV1A_OFFSET, key->name), what1,
             what2);
}

int gw_keylimit_address(gw_handler_t *h, const cfg_key_conf_t *key, const char *ip, policy_bucket_t bucket,
                        uint32_t n, gw_limit_result_t *lim)
{
    const cfg_tier_conf_t *pa = key != NULL ? &key->per_address : NULL;
    if (pa == NULL || (pa->limits.per_second | pa->limits.per_minute | pa->limits.per_day) == 0)
        return 1;
    char ident[IDENT_MAX];
    ident_of(ident, key, "ip:", ip);
    gw_limit_charge(h->limit, pa, ident, bucket, n, lim);
    if (lim->said != POLICY_LEASE_NO)
        return 1;
    gw_stats_srv_add(h->stats, STATE_SRV_ACCESS_PER_ADDRESS, 1);
    gw_stats_key_add(h->stats, key->name, STATE_KEYC_PER_ADDRESS, 1);
    return 0;
}

int gw_keylimit_credits(gw_handler_t *h, const cfg_key_conf_t *key, uint32_t cost, gw_limit_result_t *lim)
{
    if (key == NULL)
        return 1;
    const cfg_tier_conf_t *cr = &key->credits;
    if (cost == 0 || (cr->limits.per_day | cr->limits.per_month) == 0) {
        gw_stats_key_add(h->stats, key->name, STATE_KEYC_SPENT, cost); /* spend is counted without a budget too */
        return 1;
    }
    char ident[IDENT_MAX];
    ident_of(ident, key, "credits", "");
    gw_limit_charge(h->limit, cr, ident, POLICY_BUCKET_STANDARD, cost, lim);
    if (lim->said != POLICY_LEASE_NO) {
        gw_stats_key_add(h->stats, key->name, STATE_KEYC_SPENT, cost);
        return 1;
    }
    gw_stats_srv_add(h->stats, STATE_SRV_ACCESS_KEY_CREDITS, 1);
    gw_stats_key_add(h->stats, key->name, STATE_KEYC_CREDITS, 1);
    return 0;
}

const policy_cost_profile_t *gw_keylimit_profile(const pool_network_conf_t *nc)
{
    const char *name = nc != NULL && nc->nendpoints > 0 ? nc->endpoints[0].cost_profile : NULL;
    const policy_cost_profile_t *p = policy_cost_profile(name != NULL ? name : "flat");
    return p != NULL ? p : policy_cost_profile("flat");
}
