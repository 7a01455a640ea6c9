/* state/state_pressure.c: a network's pressure level and the workers' slots it
 * is computed from.
 *
 * The level lives in meta under "pressure/<network>" and changes only by
 * compare-and-set (pattern 1): whichever worker first sees a change due
 * writes it and its pressure_changed event in one transaction; the others
 * then read the new level. The inputs are pattern 2: each worker flushes its
 * own "pr/<network>/<slot>" and readers sum the slots. */
#include <stdlib.h>
#include <string.h>

#include "base/sl_log.h"
#include "state/state_int.h"
#include "state/state_key.h"

static void pressure_key(const char *network, char *key, size_t cap)
{
    state_key_pressure(key, cap, network);
}

sl_err_t state_pressure_get(state_t *st, const char *network, state_pressure_rec_t *rec)
{
    char key[96];
    if (st->rtxn == NULL)
        return SL_ERR_STATE;
    pressure_key(network, key, sizeof(key));
    return state_rec_get(st, st->rtxn, STATE_DB_META, "pressure", key, &state_pressure_schema, rec, sizeof(*rec));
}

sl_err_t state_pressure_update(state_t *st, const char *network, state_pressure_fn fn, void *ctx, int *changed)
{
    char key[96];
    MDB_txn *txn;
    *changed = 0;
    pressure_key(network, key, sizeof(key));
    int rc = mdb_txn_begin(st->env, NULL, 0, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("begin", rc);
    state_pressure_rec_t rec;
    int exists = state_rec_get(st, txn, STATE_DB_META, "pressure", key, &state_pressure_schema, &rec, sizeof(rec)) == SL_OK;
    state_event_t events[STATE_MAX_TXN_EVENTS];
    size_t nevents = 0;
    memset(events, 0, sizeof(events));
    if (!fn(ctx, &rec, exists, events, &nevents)) {
        mdb_txn_abort(txn);
        return SL_OK;
    }
    sl_err_t err = state_txn_finish(st, txn, STATE_DB_META, key, &state_pressure_schema, &rec, events,
                                    nevents < STATE_MAX_TXN_EVENTS ? nevents : STATE_MAX_TXN_EVENTS, "put pressure");
    if (err == SL_OK)
        *changed = 1;
    return err;
}

static sl_err_t encode_slot(const void *recs, size_t i, sl_buf_t *out)
{
    return state_record_encode(&state_pressure_slot_schema, ((const state_pressure_slot_rec_t *const *)recs)[i], out);
}

sl_err_t state_pressure_slots_put(state_t *st, const char *const *keys, const state_pressure_slot_rec_t *const *recs,
                                  size_t n)
{
    return state_stats_put_batch(st, keys, recs, n, encode_slot, "put pressure slot");
}

sl_err_t state_pressure_slot_get(state_t *st, const char *key, state_pressure_slot_rec_t *rec)
{
    if (st->rtxn == NULL)
        return SL_ERR_STATE;
    return state_rec_get(st, st->rtxn, STATE_DB_STATS, "pressure slot", key, &state_pressure_slot_schema, rec, sizeof(*rec));
}

static void add_slot(state_pressure_slot_rec_t *sum, const state_pressure_slot_rec_t *s, int fresh)
{
    sum->polls_merged += s->polls_merged;
    sum->calls_saved += s->calls_saved;
    sum->waits += s->waits;
    sum->logs_splits += s->logs_splits;
    sum->logs_subcalls += s->logs_subcalls;
    sum->logs_refused += s->logs_refused;
    if (!fresh)
        return; /* a worker that stopped flushing: its window and depth are not current */
    sum->depth += s->depth;
    for (size_t k = 0; k < STATE_SETTLE_BUCKETS; k++)
        sum->settle_hist[k] += s->settle_hist[k];
    sum->tries += s->tries;
    sum->refusals += s->refusals;
    for (size_t k = 0; k < STATE_PRESSURE_MAX_EP; k++) {
        sum->ep_calls_milli[k] += s->ep_calls_milli[k];
        sum->ep_billed_milli[k] += s->ep_billed_milli[k];
        sum->ep_throughput_milli[k] += s->ep_throughput_milli[k];
    }
    if (s->updated_ms > sum->updated_ms)
        sum->updated_ms = s->updated_ms;
}

void state_pressure_slots_sum(state_t *st, const char *network, unsigned nworkers, unsigned skip_slot, uint64_t now_ms,
                              uint64_t fresh_ms, state_pressure_slot_rec_t *sum)
{
    memset(sum, 0, sizeof(*sum));
    state_pressure_slot_rec_t s;
    for (unsigned slot = 1; slot <= nworkers; slot++) {
        char key[STATE_KEY_MAX];
        if (slot == skip_slot)
            continue;
        state_key_pressure_slot(key, sizeof(key), network, slot);
        if (state_pressure_slot_get(st, key, &s) != SL_OK)
            continue;
        add_slot(sum, &s, s.updated_ms <= now_ms + fresh_ms && now_ms < s.updated_ms + fresh_ms);
    }
}
