/* state/state_cache.c: the response cache's LMDB store (state/state_cache.h).
 *
 * Three databases: entries (key -> header + answer), seqs (key -> its use
 * sequence) and lru (sequence, big-endian -> key). A sequence is the last
 * one in lru plus one, taken inside the write transaction that uses it, so
 * workers never hand out the same one. The use sequence lives apart from
 * the entry so that moving an entry to the young end rewrites 8 bytes, not
 * the answer. */
#include "state/state_cache.h"

#include <lmdb.h>
#include <stdlib.h>
#include <string.h>

#include "base/sl_log.h"
#include "state/state_int.h"

#define ENTRY_VERSION 1

enum { DB_ENTRIES, DB_SEQS, DB_LRU, DB_COUNT };
static const char *const db_names[DB_COUNT] = {"entries", "seqs", "lru"};

/* An entry's value: this header, the network's name, the answer. */
typedef struct entry_head {
    uint8_t version;
    uint8_t netlen;
    uint8_t zero[6];
    uint64_t stored_ms;
} entry_head_t;

struct state_cache {
    MDB_env *env;
    MDB_dbi dbi[DB_COUNT];
    MDB_txn *rtxn;                /* reused snapshot (reset between gets) */
    size_t map_bytes;
    uint8_t (*touched)[STATE_CACHE_KEY_LEN];
    size_t ntouched;
    state_cache_stats_t stats;
};

static MDB_val val_of(const void *p, size_t n)
{
    return (MDB_val){.mv_size = n, .mv_data = (void *)p};
}

static void seq_key(uint64_t seq, uint8_t out[8])
{
    for (int i = 7; i >= 0; i--, seq >>= 8)
        out[i] = (uint8_t)seq;
}

static uint64_t seq_of(const MDB_val *v)
{
    uint64_t s = 0;
    const uint8_t *p = v->mv_data;
    for (size_t i = 0; i < 8 && i < v->mv_size; i++)
        s = s << 8 | p[i];
    return s;
}

static sl_err_t open_dbs(state_cache_t *c)
{
    MDB_txn *txn;
    int rc = mdb_txn_begin(c->env, NULL, 0, &txn);
    for (int i = 0; i < DB_COUNT && rc == MDB_SUCCESS; i++)
        rc = mdb_dbi_open(txn, db_names[i], MDB_CREATE, &c->dbi[i]);
    if (rc != MDB_SUCCESS) {
        mdb_txn_abort(txn);
        return state_lmdb_err("cache: open", rc);
    }
    return state_lmdb_err("cache: commit", mdb_txn_commit(txn));
}

sl_err_t state_cache_open(const state_cache_conf_t *conf, state_cache_t **out)
{
    sl_err_t err = state_make_dirs(conf->path);
    if (err != SL_OK)
        return err;
    state_cache_t *c = sl_xcalloc(1, sizeof(*c));
    c->map_bytes = conf->max_mb * 1024 * 1024;
    c->touched = sl_xmalloc(STATE_CACHE_TOUCH_MAX * sizeof(*c->touched));
    int rc = mdb_env_create(&c->env);
    if (rc == MDB_SUCCESS)
        rc = mdb_env_set_maxdbs(c->env, DB_COUNT);
    if (rc == MDB_SUCCESS)
        rc = mdb_env_set_mapsize(c->env, c->map_bytes);
    if (rc == MDB_SUCCESS)
        rc = mdb_env_set_maxreaders(c->env, 512);
    if (rc == MDB_SUCCESS)
        rc = mdb_env_open(c->env, conf->path, MDB_NOTLS | MDB_NOSYNC | MDB_NORDAHEAD, 0640);
    if (rc != MDB_SUCCESS)
        err = state_lmdb_err(conf->path, rc);
    else
        err = open_dbs(c);
    if (err != SL_OK) {
        state_cache_close(c);
        return err;
    }
    *out = c;
    return SL_OK;
}

void state_cache_close(state_cache_t *c)
{
    if (c == NULL)
        return;
    if (c->rtxn != NULL)
        mdb_txn_abort(c->rtxn);
    if (c->env != NULL)
        mdb_env_close(c->env);
    free(c->touched);
    free(c);
}

sl_err_t state_cache_get(state_cache_t *c, const uint8_t key[STATE_CACHE_KEY_LEN], sl_buf_t *out)
{
    int rc = c->rtxn == NULL ? mdb_txn_begin(c->env, NULL, MDB_RDONLY, &c->rtxn) : mdb_txn_renew(c->rtxn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("cache: read", rc);
    MDB_val k = val_of(key, STATE_CACHE_KEY_LEN), v;
    rc = mdb_get(c->rtxn, c->dbi[DB_ENTRIES], &k, &v);
    sl_err_t err = SL_ERR_NOT_FOUND;
    entry_head_t h;
    if (rc == MDB_SUCCESS && v.mv_size >= sizeof(h)) {
        memcpy(&h, v.mv_data, sizeof(h));
        size_t skip = sizeof(h) + h.netlen;
        if (h.version == ENTRY_VERSION && v.mv_size >= skip) {
            sl_buf_append(out, (const char *)v.mv_data + skip, v.mv_size - skip);
            err = SL_OK;
        }
    }
    mdb_txn_reset(c->rtxn);
    if (err == SL_OK && c->ntouched < STATE_CACHE_TOUCH_MAX)
        memcpy(c->touched[c->ntouched++], key, STATE_CACHE_KEY_LEN);
    if (err == SL_OK)
        c->stats.hits++;
    else
        c->stats.misses++;
    return err;
}

/* Bytes the pages of the three databases take, as txn sees them. */
static size_t used_in(state_cache_t *c, MDB_txn *txn)
{
    size_t pages = 0, psize = 4096;
    for (int i = 0; i < DB_COUNT; i++) {
        MDB_stat s;
        if (mdb_stat(txn, c->dbi[i], &s) == MDB_SUCCESS) {
            pages += s.ms_branch_pages + s.ms_leaf_pages + s.ms_overflow_pages;
            psize = s.ms_psize;
        }
    }
    return pages * psize;
}

/* The next use sequence: the youngest in lru plus one. */
static int next_seq(state_cache_t *c, MDB_txn *txn, uint64_t *seq)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, c->dbi[DB_LRU], &cur);
    if (rc != MDB_SUCCESS)
        return rc;
    MDB_val k, v;
    rc = mdb_cursor_get(cur, &k, &v, MDB_LAST);
    *seq = rc == MDB_SUCCESS ? seq_of(&k) + 1 : 1;
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? MDB_SUCCESS : rc;
}

/* Makes key the youngest entry: its old place in lru (if any) goes. */
static int make_young(state_cache_t *c, MDB_txn *txn, const uint8_t *key, uint64_t seq)
{
    MDB_val k = val_of(key, STATE_CACHE_KEY_LEN), v;
    int rc = mdb_get(txn, c->dbi[DB_SEQS], &k, &v);
    if (rc == MDB_SUCCESS) {
        uint8_t old[8];
        seq_key(seq_of(&v), old);
        MDB_val ok = val_of(old, 8);
        rc = mdb_del(txn, c->dbi[DB_LRU], &ok, NULL);
        if (rc == MDB_NOTFOUND)
            rc = MDB_SUCCESS;
    } else if (rc == MDB_NOTFOUND) {
        rc = MDB_SUCCESS;
    }
    uint8_t sk[8];
    seq_key(seq, sk);
    MDB_val skv = val_of(sk, 8);
    if (rc == MDB_SUCCESS)
        rc = mdb_put(txn, c->dbi[DB_LRU], &skv, &k, 0);
    if (rc == MDB_SUCCESS)
        rc = mdb_put(txn, c->dbi[DB_SEQS], &k, &skv, 0);
    return rc;
}

/* Drops the oldest entries inside txn until the databases take at most
 * target bytes (or none is left). */
static int evict_in(state_cache_t *c, MDB_txn *txn, size_t target)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, c->dbi[DB_LRU], &cur);
    if (rc != MDB_SUCCESS)
        return rc;
    MDB_val k, v;
    while (used_in(c, txn) > target && (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST)) == MDB_SUCCESS) {
        uint8_t key[STATE_CACHE_KEY_LEN];
        if (v.mv_size != STATE_CACHE_KEY_LEN) {
            rc = mdb_cursor_del(cur, 0); /* not ours to read: drop it */
            continue;
        }
        memcpy(key, v.mv_data, sizeof(key));
        MDB_val kk = val_of(key, sizeof(key));
        rc = mdb_cursor_del(cur, 0);
        if (rc == MDB_SUCCESS && (rc = mdb_del(txn, c->dbi[DB_ENTRIES], &kk, NULL)) == MDB_NOTFOUND)
            rc = MDB_SUCCESS;
        if (rc == MDB_SUCCESS && (rc = mdb_del(txn, c->dbi[DB_SEQS], &kk, NULL)) == MDB_NOTFOUND)
            rc = MDB_SUCCESS;
        if (rc != MDB_SUCCESS)
            break;
        c->stats.evictions++;
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? MDB_SUCCESS : rc;
}

static sl_err_t evict(state_cache_t *c, size_t target)
{
    MDB_txn *txn = NULL;
    int rc = mdb_txn_begin(c->env, NULL, 0, &txn);
    if (rc == MDB_SUCCESS)
        rc = evict_in(c, txn, target);
    if (rc != MDB_SUCCESS) {
        if (txn != NULL)
            mdb_txn_abort(txn);
        return state_lmdb_err("cache: evict", rc);
    }
    return state_lmdb_err("cache: evict commit", mdb_txn_commit(txn));
}

static int put_in(state_cache_t *c, MDB_txn *txn, const uint8_t *key, const char *network, const void *bytes,
                  size_t len, uint64_t now_ms)
{
    size_t netlen = strnlen(network, STATE_CACHE_NETWORK_MAX);
    entry_head_t h = {.version = ENTRY_VERSION, .netlen = (uint8_t)netlen, .stored_ms = now_ms};
    MDB_val k = val_of(key, STATE_CACHE_KEY_LEN), v = {.mv_size = sizeof(h) + netlen + len};
    uint64_t seq;
    int rc = next_seq(c, txn, &seq);
    if (rc == MDB_SUCCESS)
        rc = mdb_put(txn, c->dbi[DB_ENTRIES], &k, &v, MDB_RESERVE);
    if (rc != MDB_SUCCESS)
        return rc;
    memcpy(v.mv_data, &h, sizeof(h));
    memcpy((char *)v.mv_data + sizeof(h), network, netlen);
    memcpy((char *)v.mv_data + sizeof(h) + netlen, bytes, len);
    return make_young(c, txn, key, seq);
}

sl_err_t state_cache_put(state_cache_t *c, const uint8_t key[STATE_CACHE_KEY_LEN], const char *network,
                         const void *bytes, size_t len, uint64_t now_ms)
{
    if (len > c->map_bytes / 4)
        return SL_ERR_TOO_LARGE;
    size_t high = c->map_bytes / 100 * STATE_CACHE_HIGH_PCT, low = c->map_bytes / 100 * STATE_CACHE_LOW_PCT;
    for (int round = 0; round < 2; round++) {
        MDB_txn *txn;
        int rc = mdb_txn_begin(c->env, NULL, 0, &txn);
        if (rc != MDB_SUCCESS)
            return state_lmdb_err("cache: put", rc);
        if (used_in(c, txn) + len > high)
            rc = evict_in(c, txn, low > len ? low - len : 0);
        if (rc == MDB_SUCCESS)
            rc = put_in(c, txn, key, network, bytes, len, now_ms);
        if (rc == MDB_SUCCESS)
            rc = mdb_txn_commit(txn);
        else
            mdb_txn_abort(txn);
        if (rc == MDB_SUCCESS) {
            c->stats.puts++;
            return SL_OK;
        }
        if (rc != MDB_MAP_FULL || round == 1 || evict(c, low / 2) != SL_OK) {
            c->stats.put_failures++;
            return state_lmdb_err("cache: put", rc);
        }
    }
    return SL_ERR_STATE; /* not reached */
}

sl_err_t state_cache_flush(state_cache_t *c)
{
    if (c->ntouched == 0)
        return SL_OK;
    MDB_txn *txn;
    int rc = mdb_txn_begin(c->env, NULL, 0, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("cache: flush", rc);
    uint64_t first = 0, seq = 0;
    rc = next_seq(c, txn, &first);
    seq = first;
    for (size_t i = 0; i < c->ntouched && rc == MDB_SUCCESS; i++) {
        MDB_val k = val_of(c->touched[i], STATE_CACHE_KEY_LEN), v;
        rc = mdb_get(txn, c->dbi[DB_SEQS], &k, &v);
        if (rc == MDB_NOTFOUND) { /* evicted since, or purged */
            rc = MDB_SUCCESS;
            continue;
        }
        if (rc == MDB_SUCCESS && seq_of(&v) < first) /* a key hit twice moves once */
            rc = make_young(c, txn, c->touched[i], seq++);
    }
    c->ntouched = 0;
    if (rc != MDB_SUCCESS) {
        mdb_txn_abort(txn);
        return state_lmdb_err("cache: flush", rc);
    }
    return state_lmdb_err("cache: flush commit", mdb_txn_commit(txn));
}

/* 1 if the entry's value v belongs to network (NULL: every network). */
static int of_network(const MDB_val *v, const char *network)
{
    entry_head_t h;
    if (network == NULL)
        return 1;
    if (v->mv_size < sizeof(h))
        return 1; /* unreadable: purge it too */
    memcpy(&h, v->mv_data, sizeof(h));
    size_t n = strnlen(network, STATE_CACHE_NETWORK_MAX);
    return h.netlen == n && v->mv_size >= sizeof(h) + n && memcmp((const char *)v->mv_data + sizeof(h), network, n) == 0;
}

static int purge_in(state_cache_t *c, MDB_txn *txn, const char *network, size_t *removed)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, c->dbi[DB_ENTRIES], &cur);
    MDB_val k, v;
    for (int op = MDB_FIRST; rc == MDB_SUCCESS && (rc = mdb_cursor_get(cur, &k, &v, op)) == MDB_SUCCESS;
         op = MDB_NEXT) {
        if (!of_network(&v, network) || k.mv_size != STATE_CACHE_KEY_LEN)
            continue;
        uint8_t key[STATE_CACHE_KEY_LEN];
        memcpy(key, k.mv_data, sizeof(key));
        MDB_val kk = val_of(key, sizeof(key)), sv;
        if ((rc = mdb_get(txn, c->dbi[DB_SEQS], &kk, &sv)) == MDB_SUCCESS) {
            uint8_t sk[8];
            seq_key(seq_of(&sv), sk);
            MDB_val skv = val_of(sk, 8);
            if ((rc = mdb_del(txn, c->dbi[DB_LRU], &skv, NULL)) == MDB_NOTFOUND)
                rc = MDB_SUCCESS;
            if (rc == MDB_SUCCESS)
                rc = mdb_del(txn, c->dbi[DB_SEQS], &kk, NULL);
        } else if (rc == MDB_NOTFOUND) {
            rc = MDB_SUCCESS;
        }
        if (rc == MDB_SUCCESS && (rc = mdb_cursor_del(cur, 0)) == MDB_SUCCESS)
            (*removed)++;
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? MDB_SUCCESS : rc;
}

sl_err_t state_cache_purge(state_cache_t *c, const char *network, size_t *removed)
{
    *removed = 0;
    MDB_txn *txn;
    int rc = mdb_txn_begin(c->env, NULL, 0, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("cache: purge", rc);
    rc = purge_in(c, txn, network, removed);
    if (rc != MDB_SUCCESS) {
        mdb_txn_abort(txn);
        *removed = 0;
        return state_lmdb_err("cache: purge", rc);
    }
    return state_lmdb_err("cache: purge commit", mdb_txn_commit(txn));
}

void state_cache_usage(state_cache_t *c, size_t *entries, size_t *used, size_t *size)
{
    MDB_txn *txn;
    *entries = *used = 0;
    *size = c->map_bytes;
    if (mdb_txn_begin(c->env, NULL, MDB_RDONLY, &txn) != MDB_SUCCESS)
        return;
    MDB_stat s;
    if (mdb_stat(txn, c->dbi[DB_ENTRIES], &s) == MDB_SUCCESS)
        *entries = s.ms_entries;
    *used = used_in(c, txn);
    mdb_txn_abort(txn);
}

const state_cache_stats_t *state_cache_stats(const state_cache_t *c)
{
    return &c->stats;
}
