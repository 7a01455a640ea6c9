/* state/state_resume.c: held subscriptions' positions (state_resume.h). */
#include "state/state_resume.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/sl_log.h"
#include "state/state_int.h"

#define PREFIX "resume/"

static const state_field_t resume_fields[] = {
    {"height", STATE_F_U64, offsetof(state_resume_rec_t, height), 1, 0},
    {"hash", STATE_F_STR, offsetof(state_resume_rec_t, hash), sizeof(((state_resume_rec_t *)0)->hash), 0},
    {"held_ms", STATE_F_U64, offsetof(state_resume_rec_t, held_ms), 1, 0},
    {"expires_ms", STATE_F_U64, offsetof(state_resume_rec_t, expires_ms), 1, 0},
};

const state_schema_t state_resume_schema = {"resume", 1, resume_fields, sizeof(resume_fields) / sizeof(resume_fields[0])};

size_t state_resume_key(char *out, size_t cap, const char *ident, const char *network, const char *kind,
                        uint64_t params_hash)
{
    int n = snprintf(out, cap, PREFIX "%s/%s/%s/%016" PRIx64, ident, network, kind, params_hash);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

/* The scan of every held record: expired ones deleted, and the oldest of
 * the identity and of all found. */
typedef struct scan {
    size_t mine, all, expired;
    uint64_t oldest_mine_ms, oldest_ms;
    char oldest_mine[STATE_LMDB_KEY_MAX + 1], oldest[STATE_LMDB_KEY_MAX + 1];
} scan_t;

static void note_oldest(char *slot, uint64_t *at, const MDB_val *k, uint64_t held_ms)
{
    if (slot[0] != '\0' && held_ms >= *at)
        return;
    *at = held_ms;
    size_t n = k->mv_size < STATE_LMDB_KEY_MAX ? k->mv_size : STATE_LMDB_KEY_MAX;
    memcpy(slot, k->mv_data, n);
    slot[n] = '\0';
}

static int scan(MDB_txn *txn, MDB_dbi dbi, const char *ident, uint64_t now_ms, scan_t *s)
{
    MDB_cursor *cur;
    char mine[STATE_RESUME_KEY_MAX];
    int mlen = snprintf(mine, sizeof(mine), PREFIX "%s/", ident);
    int rc = mdb_cursor_open(txn, dbi, &cur);
    if (rc != MDB_SUCCESS)
        return rc;
    MDB_val k = {strlen(PREFIX), PREFIX}, v;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == MDB_SUCCESS; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size < strlen(PREFIX) || memcmp(k.mv_data, PREFIX, strlen(PREFIX)) != 0)
            break;
        state_resume_rec_t r;
        if (state_record_decode(&state_resume_schema, v.mv_data, v.mv_size, &r) != SL_OK || r.expires_ms <= now_ms) {
            if ((rc = mdb_cursor_del(cur, 0)) != MDB_SUCCESS)
                break;
            s->expired++;
            continue;
        }
        s->all++;
        note_oldest(s->oldest, &s->oldest_ms, &k, r.held_ms);
        if (mlen > 0 && k.mv_size > (size_t)mlen && memcmp(k.mv_data, mine, (size_t)mlen) == 0) {
            s->mine++;
            note_oldest(s->oldest_mine, &s->oldest_mine_ms, &k, r.held_ms);
        }
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? MDB_SUCCESS : rc;
}

static int drop(MDB_txn *txn, MDB_dbi dbi, const char *key)
{
    MDB_val k = {strlen(key), (void *)key};
    int rc = mdb_del(txn, dbi, &k, NULL);
    return rc == MDB_NOTFOUND ? MDB_SUCCESS : rc;
}

sl_err_t state_resume_hold(state_t *st, const char *key, const char *ident, const state_resume_rec_t *rec,
                           uint64_t now_ms, size_t *dropped, size_t *expired)
{
    MDB_txn *txn;
    scan_t s;
    memset(&s, 0, sizeof(s));
    *dropped = *expired = 0;
    int rc = mdb_txn_begin(st->env, NULL, 0, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("begin", rc);
    MDB_dbi dbi = st->dbi[STATE_DB_META];
    MDB_val k = {strlen(key), (void *)key}, v;
    int replacing = mdb_get(txn, dbi, &k, &v) == MDB_SUCCESS;
    rc = scan(txn, dbi, ident, now_ms, &s);
    /* the one replaced is not counted against the bounds it already met */
    if (rc == MDB_SUCCESS && !replacing && s.mine >= STATE_RESUME_PER_IDENTITY && s.oldest_mine[0] != '\0') {
        rc = drop(txn, dbi, s.oldest_mine);
        (*dropped)++;
        s.all--;
        if (strcmp(s.oldest, s.oldest_mine) == 0)
            s.oldest[0] = '\0';
    }
    if (rc == MDB_SUCCESS && !replacing && s.all >= STATE_RESUME_MAX && s.oldest[0] != '\0') {
        rc = drop(txn, dbi, s.oldest);
        (*dropped)++;
    }
    if (rc == MDB_SUCCESS)
        rc = state_rec_put(st, txn, STATE_DB_META, key, &state_resume_schema, rec);
    *expired = s.expired;
    rc = state_txn_end(txn, rc);
    return rc == MDB_SUCCESS ? SL_OK : state_lmdb_err("hold resume", rc);
}

sl_err_t state_resume_take(state_t *st, const char *key, uint64_t now_ms, state_resume_rec_t *rec, int *found)
{
    MDB_txn *txn;
    *found = 0;
    memset(rec, 0, sizeof(*rec));
    int rc = mdb_txn_begin(st->env, NULL, 0, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("begin", rc);
    MDB_val k = {strlen(key), (void *)key}, v;
    rc = mdb_get(txn, st->dbi[STATE_DB_META], &k, &v);
    if (rc == MDB_NOTFOUND) {
        mdb_txn_abort(txn);
        return SL_OK;
    }
    if (rc == MDB_SUCCESS) {
        sl_err_t err = state_record_decode(&state_resume_schema, v.mv_data, v.mv_size, rec);
        *found = err != SL_OK ? 0 : rec->expires_ms <= now_ms ? 2 : 1;
        rc = mdb_del(txn, st->dbi[STATE_DB_META], &k, NULL);
    }
    rc = state_txn_end(txn, rc);
    if (rc != MDB_SUCCESS) {
        *found = 0;
        return state_lmdb_err("take resume", rc);
    }
    return SL_OK;
}
