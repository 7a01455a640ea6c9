/* state/state_cluster_mode.c: the host's cluster mode, one LMDB record
 * ("cluster" in meta) that every worker moves by compare-and-set, so that a
 * host reports each fall and return of Redis once however many of its
 * workers saw it. */
#include <string.h>
#include <unistd.h>

#include "base/sl_log.h"
#include "state/state_cluster_int.h"
#include "state/state_int.h"

#define F(struct_, name_, type_, size_) {#name_, type_, offsetof(struct_, name_), size_, 0}
#define F2(struct_, name_, type_) {#name_, type_, offsetof(struct_, name_), 1, 2}

static const state_field_t mode_fields[] = {
    F(state_cluster_mode_rec_t, mode, STATE_F_U8, 1),
    F(state_cluster_mode_rec_t, since_ms, STATE_F_U64, 1),
    F(state_cluster_mode_rec_t, hosts, STATE_F_U32, 1),
    F2(state_cluster_mode_rec_t, reported, STATE_F_U8),
    F2(state_cluster_mode_rec_t, event_ms, STATE_F_U64),
    F2(state_cluster_mode_rec_t, flaps, STATE_F_U32),
    F2(state_cluster_mode_rec_t, flap_ms, STATE_F_U64),
};

const state_schema_t state_cluster_mode_schema = {"cluster mode", 2, mode_fields,
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
    return state_rec_put(st, txn, STATE_DB_META, mode_key.mv_data, &state_cluster_mode_schema, rec);
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

/* A fall: its event, unless one was logged less than a minute ago (then it
 * is counted, and told by the next event). 1 if e is due. */
static int on_fall(state_cluster_mode_rec_t *rec, const char *why, uint64_t now_ms, state_event_t *e)
{
    if (rec->event_ms != 0 && now_ms - rec->event_ms < STATE_CLUSTER_EVENT_EVERY_MS) {
        rec->flaps++;
        rec->reported = 0;
        return 0;
    }
    state_event_init(e, STATE_EVENT_CLUSTER_DEGRADED, NULL, NULL, now_ms);
    e->count = rec->flaps + 1;
    e->duration_ms = rec->flap_ms;
    if (rec->flaps > 0)
        snprintf(e->reason, sizeof(e->reason),
                 "%.140s; this host decides alone (and %u earlier fall(s) within a minute, %llu ms degraded in all)",
                 why ? why : "Redis unreachable", rec->flaps, (unsigned long long)rec->flap_ms);
    else
        snprintf(e->reason, sizeof(e->reason), "%.140s; this host decides alone", why ? why : "Redis unreachable");
    rec->reported = 1;
    rec->event_ms = now_ms;
    rec->flaps = 0;
    rec->flap_ms = 0;
    return 1;
}

/* A return: its event if the fall had one; else only its length is kept. */
static int on_return(state_cluster_mode_rec_t *rec, uint64_t since_ms, uint64_t now_ms, state_event_t *e)
{
    uint64_t took = now_ms > since_ms ? now_ms - since_ms : 0;
    if (!rec->reported) {
        rec->flap_ms += took;
        return 0;
    }
    state_event_init(e, STATE_EVENT_CLUSTER_RESTORED, NULL, NULL, now_ms);
    e->count = 1;
    e->duration_ms = took;
    snprintf(e->reason, sizeof(e->reason), "Redis answers again after %llu ms: records are shared by %u host(s)",
             (unsigned long long)took, rec->hosts);
    rec->reported = 0;
    return 1;
}

/* Writes rec and, if due, its event; commits. 1 if committed. */
static int put_mode(state_t *st, MDB_txn *txn, const state_cluster_mode_rec_t *rec, state_event_t *e)
{
    int rc = write_mode(st, txn, rec);
    if (rc == MDB_SUCCESS)
        rc = state_events_put(st, txn, e, e != NULL);
    return state_txn_end(txn, rc) == MDB_SUCCESS;
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
    rec = before;
    rec.mode = (uint8_t)to;
    rec.hosts = hosts;
    rec.since_ms = from == to ? before.since_ms : now_ms;
    state_event_t e;
    int due = 0;
    if (to == STATE_CLUSTER_DEGRADED && from != STATE_CLUSTER_DEGRADED)
        due = on_fall(&rec, why, now_ms, &e);
    else if (to == STATE_CLUSTER_SHARED && from == STATE_CLUSTER_DEGRADED)
        due = on_return(&rec, before.since_ms, now_ms, &e);
    return put_mode(st, txn, &rec, due ? &e : NULL);
}

void state_cluster_mode_tick(state_t *st, uint64_t now_ms)
{
    state_cluster_mode_rec_t rec = state_cluster_mode_get(st);
    if (rec.mode != STATE_CLUSTER_DEGRADED || rec.reported || now_ms - rec.event_ms < STATE_CLUSTER_EVENT_EVERY_MS)
        return;
    MDB_txn *txn;
    if (mdb_txn_begin(st->env, NULL, 0, &txn) != MDB_SUCCESS)
        return;
    read_mode(st, txn, &rec); /* again, inside: another worker may have logged it */
    if (rec.mode != STATE_CLUSTER_DEGRADED || rec.reported || now_ms - rec.event_ms < STATE_CLUSTER_EVENT_EVERY_MS) {
        mdb_txn_abort(txn);
        return;
    }
    /* the held-back fall is still going on: its event now, with the ones
     * before it and this spell's length so far */
    state_event_t e;
    state_event_init(&e, STATE_EVENT_CLUSTER_DEGRADED, NULL, NULL, now_ms);
    uint64_t spell = now_ms > rec.since_ms ? now_ms - rec.since_ms : 0;
    e.count = rec.flaps;
    e.duration_ms = rec.flap_ms + spell;
    snprintf(e.reason, sizeof(e.reason),
             "Redis came and went %u time(s) within a minute and is away again (for %llu ms); this host decides alone",
             rec.flaps, (unsigned long long)spell);
    rec.reported = 1;
    rec.event_ms = now_ms;
    rec.flaps = 0;
    rec.flap_ms = 0;
    (void)put_mode(st, txn, &rec, &e);
}
