/* gateway/gw_held.c: callers' held answer bytes, a chained hash over a fixed
 * array of slots (slot 0 is the aggregate). */
#include "gateway/gw_held.h"

#include <stdlib.h>
#include <string.h>

#include "base/sl_buf.h"
#include "base/sl_hash.h"

#define AGGREGATE 0

typedef struct held_slot {
    char ident[GW_HELD_IDENT_MAX];
    h2o_linklist_t entries;
    size_t n;                     /* entries; 0: the slot is free */
    int32_t next;                 /* next slot in the bucket's chain, or the free list; -1 ends */
} held_slot_t;

struct gw_held {
    gw_held_bytes_cb bytes;
    held_slot_t *slots;           /* [0] aggregate, [1..nslots] callers */
    size_t nslots, used;
    int32_t *buckets;             /* heads of chains, -1 empty */
    size_t nbuckets;              /* a power of two, at least 2 x nslots */
    int32_t free_head;
};

static size_t bucket_of(const gw_held_t *t, const char *ident)
{
    /* over what a slot keeps of ident */
    uint64_t h = sl_fnv1a(SL_FNV1A_OFFSET, ident, strnlen(ident, GW_HELD_IDENT_MAX - 1));
    return (size_t)(h & (t->nbuckets - 1));
}

gw_held_t *gw_held_create(size_t nslots, gw_held_bytes_cb bytes)
{
    gw_held_t *t = sl_xcalloc(1, sizeof(*t));
    t->bytes = bytes;
    t->nslots = nslots == 0 ? 1 : nslots;
    t->slots = sl_xcalloc(t->nslots + 1, sizeof(*t->slots));
    for (t->nbuckets = 16; t->nbuckets < 2 * t->nslots; t->nbuckets *= 2)
        ;
    t->buckets = sl_xmalloc(t->nbuckets * sizeof(*t->buckets));
    for (size_t i = 0; i < t->nbuckets; i++)
        t->buckets[i] = -1;
    for (size_t i = 0; i <= t->nslots; i++) {
        h2o_linklist_init_anchor(&t->slots[i].entries);
        t->slots[i].next = i + 1 <= t->nslots && i > 0 ? (int32_t)(i + 1) : -1;
    }
    t->slots[AGGREGATE].next = -1;
    t->free_head = 1;
    return t;
}

void gw_held_destroy(gw_held_t *t)
{
    if (t == NULL)
        return;
    free(t->slots);
    free(t->buckets);
    free(t);
}

static int32_t find(const gw_held_t *t, const char *ident)
{
    for (int32_t i = t->buckets[bucket_of(t, ident)]; i >= 0; i = t->slots[i].next)
        if (strncmp(t->slots[i].ident, ident, GW_HELD_IDENT_MAX - 1) == 0) /* a longer one is kept cut */
            return i;
    return -1;
}

static void put(gw_held_t *t, gw_held_entry_t *e, int32_t i)
{
    h2o_linklist_insert(&t->slots[i].entries, &e->link);
    t->slots[i].n++;
    e->slot = i + 1;
}

void gw_held_add(gw_held_t *t, gw_held_entry_t *e, const char *ident)
{
    int32_t i = find(t, ident);
    if (i < 0 && t->free_head >= 0) {
        i = t->free_head;
        held_slot_t *s = &t->slots[i];
        t->free_head = s->next;
        size_t len = strlen(ident);
        len = len < sizeof(s->ident) - 1 ? len : sizeof(s->ident) - 1;
        memcpy(s->ident, ident, len);
        s->ident[len] = '\0';
        size_t b = bucket_of(t, s->ident);
        s->next = t->buckets[b];
        t->buckets[b] = i;
        t->used++;
    }
    put(t, e, i < 0 ? AGGREGATE : i);
}

void gw_held_remove(gw_held_t *t, gw_held_entry_t *e)
{
    if (e->slot == 0)
        return;
    int32_t i = e->slot - 1;
    held_slot_t *s = &t->slots[i];
    h2o_linklist_unlink(&e->link);
    e->slot = 0;
    if (--s->n > 0 || i == AGGREGATE)
        return;
    int32_t *p = &t->buckets[bucket_of(t, s->ident)];
    while (*p != i)
        p = &t->slots[*p].next;
    *p = s->next;
    s->ident[0] = '\0';
    s->next = t->free_head;
    t->free_head = i;
    t->used--;
}

size_t gw_held_bytes(const gw_held_t *t, const gw_held_entry_t *e)
{
    return e->bytes != NULL ? e->bytes(e) : t->bytes(e);
}

/* An entry's bytes: its own measure (a WebSocket's queue), else the one given. */
static size_t held_bytes_by(const gw_held_entry_t *e, gw_held_bytes_cb bytes)
{
    return e->bytes != NULL ? e->bytes(e) : bytes(e);
}

static size_t slot_sum(const gw_held_t *t, int32_t i, gw_held_bytes_cb bytes)
{
    const h2o_linklist_t *anchor = &t->slots[i].entries;
    size_t sum = 0;
    for (const h2o_linklist_t *n = anchor->next; n != anchor; n = n->next)
        sum += held_bytes_by(H2O_STRUCT_FROM_MEMBER(gw_held_entry_t, link, n), bytes);
    return sum;
}

size_t gw_held_others(const gw_held_t *t, const gw_held_entry_t *e, gw_held_bytes_cb bytes)
{
    if (e->slot == 0)
        return 0;
    const h2o_linklist_t *anchor = &t->slots[e->slot - 1].entries;
    size_t sum = 0;
    for (const h2o_linklist_t *n = anchor->next; n != anchor; n = n->next)
        if (n != &e->link) {
            sum += held_bytes_by(H2O_STRUCT_FROM_MEMBER(gw_held_entry_t, link, n), bytes);
        }
    return sum;
}

size_t gw_held_of_by(const gw_held_t *t, const char *ident, gw_held_bytes_cb bytes)
{
    int32_t i = find(t, ident);
    if (i >= 0)
        return slot_sum(t, i, bytes);
    return t->free_head < 0 ? slot_sum(t, AGGREGATE, bytes) : 0;
}

size_t gw_held_of(const gw_held_t *t, const char *ident)
{
    return gw_held_of_by(t, ident, t->bytes);
}

void gw_held_each(const gw_held_t *t, void (*fn)(gw_held_entry_t *e, void *arg), void *arg)
{
    for (size_t i = 0; i <= t->nslots; i++) {
        const h2o_linklist_t *anchor = &t->slots[i].entries;
        for (h2o_linklist_t *n = anchor->next; n != anchor; n = n->next)
            fn(H2O_STRUCT_FROM_MEMBER(gw_held_entry_t, link, n), arg);
    }
}

size_t gw_held_callers(const gw_held_t *t)
{
    return t->used;
}

size_t gw_held_aggregated(const gw_held_t *t)
{
    return t->slots[AGGREGATE].n;
}
