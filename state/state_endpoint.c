/* state/state_endpoint.c: endpoint records and stats slots. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "state/state_cluster_int.h"
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

/* A breaker value that is no state (a corrupt or foreign record) becomes a
 * plain closed breaker, since now_ms; the fields of the other states go
 * with it. Returns 1 and the value in *bad if rec was repaired. */
static int breaker_repair(state_endpoint_rec_t *rec, uint64_t now_ms, unsigned *bad)
{
    if (rec->breaker < STATE_BREAKER_STATES)
        return 0;
    *bad = rec->breaker;
    rec->breaker = 0; /* closed */
    rec->since_ms = now_ms;
    rec->cooldown_ms = 0;
    rec->opened_at_ms = 0;
    rec->probe_pid = 0;
    rec->probe_at_ms = 0;
    return 1;
}

/* The state_error event of a repair; key is "<network>/<endpoint>". */
static void repair_event(state_event_t *ev, const char *key, unsigned bad, uint64_t now_ms)
{
    const char *slash = strchr(key, '/');
    char network[sizeof(ev->network)];
    snprintf(network, sizeof(network), "%.*s", slash != NULL ? (int)(slash - key) : (int)strlen(key), key);
    state_event_init(ev, STATE_EVENT_STATE_ERROR, network, slash != NULL ? slash + 1 : "", now_ms);
    ev->from = (uint8_t)bad;
    snprintf(ev->reason, sizeof(ev->reason), "breaker value %u in the shared record is no state: repaired to closed",
             bad);
}

sl_err_t state_endpoint_get(state_t *st, const char *key, state_endpoint_rec_t *rec)
{
    sl_err_t err = get_decoded(st, STATE_DB_ENDPOINTS, "endpoint", key, &state_endpoint_schema, rec, sizeof(*rec));
    unsigned bad;
    if (err == SL_OK)
        (void)breaker_repair(rec, 0, &bad); /* the write comes with the next update or the master's sweep */
    return err;
}

sl_err_t state_stats_get(state_t *st, const char *key, state_stats_rec_t *rec)
{
    return get_decoded(st, STATE_DB_STATS, "stats", key, &state_stats_schema, rec, sizeof(*rec));
}

/* Reads the current record inside txn: *exists = 0 when absent or corrupt.
 * A breaker value that is no state comes back repaired: returns 1 and the
 * value in *bad. */
static int read_for_update(state_t *st, MDB_txn *txn, const char *key, state_endpoint_rec_t *rec, int *exists,
                           unsigned *bad)
{
    MDB_val k = {strlen(key), (void *)key}, v;
    memset(rec, 0, sizeof(*rec));
    *exists = 0;
    if (mdb_get(txn, st->dbi[STATE_DB_ENDPOINTS], &k, &v) != MDB_SUCCESS)
        return 0;
    sl_err_t err = state_record_decode(&state_endpoint_schema, v.mv_data, v.mv_size, rec);
    if (err != SL_OK) {
        memset(rec, 0, sizeof(*rec));
        state_note_corrupt(st, "endpoint", key, err);
        return 0;
    }
    *exists = 1;
    return breaker_repair(rec, sl_shared_ms(), bad);
}

/* state_endpoint_update; *repaired = 1 if this call wrote a repair; *out
 * (if not NULL) gets the record as it is after the call. */
static sl_err_t endpoint_update(state_t *st, const char *key, state_update_fn fn, void *ctx, int *changed,
                                int *repaired, state_endpoint_rec_t *out)
{
    MDB_txn *txn;
    *changed = 0;
    *repaired = 0;
    int rc = mdb_txn_begin(st->env, NULL, 0, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("begin", rc);
    state_endpoint_rec_t rec;
    int exists;
    unsigned bad = 0;
    int repair = read_for_update(st, txn, key, &rec, &exists, &bad);
    state_endpoint_rec_t fixed = rec;
    state_event_t events[STATE_MAX_TXN_EVENTS + 1]; /* fn's, and the repair's */
    size_t nevents = 0;
    memset(events, 0, sizeof(events));
    int fn_changed = fn(ctx, &rec, exists, events, &nevents);
    if (!fn_changed && !repair) {
        mdb_txn_abort(txn);
        if (out != NULL)
            *out = fixed;
        return SL_OK;
    }
    if (!fn_changed) {
        rec = fixed; /* fn may have scribbled on it before saying no */
        nevents = 0;
    }
    if (nevents > STATE_MAX_TXN_EVENTS)
        nevents = STATE_MAX_TXN_EVENTS;
    if (repair)
        repair_event(&events[nevents++], key, bad, fixed.since_ms);
    sl_err_t err = state_txn_finish(st, txn, STATE_DB_ENDPOINTS, key, &state_endpoint_schema, &rec, events, nevents,
                                    "put endpoint");
    if (err != SL_OK)
        return err;
    *changed = fn_changed;
    *repaired = repair;
    if (out != NULL)
        *out = rec;
    if (repair)
        sl_log_warn("state: endpoint record \"%s\" had breaker value %u, which is no state; repaired to closed", key,
                    bad);
    return SL_OK;
}

sl_err_t state_endpoint_update(state_t *st, const char *key, state_update_fn fn, void *ctx, int *changed)
{
    int repaired;
    return endpoint_update(st, key, fn, ctx, changed, &repaired, NULL);
}

sl_err_t state_endpoint_update_local(state_t *st, const char *key, state_update_fn fn, void *ctx, int *changed,
                                     state_endpoint_rec_t *out)
{
    int repaired;
    return endpoint_update(st, key, fn, ctx, changed, &repaired, out);
}

void state_endpoint_transition(state_t *st, const char *key, state_update_fn fn, const void *ctx, size_t ctx_size,
                               state_transition_done_fn done, void *data)
{
    if (state_cluster_up(st->cluster)) {
        state_cluster_ep_transition(st->cluster, key, fn, ctx, ctx_size, done, data);
        return;
    }
    int changed = 0;
    state_endpoint_rec_t rec;
    memset(&rec, 0, sizeof(rec));
    /* fn may scribble on its context: a copy, as the cluster's path has */
    void *copy = sl_xmalloc(ctx_size ? ctx_size : 1);
    memcpy(copy, ctx, ctx_size);
    sl_err_t err = state_endpoint_update_local(st, key, fn, copy, &changed, &rec);
    if (err != SL_OK)
        changed = 0;
    else if (changed && st->cluster != NULL)
        state_cluster_ep_mark_dirty(st->cluster, key); /* decided alone: told to Redis on its return */
    free(copy);
    done(data, err, changed, &rec);
}

static int leave_as_is(void *ctx, state_endpoint_rec_t *rec, int exists, state_event_t *events, size_t *nevents)
{
    (void)ctx;
    (void)rec;
    (void)exists;
    (void)events;
    (void)nevents;
    return 0;
}

sl_err_t state_endpoints_repair(state_t *st, const char *const *keys, size_t n, size_t *repaired)
{
    *repaired = 0;
    MDB_txn *txn;
    int rc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("begin", rc);
    uint8_t *bad = sl_xcalloc(n ? n : 1, 1);
    size_t nbad = 0;
    for (size_t i = 0; i < n; i++) {
        MDB_val k = {strlen(keys[i]), (void *)keys[i]}, v;
        state_endpoint_rec_t rec;
        if (mdb_get(txn, st->dbi[STATE_DB_ENDPOINTS], &k, &v) == MDB_SUCCESS &&
            state_record_decode(&state_endpoint_schema, v.mv_data, v.mv_size, &rec) == SL_OK &&
            rec.breaker >= STATE_BREAKER_STATES) {
            bad[i] = 1;
            nbad++;
        }
    }
    mdb_txn_abort(txn);
    sl_err_t err = SL_OK;
    for (size_t i = 0; i < n && nbad > 0 && err == SL_OK; i++) {
        int changed, did = 0;
        if (bad[i] && (err = endpoint_update(st, keys[i], leave_as_is, NULL, &changed, &did, NULL)) == SL_OK)
            *repaired += (size_t)did; /* 0 when a worker's write repaired it first */
    }
    free(bad);
    return err;
}

/* Encodes record i of a batch into out. */


sl_err_t state_stats_put_batch(state_t *st, const char *const *keys, const void *recs, size_t n,
                               state_encode_nth_fn encode, const char *what)
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
    return state_stats_put_batch(st, keys, recs, n, encode_stats, "put stats");
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
        unsigned bad;
        (void)read_for_update(st, txn, keys[i], &recs[i], &exists, &bad); /* read repaired; not written here */
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
        /* with the cluster up, every host sees the same change: Redis says
         * which host reports it (the record here is written either way) */
        int tell = nevents > 0 && state_cluster_up(st->cluster);
        if (tell && state_cluster_level_report(st->cluster, network, level.level, events,
                                               nevents < STATE_MAX_TXN_EVENTS ? nevents : STATE_MAX_TXN_EVENTS))
            nevents = 0;
        err = state_txn_finish(st, txn, STATE_DB_META, key, &state_network_schema, &level, events,
                               nevents < STATE_MAX_TXN_EVENTS ? nevents : STATE_MAX_TXN_EVENTS, "put level");
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
    return state_stats_put_batch(st, keys, recs, n, encode_counters, "put counters");
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
