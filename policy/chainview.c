/* policy/chainview.c: the decisions over one network's chain view
 * (policy/chainview.h). */
#include "policy/chainview.h"

#include <string.h>

#define RING POLICY_CHAINVIEW_RING

void policy_chainview_init(policy_chainview_t *v, uint32_t nendpoints)
{
    memset(v, 0, sizeof(*v));
    v->nendpoints = nendpoints < POLICY_CHAINVIEW_MAX_ENDPOINTS ? nendpoints : POLICY_CHAINVIEW_MAX_ENDPOINTS;
}

static int in_mask(uint64_t mask, uint32_t i)
{
    return i < 64 && (mask >> i & 1) != 0;
}

/* ---- the ring ------------------------------------------------------------ */

const uint8_t *policy_chainview_held_at(const policy_chainview_t *v, uint64_t n)
{
    const policy_chainview_slot_t *s = &v->ring[n % RING];
    return s->used && s->height == n ? s->hash : NULL;
}

const uint8_t *policy_chainview_hash_at(const policy_chainview_t *v, uint64_t n)
{
    const policy_chainview_slot_t *s = &v->ring[n % RING];
    return s->used && s->linked && s->height == n ? s->hash : NULL;
}

static void ring_put(policy_chainview_t *v, uint64_t n, const uint8_t *hash)
{
    policy_chainview_slot_t *s = &v->ring[n % RING];
    s->height = n;
    s->used = 1;
    s->linked = 1;
    memcpy(s->hash, hash, 32);
}

static void ring_unlink_below(policy_chainview_t *v, uint64_t n)
{
    for (size_t i = 0; i < RING; i++)
        if (v->ring[i].height < n)
            v->ring[i].linked = 0;
}

/* A hash at height n that differs from the ring's: a reorg as deep as the
 * ring can tell, from n up to its top. */
static void reorg_at(const policy_chainview_t *v, uint64_t n, policy_chainview_change_t *out)
{
    uint64_t top = v->ring_top > n ? v->ring_top : n;
    if (out->reorg_depth == 0 || n < out->reorg_height) {
        out->reorg_height = n;
        out->reorg_depth = (uint32_t)(top - n + 1);
    }
}

static int differs(const uint8_t *held, const uint8_t *seen)
{
    return held != NULL && memcmp(held, seen, 32) != 0;
}

/* An endpoint at the tip (its head at or above the ring's top) speaks for
 * the chain: its hashes replace the ring's, and a replaced one is a reorg.
 * One behind the tip that holds another hash is on a branch the tip left. */
static void ring_observe(policy_chainview_t *v, uint64_t ep_head, const policy_chainview_obs_t *obs,
                         policy_chainview_change_t *out)
{
    uint64_t h = obs->height;
    int parent = obs->parent != NULL && h > 0;
    int held_differs = differs(policy_chainview_held_at(v, h), obs->hash);
    int parent_differs = parent && differs(policy_chainview_held_at(v, h - 1), obs->parent);
    if (ep_head < v->ring_top) {
        out->forked = held_differs || parent_differs;
        return;
    }
    if (held_differs)
        reorg_at(v, h, out);
    if (parent_differs)
        reorg_at(v, h - 1, out);
    /* The ring vouches only for a run of heights linked parent to child up to
     * the tip: below a parent that changed (a fork of unknown depth), or below
     * a tip not linked to what the ring held (heights went by unseen, one of
     * them may have been replaced), it stops vouching; readers then find no
     * hash there (the response cache keys by these hashes: pool_cache_call.c),
     * while a reorg is still told by comparing with what was held. Blocks read
     * again from the tip's endpoint (a walk below a reorg) are vouched anew. */
    if (parent_differs || (parent && h >= v->ring_top && policy_chainview_hash_at(v, h - 1) == NULL))
        ring_unlink_below(v, h - 1);
    if (parent)
        ring_put(v, h - 1, obs->parent);
    ring_put(v, h, obs->hash);
    if (h > v->ring_top)
        v->ring_top = h;
}

/* ---- observations -------------------------------------------------------- */

void policy_chainview_observe(policy_chainview_t *v, uint32_t ep, const policy_chainview_obs_t *obs, uint64_t now_ms,
                              policy_chainview_change_t *out)
{
    memset(out, 0, sizeof(*out));
    if (ep >= v->nendpoints || (unsigned)obs->kind >= POLICY_HEAD_KIND_COUNT)
        return;
    policy_chainview_ep_t *e = &v->ep[ep];
    uint64_t before = e->head[obs->kind];
    if (obs->is_head || obs->height > before)
        e->head[obs->kind] = obs->height;
    e->seen_ms[obs->kind] = now_ms;
    out->head_moved = e->head[obs->kind] != before;
    if (obs->kind != POLICY_HEAD_LATEST || obs->hash == NULL)
        return;
    if (obs->height == e->head[POLICY_HEAD_LATEST]) {
        memcpy(e->hash, obs->hash, 32);
        e->has_hash = 1;
    } else if (out->head_moved) {
        e->has_hash = 0;
    }
    ring_observe(v, e->head[POLICY_HEAD_LATEST], obs, out);
}

/* ---- reading the view ---------------------------------------------------- */

uint64_t policy_chainview_head(const policy_chainview_t *v, policy_head_kind_t kind, uint64_t mask)
{
    uint64_t best = 0;
    if ((unsigned)kind >= POLICY_HEAD_KIND_COUNT)
        return 0;
    for (uint32_t i = 0; i < v->nendpoints; i++)
        if (in_mask(mask, i) && v->ep[i].head[kind] > best)
            best = v->ep[i].head[kind];
    return best;
}

uint64_t policy_chainview_serve_head(policy_chainview_t *v, policy_head_kind_t kind, uint64_t answered,
                                     uint64_t usable, uint64_t hold, int *regressed)
{
    *regressed = 0;
    if ((unsigned)kind >= POLICY_HEAD_KIND_COUNT)
        return answered;
    uint64_t head = policy_chainview_head(v, kind, usable);
    uint64_t serve = answered > head ? answered : head;
    if (serve >= v->floor[kind])
        v->floor[kind] = serve;
    else if (v->floor[kind] - serve <= hold)
        serve = v->floor[kind];
    else
        *regressed = 1;
    return serve;
}

/* What endpoint i says its head of this kind is, as evidence counts it: a
 * safe or finalized height at most its own latest head (when known). */
static uint64_t said(const policy_chainview_t *v, uint32_t i, policy_head_kind_t kind)
{
    uint64_t h = v->ep[i].head[kind], latest = v->ep[i].head[POLICY_HEAD_LATEST];
    return kind != POLICY_HEAD_LATEST && latest != 0 && h > latest ? latest : h;
}

/* The two highest heads of this kind in mask (0 when absent), how many
 * endpoints report one, and the highest's endpoint. */
typedef struct top_two {
    uint64_t top, next;
    uint32_t known, at;
} top_two_t;

static top_two_t top_two(const policy_chainview_t *v, policy_head_kind_t kind, uint64_t mask)
{
    top_two_t t = {0, 0, 0, 0};
    for (uint32_t i = 0; i < v->nendpoints; i++) {
        uint64_t h = said(v, i, kind);
        if (!in_mask(mask, i) || h == 0)
            continue;
        t.known++;
        if (h > t.top) {
            t.next = t.top;
            t.top = h;
            t.at = i;
        } else if (h > t.next) {
            t.next = h;
        }
    }
    return t;
}

uint64_t policy_chainview_agreed(const policy_chainview_t *v, policy_head_kind_t kind, uint64_t mask)
{
    if ((unsigned)kind >= POLICY_HEAD_KIND_COUNT)
        return 0;
    top_two_t t = top_two(v, kind, mask);
    return t.known >= 2 ? t.next : t.top;
}

uint64_t policy_chainview_final(const policy_chainview_t *v, uint64_t mask, uint64_t margin)
{
    uint64_t fin = policy_chainview_agreed(v, POLICY_HEAD_FINALIZED, mask);
    uint64_t latest = policy_chainview_agreed(v, POLICY_HEAD_LATEST, mask);
    if (latest == 0)
        return fin;
    uint64_t cap = latest > margin ? latest - margin : 0;
    return fin < cap ? fin : cap;
}

int policy_chainview_final_confirmed(const policy_chainview_t *v, uint64_t mask, uint64_t n)
{
    uint32_t at_or_above = 0;
    for (uint32_t i = 0; i < v->nendpoints; i++)
        at_or_above += in_mask(mask, i) && said(v, i, POLICY_HEAD_FINALIZED) >= n && n > 0;
    return at_or_above >= 2;
}

/* The endpoint of mask leading every other by more than max_lead, when at
 * least min_known report a head of this kind. */
static uint64_t lone_lead(const policy_chainview_t *v, policy_head_kind_t kind, uint64_t max_lead, uint64_t mask,
                          uint32_t min_known, uint64_t *lead)
{
    if (lead != NULL)
        *lead = 0;
    if ((unsigned)kind >= POLICY_HEAD_KIND_COUNT)
        return 0;
    top_two_t t = top_two(v, kind, mask);
    if (t.known < min_known || t.top - t.next <= max_lead)
        return 0;
    if (lead != NULL)
        *lead = t.top - t.next;
    return UINT64_C(1) << t.at;
}

uint64_t policy_chainview_implausible(const policy_chainview_t *v, policy_head_kind_t kind, uint64_t max_lead,
                                      uint64_t mask, uint64_t *lead)
{
    return lone_lead(v, kind, max_lead, mask, 2, lead);
}

uint64_t policy_chainview_unconfirmed(const policy_chainview_t *v, policy_head_kind_t kind, uint64_t max_lag,
                                      uint64_t mask, uint64_t *lead)
{
    return lone_lead(v, kind, max_lag, mask, 3, lead);
}

int policy_chainview_latest_ok(const policy_chainview_t *v, uint32_t ep, policy_head_kind_t kind, uint32_t max_lag,
                               uint64_t usable)
{
    if (ep >= v->nendpoints || (unsigned)kind >= POLICY_HEAD_KIND_COUNT || v->ep[ep].head[kind] == 0)
        return 1;
    return v->ep[ep].head[kind] + max_lag >= policy_chainview_head(v, kind, usable);
}

policy_chainview_has_t policy_chainview_has_block(const policy_chainview_t *v, uint32_t ep, uint64_t n)
{
    if (ep >= v->nendpoints || v->ep[ep].head[POLICY_HEAD_LATEST] == 0)
        return POLICY_HAS_UNKNOWN;
    return v->ep[ep].head[POLICY_HEAD_LATEST] >= n ? POLICY_HAS_YES : POLICY_HAS_NO;
}

int policy_chainview_block_ok(const policy_chainview_t *v, uint32_t ep, uint64_t n, uint64_t usable)
{
    if (policy_chainview_has_block(v, ep, n) != POLICY_HAS_NO)
        return 1;
    return policy_chainview_head(v, POLICY_HEAD_LATEST, usable) < n;
}

int policy_chainview_null_is_behind(const policy_chainview_t *v, uint32_t ep, uint64_t n, uint64_t among)
{
    (void)ep; /* its own head may be stale-high (a load balancer's other node): the block's existence decides */
    return policy_chainview_head(v, POLICY_HEAD_LATEST, among) >= n;
}

sl_err_t policy_chainview_resolve(const policy_chainview_t *v, policy_block_tag_t tag, uint64_t usable, uint64_t *n)
{
    static const policy_head_kind_t kinds[POLICY_TAG_COUNT] = {
        [POLICY_TAG_LATEST] = POLICY_HEAD_LATEST,
        [POLICY_TAG_PENDING] = POLICY_HEAD_LATEST,
        [POLICY_TAG_SAFE] = POLICY_HEAD_SAFE,
        [POLICY_TAG_FINALIZED] = POLICY_HEAD_FINALIZED,
    };
    if ((unsigned)tag >= POLICY_TAG_COUNT)
        return SL_ERR_INVALID;
    if (tag == POLICY_TAG_EARLIEST) {
        *n = 0;
        return SL_OK;
    }
    /* latest is the usable endpoints' (a lead nobody confirms is out of
     * usable); safe and finalized the height another endpoint confirms */
    uint64_t h = kinds[tag] == POLICY_HEAD_LATEST ? policy_chainview_head(v, kinds[tag], usable)
                                                  : policy_chainview_agreed(v, kinds[tag], usable);
    if (h == 0)
        return SL_ERR_NOT_FOUND;
    *n = h;
    return SL_OK;
}

policy_head_kind_t policy_chainview_kind_of(policy_commitment_t c)
{
    switch (c) {
    case POLICY_COMMITMENT_PROCESSED:
        return POLICY_HEAD_LATEST;
    case POLICY_COMMITMENT_CONFIRMED:
        return POLICY_HEAD_SAFE;
    case POLICY_COMMITMENT_DEFAULT:
    case POLICY_COMMITMENT_FINALIZED:
        return POLICY_HEAD_FINALIZED;
    }
    return POLICY_HEAD_FINALIZED;
}
