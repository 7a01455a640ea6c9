/* state/state_txn.c: the tail of a read-decide-write transaction, written
 * once. A compare-and-set or a lease reads inside one write transaction,
 * lets the caller's function decide, and then writes the record, appends the
 * events the decision made and commits, or, if any step fails, aborts, so
 * an event is never stored without its change (nor a change without it). */
#include <string.h>

#include "base/sl_buf.h"
#include "state/state_int.h"

static int put_encoded(state_t *st, MDB_txn *txn, int db, const char *key, const sl_buf_t *buf)
{
    MDB_val k = {strlen(key), (void *)key}, v = {buf->len, buf->base};
    return mdb_put(txn, st->dbi[db], &k, &v, 0);
}

sl_err_t state_rec_get(state_t *st, MDB_txn *txn, int db, const char *dbname, const char *key,
                      const state_schema_t *schema, void *rec, size_t recsize)
{
    MDB_val k = {strlen(key), (void *)key}, v;
    memset(rec, 0, recsize);
    int rc = mdb_get(txn, st->dbi[db], &k, &v);
    if (rc != MDB_SUCCESS)
        return rc == MDB_NOTFOUND ? SL_ERR_NOT_FOUND : state_lmdb_err("get", rc);
    sl_err_t err = state_record_decode(schema, v.mv_data, v.mv_size, rec);
    if (err != SL_OK) {
        memset(rec, 0, recsize);
        state_note_corrupt(st, dbname, key, err);
    }
    return err;
}

int state_rec_put(state_t *st, MDB_txn *txn, int db, const char *key, const state_schema_t *schema, const void *rec)
{
    sl_buf_t buf = SL_BUF_INIT;
    int rc = state_record_encode(schema, rec, &buf) == SL_OK ? put_encoded(st, txn, db, key, &buf) : MDB_INVALID;
    sl_buf_dispose(&buf);
    return rc;
}

int state_txn_end(MDB_txn *txn, int rc)
{
    if (rc != MDB_SUCCESS) {
        mdb_txn_abort(txn);
        return rc;
    }
    return mdb_txn_commit(txn);
}

sl_err_t state_txn_finish(state_t *st, MDB_txn *txn, int db, const char *key, const state_schema_t *schema,
                          const void *rec, state_event_t *events, size_t nevents, const char *what)
{
    sl_buf_t buf = SL_BUF_INIT;
    sl_err_t err = state_record_encode(schema, rec, &buf);
    int rc;
    if (err == SL_OK && (rc = put_encoded(st, txn, db, key, &buf)) != MDB_SUCCESS)
        err = state_lmdb_err(what, rc);
    if (err == SL_OK && (rc = state_events_put(st, txn, events, nevents)) != MDB_SUCCESS)
        err = state_lmdb_err("append event", rc);
    sl_buf_dispose(&buf);
    if (err != SL_OK) {
        mdb_txn_abort(txn);
        return err;
    }
    return state_lmdb_err("commit", mdb_txn_commit(txn));
}
