/* state/state_cluster_epapi.c: the endpoints added at run time, shared by
 * the hosts of a cluster (issue 34; state_epapi.h keeps each host's copy).
 *
 * Redis holds one hash, "<prefix>epapi", a field per entry
 * ("<network>/<id>") whose value is "<updated_ms> <created_ms> <json>"; a
 * removed entry stays as a tombstone, "<updated_ms> 0 " (no json), so that
 * a host that was away learns of the removal. The host that took the
 * operator's request writes the field, then publishes "e" on the cluster's
 * channel. On hearing it, on each return of the link, and every
 * SYNC_EVERY_MS, the host's events worker (one per host) reads the hash and
 * merges it with the host's copy, the later change winning: a newer entry
 * or tombstone of Redis' goes into LMDB (no event: the origin's arrives
 * through the event stream); an entry or tombstone of the host's that Redis
 * lacks or holds older (made while Redis was away, taken by a worker whose
 * link was not up, or a read that crossed a removal here) goes to Redis,
 * and the others are told. Ties do not happen in practice (a change's
 * time is the shared clock's ms, later than the entry's last one). When the copy
 * changed, the on_epapi callback tells the master, which applies the
 * entries (server/srv_epapi.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "state/state_cluster_int.h"
#include "state/state_epapi.h"
#include "state/state_int.h"

#define SYNC_EVERY_MS 10000
#define FIELD_MAX (STATE_EPAPI_NET_MAX + STATE_EPAPI_ID_MAX + 2)

static void hash_key(const state_cluster_t *cl, char *out, size_t cap)
{
    snprintf(out, cap, "%sepapi", cl->conf->prefix);
}

/* HSET of rec (json "" for a tombstone); 0 if sent. */
static int send_entry(state_cluster_t *cl, const state_epapi_rec_t *rec, int removed)
{
    char key[STATE_CLUSTER_PREFIX_MAX + 8], field[FIELD_MAX];
    hash_key(cl, key, sizeof(key));
    snprintf(field, sizeof(field), "%s/%s", rec->network, rec->id);
    sl_buf_t v = SL_BUF_INIT;
    sl_buf_printf(&v, "%llu %llu %s", (unsigned long long)rec->updated_ms,
                  (unsigned long long)(removed ? 0 : rec->created_ms), removed ? "" : rec->json);
    const char *argv[4] = {"HSET", key, field, v.base};
    size_t lens[4] = {4, strlen(key), strlen(field), v.len};
    int rc = state_redis_send(&cl->cmd, NULL, NULL, 4, argv, lens);
    sl_buf_dispose(&v);
    return rc;
}

static void tell(state_cluster_t *cl);

int state_cluster_epapi_publish(state_cluster_t *cl, const state_epapi_rec_t *rec, int removed)
{
    if (cl == NULL || !state_cluster_up(cl) || send_entry(cl, rec, removed) != 0)
        return -1;
    tell(cl);
    return 0;
}

void state_cluster_epapi_on_change(state_cluster_t *cl, void (*fn)(void *data), void *data)
{
    if (cl == NULL)
        return;
    cl->epapi_fn = fn;
    cl->epapi_data = data;
}

/* One field of the hash into rec (a tombstone: json ""); 1 if it reads. */
static int parse_entry(const redisReply *f, const redisReply *v, state_epapi_rec_t *rec)
{
    memset(rec, 0, sizeof(*rec));
    if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING || f->len >= FIELD_MAX)
        return 0;
    const char *slash = memchr(f->str, '/', f->len);
    if (slash == NULL || (size_t)(slash - f->str) >= sizeof(rec->network) ||
        f->len - (size_t)(slash - f->str) - 1 >= sizeof(rec->id))
        return 0;
    memcpy(rec->network, f->str, (size_t)(slash - f->str));
    memcpy(rec->id, slash + 1, f->len - (size_t)(slash - f->str) - 1);
    char *end;
    rec->updated_ms = strtoull(v->str, &end, 10);
    if (*end != ' ')
        return 0;
    rec->created_ms = strtoull(end + 1, &end, 10);
    if (*end != ' ')
        return 0;
    size_t jlen = v->len - (size_t)(end + 1 - v->str);
    if (jlen >= sizeof(rec->json))
        return 0;
    memcpy(rec->json, end + 1, jlen);
    return rec->network[0] != '\0' && rec->id[0] != '\0';
}

/* Merges Redis' entry or tombstone into the host's copy, the later change
 * winning (a later one of the host's goes to Redis: *pushed); 1 if the
 * entries that run changed. */
static int merge_in(state_cluster_t *cl, const state_epapi_rec_t *theirs, int *pushed)
{
    state_epapi_rec_t *mine = sl_xcalloc(1, sizeof(*mine));
    sl_err_t err = state_epapi_get(cl->st, theirs->network, theirs->id, mine);
    int changed = 0;
    if (err == SL_OK && mine->updated_ms > theirs->updated_ms)
        *pushed |= send_entry(cl, mine, mine->json[0] == '\0') == 0;
    else if ((err == SL_OK && mine->updated_ms < theirs->updated_ms) || (err == SL_ERR_NOT_FOUND && theirs->json[0])) {
        changed = err == SL_OK ? strcmp(mine->json, theirs->json) != 0 : 1;
        if (state_epapi_put(cl->st, theirs, -1, NULL) != SL_OK)
            changed = 0;
    }
    free(mine);
    return changed;
}

/* An entry of the host's that Redis has no field for goes to Redis; 1 if one did. */
static int push_missing(state_cluster_t *cl, const redisReply *reply)
{
    int pushed = 0;
    state_epapi_rec_t *recs = NULL;
    size_t n = 0;
    if (state_epapi_list(cl->st, &recs, &n, NULL) != SL_OK)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char field[FIELD_MAX];
        int found = 0;
        snprintf(field, sizeof(field), "%s/%s", recs[i].network, recs[i].id);
        for (size_t k = 0; k + 1 < reply->elements && !found; k += 2)
            found = reply->element[k]->type == REDIS_REPLY_STRING && reply->element[k]->len == strlen(field) &&
                    memcmp(reply->element[k]->str, field, reply->element[k]->len) == 0;
        if (!found)
            pushed |= send_entry(cl, &recs[i], recs[i].json[0] == '\0') == 0;
    }
    free(recs);
    return pushed;
}

/* The other hosts are told of what this host pushed. */
static void tell(state_cluster_t *cl)
{
    const char *argv[3] = {"PUBLISH", cl->channel, "e"};
    size_t lens[3] = {7, strlen(cl->channel), 1};
    state_redis_send(&cl->cmd, NULL, NULL, 3, argv, lens);
}

static void on_hash(void *data, redisReply *reply)
{
    state_cluster_t *cl = data;
    if (cl->destroying)
        return;
    cl->epapi_sync_pending = 0;
    if (reply != NULL && reply->type == REDIS_REPLY_ERROR)
        state_cluster_link_failed(cl, reply->str);
    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY)
        return;
    int changed = 0, pushed = 0;
    state_epapi_rec_t *rec = sl_xcalloc(1, sizeof(*rec));
    for (size_t k = 0; k + 1 < reply->elements; k += 2)
        if (parse_entry(reply->element[k], reply->element[k + 1], rec))
            changed |= merge_in(cl, rec, &pushed);
    free(rec);
    pushed |= push_missing(cl, reply);
    if (pushed)
        tell(cl);
    if (changed) {
        sl_log_info("cluster: the endpoints added at run time changed on another host; applying them");
        if (cl->epapi_fn != NULL)
            cl->epapi_fn(cl->epapi_data);
    }
    if (cl->epapi_sync_again) {
        cl->epapi_sync_again = 0;
        state_cluster_epapi_sync(cl);
    }
}

void state_cluster_epapi_sync(state_cluster_t *cl)
{
    if (!cl->events_worker || cl->link != STATE_LINK_UP)
        return;
    if (cl->epapi_sync_pending) {
        cl->epapi_sync_again = 1;
        return;
    }
    char key[STATE_CLUSTER_PREFIX_MAX + 8];
    hash_key(cl, key, sizeof(key));
    const char *argv[2] = {"HGETALL", key};
    size_t lens[2] = {7, strlen(key)};
    cl->next_epapi_sync_ms = sl_now_ms() + SYNC_EVERY_MS;
    if (state_redis_send(&cl->cmd, on_hash, cl, 2, argv, lens) == 0)
        cl->epapi_sync_pending = 1;
}

void state_cluster_epapi_tick(state_cluster_t *cl, uint64_t now_ms)
{
    if (cl->events_worker && now_ms >= cl->next_epapi_sync_ms)
        state_cluster_epapi_sync(cl);
}
