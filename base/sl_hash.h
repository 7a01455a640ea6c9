/* base/sl_hash.h: FNV-1a, 64 bits: a fast hash for tables keyed by short
 * strings (identities, coalescing keys). Not for anything an attacker must
 * not be able to collide on purpose: callers bound what a collision costs. */
#ifndef SL_HASH_H
#define SL_HASH_H

#include <stddef.h>
#include <stdint.h>

#define SL_FNV1A_OFFSET 0xcbf29ce484222325ULL /* 14695981039346656037 */
#define SL_FNV1A_PRIME 0x100000001b3ULL       /* 1099511628211 */

/* Hashes p[0..n) continuing from h (SL_FNV1A_OFFSET to start). */
static inline uint64_t sl_fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * SL_FNV1A_PRIME;
    return h;
}

/* Hashes the NUL-terminated s continuing from h. */
static inline uint64_t sl_fnv1a_str(uint64_t h, const char *s)
{
    for (; *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * SL_FNV1A_PRIME;
    return h;
}

#endif
