#include "state/state_lease.h"

#include <h2o/memory.h>

void state_lease_waiters_init(state_lease_waiters_t *ws)
{
    h2o_linklist_init_anchor(&ws->anchor);
}

void state_lease_wait(state_lease_waiters_t *ws, state_lease_wait_t *w, void (*cb)(state_lease_wait_t *w))
{
    w->cb = cb;
    h2o_linklist_insert(&ws->anchor, &w->link);
}

void state_lease_wait_cancel(state_lease_wait_t *w)
{
    if (h2o_linklist_is_linked(&w->link))
        h2o_linklist_unlink(&w->link);
}

void state_lease_wake(state_lease_waiters_t *ws, int (*match)(const state_lease_wait_t *w, const void *arg),
                      const void *arg)
{
    h2o_linklist_t woken;
    h2o_linklist_init_anchor(&woken);
    for (h2o_linklist_t *p = ws->anchor.next, *next; p != &ws->anchor; p = next) {
        next = p->next;
        state_lease_wait_t *w = H2O_STRUCT_FROM_MEMBER(state_lease_wait_t, link, p);
        if (match == NULL || match(w, arg)) {
            h2o_linklist_unlink(&w->link);
            h2o_linklist_insert(&woken, &w->link);
        }
    }
    while (!h2o_linklist_is_empty(&woken)) {
        state_lease_wait_t *w = H2O_STRUCT_FROM_MEMBER(state_lease_wait_t, link, woken.next);
        h2o_linklist_unlink(&w->link);
        w->cb(w);
    }
}
