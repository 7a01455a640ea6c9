/* pool/pool_delay.c: timers of any length on one h2o timeout.
 *
 * h2o 2.2.5 timeouts have one fixed duration each, and every one of them is
 * visited on each turn of the loop: a timeout per backoff value would cost
 * every request. Instead, delayed entries wait in a list sorted by due time
 * and one short timeout (5 ms granularity) polls it while it is not empty. */
#include "base/sl_time.h"
#include "pool/pool_delay.h"

#define DELAY_TICK_MS 5

static void on_delay_tick(h2o_timeout_entry_t *entry)
{
    pool_delays_t *ds = H2O_STRUCT_FROM_MEMBER(pool_delays_t, tick, entry);
    uint64_t now = sl_now_ms();
    while (!h2o_linklist_is_empty(&ds->list)) {
        pool_delay_t *d = H2O_STRUCT_FROM_MEMBER(pool_delay_t, link, ds->list.next);
        if (d->due_ms > now)
            break;
        h2o_linklist_unlink(&d->link);
        d->cb(d);
    }
    if (!h2o_linklist_is_empty(&ds->list) && !h2o_timeout_is_linked(&ds->tick))
        h2o_timeout_link(ds->loop, &ds->timeout, &ds->tick);
}

void pool_delays_init(pool_delays_t *ds, h2o_loop_t *loop)
{
    ds->loop = loop;
    h2o_linklist_init_anchor(&ds->list);
    h2o_timeout_init(ds->loop, &ds->timeout, DELAY_TICK_MS);
    ds->tick.cb = on_delay_tick;
}

void pool_delays_dispose(pool_delays_t *ds)
{
    while (!h2o_linklist_is_empty(&ds->list))
        h2o_linklist_unlink(ds->list.next);
    if (h2o_timeout_is_linked(&ds->tick))
        h2o_timeout_unlink(&ds->tick);
    h2o_timeout_dispose(ds->loop, &ds->timeout);
}

void pool_delay_add(pool_delays_t *ds, pool_delay_t *d, uint32_t ms, void (*cb)(pool_delay_t *))
{
    d->due_ms = sl_now_ms() + ms;
    d->cb = cb;
    h2o_linklist_t *pos = &ds->list;
    while (pos->prev != &ds->list &&
           H2O_STRUCT_FROM_MEMBER(pool_delay_t, link, pos->prev)->due_ms > d->due_ms)
        pos = pos->prev;
    h2o_linklist_insert(pos, &d->link);
    if (!h2o_timeout_is_linked(&ds->tick))
        h2o_timeout_link(ds->loop, &ds->timeout, &ds->tick);
}

void pool_delay_cancel(pool_delay_t *d)
{
    if (h2o_linklist_is_linked(&d->link))
        h2o_linklist_unlink(&d->link);
}
