/* state/state_cache_redis.h: the response cache's second tier, in the
 * cluster's Redis (cache.redis: true, only with cluster:), shared by the
 * hosts. The local store (state/state_cache.h) stays the first tier: a
 * local miss looks here (pool/pool_cache_call.c, asynchronously, for at
 * most conf->wait_ms), and an answer kept locally is written here too.
 *
 * Keys, under the cluster's prefix:
 *   <prefix>cache:gen:<network>  the network's generation (no expiry;
 *                                absent = 0); a purge INCRs it
 *   <prefix>cache:e:<64 hex>     an entry (the 32-byte key of
 *                                pool_cache_call.h in hex), with an expiry
 *                                of conf->ttl_s: 8 bytes of the generation
 *                                it was fetched under (big-endian), then
 *                                the local store's entry bytes
 * A lookup is one MGET of the generation and the entries, so it reads both
 * at once: an entry of another generation is a miss. A put carries the
 * generation its call's lookup read, so an answer fetched before a purge
 * and kept after it is never found. The cache's entries are the only keys
 * sluice writes with an expiry besides the client-limit cells (which expire
 * when their window is over): with maxmemory-policy volatile-lru, Redis
 * evicts the least recently used of those and never the cluster's other
 * records. An error reply (a full Redis under noeviction) is a miss or a
 * lost entry, counted in the cluster's error count, and never takes the
 * cluster's link down as the cluster's own commands' errors do.
 *
 * Everything runs on the worker's loop, on the cluster's command
 * connection (state_cluster.h); nothing blocks. Entries larger than
 * STATE_CACHE_REDIS_ENTRY_MAX stay local (a big value on the command
 * connection would hold up the cluster's leases behind it), and lookups
 * (a miss then) and puts are not sent while STATE_CACHE_REDIS_BUSY
 * commands await replies on it: the cache never crowds the leases out of
 * the connection's STATE_REDIS_MAX_PENDING. */
#ifndef STATE_CACHE_REDIS_H
#define STATE_CACHE_REDIS_H

#include <stddef.h>
#include <stdint.h>

#include "state/state_cache.h"
#include "state/state_cluster.h"

#define STATE_CACHE_REDIS_DEFAULT_TTL_S 86400
#define STATE_CACHE_REDIS_DEFAULT_WAIT_MS 10
#define STATE_CACHE_REDIS_ENTRY_MAX (512u * 1024u)
#define STATE_CACHE_REDIS_KEYS_MAX 64  /* entries one lookup asks for */
#define STATE_CACHE_REDIS_BUSY 512

typedef struct state_cache_redis_conf {
    uint32_t ttl_s;               /* an entry's expiry in Redis */
    uint32_t wait_ms;             /* a lookup unanswered this long is a miss (the caller's timer) */
} state_cache_redis_conf_t;

/* The tier of the local store c (state_cache.c keeps it with the handle, so
 * pool/ and admin/ find it through the handle they have): cl is the
 * worker's cluster link, which must outlive c's use. cl NULL: no tier. */
void state_cache_tier_set(state_cache_t *c, state_cluster_t *cl, const state_cache_redis_conf_t *conf);
/* The link of c's Redis tier and its conf in *conf; NULL if it has none. */
state_cluster_t *state_cache_tier(const state_cache_t *c, state_cache_redis_conf_t *conf);

/* ---- lookups ---- */
typedef struct state_cache_redis_get state_cache_redis_get_t;

typedef struct state_cache_redis_found {
    int ok;                       /* 0: Redis failed (an error reply, the connection lost) */
    uint64_t gen;                 /* the network's generation as read */
    size_t n;
    const char *const *bytes;     /* [n]: entry i's local-store bytes, NULL if absent (or of another
                                   * generation); valid during the callback only */
    const size_t *len;
} state_cache_redis_found_t;

typedef void (*state_cache_redis_fn)(void *data, const state_cache_redis_found_t *r);

/* Looks keys[0..n) of network up (n <= STATE_CACHE_REDIS_KEYS_MAX). 0 if
 * asked: fn runs once with the answer, unless the lookup is cancelled
 * first or the link is destroyed (then never); *out is the lookup until fn
 * runs. -1 if the link is not up or is busy (fn is not called). */
int state_cache_redis_get(state_cluster_t *cl, const char *network, const uint8_t (*keys)[STATE_CACHE_KEY_LEN],
                          size_t n, state_cache_redis_fn fn, void *data, state_cache_redis_get_t **out);
/* The caller stops waiting (its time ran out, or it went away): fn will
 * not run; the reply is dropped when it comes. */
void state_cache_redis_cancel(state_cache_redis_get_t *g);

/* ---- writes ---- */
/* Writes entry bytes[0..len) under key, stamped with gen (what the lookup
 * that missed it read), with the conf's expiry. Fire and forget: an error
 * reply is counted. -1 if not sent (link down, busy, too large). */
int state_cache_redis_put(state_cluster_t *cl, const state_cache_redis_conf_t *conf,
                          const uint8_t key[STATE_CACHE_KEY_LEN], uint64_t gen, const void *bytes, size_t len);

typedef void (*state_cache_redis_purged_fn)(void *data, int ok);
/* Moves the generation of each of networks[0..n) on (INCR): their entries
 * in Redis are never found again and expire. fn(data, ok) runs once when
 * every INCR is answered (ok: all of them were), unless the link is
 * destroyed first. -1 if the link is not up (fn is not called). */
int state_cache_redis_purge(state_cluster_t *cl, const char *const *networks, size_t n,
                            state_cache_redis_purged_fn fn, void *data);

#endif
