/* gateway/gw_ws_sub.c: sub/'s bounds, counters and admission, from the
 * client edge (gw_ws_sub.h). */
#include "gateway/gw_ws_sub.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/gw_identity.h"
#include "gateway/gw_keylimit.h"
#include "gateway/gw_limit.h"
#include "gateway/gw_refuse.h"
#include "gateway/gw_scope.h"
#include "policy/resume.h"
#include "wire/envelope.h"

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

_Static_assert((int)CFG_WS_RESUME_OFF == (int)POLICY_RESUME_OFF && (int)CFG_WS_RESUME_KEYED == (int)POLICY_RESUME_KEYED &&
                   (int)CFG_WS_RESUME_ALL == (int)POLICY_RESUME_ALL,
               "server.ws_resume's values are policy/resume.h's");

sub_reg_t *gw_ws_sub_create(h2o_loop_t *loop, const cfg_server_conf_t *srv, gw_stats_t *stats, state_t *st)
{
    sub_limits_t limits = {
        .per_connection = srv->ws_max_subscriptions_per_connection,
        .per_identity = srv->ws_max_subscriptions_per_identity,
        .sources_per_identity = srv->ws_max_sources_per_identity,
        .polled_sources_per_identity = srv->ws_max_polled_sources_per_identity,
        .logs_retry_s = srv->ws_logs_retry_s,
        .resume = srv->ws_resume,
        .resume_s = srv->ws_resume_s,
    };
    sub_counters_t counters = {stats, count_srv, count_srv_set, count_cost, count_net};
    return sub_create(loop, &limits, stats != NULL ? &counters : NULL, st);
}

typedef enum sub_refusal {
    SUB_REFUSE_TIER,              /* the caller's tier: 429 */
    SUB_REFUSE_PER_ADDRESS,       /* the key's per_address limit: 429 per_address */
    SUB_REFUSE_CREDITS,           /* the key's credits: 429 key_credits */
} sub_refusal_t;

/* The refusal which, with lim, to the subscription call; 0. */
static int refuse(sub_client_t *c, const char *body, wire_span_t id, const gw_limit_result_t *lim,
                  sub_refusal_t which, uint32_t cost)
{
    gw_reply_t r;
    memset(&r, 0, sizeof(r));
    sl_buf_init(&r.out);
    switch (which) {
    case SUB_REFUSE_TIER:
        gw_refuse_limited(&r, body, id, lim);
        break;
    case SUB_REFUSE_PER_ADDRESS:
        gw_refuse_per_address(&r, body, id, lim);
        break;
    case SUB_REFUSE_CREDITS:
        gw_refuse_key_credits(&r, body, id, lim, cost);
        break;
    }
    c->send(c, r.body, r.len);
    sl_buf_dispose(&r.out);
    return 0;
}

/* The rate-limit half of admit: the key's per_address limit, then the
 * caller's tier, as for a call (gw_exec.c). */
static int charge(gw_ws_subs_t *s, sub_client_t *c, const char *body, wire_span_t id)
{
    gw_handler_t *h = s->h;
    gw_limit_result_t lim;
    if (h == NULL || h->limit == NULL)
        return 1;
    if (!gw_keylimit_address(h, s->key, s->ip, POLICY_BUCKET_STANDARD, 1, &lim))
        return refuse(c, body, id, &lim, SUB_REFUSE_PER_ADDRESS, 0);
    const cfg_tier_conf_t *tier = gw_identity_tier(h->cfg, s->key);
    if (tier == NULL)
        return 1;
    gw_limit_charge(h->limit, tier, c->ident, POLICY_BUCKET_STANDARD, 1, &lim);
    return lim.said != POLICY_LEASE_NO ? 1 : refuse(c, body, id, &lim, SUB_REFUSE_TIER, 0);
}

/* The key's credits, for a call its scope admitted: the subscription
 * call's cost, in the cost profile the key's calls count in. */
static int charge_credits(gw_ws_subs_t *s, sub_client_t *c, const char *body, size_t len, wire_span_t id)
{
    wire_envelope_t env;
    char method[WIRE_RPC_METHOD_MAX];
    gw_limit_result_t lim;
    if (s->h == NULL || s->h->limit == NULL || s->key == NULL || wire_envelope_scan(body, len, &env) != SL_OK ||
        wire_json_string(body, env.method, method, sizeof(method)) != SL_OK)
        return 1;
    const pool_network_conf_t *nc = s->net != NULL ? s->net->sub.conf : NULL;
    uint64_t cost = policy_cost_of(gw_keylimit_profile(nc), nc != NULL ? nc->chain : POLICY_CHAIN_ETHEREUM, NULL, 0,
                                   method, strlen(method)).billed;
    uint32_t c32 = cost > UINT32_MAX ? UINT32_MAX : (uint32_t)cost;
    return gw_keylimit_credits(s->h, s->key, c32, &lim) ? 1 : refuse(c, body, id, &lim, SUB_REFUSE_CREDITS, c32);
}

static int admit(sub_client_t *c, const char *body, size_t len, wire_span_t id)
{
    gw_ws_subs_t *s = H2O_STRUCT_FROM_MEMBER(gw_ws_subs_t, client, c);
    return charge(s, c, body, id) && gw_scope_sub(s->h, s->key, c, body, len, id) &&
           charge_credits(s, c, body, len, id);
}

/* What a subscription's filter holds: an entry under its caller, with the
 * budget it was charged to. */
typedef struct filter_hold {
    gw_held_entry_t held;
    size_t bytes;
    gw_buffered_t *b;
} filter_hold_t;

static size_t hold_bytes(const gw_held_entry_t *e)
{
    return H2O_STRUCT_FROM_MEMBER(filter_hold_t, held, e)->bytes;
}

static sub_hold_result_t hold(sub_client_t *c, size_t bytes, void **token)
{
    gw_ws_subs_t *s = H2O_STRUCT_FROM_MEMBER(gw_ws_subs_t, client, c);
    gw_buffered_t *b = s->h != NULL ? &s->h->buffered : NULL;
    *token = NULL;
    if (b == NULL || b->budget == NULL || b->held == NULL)
        return SUB_HOLD_OK;
    if (b->budget->used + bytes > b->budget->limit)
        return SUB_HOLD_BUDGET;
    if (b->share < b->budget->limit && gw_held_of(b->held, c->ident) + bytes > b->share)
        return SUB_HOLD_SHARE;
    filter_hold_t *f = sl_xcalloc(1, sizeof(*f));
    f->bytes = bytes;
    f->b = b;
    f->held.bytes = hold_bytes;
    gw_held_add(b->held, &f->held, c->ident);
    sl_budget_charge(b->budget, bytes);
    *token = f;
    return SUB_HOLD_OK;
}

static void unhold(void *token)
{
    filter_hold_t *f = token;
    gw_held_remove(f->b->held, &f->held);
    sl_budget_release(f->b->budget, f->bytes);
    free(f);
}

static const sub_edge_t edge = {admit, hold, unhold};

void gw_ws_subs_init(gw_ws_subs_t *s, sub_reg_t *r, gw_handler_t *h, gw_net_t *net, const cfg_key_conf_t *key,
                     const char *ident, const char *ip, sub_send_fn send)
{
    sub_client_init(&s->client, r, &net->sub, ident, send, &edge);
    s->h = h;
    s->net = net;
    s->key = key;
    snprintf(s->ip, sizeof(s->ip), "%s", ip);
}
