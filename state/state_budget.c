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

/* Reads every key's record; *absent gets how many are not stored yet. */
static int read_recs(state_t *st, MDB_txn *txn, const budget_db_t *b, const char *const *keys, size_t n, char *recs,
                     size_t *absent)
{
    *absent = 0;
    for (size_t i = 0; i < n; i++) {
        sl_err_t decoded;
        int rc = read_rec(st, txn, b, keys[i], recs + i * b->recsize, &decoded);
        if (rc == MDB_NOTFOUND)
            (*absent)++;
        else if (rc != MDB_SUCCESS)
            return rc;
    }
    return MDB_SUCCESS;
}

static int write_recs(state_t *st, MDB_txn *txn, const budget_db_t *b, const char *const *keys, size_t n,
                      const char *recs)
{
    int rc = MDB_SUCCESS;
    for (size_t i = 0; i < n && rc == MDB_SUCCESS; i++)
        rc = state_rec_put(st, txn, b->dbi, keys[i], b->schema, recs + i * b->recsize);
    return rc;
}

/* ---- limit cells are bounded: eviction by a clock hand ---- */

#define EVICT_SAMPLE 16           /* cells looked at per eviction, for the one owing the fewest calls */
#define EVICT_ON_FULL 64          /* cells a write that met a full map frees before it is tried again */
#define EVICT_EXTRA 16            /* beyond the new cells, per transaction: a lowered cap is reached gradually */

static size_t cells_cap(const state_t *st)
{
    return st->conf.max_cells ? st->conf.max_cells : st->conf.map_size_mb * STATE_CELLS_PER_MB;
}

static int is_one_of(const MDB_val *k, const char *const *keys, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(keys[i]) == k->mv_size && memcmp(keys[i], k->mv_data, k->mv_size) == 0)
            return 1;
    return 0;
}

/* The hand goes on just after key k (a NUL byte sorts before any other). */
static void hand_after(state_t *st, const MDB_val *k)
{
    if (k->mv_size + 1 > sizeof(st->cell_hand))
        return;
    memcpy(st->cell_hand, k->mv_data, k->mv_size);
    st->cell_hand[k->mv_size] = '\0';
    st->cell_hand_len = k->mv_size + 1;
}

/* What a cell in debt owes at now, as calls: backlog / interval, kept as the
 * fraction so two compare exactly. Time owed alone is the wrong measure: a
 * per-second cell owing 5 calls owes 1 s, a day cell owing one call of
 * 1000/day owes 86 s, and forgetting the first gives its client 5 calls more
 * at once, the second only one. A cell of version 1 (no interval stored) is
 * counted as one call: its client has not called since the upgrade (any lease
 * rewrites all its cells), so it is not in the middle of a burst. */
typedef struct owed {
    uint64_t backlog_us;          /* tat - now, > 0 */
    uint64_t interval_us;         /* > 0 */
} owed_t;

/* c is in debt at now (tat > now). */
static owed_t cell_owed(const state_cell_rec_t *c, uint64_t now)
{
    return c->interval_us == 0 ? (owed_t){1, 1} : (owed_t){c->tat_us - now, c->interval_us};
}

/* a owes fewer calls than b; of equal calls, less time (the cell idle sooner). */
static int owes_less(owed_t a, uint64_t a_tat, owed_t b, uint64_t b_tat)
{
    unsigned __int128 x = (unsigned __int128)a.backlog_us * b.interval_us,
                      y = (unsigned __int128)b.backlog_us * a.interval_us;
    return x != y ? x < y : a_tat < b_tat;
}

/* One sweep of the hand over up to EVICT_SAMPLE cells: idle ones (no debt at
 * now) go, and if that was not enough, the one owing the fewest calls. */
static int evict_sweep(state_t *st, MDB_txn *txn, MDB_cursor *cur, size_t need, uint64_t now, const char *const *keys,
                       size_t n, size_t *evicted)
{
    MDB_val k = {st->cell_hand_len, st->cell_hand}, v;
    char best[STATE_LMDB_KEY_MAX];
    size_t bestlen = 0, seen = 0;
    uint64_t best_tat = UINT64_MAX;
    owed_t best_owed = {0, 0};
    int rc = mdb_cursor_get(cur, &k, &v, st->cell_hand_len ? MDB_SET_RANGE : MDB_FIRST);
    for (; rc == MDB_SUCCESS && seen < EVICT_SAMPLE && *evicted < need; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        seen++;
        hand_after(st, &k);
        if (is_one_of(&k, keys, n))
            continue;
        state_cell_rec_t cell;
        if (state_record_decode(&state_cell_schema, v.mv_data, v.mv_size, &cell) != SL_OK || cell.tat_us <= now) {
            if ((rc = mdb_cursor_del(cur, 0)) != MDB_SUCCESS)
                return rc;
            (*evicted)++;
        } else if (k.mv_size <= sizeof(best) &&
                   (bestlen == 0 || owes_less(cell_owed(&cell, now), cell.tat_us, best_owed, best_tat))) {
            best_owed = cell_owed(&cell, now);
            best_tat = cell.tat_us;
            memcpy(best, k.mv_data, k.mv_size);
            bestlen = k.mv_size;
        }
    }
    if (rc == MDB_NOTFOUND)
        st->cell_hand_len = 0; /* the end of the key space: round again */
    else if (rc != MDB_SUCCESS)
        return rc;
    if (*evicted < need && bestlen > 0) {
        MDB_val bk = {bestlen, best};
        if ((rc = mdb_del(txn, st->dbi[STATE_DB_LIMITS], &bk, NULL)) != MDB_SUCCESS)
            return rc;
        (*evicted)++;
    }
    return seen > 0 || st->cell_hand_len == 0 ? MDB_SUCCESS : MDB_NOTFOUND;
}

/* Evicts need cells that are not keys[] inside txn. */
static int evict_cells(state_t *st, MDB_txn *txn, size_t need, uint64_t now, const char *const *keys, size_t n)
{
    MDB_cursor *cur;
    size_t evicted = 0;
    int rc = mdb_cursor_open(txn, st->dbi[STATE_DB_LIMITS], &cur);
    if (rc != MDB_SUCCESS)
        return rc;
    /* each sweep evicts at least one cell unless only keys[] are left: two
     * rounds over the sample size per cell are plenty */
    int idle_wraps = 0;
    for (size_t rounds = 0; rc == MDB_SUCCESS && evicted < need && rounds < 2 * need + 4; rounds++) {
        size_t before = evicted;
        rc = evict_sweep(st, txn, cur, need, now, keys, n, &evicted);
        if (evicted > before)
            idle_wraps = 0;
        else if (st->cell_hand_len == 0 && ++idle_wraps >= 2)
            break; /* a whole round found nothing to take: only keys[] are left */
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? MDB_SUCCESS : rc;
}

static size_t entries(MDB_txn *txn, MDB_dbi dbi)
{
    MDB_stat s;
    return mdb_stat(txn, dbi, &s) == MDB_SUCCESS ? s.ms_entries : 0;
}

/* Frees EVICT_ON_FULL cells in a transaction of their own (a full map). */
static int evict_for_room(state_t *st, uint64_t now, const char *const *keys, size_t n)
{
    MDB_txn *txn;
    int rc = mdb_txn_begin(st->env, NULL, 0, &txn);
    if (rc != MDB_SUCCESS)
        return rc;
    return state_txn_end(txn, evict_cells(st, txn, EVICT_ON_FULL, now, keys, n));
}

/* ---- the lease transaction ---- */

/* One try: read, decide, write, commit. bounded: limit cells, with eviction
 * at now. Returns the LMDB code of what failed (MDB_SUCCESS if none). */
static int update_once(state_t *st, const budget_db_t *b, const char *const *keys, size_t n, int bounded,
                       uint64_t now, state_budget_fn fn, void *ctx)
{
    MDB_txn *txn;
    int rc = mdb_txn_begin(st->env, NULL, 0, &txn);
    if (rc != MDB_SUCCESS)
        return rc;
    char *recs = sl_xcalloc(n ? n : 1, b->recsize);
    state_event_t events[STATE_MAX_TXN_EVENTS];
    size_t nevents = 0, absent = 0;
    memset(events, 0, sizeof(events));
    if ((rc = read_recs(st, txn, b, keys, n, recs, &absent)) != MDB_SUCCESS)
        goto done;
    if (bounded && absent > 0) {
        size_t have = entries(txn, st->dbi[b->dbi]), cap = cells_cap(st);
        if (have + absent > cap) {
            size_t need = have + absent - cap;
            if (need > absent + EVICT_EXTRA)
                need = absent + EVICT_EXTRA;
            if ((rc = evict_cells(st, txn, need, now, keys, n)) != MDB_SUCCESS)
                goto done;
        }
    }
    if (!fn(ctx, recs, n, events, &nevents))
        goto done;
    rc = write_recs(st, txn, b, keys, n, recs);
    if (rc == MDB_SUCCESS)
        rc = state_events_put(st, txn, events, nevents < STATE_MAX_TXN_EVENTS ? nevents : STATE_MAX_TXN_EVENTS);
    rc = state_txn_end(txn, rc);
    txn = NULL;
done:
    if (txn != NULL)
        mdb_txn_abort(txn);
    free(recs);
    return rc;
}

sl_err_t state_budget_update(state_t *st, state_budget_db_t db, const char *const *keys, size_t n,
                             state_budget_fn fn, void *ctx)
{
    budget_db_t b = budget_db(db);
    return state_lmdb_err("budget", update_once(st, &b, keys, n, 0, 0, fn, ctx));
}

sl_err_t state_cells_update(state_t *st, const char *const *keys, size_t n, uint64_t now_us, state_budget_fn fn,
                            void *ctx)
{
    budget_db_t b = budget_db(STATE_BUDGET_LIMITS);
    int rc = update_once(st, &b, keys, n, 1, now_us, fn, ctx);
    if (rc == MDB_MAP_FULL && evict_for_room(st, now_us, keys, n) == MDB_SUCCESS)
        rc = update_once(st, &b, keys, n, 1, now_us, fn, ctx);
    return state_lmdb_err("limit cells", rc);
}

size_t state_cells_max(const state_t *st)
{
    return cells_cap(st);
}

size_t state_cells_count(state_t *st)
{
    MDB_txn *txn;
    size_t n = 0;
    if (mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn) == MDB_SUCCESS) {
        n = entries(txn, st->dbi[STATE_DB_LIMITS]);
        mdb_txn_abort(txn);
    }
    return n;
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
