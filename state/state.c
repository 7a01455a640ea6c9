/* state/state.c: the LMDB environment, its databases and transactions. */
#include "state/state.h"

#include <errno.h>
#include <lmdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/sl_hash.h"
#include "base/sl_log.h"
#include "state/state_int.h"

static const char *const db_names[STATE_DB_COUNT] = {
    [STATE_DB_META] = "meta",
    [STATE_DB_ENDPOINTS] = "endpoints",
    [STATE_DB_STATS] = "stats",
    [STATE_DB_EVENTS] = "events",
    [STATE_DB_PINS] = "pins",
    [STATE_DB_LIMITS] = "limits",
    [STATE_DB_LEDGERS] = "ledgers",
    [STATE_DB_RESUME] = "resume",
};

sl_err_t state_lmdb_err(const char *what, int rc)
{
    if (rc == MDB_SUCCESS)
        return SL_OK;
    if (rc == MDB_MAP_FULL) {
        sl_log_error("state: %s: the LMDB map is full (raise state.map_size_mb)", what);
        return SL_ERR_MAP_FULL;
    }
    if (rc == MDB_NOTFOUND)
        return SL_ERR_NOT_FOUND;
    sl_log_error("state: %s: %s", what, mdb_strerror(rc));
    return rc == EACCES ? SL_ERR_DENIED : SL_ERR_STATE;
}

/* mkdir -p */
sl_err_t state_make_dirs(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISDIR(sb.st_mode)) {
        sl_log_error("state: %s exists and is not a folder", path);
        return SL_ERR_IO;
    }
    char tmp[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof(tmp))
        return SL_ERR_INVALID;
    memcpy(tmp, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (tmp[i] != '/' && tmp[i] != '\0')
            continue;
        char c = tmp[i];
        tmp[i] = '\0';
        if (mkdir(tmp, 0750) != 0 && errno != EEXIST) {
            sl_log_error("state: cannot create %s: %s", tmp, strerror(errno));
            return SL_ERR_IO;
        }
        tmp[i] = c;
    }
    return SL_OK;
}

/* Creates the databases and checks (or writes) the schema version. */
static sl_err_t open_dbs(state_t *st)
{
    MDB_txn *txn;
    int rc = mdb_txn_begin(st->env, NULL, 0, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("begin", rc);
    for (int i = 0; i < STATE_DB_COUNT; i++) {
        rc = mdb_dbi_open(txn, db_names[i], MDB_CREATE, &st->dbi[i]);
        if (rc != MDB_SUCCESS) {
            mdb_txn_abort(txn);
            return state_lmdb_err("open database", rc);
        }
    }
    MDB_val k = {6, "schema"}, v;
    rc = mdb_get(txn, st->dbi[STATE_DB_META], &k, &v);
    if (rc == MDB_NOTFOUND) {
        uint32_t version = STATE_SCHEMA_VERSION;
        v = (MDB_val){sizeof(version), &version};
        rc = mdb_put(txn, st->dbi[STATE_DB_META], &k, &v, 0);
    } else if (rc == MDB_SUCCESS) {
        uint32_t version = 0;
        if (v.mv_size == sizeof(version))
            memcpy(&version, v.mv_data, sizeof(version));
        if (version != STATE_SCHEMA_VERSION) {
            mdb_txn_abort(txn);
            sl_log_error("state: %s holds schema version %u; this sluice uses %u", st->conf.path, version,
                         STATE_SCHEMA_VERSION);
            return SL_ERR_VERSION;
        }
    }
    if (rc != MDB_SUCCESS) {
        mdb_txn_abort(txn);
        return state_lmdb_err("schema", rc);
    }
    return state_lmdb_err("commit", mdb_txn_commit(txn));
}

sl_err_t state_open(const state_conf_t *conf, state_t **out)
{
    sl_err_t err = state_make_dirs(conf->path);
    if (err != SL_OK)
        return err;
    state_t *st = sl_xcalloc(1, sizeof(*st));
    st->conf = *conf;
    st->path = sl_xstrdup(conf->path);
    st->conf.path = st->path;
    int rc = mdb_env_create(&st->env);
    if (rc == MDB_SUCCESS)
        rc = mdb_env_set_maxdbs(st->env, STATE_DB_COUNT + 4);
    if (rc == MDB_SUCCESS)
        rc = mdb_env_set_mapsize(st->env, conf->map_size_mb * 1024 * 1024);
    if (rc == MDB_SUCCESS)
        rc = mdb_env_set_maxreaders(st->env, 512);
    if (rc == MDB_SUCCESS)
        rc = mdb_env_open(st->env, st->path, MDB_NOTLS | MDB_NOSYNC | MDB_NORDAHEAD, 0640);
    if (rc != MDB_SUCCESS) {
        err = state_lmdb_err(st->path, rc);
        goto fail;
    }
    if ((err = open_dbs(st)) != SL_OK)
        goto fail;
    if (state_clock_anchor(st) != SL_OK)
        sl_log_warn("state: could not record the anchor of shared time; this process keeps its own");
    *out = st;
    return SL_OK;
fail:
    state_close(st);
    return err;
}

void state_close(state_t *st)
{
    if (st == NULL)
        return;
    if (st->rtxn != NULL)
        mdb_txn_abort(st->rtxn);
    if (st->env != NULL)
        mdb_env_close(st->env);
    free(st->path);
    free(st);
}

sl_err_t state_check_readers(state_t *st, int *cleared)
{
    *cleared = 0;
    return state_lmdb_err("reader check", mdb_reader_check(st->env, cleared));
}

sl_err_t state_sync(state_t *st)
{
    return state_lmdb_err("sync", mdb_env_sync(st->env, 1));
}

/* Bytes held by live data: every database's pages. Pages LMDB freed are
 * reused, so this (not the file's high-water mark) says how full the map is. */
void state_usage(state_t *st, size_t *used, size_t *size)
{
    MDB_envinfo info;
    MDB_stat stat;
    MDB_txn *txn;
    mdb_env_info(st->env, &info);
    mdb_env_stat(st->env, &stat);
    *size = info.me_mapsize;
    size_t pages = stat.ms_branch_pages + stat.ms_leaf_pages + stat.ms_overflow_pages;
    if (mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn) == MDB_SUCCESS) {
        for (int i = 0; i < STATE_DB_COUNT; i++) {
            MDB_stat s;
            if (mdb_stat(txn, st->dbi[i], &s) == MDB_SUCCESS)
                pages += s.ms_branch_pages + s.ms_leaf_pages + s.ms_overflow_pages;
        }
        mdb_txn_abort(txn);
    }
    *used = pages * (size_t)stat.ms_psize;
}

sl_err_t state_read_begin(state_t *st)
{
    int rc = st->rtxn == NULL ? mdb_txn_begin(st->env, NULL, MDB_RDONLY, &st->rtxn) : mdb_txn_renew(st->rtxn);
    return state_lmdb_err("read", rc);
}

void state_read_end(state_t *st)
{
    if (st->rtxn != NULL)
        mdb_txn_reset(st->rtxn);
}

sl_err_t state_raw_put(state_t *st, const char *db, const void *key, size_t klen, const void *val, size_t vlen)
{
    int which = -1;
    for (int i = 0; i < STATE_DB_COUNT; i++)
        if (strcmp(db_names[i], db) == 0)
            which = i;
    if (which < 0)
        return SL_ERR_INVALID;
    MDB_txn *txn;
    int rc = mdb_txn_begin(st->env, NULL, 0, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("begin", rc);
    MDB_val k = {klen, (void *)key}, v = {vlen, (void *)val};
    rc = mdb_put(txn, st->dbi[which], &k, &v, 0);
    if (rc != MDB_SUCCESS) {
        mdb_txn_abort(txn);
        return state_lmdb_err("put", rc);
    }
    return state_lmdb_err("commit", mdb_txn_commit(txn));
}

#define PURGE_VISITS 4096        /* records looked at per transaction, at most */

/* One write transaction: deletes at most batch dead records of db from the
 * key from[0..*fromlen) on (the first key when *fromlen is 0), looking at no
 * more than PURGE_VISITS. *from gets the key to go on from, *done 1 at the
 * end of the database. Returns the LMDB code (MDB_MAP_FULL: nothing done). */
static int purge_batch(state_t *st, int db, state_live_fn live, uint64_t now, size_t batch, char *from,
                       size_t *fromlen, int *done, size_t *removed)
{
    MDB_txn *txn;
    MDB_cursor *cur;
    MDB_val k = {*fromlen, from}, v;
    size_t n = 0, visits = 0;
    int rc = mdb_txn_begin(st->env, NULL, 0, &txn);
    if (rc != MDB_SUCCESS)
        return rc;
    if ((rc = mdb_cursor_open(txn, st->dbi[db], &cur)) != MDB_SUCCESS) {
        mdb_txn_abort(txn);
        return rc;
    }
    *done = 0;
    rc = mdb_cursor_get(cur, &k, &v, *fromlen ? MDB_SET_RANGE : MDB_FIRST);
    for (; rc == MDB_SUCCESS && n < batch && visits < PURGE_VISITS; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        visits++;
        if (k.mv_size <= STATE_LMDB_KEY_MAX) {
            memcpy(from, k.mv_data, k.mv_size);
            *fromlen = k.mv_size;
        }
        if (live(&v, now))
            continue;
        if ((rc = mdb_cursor_del(cur, 0)) != MDB_SUCCESS)
            break;
        n++;
    }
    mdb_cursor_close(cur);
    if (rc == MDB_NOTFOUND) {
        *done = 1;
        rc = MDB_SUCCESS;
    }
    if (rc != MDB_SUCCESS) {
        mdb_txn_abort(txn);
        return rc;
    }
    if ((rc = mdb_txn_commit(txn)) == MDB_SUCCESS)
        *removed += n;
    return rc;
}

/* Deletes in bounded transactions: one transaction over a whole database
 * would copy every page it touches and could not commit on a map that is
 * nearly full, which is when a purge is most needed. A batch that meets a
 * full map is tried again with half as many deletions. */
sl_err_t state_purge(state_t *st, int db, state_live_fn live, uint64_t now, size_t *removed)
{
    char from[STATE_LMDB_KEY_MAX], at[STATE_LMDB_KEY_MAX];
    size_t fromlen = 0, atlen = 0, batch = STATE_PURGE_BATCH;
    int done = 0;
    *removed = 0;
    while (!done) {
        memcpy(at, from, fromlen);
        atlen = fromlen;
        int rc = purge_batch(st, db, live, now, batch, from, &fromlen, &done, removed);
        if (rc == MDB_MAP_FULL && batch > 1) {
            memcpy(from, at, atlen); /* nothing of that batch was deleted: again from where it began */
            fromlen = atlen;
            batch /= 2;
            continue;
        }
        if (rc != MDB_SUCCESS)
            return state_lmdb_err("purge", rc);
    }
    return SL_OK;
}

/* Logs a record that does not decode, once per key and process; past
 * STATE_CORRUPT_LOG_MAX distinct keys, once more and then no longer (the
 * snapshot refresh reads the same records every 50 ms). */
void state_note_corrupt(state_t *st, const char *db, const char *key, sl_err_t err)
{
    uint64_t h = sl_fnv1a_str(sl_fnv1a_str(SL_FNV1A_OFFSET, db), key);
    for (size_t i = 0; i < st->ncorrupt_logged; i++)
        if (st->corrupt_logged[i] == h)
            return;
    if (st->ncorrupt_logged > STATE_CORRUPT_LOG_MAX)
        return;
    if (st->ncorrupt_logged == STATE_CORRUPT_LOG_MAX) {
        st->ncorrupt_logged++;
        sl_log_error("state: more than %d records do not decode; no longer logging each", STATE_CORRUPT_LOG_MAX);
        return;
    }
    st->corrupt_logged[st->ncorrupt_logged++] = h;
    sl_log_error("state: %s record \"%s\" does not decode (%s); treating it as absent", db, key, sl_err_str(err));
}
