/* gateway/gw_ws_sub.c: sub/'s bounds, counters and admission, from the
 * client edge (gw_ws_sub.h). */
#include "gateway/gw_ws_sub.h"

#include <string.h>

#include "gateway/gw_identity.h"
#include "gateway/gw_limit.h"
#include "gateway/gw_refuse.h"
#include "gateway/gw_scope.h"

static void count_srv(void *ctx, state_srv_counter_t c, uint64_t n)
{
    gw_stats_srv_add(ctx, c, n);
}

static void count_srv_set(void *ctx, state_srv_counter_t c, uint64_t value)
{
    gw_stats_srv_set(ctx, c, value);
}

static void count_cost(void *ctx, size_t net, state_sub_counter_t c, int64_t n)
{
    gw_stats_sub_add(ctx, net, c, n);
}

static void count_net(void *ctx, size_t net, size_t i, int64_t delta)
{
    gw_stats_net_add(ctx, net, i, delta);
}

sub_reg_t *gw_ws_sub_create(h2o_loop_t *loop, const cfg_server_conf_t *srv, gw_stats_t *stats, state_t *st)
{
    sub_limits_t limits = {
        .per_connection = srv->ws_max_subscriptions_per_connection,
        .per_identity = srv->ws_max_subscriptions_per_identity,
        .sources_per_identity = srv->ws_max_sources_per_identity,
        .polled_sources_per_identity = srv->ws_max_polled_sources_per_identity,
        .logs_retry_s = srv->ws_logs_retry_s,
    };
    sub_counters_t counters = {stats, count_srv, count_srv_set, count_cost, count_net};
    return sub_create(loop, &limits, stats != NULL ? &counters : NULL, st);
}

/* The rate-limit half of gw_ws_sub_admit. */
static int charge(gw_handler_t *h, const cfg_key_conf_t *key, sub_client_t *c, const char *body, wire_span_t id)
{
    const cfg_tier_conf_t *tier = h != NULL ? gw_identity_tier(h->cfg, key) : NULL;
    gw_limit_result_t lim;
    if (tier == NULL || h->limit == NULL)
        return 1;
    gw_limit_charge(h->limit, tier, c->ident, POLICY_BUCKET_STANDARD, 1, &lim);
    if (lim.said != POLICY_LEASE_NO)
        return 1;
    gw_reply_t r;
    memset(&r, 0, sizeof(r));
    sl_buf_init(&r.out);
    gw_refuse_limited(&r, body, id, &lim);
    c->send(c, r.body, r.len);
    sl_buf_dispose(&r.out);
    return 0;
}

int gw_ws_sub_admit(gw_handler_t *h, const cfg_key_conf_t *key, sub_client_t *c, const char *body, size_t len,
                    wire_span_t id)
{
    return charge(h, key, c, body, id) && gw_scope_sub(h, key, c, body, len, id);
}
