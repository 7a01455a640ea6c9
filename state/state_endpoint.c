/* state/state_endpoint.c: endpoint records and stats slots. */
#include <stdlib.h>
#include <string.h>

#include "base/sl_log.h"
#include "state/state_int.h"
#include "state/state_key.h"

static sl_err_t get_decoded(state_t *st, int db, const char *dbname, const char *key, const state_schema_t *schema,
                            void *rec, size_t recsize)
{
    if (st->rtxn == NULL)
        return SL_ERR_STATE;
    MDB_val k = {strlen(key), (void *)key}, v;
    int rc = mdb_get(st->rtxn, st->dbi[db], &k, &v);
    if (rc != MDB_SUCCESS)
        return rc == MDB_NOTFOUND ? SL_ERR_NOT_FOUND : state_lmdb_err("get", rc);
    memset(rec, 0, recsize);
    sl_err_t err = state_record_decode(schema, v.mv_data, v.mv_size, rec);
    if (err != SL_OK) {
        memset(rec, 0, recsize);
        state_note_corrupt(st, dbname, key, err);
    }
    return err;
}

sl_err_t state_endpoint_get(state_t *st, const char *key, state_endpoint_rec_t *rec)
{
    return get_decoded(st, STATE_DB_ENDPOINTS, "endpoint", key, &state_endpoint_schema, rec, sizeof(*rec));
}

sl_err_t state_stats_get(state_t *st, const char *key, state_stats_rec_t *rec)
{
    return get_decoded(st, STATE_DB_STATS, "stats", key, &state_stats_schema, rec, sizeof(*rec));
}

/* Reads the current record inside txn: *exists = 0 when absent or corrupt. */
static void read_for_update(state_t *st, MDB_txn *txn, const char *key, state_endpoint_rec_t *rec, int *exists)
{
    MDB_val k = {strlen(key), (void *)key}, v;
    memset(rec, 0, sizeof(*rec));
    *exists = 0;
    if (mdb_get(txn, st->dbi[STATE_DB_ENDPOINTS], &k, &v) != MDB_SUCCESS)
        return;
    sl_err_t err = state_record_decode(&state_endpoint_schema, v.mv_data, v.mv_size, rec);
    if (err != SL_OK) {
        memset(rec, 0, sizeof(*rec));
        state_note_corrupt(st, "endpoint", key, err);
        return;
    }
    *exists = 1;
}

sl_err_t state_endpoint_update(state_t *st, const char *key, state_update_fn fn, void *ctx, int *changed)
{
    MDB_txn *txn;
    *changed = 0;
    int rc = mdb_txn_begin(st->env, NULL, 0, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("begin", rc);
    state_endpoint_rec_t rec;
    int exists;
    read_for_update(st, txn, key, &rec, &exists);
    state_event_t events[STATE_MAX_TXN_EVENTS];
    size_t nevents = 0;
    memset(events, 0, sizeof(events));
    if (!fn(ctx, &rec, exists, events, &nevents)) {
        mdb_txn_abort(txn);
        return SL_OK;
    }
    sl_buf_t buf = SL_BUF_INIT;
    sl_err_t err = state_record_encode(&state_endpoint_schema, &rec, &buf);
    MDB_val k = {strlen(key), (void *)key}, v = {buf.len, buf.base};
    if (err == SL_OK && (rc = mdb_put(txn, st->dbi[STATE_DB_ENDPOINTS], &k, &v, 0)) != MDB_SUCCESS)
        err = state_lmdb_err("put endpoint", rc);
    for (size_t i = 0; err == SL_OK && i < nevents && i < STATE_MAX_TXN_EVENTS; i++)
        if ((rc = state_event_put(st, txn, &events[i])) != MDB_SUCCESS)
            err = state_lmdb_err("append event", rc);
    sl_buf_dispose(&buf);
    if (err != SL_OK) {
        mdb_txn_abort(txn);
        return err;
    }
    if ((err = state_lmdb_err("commit", mdb_txn_commit(txn))) == SL_OK)
        *changed = 1;
    return err;
}

/* Encodes record i of a batch into out. */
typedef sl_err_t (*encode_nth_fn)(const void *recs, size_t i, sl_buf_t *out);

/* Writes a batch of stats-database records in one write transaction: all of
 * them or none. */
static sl_err_t put_stats_batch(state_t *st, const char *const *keys, const void *recs, size_t n, encode_nth_fn encode,
                                const char *what)
{
    MDB_txn *txn;
    int rc = mdb_txn_begin(st->env, NULL, 0, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("begin", rc);
    sl_buf_t buf = SL_BUF_INIT;
    sl_err_t err = SL_OK;
    for (size_t i = 0; i < n && err == SL_OK; i++) {
        sl_buf_reset(&buf);
        err = encode(recs, i, &buf);
        MDB_val k = {strlen(keys[i]), (void *)keys[i]}, v = {buf.len, buf.base};
        if (err == SL_OK && (rc = mdb_put(txn, st->dbi[STATE_DB_STATS], &k, &v, 0)) != MDB_SUCCESS)
            err = state_lmdb_err(what, rc);
    }
    sl_buf_dispose(&buf);
    if (err != SL_OK) {
        mdb_txn_abort(txn);
        return err;
    }
    return state_lmdb_err("commit", mdb_txn_commit(txn));
}

static sl_err_t encode_stats(const void *recs, size_t i, sl_buf_t *out)
{
    return state_record_encode(&state_stats_schema, &((const state_stats_rec_t *)recs)[i], out);
}

sl_err_t state_stats_put(state_t *st, const char *const *keys, const state_stats_rec_t *recs, size_t n)
{
    return put_stats_batch(st, keys, recs, n, encode_stats, "put stats");
}

sl_err_t state_network_update(state_t *st, const char *network, const char *const *keys, size_t n,
                              state_network_fn fn, void *ctx)
{
    MDB_txn *txn;
    int rc = mdb_txn_begin(st->env, NULL, 0, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("begin", rc);
    state_endpoint_rec_t *recs = sl_xcalloc(n ? n : 1, sizeof(*recs));
    for (size_t i = 0; i < n; i++) {
        int exists;
        read_for_update(st, txn, keys[i], &recs[i], &exists);
    }
    char key[STATE_KEY_MAX];
    state_key_level(key, sizeof(key), network);
    MDB_val k = {strlen(key), key}, v;
    state_network_rec_t level = {0, 0}, stored;
    int exists = 0;
    if (mdb_get(txn, st->dbi[STATE_DB_META], &k, &v) == MDB_SUCCESS) {
        sl_err_t derr = state_record_decode(&state_network_schema, v.mv_data, v.mv_size, &stored);
        if (derr == SL_OK) {
            level = stored;
            exists = 1;
        } else {
            state_note_corrupt(st, "network level", key, derr);
        }
    }
    state_event_t events[STATE_MAX_TXN_EVENTS];
    size_t nevents = 0;
    memset(events, 0, sizeof(events));
    sl_err_t err = SL_OK;
    if (fn(ctx, recs, n, &level, exists, events, &nevents)) {
        sl_buf_t buf = SL_BUF_INIT;
        err = state_record_encode(&state_network_schema, &level, &buf);
        v = (MDB_val){buf.len, buf.base};
        if (err == SL_OK && (rc = mdb_put(txn, st->dbi[STATE_DB_META], &k, &v, 0)) != MDB_SUCCESS)
            err = state_lmdb_err("put level", rc);
        for (size_t i = 0; err == SL_OK && i < nevents && i < STATE_MAX_TXN_EVENTS; i++)
            if ((rc = state_event_put(st, txn, &events[i])) != MDB_SUCCESS)
                err = state_lmdb_err("append event", rc);
        sl_buf_dispose(&buf);
        if (err == SL_OK)
            err = state_lmdb_err("commit", mdb_txn_commit(txn));
        else
            mdb_txn_abort(txn);
    } else {
        mdb_txn_abort(txn);
    }
    free(recs);
    return err;
}

static sl_err_t encode_counters(const void *recs, size_t i, sl_buf_t *out)
{
    return state_counters_encode(((const state_counters_rec_t *const *)recs)[i], out);
}

sl_err_t state_counters_put(state_t *st, const char *const *keys, const state_counters_rec_t *const *recs, size_t n)
{
    return put_stats_batch(st, keys, recs, n, encode_counters, "put counters");
}

sl_err_t state_counters_get(state_t *st, const char *key, state_counters_rec_t *rec)
{
    if (st->rtxn == NULL)
        return SL_ERR_STATE;
    MDB_val k = {strlen(key), (void *)key}, v;
    int rc = mdb_get(st->rtxn, st->dbi[STATE_DB_STATS], &k, &v);
    if (rc != MDB_SUCCESS)
        return rc == MDB_NOTFOUND ? SL_ERR_NOT_FOUND : state_lmdb_err("get", rc);
    sl_err_t err = state_counters_decode(v.mv_data, v.mv_size, rec);
    if (err != SL_OK) {
        rec->n = 0;
        state_note_corrupt(st, "counters", key, err);
    }
    return err;
}

sl_err_t state_pin_put(state_t *st, const char *key, const state_pin_rec_t *rec)
{
    sl_buf_t buf = SL_BUF_INIT;
    sl_err_t err = state_record_encode(&state_pin_schema, rec, &buf);
    if (err == SL_OK)
        err = state_raw_put(st, "pins", key, strlen(key), buf.base, buf.len);
    sl_buf_dispose(&buf);
    return err;
}

sl_err_t state_pin_get(state_t *st, const char *key, uint64_t now_ms, state_pin_rec_t *rec)
{
    MDB_txn *txn;
    int rc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("begin", rc);
    MDB_val k = {strlen(key), (void *)key}, v;
    sl_err_t err = SL_ERR_NOT_FOUND;
    if (mdb_get(txn, st->dbi[STATE_DB_PINS], &k, &v) == MDB_SUCCESS) {
        err = state_record_decode(&state_pin_schema, v.mv_data, v.mv_size, rec);
        if (err != SL_OK)
            state_note_corrupt(st, "pin", key, err);
        else if (rec->expires_ms <= now_ms)
            err = SL_ERR_NOT_FOUND;
    }
    mdb_txn_abort(txn);
    return err;
}

static int pin_live(const MDB_val *v, uint64_t now_ms)
{
    state_pin_rec_t pin;
    return state_record_decode(&state_pin_schema, v->mv_data, v->mv_size, &pin) == SL_OK && pin.expires_ms > now_ms;
}

sl_err_t state_pins_purge(state_t *st, uint64_t now_ms, size_t *removed)
{
    return state_purge(st, STATE_DB_PINS, pin_live, now_ms, removed);
}
