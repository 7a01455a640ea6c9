/* sub/sub_reg.c: the registry's services to the kinds (sub_int.h): its
 * loop and bounds, the counters and events, the groups a network's sources
 * share, the poll timers. Called by every kind; calls nothing of theirs. */
#include "sub/sub_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/sl_log.h"
#include "base/sl_time.h"

#define DEFAULT_POLL_MS 1000

h2o_loop_t *sub_loop(const sub_reg_t *r)
{
    return r->loop;
}

const sub_limits_t *sub_limits(const sub_reg_t *r)
{
    return &r->limits;
}

void sub_count_srv(const sub_reg_t *r, state_srv_counter_t c, uint64_t n)
{
    if (r->counters.srv_add != NULL)
        r->counters.srv_add(r->counters.ctx, c, n);
}

void sub_count_srv_set(const sub_reg_t *r, state_srv_counter_t c, uint64_t value)
{
    if (r->counters.srv_set != NULL)
        r->counters.srv_set(r->counters.ctx, c, value);
}

void sub_count_cost(const sub_reg_t *r, size_t net, state_sub_counter_t c, int64_t n)
{
    if (r->counters.cost_add != NULL)
        r->counters.cost_add(r->counters.ctx, net, c, n);
}

void sub_count_net(const sub_reg_t *r, size_t net, size_t i, int64_t delta)
{
    if (r->counters.net_add != NULL)
        r->counters.net_add(r->counters.ctx, net, i, delta);
}

void sub_source_changed(sub_reg_t *r, const sub_net_t *net, const char *kind, const char *from,
                           const char *to, uint64_t backfilled)
{
    state_event_t ev;
    sl_log_info("network %s: the %s source moved from endpoint %s to %s (polling; %" PRIu64
                " heights backfilled while on %s)", net->conf->name, kind, from, to, backfilled, from);
    if (r->st == NULL)
        return;
    state_event_init(&ev, STATE_EVENT_SUBSCRIPTION_SOURCE_CHANGED, net->conf->name, to, sl_wall_ms());
    snprintf(ev.reason, sizeof(ev.reason), "%s subscriptions: polled through %s, was %s (%" PRIu64
             " heights backfilled while on it)", kind, to, from, backfilled);
    ev.count = backfilled;
    if (state_event_append(r->st, &ev) != SL_OK)
        sl_log_warn("state: could not record the subscription_source_changed event");
}

state_t *sub_state(const sub_reg_t *r)
{
    return r->st;
}

h2o_linklist_t *sub_follows(sub_reg_t *r)
{
    return &r->follows;
}

sub_group_t *sub_group_find(sub_reg_t *r, const char *tag, const sub_net_t *net, const char *key)
{
    for (h2o_linklist_t *l = r->groups.next; l != &r->groups; l = l->next) {
        sub_group_t *g = H2O_STRUCT_FROM_MEMBER(sub_group_t, link, l);
        if (g->net == net && strcmp(g->tag, tag) == 0 && strcmp(g->key, key) == 0)
            return g;
    }
    return NULL;
}

void sub_group_add(sub_reg_t *r, sub_group_t *g)
{
    h2o_linklist_insert(&r->groups, &g->link);
}

uint32_t sub_poll_ms(const sub_net_t *net)
{
    uint32_t ms = net->conf->ranking.probe_interval_ms;
    return ms != 0 ? ms : DEFAULT_POLL_MS;
}

h2o_timeout_t *sub_timeout(sub_reg_t *r, uint32_t ms)
{
    for (size_t i = 0; i < r->ntimeouts; i++)
        if (r->timeout_ms[i] == ms)
            return &r->timeouts[i];
    size_t i = r->ntimeouts < SUB_MAX_TIMEOUTS ? r->ntimeouts++ : SUB_MAX_TIMEOUTS - 1;
    if (i == SUB_MAX_TIMEOUTS - 1 && r->timeout_ms[i] != 0)
        return &r->timeouts[i]; /* more periods than lists: the last one's (networks rarely differ) */
    r->timeout_ms[i] = ms;
    h2o_timeout_init(r->loop, &r->timeouts[i], ms);
    return &r->timeouts[i];
}

void sub_gauge(sub_reg_t *r, state_srv_counter_t g, int delta)
{
    r->open[g] += (uint64_t)(int64_t)delta;
    sub_count_srv_set(r, g, r->open[g]);
}

