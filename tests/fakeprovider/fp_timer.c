/* fp_timer.c: connection timers as a binary min-heap on the loop.
 *
 * Each connection has at most one pending timer (a delayed answer, the next
 * drip of a slow body, or the end of a lingering close), so the heap stores
 * connections directly and each remembers its slot for O(log n) cancel. */
#include "fp.h"

#include <stdint.h>

static void heap_place(fp_server_t *srv, size_t i, fp_conn_t *c)
{
    srv->timers[i] = c;
    c->timer_idx = i;
}

static void heap_up(fp_server_t *srv, size_t i)
{
    fp_conn_t *c = srv->timers[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (srv->timers[parent]->timer_at <= c->timer_at)
            break;
        heap_place(srv, i, srv->timers[parent]);
        i = parent;
    }
    heap_place(srv, i, c);
}

static void heap_down(fp_server_t *srv, size_t i)
{
    fp_conn_t *c = srv->timers[i];
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= srv->timer_count)
            break;
        if (child + 1 < srv->timer_count
            && srv->timers[child + 1]->timer_at < srv->timers[child]->timer_at)
            child++;
        if (srv->timers[child]->timer_at >= c->timer_at)
            break;
        heap_place(srv, i, srv->timers[child]);
        i = child;
    }
    heap_place(srv, i, c);
}

void fp_timer_cancel(fp_server_t *srv, fp_conn_t *c)
{
    size_t i = c->timer_idx;
    if (i == SIZE_MAX)
        return;
    c->timer_idx = SIZE_MAX;
    fp_conn_t *last = srv->timers[--srv->timer_count];
    if (last == c)
        return;
    heap_place(srv, i, last);
    heap_up(srv, i);
    heap_down(srv, last->timer_idx);
}

void fp_timer_set(fp_server_t *srv, fp_conn_t *c, uint64_t at_ms)
{
    fp_timer_cancel(srv, c);
    if (srv->timer_count == srv->timer_cap) {
        srv->timer_cap = srv->timer_cap ? srv->timer_cap * 2 : 64;
        srv->timers = fp_xrealloc(srv->timers, srv->timer_cap * sizeof *srv->timers);
    }
    c->timer_at = at_ms;
    heap_place(srv, srv->timer_count++, c);
    heap_up(srv, c->timer_idx);
}

int fp_timer_timeout(const fp_server_t *srv)
{
    if (srv->timer_count == 0)
        return -1;
    uint64_t at = srv->timers[0]->timer_at;
    if (at <= srv->now_ms)
        return 0;
    uint64_t wait = at - srv->now_ms;
    return wait > 60000 ? 60000 : (int)wait;
}

void fp_timer_run(fp_server_t *srv)
{
    while (srv->timer_count > 0 && srv->timers[0]->timer_at <= srv->now_ms) {
        fp_conn_t *c = srv->timers[0];
        fp_timer_cancel(srv, c);
        fp_conn_on_timer(c);    /* may re-arm the timer or free c */
    }
}
