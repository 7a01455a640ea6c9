/* state/state_cluster_keys.c: the API keys made at run time, shared by the
 * hosts of a cluster (state_apikey.h keeps each host's copy in LMDB).
 *
 * Redis holds them in two hashes: "<prefix>apikeys" (name -> the record's
 * version, 20 decimal digits, then the record: name, tier, the SHA-256 of
 * the secret and the scope; never a secret) and "<prefix>apikeys:gone"
 * (name -> the version of its revocation). A version is the shared ms of
 * the change (a key's updated_ms, a revocation's time); the keyput script
 * keeps the later one of a name and publishes "k" on the cluster's channel
 * when it wrote.
 *
 * A change made on this host (an /admin/keys request served by any worker)
 * is written to LMDB first, then sent with keyput. The events worker of
 * every host, on hearing "k" (and when its link comes up, and every
 * STATE_CLUSTER_KEYS_SYNC_MS), reads both hashes and merges them with the
 * host's copy: the later version of each name wins, on either side; what
 * Redis has later is applied to LMDB (which bumps the keys' generation, so
 * every worker reloads its table within state.refresh_ms and sweeps a
 * revoked key's WebSockets), what this host has later (made while Redis was
 * away, or before the host joined) is sent with keyput. A revocation made
 * here while Redis was away is kept as a tombstone in LMDB, so the merge
 * does not bring the key back. Nothing here runs per request. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sl_buf.h"
#include "base/sl_log.h"
#include "base/sl_time.h"
#include "state/state_apikey.h"
#include "state/state_cluster_int.h"
#include "state/state_int.h"

#define VERSION_DIGITS 20

static void hash_keys(const state_cluster_t *cl, char *live, char *gone, size_t cap)
{
    snprintf(live, cap, "%sapikeys", cl->conf->prefix);
    snprintf(gone, cap, "%sapikeys:gone", cl->conf->prefix);
}

/* keyput: op 'p' with the encoded record, or 'd' with rec_len 0. */
static void send_keyput(state_cluster_t *cl, char op, const char *name, uint64_t version, const char *rec,
                        size_t rec_len)
{
    if (cl == NULL || !state_cluster_up(cl))
        return;
    char live[STATE_CLUSTER_PREFIX_MAX + 16], gone[STATE_CLUSTER_PREFIX_MAX + 16], v[VERSION_DIGITS + 8];
    char ops[2] = {op, '\0'};
    hash_keys(cl, live, gone, sizeof(live));
    snprintf(v, sizeof(v), "%0*llu", VERSION_DIGITS, (unsigned long long)version);
    const char *argv[] = {"EVALSHA", cl->sha[STATE_SCRIPT_KEYPUT], "2", live, gone, ops, name, v,
                          rec != NULL ? rec : "", cl->channel};
    size_t lens[10];
    for (int i = 0; i < 10; i++)
        lens[i] = i == 8 ? rec_len : strlen(argv[i]);
    if (state_redis_send(&cl->cmd, NULL, NULL, 10, argv, lens) != 0)
        sl_log_debug("cluster: API key %s not sent to Redis; the next merge sends it", name);
}

void state_cluster_keys_put(state_cluster_t *cl, const state_apikey_rec_t *rec)
{
    if (cl == NULL || !state_cluster_up(cl))
        return;
    sl_buf_t buf = SL_BUF_INIT;
    if (state_record_encode(&state_apikey_schema, rec, &buf) == SL_OK)
        send_keyput(cl, 'p', rec->name, rec->updated_ms, buf.base, buf.len);
    sl_buf_dispose(&buf);
}

void state_cluster_keys_delete(state_cluster_t *cl, const char *name, uint64_t at_ms)
{
    send_keyput(cl, 'd', name, at_ms, NULL, 0);
}

/* ---- the merge ---- */

/* A name of Redis' reply (a bulk string) into out; 0 if it is no name. */
static int reply_name(const redisReply *r, char out[STATE_APIKEY_NAME_MAX])
{
    if (r->type != REDIS_REPLY_STRING || r->len == 0 || r->len >= STATE_APIKEY_NAME_MAX)
        return 0;
    memcpy(out, r->str, r->len);
    out[r->len] = '\0';
    return 1;
}

static uint64_t reply_version(const char *s, size_t len)
{
    char v[VERSION_DIGITS + 1];
    if (len > VERSION_DIGITS)
        len = VERSION_DIGITS;
    memcpy(v, s, len);
    v[len] = '\0';
    return strtoull(v, NULL, 10);
}

static int rec_cmp(const void *name, const void *rec)
{
    return strcmp(name, ((const state_apikey_rec_t *)rec)->name);
}

/* The host's key named name (recs[] is in name order, as LMDB lists them),
 * marked seen; NULL if none. */
static state_apikey_rec_t *local_find(state_apikey_rec_t *recs, size_t n, uint8_t *seen, const char *name)
{
    state_apikey_rec_t *r = n != 0 ? bsearch(name, recs, n, sizeof(*recs), rec_cmp) : NULL;
    if (r != NULL)
        seen[r - recs] = 1;
    return r;
}

/* One key that Redis holds (version v, record r). */
static void merge_live(state_cluster_t *cl, state_apikey_rec_t *mine, const state_apikey_rec_t *r, uint64_t v)
{
    state_t *st = cl->st;
    if (mine != NULL && mine->updated_ms > v) {
        state_cluster_keys_put(cl, mine); /* changed here later */
        return;
    }
    if (mine != NULL && mine->updated_ms == v && memcmp(mine->sha256, r->sha256, sizeof(r->sha256)) == 0)
        return;
    uint64_t gone = mine == NULL ? state_apikey_gone_ms(st, r->name) : 0;
    if (gone >= v && gone != 0) {
        state_cluster_keys_delete(cl, r->name, gone); /* revoked here later */
        return;
    }
    state_apikey_rec_t w = *r;
    w.updated_ms = v;
    if (state_apikey_apply(st, &w) != SL_OK)
        sl_log_warn("cluster: cannot keep API key %s on this host", r->name);
}

/* One tombstone that Redis holds (revoked at v). */
static void merge_gone(state_cluster_t *cl, state_apikey_rec_t *mine, const char *name, uint64_t v)
{
    if (mine == NULL)
        return;
    if (mine->updated_ms > v) {
        state_cluster_keys_put(cl, mine); /* made again here later */
        return;
    }
    sl_err_t err = state_apikey_forget(cl->st, name, v);
    if (err != SL_OK && err != SL_ERR_NOT_FOUND)
        sl_log_warn("cluster: cannot revoke API key %s on this host", name);
}

/* Every sync: O((Redis' keys + the host's) log the host's), decoding each
 * record Redis holds; nothing is written where both sides agree. */
static void merge(state_cluster_t *cl, const redisReply *live, const redisReply *gone)
{
    state_apikey_rec_t *recs = NULL, r;
    size_t n = 0;
    char name[STATE_APIKEY_NAME_MAX];
    if (state_apikey_list(cl->st, &recs, &n, NULL) != SL_OK)
        return;
    uint8_t *seen = sl_xcalloc(n + 1, 1);
    for (size_t i = 0; i + 1 < live->elements; i += 2) {
        const redisReply *val = live->element[i + 1];
        if (!reply_name(live->element[i], name) || val->type != REDIS_REPLY_STRING || val->len <= VERSION_DIGITS)
            continue;
        memset(&r, 0, sizeof(r));
        if (state_record_decode(&state_apikey_schema, val->str + VERSION_DIGITS, val->len - VERSION_DIGITS, &r) !=
                SL_OK ||
            strcmp(r.name, name) != 0) {
            local_find(recs, n, seen, name); /* not pushed over a record this host cannot read */
            sl_log_debug("cluster: Redis holds an API key record %s that does not decode; skipped", name);
            continue;
        }
        merge_live(cl, local_find(recs, n, seen, name), &r, reply_version(val->str, val->len));
    }
    for (size_t i = 0; i + 1 < gone->elements; i += 2) {
        const redisReply *val = gone->element[i + 1];
        if (reply_name(gone->element[i], name) && val->type == REDIS_REPLY_STRING)
            merge_gone(cl, local_find(recs, n, seen, name), name, reply_version(val->str, val->len));
    }
    /* made here and unknown to Redis (made while it was away, or before this host joined) */
    for (size_t i = 0; i < n; i++)
        if (!seen[i])
            state_cluster_keys_put(cl, &recs[i]);
    free(seen);
    free(recs);
}

static void on_keyget(void *data, redisReply *reply)
{
    state_cluster_t *cl = data;
    if (cl->destroying)
        return;
    cl->keys_sync_pending = 0;
    if (reply != NULL && reply->type == REDIS_REPLY_ERROR)
        state_cluster_link_failed(cl, reply->str);
    else if (reply != NULL && reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
             reply->element[0]->type == REDIS_REPLY_ARRAY && reply->element[1]->type == REDIS_REPLY_ARRAY)
        merge(cl, reply->element[0], reply->element[1]);
    if (cl->keys_sync_again) {
        cl->keys_sync_again = 0;
        state_cluster_keys_sync(cl);
    }
}

void state_cluster_keys_sync(state_cluster_t *cl)
{
    if (!cl->events_worker || !state_cluster_up(cl))
        return;
    if (cl->keys_sync_pending) {
        cl->keys_sync_again = 1; /* what was told may have come after the read under way */
        return;
    }
    cl->next_keys_sync_ms = sl_now_ms() + STATE_CLUSTER_KEYS_SYNC_MS;
    char live[STATE_CLUSTER_PREFIX_MAX + 16], gone[STATE_CLUSTER_PREFIX_MAX + 16];
    hash_keys(cl, live, gone, sizeof(live));
    const char *argv[] = {"EVALSHA", cl->sha[STATE_SCRIPT_KEYGET], "2", live, gone};
    size_t lens[5];
    for (int i = 0; i < 5; i++)
        lens[i] = strlen(argv[i]);
    if (state_redis_send(&cl->cmd, on_keyget, cl, 5, argv, lens) == 0)
        cl->keys_sync_pending = 1;
}

void state_cluster_keys_told(state_cluster_t *cl)
{
    state_cluster_keys_sync(cl);
}
