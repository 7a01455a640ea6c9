/* sub/sub_poll.c: the loop of a polled source (sub_poll.h). */
#include "sub/sub_poll.h"

static void on_tick(h2o_timeout_entry_t *e)
{
    sub_poll_t *p = H2O_STRUCT_FROM_MEMBER(sub_poll_t, tick, e);
    h2o_timeout_link(sub_loop(p->reg), p->period, &p->tick);
    if (!sub_call_busy(&p->call))
        p->poll(p);
}

/* The chain view learns heads between polls: one above the one last
 * looked at wakes the poll. */
static void on_watch(h2o_timeout_entry_t *e)
{
    sub_poll_t *p = H2O_STRUCT_FROM_MEMBER(sub_poll_t, watch, e);
    h2o_timeout_link(sub_loop(p->reg), sub_timeout(p->reg, SUB_WATCH_MS), &p->watch);
    uint64_t h = pool_network_head(p->net->pool_net);
    if (h <= p->view_head)
        return;
    p->view_head = h;
    if (!sub_call_busy(&p->call))
        p->poll(p);
}

void sub_poll_init(sub_poll_t *p)
{
    sub_call_init(&p->call);
}

void sub_poll_start(sub_poll_t *p, sub_reg_t *r, sub_net_t *net, unsigned flags, sub_poll_fn poll)
{
    p->reg = r;
    p->net = net;
    p->poll = poll;
    p->period = sub_timeout(r, sub_poll_ms(net));
    p->tick.cb = on_tick;
    h2o_timeout_link(sub_loop(r), p->period, &p->tick);
    if (flags & SUB_POLL_WATCH) {
        p->watch.cb = on_watch;
        p->view_head = pool_network_head(net->pool_net);
        h2o_timeout_link(sub_loop(r), sub_timeout(r, SUB_WATCH_MS), &p->watch);
    }
    poll(p);
}

void sub_poll_stop(sub_poll_t *p)
{
    if (h2o_timeout_is_linked(&p->tick))
        h2o_timeout_unlink(&p->tick);
    if (h2o_timeout_is_linked(&p->watch))
        h2o_timeout_unlink(&p->watch);
    sub_call_dispose(&p->call);
}
