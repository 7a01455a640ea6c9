/* pool/pool_chain.c: a network's chain view in this worker (pool_net.h).
 *
 * The probes' heads reach every worker through the shared endpoint records
 * (pool_probe.c writes head and head_at_ms; the tick's snapshot reads them):
 * a head whose head_at_ms this worker has not fed yet is observed as that
 * endpoint's head. Answers flowing through are fed by the chain satellite
 * (pool_chain_call.c). The view itself decides (policy/chainview.h). */
#include "pool/pool_net.h"

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

void pool_chain_refresh(pool_network_t *net, uint64_t now_ms)
{
    policy_head_kind_t kind = pool_chain_probe_kind(net);
    for (size_t i = 0; i < net->nendpoints; i++) {
        pool_endpoint_t *ep = &net->endpoints[i];
        const state_endpoint_rec_t *r = &ep->health.shared;
        if (r->head_at_ms == 0 || r->head_at_ms == ep->chain_fed_ms)
            continue;
        ep->chain_fed_ms = r->head_at_ms;
        pool_chain_observe_head(ep, kind, r->head, now_ms);
    }
}

uint64_t pool_chain_usable(pool_network_t *net, uint64_t now_ms)
{
    uint64_t mask = 0;
    for (size_t i = 0; i < net->nendpoints && i < POLICY_CHAINVIEW_MAX_ENDPOINTS; i++)
        if (pool_health_usable(&net->endpoints[i], now_ms))
            mask |= UINT64_C(1) << i;
    return mask;
}
