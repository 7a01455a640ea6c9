/* pool/pool_pressure_call.c: the pressure satellite: a call counts in its
 * network's depth (and its owner's share, pool_share.c) while it holds an
 * upstream slot; a client's call ends as a settle-time sample and a try of
 * the refusal ratio. The level these feed: pool_pressure.c. */
#include "base/sl_time.h"
#include "pool/pool_call_int.h"

static void pressure_try(pool_network_t *net, int refused)
{
    pool_pressure_t *pr = &net->pressure;
    uint64_t now = sl_now_ms();
    policy_roll_add(&pr->try_roll, &pr->try_v[0][0], 2, net->conf->pressure.window_ms, now, 0, 1);
    if (refused)
        policy_roll_add(&pr->try_roll, &pr->try_v[0][0], 2, net->conf->pressure.window_ms, now, 1, 1);
}

void pool_pressure_hold(pool_call_t *call)
{
    if (call->pressure.counted || !call->net->conf->pressure.enabled)
        return;
    call->pressure.counted = 1;
    call->net->pressure.depth++;
    pool_share_hold(call);
}

void pool_pressure_share(pool_call_t *call)
{
    if (!call->pressure.counted)
        return;
    call->pressure.counted = 0;
    call->net->pressure.depth--;
    pool_share_release(call);
}

void pool_pressure_admit(pool_call_t *call)
{
    if (!call->net->conf->pressure.enabled)
        return;
    call->pressure.timed = 1;
    call->pressure.started_us = sl_now_us();
    pool_pressure_hold(call);
}

/* The client got the upstreams' refusal: every endpoint tried refused with a
 * rate limit or lacked credits (a batch: any member). */
static int refused_upstream(const pool_call_t *call)
{
    for (size_t i = 0; i < call->nitems; i++)
        if (call->items[i].outcome == POOL_OUTCOME_RATE_LIMITED)
            return 1;
    return 0;
}

void pool_pressure_settle(pool_call_t *call, int answered)
{
    pool_network_t *net = call->net;
    pool_pressure_t *pr = &net->pressure;
    pool_pressure_share(call);
    if (!call->pressure.timed)
        return;
    call->pressure.timed = 0;
    if (!answered)
        return;
    uint64_t now_us = sl_now_us(); /* one clock read: the window is in ms of the same clock */
    policy_roll_add(&pr->settle_roll, &pr->settle_v[0][0], POLICY_SETTLE_BUCKETS, net->conf->pressure.window_ms,
                    now_us / 1000, policy_settle_bucket(now_us - call->pressure.started_us), 1);
    pressure_try(net, refused_upstream(call));
}

/* The call loop's row (pool_call.c): a call counts in the depth from its
 * start; one riding on another's upstream call leaves it and holds again
 * when it goes upstream itself; its end is a settle time and a try. */
static void row_start(pool_call_t *call)
{
    if (call->carrier)
        pool_pressure_hold(call); /* the merged polls' one upstream slot, not a client's call */
    else
        pool_pressure_admit(call);
}

static void row_enter(pool_call_t *call, pool_call_state_t from, pool_call_state_t to)
{
    if (to == POOL_CALL_RIDING)
        pool_pressure_share(call);
    else if (from == POOL_CALL_RIDING && to != POOL_CALL_DONE)
        pool_pressure_hold(call);
}

static void row_stop(pool_call_t *call, pool_call_stop_t why)
{
    pool_pressure_settle(call, why != POOL_CALL_RELEASED); /* released first: the client went away */
}

const pool_call_row_t pool_pressure_row = {
    .name = "pressure",
    .start = row_start,
    .enter = row_enter,
    .stop = row_stop,
    .net_init = pool_share_init,
    .net_dispose = pool_share_dispose,
};
