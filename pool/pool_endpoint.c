/* pool/pool_endpoint.c: an upstream endpoint inside one worker: its link
 * (the transport's part: pool_transport.c), its share of max_inflight and its
 * credit lease. */
#include <string.h>

#include "pool/pool_net.h"

sl_err_t pool_endpoint_init(pool_endpoint_t *ep, pool_network_t *net, int index, const pool_endpoint_conf_t *conf,
                            uint32_t nworkers)
{
    memset(ep, 0, sizeof(*ep));
    ep->conf = conf;
    ep->net = net;
    ep->index = index;
    /* this worker's share; the shares add up to max exactly (a worker may
     * get 0 when max < workers), so max_inflight is never exceeded */
    uint32_t max = conf->max_inflight ? conf->max_inflight : POOL_DEFAULT_MAX_INFLIGHT;
    uint32_t slot = net->pool->slot ? net->pool->slot - 1 : 0;
    ep->max_inflight = max / nworkers + (slot % nworkers < max % nworkers ? 1 : 0);
    pool_credit_init(ep, nworkers);
    return pool_link_init(&ep->link, &net->timers, index, conf);
}

void pool_endpoint_dispose(pool_endpoint_t *ep)
{
    pool_link_dispose(&ep->link);
}

uint8_t pool_endpoint_dns_excluded(const pool_endpoint_t *ep)
{
    if (ep->wrong_chain)
        return STATE_EXCLUDED_WRONG_CHAIN;
    switch (pool_dns_failing(&ep->link)) {
    case 0:
        return STATE_EXCLUDED_NO;
    case 2:
        return STATE_EXCLUDED_DNS_TIMEOUT;
    default:
        return STATE_EXCLUDED_DNS_FAILED;
    }
}
