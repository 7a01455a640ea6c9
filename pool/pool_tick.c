/* pool/pool_tick.c: the worker's tick (every state.refresh_ms, ~50 ms).
 *
 * It re-reads the shared records into the worker's snapshot (breakers,
 * drains, marks, the pressure level), flushes this worker's counters to its
 * own slot (every state.flush_ms, if they changed), and drives what runs on
 * time: half-open probes, the ranking, calls waiting for a slot. Init loads
 * the slot so counters keep growing across a worker's restarts. */
#include <string.h>
#include <unistd.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "pool/pool_net.h"
#include "state/state_cache.h"
#include "state/state_key.h"

void pool_tick_refresh(pool_t *pool)
{
    if (pool->state == NULL || state_read_begin(pool->state) != SL_OK)
        return;
    for (size_t n = 0; n < pool->nnetworks; n++) {
        pool_network_t *net = &pool->networks[n];
        for (size_t i = 0; i < net->nendpoints; i++) {
            pool_health_t *h = &net->endpoints[i].health;
            state_endpoint_rec_t rec;
            if (state_endpoint_get(pool->state, h->key, &rec) != SL_OK)
                memset(&rec, 0, sizeof(rec));
            net->level_stale |= rec.drained != h->shared.drained;
            h->shared = rec;
        }
    }
    uint64_t now = sl_shared_ms();
    for (size_t n = 0; n < pool->nnetworks; n++)
        pool_pressure_read(&pool->networks[n], now);
    state_read_end(pool->state);
    for (size_t n = 0; n < pool->nnetworks; n++) {
        pool_pressure_tick(&pool->networks[n], now);
        pool_chain_refresh(&pool->networks[n], now); /* the probes' heads, whichever worker probed */
    }
    /* An operator's drain changes the network's level: every worker that
     * sees it re-checks, and the level's CAS makes that one event. */
    for (size_t n = 0; n < pool->nnetworks; n++)
        if (pool->networks[n].level_stale) {
            pool->networks[n].level_stale = 0;
            pool_health_network_check(&pool->networks[n]);
        }
}

/* Counters are written in batches of FLUSH_BATCH records (one LMDB write
 * transaction each), so any number of endpoints is flushed. A batch that
 * could not be written stays dirty and goes with the next flush. */
#define FLUSH_BATCH 256

typedef struct flush_batch {
    const char *keys[FLUSH_BATCH];
    pool_health_t *owners[FLUSH_BATCH];
    const state_counters_rec_t *per_method[FLUSH_BATCH];
    state_stats_rec_t stats[FLUSH_BATCH];
    size_t n;
} flush_batch_t;

static void put_per_method(pool_t *pool, flush_batch_t *b)
{
    if (b->n > 0 && state_counters_put(pool->state, b->keys, b->per_method, b->n) != SL_OK) {
        sl_log_warn("state: could not flush per-method counters (kept in memory, retried)");
        for (size_t i = 0; i < b->n; i++)
            b->owners[i]->per_method_dirty = 1;
    }
    b->n = 0;
}

static void flush_per_method(pool_t *pool, flush_batch_t *b)
{
    for (size_t k = 0; k < pool->nnetworks; k++)
        for (size_t i = 0; i < pool->networks[k].nendpoints; i++) {
            pool_health_t *h = &pool->networks[k].endpoints[i].health;
            if (!h->per_method_dirty || h->per_method == NULL)
                continue;
            b->keys[b->n] = h->per_method_key;
            b->owners[b->n] = h;
            b->per_method[b->n++] = h->per_method;
            h->per_method_dirty = 0;
            if (b->n == FLUSH_BATCH)
                put_per_method(pool, b);
        }
    put_per_method(pool, b);
}

static void put_stats(pool_t *pool, flush_batch_t *b)
{
    if (b->n > 0 && state_stats_put(pool->state, b->keys, b->stats, b->n) != SL_OK) {
        sl_log_warn("state: could not flush this worker's counters (kept in memory, retried)");
        for (size_t i = 0; i < b->n; i++)
            b->owners[i]->dirty = 1;
    }
    b->n = 0;
}

static void flush_stats(pool_t *pool)
{
    flush_batch_t b; /* on the stack, as the records were before batching */
    b.n = 0;
    flush_per_method(pool, &b);
    uint64_t now = sl_shared_ms();
    for (size_t k = 0; k < pool->nnetworks; k++) {
        pool_network_t *net = &pool->networks[k];
        for (size_t i = 0; i < net->nendpoints; i++) {
            pool_endpoint_t *ep = &net->endpoints[i];
            pool_health_t *h = &ep->health;
            if (!h->dirty && h->stats.inflight == ep->link.inflight)
                continue;
            h->stats.pid = (uint32_t)getpid();
            h->stats.updated_ms = now;
            h->stats.inflight = ep->link.inflight;
            b.keys[b.n] = h->stats_key;
            b.owners[b.n] = h;
            b.stats[b.n++] = h->stats;
            h->dirty = 0;
            if (b.n == FLUSH_BATCH)
                put_stats(pool, &b);
        }
    }
    put_stats(pool, &b);
    pool_pressure_flush(pool, now);
}

static void on_tick(h2o_timeout_entry_t *entry)
{
    pool_t *pool = H2O_STRUCT_FROM_MEMBER(pool_t, tick, entry);
    pool_tick_refresh(pool);
    uint64_t mono = sl_now_ms(), now = sl_shared_ms();
    if (pool->flush_ms != 0 && mono - pool->last_flush_ms >= pool->flush_ms) {
        flush_stats(pool);
        pool->last_flush_ms = mono;
    }
    if (pool->cache != NULL && mono - pool->last_cache_flush_ms >= POOL_CACHE_FLUSH_MS) {
        if (state_cache_flush(pool->cache) != SL_OK)
            sl_log_warn("cache: the entries hit could not be marked recent (they may be evicted sooner)");
        pool->last_cache_flush_ms = mono;
    }
    pool_lease_tick(pool, now); /* cluster: which host probes which endpoint */
    for (size_t k = 0; k < pool->nnetworks; k++)
        for (size_t i = 0; i < pool->networks[k].nendpoints; i++) {
            pool_probe_tick(&pool->networks[k].endpoints[i], now);
            pool_chainid_tick(&pool->networks[k].endpoints[i], now);
            pool_chainprobe_tick(&pool->networks[k].endpoints[i], now);
            pool_wshead_tick(&pool->networks[k].endpoints[i], now);
            pool_wspass_tick(&pool->networks[k].endpoints[i], now);
        }
    for (size_t k = 0; k < pool->nnetworks; k++)
        pool_chainprobe_tip_tick(&pool->networks[k], now);
    for (size_t k = 0; k < pool->nnetworks; k++)
        pool_rank_update(&pool->networks[k], now);
    for (size_t k = 0; k < pool->nnetworks; k++)
        pool->refreshed(&pool->networks[k]);
    h2o_timeout_link(pool->loop, &pool->tick_timeout, &pool->tick);
}

/* Loads this worker's slot so counters keep growing across restarts. */
static void load_slot(pool_t *pool)
{
    if (state_read_begin(pool->state) != SL_OK)
        return;
    for (size_t k = 0; k < pool->nnetworks; k++) {
        pool_network_t *net = &pool->networks[k];
        pool_pressure_load(net);
        for (size_t i = 0; i < net->nendpoints; i++) {
            pool_health_t *h = &net->endpoints[i].health;
            if (state_stats_get(pool->state, h->stats_key, &h->stats) != SL_OK)
                memset(&h->stats, 0, sizeof(h->stats));
            h->stats.inflight = 0;
            /* the concurrency reached counts from this worker's start */
            h->stats.max_inflight_seen = 0;
            h->dirty = 1;
            uint32_t want = h->per_method->n;
            if (state_counters_get(pool->state, h->per_method_key, h->per_method) != SL_OK || h->per_method->n != want) {
                memset(h->per_method, 0, sizeof(*h->per_method));
                h->per_method->n = want;
            }
        }
    }
    state_read_end(pool->state);
}

void pool_tick_init(pool_t *pool)
{
    for (size_t k = 0; k < pool->nnetworks; k++) {
        pool_network_t *net = &pool->networks[k];
        net->level = STATE_NETWORK_REDUNDANT;
        for (size_t i = 0; i < net->nendpoints; i++) {
            pool_endpoint_t *ep = &net->endpoints[i];
            state_key_endpoint(ep->health.key, sizeof(ep->health.key), net->conf->name, ep->conf->id);
            state_key_stats(ep->health.stats_key, sizeof(ep->health.stats_key), net->conf->name, ep->conf->id,
                            pool->slot);
            state_key_per_method(ep->health.per_method_key, sizeof(ep->health.per_method_key), net->conf->name,
                                 ep->conf->id, pool->slot);
            size_t nmethods;
            policy_method_table(net->conf->chain, &nmethods);
            ep->health.per_method = sl_xcalloc(1, sizeof(*ep->health.per_method));
            ep->health.per_method->n = (uint32_t)((nmethods + 1) * STATE_MC_COUNT);
        }
    }
    if (pool->state != NULL) {
        load_slot(pool);
        pool_tick_refresh(pool);
    }
    for (size_t k = 0; k < pool->nnetworks; k++)
        pool_rank_update(&pool->networks[k], sl_shared_ms());
    if (pool->state == NULL)
        return;
    h2o_timeout_init(pool->loop, &pool->tick_timeout, pool->refresh_ms);
    pool->tick.cb = on_tick;
    h2o_timeout_link(pool->loop, &pool->tick_timeout, &pool->tick);
}

void pool_tick_dispose(pool_t *pool)
{
    for (size_t k = 0; k < pool->nnetworks; k++)
        for (size_t i = 0; pool->state != NULL && pool->tick.cb != NULL && i < pool->networks[k].nendpoints; i++)
        {
            if (pool->networks[k].endpoints[i].health.probing)
                pool->t.ops->cancel(&pool->networks[k].endpoints[i].health.probe);
            pool_chainid_dispose(&pool->networks[k].endpoints[i]);
            pool_chainprobe_dispose(&pool->networks[k].endpoints[i]);
            pool_wshead_dispose(&pool->networks[k].endpoints[i]);
            pool_wspass_dispose(&pool->networks[k].endpoints[i]);
        }
    if (pool->state != NULL && pool->tick.cb != NULL && pool->flush_ms != 0)
        flush_stats(pool);
    for (size_t k = 0; k < pool->nnetworks; k++)
        for (size_t i = 0; i < pool->networks[k].nendpoints; i++) {
            free(pool->networks[k].endpoints[i].health.per_method);
            pool->networks[k].endpoints[i].health.per_method = NULL;
        }
    if (pool->state == NULL || pool->tick.cb == NULL)
        return;
    if (h2o_timeout_is_linked(&pool->tick))
        h2o_timeout_unlink(&pool->tick);
    h2o_timeout_dispose(pool->loop, &pool->tick_timeout);
}
