/* policy/cacheadmit.h: whether an answer the cache may keep (policy/cache.h)
 * is let in, as plain data: the cache is shared by every caller, so no one
 * caller may take it over.
 *
 * - an entry over max_entry bytes is never kept (one answer must not take
 *   a slice of the map that evicts every other caller's entries, nor hold
 *   the worker while it is written);
 * - an entry over `large` bytes is kept on its second ask within the
 *   doorkeeper's memory (a one-off large read is not worth what it evicts);
 * - a caller (the owner hash of its call; 0: no identity, one owner too)
 *   inserts at most share_bytes every window_ms: past it, its answers are
 *   served and not kept until its window turns.
 * One per worker (the verdicts need no agreement between workers: each
 * bounds its own insertions). Pure: time is passed in, no allocation. */
#ifndef POLICY_CACHEADMIT_H
#define POLICY_CACHEADMIT_H

#include <stdint.h>

#define POLICY_CACHEADMIT_SEEN 1024   /* large keys remembered as asked once */
#define POLICY_CACHEADMIT_OWNERS 256  /* callers whose insertions are counted at once */

typedef struct policy_cacheadmit_conf {
    uint64_t max_entry;           /* bytes; 0: no cap */
    uint64_t large;               /* bytes; over this, kept on the second ask only */
    uint64_t share_bytes;         /* a caller's insertions per window; 0: no share */
    uint32_t window_ms;
} policy_cacheadmit_conf_t;

typedef enum policy_cacheadmit_verdict {
    POLICY_CACHEADMIT_KEEP,
    POLICY_CACHEADMIT_TOO_LARGE,  /* over max_entry */
    POLICY_CACHEADMIT_FIRST_ASK,  /* large, asked once so far: remembered */
    POLICY_CACHEADMIT_OVER_SHARE, /* the caller inserted its share this window */
    POLICY_CACHEADMIT_VERDICT_COUNT
} policy_cacheadmit_verdict_t;

typedef struct policy_cacheadmit_owner {
    uint64_t owner;
    uint64_t bytes;               /* inserted in the window that began at since_ms */
    uint64_t since_ms;
    uint8_t used;
} policy_cacheadmit_owner_t;

typedef struct policy_cacheadmit {
    uint64_t seen[POLICY_CACHEADMIT_SEEN];  /* a large key's tag (its first 8 bytes, never 0) */
    policy_cacheadmit_owner_t owners[POLICY_CACHEADMIT_OWNERS];
} policy_cacheadmit_t;

void policy_cacheadmit_init(policy_cacheadmit_t *a);

/* The verdict on keeping len bytes under key (32 bytes) for owner; KEEP
 * counts them in the owner's window. */
policy_cacheadmit_verdict_t policy_cacheadmit_judge(policy_cacheadmit_t *a, const policy_cacheadmit_conf_t *conf,
                                                    const uint8_t *key, uint64_t len, uint64_t owner, uint64_t now_ms);

/* "keep", "too_large", "first_ask", "over_share". */
const char *policy_cacheadmit_name(policy_cacheadmit_verdict_t v);

#endif
