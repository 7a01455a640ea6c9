/* pool/pool.c: a worker's networks and endpoints. */
#include <string.h>

#include "base/sl_log.h"
#include "pool/pool_call_int.h"

static sl_err_t network_init(pool_t *pool, pool_network_t *net, const pool_network_conf_t *conf, uint32_t nworkers)
{
    net->pool = pool;
    net->conf = conf;
    net->endpoints = sl_xcalloc(conf->nendpoints, sizeof(*net->endpoints));
    net->max_attempts = conf->max_attempts ? conf->max_attempts : (uint32_t)conf->nendpoints + 1;
    net->primary = -1;
    net->challenger = -1;
    pool_link_timers_init(&net->timers, &pool->t, conf->name, &conf->timeouts);
    h2o_timeout_init(pool->loop, &net->request_timeout, conf->timeouts.request_ms);
    h2o_linklist_init_anchor(&net->waiters);
    pool_pressure_init(net);
    pool_chain_init(net);
    pool_chainid_init(net);
    pool_call_net_init(net);
    /* nendpoints counts those pool_endpoint_init() saw (a failed one
     * included: it leaves itself disposable), so a failure half-way
     * disposes only what was set up */
    for (size_t i = 0; i < conf->nendpoints; i++) {
        sl_err_t err = pool_endpoint_init(&net->endpoints[i], net, (int)i, &conf->endpoints[i], nworkers);
        net->nendpoints = i + 1;
        if (err != SL_OK)
            return err;
    }
    return SL_OK;
}

static void network_dispose(pool_network_t *net)
{
    if (net->endpoints == NULL)
        return;
    pool_call_net_dispose(net);
    pool_pressure_dispose(net);
    for (size_t i = 0; i < net->nendpoints; i++)
        pool_endpoint_dispose(&net->endpoints[i]);
    free(net->endpoints);
    pool_link_timers_dispose(&net->timers);
    h2o_timeout_dispose(net->pool->loop, &net->request_timeout);
}

sl_err_t pool_create(const pool_params_t *p, pool_t **out)
{
    pool_t *pool = sl_xcalloc(1, sizeof(*pool));
    pool_transport_init(&pool->t, p->loop, p->getaddr_receiver, p->max_response_bytes, p->budget, p->transport);
    pool->loop = p->loop;
    pool->state = p->state;
    pool->cache = p->cache;
    pool->cache_unfinalized = p->cache_unfinalized;
    pool->cache_admit = p->cache_admit;
    pool->on_grow = p->on_grow;
    if (p->cache != NULL) {
        pool->admit = sl_xcalloc(1, sizeof(*pool->admit));
        policy_cacheadmit_init(pool->admit);
    }
    pool->slot = p->slot;
    pool->nworkers = p->nworkers ? p->nworkers : 1;
    pool->refresh_ms = p->refresh_ms ? p->refresh_ms : 50;
    pool->flush_ms = p->flush_ms;
    pool->nnetworks = p->nnetworks;
    pool->networks = sl_xcalloc(p->nnetworks, sizeof(*pool->networks));
    h2o_timeout_init(p->loop, &pool->zero_timeout, 0);
    pool_call_layer_init(pool);
    for (size_t i = 0; i < p->nnetworks; i++) {
        sl_err_t err = network_init(pool, &pool->networks[i], &p->networks[i], p->nworkers ? p->nworkers : 1);
        if (err != SL_OK) {
            pool_destroy(pool);
            return err;
        }
    }
    pool_tick_init(pool);
    *out = pool;
    return SL_OK;
}

void pool_destroy(pool_t *pool)
{
    if (pool == NULL)
        return;
    pool_tick_dispose(pool);
    for (size_t i = 0; i < pool->nnetworks; i++)
        network_dispose(&pool->networks[i]);
    free(pool->networks);
    free(pool->admit);
    h2o_timeout_dispose(pool->loop, &pool->zero_timeout);
    pool_transport_dispose(&pool->t);
    free(pool);
}

pool_network_t *pool_network_find(pool_t *pool, const char *name, size_t len)
{
    for (size_t i = 0; i < pool->nnetworks; i++) {
        const char *n = pool->networks[i].conf->name;
        if (strlen(n) == len && memcmp(n, name, len) == 0)
            return &pool->networks[i];
    }
    return NULL;
}

const pool_network_conf_t *pool_network_conf(const pool_network_t *net)
{
    return net->conf;
}

void pool_close_idle(pool_t *pool)
{
    for (size_t i = 0; i < pool->nnetworks; i++)
        for (size_t j = 0; j < pool->networks[i].nendpoints; j++)
            pool_link_close_idle(&pool->networks[i].endpoints[j].link);
}

void pool_refresh(pool_t *pool)
{
    pool_tick_refresh(pool);
}
