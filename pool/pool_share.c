/* pool/pool_share.c: each identity's part of this worker's depth.
 *
 * The calls holding an upstream slot (pool_pressure.c's depth) are counted
 * per identity (the gateway's caller: API key, else address, IPv6 by
 * prefix, hashed into pool_call_t.owner), so the level a caller's call is
 * shed at can be the network's for the identity that fills the depth and a
 * step lower for the others (policy_pressure_level_for). A small open
 * addressing table, bounded: when three quarters full, further identities
 * are counted together in one overflow group, which is held against the
 * share as one identity, so filling the table with identities makes their
 * calls shed sooner, never later. Owner 0 (none known) is not counted and
 * sees the network's level, as before identities had shares. */
#include <stdlib.h>

#include "pool/pool_call_int.h"

#define SHARE_SLOTS 512           /* a power of two */
#define SHARE_MAX_USED (SHARE_SLOTS * 3 / 4)

struct pool_share {
    struct {
        uint64_t owner;           /* 0: empty */
        uint32_t held;
    } e[SHARE_SLOTS];
    uint32_t used;
    uint32_t overflow;            /* calls of identities the table had no room for */
};

static size_t home(uint64_t owner)
{
    return (size_t)((owner * 0x9e3779b97f4a7c15ULL) >> 32) & (SHARE_SLOTS - 1);
}

/* The slot of owner, or of the empty slot where it would go. */
static size_t find(const pool_share_t *t, uint64_t owner)
{
    size_t i = home(owner);
    while (t->e[i].owner != 0 && t->e[i].owner != owner)
        i = (i + 1) & (SHARE_SLOTS - 1);
    return i;
}

/* Empties slot i, moving back the entries of its probe run that belong
 * before it (linear probing without tombstones). */
static void remove_at(pool_share_t *t, size_t i)
{
    size_t j = i;
    for (;;) {
        j = (j + 1) & (SHARE_SLOTS - 1);
        if (t->e[j].owner == 0)
            break;
        size_t k = home(t->e[j].owner);
        int between = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (!between) {
            t->e[i] = t->e[j];
            i = j;
        }
    }
    t->e[i].owner = 0;
    t->e[i].held = 0;
    t->used--;
}

void pool_share_init(pool_network_t *net)
{
    net->share = sl_xcalloc(1, sizeof(*net->share));
}

void pool_share_dispose(pool_network_t *net)
{
    free(net->share);
    net->share = NULL;
}

void pool_share_hold(pool_call_t *call)
{
    pool_share_t *t = call->net->share;
    if (call->owner == 0 || t == NULL)
        return;
    size_t i = find(t, call->owner);
    if (t->e[i].owner == 0 && t->used >= SHARE_MAX_USED) {
        t->overflow++;
        call->pressure.share_overflow = 1;
        return;
    }
    if (t->e[i].owner == 0) {
        t->e[i].owner = call->owner;
        t->used++;
    }
    t->e[i].held++;
    call->pressure.share_overflow = 0;
}

void pool_share_release(pool_call_t *call)
{
    pool_share_t *t = call->net->share;
    if (call->owner == 0 || t == NULL)
        return;
    if (call->pressure.share_overflow) {
        t->overflow--;
        return;
    }
    size_t i = find(t, call->owner);
    if (t->e[i].owner == 0 || t->e[i].held == 0)
        return; /* not counted: cannot happen, but never underflow */
    if (--t->e[i].held == 0)
        remove_at(t, i);
}

uint32_t pool_share_held(const pool_network_t *net, uint64_t owner)
{
    const pool_share_t *t = net->share;
    if (t == NULL)
        return 0;
    size_t i = find(t, owner);
    if (t->e[i].owner == owner)
        return t->e[i].held;
    return t->used >= SHARE_MAX_USED ? t->overflow : 0;
}

policy_pressure_level_t pool_network_pressure_for(const pool_network_t *net, uint64_t owner)
{
    policy_pressure_level_t level = net->pressure.local.level;
    if (owner == 0 || level == POLICY_PRESSURE_OK)
        return level;
    const policy_pressure_conf_t *conf = &net->conf->pressure;
    uint32_t cap = policy_pressure_share_cap(conf, net->pressure.inputs.ceiling, net->pool->nworkers);
    return policy_pressure_level_for(conf, level, pool_share_held(net, owner), cap);
}
