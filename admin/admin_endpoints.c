/* admin/admin_endpoints.c: GET /admin/endpoints, POST .../drain and .../undrain */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin/admin_int.h"
#include "base/sl_log.h"
#include "base/sl_time.h"
#include "policy/breaker.h"
#include "policy/demote.h"
#include "policy/method.h"
#include "pool/pool_conf.h"
#include "state/state_cluster.h"
#include "state/state_key.h"

static void add_time(cJSON *o, const char *name, uint64_t ms)
{
    char iso[32];
    if (ms == 0) {
        cJSON_AddNullToObject(o, name);
        return;
    }
    admin_iso_time(ms, iso);
    cJSON_AddStringToObject(o, name, iso);
}

static cJSON *breaker_json(const admin_ep_view_t *v, uint64_t now)
{
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "state", policy_breaker_state_name((policy_breaker_state_t)v->rec.breaker));
    add_time(b, "since", v->rec.since_ms);
    cJSON_AddNumberToObject(b, "cooldown_ms", v->rec.cooldown_ms);
    if (v->rec.breaker == POLICY_BREAKER_OPEN) {
        uint64_t end = v->rec.since_ms + v->rec.cooldown_ms;
        cJSON_AddNumberToObject(b, "probe_in_ms", end > now ? (double)(end - now) : 0);
    }
    if (v->rec.breaker != POLICY_BREAKER_CLOSED)
        cJSON_AddNumberToObject(b, "open_for_ms", now > v->rec.opened_at_ms ? (double)(now - v->rec.opened_at_ms) : 0);
    cJSON *t = cJSON_AddObjectToObject(b, "transitions");
    for (int s = 0; s < POLICY_BREAKER_STATE_COUNT; s++)
        cJSON_AddNumberToObject(t, policy_breaker_state_name((policy_breaker_state_t)s), (double)v->rec.transitions[s]);
    return b;
}

/* The rank's inputs as the ranking last published them. */
static cJSON *score_json(const admin_ep_view_t *v)
{
    static const char *const excluded[STATE_EXCLUDED_COUNT] = {
        [STATE_EXCLUDED_BEHIND] = "far behind the head",
        [STATE_EXCLUDED_ERRORS] = "error ratio too high",
        [STATE_EXCLUDED_DNS_FAILED] = ADMIN_DNS_FAILED,
        [STATE_EXCLUDED_DNS_TIMEOUT] = ADMIN_DNS_TIMEOUT,
        [STATE_EXCLUDED_WRONG_CHAIN] = "wrong chain",
        [STATE_EXCLUDED_HEAD_AHEAD] = "head ahead of every other endpoint",
    };
    cJSON *sc = cJSON_CreateObject();
    cJSON_AddNumberToObject(sc, "cost", v->ranked.score_milli / 1000.0);
    cJSON_AddNumberToObject(sc, "latency_ms", v->ranked.latency_us / 1000.0);
    cJSON_AddNumberToObject(sc, "error_ratio", v->ranked.error_ppm / 1e6);
    cJSON_AddNumberToObject(sc, "rate_limit_ratio", v->ranked.rate_limit_ppm / 1e6);
    if (v->ranked.lag_plus1)
        cJSON_AddNumberToObject(sc, "lag", (double)(v->ranked.lag_plus1 - 1));
    else
        cJSON_AddNullToObject(sc, "lag");
    if (v->ranked.excluded && v->ranked.excluded < STATE_EXCLUDED_COUNT)
        cJSON_AddStringToObject(sc, "excluded", excluded[v->ranked.excluded]);
    return sc;
}

/* Requests, credits and refusals per method (those with any). */
static cJSON *methods_json(const admin_ep_view_t *v)
{
    cJSON *pm = cJSON_CreateObject();
    size_t nm;
    const policy_method_t *table = policy_method_table(v->net->chain, &nm);
    for (size_t m = 0; v->per_method != NULL && m <= nm; m++) {
        const uint64_t *c = &v->per_method[state_mc_index(m, 0)];
        if (c[STATE_MC_REQUESTS] == 0 && c[STATE_MC_REFUSALS] == 0)
            continue;
        cJSON *x = cJSON_AddObjectToObject(pm, m < nm ? table[m].name : "other");
        cJSON_AddNumberToObject(x, "requests", (double)c[STATE_MC_REQUESTS]);
        cJSON_AddNumberToObject(x, "credits", (double)c[STATE_MC_CREDITS]);
        cJSON_AddNumberToObject(x, "refusals", (double)c[STATE_MC_REFUSALS]);
    }
    return pm;
}

/* The ws_url stream (pool/pool_wshead.c) as its holder last wrote it; null
 * without a ws_url. A holder whose claim ran out (its worker died, or a
 * previous run's) holds nothing: down until another worker claims it. */
static void add_ws(cJSON *o, const admin_ep_view_t *v, uint64_t now)
{
    if (v->ep->ws_url == NULL) {
        cJSON_AddNullToObject(o, "ws");
        return;
    }
    static const char *const states[STATE_WS_COUNT] = {"connecting", "connecting", "connected", "down", "wrong_chain"};
    cJSON *ws = cJSON_AddObjectToObject(o, "ws");
    cJSON_AddStringToObject(ws, "url", v->ep->ws_url_redacted);
    uint8_t state = v->rec.ws_state < STATE_WS_COUNT ? v->rec.ws_state : STATE_WS_DOWN;
    if (state != STATE_WS_NONE && v->rec.ws_renew_ms < now)
        state = STATE_WS_DOWN;
    cJSON_AddStringToObject(ws, "state", states[state]);
    if (state != STATE_WS_NONE && state != STATE_WS_DOWN && v->rec.ws_pid != 0)
        cJSON_AddNumberToObject(ws, "holder_pid", v->rec.ws_pid); /* the worker holding the stream */
    else
        cJSON_AddNullToObject(ws, "holder_pid");
    cJSON_AddNumberToObject(ws, "heads_received", (double)v->rec.ws_heads);
    cJSON_AddNumberToObject(ws, "heads_unconfirmed", (double)v->rec.ws_unconfirmed); /* dropped: HTTP said otherwise */
    if (v->rec.ws_head_at_ms != 0)
        cJSON_AddNumberToObject(ws, "last_head_ms_ago",
                                now > v->rec.ws_head_at_ms ? (double)(now - v->rec.ws_head_at_ms) : 0);
    else
        cJSON_AddNullToObject(ws, "last_head_ms_ago");
}

static cJSON *endpoint_json(const admin_ep_view_t *v, uint64_t now, const state_event_t *learned, size_t nlearned)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "network", v->net->name);
    cJSON_AddStringToObject(o, "id", v->ep->id);
    cJSON_AddStringToObject(o, "url", v->ep->url_redacted);
    cJSON_AddStringToObject(o, "source", v->ep->from_api ? "api" : "yaml");
    cJSON_AddStringToObject(o, "tier", v->ep->tier == POOL_TIER_FALLBACK ? "fallback" : "primary");
    if (v->position > 0)
        cJSON_AddNumberToObject(o, "position", v->position);
    else
        cJSON_AddNullToObject(o, "position");
    cJSON_AddBoolToObject(o, "usable", v->usable);
    if (v->excluded)
        cJSON_AddStringToObject(o, "excluded", v->excluded);
    else
        cJSON_AddNullToObject(o, "excluded");
    if (v->has_ranked)
        cJSON_AddItemToObject(o, "score", score_json(v));
    /* the chain view's heads of the endpoint as every worker shares them:
     * head from the probes and the highest seen in an answer; safe and
     * finalized from the chain probe (pool_chainprobe.c); null: unknown */
    const uint64_t heads[3] = {v->rec.head, v->rec.safe, v->rec.finalized};
    static const char *const names[3] = {"head", "safe", "finalized"};
    for (size_t k = 0; k < 3; k++)
        if (heads[k] != 0)
            cJSON_AddNumberToObject(o, names[k], (double)heads[k]);
        else
            cJSON_AddNullToObject(o, names[k]);
    cJSON *probe = cJSON_AddObjectToObject(o, "probe");
    cJSON_AddNumberToObject(probe, "head", (double)v->rec.head);
    add_time(probe, "head_at", v->rec.head_at_ms);
    cJSON_AddNumberToObject(probe, "latency_ms", v->rec.probe_ewma_us / 1000.0);
    cJSON_AddNumberToObject(probe, "failures_in_a_row", v->rec.probe_failures);
    add_ws(o, v, now);
    cJSON *lat = cJSON_AddObjectToObject(o, "latency_ms");
    cJSON_AddNumberToObject(lat, "ewma", v->ewma_ms);
    cJSON_AddNumberToObject(lat, "p90", v->p90_ms);
    uint64_t good = v->stats.outcomes[STATE_OUTCOME_OK] + v->stats.outcomes[STATE_OUTCOME_DETERMINISTIC];
    if (v->stats.attempts)
        cJSON_AddNumberToObject(o, "success_ratio", (double)good / (double)v->stats.attempts);
    else
        cJSON_AddNullToObject(o, "success_ratio");
    cJSON_AddItemToObject(o, "breaker", breaker_json(v, now));
    add_time(o, "rate_limited_until", v->rec.rate_limited_until_ms > now ? v->rec.rate_limited_until_ms : 0);
    cJSON_AddBoolToObject(o, "drained", v->rec.drained);
    if (v->rec.demoted_until_ms > now) {
        cJSON *d = cJSON_AddObjectToObject(o, "demoted");
        cJSON_AddStringToObject(d, "reason", policy_demote_cause_name((policy_demote_cause_t)v->rec.demoted_cause));
        add_time(d, "until", v->rec.demoted_until_ms);
    } else {
        cJSON_AddNullToObject(o, "demoted");
    }
    cJSON_AddNumberToObject(o, "demotions", (double)v->rec.demotions);
    cJSON *hg = cJSON_AddObjectToObject(o, "hedges");
    cJSON_AddNumberToObject(hg, "sent", (double)v->stats.hedges_sent);
    cJSON_AddNumberToObject(hg, "won", (double)v->stats.hedges_won);
    cJSON_AddNumberToObject(hg, "cancelled", (double)v->stats.hedges_cancelled);
    cJSON_AddNumberToObject(o, "coalesced", (double)v->stats.coalesced);
    cJSON_AddNumberToObject(o, "inflight", v->inflight);
    cJSON_AddNumberToObject(o, "max_inflight", v->ep->max_inflight ? v->ep->max_inflight : POOL_DEFAULT_MAX_INFLIGHT);
    cJSON_AddNumberToObject(o, "requests", (double)v->stats.attempts);
    cJSON *by = cJSON_AddObjectToObject(o, "outcomes");
    for (int k = 0; k < STATE_OUTCOME_COUNT; k++)
        cJSON_AddNumberToObject(by, state_outcome_name((state_outcome_t)k), (double)v->stats.outcomes[k]);
    cJSON_AddNumberToObject(o, "failovers", (double)v->stats.failovers);
    cJSON_AddNumberToObject(o, "concurrency_reached", v->concurrency_reached);
    cJSON_AddItemToObject(o, "credits", admin_credits_json(v, now));
    cJSON_AddItemToObject(o, "methods", methods_json(v));
    cJSON_AddItemToObject(o, "learned", admin_learned_json(v, learned, nlearned, now));
    return o;
}

int admin_route_endpoints(admin_t *a, h2o_req_t *req)
{
    size_t n;
    admin_ep_view_t *v = admin_view_collect(a, &n);
    uint64_t now = sl_shared_ms();
    cJSON *arr = cJSON_CreateArray();
    state_cluster_mode_rec_t mode = a->conf.cluster_host ? state_cluster_mode_get(a->conf.state)
                                                         : (state_cluster_mode_rec_t){0, 0, 0};
    size_t nlearned;
    state_event_t *learned = admin_learned_events(a, &nlearned);
    for (size_t i = 0; i < n; i++) {
        cJSON *o = endpoint_json(&v[i], now, learned, nlearned);
        if (a->conf.cluster_host != NULL) {
            cJSON *cl = admin_cluster_scope_json(a, &mode);
            admin_lease_add(a, cl, &v[i].rec, &mode, now);
            cJSON_AddItemToObject(o, "cluster", cl);
        }
        cJSON_AddItemToArray(arr, o);
    }
    free(learned);
    admin_view_free(v, n);
    return admin_send_json(req, 200, arr);
}

typedef struct drain_ctx {
    const pool_endpoint_conf_t *ep;
    const pool_network_conf_t *net;
    int drain;
    uint64_t now;
} drain_ctx_t;

static int drain_cb(void *arg, state_endpoint_rec_t *rec, int exists, state_event_t *events, size_t *nevents)
{
    drain_ctx_t *c = arg;
    (void)exists;
    if (rec->drained == c->drain)
        return 0;
    rec->drained = (uint8_t)c->drain;
    rec->drained_at_ms = c->drain ? c->now : 0;
    state_event_t *ev = &events[0];
    state_event_init(ev, c->drain ? STATE_EVENT_ENDPOINT_DRAINED : STATE_EVENT_ENDPOINT_UNDRAINED, c->net->name,
                     c->ep->id, c->now);
    snprintf(ev->reason, sizeof(ev->reason), "%s by the operator", c->drain ? "drained" : "undrained");
    *nevents = 1;
    return 1;
}

/* Splits "/admin/endpoints/{net}/{id}/{drain|undrain}". */
static int parse_drain_path(h2o_iovec_t path, char *net, char *id, size_t cap, int *drain)
{
    static const char prefix[] = "/admin/endpoints/";
    if (path.len <= sizeof(prefix) - 1 || memcmp(path.base, prefix, sizeof(prefix) - 1) != 0)
        return 0;
    char buf[256];
    size_t len = path.len - (sizeof(prefix) - 1);
    if (len >= sizeof(buf))
        return 0;
    memcpy(buf, path.base + sizeof(prefix) - 1, len);
    buf[len] = '\0';
    char *s1 = strchr(buf, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
    if (s1 == NULL || s2 == NULL || strchr(s2 + 1, '/') != NULL)
        return 0;
    *s1 = *s2 = '\0';
    if (strcmp(s2 + 1, "drain") != 0 && strcmp(s2 + 1, "undrain") != 0)
        return 0;
    *drain = strcmp(s2 + 1, "drain") == 0;
    if (strlen(buf) >= cap || strlen(s1 + 1) >= cap)
        return 0;
    memcpy(net, buf, strlen(buf) + 1);
    memcpy(id, s1 + 1, strlen(s1 + 1) + 1);
    return 1;
}

/* A drain decided by Redis answers when Redis has: the request and the
 * decision each hold the op, the last one frees it. */
typedef struct drain_op {
    h2o_req_t *req;               /* NULL once the request is gone */
    drain_ctx_t c;
    int refs;
} drain_op_t;

typedef struct drain_hold {
    drain_op_t *op;
} drain_hold_t;

static void drain_op_unref(drain_op_t *op)
{
    if (--op->refs == 0)
        free(op);
}

static void drain_hold_dispose(void *p)
{
    drain_op_t *op = ((drain_hold_t *)p)->op;
    op->req = NULL;
    drain_op_unref(op);
}

static void drain_done(void *data, sl_err_t err, int changed, const state_endpoint_rec_t *rec)
{
    drain_op_t *op = data;
    (void)rec;
    const drain_ctx_t *c = &op->c;
    if (err == SL_OK && changed)
        sl_log_info("endpoint %s/%s %s by the operator", c->net->name, c->ep->id, c->drain ? "drained" : "undrained");
    if (op->req != NULL) {
        if (err != SL_OK) {
            admin_send_text(op->req, 500, "application/json", H2O_STRLIT("{\"error\":\"shared state write failed\"}"));
        } else {
            /* the workers see the flag in their next snapshot (at once, with
             * cluster:) and re-check the network's level */
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "network", c->net->name);
            cJSON_AddStringToObject(o, "id", c->ep->id);
            cJSON_AddBoolToObject(o, "drained", c->drain);
            cJSON_AddBoolToObject(o, "changed", changed);
            admin_send_json(op->req, 200, o);
        }
    }
    drain_op_unref(op);
}

int admin_route_drain(admin_t *a, h2o_req_t *req)
{
    char net[128], id[128];
    int drain;
    if (!parse_drain_path(req->path_normalized, net, id, sizeof(net), &drain))
        return admin_send_text(req, 404, "application/json", H2O_STRLIT("{\"error\":\"no such admin route\"}"));
    drain_ctx_t c = {NULL, NULL, drain, sl_shared_ms()};
    for (size_t i = 0; i < a->conf.nnetworks && c.ep == NULL; i++)
        for (size_t e = 0; e < a->conf.networks[i].nendpoints; e++)
            if (strcmp(a->conf.networks[i].name, net) == 0 && strcmp(a->conf.networks[i].endpoints[e].id, id) == 0) {
                c.net = &a->conf.networks[i];
                c.ep = &a->conf.networks[i].endpoints[e];
            }
    if (c.ep == NULL)
        return admin_send_text(req, 404, "application/json", H2O_STRLIT("{\"error\":\"unknown network or endpoint\"}"));
    char key[STATE_KEY_MAX];
    state_key_endpoint(key, sizeof(key), c.net->name, c.ep->id);
    drain_op_t *op = sl_xcalloc(1, sizeof(*op));
    *op = (drain_op_t){req, c, 2};
    drain_hold_t *hold = h2o_mem_alloc_shared(&req->pool, sizeof(*hold), drain_hold_dispose);
    hold->op = op;
    state_endpoint_transition(a->conf.state, key, drain_cb, &op->c, sizeof(op->c), drain_done, op);
    return 0;
}
