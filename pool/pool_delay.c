/* pool/pool_delay.c: timers of any length on one h2o timeout.
 *
 * h2o 2.2.5 timeouts have one fixed duration each, and every one of them is
 * visited on each turn of the loop: a timeout per backoff value would cost
 * every request. Instead, delayed entries wait in a list sorted by due time
 * and one short timeout (5 ms granularity) polls it while it is not empty. */
#include "base/sl_time.h"
#include "pool/pool_int.h"

#define DELAY_TICK_MS 5

static void on_delay_tick(h2o_timeout_entry_t *entry)
{
    pool_t *pool = H2O_STRUCT_FROM_MEMBER(pool_t, delay_tick, entry);
    uint64_t now = sl_now_ms();
    while (!h2o_linklist_is_empty(&pool->delays)) {
        pool_delay_t *d = H2O_STRUCT_FROM_MEMBER(pool_delay_t, link, pool->delays.next);
        if (d->due_ms > now)
            break;
        h2o_linklist_unlink(&d->link);
        d->cb(d);
    }
    if (!h2o_linklist_is_empty(&pool->delays) && !h2o_timeout_is_linked(&pool->delay_tick))
        h2o_timeout_link(pool->loop, &pool->delay_timeout, &pool->delay_tick);
}

void pool_delay_init(pool_t *pool)
{
    h2o_linklist_init_anchor(&pool->delays);
    h2o_timeout_init(pool->loop, &pool->delay_timeout, DELAY_TICK_MS);
    pool->delay_tick.cb = on_delay_tick;
}

void pool_delay_dispose(pool_t *pool)
{
    while (!h2o_linklist_is_empty(&pool->delays))
        h2o_linklist_unlink(pool->delays.next);
    if (h2o_timeout_is_linked(&pool->delay_tick))
        h2o_timeout_unlink(&pool->delay_tick);
    h2o_timeout_dispose(pool->loop, &pool->delay_timeout);
}

void pool_delay_add(pool_t *pool, pool_delay_t *d, uint32_t ms, void (*cb)(pool_delay_t *))
{
    d->due_ms = sl_now_ms() + ms;
    d->cb = cb;
    h2o_linklist_t *pos = &pool->delays;
    while (pos->prev != &pool->delays &&
           H2O_STRUCT_FROM_MEMBER(pool_delay_t, link, pos->prev)->due_ms > d->due_ms)
        pos = pos->prev;
    h2o_linklist_insert(pos, &d->link);
    if (!h2o_timeout_is_linked(&pool->delay_tick))
        h2o_timeout_link(pool->loop, &pool->delay_timeout, &pool->delay_tick);
}

void pool_delay_cancel(pool_delay_t *d)
{
    if (h2o_linklist_is_linked(&d->link))
        h2o_linklist_unlink(&d->link);
}
