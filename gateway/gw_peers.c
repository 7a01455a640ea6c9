/* gateway/gw_peers.c: the per-address connection counts (gw_peers.h).
 * Linear probing; removal shifts later entries of the run back, so no
 * tombstones accumulate under a churn of short connections. */
#include "gateway/gw_peers.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base/sl_buf.h"

#define MIN_SLOTS 64u

typedef struct peer_slot {
    uint8_t key[16];
    uint32_t count;               /* 0: the slot is free */
} peer_slot_t;

struct gw_peers {
    peer_slot_t *slots;
    uint32_t mask;                /* slots - 1; slots is a power of two */
    uint32_t used;
    uint64_t seed;
};

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x *= UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

static uint32_t slot_of(const gw_peers_t *p, const uint8_t key[16])
{
    uint64_t a, b;
    memcpy(&a, key, 8);
    memcpy(&b, key + 8, 8);
    return (uint32_t)mix64(mix64(a ^ p->seed) ^ b) & p->mask;
}

static uint32_t find(const gw_peers_t *p, const uint8_t key[16])
{
    uint32_t i = slot_of(p, key);
    while (p->slots[i].count != 0 && memcmp(p->slots[i].key, key, 16) != 0)
        i = (i + 1) & p->mask;
    return i;
}

static void grow(gw_peers_t *p)
{
    peer_slot_t *old = p->slots;
    uint32_t n = p->mask + 1;
    p->slots = sl_xcalloc((size_t)n * 2, sizeof(*p->slots));
    p->mask = n * 2 - 1;
    for (uint32_t i = 0; i < n; i++)
        if (old[i].count != 0)
            p->slots[find(p, old[i].key)] = old[i];
    free(old);
}

gw_peers_t *gw_peers_create(void)
{
    gw_peers_t *p = sl_xcalloc(1, sizeof(*p));
    p->slots = sl_xcalloc(MIN_SLOTS, sizeof(*p->slots));
    p->mask = MIN_SLOTS - 1;
    if (getrandom(&p->seed, sizeof(p->seed), GRND_NONBLOCK) != (ssize_t)sizeof(p->seed))
        p->seed = (uint64_t)(uintptr_t)p ^ UINT64_C(0x9e3779b97f4a7c15); /* no entropy yet: still per process */
    return p;
}

void gw_peers_destroy(gw_peers_t *p)
{
    if (p == NULL)
        return;
    free(p->slots);
    free(p);
}

uint32_t gw_peers_get(const gw_peers_t *p, const uint8_t key[16])
{
    return p->slots[find(p, key)].count;
}

uint32_t gw_peers_add(gw_peers_t *p, const uint8_t key[16])
{
    if ((p->used + 1) * 2 > p->mask + 1)
        grow(p);
    peer_slot_t *s = &p->slots[find(p, key)];
    if (s->count == 0) {
        memcpy(s->key, key, 16);
        p->used++;
    }
    return ++s->count;
}

void gw_peers_remove(gw_peers_t *p, const uint8_t key[16])
{
    uint32_t i = find(p, key);
    if (p->slots[i].count == 0 || --p->slots[i].count != 0)
        return;
    p->used--;
    /* backward shift: an entry after the hole moves into it unless its own
     * home slot lies cyclically in (hole, entry] */
    for (uint32_t j = (i + 1) & p->mask; p->slots[j].count != 0; j = (j + 1) & p->mask) {
        uint32_t home = slot_of(p, p->slots[j].key);
        if (((j - home) & p->mask) >= ((j - i) & p->mask)) {
            p->slots[i] = p->slots[j];
            i = j;
        }
    }
    p->slots[i].count = 0;
}

uint32_t gw_peers_size(const gw_peers_t *p)
{
    return p->used;
}
