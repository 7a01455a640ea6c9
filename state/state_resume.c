/* state/state_resume.c: held subscriptions' positions (state_resume.h).
 * The resume database holds nothing else: its entry count is the bound's
 * count in all, and a full scan is needed only past that bound. */
#include "state/state_resume.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/sl_log.h"
#include "state/state_int.h"

static const state_field_t resume_fields[] = {
    {"height", STATE_F_U64, offsetof(state_resume_rec_t, height), 1, 0},
    {"hash", STATE_F_STR, offsetof(state_resume_rec_t, hash), sizeof(((state_resume_rec_t *)0)->hash), 0},
    {"below", STATE_F_U64_ARRAY, offsetof(state_resume_rec_t, below), STATE_RESUME_BELOW * 4, 0},
    {"held_ms", STATE_F_U64, offsetof(state_resume_rec_t, held_ms), 1, 0},
    {"expires_ms", STATE_F_U64, offsetof(state_resume_rec_t, expires_ms), 1, 0},
};

const state_schema_t state_resume_schema = {"resume", 1, resume_fields, sizeof(resume_fields) / sizeof(resume_fields[0])};

size_t state_resume_key(char *out, size_t cap, const char *ident, const char *network, const char *kind,
                        uint64_t params_hash)
{
    int n = snprintf(out, cap, "%s/%s/%s/%016" PRIx64, ident, network, kind, params_hash);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

/* A scan of the records from prefix (every one: ""): those past the grace
 * deleted, the others counted and the oldest of them found. */
typedef struct scan {
    size_t live;
    uint64_t oldest_ms;
    char oldest[STATE_LMDB_KEY_MAX + 1]; /* "": none */
} scan_t;

static int scan(MDB_txn *txn, MDB_dbi dbi, const char *prefix, uint64_t now_ms, scan_t *s)
{
    MDB_cursor *cur;
    size_t plen = strlen(prefix);
    memset(s, 0, sizeof(*s));
    int rc = mdb_cursor_open(txn, dbi, &cur);
    if (rc != MDB_SUCCESS)
        return rc;
    MDB_val k = {plen, (void *)prefix}, v;
    for (rc = mdb_cursor_get(cur, &k, &v, plen != 0 ? MDB_SET_RANGE : MDB_FIRST); rc == MDB_SUCCESS;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size < plen || memcmp(k.mv_data, prefix, plen) != 0)
            break;
        state_resume_rec_t r;
        if (state_record_decode(&state_resume_schema, v.mv_data, v.mv_size, &r) != SL_OK ||
            r.expires_ms + STATE_RESUME_GRACE_MS <= now_ms) {
            if ((rc = mdb_cursor_del(cur, 0)) != MDB_SUCCESS)
                break;
            continue;
        }
        s->live++;
        if (s->oldest[0] != '\0' && r.held_ms >= s->oldest_ms)
            continue;
        size_t n = k.mv_size < STATE_LMDB_KEY_MAX ? k.mv_size : STATE_LMDB_KEY_MAX;
        memcpy(s->oldest, k.mv_data, n);
        s->oldest[n] = '\0';
        s->oldest_ms = r.held_ms;
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? MDB_SUCCESS : rc;
}

static int drop(MDB_txn *txn, MDB_dbi dbi, const char *key, size_t *dropped)
{
    MDB_val k = {strlen(key), (void *)key};
    int rc = mdb_del(txn, dbi, &k, NULL);
    *dropped += rc == MDB_SUCCESS;
    return rc == MDB_NOTFOUND ? MDB_SUCCESS : rc;
}

/* Room for one more record (not replacing one): the identity's oldest
 * past its bound, the oldest of all past the bound in all. */
static int make_room(MDB_txn *txn, MDB_dbi dbi, const char *ident, uint64_t now_ms, size_t *dropped)
{
    char prefix[STATE_RESUME_KEY_MAX];
    scan_t s;
    MDB_stat stat;
    snprintf(prefix, sizeof(prefix), "%s/", ident);
    int rc = scan(txn, dbi, prefix, now_ms, &s);
    if (rc == MDB_SUCCESS && s.live >= STATE_RESUME_PER_IDENTITY && s.oldest[0] != '\0')
        rc = drop(txn, dbi, s.oldest, dropped);
    if (rc == MDB_SUCCESS)
        rc = mdb_stat(txn, dbi, &stat);
    if (rc != MDB_SUCCESS || stat.ms_entries < STATE_RESUME_MAX)
        return rc;
    rc = scan(txn, dbi, "", now_ms, &s); /* at the bound in all: rare, a full scan */
    if (rc == MDB_SUCCESS && s.live >= STATE_RESUME_MAX && s.oldest[0] != '\0')
        rc = drop(txn, dbi, s.oldest, dropped);
    return rc;
}

sl_err_t state_resume_hold(state_t *st, const char *key, const char *ident, const state_resume_rec_t *rec,
                           uint64_t now_ms, size_t *dropped)
{
    MDB_txn *txn;
    *dropped = 0;
    int rc = mdb_txn_begin(st->env, NULL, 0, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("begin", rc);
    MDB_dbi dbi = st->dbi[STATE_DB_RESUME];
    MDB_val k = {strlen(key), (void *)key}, v;
    rc = mdb_get(txn, dbi, &k, &v);
    if (rc == MDB_NOTFOUND) /* the one replaced met the bounds already */
        rc = make_room(txn, dbi, ident, now_ms, dropped);
    if (rc == MDB_SUCCESS)
        rc = state_rec_put(st, txn, STATE_DB_RESUME, key, &state_resume_schema, rec);
    rc = state_txn_end(txn, rc);
    if (rc != MDB_SUCCESS) {
        *dropped = 0;
        return state_lmdb_err("hold resume", rc);
    }
    return SL_OK;
}

sl_err_t state_resume_take(state_t *st, const char *key, state_resume_rec_t *rec, int *found)
{
    MDB_txn *txn;
    *found = 0;
    memset(rec, 0, sizeof(*rec));
    int rc = mdb_txn_begin(st->env, NULL, 0, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("begin", rc);
    MDB_val k = {strlen(key), (void *)key}, v;
    rc = mdb_get(txn, st->dbi[STATE_DB_RESUME], &k, &v);
    if (rc == MDB_NOTFOUND) {
        mdb_txn_abort(txn);
        return SL_OK;
    }
    int got = 0;
    if (rc == MDB_SUCCESS) {
        got = state_record_decode(&state_resume_schema, v.mv_data, v.mv_size, rec) == SL_OK;
        rc = mdb_del(txn, st->dbi[STATE_DB_RESUME], &k, NULL);
    }
    rc = state_txn_end(txn, rc);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("take resume", rc);
    *found = got;
    return SL_OK;
}

static int live(const MDB_val *v, uint64_t now)
{
    state_resume_rec_t r;
    return state_record_decode(&state_resume_schema, v->mv_data, v->mv_size, &r) == SL_OK &&
           r.expires_ms + STATE_RESUME_GRACE_MS > now;
}

sl_err_t state_resume_purge(state_t *st, uint64_t now_ms, size_t *removed)
{
    return state_purge(st, STATE_DB_RESUME, live, now_ms, removed);
}
