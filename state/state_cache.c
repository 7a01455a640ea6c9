/* state/state_cache.c: the response cache's LMDB store (state/state_cache.h).
 *
 * entries (key -> header + answer), seqs (key -> its use sequence), lru
 * (sequence, big-endian -> key) and meta (the evictions counted). A sequence is the last
 * one in lru plus one, taken inside the write transaction that uses it, so
 * workers never hand out the same one. The use sequence lives apart from
 * the entry so that moving an entry to the young end rewrites 8 bytes, not
 * the answer. */
#include "state/state_cache.h"

#include <lmdb.h>
#include <stdlib.h>
#include <string.h>

#include "base/sl_log.h"
#include "state/state_cache_redis.h"
#include "state/state_cluster_int.h"
#include "state/state_int.h"

#define ENTRY_VERSION 1

enum { DB_ENTRIES, DB_SEQS, DB_LRU, DB_META, DB_COUNT };
static const char *const db_names[DB_COUNT] = {"entries", "seqs", "lru", "meta"};
#define META_EVICTIONS "evictions"   /* entries evicted, ever */
#define META_BYTES "bytes"           /* the entries' bytes now */

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
    size_t high, low;             /* eviction starts past high and stops at low (bytes of entries) */
    uint8_t (*touched)[STATE_CACHE_KEY_LEN];
    size_t ntouched;
    uint64_t *noted;              /* [TOUCH_MAX]: a key's first 8 bytes at slot (them % TOUCH_MAX) once
                                   * noted since the flush, so a hot key is noted (and moved) once */
    state_cache_stats_t stats;
    uint64_t failures;            /* LMDB errors met (logged one in CACHE_LOG_EVERY) */
    state_cluster_t *tier;        /* the Redis tier's link (state_cache_redis.h); NULL: none */
    state_cache_redis_conf_t tier_conf;
};

/* Converts an LMDB return code for the cache: a full map says cache.max_mb,
 * and failures are logged once, then once per CACHE_LOG_EVERY (a cache that
 * cannot keep an entry loses the entry, never an answer: no log storm). */
#define CACHE_LOG_EVERY 1000
static sl_err_t cache_err(state_cache_t *c, const char *what, int rc)
{
    if (rc == MDB_SUCCESS)
        return SL_OK;
    if (rc == MDB_NOTFOUND)
        return SL_ERR_NOT_FOUND;
    if (c == NULL || c->failures++ % CACHE_LOG_EVERY == 0)
        sl_log_warn("cache: %s: %s%s", what, mdb_strerror(rc),
                    rc == MDB_MAP_FULL ? " (cache.max_mb is too small for one entry and its pages)" : "");
    return rc == MDB_MAP_FULL ? SL_ERR_MAP_FULL : SL_ERR_STATE;
}

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
        return cache_err(c, "open", rc);
    }
    return cache_err(c, "commit", mdb_txn_commit(txn));
}

sl_err_t state_cache_open(const state_cache_conf_t *conf, state_cache_t **out)
{
    sl_err_t err = state_make_dirs(conf->path);
    if (err != SL_OK)
        return err;
    state_cache_t *c = sl_xcalloc(1, sizeof(*c));
    c->map_bytes = conf->max_mb * 1024 * 1024;
    c->touched = sl_xmalloc(STATE_CACHE_TOUCH_MAX * sizeof(*c->touched));
    c->noted = sl_xcalloc(STATE_CACHE_TOUCH_MAX, sizeof(*c->noted));
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
        err = cache_err(c, conf->path, rc);
    else
        err = open_dbs(c);
    if (err != SL_OK) { /* an env that did not open must not be asked anything (LMDB faults) */
        state_cache_close(c);
        return err;
    }
    MDB_stat st;
    size_t psize = mdb_env_stat(c->env, &st) == MDB_SUCCESS ? st.ms_psize : 4096;
    size_t room = c->map_bytes / 100 * STATE_CACHE_ENTRIES_PCT, floor = STATE_CACHE_HEADROOM_PAGES * psize;
    c->high = room > floor ? room - floor / 2 : 0;
    c->low = c->high > c->map_bytes / STATE_CACHE_EVICT_DIV ? c->high - c->map_bytes / STATE_CACHE_EVICT_DIV : 0;
    *out = c;
    return SL_OK;
}

/* The Redis tier is kept with the handle so that pool/ and admin/ reach it
 * through the handle they already have (state_cache_redis.h). */
void state_cache_tier_set(state_cache_t *c, state_cluster_t *cl, const state_cache_redis_conf_t *conf)
{
    c->tier = cl;
    if (conf != NULL)
        c->tier_conf = *conf;
    if (cl != NULL)
        cl->cache = c; /* another host's purge reaches this one's entries (state_cache_redis_message) */
}

state_cluster_t *state_cache_tier(const state_cache_t *c, state_cache_redis_conf_t *conf)
{
    if (c == NULL || c->tier == NULL)
        return NULL;
    if (conf != NULL)
        *conf = c->tier_conf;
    return c->tier;
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
    free(c->noted);
    free(c);
}

/* Notes a hit for the next flush, once per key between flushes (keys are
 * hashes: their first bytes spread evenly; two keys sharing a slot may both
 * be noted, which costs a second move, nothing else). */
static void note_hit(state_cache_t *c, const uint8_t *key)
{
    uint64_t head;
    memcpy(&head, key, sizeof(head));
    uint64_t *slot = &c->noted[head % STATE_CACHE_TOUCH_MAX], mark = head + 1; /* 0: an empty slot */
    if ((mark != 0 && *slot == mark) || c->ntouched == STATE_CACHE_TOUCH_MAX)
        return;
    *slot = mark;
    memcpy(c->touched[c->ntouched++], key, STATE_CACHE_KEY_LEN);
}

sl_err_t state_cache_get(state_cache_t *c, const uint8_t key[STATE_CACHE_KEY_LEN], sl_buf_t *out)
{
    int rc = c->rtxn == NULL ? mdb_txn_begin(c->env, NULL, MDB_RDONLY, &c->rtxn) : mdb_txn_renew(c->rtxn);
    if (rc != MDB_SUCCESS)
        return cache_err(c, "read", rc);
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
    if (err == SL_OK)
        note_hit(c, key);
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

/* meta's counters: big-endian u64 under a name. */
static uint64_t meta_get(state_cache_t *c, MDB_txn *txn, const char *name)
{
    MDB_val k = val_of(name, strlen(name)), v;
    return mdb_get(txn, c->dbi[DB_META], &k, &v) == MDB_SUCCESS ? seq_of(&v) : 0;
}

static int meta_add(state_cache_t *c, MDB_txn *txn, const char *name, int64_t delta)
{
    if (delta == 0)
        return MDB_SUCCESS;
    uint64_t now = meta_get(c, txn, name);
    uint64_t next = delta < 0 && (uint64_t)-delta > now ? 0 : now + (uint64_t)delta;
    uint8_t b[8];
    seq_key(next, b);
    MDB_val k = val_of(name, strlen(name)), v = val_of(b, 8);
    return mdb_put(txn, c->dbi[DB_META], &k, &v, 0);
}

/* Deletes key's entry, its sequence and (if lru_too) its place in lru;
 * *size gets the entry's bytes (0 if it had none). */
static int drop_entry(state_cache_t *c, MDB_txn *txn, const uint8_t *key, int lru_too, size_t *size)
{
    MDB_val kk = val_of(key, STATE_CACHE_KEY_LEN), v;
    *size = 0;
    int rc = mdb_get(txn, c->dbi[DB_ENTRIES], &kk, &v);
    if (rc == MDB_SUCCESS) {
        *size = v.mv_size;
        rc = mdb_del(txn, c->dbi[DB_ENTRIES], &kk, NULL);
    }
    if (rc == MDB_SUCCESS || rc == MDB_NOTFOUND)
        rc = mdb_get(txn, c->dbi[DB_SEQS], &kk, &v);
    if (rc == MDB_SUCCESS && lru_too) {
        uint8_t sk[8];
        seq_key(seq_of(&v), sk);
        MDB_val skv = val_of(sk, 8);
        if ((rc = mdb_del(txn, c->dbi[DB_LRU], &skv, NULL)) == MDB_NOTFOUND)
            rc = MDB_SUCCESS;
    }
    if (rc == MDB_SUCCESS)
        rc = mdb_del(txn, c->dbi[DB_SEQS], &kk, NULL);
    return rc == MDB_NOTFOUND ? MDB_SUCCESS : rc;
}

/* Drops up to EVICT_BATCH of the oldest entries in txn while the entries'
 * bytes are above target; *done once they are not (or none is left). */
#define EVICT_BATCH 16
static int evict_batch(state_cache_t *c, MDB_txn *txn, uint64_t target, int *done, uint64_t *evicted_out)
{
    MDB_cursor *cur;
    uint64_t bytes = meta_get(c, txn, META_BYTES), freed = 0, evicted = 0;
    int rc = mdb_cursor_open(txn, c->dbi[DB_LRU], &cur);
    *done = 0;
    MDB_val k, v;
    while (rc == MDB_SUCCESS && evicted < EVICT_BATCH && bytes - freed > target &&
           (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST)) == MDB_SUCCESS) {
        uint8_t key[STATE_CACHE_KEY_LEN];
        int ours = v.mv_size == STATE_CACHE_KEY_LEN;
        if (ours)
            memcpy(key, v.mv_data, sizeof(key));
        rc = mdb_cursor_del(cur, 0); /* its place in lru (one not ours to read goes too) */
        size_t size = 0;
        if (rc == MDB_SUCCESS && ours)
            rc = drop_entry(c, txn, key, 0, &size);
        freed += size > bytes - freed ? bytes - freed : size;
        evicted++;
    }
    mdb_cursor_close(cur);
    if (rc == MDB_NOTFOUND || bytes - freed <= target) {
        *done = 1;
        rc = rc == MDB_NOTFOUND ? MDB_SUCCESS : rc;
    }
    if (rc == MDB_SUCCESS)
        rc = meta_add(c, txn, META_BYTES, -(int64_t)freed);
    if (rc == MDB_SUCCESS)
        rc = meta_add(c, txn, META_EVICTIONS, (int64_t)evicted);
    *evicted_out = evicted;
    return rc;
}

/* Evicts the oldest entries until theirs bytes are at most target, in
 * transactions of EVICT_BATCH: a deletion copies the pages it changes, and a
 * small batch keeps that within the map's headroom. */
static sl_err_t evict_to(state_cache_t *c, uint64_t target)
{
    for (int done = 0; !done;) {
        MDB_txn *txn = NULL;
        uint64_t evicted = 0;
        int rc = mdb_txn_begin(c->env, NULL, 0, &txn);
        if (rc == MDB_SUCCESS)
            rc = evict_batch(c, txn, target, &done, &evicted);
        if (rc == MDB_SUCCESS)
            rc = mdb_txn_commit(txn);
        else if (txn != NULL)
            mdb_txn_abort(txn);
        if (rc != MDB_SUCCESS)
            return cache_err(c, "evict", rc);
        c->stats.evictions += evicted;
    }
    return SL_OK;
}

static int put_in(state_cache_t *c, MDB_txn *txn, const uint8_t *key, const char *network, const void *bytes,
                  size_t len, uint64_t now_ms)
{
    size_t netlen = strnlen(network, STATE_CACHE_NETWORK_MAX), old = 0;
    entry_head_t h = {.version = ENTRY_VERSION, .netlen = (uint8_t)netlen, .stored_ms = now_ms};
    MDB_val k = val_of(key, STATE_CACHE_KEY_LEN), v = {.mv_size = sizeof(h) + netlen + len}, was;
    uint64_t seq;
    int rc = next_seq(c, txn, &seq);
    if (rc == MDB_SUCCESS && mdb_get(txn, c->dbi[DB_ENTRIES], &k, &was) == MDB_SUCCESS)
        old = was.mv_size; /* another worker kept the same answer first */
    if (rc == MDB_SUCCESS)
        rc = mdb_put(txn, c->dbi[DB_ENTRIES], &k, &v, MDB_RESERVE);
    if (rc != MDB_SUCCESS)
        return rc;
    memcpy(v.mv_data, &h, sizeof(h));
    memcpy((char *)v.mv_data + sizeof(h), network, netlen);
    memcpy((char *)v.mv_data + sizeof(h) + netlen, bytes, len);
    rc = meta_add(c, txn, META_BYTES, (int64_t)v.mv_size - (int64_t)old);
    return rc == MDB_SUCCESS ? make_young(c, txn, key, seq) : rc;
}

/* The entries' bytes now, as the last committed write left them. */
static uint64_t bytes_now(state_cache_t *c)
{
    MDB_txn *txn;
    if (mdb_txn_begin(c->env, NULL, MDB_RDONLY, &txn) != MDB_SUCCESS)
        return 0;
    uint64_t b = meta_get(c, txn, META_BYTES);
    mdb_txn_abort(txn);
    return b;
}

sl_err_t state_cache_put(state_cache_t *c, const uint8_t key[STATE_CACHE_KEY_LEN], const char *network,
                         const void *bytes, size_t len, uint64_t now_ms)
{
    if (len > c->map_bytes / 4 || len >= c->low)
        return SL_ERR_TOO_LARGE;
    size_t step = c->map_bytes / STATE_CACHE_EVICT_DIV;
    if (bytes_now(c) + len > c->high && evict_to(c, c->low - len) != SL_OK) {
        c->stats.put_failures++;
        return SL_ERR_MAP_FULL;
    }
    for (int round = 0; round < 2; round++) {
        MDB_txn *txn;
        int rc = mdb_txn_begin(c->env, NULL, 0, &txn);
        if (rc == MDB_SUCCESS && (rc = put_in(c, txn, key, network, bytes, len, now_ms)) == MDB_SUCCESS)
            rc = mdb_txn_commit(txn);
        else if (rc != MDB_SUCCESS && txn != NULL)
            mdb_txn_abort(txn);
        if (rc == MDB_SUCCESS) {
            c->stats.puts++;
            return SL_OK;
        }
        /* full below the high mark (the pages of recent writes are not free yet): one more step */
        uint64_t b = bytes_now(c);
        if (rc != MDB_MAP_FULL || round == 1 || evict_to(c, b > step ? b - step : 0) != SL_OK) {
            c->stats.put_failures++;
            return cache_err(c, "put", rc);
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
        return cache_err(c, "flush", rc);
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
    memset(c->noted, 0, STATE_CACHE_TOUCH_MAX * sizeof(*c->noted));
    if (rc != MDB_SUCCESS) {
        mdb_txn_abort(txn);
        return cache_err(c, "flush", rc);
    }
    return cache_err(c, "flush commit", mdb_txn_commit(txn));
}

/* 1 if the entry's value v belongs to network. */
static int of_network(const MDB_val *v, const char *network)
{
    entry_head_t h;
    if (v->mv_size < sizeof(h))
        return 1; /* unreadable: purge it too */
    memcpy(&h, v->mv_data, sizeof(h));
    size_t n = strnlen(network, STATE_CACHE_NETWORK_MAX);
    return h.netlen == n && v->mv_size >= sizeof(h) + n && memcmp((const char *)v->mv_data + sizeof(h), network, n) == 0;
}

/* Every entry goes: the databases are emptied whole (no page is copied). */
static int purge_all_in(state_cache_t *c, MDB_txn *txn, size_t *removed)
{
    MDB_stat st;
    int rc = mdb_stat(txn, c->dbi[DB_ENTRIES], &st);
    for (int i = DB_ENTRIES; rc == MDB_SUCCESS && i <= DB_LRU; i++)
        rc = mdb_drop(txn, c->dbi[i], 0);
    if (rc == MDB_SUCCESS)
        rc = meta_add(c, txn, META_BYTES, -(int64_t)meta_get(c, txn, META_BYTES));
    if (rc == MDB_SUCCESS)
        *removed = st.ms_entries;
    return rc;
}

/* Up to PURGE_BATCH of network's entries from key `from` on (inclusive;
 * *from is moved past them); *done when the scan reached the end. */
#define PURGE_BATCH 64
static int purge_batch(state_cache_t *c, MDB_txn *txn, const char *network, uint8_t *from, size_t *removed,
                       int *done)
{
    uint8_t keys[PURGE_BATCH][STATE_CACHE_KEY_LEN];
    size_t n = 0;
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, c->dbi[DB_ENTRIES], &cur);
    MDB_val k = val_of(from, STATE_CACHE_KEY_LEN), v;
    *done = 1;
    for (int op = MDB_SET_RANGE; rc == MDB_SUCCESS && (rc = mdb_cursor_get(cur, &k, &v, op)) == MDB_SUCCESS;
         op = MDB_NEXT) {
        if (k.mv_size != STATE_CACHE_KEY_LEN || !of_network(&v, network))
            continue;
        if (n == PURGE_BATCH) {
            memcpy(from, k.mv_data, STATE_CACHE_KEY_LEN); /* the next batch starts here */
            *done = 0;
            break;
        }
        memcpy(keys[n++], k.mv_data, STATE_CACHE_KEY_LEN);
    }
    mdb_cursor_close(cur);
    if (rc == MDB_NOTFOUND)
        rc = MDB_SUCCESS;
    int64_t freed = 0;
    for (size_t i = 0; i < n && rc == MDB_SUCCESS; i++) {
        size_t size;
        rc = drop_entry(c, txn, keys[i], 1, &size);
        freed += (int64_t)size;
    }
    if (rc == MDB_SUCCESS)
        rc = meta_add(c, txn, META_BYTES, -freed);
    if (rc == MDB_SUCCESS)
        *removed += n;
    return rc;
}

sl_err_t state_cache_purge(state_cache_t *c, const char *network, size_t *removed)
{
    uint8_t from[STATE_CACHE_KEY_LEN] = {0};
    *removed = 0;
    for (int done = 0; !done;) {
        MDB_txn *txn = NULL;
        size_t got = 0;
        int rc = mdb_txn_begin(c->env, NULL, 0, &txn);
        if (rc == MDB_SUCCESS && network == NULL) {
            rc = purge_all_in(c, txn, &got);
            done = 1;
        } else if (rc == MDB_SUCCESS) {
            rc = purge_batch(c, txn, network, from, &got, &done);
        }
        if (rc == MDB_SUCCESS)
            rc = mdb_txn_commit(txn);
        else if (txn != NULL)
            mdb_txn_abort(txn);
        if (rc != MDB_SUCCESS)
            return cache_err(c, "purge", rc);
        *removed += got;
    }
    return SL_OK;
}

void state_cache_usage(state_cache_t *c, state_cache_usage_t *out)
{
    MDB_txn *txn;
    *out = (state_cache_usage_t){.size = c->map_bytes};
    if (mdb_txn_begin(c->env, NULL, MDB_RDONLY, &txn) != MDB_SUCCESS)
        return;
    MDB_stat s;
    if (mdb_stat(txn, c->dbi[DB_ENTRIES], &s) == MDB_SUCCESS)
        out->entries = s.ms_entries;
    out->used = used_in(c, txn);
    out->bytes = meta_get(c, txn, META_BYTES);
    out->evictions = meta_get(c, txn, META_EVICTIONS);
    mdb_txn_abort(txn);
}

const state_cache_stats_t *state_cache_stats(const state_cache_t *c)
{
    return &c->stats;
}
