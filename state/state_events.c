/* state/state_events.c: the event log. Keys are big-endian sequence numbers,
 * so LMDB's byte order is time order; the next number lives in meta and only
 * ever grows, even when retention has removed every older event. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/sl_log.h"
#include "state/state_int.h"

static void be64(uint64_t v, unsigned char out[8])
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        out[i] = (unsigned char)v;
}

static uint64_t from_be64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return v;
}

/* The next sequence number: meta's counter (it survives retention removing
 * every event), but never at or below the newest event stored: a damaged
 * counter must not make every later append fail with MDB_KEYEXIST. The last
 * number is never used (readers ask for events after a sequence). */
static int next_seq(state_t *st, MDB_txn *txn, uint64_t *next)
{
    MDB_val mk = {8, "next_seq"}, mv, k, v;
    MDB_cursor *cur;
    int rc = mdb_get(txn, st->dbi[STATE_DB_META], &mk, &mv);
    if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND)
        return rc;
    *next = rc == MDB_SUCCESS && mv.mv_size == 8 ? from_be64(mv.mv_data) : 1;
    if ((rc = mdb_cursor_open(txn, st->dbi[STATE_DB_EVENTS], &cur)) != MDB_SUCCESS)
        return rc;
    if (mdb_cursor_get(cur, &k, &v, MDB_LAST) == MDB_SUCCESS && k.mv_size == 8 && from_be64(k.mv_data) >= *next)
        *next = from_be64(k.mv_data) + 1;
    mdb_cursor_close(cur);
    return *next == 0 || *next == UINT64_MAX ? MDB_INVALID : MDB_SUCCESS; /* exhausted */
}

void state_set_host(state_t *st, const char *host)
{
    snprintf(st->host, sizeof(st->host), "%s", host ? host : "");
}

int state_event_put(state_t *st, MDB_txn *txn, state_event_t *ev)
{
    if (ev->host[0] == '\0' && st->host[0] != '\0')
        memcpy(ev->host, st->host, sizeof(ev->host));
    MDB_val mk = {8, "next_seq"};
    uint64_t next = 1;
    int rc = next_seq(st, txn, &next);
    if (rc != MDB_SUCCESS)
        return rc;
    ev->seq = next;
    sl_buf_t buf = SL_BUF_INIT;
    if (state_record_encode(&state_event_schema, ev, &buf) != SL_OK) {
        sl_buf_dispose(&buf);
        return MDB_INVALID;
    }
    unsigned char key[8], nextkey[8];
    be64(next, key);
    be64(next + 1, nextkey);
    MDB_val k = {8, key}, v = {buf.len, buf.base}, nv = {8, nextkey};
    rc = mdb_put(txn, st->dbi[STATE_DB_EVENTS], &k, &v, MDB_APPEND);
    if (rc == MDB_SUCCESS)
        rc = mdb_put(txn, st->dbi[STATE_DB_META], &mk, &nv, 0);
    sl_buf_dispose(&buf);
    return rc;
}

int state_events_put(state_t *st, MDB_txn *txn, state_event_t *events, size_t n)
{
    int rc = MDB_SUCCESS;
    for (size_t i = 0; rc == MDB_SUCCESS && i < n; i++)
        rc = state_event_put(st, txn, &events[i]);
    return rc;
}

static sl_err_t append_once(state_t *st, state_event_t *ev)
{
    MDB_txn *txn;
    int rc = mdb_txn_begin(st->env, NULL, 0, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("begin", rc);
    if ((rc = state_event_put(st, txn, ev)) != MDB_SUCCESS) {
        mdb_txn_abort(txn);
        return rc == MDB_MAP_FULL ? SL_ERR_MAP_FULL : state_lmdb_err("append event", rc);
    }
    return state_lmdb_err("commit", mdb_txn_commit(txn));
}

/* Deletes the oldest n events (a full map makes room this way). */
static sl_err_t delete_oldest(state_t *st, size_t n, uint64_t older_than_ms, size_t *removed)
{
    MDB_txn *txn;
    MDB_cursor *cur;
    *removed = 0;
    int rc = mdb_txn_begin(st->env, NULL, 0, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("begin", rc);
    if ((rc = mdb_cursor_open(txn, st->dbi[STATE_DB_EVENTS], &cur)) != MDB_SUCCESS) {
        mdb_txn_abort(txn);
        return state_lmdb_err("cursor", rc);
    }
    MDB_val k, v;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == MDB_SUCCESS; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        state_event_t ev;
        int old = state_record_decode(&state_event_schema, v.mv_data, v.mv_size, &ev) != SL_OK ||
                  ev.ts_ms < older_than_ms;
        if (*removed >= n && !old)
            break;
        if ((rc = mdb_cursor_del(cur, 0)) != MDB_SUCCESS)
            break;
        (*removed)++;
    }
    mdb_cursor_close(cur);
    if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) {
        mdb_txn_abort(txn);
        return state_lmdb_err("trim events", rc);
    }
    return state_lmdb_err("commit", mdb_txn_commit(txn));
}

/* How many events are stored and the bytes their pages take. */
static void event_usage(state_t *st, size_t *count, size_t *bytes)
{
    MDB_stat s;
    MDB_txn *txn;
    *count = *bytes = 0;
    if (mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn) == MDB_SUCCESS) {
        if (mdb_stat(txn, st->dbi[STATE_DB_EVENTS], &s) == MDB_SUCCESS) {
            *count = s.ms_entries;
            *bytes = (s.ms_branch_pages + s.ms_leaf_pages + s.ms_overflow_pages) * (size_t)s.ms_psize;
        }
        mdb_txn_abort(txn);
    }
}

/* A map that is completely full cannot even commit a delete (LMDB copies
 * pages on write), so room is made before that: past STATE_FULL_PCT of the
 * map, the oldest quarter of the events goes, but only while events are a
 * real share of what is stored (a map filled by other records would lose its
 * history and gain nothing). force (an append just met MDB_MAP_FULL) trims
 * whatever the figures say: the events are the one thing sluice may drop. */
sl_err_t state_make_room(state_t *st, int force)
{
    size_t used, size, count, bytes, removed = 0;
    state_usage(st, &used, &size);
    if (!force && (size == 0 || used * 100 < size * STATE_FULL_PCT))
        return SL_OK;
    event_usage(st, &count, &bytes);
    if (count == 0 || (!force && bytes * 10 < used))
        return SL_ERR_MAP_FULL;
    sl_log_warn("state: the map is %zu%% full; dropping the oldest %zu of %zu events (raise state.map_size_mb)",
                size ? used * 100 / size : 0, count / 4 + 1, count);
    return delete_oldest(st, count / 4 + 1, 0, &removed);
}

sl_err_t state_event_append(state_t *st, state_event_t *ev)
{
    if (++st->appends % 32 == 0 && state_make_room(st, 0) != SL_OK) {
        /* nothing worth dropping yet: the append below may still fit */
    }
    sl_err_t err = append_once(st, ev);
    if (err != SL_ERR_MAP_FULL)
        return err;
    if (state_make_room(st, 1) != SL_OK)
        return SL_ERR_MAP_FULL;
    return append_once(st, ev);
}

void state_retention_set(state_t *st, uint32_t event_max_count, uint32_t event_max_age_s)
{
    st->conf.event_max_count = event_max_count;
    st->conf.event_max_age_s = event_max_age_s;
}

sl_err_t state_trim_events(state_t *st, uint64_t now_ms, size_t *removed)
{
    MDB_stat s;
    MDB_txn *txn;
    size_t count = 0;
    *removed = 0;
    int rc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("begin", rc);
    if (mdb_stat(txn, st->dbi[STATE_DB_EVENTS], &s) == MDB_SUCCESS)
        count = s.ms_entries;
    mdb_txn_abort(txn);
    size_t over = count > st->conf.event_max_count ? count - st->conf.event_max_count : 0;
    uint64_t horizon = now_ms > (uint64_t)st->conf.event_max_age_s * 1000 ? now_ms - (uint64_t)st->conf.event_max_age_s * 1000 : 0;
    return delete_oldest(st, over, horizon, removed);
}

sl_err_t state_events_read(state_t *st, uint64_t since, state_event_t *out, size_t max, size_t *n)
{
    MDB_txn *txn;
    MDB_cursor *cur;
    *n = 0;
    if (since == UINT64_MAX || max == 0)
        return SL_OK; /* nothing can come after the last possible sequence */
    int rc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn);
    if (rc != MDB_SUCCESS)
        return state_lmdb_err("begin", rc);
    if ((rc = mdb_cursor_open(txn, st->dbi[STATE_DB_EVENTS], &cur)) != MDB_SUCCESS) {
        mdb_txn_abort(txn);
        return state_lmdb_err("cursor", rc);
    }
    unsigned char key[8];
    be64(since + 1, key);
    MDB_val k = {8, key}, v;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == MDB_SUCCESS && *n < max;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != 8)
            continue;
        state_event_t *ev = &out[*n];
        memset(ev, 0, sizeof(*ev));
        if (state_record_decode(&state_event_schema, v.mv_data, v.mv_size, ev) != SL_OK) {
            char name[32];
            snprintf(name, sizeof(name), "%llu", (unsigned long long)from_be64(k.mv_data));
            state_note_corrupt(st, "event", name, SL_ERR_CORRUPT);
            continue;
        }
        ev->seq = from_be64(k.mv_data);
        (*n)++;
    }
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    return rc == MDB_SUCCESS || rc == MDB_NOTFOUND ? SL_OK : state_lmdb_err("read events", rc);
}

uint64_t state_events_last_seq(state_t *st)
{
    MDB_txn *txn;
    MDB_val mk = {8, "next_seq"}, mv;
    uint64_t last = 0;
    if (mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn) != MDB_SUCCESS)
        return 0;
    if (mdb_get(txn, st->dbi[STATE_DB_META], &mk, &mv) == MDB_SUCCESS && mv.mv_size == 8)
        last = from_be64(mv.mv_data) - 1;
    mdb_txn_abort(txn);
    return last;
}

void state_event_init(state_event_t *ev, state_event_kind_t kind, const char *network, const char *endpoint,
                      uint64_t now_ms)
{
    memset(ev, 0, sizeof(*ev));
    ev->ts_ms = now_ms;
    ev->kind = (uint8_t)kind;
    ev->pid = (uint32_t)getpid();
    if (network != NULL)
        snprintf(ev->network, sizeof(ev->network), "%s", network);
    if (endpoint != NULL)
        snprintf(ev->endpoint, sizeof(ev->endpoint), "%s", endpoint);
}
