/* gateway/gw_held.h: the answer bytes each caller holds in one worker.
 *
 * A caller is the identity its client limits know ("key:<name>" or
 * "ip:<address>", IPv6 by its /ipv6_prefix network: gw_identity.h). Each
 * call admitted to go upstream is an entry under its caller from admission
 * until its request is freed; what an entry holds is asked of the owner
 * (the bytes callback) when a sum is wanted, so the upstream bytes still
 * being read count as they arrive, and nothing has to be charged twice.
 *
 * The table is bounded: a caller has a slot while it has entries. When all
 * slots are taken, callers without one are counted together in one
 * aggregate slot, which the share applies to as a whole: a full table makes
 * the share stricter for the newcomers, never switches it off. One caller
 * takes one slot however many entries it has, so it cannot fill the table.
 *
 * One per worker, single-threaded; no I/O, no clocks. */
#ifndef GW_HELD_H
#define GW_HELD_H

#include <stddef.h>
#include <stdint.h>

#include <h2o.h>

#define GW_HELD_IDENT_MAX 96      /* as caller_identity writes it (gw_handler.c) */

typedef struct gw_held gw_held_t;

typedef struct gw_held_entry gw_held_entry_t;
/* The bytes an entry holds now. */
typedef size_t (*gw_held_bytes_cb)(const gw_held_entry_t *e);

/* Embedded in the owner's record (a request, a WebSocket); zeroed by the owner first. */
struct gw_held_entry {
    h2o_linklist_t link;          /* in its slot's entries */
    int32_t slot;                 /* index + 1 of its slot; 0: not in the table */
    h2o_socket_t *sock;           /* the client connection its answer goes to (may be NULL) */
    /* NULL: the table's callback. Set: this entry's bytes by every measure
     * (a WebSocket's queue, all of it waiting for its client). */
    gw_held_bytes_cb bytes;
};

/* A table of at most nslots callers (the aggregate slot besides). */
gw_held_t *gw_held_create(size_t nslots, gw_held_bytes_cb bytes);
void gw_held_destroy(gw_held_t *t);

/* Puts e under ident (its slot, a new one, or the aggregate when the table
 * is full). e must not be in the table. */
void gw_held_add(gw_held_t *t, gw_held_entry_t *e, const char *ident);
/* Takes e out; its slot is freed with its last entry. A no-op for an entry
 * not in the table. */
void gw_held_remove(gw_held_t *t, gw_held_entry_t *e);

/* What ident's entries hold now: its slot's sum; when it has no slot and the
 * table is full, the aggregate's (where its next entry would go); else 0. */
size_t gw_held_of(const gw_held_t *t, const char *ident);
/* ... by the measure bytes (the table's own callback, or a narrower one). */
size_t gw_held_of_by(const gw_held_t *t, const char *ident, gw_held_bytes_cb bytes);

/* What the other entries of e's slot hold by the measure bytes (the
 * table's own callback, or a narrower one); 0 for an entry not in the table. */
size_t gw_held_others(const gw_held_t *t, const gw_held_entry_t *e, gw_held_bytes_cb bytes);

/* What e holds now (the bytes callback). */
size_t gw_held_bytes(const gw_held_t *t, const gw_held_entry_t *e);

/* Calls fn on every entry in the table (in no particular order). fn must
 * not add or remove entries. */
void gw_held_each(const gw_held_t *t, void (*fn)(gw_held_entry_t *e, void *arg), void *arg);

/* Callers with a slot now (the aggregate not counted); entries in the aggregate. */
size_t gw_held_callers(const gw_held_t *t);
size_t gw_held_aggregated(const gw_held_t *t);

#endif
