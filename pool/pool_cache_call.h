/* pool/pool_cache_call.h: the cache satellite: a read whose answer cannot
 * change is answered from the response cache (state/state_cache.h) without
 * going upstream, and an answer that may be kept is stored on its way back.
 * What may be kept is policy/cache.h's to say, from the block each item
 * names and the network's chain view: the finalized height (only an
 * answering endpoint's own finalized height lets its answer be kept) and,
 * with cache.unfinalized: head, the ring's hash at the item's height, which
 * is part of the key (a reorg changes it: the old entry is never found).
 *
 * A key is SHA-256 of the network, the method and the params without
 * insignificant whitespace (and the block hash and height when the plan
 * keys by hash): no client can make two calls share a key. An entry holds
 * the answer object as it came back and where its id is; the client's id is
 * put back when it is served. Batch members each on their own: hits are
 * answered, the rest go upstream as a smaller batch. Only the first 64
 * items of a batch are looked up.
 *
 * With cache.redis (and cluster:), a local miss is looked up in the
 * cluster's Redis (state/state_cache_redis.h) before the call's first
 * attempt: the row's gate makes the call wait (LEASING) for the answer or
 * cache.redis_wait_ms, whichever comes first; a slow, failing or absent
 * Redis is a miss. A Redis hit is served and kept in the local store too;
 * an answer kept locally is written to Redis as well, except those keyed
 * by block hash (cache.unfinalized: head), which stay this host's: they
 * live while the head is that block (little to share), and their key
 * holds the hash this host's chain view has at that height, not a proof of
 * the block the answering endpoint served; kept local, a wrong one stays
 * on one host, where the next reorg it sees drops it, never in Redis for
 * cache.redis_ttl_s for every host.
 * Its row: pool_cache_row. */
#ifndef POOL_CACHE_CALL_H
#define POOL_CACHE_CALL_H

#include <stdint.h>

#include "policy/cache.h"
#include "pool/pool_delay.h"

#define POOL_CACHE_KEY_LEN 32

/* One item's plan and key. */
typedef struct pool_cache_item {
    policy_cache_call_t plan;
    uint8_t key[POOL_CACHE_KEY_LEN];
} pool_cache_item_t;

struct state_cache_redis_get;

typedef struct pool_cache_call {
    uint64_t pending;             /* items (bit i) looked up and missed: their answer may be kept */
    pool_cache_item_t *items;     /* [nitems] once an item has a plan; NULL before */
    /* the Redis tier (cache.redis): asked at the call's first gate, so that
     * a coalesced read asks once */
    uint64_t remote;              /* items (bit i) missed locally that Redis may have: not yet asked */
    struct state_cache_redis_get *ask; /* the lookup in flight, NULL if none */
    pool_delay_t wait;            /* ... and how long the call waits for it (cache.redis_wait_ms) */
    uint64_t gen;                 /* the network's generation the lookup read ... */
    uint8_t gen_known;            /* ... if it answered: puts to Redis carry it */
} pool_cache_call_t;

#endif
