#include "gateway/gw_stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sl_buf.h"
#include "base/sl_log.h"
#include "base/sl_time.h"
#include "state/state_counters.h"
#include "state/state_key.h"

typedef struct net_counters {
    state_counters_slot_t c;      /* key: state_key_requests, this worker's slot */
    state_counters_slot_t cache;  /* key: state_key_cache: lookups per method, hit or miss */
    state_counters_slot_t subs;   /* key: state_key_subs: WebSocket and subscription counters, their cost */
    const policy_method_t *table; /* the chain's method table */
    size_t nmethods;              /* its length; index nmethods = any other method */
} net_counters_t;

struct gw_stats {
    state_t *st;
    unsigned slot;
    state_counters_slot_t *keys;  /* the keys seen, "key/<name>/<slot>" (GW_STATS_KEYS_MAX at most) */
    size_t nkeys;
    state_counters_slot_t keys_over; /* "keyover/<slot>": what keys past the table's GW_STATS_KEYS_MAX did */
    net_counters_t *nets;
    size_t n;
    state_counters_slot_t srv;    /* the worker's limits, "srv/<slot>" */
    char deg_key[STATE_KEY_MAX];  /* state_key_degraded: this worker's degraded parts */
    state_counters_rec_t *deg;    /* as last written */
};

static const state_req_outcome_t from_pool[] = {
    [POOL_OUTCOME_OK] = STATE_REQ_OK,
    [POOL_OUTCOME_RATE_LIMITED] = STATE_REQ_RATE_LIMITED,
    [POOL_OUTCOME_TIMEOUT] = STATE_REQ_TIMEOUT,
    [POOL_OUTCOME_AMBIGUOUS_WRITE] = STATE_REQ_AMBIGUOUS_WRITE,
    [POOL_OUTCOME_UNAVAILABLE] = STATE_REQ_UNAVAILABLE,
    [POOL_OUTCOME_UPSTREAM_ERROR] = STATE_REQ_UPSTREAM_ERROR,
    [POOL_OUTCOME_DEADLINE] = STATE_REQ_TIMEOUT,
    [POOL_OUTCOME_TOO_LARGE] = STATE_REQ_TOO_LARGE,
    [POOL_OUTCOME_ID_UNANSWERABLE] = STATE_REQ_ID_UNANSWERABLE,
    [POOL_OUTCOME_SLOW_CALL] = STATE_REQ_SLOW_CALL,
    [POOL_OUTCOME_LOCAL] = STATE_REQ_LOCAL,
    [POOL_OUTCOME_NO_CONSENSUS] = STATE_REQ_UPSTREAM_ERROR,
};

/* Whether entry k of a network's "subs/" record is a gauge: the network's
 * share of a server gauge, its sources by kind, whether its logs are shared. */
static int subs_gauge(size_t k)
{
    if (k < STATE_SUBS_SOURCES)
        return state_srv_counter_is_gauge((state_srv_counter_t)k);
    return k < STATE_SUBS_COST || k == STATE_SUBS_COST + STATE_SUB_LOGS_SHARED;
}

gw_stats_t *gw_stats_create(const cfg_t *cfg, state_t *st, unsigned slot)
{
    gw_stats_t *s = sl_xcalloc(1, sizeof(*s));
    s->st = st;
    s->slot = slot;
    s->n = cfg->nnetworks;
    s->nets = sl_xcalloc(s->n, sizeof(*s->nets));
    int snapshot = st != NULL && state_read_begin(st) == SL_OK;
    for (size_t i = 0; i < s->n; i++) {
        net_counters_t *c = &s->nets[i];
        state_key_requests(c->c.key, sizeof(c->c.key), cfg->networks[i].name, slot);
        c->table = policy_method_table(cfg->networks[i].chain, &c->nmethods);
        state_counters_slot_load(&c->c, snapshot ? st : NULL, (uint32_t)((c->nmethods + 1) * STATE_REQ_OUTCOME_COUNT));
        state_key_cache(c->cache.key, sizeof(c->cache.key), cfg->networks[i].name, slot);
        state_counters_slot_load(&c->cache, snapshot ? st : NULL,
                                 (uint32_t)((c->nmethods + 1) * STATE_CACHE_COUNTER_COUNT));
        state_key_subs(c->subs.key, sizeof(c->subs.key), cfg->networks[i].name, slot);
        state_counters_slot_load(&c->subs, snapshot ? st : NULL, STATE_SUBS_COUNTERS);
        for (size_t k = 0; k < STATE_SUBS_COUNTERS; k++) /* gauges: a previous worker's value is not this one's */
            if (subs_gauge(k))
                state_counters_slot_set(&c->subs, k, 0);
        state_counters_slot_touch(&c->subs);
    }
    state_key_server(s->srv.key, sizeof(s->srv.key), slot);
    state_counters_slot_load(&s->srv, snapshot ? st : NULL, STATE_SRV_COUNT);
    for (int k = 0; k < STATE_SRV_COUNT; k++)
        if (state_srv_counter_is_gauge((state_srv_counter_t)k))
            state_counters_slot_set(&s->srv, (size_t)k, 0); /* a previous worker's value is not this one's */
    state_counters_slot_touch(&s->srv);
    state_key_keys_uncounted(s->keys_over.key, sizeof(s->keys_over.key), slot);
    state_counters_slot_load(&s->keys_over, snapshot ? st : NULL, 1);
    if (snapshot)
        state_read_end(st);
    state_key_degraded(s->deg_key, sizeof(s->deg_key), slot);
    s->deg = sl_xcalloc(1, sizeof(*s->deg));
    return s;
}

void gw_stats_srv_add(gw_stats_t *s, state_srv_counter_t c, uint64_t n)
{
    if (s != NULL)
        state_counters_slot_add(&s->srv, c, n);
}

void gw_stats_sub_add(gw_stats_t *s, size_t net_index, state_sub_counter_t c, int64_t n)
{
    if (s == NULL || net_index >= s->n)
        return;
    state_counters_slot_t *slot = &s->nets[net_index].subs;
    if (c == STATE_SUB_LOGS_SHARED) /* a gauge: never below 0 */
        state_counters_slot_set(slot, STATE_SUBS_COST + c, n > 0 ? 1 : 0);
    else
        state_counters_slot_add(slot, STATE_SUBS_COST + c, (uint64_t)n);
}

void gw_stats_srv_set(gw_stats_t *s, state_srv_counter_t c, uint64_t value)
{
    if (s != NULL)
        state_counters_slot_set(&s->srv, c, value);
}

void gw_stats_net_add(gw_stats_t *s, size_t net_index, size_t i, int64_t delta)
{
    if (s == NULL || net_index >= s->n || i >= STATE_SUBS_COUNTERS)
        return;
    state_counters_slot_add(&s->nets[net_index].subs, i, (uint64_t)delta); /* wraps down for a gauge's -1 */
    if (i < STATE_SRV_COUNT && !state_srv_counter_is_gauge((state_srv_counter_t)i))
        state_counters_slot_add(&s->srv, i, (uint64_t)delta);
}

/* The key's slot of this worker, made (and loaded) on first sight; NULL past GW_STATS_KEYS_MAX. */
static state_counters_slot_t *key_slot(gw_stats_t *s, const char *name)
{
    /* every keyed call comes here twice: the name is compared in place
     * ("key/<name>/<slot>"), the key is built only for a new slot */
    size_t nlen = strlen(name);
    for (size_t i = 0; i < s->nkeys; i++) {
        const char *k = s->keys[i].key + 4;
        if (k[0] == name[0] && strncmp(k, name, nlen) == 0 && k[nlen] == '/')
            return &s->keys[i];
    }
    char key[STATE_KEY_MAX];
    if (state_key_keystats(key, sizeof(key), name, s->slot) >= sizeof(key))
        return NULL;
    if (s->nkeys >= GW_STATS_KEYS_MAX)
        return NULL;
    if (s->keys == NULL)
        s->keys = sl_xcalloc(GW_STATS_KEYS_MAX, sizeof(*s->keys));
    state_counters_slot_t *k = &s->keys[s->nkeys++];
    memcpy(k->key, key, sizeof(key));
    /* the key's counts of this slot before a restart, once per key (a record
     * of the table before last use was added reads too, with none) */
    int snapshot = s->st != NULL && state_read_begin(s->st) == SL_OK;
    state_counters_slot_load(k, snapshot ? s->st : NULL, STATE_KEYC_COUNT);
    int none = 1;
    for (size_t i = 0; i < STATE_KEYC_COUNT; i++)
        none &= k->rec->v[i] == 0;
    if (none && snapshot) {
        state_counters_slot_load(k, s->st, STATE_KEYC_COUNT_V1);
        k->rec->n = STATE_KEYC_COUNT;
        k->rec->v[STATE_KEYC_LAST_USE_S] = 0;
    }
    if (snapshot)
        state_read_end(s->st);
    return k;
}

void gw_stats_key_add(gw_stats_t *s, const char *name, state_key_counter_t c, uint64_t n)
{
    if (s == NULL || name == NULL || c >= STATE_KEYC_COUNT || c == STATE_KEYC_LAST_USE_S || n == 0)
        return;
    state_counters_slot_t *k = key_slot(s, name);
    if (k == NULL) {
        if (c != STATE_KEYC_SPENT) /* counted, not lost: sluice_key_uncounted_total */
            state_counters_slot_add(&s->keys_over, 0, n);
        return;
    }
    state_counters_slot_add(k, c, n);
    if (c == STATE_KEYC_CALLS) /* a write at most once a second per key: the gauge moves by seconds */
        state_counters_slot_set(k, STATE_KEYC_LAST_USE_S, sl_wall_ms() / 1000);
}

void gw_stats_destroy(gw_stats_t *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n; i++) {
        state_counters_slot_dispose(&s->nets[i].c);
        state_counters_slot_dispose(&s->nets[i].cache);
        state_counters_slot_dispose(&s->nets[i].subs);
    }
    free(s->nets);
    for (size_t i = 0; i < s->nkeys; i++)
        state_counters_slot_dispose(&s->keys[i]);
    free(s->keys);
    state_counters_slot_dispose(&s->keys_over);
    state_counters_slot_dispose(&s->srv);
    free(s->deg);
    free(s);
}

static size_t method_index(const net_counters_t *c, const policy_method_t *m)
{
    return m != NULL && m >= c->table && m < c->table + c->nmethods ? (size_t)(m - c->table) : c->nmethods;
}

static void count(net_counters_t *c, const policy_method_t *m, state_req_outcome_t o)
{
    state_counters_slot_add(&c->c, method_index(c, m) * STATE_REQ_OUTCOME_COUNT + o, 1);
}

static void count_cache(net_counters_t *c, const policy_method_t *m, const pool_item_t *it)
{
    size_t at = method_index(c, m) * STATE_CACHE_COUNTER_COUNT;
    if (it->cached)
        state_counters_slot_add(&c->cache, at + (it->cached == POOL_CACHE_REDIS ? STATE_CACHE_HIT_REDIS
                                                                               : STATE_CACHE_HIT), 1);
    else if (it->cache_miss)
        state_counters_slot_add(&c->cache, at + STATE_CACHE_MISS, 1);
    if (!it->cached && it->cache_miss == POOL_CACHE_MISSED_TIMEOUT)
        state_counters_slot_add(&c->cache, at + STATE_CACHE_REDIS_TIMEOUT, 1);
    else if (!it->cached && it->cache_miss == POOL_CACHE_MISSED_ERROR)
        state_counters_slot_add(&c->cache, at + STATE_CACHE_REDIS_ERROR, 1);
}

void gw_stats_count_request(gw_stats_t *s, size_t net_index, const gw_rpc_request_t *rpc, const pool_item_t *items,
                            const uint32_t *item_member, size_t nitems)
{
    if (s == NULL || net_index >= s->n)
        return;
    net_counters_t *c = &s->nets[net_index];
    if (rpc->kind == GW_RPC_REJECT) {
        count(c, NULL, STATE_REQ_INVALID);
        return;
    }
    size_t k = 0;
    for (size_t i = 0; i < rpc->nmembers; i++) {
        const gw_member_t *m = &rpc->members[i];
        const pool_item_t *it = k < nitems && item_member[k] == i ? &items[k++] : NULL;
        if (it != NULL)
            count_cache(c, m->method, it);
        if (m->status == GW_MEMBER_INVALID)
            count(c, NULL, STATE_REQ_INVALID);
        else if (m->status == GW_MEMBER_BLOCKED || m->status == GW_MEMBER_DENIED) /* refused here, never sent */
            count(c, m->method, STATE_REQ_BLOCKED);
        else if (m->status == GW_MEMBER_SHED)
            count(c, m->method, STATE_REQ_SHED);
        else if (it != NULL && it->state == POOL_ITEM_ANSWERED)
            count(c, m->method, it->verdict == POLICY_VERDICT_SUCCESS ? STATE_REQ_OK : STATE_REQ_RPC_ERROR);
        else if (it != NULL)
            count(c, m->method, from_pool[it->outcome]);
    }
}

void gw_stats_flush(gw_stats_t *s)
{
    if (s == NULL || s->st == NULL)
        return;
    /* every network (requests, cache lookups, subscriptions), the server
     * counters and the degraded parts */
    const char **keys = sl_xmalloc((3 * s->n + 3 + s->nkeys) * sizeof(*keys));
    const state_counters_rec_t **recs = sl_xmalloc((3 * s->n + 3 + s->nkeys) * sizeof(*recs));
    size_t n = 0;
    if (s->keys_over.dirty) {
        keys[n] = s->keys_over.key;
        recs[n++] = s->keys_over.rec;
    }
    for (size_t i = 0; i < s->nkeys; i++)
        if (s->keys[i].dirty) {
            keys[n] = s->keys[i].key;
            recs[n++] = s->keys[i].rec;
        }
    for (size_t i = 0; i <= 3 * s->n; i++) {
        state_counters_slot_t *c = i == 3 * s->n ? &s->srv
                                   : i % 3 == 0  ? &s->nets[i / 3].c
                                   : i % 3 == 1  ? &s->nets[i / 3].cache
                                                 : &s->nets[i / 3].subs;
        if (!c->dirty)
            continue;
        keys[n] = c->key;
        recs[n++] = c->rec;
    }
    /* which parts enforce locally, for /metrics (the log and the events say
     * it too, and they do not depend on this write succeeding) */
    state_counters_rec_t deg = {.n = STATE_DEGRADED_COUNTERS};
    for (int p = 0; p < STATE_PART_COUNT; p++) {
        deg.v[2 * p] = (uint64_t)state_degraded(s->st, (state_part_t)p);
        deg.v[2 * p + 1] = state_degraded_decisions(s->st, (state_part_t)p);
    }
    int deg_dirty = s->deg->n != deg.n || memcmp(s->deg->v, deg.v, deg.n * sizeof(deg.v[0])) != 0;
    if (deg_dirty) {
        keys[n] = s->deg_key;
        recs[n++] = &deg;
    }
    if (n > 0 && state_counters_put(s->st, keys, recs, n) == SL_OK) {
        for (size_t i = 0; i < s->n; i++)
            s->nets[i].c.dirty = s->nets[i].cache.dirty = s->nets[i].subs.dirty = 0;
        s->srv.dirty = 0;
        for (size_t i = 0; i < s->nkeys; i++)
            s->keys[i].dirty = 0;
        s->keys_over.dirty = 0;
        if (deg_dirty) {
            s->deg->n = deg.n;
            memcpy(s->deg->v, deg.v, deg.n * sizeof(deg.v[0]));
        }
    }
    else if (n > 0)
        sl_log_warn("state: could not flush request counters (kept in memory, retried)");
    free(keys);
    free(recs);
}
