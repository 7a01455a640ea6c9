/* pool/pool_cache_call.h: the cache satellite: a read whose answer cannot
 * change is answered from the response cache (state/state_cache.h) without
 * going upstream, and an answer that may be kept is stored on its way back.
 * What may be kept is policy/cache.h's to say, from the block each item
 * names and the network's chain view: the finalized height (only an
 * answering endpoint's own finalized height lets its answer be kept) and,
 * with cache.unfinalized: head, the ring's hash at the item's height, which
 * is part of the key (a reorg changes it: the old entry is never found).
 *
 * A key is Keccak-256 of the network, the method and the params without
 * insignificant whitespace (and the block hash and height when the plan
 * keys by hash): no client can make two calls share a key. An entry holds
 * the answer object as it came back and where its id is; the client's id is
 * put back when it is served. Batch members each on their own: hits are
 * answered, the rest go upstream as a smaller batch. Only the first 64
 * items of a batch are looked up. Its row: pool_cache_row. */
#ifndef POOL_CACHE_CALL_H
#define POOL_CACHE_CALL_H

#include <stdint.h>

#include "policy/cache.h"

#define POOL_CACHE_KEY_LEN 32

/* One item's plan and key. */
typedef struct pool_cache_item {
    policy_cache_call_t plan;
    uint8_t key[POOL_CACHE_KEY_LEN];
} pool_cache_item_t;

typedef struct pool_cache_call {
    uint64_t pending;             /* items (bit i) looked up and missed: their answer may be kept */
    pool_cache_item_t *items;     /* [nitems] once an item has a plan; NULL before */
} pool_cache_call_t;

#endif
