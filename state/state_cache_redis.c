/* state/state_cache_redis.c: the response cache's Redis tier
 * (state/state_cache_redis.h): lookups (one MGET of the network's
 * generation and the entries), puts (SET with an expiry), purges (INCR of
 * the generation). Called by pool/pool_cache_call.c (lookups, puts) and
 * admin/admin_cache.c (purges), on the worker's loop. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "state/state_cache_redis.h"
#include "state/state_cluster_int.h"

#define ENTRY_KEY_MAX (STATE_CLUSTER_PREFIX_MAX + 16 + 2 * STATE_CACHE_KEY_LEN)
#define GEN_KEY_MAX (STATE_CLUSTER_PREFIX_MAX + 16 + STATE_KEY_MAX)
#define GEN_LEN 8

struct state_cache_redis_get {
    state_cluster_t *cl;
    state_cache_redis_fn fn;
    void *data;
    int cancelled;                /* the caller stopped waiting: dropped when the reply comes */
    size_t n;
};

static void entry_key(char *out, const state_cluster_t *cl, const uint8_t key[STATE_CACHE_KEY_LEN])
{
    static const char hex[] = "0123456789abcdef";
    int off = snprintf(out, ENTRY_KEY_MAX, "%scache:e:", cl->conf->prefix);
    for (size_t i = 0; i < STATE_CACHE_KEY_LEN; i++) {
        out[off + 2 * i] = hex[key[i] >> 4];
        out[off + 2 * i + 1] = hex[key[i] & 15];
    }
    out[off + 2 * STATE_CACHE_KEY_LEN] = '\0';
}

static void gen_key(char *out, const state_cluster_t *cl, const char *network)
{
    snprintf(out, GEN_KEY_MAX, "%scache:gen:%s", cl->conf->prefix, network);
}

static uint64_t reply_gen(const redisReply *r)
{
    if (r->type == REDIS_REPLY_INTEGER)
        return r->integer > 0 ? (uint64_t)r->integer : 0;
    return r->type == REDIS_REPLY_STRING ? strtoull(r->str, NULL, 10) : 0;
}

/* An error reply to one of the cache's commands: counted with the
 * cluster's, logged at most once a minute with them, and left at that (a
 * cache write refused by a full Redis must not make limits local). */
static void count_error(state_cluster_t *cl, const char *why)
{
    cl->errors++;
    uint64_t now = sl_now_ms();
    if (cl->error_logged_ms == 0 || now - cl->error_logged_ms >= 60000) {
        cl->error_logged_ms = now;
        sl_log_warn("cluster: Redis refused a response-cache command (%.120s): the cache's Redis tier misses", why);
    }
}

static void on_mget(void *data, redisReply *reply)
{
    state_cache_redis_get_t *g = data;
    if (g->cl->destroying || g->cancelled) {
        free(g);
        return;
    }
    const char *bytes[STATE_CACHE_REDIS_KEYS_MAX];
    size_t len[STATE_CACHE_REDIS_KEYS_MAX];
    state_cache_redis_found_t r = {.n = g->n, .bytes = bytes, .len = len};
    memset(bytes, 0, sizeof(bytes));
    memset(len, 0, sizeof(len));
    if (reply != NULL && reply->type == REDIS_REPLY_ARRAY && reply->elements == g->n + 1) {
        r.ok = 1;
        r.gen = reply_gen(reply->element[0]);
        uint8_t want[GEN_LEN];
        for (int i = 0; i < GEN_LEN; i++)
            want[i] = (uint8_t)(r.gen >> (56 - 8 * i));
        for (size_t i = 0; i < g->n; i++) {
            const redisReply *e = reply->element[i + 1];
            if (e->type != REDIS_REPLY_STRING || e->len <= GEN_LEN || memcmp(e->str, want, GEN_LEN) != 0)
                continue; /* absent, or kept before the last purge */
            bytes[i] = e->str + GEN_LEN;
            len[i] = e->len - GEN_LEN;
        }
    } else if (reply != NULL && reply->type == REDIS_REPLY_ERROR) {
        count_error(g->cl, reply->str);
    }
    g->fn(g->data, &r);
    free(g);
}

int state_cache_redis_get(state_cluster_t *cl, const char *network, const uint8_t (*keys)[STATE_CACHE_KEY_LEN],
                          size_t n, state_cache_redis_fn fn, void *data, state_cache_redis_get_t **out)
{
    if (!state_cluster_up(cl) || n == 0 || n > STATE_CACHE_REDIS_KEYS_MAX || strlen(network) >= STATE_KEY_MAX ||
        cl->cmd.count >= STATE_CACHE_REDIS_BUSY)
        return -1; /* a busy connection is left to the cluster's leases */
    char gk[GEN_KEY_MAX];
    char(*ek)[ENTRY_KEY_MAX] = sl_xmalloc(n * sizeof(*ek));
    const char *argv[2 + STATE_CACHE_REDIS_KEYS_MAX];
    size_t lens[2 + STATE_CACHE_REDIS_KEYS_MAX];
    gen_key(gk, cl, network);
    argv[0] = "MGET";
    argv[1] = gk;
    for (size_t i = 0; i < n; i++) {
        entry_key(ek[i], cl, keys[i]);
        argv[2 + i] = ek[i];
    }
    for (size_t i = 0; i < 2 + n; i++)
        lens[i] = strlen(argv[i]);
    state_cache_redis_get_t *g = sl_xcalloc(1, sizeof(*g));
    *g = (state_cache_redis_get_t){.cl = cl, .fn = fn, .data = data, .n = n};
    int rc = state_redis_send(&cl->cmd, on_mget, g, (int)(2 + n), argv, lens);
    free(ek);
    if (rc != 0) {
        free(g);
        return -1;
    }
    *out = g;
    return 0;
}

void state_cache_redis_cancel(state_cache_redis_get_t *g)
{
    if (g != NULL)
        g->cancelled = 1;
}

static void on_set(void *data, redisReply *reply)
{
    state_cluster_t *cl = data;
    if (!cl->destroying && reply != NULL && reply->type == REDIS_REPLY_ERROR)
        count_error(cl, reply->str);
}

int state_cache_redis_put(state_cluster_t *cl, const state_cache_redis_conf_t *conf,
                          const uint8_t key[STATE_CACHE_KEY_LEN], uint64_t gen, const void *bytes, size_t len)
{
    if (!state_cluster_up(cl) || len == 0 || len > STATE_CACHE_REDIS_ENTRY_MAX || cl->cmd.count >= STATE_CACHE_REDIS_BUSY)
        return -1;
    char ek[ENTRY_KEY_MAX], ttl[16];
    entry_key(ek, cl, key);
    snprintf(ttl, sizeof(ttl), "%u", conf->ttl_s);
    char *value = sl_xmalloc(GEN_LEN + len);
    for (int i = 0; i < GEN_LEN; i++)
        value[i] = (char)(uint8_t)(gen >> (56 - 8 * i));
    memcpy(value + GEN_LEN, bytes, len);
    const char *argv[] = {"SET", ek, value, "EX", ttl};
    size_t lens[] = {3, strlen(ek), GEN_LEN + len, 2, strlen(ttl)};
    int rc = state_redis_send(&cl->cmd, on_set, cl, 5, argv, lens);
    free(value);
    return rc;
}

typedef struct purge_op {
    state_cluster_t *cl;
    state_cache_redis_purged_fn fn;
    void *data;
    size_t left;                  /* commands without their reply yet (+1 while sending) */
    int ok;
} purge_op_t;

static void on_incr(void *data, redisReply *reply)
{
    purge_op_t *op = data;
    if (op->cl->destroying) {
        if (--op->left == 0)
            free(op);
        return;
    }
    if (reply == NULL || reply->type != REDIS_REPLY_INTEGER) {
        if (reply != NULL && reply->type == REDIS_REPLY_ERROR)
            count_error(op->cl, reply->str);
        op->ok = 0;
    }
    if (--op->left > 0)
        return;
    op->fn(op->data, op->ok);
    free(op);
}

/* INCR of the generation, then "c <network>" on the channel. */
static int send_purge(state_cluster_t *cl, const char *network, purge_op_t *op)
{
    char gk[GEN_KEY_MAX], msg[STATE_KEY_MAX + 2];
    if (strlen(network) >= STATE_KEY_MAX)
        return -1;
    gen_key(gk, cl, network);
    snprintf(msg, sizeof(msg), "c %s", network);
    const char *incr[] = {"INCR", gk}, *publish[] = {"PUBLISH", cl->channel, msg};
    size_t incr_lens[] = {4, strlen(gk)}, publish_lens[] = {7, strlen(cl->channel), strlen(msg)};
    if (state_redis_send(&cl->cmd, on_incr, op, 2, incr, incr_lens) != 0)
        return -1;
    op->left++;
    if (state_redis_send(&cl->cmd, on_incr, op, 3, publish, publish_lens) != 0)
        return -1;
    op->left++;
    return 0;
}

int state_cache_redis_purge(state_cluster_t *cl, const char *const *networks, size_t n,
                            state_cache_redis_purged_fn fn, void *data)
{
    if (!state_cluster_up(cl) || n == 0)
        return -1;
    purge_op_t *op = sl_xcalloc(1, sizeof(*op));
    *op = (purge_op_t){cl, fn, data, 1, 1}; /* one reference of its own until every INCR is sent */
    for (size_t i = 0; i < n; i++)
        if (send_purge(cl, networks[i], op) != 0)
            op->ok = 0;
    if (--op->left == 0) { /* nothing was sent */
        free(op);
        return -1;
    }
    return 0;
}

void state_cache_redis_message(state_cluster_t *cl, const char *msg, size_t len)
{
    /* "c <network>": one worker per host purges the host's store (its workers share it) */
    char network[STATE_KEY_MAX];
    if (!cl->events_worker || cl->cache == NULL || len < 3 || len - 2 >= sizeof(network) || msg[1] != ' ')
        return;
    memcpy(network, msg + 2, len - 2);
    network[len - 2] = '\0';
    size_t removed = 0;
    if (state_cache_purge(cl->cache, network, &removed) != SL_OK)
        sl_log_warn("cache: another host purged network %s: this host's entries could not be", network);
    else if (removed > 0)
        sl_log_info("cache: another host purged network %s: %zu entries of this host's dropped", network, removed);
}
