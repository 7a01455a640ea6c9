/* admin/admin_chain_metrics.c: /metrics' series of the chain view's head
 * floor and of heads nobody confirms (admin_route_metrics calls it).
 *
 * sluice_chain_floor is the floor of heads served on a network per head
 * kind, as this host's shared record holds it (state_chain.c; with
 * cluster:, the cluster's as last merged): eth_blockNumber and getSlot
 * are never answered below it while an endpoint near it is usable.
 * sluice_endpoint_head_implausible is 1 while the workers leave an
 * endpoint's head out of the network's (max_head_lead, pool/pool_chain.c). */
#include <stdio.h>

#include "admin/admin_int.h"
#include "base/sl_buf.h"

/* The kind's name on the network's chain (policy_head_kind_t order). */
static const char *kind_name(policy_chain_t chain, size_t k)
{
    static const char *const eth[STATE_CHAIN_KINDS] = {"latest", "safe", "finalized"};
    static const char *const sol[STATE_CHAIN_KINDS] = {"processed", "confirmed", "finalized"};
    return chain == POLICY_CHAIN_SOLANA ? sol[k] : eth[k];
}

void admin_chain_metrics(admin_t *a, sl_buf_t *b, const admin_ep_view_t *v, size_t n)
{
    sl_buf_printf(b, "# HELP sluice_chain_floor The highest head served to a client on the network, per head kind "
                     "(eth_blockNumber, getSlot per commitment): none is answered below it.\n"
                     "# TYPE sluice_chain_floor gauge\n");
    if (state_read_begin(a->conf.state) == SL_OK) {
        for (size_t i = 0; i < a->conf.nnetworks; i++) {
            const pool_network_conf_t *net = &a->conf.networks[i];
            state_chain_rec_t rec;
            if (state_chain_get(a->conf.state, net->name, &rec) != SL_OK)
                continue; /* nothing served yet */
            for (size_t k = 0; k < STATE_CHAIN_KINDS; k++)
                if (rec.floor[k] != 0)
                    sl_buf_printf(b, "sluice_chain_floor{network=\"%s\",kind=\"%s\"} %llu\n", net->name,
                                  kind_name(net->chain, k), (unsigned long long)rec.floor[k]);
        }
        state_read_end(a->conf.state);
    }
    sl_buf_printf(b, "# HELP sluice_endpoint_head_implausible 1 while the endpoint's head leads every other "
                     "endpoint's by more than max_head_lead: not the network's head, no latest reads.\n"
                     "# TYPE sluice_endpoint_head_implausible gauge\n");
    for (size_t i = 0; i < n; i++)
        sl_buf_printf(b, "sluice_endpoint_head_implausible{network=\"%s\",endpoint=\"%s\"} %d\n", v[i].net->name,
                      v[i].ep->id, v[i].has_ranked && v[i].ranked.excluded == STATE_EXCLUDED_HEAD_AHEAD);
}
