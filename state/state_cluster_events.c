/* state/state_cluster_events.c: one event log for every host.
 *
 * Each host keeps its log in LMDB as before (its sequence numbers, its
 * feed and stream); with cluster: one worker per host (the events worker)
 * also
 *  - ships the host's own events to the Redis stream "<prefix>events"
 *    (XADD, capped near conf->stream_max), each entry naming its host and
 *    its sequence there, and says so on the cluster's channel ("x");
 *  - tails the stream (when told, and every second) and appends the other
 *    hosts' entries to this host's log, with their host and their sequence
 *    there (origin_seq).
 * So /admin/events and the SSE stream of any host show every host's events.
 * No event is shown twice: a host's own entries are skipped when tailed,
 * and an entry whose sequence is not above the last one taken from its host
 * ("cl_seen/<host>", written in the same transaction) is skipped too, so a
 * shipment repeated after a failure, or two tailers, add nothing. What the
 * events worker last shipped and where it read to are in meta as well, so a
 * restart goes on from there. While Redis is down events wait in LMDB and go
 * out when it returns. */
#include <stdlib.h>
#include <string.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "state/state_cluster_int.h"
#include "state/state_int.h"

#define SHIP_BATCH 64
#define TAIL_BATCH 256
#define TAIL_EVERY_MS 1000

static const MDB_val shipped_key = {10, "cl_shipped"};
static const MDB_val stream_id_key = {12, "cl_stream_id"};

static void be64(uint64_t v, unsigned char out[8])
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        out[i] = (unsigned char)v;
}

static uint64_t get_u64(state_t *st, MDB_txn *txn, MDB_val k)
{
    MDB_val v;
    uint64_t x = 0;
    if (mdb_get(txn, st->dbi[STATE_DB_META], &k, &v) == MDB_SUCCESS && v.mv_size == 8)
        for (int i = 0; i < 8; i++)
            x = (x << 8) | ((const unsigned char *)v.mv_data)[i];
    return x;
}

static int put_u64(state_t *st, MDB_txn *txn, MDB_val k, uint64_t x)
{
    unsigned char b[8];
    be64(x, b);
    MDB_val v = {8, b};
    return mdb_put(txn, st->dbi[STATE_DB_META], &k, &v, 0);
}

static uint64_t read_shipped(state_t *st)
{
    MDB_txn *txn;
    uint64_t x = 0;
    if (mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn) == MDB_SUCCESS) {
        x = get_u64(st, txn, shipped_key);
        mdb_txn_abort(txn);
    }
    return x;
}

static void write_shipped(state_t *st, uint64_t seq)
{
    MDB_txn *txn;
    if (mdb_txn_begin(st->env, NULL, 0, &txn) != MDB_SUCCESS)
        return;
    if (get_u64(st, txn, shipped_key) >= seq || put_u64(st, txn, shipped_key, seq) != MDB_SUCCESS) {
        mdb_txn_abort(txn);
        return;
    }
    if (mdb_txn_commit(txn) != MDB_SUCCESS)
        sl_log_warn("cluster: cannot note the events shipped to Redis (they may go twice: the readers drop them)");
}

/* ---- shipping ---- */

static void on_shipped(void *data, redisReply *reply)
{
    state_cluster_t *cl = data;
    cl->ship_pending = 0;
    if (cl->destroying || reply == NULL)
        return;
    if (reply->type == REDIS_REPLY_ERROR) {
        state_cluster_link_failed(cl, reply->str);
        return;
    }
    write_shipped(cl->st, cl->ship_upto);
}

static int is_own(const state_cluster_t *cl, const state_event_t *ev)
{
    return ev->origin_seq == 0 && strcmp(ev->host, cl->conf->host) == 0;
}

/* Sends the host's events not shipped yet (a batch at a time). */
static void ship(state_cluster_t *cl)
{
    if (cl->ship_pending)
        return;
    uint64_t shipped = read_shipped(cl->st);
    if (state_events_last_seq(cl->st) <= shipped)
        return;
    state_event_t *evs = sl_xmalloc(SHIP_BATCH * sizeof(*evs));
    size_t n = 0;
    if (state_events_read(cl->st, shipped, evs, SHIP_BATCH, &n) != SL_OK || n == 0) {
        free(evs);
        return;
    }
    size_t argc = 6;
    const char **argv = sl_xcalloc(6 + 3 * n, sizeof(*argv));
    size_t *lens = sl_xcalloc(6 + 3 * n, sizeof(*lens));
    sl_buf_t *bufs = sl_xcalloc(n, sizeof(*bufs));
    char (*seqs)[24] = sl_xcalloc(n, sizeof(*seqs));
    char stream[STATE_CLUSTER_PREFIX_MAX + 8], maxlen[24];
    snprintf(stream, sizeof(stream), "%sevents", cl->conf->prefix);
    snprintf(maxlen, sizeof(maxlen), "%u", cl->conf->stream_max ? cl->conf->stream_max : 10000);
    argv[0] = "EVALSHA";
    argv[1] = cl->sha[STATE_SCRIPT_SHIP];
    argv[2] = "1";
    argv[3] = stream;
    argv[4] = maxlen;
    argv[5] = cl->channel;
    for (size_t i = 0; i < n; i++) {
        if (!is_own(cl, &evs[i]))
            continue; /* another host's, taken from the stream */
        state_event_t e = evs[i];
        e.host[0] = '\0'; /* the entry says whose it is */
        if (state_record_encode(&state_event_schema, &e, &bufs[i]) != SL_OK)
            continue;
        snprintf(seqs[i], sizeof(seqs[i]), "%llu", (unsigned long long)evs[i].seq);
        argv[argc] = cl->conf->host;
        argv[argc + 1] = seqs[i];
        argv[argc + 2] = bufs[i].base;
        lens[argc + 2] = bufs[i].len;
        argc += 3;
    }
    for (size_t i = 0; i < argc; i++)
        if (lens[i] == 0)
            lens[i] = strlen(argv[i]);
    cl->ship_upto = evs[n - 1].seq;
    if (argc == 6)
        write_shipped(cl->st, cl->ship_upto); /* nothing of ours in this batch */
    else if (state_redis_send(&cl->cmd, on_shipped, cl, (int)argc, argv, lens) == 0)
        cl->ship_pending = 1;
    for (size_t i = 0; i < n; i++)
        sl_buf_dispose(&bufs[i]);
    free(bufs);
    free(seqs);
    free(argv);
    free(lens);
    free(evs);
}

/* ---- tailing ---- */

static const redisReply *field(const redisReply *kv, const char *name)
{
    for (size_t i = 0; i + 1 < kv->elements; i += 2)
        if (kv->element[i]->type == REDIS_REPLY_STRING && strcmp(kv->element[i]->str, name) == 0)
            return kv->element[i + 1];
    return NULL;
}

/* Appends one stream entry to the log if it is another host's and new;
 * returns the LMDB code. */
static int take_entry(state_cluster_t *cl, MDB_txn *txn, const redisReply *kv, int *added)
{
    state_t *st = cl->st;
    const redisReply *h = field(kv, "h"), *s = field(kv, "s"), *e = field(kv, "e");
    if (h == NULL || s == NULL || e == NULL || h->type != REDIS_REPLY_STRING || s->type != REDIS_REPLY_STRING ||
        e->type != REDIS_REPLY_STRING || h->len == 0 || h->len > STATE_HOST_MAX)
        return MDB_SUCCESS; /* not ours to read: skipped */
    if (strcmp(h->str, cl->conf->host) == 0)
        return MDB_SUCCESS; /* this host's own: in its log already */
    uint64_t seq = strtoull(s->str, NULL, 10);
    char sk[16 + STATE_HOST_MAX];
    snprintf(sk, sizeof(sk), "cl_seen/%s", h->str);
    MDB_val k = {strlen(sk), sk};
    if (seq == 0 || seq <= get_u64(st, txn, k))
        return MDB_SUCCESS; /* taken already */
    state_event_t ev;
    memset(&ev, 0, sizeof(ev));
    if (state_record_decode(&state_event_schema, e->str, e->len, &ev) != SL_OK) {
        state_note_corrupt(st, "stream event", sk, SL_ERR_CORRUPT);
        return put_u64(st, txn, k, seq);
    }
    memcpy(ev.host, h->str, h->len + 1);
    ev.origin_seq = seq;
    int rc = state_event_put(st, txn, &ev);
    if (rc == MDB_SUCCESS)
        rc = put_u64(st, txn, k, seq);
    *added += rc == MDB_SUCCESS;
    return rc;
}

/* The entries of an XREAD answer, taken in one transaction; the number of
 * entries read (-1 on failure). */
static long take_entries(state_cluster_t *cl, const redisReply *reply, int *added)
{
    if (reply->type == REDIS_REPLY_NIL)
        return 0;
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 1 || reply->element[0]->type != REDIS_REPLY_ARRAY ||
        reply->element[0]->elements != 2 || reply->element[0]->element[1]->type != REDIS_REPLY_ARRAY)
        return -1;
    const redisReply *entries = reply->element[0]->element[1];
    state_t *st = cl->st;
    MDB_txn *txn;
    if (mdb_txn_begin(st->env, NULL, 0, &txn) != MDB_SUCCESS)
        return -1;
    int rc = MDB_SUCCESS;
    const char *last = NULL;
    size_t last_len = 0;
    for (size_t i = 0; i < entries->elements && rc == MDB_SUCCESS; i++) {
        const redisReply *en = entries->element[i];
        if (en->type != REDIS_REPLY_ARRAY || en->elements != 2 || en->element[0]->type != REDIS_REPLY_STRING ||
            en->element[1]->type != REDIS_REPLY_ARRAY)
            continue;
        rc = take_entry(cl, txn, en->element[1], added);
        last = en->element[0]->str;
        last_len = en->element[0]->len;
    }
    if (rc == MDB_SUCCESS && last != NULL) {
        MDB_val k = stream_id_key, v = {last_len, (void *)last};
        rc = mdb_put(txn, st->dbi[STATE_DB_META], &k, &v, 0);
    }
    if (state_txn_end(txn, rc) != MDB_SUCCESS) {
        sl_log_warn("cluster: cannot append the other hosts' events to this host's log");
        return -1;
    }
    return (long)entries->elements;
}

static void on_tail(void *data, redisReply *reply)
{
    state_cluster_t *cl = data;
    cl->tail_pending = 0;
    if (cl->destroying || reply == NULL)
        return;
    if (reply->type == REDIS_REPLY_ERROR) {
        state_cluster_link_failed(cl, reply->str);
        return;
    }
    int added = 0;
    long n = take_entries(cl, reply, &added);
    /* a full batch: more are waiting, read on at the next tick */
    cl->next_tail_ms = n == TAIL_BATCH || cl->tail_again ? 0 : sl_now_ms() + TAIL_EVERY_MS;
    cl->tail_again = 0;
}

static void tail(state_cluster_t *cl)
{
    char stream[STATE_CLUSTER_PREFIX_MAX + 8], id[64] = "0", count[16];
    snprintf(stream, sizeof(stream), "%sevents", cl->conf->prefix);
    snprintf(count, sizeof(count), "%d", TAIL_BATCH);
    MDB_txn *txn;
    if (mdb_txn_begin(cl->st->env, NULL, MDB_RDONLY, &txn) == MDB_SUCCESS) {
        MDB_val k = stream_id_key, v;
        if (mdb_get(txn, cl->st->dbi[STATE_DB_META], &k, &v) == MDB_SUCCESS && v.mv_size > 0 && v.mv_size < sizeof(id)) {
            memcpy(id, v.mv_data, v.mv_size);
            id[v.mv_size] = '\0';
        }
        mdb_txn_abort(txn);
    }
    const char *argv[] = {"XREAD", "COUNT", count, "STREAMS", stream, id};
    size_t lens[6];
    for (int i = 0; i < 6; i++)
        lens[i] = strlen(argv[i]);
    if (state_redis_send(&cl->cmd, on_tail, cl, 6, argv, lens) == 0)
        cl->tail_pending = 1;
}

void state_cluster_events_tick(state_cluster_t *cl, uint64_t now)
{
    if (!cl->events_worker)
        return;
    ship(cl);
    if (!cl->tail_pending && now >= cl->next_tail_ms)
        tail(cl);
}

void state_cluster_events_told(state_cluster_t *cl)
{
    if (!cl->events_worker || cl->link != STATE_LINK_UP)
        return;
    if (cl->tail_pending)
        cl->tail_again = 1; /* what was told may have come after the read under way */
    else
        tail(cl);
}

void state_cluster_events_worker(state_cluster_t *cl, int on)
{
    cl->events_worker = on;
}
