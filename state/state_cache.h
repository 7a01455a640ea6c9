/* state/state_cache.h: the response cache's store, an LMDB environment of
 * its own (DESIGN.md §1), shared by every worker and kept across restarts.
 *
 * What is kept and under which key is decided elsewhere (policy/cache.h,
 * pool/pool_cache_call.c); the store keeps answer bytes under a 32-byte key
 * and forgets the least recently used bytes when the map nears full. Its
 * own environment means a full cache never touches the state map: limits,
 * budgets and breakers never depend on it.
 *
 * Four databases:
 *   entries  key (32 bytes) -> header (version, network, when stored) + the
 *            answer's bytes
 *   seqs     key -> its use sequence
 *   lru      use sequence (big-endian u64) -> key: the oldest first
 *   meta     "evictions" -> entries evicted since the cache was made
 * A hit does not write: the worker notes the key, and state_cache_flush
 * moves the noted entries to the young end in one write transaction (the
 * worker's tick, every second). Eviction walks `lru` from the old end.
 * Like state/, one handle per process, opened after fork (MDB_NOTLS). */
#ifndef STATE_CACHE_H
#define STATE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "base/sl_buf.h"
#include "base/sl_err.h"

#define STATE_CACHE_KEY_LEN 32
#define STATE_CACHE_NETWORK_MAX 63     /* a network name longer than this is kept shortened */
#define STATE_CACHE_TOUCH_MAX 4096     /* hits noted between flushes; more are not noted */
/* Eviction keeps the entries' own bytes under ENTRIES_PCT of the map (less
 * HEADROOM_PAGES for a small map) and, once they pass it, takes them a
 * sixteenth of the map lower. Why not more of the map: the keys are hashes,
 * so B-tree pages are half to two-thirds full; LMDB copies the pages a write
 * changes and frees the old ones only two transactions later; and a
 * deletion copies pages too, so eviction runs in small transactions. */
#define STATE_CACHE_ENTRIES_PCT 45
#define STATE_CACHE_HEADROOM_PAGES 64
#define STATE_CACHE_EVICT_DIV 16

typedef struct state_cache state_cache_t;

typedef struct state_cache_conf {
    const char *path;             /* folder; created if missing */
    size_t max_mb;                /* the map's size: the cache never takes more */
} state_cache_conf_t;

/* What this process's handle has seen since it opened. */
typedef struct state_cache_stats {
    uint64_t hits, misses, puts, evictions, put_failures;
} state_cache_stats_t;

/* Errors: SL_ERR_IO (folder), SL_ERR_STATE (LMDB); logged. */
SL_MUST_CHECK sl_err_t state_cache_open(const state_cache_conf_t *conf, state_cache_t **out);
void state_cache_close(state_cache_t *c);

/* Appends the bytes kept under key to out. SL_ERR_NOT_FOUND on a miss. A
 * hit is noted for the next flush. */
SL_MUST_CHECK sl_err_t state_cache_get(state_cache_t *c, const uint8_t key[STATE_CACHE_KEY_LEN], sl_buf_t *out);

/* Keeps bytes[0..len) of network under key, as the youngest entry (one write
 * transaction); evicts first when the map is past its high mark or full.
 * SL_ERR_TOO_LARGE if the entry is over a quarter of the map. */
SL_MUST_CHECK sl_err_t state_cache_put(state_cache_t *c, const uint8_t key[STATE_CACHE_KEY_LEN], const char *network,
                                       const void *bytes, size_t len, uint64_t now_ms);

/* Moves the entries hit since the last flush to the young end (one write
 * transaction; nothing if none was hit). */
SL_MUST_CHECK sl_err_t state_cache_flush(state_cache_t *c);

/* Drops every entry (network NULL) or every entry of network; *removed gets
 * how many. */
SL_MUST_CHECK sl_err_t state_cache_purge(state_cache_t *c, const char *network, size_t *removed);

typedef struct state_cache_usage {
    size_t entries;               /* kept now */
    size_t used;                  /* bytes their pages take */
    uint64_t bytes;               /* bytes the entries themselves hold (what eviction keeps in bounds) */
    size_t size;                  /* the map's */
    uint64_t evictions;           /* by every process, since the cache was made */
} state_cache_usage_t;

void state_cache_usage(state_cache_t *c, state_cache_usage_t *out);

const state_cache_stats_t *state_cache_stats(const state_cache_t *c);

#endif
