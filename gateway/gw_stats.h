/* gateway/gw_stats.h: client-request counters of one worker, by network,
 * method and outcome. Counted in memory on every answer; flushed to this
 * worker's slot in state/ every ~100 ms when they changed, so the admin
 * API and /metrics merge every worker's view. Counters survive a restart
 * (the slot is loaded back). */
#ifndef GW_STATS_H
#define GW_STATS_H

#include "config/cfg.h"
#include "gateway/gw_rpc.h"
#include "pool/pool.h"
#include "state/state.h"
#include "state/state_counters.h"

typedef struct gw_stats gw_stats_t;

gw_stats_t *gw_stats_create(const cfg_t *cfg, state_t *st, unsigned slot);
void gw_stats_destroy(gw_stats_t *s);
/* Counts every member of a finished request on network net_index. */
void gw_stats_count_request(gw_stats_t *s, size_t net_index, const gw_rpc_request_t *rpc, const pool_item_t *items,
                            const uint32_t *item_member, size_t nitems);
void gw_stats_flush(gw_stats_t *s);

/* The worker's own limits (connections, buffered bytes, refusals), by
 * STATE_SRV_*: flushed with the request counters to "srv/<slot>". Gauges
 * start at 0 with the worker. s may be NULL (then nothing is counted). */
void gw_stats_srv_add(gw_stats_t *s, state_srv_counter_t c, uint64_t n);
/* A network's subscription cost (state_sub_counter_t): n more calls, or
 * for STATE_SUB_LOGS_SHARED the gauge set (n > 0: shared). */
void gw_stats_sub_add(gw_stats_t *s, size_t net_index, state_sub_counter_t c, int64_t n);
void gw_stats_srv_set(gw_stats_t *s, state_srv_counter_t c, uint64_t value);

/* The WebSocket and subscription counters of network net_index, flushed to
 * "subs/<network>/<slot>" (state_counters.h, STATE_SUBS_*): entry i moves by
 * delta (a gauge goes down by a negative one). A counter (i a STATE_SRV_*
 * that is no gauge) is added to the worker's total too, as gw_stats_srv_add
 * does, so the totals are the networks' sum; a gauge's total stays the
 * caller's to set. s may be NULL. */
void gw_stats_net_add(gw_stats_t *s, size_t net_index, size_t i, int64_t delta);

/* An API key's counters (STATE_KEYC_*), by its name (never the secret):
 * n more of c, flushed to "key/<name>/<slot>"; STATE_KEYC_CALLS also sets
 * the key's last use (STATE_KEYC_LAST_USE_S, the wall-clock second). At
 * most GW_STATS_KEYS_MAX keys are counted per worker (the first ones seen);
 * past that a key's calls and refusals are added to "keyover/<slot>"
 * instead (sluice_key_uncounted_total), its spend is not counted. s or name
 * NULL: nothing is counted. */
#define GW_STATS_KEYS_MAX 256
void gw_stats_key_add(gw_stats_t *s, const char *name, state_key_counter_t c, uint64_t n);

#endif
