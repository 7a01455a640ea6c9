/* pool/pool_call_wait.c: confirmation polls waiting for a slot.
 *
 * A confirmation poll never hears "every endpoint is at max_inflight": when
 * the only endpoints it could still use are full, it waits in the network's
 * line (bounded by its deadline, timeouts.request_ms) and goes on, oldest
 * first, when a slot frees up (the transport's hook) or when a snapshot
 * finds its full endpoints unusable. */
#include "base/sl_time.h"
#include "pool/pool_call_int.h"

int pool_call_should_wait(pool_call_t *call)
{
    pool_network_t *net = call->net;
    if (!net->conf->pressure.enabled)
        return 0;
    for (size_t i = 0; i < call->nitems; i++)
        if (call->items[i].state == POOL_ITEM_PENDING && call->items[i].method->cls != POLICY_CLASS_CONFIRM)
            return 0;
    uint64_t now = sl_shared_ms();
    for (size_t i = 0; i < net->nendpoints; i++) {
        pool_endpoint_t *ep = &net->endpoints[i];
        if (!call->tried[i] && ep->max_inflight > 0 && ep->link.inflight >= ep->max_inflight &&
            pool_health_usable(ep, now) && pool_call_scope_admits(call, ep))
            return 1;
    }
    return 0;
}

void pool_call_wait_start(pool_call_t *call)
{
    pool_network_t *net = call->net;
    h2o_linklist_insert(&net->waiters, &call->wait_link); /* at the tail: oldest first */
    if (!call->waited) {
        call->waited = 1;
        net->pressure.waits++;
    }
}

void pool_call_wait_stop(pool_call_t *call)
{
    if (h2o_linklist_is_linked(&call->wait_link))
        h2o_linklist_unlink(&call->wait_link);
}

/* 1 if some usable endpoint of net has a free slot in this worker. */
static int slot_free(pool_network_t *net)
{
    uint64_t now = sl_shared_ms();
    for (size_t i = 0; i < net->nendpoints; i++) {
        pool_endpoint_t *ep = &net->endpoints[i];
        if (ep->link.inflight < ep->max_inflight && pool_health_usable(ep, now))
            return 1;
    }
    return 0;
}

/* Lets waiters go on, oldest first, each at most once (one that cannot use
 * what freed up goes back to the end of the line): while a slot is free, or
 * all of them when recheck is set. */
static void wake(pool_network_t *net, int recheck)
{
    if (net->waking || h2o_linklist_is_empty(&net->waiters))
        return;
    net->waking = 1;
    size_t n = 0;
    for (h2o_linklist_t *l = net->waiters.next; l != &net->waiters; l = l->next)
        n++;
    while (n-- > 0 && !h2o_linklist_is_empty(&net->waiters) && (recheck || slot_free(net))) {
        pool_call_t *call = H2O_STRUCT_FROM_MEMBER(pool_call_t, wait_link, net->waiters.next);
        h2o_linklist_unlink(&call->wait_link);
        pool_call_next(call);
    }
    net->waking = 0;
}

void pool_call_wake_waiters(pool_network_t *net)
{
    wake(net, 0);
}

void pool_call_recheck_waiters(pool_network_t *net)
{
    wake(net, 1);
}

/* The transport's hook: a slot of the link's endpoint freed up. */
static void on_slot_freed(pool_link_t *link)
{
    pool_call_wake_waiters(pool_link_endpoint(link)->net);
}

/* The transport's hook: an answer a call reads grew. */
static void on_grew(pool_exchange_t *ex)
{
    pool_call_t *call = ex->grow_call;
    if (call->net->pool->on_grow != NULL && call->state != POOL_CALL_DONE)
        call->net->pool->on_grow(call, call->cb, call->data);
}

void pool_call_layer_init(pool_t *pool)
{
    pool->t.slot_freed = on_slot_freed;
    pool->t.grew = on_grew;
    pool->refreshed = pool_call_recheck_waiters;
}
