/* admin/admin_key_metrics.c: each API key's counters, by name (issue 33).
 *
 * The workers count a key's calls, refusals by data.reason and credits
 * spent in "key/<name>/<slot>" (gateway/gw_stats.c); this sums the slots of
 * every key there is: the config file's and those made at run time
 * (state_apikey.h), so the series are bounded by the keys, and a revoked
 * key's series go with it. A keyless call is in no series here. */
#include <stdlib.h>
#include <string.h>

#include "admin/admin_int.h"
#include "state/state_apikey.h"
#include "state/state_counters.h"
#include "state/state_key.h"

static const char *const refusal_reason[STATE_KEYC_COUNT] = {
    [STATE_KEYC_NETWORK] = "network_not_allowed", [STATE_KEYC_METHOD] = "method_not_allowed",
    [STATE_KEYC_CONTRACT] = "contract_not_allowed", [STATE_KEYC_ORIGIN] = "origin_not_allowed",
    [STATE_KEYC_PER_ADDRESS] = "per_address", [STATE_KEYC_CREDITS] = "key_credits",
    [STATE_KEYC_JWT] = "jwt_invalid",
};

void admin_key_counts(admin_t *a, const char *name, uint64_t out[STATE_KEYC_COUNT])
{
    memset(out, 0, STATE_KEYC_COUNT * sizeof(out[0]));
    state_counters_rec_t *rec = sl_xmalloc(sizeof(*rec));
    for (unsigned slot = 1; slot <= a->conf.nworkers; slot++) {
        char key[STATE_KEY_MAX];
        if (state_key_keystats(key, sizeof(key), name, slot) >= sizeof(key) ||
            state_counters_get(a->conf.state, key, rec) != SL_OK ||
            (rec->n != STATE_KEYC_COUNT && rec->n != STATE_KEYC_COUNT_V1))
            continue;
        for (uint32_t k = 0; k < rec->n; k++)
            if (k == STATE_KEYC_LAST_USE_S)
                out[k] = rec->v[k] > out[k] ? rec->v[k] : out[k]; /* a time: the latest worker's */
            else
                out[k] += rec->v[k];
    }
    free(rec);
}

/* The names of every key: the config file's, then the kept ones. */
static const char **key_names(admin_t *a, size_t *n, state_apikey_rec_t **recs)
{
    size_t nrecs = 0;
    if (state_apikey_list(a->conf.state, recs, &nrecs, NULL) != SL_OK) {
        *recs = NULL;
        nrecs = 0;
    }
    const char **names = sl_xmalloc((a->conf.nconfig_keys + nrecs + 1) * sizeof(*names));
    *n = 0;
    for (size_t i = 0; i < a->conf.nconfig_keys; i++)
        if (a->conf.config_keys[i].name != NULL)
            names[(*n)++] = a->conf.config_keys[i].name;
    for (size_t i = 0; i < nrecs; i++)
        names[(*n)++] = (*recs)[i].name;
    return names;
}

void admin_keys_metrics(admin_t *a, sl_buf_t *b)
{
    size_t n;
    state_apikey_rec_t *recs;
    const char **names = key_names(a, &n, &recs);
    uint64_t(*c)[STATE_KEYC_COUNT] = sl_xcalloc(n + 1, sizeof(*c));
    if (state_read_begin(a->conf.state) == SL_OK) {
        for (size_t i = 0; i < n; i++)
            admin_key_counts(a, names[i], c[i]);
        state_read_end(a->conf.state);
    }
    sl_buf_printf(b, "# HELP sluice_key_calls_total Calls answered under an API key, by the key's name (each "
                     "member of a batch; the config file's keys and those made at run time).\n"
                     "# TYPE sluice_key_calls_total counter\n");
    for (size_t i = 0; i < n; i++)
        sl_buf_printf(b, "sluice_key_calls_total{key=\"%s\"} %llu\n", names[i],
                      (unsigned long long)c[i][STATE_KEYC_CALLS]);
    sl_buf_printf(b, "# HELP sluice_key_refusals_total Calls under an API key refused by its scope, its "
                     "per_address limit, its credits or its JWT, by key name and data.reason.\n"
                     "# TYPE sluice_key_refusals_total counter\n");
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < STATE_KEYC_COUNT; k++)
            if (refusal_reason[k] != NULL)
                sl_buf_printf(b, "sluice_key_refusals_total{key=\"%s\",reason=\"%s\"} %llu\n", names[i],
                              refusal_reason[k], (unsigned long long)c[i][k]);
    sl_buf_printf(b, "# HELP sluice_key_credits_spent_total Credits the calls an API key admitted cost, in the "
                     "cost profile of the network's first endpoint, by key name (with or without a credits "
                     "budget).\n# TYPE sluice_key_credits_spent_total counter\n");
    for (size_t i = 0; i < n; i++)
        sl_buf_printf(b, "sluice_key_credits_spent_total{key=\"%s\"} %llu\n", names[i],
                      (unsigned long long)c[i][STATE_KEYC_SPENT]);
    uint64_t over = 0;
    if (state_read_begin(a->conf.state) == SL_OK) {
        state_counters_rec_t *rec = sl_xmalloc(sizeof(*rec));
        for (unsigned slot = 1; slot <= a->conf.nworkers; slot++) {
            char key[STATE_KEY_MAX];
            state_key_keys_uncounted(key, sizeof(key), slot);
            if (state_counters_get(a->conf.state, key, rec) == SL_OK && rec->n == 1)
                over += rec->v[0];
        }
        free(rec);
        state_read_end(a->conf.state);
    }
    sl_buf_printf(b, "# HELP sluice_key_uncounted_total Calls and refusals under API keys that a worker's per-key "
                     "table (256 keys a worker, the first seen) had no room for: in none of the per-key series.\n"
                     "# TYPE sluice_key_uncounted_total counter\nsluice_key_uncounted_total %llu\n",
                  (unsigned long long)over);
    free(c);
    free(names);
    free(recs);
}
