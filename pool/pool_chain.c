/* pool/pool_chain.c: a network's chain view in this worker (pool_net.h).
 *
 * The probes' heads reach every worker through the shared endpoint records
 * (pool_probe.c writes head and head_at_ms; the tick's snapshot reads them):
 * a head whose head_at_ms this worker has not fed yet is observed as that
 * endpoint's head. Answers flowing through are fed by the chain satellite
 * (pool_chain_call.c), which shares what a served head taught (the floor,
 * the answering endpoint's head) before the next worker serves one. The
 * view itself decides (policy/chainview.h). */
#include <inttypes.h>
#include <stdio.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "pool/pool_net.h"
#include "state/state_cluster.h"

/* How often worker 1 merges the host's floor of heads served with the
 * cluster's: the bound on a cross-host floor's staleness when a raise
 * message was missed. */
#define POOL_CHAIN_FLOOR_SYNC_MS 1000

void pool_chain_init(pool_network_t *net)
{
    policy_chainview_init(&net->chain, (uint32_t)net->conf->nendpoints);
}

policy_head_kind_t pool_chain_probe_kind(const pool_network_t *net)
{
    return net->conf->chain == POLICY_CHAIN_SOLANA ? policy_chainview_kind_of(POLICY_COMMITMENT_DEFAULT)
                                                   : POLICY_HEAD_LATEST;
}

void pool_chain_observe_head(pool_endpoint_t *ep, policy_head_kind_t kind, uint64_t height, uint64_t now_ms)
{
    policy_chainview_obs_t obs = {.kind = kind, .height = height, .is_head = 1};
    policy_chainview_change_t change;
    policy_chainview_observe(&ep->net->chain, (uint32_t)ep->index, &obs, now_ms, &change);
    if (kind != POLICY_HEAD_LATEST) {
        /* a slot reached at a stricter commitment is reached at processed too */
        policy_chainview_obs_t at_least = {.kind = POLICY_HEAD_LATEST, .height = height, .is_head = 0};
        policy_chainview_observe(&ep->net->chain, (uint32_t)ep->index, &at_least, now_ms, &change);
    }
}

/* max_head_lead in the view's terms (0: the rule is off). */
static uint64_t head_lead(const pool_network_t *net)
{
    return net->conf->max_head_lead != 0 ? net->conf->max_head_lead : UINT64_MAX;
}

uint32_t pool_chain_max_lag(const pool_network_t *net)
{
    return net->conf->chain == POLICY_CHAIN_SOLANA ? net->conf->max_lag_slots : net->conf->max_lag_blocks;
}

/* The endpoints whose head of kind nobody confirms among mask: a lead over
 * every other of more than max_lag (with three or more to compare: the
 * routing rule) or of more than max_head_lead (with two: the event's).
 * *loud (may be NULL) gets the latter and *lead its lead. */
static uint64_t lone_heads(pool_network_t *net, policy_head_kind_t kind, uint64_t mask, uint64_t *loud, uint64_t *lead)
{
    uint64_t far = policy_chainview_implausible(&net->chain, kind, head_lead(net), mask, lead);
    uint64_t near_lead = 0;
    uint64_t near = policy_chainview_unconfirmed(&net->chain, kind, pool_chain_max_lag(net), mask, &near_lead);
    if (lead != NULL && far == 0)
        *lead = near_lead;
    if (loud != NULL)
        *loud |= far;
    return far | near;
}

/* The usable mask, the unconfirmed heads' bits (*loud: the implausible
 * ones) and by how much one leads. */
static uint64_t usable_lead(pool_network_t *net, uint64_t now_ms, uint64_t *implausible, uint64_t *loud,
                            uint64_t *lead)
{
    uint64_t mask = 0;
    for (size_t i = 0; i < net->nendpoints && i < POLICY_CHAINVIEW_MAX_ENDPOINTS; i++)
        if (pool_health_usable(&net->endpoints[i], now_ms) && !pool_demoted(&net->endpoints[i], now_ms))
            mask |= UINT64_C(1) << i;
    /* the kind probes measure (every endpoint's fresh), and latest, which
     * head answers set too (Solana's getSlot at processed) */
    policy_head_kind_t kind = pool_chain_probe_kind(net);
    uint64_t bad = lone_heads(net, kind, mask, loud, lead);
    if (kind != POLICY_HEAD_LATEST)
        bad |= lone_heads(net, POLICY_HEAD_LATEST, mask, loud, NULL);
    if (implausible != NULL)
        *implausible = bad;
    return mask & ~bad;
}

uint64_t pool_chain_usable_why(pool_network_t *net, uint64_t now_ms, uint64_t *implausible)
{
    return usable_lead(net, now_ms, implausible, NULL, NULL);
}

uint64_t pool_chain_known(const pool_network_t *net)
{
    uint64_t mask = 0;
    for (size_t i = 0; i < net->nendpoints && i < POLICY_CHAINVIEW_MAX_ENDPOINTS; i++)
        if (!net->endpoints[i].wrong_chain)
            mask |= UINT64_C(1) << i;
    return mask;
}

uint64_t pool_network_head(const pool_network_t *net)
{
    return policy_chainview_head(&net->chain, pool_chain_probe_kind(net), pool_chain_known(net));
}

uint64_t pool_chain_usable(pool_network_t *net, uint64_t now_ms)
{
    return pool_chain_usable_why(net, now_ms, NULL);
}

/* ep's head became unconfirmed (bad) or is confirmed again: logged; an
 * endpoint_head_implausible event (worker 1: each worker sees the same
 * heads at its tick) when the lead passes max_head_lead or falls back. */
static void implausible_note(pool_endpoint_t *ep, int bad, int loud, int tell, uint64_t lead)
{
    pool_network_t *net = ep->net;
    uint64_t h = net->chain.ep[ep->index].head[pool_chain_probe_kind(net)];
    char why[192];
    if (bad && loud)
        snprintf(why, sizeof(why), "head %" PRIu64 " ahead of every other endpoint by %" PRIu64 " (max_head_lead %u)",
                 h, lead, net->conf->max_head_lead);
    else if (bad)
        snprintf(why, sizeof(why),
                 "head %" PRIu64 " ahead of every other endpoint by %" PRIu64
                 ", unconfirmed (max_lag %u): no latest reads or writes while others agree",
                 h, lead, pool_chain_max_lag(net));
    else
        snprintf(why, sizeof(why), "head %" PRIu64 " confirmed by another endpoint, or no longer ahead", h);
    if (tell)
        sl_log_warn("endpoint %s/%s: %s", net->conf->name, ep->conf->id, why);
    else
        sl_log_info("endpoint %s/%s: %s", net->conf->name, ep->conf->id, why);
    if (!tell || net->pool->state == NULL || net->pool->slot != 1)
        return;
    state_event_t ev;
    state_event_init(&ev, STATE_EVENT_ENDPOINT_HEAD_IMPLAUSIBLE, net->conf->name, ep->conf->id, sl_shared_ms());
    ev.to = (uint8_t)loud;
    snprintf(ev.reason, sizeof(ev.reason), "%s", why);
    if (state_event_append(net->pool->state, &ev) != SL_OK)
        sl_log_warn("endpoint %s/%s: could not record endpoint_head_implausible", net->conf->name, ep->conf->id);
}

static void implausible_check(pool_network_t *net, uint64_t now_ms)
{
    uint64_t bad, loud = 0, lead;
    uint64_t usable = usable_lead(net, now_ms, &bad, &loud, &lead);
    /* out of the plan: judged again when back */
    bad |= net->head_implausible & ~(usable | bad);
    loud |= net->head_loud & ~usable;
    loud &= bad;
    uint64_t changed = bad ^ net->head_implausible, changed_loud = loud ^ net->head_loud;
    net->head_implausible = bad;
    net->head_loud = loud;
    for (size_t i = 0; i < net->nendpoints && i < 64 && (changed | changed_loud) != 0; i++)
        if ((changed | changed_loud) >> i & 1)
            implausible_note(&net->endpoints[i], (int)(bad >> i & 1), (int)(loud >> i & 1),
                             (int)(changed_loud >> i & 1), lead);
}

/* Worker 1, every POOL_CHAIN_FLOOR_SYNC_MS: the host's floor to the cluster
 * and the cluster's back into LMDB (a raise message missed, a host that
 * served alone while Redis was away). */
static void floor_sync(pool_network_t *net, uint64_t now_ms)
{
    state_t *st = net->pool->state;
    state_cluster_t *cl = st != NULL ? state_cluster_of(st) : NULL;
    if (cl == NULL || net->pool->slot != 1 || now_ms - net->floor_synced_ms < POOL_CHAIN_FLOOR_SYNC_MS)
        return;
    net->floor_synced_ms = now_ms;
    pool_chain_sync(net, now_ms); /* what every worker of the host served (raised while Redis was away too) */
    uint64_t floor[STATE_CHAIN_KINDS] = {0};
    for (size_t k = 0; k < STATE_CHAIN_KINDS && k < POLICY_HEAD_KIND_COUNT; k++)
        floor[k] = net->chain.floor[k] > net->chain_shared[k] ? net->chain.floor[k] : net->chain_shared[k];
    (void)state_cluster_floor_raise(cl, net->conf->name, floor);
}

void pool_chain_refresh(pool_network_t *net, uint64_t now_ms)
{
    policy_head_kind_t kind = pool_chain_probe_kind(net);
    for (size_t i = 0; i < net->nendpoints; i++) {
        pool_endpoint_t *ep = &net->endpoints[i];
        const state_endpoint_rec_t *r = &ep->health.shared;
        pool_chainprobe_feed(ep, now_ms); /* safe, finalized, the latest block's hashes */
        if (r->head_at_ms == 0 || r->head_at_ms == ep->chain_fed_ms)
            continue;
        ep->chain_fed_ms = r->head_at_ms;
        pool_chain_observe_head(ep, kind, r->head, now_ms);
    }
    implausible_check(net, now_ms);
    floor_sync(net, now_ms);
}

void pool_chain_sync(pool_network_t *net, uint64_t now_ms)
{
    /* only the floor: the endpoints' heads other workers raised reach this
     * one with the tick's snapshot (pool_chain_refresh); the floor is what
     * keeps a head served here from going below one served there, and one
     * small record is all an answer pays for it */
    (void)now_ms;
    state_t *st = net->pool->state;
    if (st == NULL || state_read_begin(st) != SL_OK)
        return;
    state_chain_rec_t shared;
    if (state_chain_get_seen(st, net->conf->name, &net->chain_seen, &shared) == SL_OK)
        for (size_t k = 0; k < STATE_CHAIN_KINDS && k < POLICY_HEAD_KIND_COUNT; k++)
            if (shared.floor[k] > net->chain.floor[k])
                net->chain.floor[k] = net->chain_shared[k] = shared.floor[k];
    state_read_end(st);
}

typedef struct raise_ctx {
    uint64_t head;
    uint64_t now;
    state_endpoint_rec_t result;
} raise_ctx_t;

static int raise_head_cb(void *arg, state_endpoint_rec_t *rec, int exists, state_event_t *events, size_t *nevents)
{
    raise_ctx_t *c = arg;
    (void)exists;
    (void)events;
    (void)nevents;
    if (!pool_chain_head_write(rec, c->head, 0, c->now))
        return 0;
    c->result = *rec;
    return 1;
}

int pool_chain_head_write(state_endpoint_rec_t *rec, uint64_t head, int is_head, uint64_t now_ms)
{
    if (!is_head && head <= rec->head) /* as policy_chainview_observe: evidence of a block only raises */
        return 0;
    rec->head = head;
    rec->head_at_ms = now_ms;
    return 1;
}

void pool_chain_publish(pool_endpoint_t *ep, policy_head_kind_t kind, uint64_t answered, uint64_t now_ms)
{
    pool_network_t *net = ep->net;
    state_t *st = net->pool->state;
    if (st == NULL)
        return;
    if (kind == pool_chain_probe_kind(net) && answered > ep->health.shared.head) {
        raise_ctx_t c = {answered, now_ms, {0}};
        int changed = 0;
        if (state_endpoint_update(st, ep->health.key, raise_head_cb, &c, &changed) == SL_OK && changed) {
            ep->health.shared.head = c.result.head; /* this worker's snapshot: only the head moves */
            ep->health.shared.head_at_ms = c.result.head_at_ms;
            ep->chain_fed_ms = c.result.head_at_ms; /* already in the view */
        }
    }
    uint64_t floor[STATE_CHAIN_KINDS] = {0};
    int rises = 0; /* a write transaction only when this worker served past the shared floor */
    for (size_t k = 0; k < STATE_CHAIN_KINDS && k < POLICY_HEAD_KIND_COUNT; k++) {
        floor[k] = net->chain.floor[k];
        rises |= floor[k] > net->chain_shared[k];
    }
    state_chain_rec_t merged;
    if (!rises)
        return;
    if (state_chain_raise(st, net->conf->name, floor, now_ms, &merged) != SL_OK) {
        sl_log_warn("network %s: could not share the head served", net->conf->name);
        return;
    }
    for (size_t k = 0; k < STATE_CHAIN_KINDS && k < POLICY_HEAD_KIND_COUNT; k++)
        net->chain_shared[k] = merged.floor[k];
    /* the other hosts: through Redis, before this answer leaves (the raise
     * reaches them in one round trip; state_cluster_floor.c) */
    (void)state_cluster_floor_raise(state_cluster_of(st), net->conf->name, merged.floor);
}
