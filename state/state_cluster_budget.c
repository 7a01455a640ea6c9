/* state/state_cluster_budget.c: client-limit cells and credit ledgers in
 * Redis, leased to the workers.
 *
 * Both keep the lease model of LMDB: a worker takes a batch of calls (or
 * credits) at once and spends them locally, so Redis is asked once per
 * lease, never per call. The scripts decide with Redis' clock (TIME), so the
 * hosts' clocks do not matter to a limit:
 *  - the GCRA lease (script "gcra"): each cell's TAT in µs of Redis' clock;
 *    the caller passes each window's emission interval and capacity
 *    (policy/limiter.h's shape), the script grants the most calls every
 *    window admits, up to what was asked, or nothing when fewer than the
 *    calls at hand fit (and says how long until they would);
 *  - the credit lease (script "credits"): per window a hash {start, spent,
 *    low, exhausted}; a window's start only moves forward (a caller whose
 *    clock is behind gets the newer window's numbers), so a ledger never
 *    goes backwards; budget_low and budget_exhausted are decided inside,
 *    once per window for the whole cluster.
 * The host keeps a copy of each ledger as Redis last said ("cl/<key>" in the
 * ledgers database): what its workers fall back to when Redis is down (this
 * host spends its share of what was left), and what is merged back when it
 * returns (state_cluster_ledgers_sync). */
#include <stdlib.h>
#include <string.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "state/state_cluster_int.h"
#include "state/state_int.h"

#define LEDGER_SYNC_MS 2000

/* ---- client limits ---- */

typedef struct lim_op {
    state_cluster_t *cl;
    state_cluster_lease_fn fn;
    void *data;
    size_t n;
} lim_op_t;

static uint64_t reply_u64(const redisReply *r)
{
    if (r->type == REDIS_REPLY_INTEGER)
        return r->integer > 0 ? (uint64_t)r->integer : 0;
    return r->type == REDIS_REPLY_STRING ? strtoull(r->str, NULL, 10) : 0;
}

static void on_gcra(void *data, redisReply *reply)
{
    lim_op_t *op = data;
    state_cluster_lease_t r;
    memset(&r, 0, sizeof(r));
    if (op->cl->destroying) {
        free(op);
        return;
    }
    if (reply != NULL && reply->type == REDIS_REPLY_ARRAY && reply->elements == 3 + op->n) {
        r.ok = 1;
        r.granted = (uint32_t)reply_u64(reply->element[0]);
        r.retry_us = reply_u64(reply->element[1]);
        r.redis_now_us = reply_u64(reply->element[2]);
        for (size_t i = 0; i < op->n && i < STATE_CLUSTER_MAX_CELLS; i++)
            r.tat_us[i] = reply_u64(reply->element[3 + i]);
        op->cl->redis_offset_ms = (int64_t)(r.redis_now_us / 1000) - (int64_t)sl_shared_ms();
    } else if (reply != NULL && reply->type == REDIS_REPLY_ERROR) {
        state_cluster_link_failed(op->cl, reply->str);
    }
    op->fn(op->data, &r);
    free(op);
}

int state_cluster_limit_lease(state_cluster_t *cl, const state_cluster_cell_t *cells, size_t n, uint32_t need,
                              uint32_t want, state_cluster_lease_fn fn, void *data)
{
    if (!state_cluster_up(cl) || n == 0 || n > STATE_CLUSTER_MAX_CELLS)
        return -1;
    char keys[STATE_CLUSTER_MAX_CELLS + 1][STATE_CLUSTER_PREFIX_MAX + STATE_KEY_MAX + 8];
    char nums[5 + 3 * STATE_CLUSTER_MAX_CELLS][24], nkeys[8];
    const char *argv[10 + STATE_CLUSTER_MAX_CELLS * 4];
    size_t lens[10 + STATE_CLUSTER_MAX_CELLS * 4];
    int argc = 0;
    snprintf(nkeys, sizeof(nkeys), "%zu", n + 2);
    argv[argc++] = "EVALSHA";
    argv[argc++] = cl->sha[STATE_SCRIPT_GCRA];
    argv[argc++] = nkeys;
    for (size_t i = 0; i < n; i++) {
        snprintf(keys[i], sizeof(keys[i]), "%slim:%s", cl->conf->prefix, cells[i].key);
        argv[argc++] = keys[i];
    }
    /* the cells' index: the bound of state.max_limit_cells, as in LMDB */
    snprintf(keys[n], sizeof(keys[n]), "%slimidx", cl->conf->prefix);
    argv[argc++] = keys[n];
    argv[argc++] = cl->hosts_key; /* hosts cut off: their share is held back */
    size_t k = 0;
    snprintf(nums[k], sizeof(nums[k]), "%u", need);
    argv[argc++] = nums[k++];
    snprintf(nums[k], sizeof(nums[k]), "%u", want);
    argv[argc++] = nums[k++];
    for (size_t i = 0; i < n; i++) {
        snprintf(nums[k], sizeof(nums[k]), "%llu", (unsigned long long)cells[i].interval_us);
        argv[argc++] = nums[k++];
        snprintf(nums[k], sizeof(nums[k]), "%llu", (unsigned long long)cells[i].capacity_us);
        argv[argc++] = nums[k++];
        snprintf(nums[k], sizeof(nums[k]), "%llu", (unsigned long long)cells[i].window_us);
        argv[argc++] = nums[k++];
    }
    snprintf(nums[k], sizeof(nums[k]), "%zu", state_cells_max(cl->st));
    argv[argc++] = nums[k++];
    snprintf(nums[k], sizeof(nums[k]), "%u", STATE_CLUSTER_ALIVE_MS);
    argv[argc++] = nums[k++];
    snprintf(nums[k], sizeof(nums[k]), "%u", STATE_CLUSTER_HOST_TTL_MS);
    argv[argc++] = nums[k++];
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    lim_op_t *op = sl_xmalloc(sizeof(*op));
    *op = (lim_op_t){cl, fn, data, n};
    if (state_redis_send(&cl->cmd, on_gcra, op, argc, argv, lens) != 0) {
        free(op);
        return -1;
    }
    return 0;
}

/* ---- credit ledgers ---- */

typedef struct cred_op {
    state_cluster_t *cl;
    state_cluster_credit_fn fn;
    void *data;
    size_t n;
    char keys[STATE_CLUSTER_MAX_LEDGERS][STATE_KEY_MAX];
} cred_op_t;

static void mirror_key(char *out, size_t cap, const char *key)
{
    snprintf(out, cap, "cl/%s", key);
}

static int ledger_get(state_t *st, MDB_txn *txn, const char *key, state_ledger_rec_t *rec)
{
    MDB_val k = {strlen(key), (void *)key}, v;
    memset(rec, 0, sizeof(*rec));
    if (mdb_get(txn, st->dbi[STATE_DB_LEDGERS], &k, &v) != MDB_SUCCESS)
        return 0;
    if (state_record_decode(&state_ledger_schema, v.mv_data, v.mv_size, rec) != SL_OK) {
        memset(rec, 0, sizeof(*rec));
        return 0;
    }
    return 1;
}

static int ledger_put(state_t *st, MDB_txn *txn, const char *key, const state_ledger_rec_t *rec)
{
    sl_buf_t buf = SL_BUF_INIT;
    int rc = MDB_INVALID;
    if (state_record_encode(&state_ledger_schema, rec, &buf) == SL_OK) {
        MDB_val k = {strlen(key), (void *)key}, v = {buf.len, buf.base};
        rc = mdb_put(txn, st->dbi[STATE_DB_LEDGERS], &k, &v, 0);
    }
    sl_buf_dispose(&buf);
    return rc;
}

/* What Redis said a window's ledger is: the host's copy of it, and the
 * host's own ledger never behind it. */
static int mirror_one(state_t *st, MDB_txn *txn, const char *key, uint64_t start, uint64_t spent, uint8_t low,
                      uint8_t exhausted)
{
    char mk[STATE_KEY_MAX + 4];
    mirror_key(mk, sizeof(mk), key);
    state_ledger_rec_t m, l;
    ledger_get(st, txn, mk, &m);
    if (m.window_start_ms > start || (m.window_start_ms == start && m.spent > spent))
        return MDB_SUCCESS; /* an answer older than what the copy has */
    m = (state_ledger_rec_t){start, spent, low, exhausted};
    int rc = ledger_put(st, txn, mk, &m);
    ledger_get(st, txn, key, &l);
    if (rc == MDB_SUCCESS && (l.window_start_ms < start || (l.window_start_ms == start && l.spent < spent))) {
        l = (state_ledger_rec_t){start, spent, low, exhausted};
        rc = ledger_put(st, txn, key, &l);
    }
    return rc;
}

static void mirror_many(state_t *st, char (*keys)[STATE_KEY_MAX], const state_cluster_credit_t *r)
{
    MDB_txn *txn;
    if (mdb_txn_begin(st->env, NULL, 0, &txn) != MDB_SUCCESS)
        return;
    int rc = MDB_SUCCESS;
    for (size_t i = 0; i < r->n && rc == MDB_SUCCESS; i++)
        rc = mirror_one(st, txn, keys[i], r->windows[i].start_ms, r->windows[i].spent, r->windows[i].low,
                        r->windows[i].exhausted);
    if (state_txn_end(txn, rc) != MDB_SUCCESS) {
        sl_log_warn("cluster: cannot keep the host's copy of a credit ledger");
    }
}

static void on_credits(void *data, redisReply *reply)
{
    cred_op_t *op = data;
    state_cluster_credit_t r;
    memset(&r, 0, sizeof(r));
    if (op->cl->destroying) {
        free(op);
        return;
    }
    /* {granted, then per window: grant, start, spent, event (0, 1 low, 2 exhausted)} */
    if (reply != NULL && reply->type == REDIS_REPLY_ARRAY && reply->elements == 1 + 4 * op->n) {
        r.ok = 1;
        r.granted = reply_u64(reply->element[0]) != 0;
        r.n = op->n;
        for (size_t i = 0; i < op->n; i++) {
            r.windows[i].grant = reply_u64(reply->element[1 + 4 * i]);
            r.windows[i].start_ms = reply_u64(reply->element[2 + 4 * i]);
            r.windows[i].spent = reply_u64(reply->element[3 + 4 * i]);
            uint64_t ev = reply_u64(reply->element[4 + 4 * i]);
            r.windows[i].event = (int)ev;
            r.windows[i].low = ev == 1;
            r.windows[i].exhausted = ev == 2;
        }
        mirror_many(op->cl->st, op->keys, &r);
    } else if (reply != NULL && reply->type == REDIS_REPLY_ERROR) {
        state_cluster_link_failed(op->cl, reply->str);
    }
    op->fn(op->data, &r);
    free(op);
}

int state_cluster_credit_lease(state_cluster_t *cl, const state_cluster_ask_t *asks, size_t n, uint32_t low_pct,
                               state_cluster_credit_fn fn, void *data)
{
    if (!state_cluster_up(cl) || n == 0 || n > STATE_CLUSTER_MAX_LEDGERS)
        return -1;
    char keys[STATE_CLUSTER_MAX_LEDGERS][STATE_CLUSTER_PREFIX_MAX + STATE_KEY_MAX + 8];
    char nums[STATE_CLUSTER_MAX_LEDGERS * 5 + 3][24], nkeys[8];
    const char *argv[8 + STATE_CLUSTER_MAX_LEDGERS * 6];
    size_t lens[8 + STATE_CLUSTER_MAX_LEDGERS * 6];
    int argc = 0;
    size_t k = 0;
    snprintf(nkeys, sizeof(nkeys), "%zu", n + 1);
    argv[argc++] = "EVALSHA";
    argv[argc++] = cl->sha[STATE_SCRIPT_CREDITS];
    argv[argc++] = nkeys;
    for (size_t i = 0; i < n; i++) {
        snprintf(keys[i], sizeof(keys[i]), "%sled:%s", cl->conf->prefix, asks[i].key);
        argv[argc++] = keys[i];
    }
    argv[argc++] = cl->hosts_key; /* hosts cut off: what they may spend alone is held back */
    snprintf(nums[k], sizeof(nums[k]), "%u", low_pct);
    argv[argc++] = nums[k++];
    argv[argc++] = cl->conf->host;
    snprintf(nums[k], sizeof(nums[k]), "%u", STATE_CLUSTER_ALIVE_MS);
    argv[argc++] = nums[k++];
    snprintf(nums[k], sizeof(nums[k]), "%u", STATE_CLUSTER_HOST_TTL_MS);
    argv[argc++] = nums[k++];
    for (size_t i = 0; i < n; i++) {
        const uint64_t v[5] = {asks[i].start_ms, asks[i].end_ms, asks[i].budget, asks[i].need, asks[i].size};
        for (int j = 0; j < 5; j++) {
            snprintf(nums[k], sizeof(nums[k]), "%llu", (unsigned long long)v[j]);
            argv[argc++] = nums[k++];
        }
    }
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    cred_op_t *op = sl_xcalloc(1, sizeof(*op));
    op->cl = cl;
    op->fn = fn;
    op->data = data;
    op->n = n;
    for (size_t i = 0; i < n; i++)
        snprintf(op->keys[i], sizeof(op->keys[i]), "%s", asks[i].key);
    if (state_redis_send(&cl->cmd, on_credits, op, argc, argv, lens) != 0) {
        free(op);
        return -1;
    }
    return 0;
}

/* ---- keeping the copies and merging back ---- */

/* A host's three records per window, all in the ledgers database:
 *   "<key>"    its ledger: what it knows was spent (never behind Redis' as
 *              last seen); what admin/ shows and the LMDB lease reads;
 *   "cl/<key>" Redis' ledger as last seen;
 *   "cu/<key>" what this host spent while Redis was away, not yet counted
 *              there (the fallback lease adds to it, the sync takes it off). */

typedef struct sync_op {
    state_cluster_t *cl;
    size_t n;
    char (*keys)[STATE_KEY_MAX];
    state_ledger_rec_t *unsynced; /* "cu/" as sent */
} sync_op_t;

static void sync_free(sync_op_t *op)
{
    free(op->keys);
    free(op->unsynced);
    free(op);
}

static void sync_one(state_t *st, MDB_txn *txn, const char *key, const state_ledger_rec_t *sent, uint64_t start,
                     uint64_t spent, uint64_t flags, int *rc)
{
    char uk[STATE_KEY_MAX + 4];
    state_cluster_ledger_unsynced_key(uk, sizeof(uk), key);
    if (sent->spent > 0) {
        /* what was pushed is counted now: off the host's unsynced count */
        state_ledger_rec_t u;
        ledger_get(st, txn, uk, &u);
        if (u.window_start_ms == sent->window_start_ms)
            u.spent = u.spent > sent->spent ? u.spent - sent->spent : 0;
        *rc = ledger_put(st, txn, uk, &u);
    }
    if (*rc == MDB_SUCCESS && start != 0)
        *rc = mirror_one(st, txn, key, start, spent, (uint8_t)(flags & 1), (uint8_t)((flags >> 1) & 1));
}

static void on_sync(void *data, redisReply *reply)
{
    sync_op_t *op = data;
    state_cluster_t *cl = op->cl;
    cl->ledger_sync_pending = 0;
    if (cl->destroying || reply == NULL || reply->type != REDIS_REPLY_ARRAY || reply->elements != 3 * op->n) {
        if (!cl->destroying && reply != NULL && reply->type == REDIS_REPLY_ERROR)
            state_cluster_link_failed(cl, reply->str);
        sync_free(op);
        return;
    }
    state_t *st = cl->st;
    MDB_txn *txn;
    if (mdb_txn_begin(st->env, NULL, 0, &txn) != MDB_SUCCESS) {
        sync_free(op);
        return;
    }
    int rc = MDB_SUCCESS;
    for (size_t i = 0; i < op->n && rc == MDB_SUCCESS; i++)
        sync_one(st, txn, op->keys[i], &op->unsynced[i], reply_u64(reply->element[3 * i]),
                 reply_u64(reply->element[3 * i + 1]), reply_u64(reply->element[3 * i + 2]), &rc);
    if (state_txn_end(txn, rc) != MDB_SUCCESS) {
        sl_log_warn("cluster: cannot update the host's copies of the credit ledgers");
    }
    sync_free(op);
}

void state_cluster_ledgers_sync(state_cluster_t *cl)
{
    size_t n = cl->nledgers;
    if (n == 0 || cl->ledger_sync_pending || !state_cluster_up(cl))
        return;
    cl->next_ledger_sync_ms = sl_now_ms() + LEDGER_SYNC_MS;
    sync_op_t *op = sl_xcalloc(1, sizeof(*op));
    op->cl = cl;
    op->n = n;
    op->keys = sl_xcalloc(n, sizeof(*op->keys));
    op->unsynced = sl_xcalloc(n, sizeof(*op->unsynced));
    state_ledger_rec_t *copies = sl_xcalloc(n, sizeof(*copies));
    MDB_txn *txn;
    if (mdb_txn_begin(cl->st->env, NULL, MDB_RDONLY, &txn) != MDB_SUCCESS) {
        free(copies);
        sync_free(op);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        char k[STATE_KEY_MAX + 4];
        snprintf(op->keys[i], sizeof(op->keys[i]), "%s", cl->ledgers[i]);
        mirror_key(k, sizeof(k), cl->ledgers[i]);
        ledger_get(cl->st, txn, k, &copies[i]);
        state_cluster_ledger_unsynced_key(k, sizeof(k), cl->ledgers[i]);
        ledger_get(cl->st, txn, k, &op->unsynced[i]);
    }
    mdb_txn_abort(txn);
    /* per ledger (start, floor, delta): Redis' window never goes back, its
     * spent never below the host's copy of it (a Redis that lost its data
     * is given it back), plus what the host spent alone */
    const char **argv = sl_xcalloc(4 + 4 * n, sizeof(*argv));
    size_t *lens = sl_xcalloc(4 + 4 * n, sizeof(*lens));
    char (*rkeys)[STATE_CLUSTER_PREFIX_MAX + STATE_KEY_MAX + 8] = sl_xcalloc(n, sizeof(*rkeys));
    char (*nums)[24] = sl_xcalloc(3 * n, sizeof(*nums));
    char nkeys[24];
    snprintf(nkeys, sizeof(nkeys), "%zu", n);
    int argc = 0;
    argv[argc++] = "EVALSHA";
    argv[argc++] = cl->sha[STATE_SCRIPT_LEDGERS];
    argv[argc++] = nkeys;
    for (size_t i = 0; i < n; i++) {
        snprintf(rkeys[i], sizeof(rkeys[i]), "%sled:%s", cl->conf->prefix, op->keys[i]);
        argv[argc++] = rkeys[i];
    }
    for (size_t i = 0; i < n; i++) {
        const state_ledger_rec_t *u = &op->unsynced[i], *c = &copies[i];
        uint64_t start = u->spent > 0 && u->window_start_ms > c->window_start_ms ? u->window_start_ms
                                                                                : c->window_start_ms;
        if (u->spent > 0 && u->window_start_ms != start)
            op->unsynced[i].spent = 0; /* an older window's: it has turned over, nothing to count */
        uint64_t v[3] = {start, c->window_start_ms == start ? c->spent : 0, op->unsynced[i].spent};
        for (int j = 0; j < 3; j++) {
            snprintf(nums[3 * i + (size_t)j], sizeof(nums[0]), "%llu", (unsigned long long)v[j]);
            argv[argc++] = nums[3 * i + (size_t)j];
        }
    }
    argv[argc++] = cl->conf->host; /* Redis notes what this host was told */
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    if (state_redis_send(&cl->cmd, on_sync, op, argc, argv, lens) == 0)
        cl->ledger_sync_pending = 1;
    else
        sync_free(op);
    free(copies);
    free(argv);
    free(lens);
    free(rkeys);
    free(nums);
}

void state_cluster_watch_ledgers(state_cluster_t *cl, const char *const *keys, size_t n)
{
    for (size_t i = 0; i < cl->nledgers; i++)
        free(cl->ledgers[i]);
    free(cl->ledgers);
    cl->ledgers = sl_xcalloc(n ? n : 1, sizeof(*cl->ledgers));
    for (size_t i = 0; i < n; i++)
        cl->ledgers[i] = sl_xstrdup(keys[i]);
    cl->nledgers = n;
}

uint64_t state_cluster_now_ms(const state_cluster_t *cl)
{
    int64_t now = (int64_t)sl_shared_ms() + (cl != NULL ? cl->redis_offset_ms : 0);
    return now > 0 ? (uint64_t)now : 0;
}

void state_cluster_ledger_mirror_key(char *out, size_t cap, const char *key)
{
    mirror_key(out, cap, key);
}

void state_cluster_ledger_unsynced_key(char *out, size_t cap, const char *key)
{
    snprintf(out, cap, "cu/%s", key);
}
