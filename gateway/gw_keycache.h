/* gateway/gw_keycache.h: a worker's memory of the keys it has seen (issue
 * 33). Resolving a presented key costs a SHA-256 of it (some 8,500
 * instructions, twice for a key made at run time); a keyed call mostly
 * repeats a key seen a moment ago. The cache maps the presented bytes to
 * the key they resolved to: bounded (GW_KEYCACHE_SLOTS, direct-mapped by
 * a fast hash, a full compare of the bytes on a hit), only known keys kept
 * (an unknown key is hashed each time: it might be one just made), and
 * every entry tied to the run-time keys' generation (gw_keys.h), so a
 * change or a revocation misses at once and is resolved again. The
 * worker's config keys do not change for its life. One loop's: no locks. */
#ifndef GW_KEYCACHE_H
#define GW_KEYCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "config/cfg.h"

#define GW_KEYCACHE_SLOTS 256     /* a power of two */
#define GW_KEYCACHE_KEY_MAX 96    /* longer keys are not kept (sluice's are 27 bytes) */

typedef struct gw_keycache gw_keycache_t;

gw_keycache_t *gw_keycache_create(void);
void gw_keycache_destroy(gw_keycache_t *c);

/* The key key[0..len) resolved to at generation gen, or NULL (never seen,
 * pushed out, or seen at another generation). */
const cfg_key_conf_t *gw_keycache_get(const gw_keycache_t *c, const char *key, size_t len, uint64_t gen);

/* Keeps key[0..len) -> conf (not NULL) at generation gen, in place of what
 * its slot held. */
void gw_keycache_put(gw_keycache_t *c, const char *key, size_t len, uint64_t gen, const cfg_key_conf_t *conf);

#endif
