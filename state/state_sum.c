#include "state/state_sum.h"

#include <stdlib.h>
#include <string.h>

#include "base/sl_buf.h"
#include "state/state_key.h"

static void add_slot(state_stats_sum_t *out, const state_stats_rec_t *s, uint64_t now_ms, uint64_t fresh_ms,
                     double *ewma_weighted)
{
    state_stats_rec_t *t = &out->total;
    t->attempts += s->attempts;
    for (size_t k = 0; k < STATE_OUTCOME_COUNT; k++)
        t->outcomes[k] += s->outcomes[k];
    t->failovers += s->failovers;
    for (size_t k = 0; k < STATE_LAT_BUCKETS; k++)
        t->lat_hist[k] += s->lat_hist[k];
    t->lat_sum_us += s->lat_sum_us;
    t->credits_spent += s->credits_spent;
    t->hedges_sent += s->hedges_sent;
    t->hedges_won += s->hedges_won;
    t->hedges_cancelled += s->hedges_cancelled;
    t->consensus_agreed += s->consensus_agreed;
    t->consensus_none += s->consensus_none;
    t->consensus_disagreed += s->consensus_disagreed;
    t->coalesced += s->coalesced;
    t->max_inflight_seen += s->max_inflight_seen;
    if (now_ms >= s->updated_ms && now_ms - s->updated_ms < fresh_ms)
        out->inflight += s->inflight;
    *ewma_weighted += (double)s->ewma_us * (double)s->attempts;
    if (!out->has_freshest || s->updated_ms > out->freshest.updated_ms) {
        out->freshest = *s;
        out->has_freshest = 1;
    }
    out->slots++;
}

void state_stats_sum(state_t *st, const char *network, const char *endpoint, unsigned nslots, uint64_t now_ms,
                     uint64_t fresh_ms, state_stats_sum_t *out)
{
    memset(out, 0, sizeof(*out));
    double ewma_weighted = 0;
    for (unsigned slot = 1; slot <= nslots; slot++) {
        char key[STATE_KEY_MAX];
        state_stats_rec_t s;
        state_key_stats(key, sizeof(key), network, endpoint, slot);
        if (state_stats_get(st, key, &s) == SL_OK)
            add_slot(out, &s, now_ms, fresh_ms, &ewma_weighted);
    }
    out->ewma_us = out->total.attempts ? ewma_weighted / (double)out->total.attempts : 0;
}

void state_counters_sum(state_t *st, state_counters_kind_t kind, const char *network, const char *endpoint,
                        unsigned nslots, uint32_t want, state_counters_rec_t *sum)
{
    if (want > STATE_COUNTERS_MAX)
        want = STATE_COUNTERS_MAX;
    memset(sum->v, 0, want * sizeof(sum->v[0]));
    sum->n = want;
    state_counters_rec_t *rec = sl_xmalloc(sizeof(*rec)); /* ~32 KB: not on the stack */
    for (unsigned slot = 1; slot <= nslots; slot++) {
        char key[STATE_KEY_MAX];
        if (kind == STATE_COUNTERS_PER_METHOD)
            state_key_per_method(key, sizeof(key), network, endpoint, slot);
        else if (kind == STATE_COUNTERS_CACHE)
            state_key_cache(key, sizeof(key), network, slot);
        else if (kind == STATE_COUNTERS_SUBS)
            state_key_subs(key, sizeof(key), network, slot);
        else
            state_key_requests(key, sizeof(key), network, slot);
        if (state_counters_get(st, key, rec) == SL_OK && rec->n == want)
            for (uint32_t k = 0; k < want; k++)
                sum->v[k] += rec->v[k];
    }
    free(rec);
}
