/* state/state_cluster_mode.c: the host's cluster mode, one LMDB record
 * ("cluster" in meta) that every worker moves by compare-and-set, so that a
 * host reports each fall and return of Redis once however many of its
 * workers saw it. */
#include <string.h>
#include <unistd.h>

#include "base/sl_log.h"
#include "state/state_cluster_int.h"
#include "state/state_int.h"

#define F(struct_, name_, type_, size_) {#name_, type_, offsetof(struct_, name_), size_}

static const state_field_t mode_fields[] = {
    F(state_cluster_mode_rec_t, mode, STATE_F_U8, 1),
    F(state_cluster_mode_rec_t, since_ms, STATE_F_U64, 1),
    F(state_cluster_mode_rec_t, hosts, STATE_F_U32, 1),
};

const state_schema_t state_cluster_mode_schema = {"cluster mode", 1, mode_fields,
                                                  sizeof(mode_fields) / sizeof(mode_fields[0])};

static const MDB_val mode_key = {7, "cluster"};

const char *state_cluster_mode_name(state_cluster_mode_t m)
{
    static const char *const names[] = {"off", "starting", "shared", "degraded"};
    return (unsigned)m < sizeof(names) / sizeof(names[0]) ? names[m] : "unknown";
}

static int read_mode(state_t *st, MDB_txn *txn, state_cluster_mode_rec_t *rec)
{
    MDB_val k = mode_key, v;
    memset(rec, 0, sizeof(*rec));
    if (mdb_get(txn, st->dbi[STATE_DB_META], &k, &v) != MDB_SUCCESS)
        return 0;
    if (state_record_decode(&state_cluster_mode_schema, v.mv_data, v.mv_size, rec) != SL_OK) {
        memset(rec, 0, sizeof(*rec));
        state_note_corrupt(st, "cluster mode", "cluster", SL_ERR_CORRUPT);
        return 0;
    }
    return 1;
}

static int write_mode(state_t *st, MDB_txn *txn, const state_cluster_mode_rec_t *rec)
{
    sl_buf_t buf = SL_BUF_INIT;
    int rc = MDB_INVALID;
    if (state_record_encode(&state_cluster_mode_schema, rec, &buf) == SL_OK) {
        MDB_val k = mode_key, v = {buf.len, buf.base};
        rc = mdb_put(txn, st->dbi[STATE_DB_META], &k, &v, 0);
    }
    sl_buf_dispose(&buf);
    return rc;
}

sl_err_t state_cluster_mode_reset(state_t *st, uint64_t now_ms)
{
    MDB_txn *txn;
    int rc = mdb_txn_begin(st->env, NULL, 0, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("begin", rc);
    /* the hosts last seen stay: a host that starts without Redis divides
     * its limits by them, as it did before the restart */
    state_cluster_mode_rec_t was, rec = {STATE_CLUSTER_STARTING, now_ms, 1};
    if (read_mode(st, txn, &was) && was.hosts > 1)
        rec.hosts = was.hosts;
    if ((rc = write_mode(st, txn, &rec)) != MDB_SUCCESS) {
        mdb_txn_abort(txn);
        return state_lmdb_err("put cluster mode", rc);
    }
    return state_lmdb_err("commit", mdb_txn_commit(txn));
}

state_cluster_mode_rec_t state_cluster_mode_get(state_t *st)
{
    state_cluster_mode_rec_t rec;
    MDB_txn *txn;
    memset(&rec, 0, sizeof(rec));
    if (mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn) != MDB_SUCCESS)
        return rec;
    read_mode(st, txn, &rec);
    mdb_txn_abort(txn);
    return rec;
}

/* The event a move makes, if any: a fall from shared (or from the start) is
 * cluster_degraded, a return from degraded is cluster_restored. */
static int move_event(state_cluster_mode_t from, state_cluster_mode_t to, state_event_kind_t *kind)
{
    if (to == STATE_CLUSTER_DEGRADED && from != STATE_CLUSTER_DEGRADED) {
        *kind = STATE_EVENT_CLUSTER_DEGRADED;
        return 1;
    }
    if (to == STATE_CLUSTER_SHARED && from == STATE_CLUSTER_DEGRADED) {
        *kind = STATE_EVENT_CLUSTER_RESTORED;
        return 1;
    }
    return 0;
}

int state_cluster_mode_move(state_t *st, state_cluster_mode_t to, uint32_t hosts, const char *why, uint64_t now_ms)
{
    MDB_txn *txn;
    if (mdb_txn_begin(st->env, NULL, 0, &txn) != MDB_SUCCESS)
        return 0;
    state_cluster_mode_rec_t before, rec;
    read_mode(st, txn, &before);
    state_cluster_mode_t from = (state_cluster_mode_t)before.mode;
    hosts = hosts ? hosts : 1;
    if (from == to && before.hosts == hosts) {
        mdb_txn_abort(txn);
        return 0;
    }
    rec = (state_cluster_mode_rec_t){(uint8_t)to, from == to ? before.since_ms : now_ms, hosts};
    int rc = write_mode(st, txn, &rec);
    state_event_kind_t kind;
    if (rc == MDB_SUCCESS && move_event(from, to, &kind)) {
        state_event_t e;
        state_event_init(&e, kind, NULL, NULL, now_ms);
        e.count = hosts;
        if (kind == STATE_EVENT_CLUSTER_RESTORED) {
            e.duration_ms = now_ms > before.since_ms ? now_ms - before.since_ms : 0;
            snprintf(e.reason, sizeof(e.reason), "Redis answers again after %llu ms: records are shared by %u host(s)",
                     (unsigned long long)e.duration_ms, hosts);
        } else {
            snprintf(e.reason, sizeof(e.reason), "%s; this host decides alone", why ? why : "Redis unreachable");
        }
        rc = state_event_put(st, txn, &e);
    }
    if (rc != MDB_SUCCESS) {
        mdb_txn_abort(txn);
        return 0;
    }
    return mdb_txn_commit(txn) == MDB_SUCCESS;
}
