/* state/state_budget.c: shared budgets, leased in one write transaction.
 *
 * Client limits (GCRA cells) and provider credit ledgers are spent by every
 * worker. A worker never writes per request: it leases a small amount at
 * once (state_budget_update moves the shared record forward by the lease) and
 * spends it locally, so the write lock is taken once per lease. */
#include <stdlib.h>
#include <string.h>

#include "base/sl_log.h"
#include "state/state_int.h"

typedef struct budget_db {
    int dbi;
    const state_schema_t *schema;
    size_t recsize;
    const char *name;
} budget_db_t;

static budget_db_t budget_db(state_budget_db_t db)
{
    if (db == STATE_BUDGET_LIMITS)
        return (budget_db_t){STATE_DB_LIMITS, &state_cell_schema, sizeof(state_cell_rec_t), "limit cell"};
    return (budget_db_t){STATE_DB_LEDGERS, &state_ledger_schema, sizeof(state_ledger_rec_t), "ledger"};
}

/* Reads key's record into rec, zeroed when it is absent or unreadable (a
 * corrupt one is reported and *decoded says why); returns the LMDB code. */
static int read_rec(state_t *st, MDB_txn *txn, const budget_db_t *b, const char *key, void *rec, sl_err_t *decoded)
{
    MDB_val k = {strlen(key), (void *)key}, v;
    memset(rec, 0, b->recsize);
    *decoded = SL_OK;
    int rc = mdb_get(txn, st->dbi[b->dbi], &k, &v);
    if (rc != MDB_SUCCESS)
        return rc;
    *decoded = state_record_decode(b->schema, v.mv_data, v.mv_size, rec);
    if (*decoded != SL_OK) {
        memset(rec, 0, b->recsize);
        state_note_corrupt(st, b->name, key, *decoded);
    }
    return MDB_SUCCESS;
}

static int read_recs(state_t *st, MDB_txn *txn, const budget_db_t *b, const char *const *keys, size_t n, char *recs)
{
    for (size_t i = 0; i < n; i++) {
        sl_err_t decoded;
        int rc = read_rec(st, txn, b, keys[i], recs + i * b->recsize, &decoded);
        if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND)
            return rc;
    }
    return MDB_SUCCESS;
}

static int write_recs(state_t *st, MDB_txn *txn, const budget_db_t *b, const char *const *keys, size_t n,
                      const char *recs)
{
    sl_buf_t buf = SL_BUF_INIT;
    int rc = MDB_SUCCESS;
    for (size_t i = 0; i < n && rc == MDB_SUCCESS; i++) {
        sl_buf_reset(&buf);
        if (state_record_encode(b->schema, recs + i * b->recsize, &buf) != SL_OK) {
            rc = MDB_INVALID;
            break;
        }
        MDB_val k = {strlen(keys[i]), (void *)keys[i]}, v = {buf.len, buf.base};
        rc = mdb_put(txn, st->dbi[b->dbi], &k, &v, 0);
    }
    sl_buf_dispose(&buf);
    return rc;
}

sl_err_t state_budget_update(state_t *st, state_budget_db_t db, const char *const *keys, size_t n,
                             state_budget_fn fn, void *ctx)
{
    budget_db_t b = budget_db(db);
    MDB_txn *txn;
    int rc = mdb_txn_begin(st->env, NULL, 0, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("begin", rc);
    char *recs = sl_xcalloc(n ? n : 1, b.recsize);
    state_event_t events[STATE_MAX_TXN_EVENTS];
    size_t nevents = 0;
    memset(events, 0, sizeof(events));
    sl_err_t err = SL_OK;
    if ((rc = read_recs(st, txn, &b, keys, n, recs)) != MDB_SUCCESS) {
        err = state_lmdb_err("read budget", rc);
    } else if (fn(ctx, recs, n, events, &nevents)) {
        if ((rc = write_recs(st, txn, &b, keys, n, recs)) != MDB_SUCCESS)
            err = state_lmdb_err("write budget", rc);
        for (size_t i = 0; err == SL_OK && i < nevents && i < STATE_MAX_TXN_EVENTS; i++)
            if ((rc = state_event_put(st, txn, &events[i])) != MDB_SUCCESS)
                err = state_lmdb_err("append event", rc);
        if (err == SL_OK) {
            err = state_lmdb_err("commit", mdb_txn_commit(txn));
            txn = NULL;
        }
    }
    if (txn != NULL)
        mdb_txn_abort(txn);
    free(recs);
    return err;
}

sl_err_t state_budget_get(state_t *st, state_budget_db_t db, const char *key, void *rec)
{
    budget_db_t b = budget_db(db);
    if (st->rtxn == NULL)
        return SL_ERR_STATE;
    sl_err_t decoded;
    int rc = read_rec(st, st->rtxn, &b, key, rec, &decoded);
    if (rc != MDB_SUCCESS)
        return rc == MDB_NOTFOUND ? SL_ERR_NOT_FOUND : state_lmdb_err("get", rc);
    return decoded;
}

/* A cell whose theoretical arrival time is still ahead holds a debt: kept. */
static int cell_live(const MDB_val *v, uint64_t now_us)
{
    state_cell_rec_t cell;
    return state_record_decode(&state_cell_schema, v->mv_data, v->mv_size, &cell) == SL_OK && cell.tat_us > now_us;
}

sl_err_t state_cells_purge(state_t *st, uint64_t now_us, size_t *removed)
{
    return state_purge(st, STATE_DB_LIMITS, cell_live, now_us, removed);
}
