#include "server/srv_housekeep.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/sl_buf.h"
#include "base/sl_log.h"
#include "base/sl_time.h"
#include "pool/pool.h"
#include "state/state_key.h"
#include "state/state_resume.h"
#include "state/state_sum.h"

#define SYNC_EVERY_MS 1000
#define TRIM_EVERY_MS 10000
#define FAILOVER_EVERY_MS 10000

typedef struct counted_endpoint {
    const pool_network_conf_t *net;
    const pool_endpoint_conf_t *ep;
    uint64_t reported;            /* failovers already turned into events */
} counted_endpoint_t;

struct srv_housekeep {
    const cfg_t *cfg;
    state_t *st;
    unsigned nslots;
    uint64_t last_sync_ms, last_trim_ms, last_failover_ms;
    counted_endpoint_t *eps;
    size_t neps;
    char **keys;                  /* "<network>/<endpoint>" of eps[i]: the records to repair */
};

/* Sum of one endpoint's failover counters over every worker slot. */
static uint64_t failovers(srv_housekeep_t *hk, const counted_endpoint_t *c)
{
    state_stats_sum_t sum;
    state_stats_sum(hk->st, c->net->name, c->ep->id, hk->nslots, 0, 0, &sum);
    return sum.total.failovers;
}

static void read_failovers(srv_housekeep_t *hk, uint64_t *totals)
{
    if (state_read_begin(hk->st) != SL_OK) {
        for (size_t i = 0; i < hk->neps; i++)
            totals[i] = hk->eps[i].reported;
        return;
    }
    for (size_t i = 0; i < hk->neps; i++)
        totals[i] = failovers(hk, &hk->eps[i]);
    state_read_end(hk->st);
}

static void report_failovers(srv_housekeep_t *hk, uint64_t interval_ms)
{
    uint64_t *totals = sl_xcalloc(hk->neps ? hk->neps : 1, sizeof(*totals));
    read_failovers(hk, totals);
    for (size_t i = 0; i < hk->neps; i++) {
        counted_endpoint_t *c = &hk->eps[i];
        if (totals[i] <= c->reported) {
            c->reported = totals[i]; /* a slot was reset: start again from here */
            continue;
        }
        state_event_t ev;
        state_event_init(&ev, STATE_EVENT_FAILOVER, c->net->name, c->ep->id, sl_shared_ms());
        ev.count = totals[i] - c->reported;
        ev.duration_ms = interval_ms;
        snprintf(ev.reason, sizeof(ev.reason), "%llu call(s) moved on from this endpoint in the last %llu s",
                 (unsigned long long)ev.count, (unsigned long long)(interval_ms / 1000));
        if (state_event_append(hk->st, &ev) == SL_OK)
            c->reported = totals[i];
    }
    free(totals);
}

typedef struct episode_ctx {
    const counted_endpoint_t *c;
    uint64_t now;
} episode_ctx_t;

static int close_episode(void *arg, state_endpoint_rec_t *rec, int exists, state_event_t *events, size_t *nevents)
{
    episode_ctx_t *x = arg;
    if (!exists || !pool_health_rate_episode_end(x->c->net->name, x->c->ep->id, rec, x->now, &events[0]))
        return 0;
    *nevents = 1;
    return 1;
}

/* Rate-limit episodes that went quiet get their end event here, once (the
 * write is a compare-and-set: a worker that marks the endpoint again at the
 * same moment reports it instead). A read first: no write while none is due. */
static void end_rate_episodes(srv_housekeep_t *hk)
{
    uint64_t now = sl_shared_ms();
    uint8_t *due = sl_xcalloc(hk->neps ? hk->neps : 1, 1);
    if (state_read_begin(hk->st) == SL_OK) {
        for (size_t i = 0; i < hk->neps; i++) {
            state_endpoint_rec_t rec;
            state_event_t probe;
            due[i] = state_endpoint_get(hk->st, hk->keys[i], &rec) == SL_OK &&
                     pool_health_rate_episode_end(hk->eps[i].net->name, hk->eps[i].ep->id, &rec, now, &probe);
        }
        state_read_end(hk->st);
    }
    for (size_t i = 0; i < hk->neps; i++) {
        if (!due[i])
            continue;
        episode_ctx_t x = {&hk->eps[i], now};
        int changed = 0;
        if (state_endpoint_update_local(hk->st, hk->keys[i], close_episode, &x, &changed, NULL) != SL_OK)
            sl_log_warn("state: could not record the end of %s's rate-limit episode", hk->keys[i]);
    }
    free(due);
}

srv_housekeep_t *srv_housekeep_create(const cfg_t *cfg, state_t *st, unsigned nslots)
{
    srv_housekeep_t *hk = sl_xcalloc(1, sizeof(*hk));
    hk->cfg = cfg;
    hk->st = st;
    hk->nslots = nslots;
    for (size_t n = 0; n < cfg->nnetworks; n++)
        hk->neps += cfg->networks[n].nendpoints;
    hk->eps = sl_xcalloc(hk->neps ? hk->neps : 1, sizeof(*hk->eps));
    size_t k = 0;
    for (size_t n = 0; n < cfg->nnetworks; n++)
        for (size_t e = 0; e < cfg->networks[n].nendpoints; e++)
            hk->eps[k++] = (counted_endpoint_t){&cfg->networks[n], &cfg->networks[n].endpoints[e], 0};
    hk->keys = sl_xcalloc(hk->neps ? hk->neps : 1, sizeof(*hk->keys));
    for (size_t i = 0; i < hk->neps; i++) {
        char key[STATE_KEY_MAX];
        state_key_endpoint(key, sizeof(key), hk->eps[i].net->name, hk->eps[i].ep->id);
        hk->keys[i] = sl_xstrdup(key);
    }
    /* what the counters say now was reported (or lost) by an earlier run */
    uint64_t *totals = sl_xcalloc(hk->neps ? hk->neps : 1, sizeof(*totals));
    read_failovers(hk, totals);
    for (size_t i = 0; i < hk->neps; i++)
        hk->eps[i].reported = totals[i];
    free(totals);
    uint64_t now = sl_now_ms();
    hk->last_sync_ms = hk->last_trim_ms = hk->last_failover_ms = now;
    int cleared = 0;
    if (state_check_readers(st, &cleared) == SL_OK && cleared > 0)
        sl_log_warn("state: cleared %d stale reader slot(s) left by dead processes", cleared);
    return hk;
}

void srv_housekeep_carry(srv_housekeep_t *to, const srv_housekeep_t *from)
{
    if (from == NULL)
        return;
    for (size_t i = 0; i < to->neps; i++) {
        counted_endpoint_t *c = &to->eps[i];
        for (size_t k = 0; k < from->neps; k++) {
            const counted_endpoint_t *o = &from->eps[k];
            if (strcmp(o->net->name, c->net->name) == 0 && strcmp(o->ep->id, c->ep->id) == 0 && o->reported < c->reported)
                c->reported = o->reported;
        }
    }
    to->last_sync_ms = from->last_sync_ms;
    to->last_trim_ms = from->last_trim_ms;
    to->last_failover_ms = from->last_failover_ms;
}

void srv_housekeep_destroy(srv_housekeep_t *hk)
{
    if (hk == NULL)
        return;
    if (state_sync(hk->st) != SL_OK)
        sl_log_warn("state: final sync failed");
    for (size_t i = 0; i < hk->neps; i++)
        free(hk->keys[i]);
    free(hk->keys);
    free(hk->eps);
    free(hk);
}

void srv_housekeep_tick(srv_housekeep_t *hk, uint64_t now)
{
    if (now - hk->last_sync_ms >= SYNC_EVERY_MS) {
        int cleared = 0;
        if (state_clock_note(hk->st) != SL_OK)
            sl_log_debug("state: could not record the shared time");
        if (state_sync(hk->st) != SL_OK)
            sl_log_warn("state: sync to disk failed");
        if (state_check_readers(hk->st, &cleared) == SL_OK && cleared > 0)
            sl_log_warn("state: cleared %d stale reader slot(s) left by dead processes", cleared);
        /* a breaker value that is no state: repaired here even if no worker writes the record */
        size_t repaired = 0;
        if (state_endpoints_repair(hk->st, (const char *const *)hk->keys, hk->neps, &repaired) != SL_OK)
            sl_log_warn("state: could not check the endpoint records for corrupt breaker values");
        end_rate_episodes(hk);
        hk->last_sync_ms = now;
    }
    if (now - hk->last_failover_ms >= FAILOVER_EVERY_MS) {
        report_failovers(hk, now - hk->last_failover_ms);
        hk->last_failover_ms = now;
    }
    if (now - hk->last_trim_ms >= TRIM_EVERY_MS) {
        size_t removed = 0;
        if (state_trim_events(hk->st, sl_shared_ms(), &removed) == SL_OK && removed > 0)
            sl_log_info("state: retention removed %zu old event(s)", removed);
        size_t cells = 0;
        if (state_cells_purge(hk->st, sl_shared_us(), &cells) == SL_OK && cells > 0)
            sl_log_debug("state: purged %zu idle rate-limit cell(s)", cells);
        size_t pins = 0;
        if (state_pins_purge(hk->st, sl_shared_ms(), &pins) == SL_OK && pins > 0)
            sl_log_debug("state: purged %zu expired transaction pin(s)", pins);
        size_t held = 0;
        if (state_resume_purge(hk->st, sl_shared_ms(), &held) == SL_OK && held > 0)
            sl_log_debug("state: purged %zu held subscription(s) past server.ws_resume_s", held);
        if (state_make_room(hk->st, 0) != SL_OK)
            sl_log_warn("state: the map is over %d%% full and events are not what fills it (raise state.map_size_mb)",
                        STATE_FULL_PCT);
        hk->last_trim_ms = now;
    }
}

void srv_housekeep_worker_restarted(srv_housekeep_t *hk, unsigned index, int pid, const char *how)
{
    int cleared = 0;
    if (state_check_readers(hk->st, &cleared) == SL_OK && cleared > 0)
        sl_log_info("state: cleared %d reader slot(s) of worker %u", cleared, index);
    state_event_t ev;
    state_event_init(&ev, STATE_EVENT_WORKER_RESTARTED, NULL, NULL, sl_shared_ms());
    ev.pid = (uint32_t)pid; /* the worker that went, not the master that saw it */
    ev.count = index;
    snprintf(ev.reason, sizeof(ev.reason), "worker %u (pid %d) %s", index, pid, how);
    if (state_event_append(hk->st, &ev) != SL_OK)
        sl_log_warn("state: could not record the worker_restarted event");
}
