/* state/state_cluster_ep.c: endpoint records shared by every host.
 *
 * Redis holds, per endpoint, the shared part of its record (breaker, probe
 * claim, drain, rate-limit mark: state_cluster_ep_t) under
 * "<prefix>ep:<network>/<endpoint>" as a hash of a version and the encoded
 * record. A transition is the CAS script: it writes only if the version is
 * the one the worker decided from, gives the record a new version (never
 * below Redis' clock in µs, so versions keep growing across a Redis that
 * lost its data) and publishes it on the cluster's channel. Every worker of
 * every host applies what it hears (or what a CAS answered) to its host's
 * LMDB copy if it is newer: the mirror record "cv/<key>" in meta (version
 * and the cluster record, with the probe owner's host) and the shared fields
 * of the endpoint record itself, which is what the workers' snapshots and
 * admin/ read, as without a cluster. The host's own fields (probe results,
 * head, next health probe) never leave it.
 *
 * A half-open probe claim names its owner as host and pid; in the endpoint
 * record another host's claim reads as STATE_PROBE_ELSEWHERE, which no
 * process of this host is, so only the claiming process settles it.
 *
 * While a worker's link is down its transitions are this host's alone (an
 * LMDB CAS) and the mirror is marked dirty; when a link comes up the worker
 * reads every record from Redis, applies the newer ones and pushes the dirty
 * ones merged with what Redis has (the later breaker change wins, a drain
 * or undrain made here wins, the later rate-limit mark wins). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "state/state_cluster_int.h"
#include "state/state_int.h"

#define F(struct_, name_, type_, size_) {#name_, type_, offsetof(struct_, name_), size_}
#define MAX_TRIES 4

static const state_field_t ep_fields[] = {
    F(state_cluster_ep_t, version, STATE_F_U64, 1),
    F(state_cluster_ep_t, dirty, STATE_F_U8, 1),
    F(state_cluster_ep_t, breaker, STATE_F_U8, 1),
    F(state_cluster_ep_t, since_ms, STATE_F_U64, 1),
    F(state_cluster_ep_t, cooldown_ms, STATE_F_U32, 1),
    F(state_cluster_ep_t, opened_at_ms, STATE_F_U64, 1),
    F(state_cluster_ep_t, probe_host, STATE_F_STR, sizeof(((state_cluster_ep_t *)0)->probe_host)),
    F(state_cluster_ep_t, probe_pid, STATE_F_U32, 1),
    F(state_cluster_ep_t, probe_at_ms, STATE_F_U64, 1),
    F(state_cluster_ep_t, drained, STATE_F_U8, 1),
    F(state_cluster_ep_t, drained_at_ms, STATE_F_U64, 1),
    F(state_cluster_ep_t, rate_limited_until_ms, STATE_F_U64, 1),
    F(state_cluster_ep_t, transitions, STATE_F_U64_ARRAY, 3),
    F(state_cluster_ep_t, rl_backoff_ms, STATE_F_U32, 1),
};

const state_schema_t state_cluster_ep_schema = {"cluster endpoint", 1, ep_fields,
                                                sizeof(ep_fields) / sizeof(ep_fields[0])};

/* ---- the two shapes ---- */

void state_cluster_ep_to_local(const state_cluster_ep_t *c, const char *me, state_endpoint_rec_t *l)
{
    l->breaker = c->breaker < STATE_BREAKER_STATES ? c->breaker : 0;
    l->since_ms = c->since_ms;
    l->cooldown_ms = c->cooldown_ms;
    l->opened_at_ms = c->opened_at_ms;
    if (c->probe_pid == 0)
        l->probe_pid = 0;
    else
        l->probe_pid = strcmp(c->probe_host, me) == 0 ? c->probe_pid : STATE_PROBE_ELSEWHERE;
    l->probe_at_ms = c->probe_at_ms;
    l->drained = c->drained;
    l->drained_at_ms = c->drained_at_ms;
    l->rate_limited_until_ms = c->rate_limited_until_ms;
    l->rl_backoff_ms = c->rl_backoff_ms;
    memcpy(l->transitions, c->transitions, sizeof(l->transitions));
}

void state_cluster_ep_from_local(const state_endpoint_rec_t *l, const state_cluster_ep_t *prev, const char *me,
                                 state_cluster_ep_t *c)
{
    memset(c, 0, sizeof(*c));
    c->version = prev->version;
    c->breaker = l->breaker;
    c->since_ms = l->since_ms;
    c->cooldown_ms = l->cooldown_ms;
    c->opened_at_ms = l->opened_at_ms;
    if (l->probe_pid == STATE_PROBE_ELSEWHERE) {
        snprintf(c->probe_host, sizeof(c->probe_host), "%s", prev->probe_host);
        c->probe_pid = prev->probe_pid;
    } else if (l->probe_pid != 0) {
        snprintf(c->probe_host, sizeof(c->probe_host), "%s", me);
        c->probe_pid = l->probe_pid;
    }
    c->probe_at_ms = l->probe_at_ms;
    c->drained = l->drained;
    c->drained_at_ms = l->drained_at_ms;
    c->rate_limited_until_ms = l->rate_limited_until_ms;
    c->rl_backoff_ms = l->rl_backoff_ms;
    memcpy(c->transitions, l->transitions, sizeof(c->transitions));
}

void state_cluster_ep_merge(const state_cluster_ep_t *mine, const state_cluster_ep_t *before,
                            const state_cluster_ep_t *theirs, state_cluster_ep_t *out)
{
    *out = *theirs;
    if (mine->since_ms > theirs->since_ms) {
        out->breaker = mine->breaker;
        out->since_ms = mine->since_ms;
        out->cooldown_ms = mine->cooldown_ms;
        out->opened_at_ms = mine->opened_at_ms;
        memcpy(out->probe_host, mine->probe_host, sizeof(out->probe_host));
        out->probe_pid = mine->probe_pid;
        out->probe_at_ms = mine->probe_at_ms;
    }
    if (mine->drained != before->drained) {
        out->drained = mine->drained;
        out->drained_at_ms = mine->drained_at_ms;
    }
    if (mine->rate_limited_until_ms > out->rate_limited_until_ms) {
        out->rate_limited_until_ms = mine->rate_limited_until_ms;
        out->rl_backoff_ms = mine->rl_backoff_ms;
    }
    for (int i = 0; i < 3; i++)
        if (mine->transitions[i] > out->transitions[i])
            out->transitions[i] = mine->transitions[i];
}

/* ---- the host's copy in LMDB ---- */

static void mirror_key(char *out, size_t cap, const char *key)
{
    snprintf(out, cap, "cv/%s", key);
}

static int mirror_read(state_t *st, MDB_txn *txn, const char *key, state_cluster_ep_t *c)
{
    char mk[STATE_KEY_MAX + 4];
    mirror_key(mk, sizeof(mk), key);
    MDB_val k = {strlen(mk), mk}, v;
    memset(c, 0, sizeof(*c));
    if (mdb_get(txn, st->dbi[STATE_DB_META], &k, &v) != MDB_SUCCESS)
        return 0;
    if (state_record_decode(&state_cluster_ep_schema, v.mv_data, v.mv_size, c) != SL_OK) {
        memset(c, 0, sizeof(*c));
        state_note_corrupt(st, "cluster endpoint", mk, SL_ERR_CORRUPT);
        return 0;
    }
    return 1;
}

static int mirror_write(state_t *st, MDB_txn *txn, const char *key, const state_cluster_ep_t *c)
{
    char mk[STATE_KEY_MAX + 4];
    mirror_key(mk, sizeof(mk), key);
    return state_rec_put(st, txn, STATE_DB_META, mk, &state_cluster_ep_schema, c);
}

static int local_read(state_t *st, MDB_txn *txn, const char *key, state_endpoint_rec_t *rec)
{
    MDB_val k = {strlen(key), (void *)key}, v;
    memset(rec, 0, sizeof(*rec));
    if (mdb_get(txn, st->dbi[STATE_DB_ENDPOINTS], &k, &v) != MDB_SUCCESS)
        return 0;
    if (state_record_decode(&state_endpoint_schema, v.mv_data, v.mv_size, rec) != SL_OK) {
        memset(rec, 0, sizeof(*rec));
        return 0;
    }
    if (rec->breaker >= STATE_BREAKER_STATES)
        rec->breaker = 0;
    return 1;
}

/* Applies the cluster's record c (of version c->version) to the host's
 * copy if it is newer than the copy's (or if force), and appends events
 * either way; *out gets the endpoint record after. 1 if the record was
 * written. */
static int mirror_apply(state_cluster_t *cl, const char *key, const state_cluster_ep_t *c, int force,
                        state_event_t *events, size_t nevents, state_endpoint_rec_t *out)
{
    state_t *st = cl->st;
    MDB_txn *txn;
    if (mdb_txn_begin(st->env, NULL, 0, &txn) != MDB_SUCCESS)
        return 0;
    state_cluster_ep_t have;
    int exists = mirror_read(st, txn, key, &have);
    state_endpoint_rec_t rec;
    local_read(st, txn, key, &rec);
    int newer = force || !exists || c->version > have.version;
    int rc = MDB_SUCCESS;
    if (newer) {
        state_cluster_ep_t w = *c;
        w.dirty = 0;
        state_cluster_ep_to_local(&w, cl->conf->host, &rec);
        rc = mirror_write(st, txn, key, &w);
        if (rc == MDB_SUCCESS)
            rc = state_rec_put(st, txn, STATE_DB_ENDPOINTS, key, &state_endpoint_schema, &rec);
    }
    if (rc == MDB_SUCCESS)
        rc = state_events_put(st, txn, events, nevents);
    if (!newer && nevents == 0) {
        mdb_txn_abort(txn);
    } else if (state_txn_end(txn, rc) != MDB_SUCCESS) {
        sl_log_warn("cluster: cannot write the host's copy of %s", key);
        newer = 0;
    }
    if (out != NULL)
        *out = rec;
    return newer;
}

void state_cluster_ep_mark_dirty(state_cluster_t *cl, const char *key)
{
    state_t *st = cl->st;
    MDB_txn *txn;
    if (mdb_txn_begin(st->env, NULL, 0, &txn) != MDB_SUCCESS)
        return;
    state_cluster_ep_t c;
    mirror_read(st, txn, key, &c);
    c.dirty = 1;
    if (state_txn_end(txn, mirror_write(st, txn, key, &c)) != MDB_SUCCESS)
        sl_log_warn("cluster: cannot mark %s as changed on this host", key);
}

/* ---- a transition ---- */

typedef struct ep_op {
    state_cluster_t *cl;
    char key[STATE_KEY_MAX];
    state_update_fn fn;           /* NULL: a push of this host's changes (resync) */
    void *ctx;                    /* the caller's, copied */
    size_t ctx_size;
    state_transition_done_fn done;
    void *data;
    int tries;
    int have_expect;              /* Redis said which version it has (a conflict, a resync) */
    uint64_t expect;
    state_cluster_ep_t theirs;    /* push: Redis' record */
    state_cluster_ep_t next;      /* what was sent */
    state_event_t events[STATE_MAX_TXN_EVENTS];
    size_t nevents;
} ep_op_t;

static void op_try(ep_op_t *op);

static void op_finish(ep_op_t *op, sl_err_t err, int changed, const state_endpoint_rec_t *rec)
{
    if (op->done != NULL)
        op->done(op->data, err, changed, rec);
    free(op->ctx);
    free(op);
}

/* Redis failed this transition: it is this host's alone. */
static void op_fallback(ep_op_t *op)
{
    state_endpoint_rec_t rec;
    int changed = 0;
    memset(&rec, 0, sizeof(rec));
    if (op->fn == NULL) {
        /* a push: it stays dirty for the next return of Redis */
        op_finish(op, SL_OK, 0, &rec);
        return;
    }
    sl_err_t err = state_endpoint_update_local(op->cl->st, op->key, op->fn, op->ctx, &changed, &rec);
    if (err != SL_OK)
        changed = 0;
    else if (changed)
        state_cluster_ep_mark_dirty(op->cl, op->key);
    op_finish(op, err, changed, &rec);
}

static uint64_t parse_version(const redisReply *r)
{
    if (r->type == REDIS_REPLY_INTEGER)
        return r->integer > 0 ? (uint64_t)r->integer : 0;
    return r->type == REDIS_REPLY_STRING ? strtoull(r->str, NULL, 10) : 0;
}

/* Decodes Redis' record bytes (empty: absent) with its version. */
static int decode_theirs(const redisReply *bytes, uint64_t version, state_cluster_ep_t *out)
{
    memset(out, 0, sizeof(*out));
    if (bytes->type != REDIS_REPLY_STRING || bytes->len == 0)
        return 0;
    if (state_record_decode(&state_cluster_ep_schema, bytes->str, bytes->len, out) != SL_OK) {
        memset(out, 0, sizeof(*out));
        return 0;
    }
    out->version = version;
    return 1;
}

static void on_cas(void *data, redisReply *reply)
{
    ep_op_t *op = data;
    state_cluster_t *cl = op->cl;
    if (cl->destroying) {
        free(op->ctx);
        free(op);
        return;
    }
    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY || reply->elements < 2 ||
        reply->element[0]->type != REDIS_REPLY_INTEGER) {
        if (reply != NULL && reply->type == REDIS_REPLY_ERROR)
            state_cluster_link_failed(cl, reply->str);
        op_fallback(op);
        return;
    }
    uint64_t version = parse_version(reply->element[1]);
    state_endpoint_rec_t rec;
    if (reply->element[0]->integer == 1) {
        op->next.version = version;
        mirror_apply(cl, op->key, &op->next, 1, op->events, op->nevents, &rec);
        op_finish(op, SL_OK, 1, &rec);
        return;
    }
    /* another worker or host changed it first: decide again on its record */
    state_cluster_ep_t theirs;
    memset(&theirs, 0, sizeof(theirs));
    if (reply->elements >= 3 && decode_theirs(reply->element[2], version, &theirs))
        mirror_apply(cl, op->key, &theirs, 0, NULL, 0, NULL);
    op->theirs = theirs;
    op->have_expect = 1;
    op->expect = version;
    if (++op->tries >= MAX_TRIES) {
        state_t *st = cl->st;
        MDB_txn *txn;
        memset(&rec, 0, sizeof(rec));
        if (mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn) == MDB_SUCCESS) {
            local_read(st, txn, op->key, &rec);
            mdb_txn_abort(txn);
        }
        op_finish(op, SL_OK, 0, &rec);
        return;
    }
    op_try(op);
}

static void send_cas(ep_op_t *op)
{
    state_cluster_t *cl = op->cl;
    char rkey[STATE_CLUSTER_PREFIX_MAX + STATE_KEY_MAX + 4], expect[24];
    snprintf(rkey, sizeof(rkey), "%sep:%s", cl->conf->prefix, op->key);
    snprintf(expect, sizeof(expect), "%llu", (unsigned long long)(op->have_expect ? op->expect : op->next.version));
    sl_buf_t buf = SL_BUF_INIT;
    if (state_record_encode(&state_cluster_ep_schema, &op->next, &buf) != SL_OK) {
        sl_buf_dispose(&buf);
        op_fallback(op);
        return;
    }
    const char *argv[] = {"EVALSHA", cl->sha[STATE_SCRIPT_CAS], "1", rkey, expect, buf.base, cl->channel, op->key};
    size_t lens[8];
    for (int i = 0; i < 8; i++)
        lens[i] = i == 5 ? buf.len : strlen(argv[i]);
    int rc = state_redis_send(&cl->cmd, on_cas, op, 8, argv, lens);
    sl_buf_dispose(&buf);
    if (rc != 0)
        op_fallback(op);
}

/* Reads the host's copy, runs fn (or the push merge) and sends the CAS. */
static void op_try(ep_op_t *op)
{
    state_cluster_t *cl = op->cl;
    state_t *st = cl->st;
    MDB_txn *txn;
    state_endpoint_rec_t rec;
    state_cluster_ep_t have;
    if (!state_cluster_up(cl) || mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn) != MDB_SUCCESS) {
        op_fallback(op);
        return;
    }
    int exists = local_read(st, txn, op->key, &rec);
    int mirrored = mirror_read(st, txn, op->key, &have);
    mdb_txn_abort(txn);
    if (!mirrored)
        state_cluster_ep_from_local(&rec, &have, cl->conf->host, &have); /* first use: the host's record */
    if (op->fn == NULL) {
        /* push: only what changed here while Redis was away (or what Redis lost) */
        if (!have.dirty && (op->theirs.version != 0 || !exists)) {
            op_finish(op, SL_OK, 0, &rec);
            return;
        }
        state_cluster_ep_t mine;
        state_cluster_ep_from_local(&rec, &have, cl->conf->host, &mine);
        if (op->theirs.version != 0)
            state_cluster_ep_merge(&mine, &have, &op->theirs, &op->next);
        else
            op->next = mine;
        op->next.version = have.version;
        op->next.dirty = 0;
        send_cas(op);
        return;
    }
    state_endpoint_rec_t after = rec;
    op->nevents = 0;
    memset(op->events, 0, sizeof(op->events));
    if (!op->fn(op->ctx, &after, exists, op->events, &op->nevents)) {
        op_finish(op, SL_OK, 0, &rec);
        return;
    }
    if (op->nevents > STATE_MAX_TXN_EVENTS)
        op->nevents = STATE_MAX_TXN_EVENTS;
    state_cluster_ep_from_local(&after, &have, cl->conf->host, &op->next);
    send_cas(op);
}

void state_cluster_ep_transition(state_cluster_t *cl, const char *key, state_update_fn fn, const void *ctx,
                                 size_t ctx_size, state_transition_done_fn done, void *data)
{
    ep_op_t *op = sl_xcalloc(1, sizeof(*op));
    op->cl = cl;
    snprintf(op->key, sizeof(op->key), "%s", key);
    op->fn = fn;
    op->ctx_size = ctx_size;
    op->ctx = sl_xmalloc(ctx_size ? ctx_size : 1);
    memcpy(op->ctx, ctx, ctx_size);
    op->done = done;
    op->data = data;
    op_try(op);
}

/* ---- what the channel says ---- */

/* "e <version> <key>\n<record bytes>" */
void state_cluster_ep_message(state_cluster_t *cl, const char *msg, size_t len)
{
    if (len < 4 || msg[0] != 'e' || msg[1] != ' ')
        return;
    const char *nl = memchr(msg, '\n', len), *sp = memchr(msg + 2, ' ', len - 2);
    if (nl == NULL || sp == NULL || sp > nl)
        return;
    char key[STATE_KEY_MAX];
    size_t klen = (size_t)(nl - sp - 1);
    if (klen == 0 || klen >= sizeof(key))
        return;
    memcpy(key, sp + 1, klen);
    key[klen] = '\0';
    state_cluster_ep_t c;
    if (state_record_decode(&state_cluster_ep_schema, nl + 1, len - (size_t)(nl + 1 - msg), &c) != SL_OK)
        return;
    c.version = strtoull(msg + 2, NULL, 10);
    mirror_apply(cl, key, &c, 0, NULL, 0, NULL);
    /* another worker of this host may have written the copy first: this
     * worker's snapshot is stale either way */
    if (cl->on_change != NULL)
        cl->on_change(cl->on_change_data);
}

/* ---- after a reconnect: every record from Redis ---- */

static void on_resync(void *data, redisReply *reply)
{
    state_cluster_t *cl = data;
    cl->resync_pending = 0;
    if (cl->destroying || reply == NULL || reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 * cl->nwatched)
        return;
    int applied = 0;
    for (size_t i = 0; i < cl->nwatched; i++) {
        uint64_t version = parse_version(reply->element[2 * i]);
        state_cluster_ep_t theirs;
        int present = decode_theirs(reply->element[2 * i + 1], version, &theirs);
        if (present)
            applied |= mirror_apply(cl, cl->watched[i], &theirs, 0, NULL, 0, NULL);
        /* this host's changes while Redis was away, or what Redis does not have */
        ep_op_t *op = sl_xcalloc(1, sizeof(*op));
        op->cl = cl;
        snprintf(op->key, sizeof(op->key), "%s", cl->watched[i]);
        op->ctx = sl_xmalloc(1);
        op->have_expect = 1;
        op->expect = present ? version : 0;
        op->theirs = present ? theirs : (state_cluster_ep_t){0};
        op_try(op);
    }
    if (applied && cl->on_change != NULL)
        cl->on_change(cl->on_change_data);
}

void state_cluster_ep_resync(state_cluster_t *cl)
{
    if (cl->nwatched == 0 || cl->resync_pending)
        return;
    size_t n = cl->nwatched;
    const char **argv = sl_xcalloc(n + 3, sizeof(*argv));
    size_t *lens = sl_xcalloc(n + 3, sizeof(*lens));
    char nkeys[24];
    snprintf(nkeys, sizeof(nkeys), "%zu", n);
    argv[0] = "EVALSHA";
    argv[1] = cl->sha[STATE_SCRIPT_GET];
    argv[2] = nkeys;
    char **keys = sl_xcalloc(n, sizeof(*keys));
    for (size_t i = 0; i < n; i++) {
        sl_buf_t b = SL_BUF_INIT;
        sl_buf_printf(&b, "%sep:%s", cl->conf->prefix, cl->watched[i]);
        keys[i] = sl_buf_steal(&b, NULL);
        argv[3 + i] = keys[i];
    }
    for (size_t i = 0; i < n + 3; i++)
        lens[i] = strlen(argv[i]);
    if (state_redis_send(&cl->cmd, on_resync, cl, (int)(n + 3), argv, lens) == 0)
        cl->resync_pending = 1;
    for (size_t i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
    free(argv);
    free(lens);
}

void state_cluster_watch(state_cluster_t *cl, const char *const *keys, size_t n)
{
    for (size_t i = 0; i < cl->nwatched; i++)
        free(cl->watched[i]);
    free(cl->watched);
    cl->watched = sl_xcalloc(n ? n : 1, sizeof(*cl->watched));
    for (size_t i = 0; i < n; i++)
        cl->watched[i] = sl_xstrdup(keys[i]);
    cl->nwatched = n;
    if (state_cluster_up(cl))
        state_cluster_ep_resync(cl);
}

void state_cluster_on_change(state_cluster_t *cl, void (*fn)(void *data), void *data)
{
    cl->on_change = fn;
    cl->on_change_data = data;
}

/* ---- a network's level: which host reports a change ---- */

typedef struct level_op {
    state_cluster_t *cl;
    state_event_t events[STATE_MAX_TXN_EVENTS];
    size_t nevents;
} level_op_t;

static void append_events(state_t *st, state_event_t *events, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (state_event_append(st, &events[i]) != SL_OK)
            sl_log_warn("cluster: cannot append a network level event");
}

static void on_level(void *data, redisReply *reply)
{
    level_op_t *op = data;
    state_cluster_t *cl = op->cl;
    if (!cl->destroying) {
        if (reply == NULL || reply->type != REDIS_REPLY_INTEGER)
            append_events(cl->st, op->events, op->nevents); /* Redis cannot say: this host reports it */
        else if (reply->integer == 1)
            append_events(cl->st, op->events, op->nevents);
        if (reply != NULL && reply->type == REDIS_REPLY_ERROR)
            state_cluster_link_failed(cl, reply->str);
    }
    free(op);
}

int state_cluster_level_report(state_cluster_t *cl, const char *network, uint8_t level, const state_event_t *events,
                               size_t n)
{
    char key[STATE_CLUSTER_PREFIX_MAX + STATE_KEY_MAX], lv[8];
    snprintf(key, sizeof(key), "%slvl:%s", cl->conf->prefix, network);
    snprintf(lv, sizeof(lv), "%u", level);
    level_op_t *op = sl_xcalloc(1, sizeof(*op));
    op->cl = cl;
    memcpy(op->events, events, n * sizeof(*events));
    op->nevents = n;
    const char *argv[] = {"EVALSHA", cl->sha[STATE_SCRIPT_LEVEL], "1", key, lv};
    size_t lens[5];
    for (int i = 0; i < 5; i++)
        lens[i] = strlen(argv[i]);
    if (state_redis_send(&cl->cmd, on_level, op, 5, argv, lens) != 0) {
        free(op);
        return 0;
    }
    return 1;
}
