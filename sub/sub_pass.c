/* sub/sub_pass.c: the passthrough source. A kind whose row is
 * marked .pass (newPendingTransactions, Solana's logsSubscribe and
 * programSubscribe) is, on a network with an endpoint that has a ws_url,
 * subscribed to at such an endpoint over its WebSocket (pool/pool.h's
 * pool_wsub_*: one socket per endpoint per worker, shared), and each
 * notification's result is relayed to every subscriber with sluice's own
 * id (sub_notify). sub.c starts it in place of the row's start.
 *
 * Failover: when the subscription is lost (the socket died, stalled, went
 * over a bound, the endpoint's breaker opened or it was drained), the
 * source subscribes again at the first usable ws endpoint in the plan's
 * order, with a subscription_source_changed event (endpoint ids, never
 * URLs). A logsSubscribe {"mentions":[address]} is backfilled from the
 * last signature it told (sub_pass_sol.c: polled, then the live stream,
 * nothing twice); other kinds are not: what the upstream told while no
 * socket was subscribed is not sent. With no usable ws endpoint the client's
 * subscription is kept and the source tries again every poll interval
 * (sub_pass_waiting gauge, sub_pass_unsourced_ms counter) and resumes when
 * one is back. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "sub/sub_int.h"

#define RETRY_SOON_MS 50           /* after a loss: the next endpoint, from the loop */
#define PARAMS_MAX 4096            /* the canonical params' length bound */

typedef struct pass_src {
    sub_source_t *src;
    char *params;                 /* the upstream subscribe's params (JSON array text) */
    pool_wsub_t *w;               /* NULL: none now */
    int endpoint;                 /* where w is (-1: none) */
    int was;                      /* the endpoint before the last loss (-1: none yet) */
    uint64_t unsourced_ms;        /* monotonic: since when without an upstream (0: has one or never had) */
    uint8_t waiting;              /* counted in the waiting gauge */
    uint8_t told_none;            /* the move to none had its event */
    h2o_timeout_entry_t retry;
    sub_pass_sol_t *sol;          /* a logsSubscribe with mentions: backfilled across a failover (else NULL) */
} pass_src_t;

static void attach(pass_src_t *p);

/* ---- the normaliser ----------------------------------------------------- */

/* Sorts an object's members by name, recursively: equal params print equal. */
static void canon(cJSON *v)
{
    if (!cJSON_IsObject(v) && !cJSON_IsArray(v))
        return;
    for (cJSON *c = v->child; c != NULL; c = c->next)
        canon(c);
    if (!cJSON_IsObject(v))
        return;
    cJSON *sorted = NULL;
    while (v->child != NULL) { /* insertion sort: configs have a handful of members */
        cJSON *c = v->child;
        v->child = c->next;
        cJSON **at = &sorted;
        while (*at != NULL && strcmp((*at)->string, c->string) <= 0)
            at = &(*at)->next;
        c->next = *at;
        *at = c;
    }
    cJSON *prev = NULL;
    for (cJSON *c = sorted; c != NULL; c = c->next) {
        c->prev = prev != NULL ? prev : c; /* cJSON: the first's prev is the last */
        prev = c;
    }
    if (sorted != NULL)
        sorted->prev = prev;
    v->child = sorted;
}

const char *sub_pass_params(const cJSON *params, sl_buf_t *key)
{
    const cJSON *first = cJSON_GetArrayItem(params, 0), *second = cJSON_GetArrayItem(params, 1);
    if (!cJSON_IsArray(params) || (!cJSON_IsString(first) && !cJSON_IsObject(first)) ||
        cJSON_GetArraySize(params) > 2 || (second != NULL && !cJSON_IsObject(second)))
        return "invalid params: expected [filter (a string or an object), {config}]";
    cJSON *dup = cJSON_Duplicate(params, 1);
    canon(dup);
    char *text = cJSON_PrintUnformatted(dup);
    cJSON_Delete(dup);
    if (text == NULL || strlen(text) > PARAMS_MAX) {
        free(text);
        return "invalid params: longer than 4096 bytes";
    }
    sl_buf_append_str(key, text);
    free(text);
    return NULL;
}

const char *sub_pass_pending_params(const cJSON *params, sl_buf_t *key)
{
    const cJSON *full = cJSON_GetArrayItem(params, 1);
    if (cJSON_GetArraySize(params) > 2 || (full != NULL && !cJSON_IsBool(full)))
        return "invalid params: newPendingTransactions takes nothing, or true for full transactions";
    if (cJSON_IsTrue(full))
        sl_buf_append_str(key, "true"); /* false and none are the same subscription (hashes) */
    return NULL;
}

const char *sub_pass_upstream(const sub_kind_t *k, const cJSON *params, const char *key, sl_buf_t *out)
{
    if (k->chain == POLICY_CHAIN_ETHEREUM) { /* the kind's name, then what its normaliser kept */
        sl_buf_printf(out, "[\"%s\"%s%s]", k->name, key[0] != '\0' ? "," : "", key);
        return NULL;
    }
    return sub_pass_params(params, out); /* after a row's own (stricter) normaliser too */
}

/* 1 if net has endpoints with a ws_url and every one's socket is full. */
static int pass_full(sub_net_t *net)
{
    size_t sockets;
    return pool_wsub_room(net->pool_net, &sockets) == 0 && sockets > 0;
}

/* 1: passed through (an endpoint with a ws_url is usable, or, for a kind
 * without polling, one is configured: the source waits for it; or every
 * socket is full: params held are shared, new ones refused, not polled); 0:
 * the row's start; -1: neither (refused). */
int sub_pass_served_by(const sub_kind_t *k, sub_net_t *net)
{
    if (k->pass && (sub_pass_usable(net) || (k->start == NULL && sub_pass_configured(net)) ||
                    pass_full(net)))
        return 1;
    return k->start != NULL && k->normalise != NULL ? 0 : -1;
}

/* The subscribe's params checked into key: for a passthrough, the params
 * the upstream is sent. NULL or the -32602 message. */
const char *sub_pass_key(const sub_kind_t *k, const cJSON *params, int pass, sl_buf_t *key)
{
    /* a kind that also polls has its polling's (stricter) normaliser: passed through, the generic one */
    int own = k->normalise != NULL && !(pass && k->start != NULL);
    const char *bad = (own ? k->normalise : sub_pass_params)(params, key);
    sl_buf_append_char(key, '\0');
    if (bad != NULL || !pass)
        return bad;
    sl_buf_t up;
    sl_buf_init(&up);
    bad = sub_pass_upstream(k, params, key->base, &up);
    sl_buf_append_char(&up, '\0');
    sl_buf_dispose(key);
    *key = up;
    return bad;
}

int sub_pass_usable(sub_net_t *net)
{
    return pool_wsub_pick(net->pool_net) >= 0;
}

int sub_pass_configured(const sub_net_t *net)
{
    return pool_wsub_configured(net->pool_net);
}

/* ---- the source --------------------------------------------------------- */

static void sockets_gauge(pass_src_t *p)
{
    sub_count_srv_set(p->src->reg, STATE_SRV_SUB_PASS_SOCKETS, pool_wsub_sockets(p->src->net->pool_net));
}

static void changed_event(pass_src_t *p, const char *from, const char *to)
{
    sub_reg_t *r = p->src->reg;
    const char *net = p->src->net->conf->name;
    sl_log_info("network %s: the %s passthrough moved from endpoint %s to %s (%s)", net, p->src->kind->name, from,
                to, p->sol != NULL ? "backfilled" : "not backfilled");
    state_t *st = sub_state(r);
    if (st == NULL)
        return;
    state_event_t ev;
    state_event_init(&ev, STATE_EVENT_SUBSCRIPTION_SOURCE_CHANGED, net, to, sl_wall_ms());
    snprintf(ev.reason, sizeof(ev.reason), "%s subscriptions: passed through the WebSocket of %s, was %s (%s)",
             p->src->kind->name, to, from,
             p->sol != NULL ? "backfilled from getSignaturesForAddress" : "passthrough: not backfilled");
    if (state_event_append(st, &ev) != SL_OK)
        sl_log_warn("state: could not record the subscription_source_changed event");
}

static void set_waiting(pass_src_t *p, int on)
{
    if (p->waiting == on)
        return;
    p->waiting = (uint8_t)on;
    sub_gauge(p->src->reg, STATE_SRV_SUB_PASS_WAITING, on ? +1 : -1);
    if (!on && p->unsourced_ms != 0) {
        sub_count_srv(p->src->reg, STATE_SRV_SUB_PASS_UNSOURCED_MS, sl_now_ms() - p->unsourced_ms);
        p->unsourced_ms = 0;
    }
}

static void retry_in(pass_src_t *p, uint32_t ms)
{
    if (!h2o_timeout_is_linked(&p->retry))
        h2o_timeout_link(sub_loop(p->src->reg), sub_timeout(p->src->reg, ms), &p->retry);
}

static void on_notify(void *data, const char *result, size_t len)
{
    pass_src_t *p = data;
    if (p->sol != NULL && !sub_pass_sol_live(p->sol, result, len))
        return; /* told already, or held behind a backfill */
    sub_count_srv(p->src->reg, STATE_SRV_SUB_PASS_RELAYED, 1);
    sub_notify(p->src, result, len);
}

static void on_lost(void *data, const char *why)
{
    pass_src_t *p = data;
    sl_log_warn("network %s: the %s passthrough at endpoint %s was lost: %s", p->src->net->conf->name,
                p->src->kind->name, pool_wsub_endpoint_id(p->src->net->pool_net, p->endpoint), why);
    p->w = NULL;
    p->was = p->endpoint;
    p->endpoint = -1;
    p->unsourced_ms = sl_now_ms();
    set_waiting(p, 1);
    sockets_gauge(p);
    retry_in(p, RETRY_SOON_MS); /* never from inside the pool's callback */
}

static const pool_wsub_cbs_t wsub_cbs = {on_notify, on_lost};

/* Subscribes at the first usable ws endpoint, or waits a poll interval. */
static void attach(pass_src_t *p)
{
    sub_net_t *net = p->src->net;
    const sub_kind_t *k = p->src->kind;
    int ep = pool_wsub_pick(net->pool_net);
    const char *why = "no endpoint with a usable ws_url";
    if (ep >= 0)
        p->w = pool_wsub_open(net->pool_net, ep, k->method, p->params, k->unsubscribe, &wsub_cbs, p, &why);
    if (p->w == NULL) {
        if (!p->told_none && p->was >= 0) {
            changed_event(p, pool_wsub_endpoint_id(net->pool_net, p->was), "none");
            p->told_none = 1;
        }
        set_waiting(p, 1);
        if (p->unsourced_ms == 0)
            p->unsourced_ms = sl_now_ms();
        sl_log_debug("network %s: the %s passthrough waits: %s", net->conf->name, k->name, why);
        retry_in(p, sub_poll_ms(net));
        return;
    }
    p->endpoint = ep;
    if (p->was >= 0) {
        sub_pass_sol_moved(p->sol);
        sub_count_srv(p->src->reg, STATE_SRV_SUB_PASS_FAILOVERS, 1);
        changed_event(p, pool_wsub_endpoint_id(net->pool_net, p->was), pool_wsub_endpoint_id(net->pool_net, ep));
    }
    p->told_none = 0;
    set_waiting(p, 0);
    sockets_gauge(p);
}

static void on_retry(h2o_timeout_entry_t *e)
{
    pass_src_t *p = H2O_STRUCT_FROM_MEMBER(pass_src_t, retry, e);
    if (p->w == NULL)
        attach(p);
}

void sub_pass_start(sub_source_t *src)
{
    pass_src_t *p = sl_xcalloc(1, sizeof(*p));
    p->src = src;
    p->params = sl_xstrdup(src->key);
    p->endpoint = p->was = -1;
    p->retry.cb = on_retry;
    src->impl = p;
    sub_gauge(src->reg, STATE_SRV_SUB_PASS_SOURCES, +1);
    p->sol = sub_pass_sol_new(src);
    attach(p);
}

void sub_pass_stop(sub_source_t *src)
{
    pass_src_t *p = src->impl;
    if (p == NULL)
        return;
    if (h2o_timeout_is_linked(&p->retry))
        h2o_timeout_unlink(&p->retry);
    pool_wsub_close(p->w);
    p->w = NULL;
    sub_pass_sol_free(p->sol);
    set_waiting(p, 0);
    sub_gauge(src->reg, STATE_SRV_SUB_PASS_SOURCES, -1);
    sockets_gauge(p);
    free(p->params);
    free(p);
    src->impl = NULL;
}
