/* sub/sub.c: the subscription registry of one worker (sub.h):
 * subscribe and unsubscribe calls, sluice's ids, fan-in of sources, the
 * bounds, and notifications out to each subscriber. */
#include "sub/sub_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "state/state_counters.h"
#include "wire/rpc_error.h"

#define SUB_PASS_PER_IDENTITY 64 /* distinct passthrough sources a caller holds (POOL_WSPASS_MAX_SUBS / 4) */
#define SUB_PASS_SHARE_DIV 4     /* ... and at most a quarter of the room left and its own */

typedef struct sub {
    sub_client_t *c;
    sub_source_t *src;
    h2o_linklist_t client_link;   /* in c->subs */
    h2o_linklist_t source_link;   /* in src->subs */
    char id[SUB_ID_MAX];              /* as written in JSON: "\"0x…\"" or digits */
    void *hold;                   /* its filter's bytes, held by the edge (NULL: nothing held) */
} sub_t;

/* The filter's bytes (the normalised params its source keeps: a logs
 * filter's addresses and topics) charged by the edge to the worker's held
 * bytes and c's share of them while the subscription lives, from
 * SUB_FILTER_FREE bytes on; each subscriber is charged, as each keeps the
 * source alive. NULL, or the refusal. */
static const char *sub_charge(sub_client_t *c, sub_t *sub, size_t bytes)
{
    if (c->edge == NULL || c->edge->hold == NULL || bytes < SUB_FILTER_FREE)
        return NULL;
    switch (c->edge->hold(c, bytes, &sub->hold)) {
    case SUB_HOLD_OK: return NULL;
    case SUB_HOLD_SHARE: return sub_filter_share_msg;
    default: return sub_filter_budget_msg;
    }
}

static void sub_free(sub_t *sub)
{
    if (sub->hold != NULL)
        sub->c->edge->unhold(sub->hold);
    free(sub);
}

static void source_free(sub_source_t *src);

sub_reg_t *sub_create(h2o_loop_t *loop, const sub_limits_t *limits, const sub_counters_t *counters, state_t *st)
{
    sub_reg_t *r = sl_xcalloc(1, sizeof(*r));
    r->st = st;
    r->loop = loop;
    r->limits = *limits;
    if (counters != NULL)
        r->counters = *counters;
    h2o_linklist_init_anchor(&r->clients);
    h2o_linklist_init_anchor(&r->sources);
    h2o_linklist_init_anchor(&r->follows);
    h2o_linklist_init_anchor(&r->finished);
    h2o_linklist_init_anchor(&r->groups);
    h2o_timeout_init(loop, &r->zero, 0);
    return r;
}

void sub_destroy(sub_reg_t *r)
{
    if (r == NULL)
        return;
    while (!h2o_linklist_is_empty(&r->finished))
        source_free(H2O_STRUCT_FROM_MEMBER(sub_source_t, link, r->finished.next));
    sub_follow_dispose_all(r);
    h2o_timeout_dispose(r->loop, &r->zero);
    for (size_t i = 0; i < r->ntimeouts; i++)
        h2o_timeout_dispose(r->loop, &r->timeouts[i]);
    free(r);
}

/* Subscriptions of src's kind open: the worker's total and the network's. */
static void gauge(sub_reg_t *r, const sub_source_t *src, int delta)
{
    state_srv_counter_t g = src->kind->gauge;
    r->open[g] += (uint64_t)(int64_t)delta;
    sub_count_srv_set(r, g, r->open[g]);
    sub_count_net(r, src->net->index, g, delta);
}

void sub_client_init(sub_client_t *c, sub_reg_t *r, sub_net_t *net, const char *ident, sub_send_fn send,
                     const sub_edge_t *edge)
{
    memset(c, 0, sizeof(*c));
    c->reg = r;
    c->net = net;
    snprintf(c->ident, sizeof(c->ident), "%s", ident);
    c->send = send;
    c->edge = edge;
    h2o_linklist_init_anchor(&c->subs);
    h2o_linklist_insert(&r->clients, &c->link);
}

/* ---- sources ---- */

static void source_free(sub_source_t *src)
{
    if (h2o_timeout_is_linked(&src->reap))
        h2o_timeout_unlink(&src->reap);
    if (h2o_linklist_is_linked(&src->link))
        h2o_linklist_unlink(&src->link);
    if (src->pass)
        sub_pass_stop(src);
    else
        src->kind->stop(src);
    sub_count_net(src->reg, src->net->index, STATE_SUBS_SOURCES + src->kind->gauge, -1);
    free(src->key);
    free(src);
}

static void on_reap(h2o_timeout_entry_t *e)
{
    source_free(H2O_STRUCT_FROM_MEMBER(sub_source_t, reap, e));
}

/* The running source with these params, or NULL. */
static sub_source_t *source_find(sub_reg_t *r, sub_net_t *net, const sub_kind_t *k, const char *key,
                                    int pass)
{
    for (h2o_linklist_t *l = r->sources.next; l != &r->sources; l = l->next) {
        sub_source_t *s = H2O_STRUCT_FROM_MEMBER(sub_source_t, link, l);
        if (s->kind == k && s->net == net && s->pass == pass && s->resume.height == 0 && strcmp(s->key, key) == 0)
            return s;
    }
    return NULL;
}

/* The source with these params, or a new one started (by creator): passed
 * through (sub_pass.c) or the row's start. A held subscription taken over
 * (resume: a position) gets a new one of its own, which goes on from it. */
static sub_source_t *source_get(sub_reg_t *r, sub_net_t *net, const sub_kind_t *k, const char *key,
                                   const char *creator, int pass, const sub_resume_pos_t *resume)
{
    sub_source_t *s = resume->height == 0 ? source_find(r, net, k, key, pass) : NULL;
    if (s != NULL)
        return s;
    s = sl_xcalloc(1, sizeof(*s));
    s->reg = r;
    s->kind = k;
    s->net = net;
    s->key = sl_xstrdup(key);
    snprintf(s->creator, sizeof(s->creator), "%s", creator);
    s->reap.cb = on_reap;
    h2o_linklist_init_anchor(&s->subs);
    h2o_linklist_insert(&r->sources, &s->link);
    s->pass = (uint8_t)pass;
    s->resume = *resume;
    sub_count_net(r, net->index, STATE_SUBS_SOURCES + k->gauge, 1);
    if (pass)
        sub_pass_start(s);
    else
        k->start(s);
    return s;
}

/* The source's creator left it: its charge (ws_max_sources_per_identity)
 * moves to a subscriber still on it, its creator's if one is left. */
static void source_hand_over(sub_source_t *src)
{
    const char *next = NULL;
    for (h2o_linklist_t *l = src->subs.next; l != &src->subs; l = l->next) {
        const char *ident = H2O_STRUCT_FROM_MEMBER(sub_t, source_link, l)->c->ident;
        if (strcmp(ident, src->creator) == 0)
            return;
        if (next == NULL)
            next = ident;
    }
    if (next != NULL)
        snprintf(src->creator, sizeof(src->creator), "%s", next);
}

/* Ends one subscription; its source stops with its last subscriber. */
static void sub_end(sub_t *sub)
{
    sub_source_t *src = sub->src;
    sub_reg_t *r = src->reg;
    h2o_linklist_unlink(&sub->client_link);
    h2o_linklist_unlink(&sub->source_link);
    sub->c->nsubs--;
    src->nsubs--;
    gauge(r, src, -1);
    int creators = strcmp(sub->c->ident, src->creator) == 0;
    sub_free(sub);
    if (src->nsubs == 0)
        source_free(src); /* (a finished source has no subscriptions left to end) */
    else if (creators)
        source_hand_over(src);
}

void sub_client_dispose(sub_client_t *c)
{
    if (!h2o_linklist_is_linked(&c->link))
        return; /* disposed already (the worker's teardown, then the socket's close) */
    while (!h2o_linklist_is_empty(&c->subs)) {
        sub_t *sub = H2O_STRUCT_FROM_MEMBER(sub_t, client_link, c->subs.next);
        sub_resume_hold(c, sub->src); /* held for the caller's return (server.ws_resume) */
        sub_end(sub);
    }
    h2o_linklist_unlink(&c->link);
}

void sub_notify(sub_source_t *src, const char *result, size_t len)
{
    sl_buf_t b;
    sl_buf_init(&b);
    for (h2o_linklist_t *l = src->subs.next; l != &src->subs; l = l->next) {
        sub_t *sub = H2O_STRUCT_FROM_MEMBER(sub_t, source_link, l);
        sl_buf_reset(&b);
        sl_buf_append_str(&b, "{\"jsonrpc\":\"2.0\",\"method\":\"");
        sl_buf_append_str(&b, src->kind->notification);
        sl_buf_append_str(&b, "\",\"params\":{\"subscription\":");
        sl_buf_append_str(&b, sub->id);
        sl_buf_append_str(&b, ",\"result\":");
        sl_buf_append(&b, result, len);
        sl_buf_append_str(&b, "}}");
        sub->c->send(sub->c, b.base, b.len);
    }
    sub_count_net(src->reg, src->net->index, STATE_SRV_SUB_NOTIFICATIONS, src->nsubs);
    sl_buf_dispose(&b);
}

/* Ends src's subscriptions with an error; extra: more members of data (",\"k\":v"), or "". */
static void fail_with(sub_source_t *src, const char *msg, const char *extra)
{
    sl_buf_t b;
    sl_buf_init(&b);
    for (h2o_linklist_t *l = src->subs.next; l != &src->subs; l = l->next) {
        sub_t *sub = H2O_STRUCT_FROM_MEMBER(sub_t, source_link, l);
        sl_buf_reset(&b);
        sl_buf_append_str(&b, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32005,\"message\":");
        sl_buf_append_json_str(&b, msg, strlen(msg));
        sl_buf_append_str(&b, ",\"data\":{\"subscription\":");
        sl_buf_append_str(&b, sub->id);
        sl_buf_append_str(&b, ",\"method\":\"");
        sl_buf_append_str(&b, src->kind->method);
        sl_buf_append_char(&b, '"');
        sl_buf_append_str(&b, extra);
        sl_buf_append_str(&b, "}}}");
        sub->c->send(sub->c, b.base, b.len);
    }
    sl_buf_dispose(&b);
    sub_finish(src);
}

void sub_fail(sub_source_t *src, const char *msg)
{
    fail_with(src, msg, "");
}

void sub_fail_block(sub_source_t *src, const char *msg, const char *reason, uint64_t height,
                       const uint8_t *hash)
{
    sl_buf_t x;
    sl_buf_init(&x);
    sl_buf_printf(&x, ",\"reason\":\"%s\",\"block\":\"0x%" PRIx64 "\"", reason, height);
    if (hash != NULL) {
        sl_buf_append_str(&x, ",\"blockHash\":\"0x");
        for (size_t i = 0; i < 32; i++)
            sl_buf_printf(&x, "%02x", hash[i]);
        sl_buf_append_char(&x, '"');
    }
    sl_buf_append_char(&x, '\0');
    fail_with(src, msg, x.base);
    sl_buf_dispose(&x);
}

void sub_finish(sub_source_t *src)
{
    sub_reg_t *r = src->reg;
    if (h2o_linklist_is_linked(&src->link))
        h2o_linklist_unlink(&src->link); /* a new subscriber starts a new source */
    h2o_linklist_insert(&r->finished, &src->link);
    while (!h2o_linklist_is_empty(&src->subs)) {
        sub_t *sub = H2O_STRUCT_FROM_MEMBER(sub_t, source_link, src->subs.next);
        h2o_linklist_unlink(&sub->client_link);
        h2o_linklist_unlink(&sub->source_link);
        sub->c->nsubs--;
        gauge(r, src, -1);
        sub_free(sub);
    }
    src->nsubs = 0;
    if (!h2o_timeout_is_linked(&src->reap))
        h2o_timeout_link(r->loop, &r->zero, &src->reap);
}

/* ---- calls ---- */

/* Subscriptions of the client's identity in this worker. */
static size_t count_ident(const sub_reg_t *r, const char *ident)
{
    size_t n = 0;
    for (h2o_linklist_t *l = r->clients.next; l != &r->clients; l = l->next) {
        const sub_client_t *o = H2O_STRUCT_FROM_MEMBER(sub_client_t, link, l);
        if (strcmp(o->ident, ident) == 0)
            n += o->nsubs;
    }
    return n;
}

/* Running sources the identity started in this worker (polled: only
 * those polling upstream on their own). */
static size_t count_sources(const sub_reg_t *r, const char *ident, int polled)
{
    size_t n = 0;
    for (h2o_linklist_t *l = r->sources.next; l != &r->sources; l = l->next) {
        const sub_source_t *src = H2O_STRUCT_FROM_MEMBER(sub_source_t, link, l);
        n += strcmp(src->creator, ident) == 0 && (!polled || (src->kind->own_poll && !src->pass));
    }
    return n;
}

/* The over-the-bound message, or NULL. fresh: the subscription would
 * start a new source (joining a running one costs no source); polled: a
 * source that polls upstream on its own every interval, forever, which the
 * caller's rate limit never sees, so its number is bounded per caller. */
static const char *over_bound(const sub_client_t *c, int fresh, int polled)
{
    const sub_limits_t *lim = &c->reg->limits;
    if (c->nsubs >= lim->per_connection)
        return "too many subscriptions on this WebSocket (server.ws_max_subscriptions_per_connection): "
               "unsubscribe first";
    if (count_ident(c->reg, c->ident) >= lim->per_identity)
        return "too many subscriptions for this caller (server.ws_max_subscriptions_per_identity): "
               "unsubscribe first";
    if (fresh && count_sources(c->reg, c->ident, 0) >= lim->sources_per_identity)
        return "too many distinct subscriptions started by this caller (server.ws_max_sources_per_identity): "
               "subscribe to what is already followed, or unsubscribe first";
    if (fresh && polled && count_sources(c->reg, c->ident, 1) >= lim->polled_sources_per_identity)
        return sub_polled_sources_msg;
    return NULL;
}

/* Distinct passthrough sources the caller's subscriptions hold in this
 * worker: each is an upstream subscription, whose sockets have room for
 * POOL_WSPASS_MAX_SUBS; one caller may not take them all. */
static size_t count_ident_pass(sub_reg_t *r, const char *ident)
{
    size_t n = 0;
    uint64_t gen = ++r->mark;
    for (h2o_linklist_t *l = r->clients.next; l != &r->clients; l = l->next) {
        const sub_client_t *o = H2O_STRUCT_FROM_MEMBER(sub_client_t, link, l);
        if (strcmp(o->ident, ident) != 0)
            continue;
        for (h2o_linklist_t *m = o->subs.next; m != &o->subs; m = m->next) {
            sub_source_t *src = H2O_STRUCT_FROM_MEMBER(sub_t, client_link, m)->src;
            if (src->pass && src->mark != gen) { /* counted once: linear in the caller's subscriptions */
                src->mark = gen;
                n++;
            }
        }
    }
    return n;
}

/* Whether a new passthrough source of the caller's may start: NULL, or the
 * -32005 message. The sockets' room is shared by every caller
 * of the worker, so a caller's share of it is a fraction of what is left
 * (counting its own): four callers cannot fill it, and a newcomer still finds
 * room. No room at all refuses rather than answer an id that would wait for
 * a socket and deliver nothing. */
static const char *pass_refusal(sub_client_t *c)
{
    size_t sockets, room = pool_wsub_room(c->net->pool_net, &sockets), mine = count_ident_pass(c->reg, c->ident);
    /* no socket whose address is good: the source waits for one, only the cap applies */
    size_t share = sockets == 0 ? SUB_PASS_PER_IDENTITY : (room + mine) / SUB_PASS_SHARE_DIV;
    if (room == 0 && sockets > 0)
        return sub_pass_room_msg;
    if (mine >= SUB_PASS_PER_IDENTITY || mine >= (share > 0 ? share : 1))
        return sub_pass_share_msg;
    return NULL;
}

static void subscribe(sub_client_t *c, const sub_kind_t *k, const cJSON *params, const char *body,
                      wire_span_t id)
{
    int pass = sub_pass_served_by(k, c->net);
    if (pass < 0) {
        sub_reply_error(c, body, id, WIRE_RPC_METHOD_NOT_FOUND, k->refusal);
        return;
    }
    sl_buf_t key;
    sl_buf_init(&key);
    const char *bad = sub_pass_key(k, params, pass, &key);
    int fresh = bad == NULL && source_find(c->reg, c->net, k, key.base, pass) == NULL;
    const char *over = bad == NULL ? over_bound(c, fresh, k->own_poll && !pass) : NULL;
    if (over == NULL && fresh && pass)
        over = pass_refusal(c);
    if (bad != NULL || over != NULL) {
        if (over != NULL)
            sub_count_net(c->reg, c->net->index, STATE_SRV_SUB_REFUSED, 1);
        sub_reply_error(c, body, id, bad != NULL ? -32602 : WIRE_RPC_LIMIT_EXCEEDED, bad != NULL ? bad : over);
        sl_buf_dispose(&key);
        return;
    }
    sub_t *sub = sl_xcalloc(1, sizeof(*sub));
    over = sub_charge(c, sub, key.len);
    if (over != NULL) {
        sub_count_net(c->reg, c->net->index, STATE_SRV_SUB_REFUSED, 1);
        sub_reply_error(c, body, id, WIRE_RPC_LIMIT_EXCEEDED, over);
        free(sub);
        sl_buf_dispose(&key);
        return;
    }
    sub->c = c;
    sub_new_id(k->id_form, sub->id);
    sub_resume_pos_t resume = {0};
    if (!pass)
        sub_resume_take(c, k, key.base, &resume); /* the same caller's held one: go on from it */
    /* answered before the source may notify (its first call is never synchronous) */
    sub_reply(c, body, id, sub->id);
    sub_source_t *src = source_get(c->reg, c->net, k, key.base, c->ident, pass, &resume);
    sub->src = src;
    h2o_linklist_insert(&c->subs, &sub->client_link);
    h2o_linklist_insert(&src->subs, &sub->source_link);
    c->nsubs++;
    src->nsubs++;
    gauge(c->reg, src, +1);
    sl_buf_dispose(&key);
}

/* The client's subscription whose id is the JSON value v (string or number). */
static sub_t *find_sub(sub_client_t *c, const cJSON *v)
{
    char want[SUB_ID_MAX];
    if (cJSON_IsString(v) && strlen(v->valuestring) < SUB_ID_MAX - 2)
        snprintf(want, sizeof(want), "\"%s\"", v->valuestring);
    else if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 9007199254740992.0)
        snprintf(want, sizeof(want), "%" PRIu64, (uint64_t)v->valuedouble);
    else
        return NULL;
    for (h2o_linklist_t *l = c->subs.next; l != &c->subs; l = l->next) {
        sub_t *sub = H2O_STRUCT_FROM_MEMBER(sub_t, client_link, l);
        if (strcasecmp(sub->id, want) == 0)
            return sub;
    }
    return NULL;
}

static void unsubscribe(sub_client_t *c, const char *method, const cJSON *params, const char *body,
                        wire_span_t id)
{
    const cJSON *v = cJSON_IsArray(params) ? cJSON_GetArrayItem(params, 0) : NULL;
    if (v == NULL || cJSON_GetArraySize(params) != 1) {
        sub_reply_error(c, body, id, -32602, "invalid params: expected [subscription id]");
        return;
    }
    sub_t *sub = find_sub(c, v);
    if (sub != NULL && strcmp(sub->src->kind->unsubscribe, method) != 0)
        sub = NULL; /* Solana: slotUnsubscribe ends only a slot subscription */
    if (sub != NULL)
        sub_end(sub);
    sub_reply(c, body, id, sub != NULL ? "true" : "false");
}

/* The kind a subscribe call names, or NULL (*unsub set for an unsubscribe
 * method of the chain; *unknown set for eth_subscribe of another name). */
static const sub_kind_t *kind_of(policy_chain_t chain, const char *method, const cJSON *params, int *unsub,
                                    int *unknown)
{
    const cJSON *first = cJSON_IsArray(params) ? cJSON_GetArrayItem(params, 0) : NULL;
    *unsub = 0;
    *unknown = 0;
    for (size_t i = 0; i < sub_nkinds; i++) {
        const sub_kind_t *k = &sub_kinds[i];
        if (k->chain != chain)
            continue;
        if (strcmp(k->unsubscribe, method) == 0)
            *unsub = 1;
        if (strcmp(k->method, method) != 0)
            continue;
        if (strcmp(k->method, k->name) == 0) /* Solana: the method is the kind */
            return k;
        *unknown = 1;
        if (cJSON_IsString(first) && strcmp(first->valuestring, k->name) == 0)
            return k;
    }
    return NULL;
}

int sub_message(sub_client_t *c, const char *body, size_t len)
{
    wire_envelope_t env;
    char method[WIRE_RPC_METHOD_MAX];
    /* anything not a well-formed call is gw_exec's to answer (its errors are the HTTP path's) */
    if (wire_envelope_scan(body, len, &env) != SL_OK || env.method.len == 0 ||
        env.jsonrpc.len != 5 || memcmp(body + env.jsonrpc.off, "\"2.0\"", 5) != 0 ||
        wire_json_string(body, env.method, method, sizeof(method)) != SL_OK)
        return 0;
    policy_chain_t chain = c->net->conf->chain;
    int unsub, unknown;
    /* a cheap look first: most messages are not subscription calls */
    kind_of(chain, method, NULL, &unsub, &unknown);
    if (!unsub && !unknown && strstr(method, "ubscribe") == NULL)
        return 0;
    cJSON *params = env.params.len != 0 ? cJSON_ParseWithLength(body + env.params.off, env.params.len) : NULL;
    const sub_kind_t *k = kind_of(chain, method, params, &unsub, &unknown);
    if (k == NULL && !unsub && !unknown) {
        cJSON_Delete(params);
        return 0; /* not ours: gw_exec answers it (-32601 for a method of another chain) */
    }
    if ((env.id.len == 0 && k != NULL) || (c->edge != NULL && c->edge->admit != NULL && !c->edge->admit(c, body, len, env.id))) {
        cJSON_Delete(params);
        return 1; /* a subscribe notification is none (nobody could name it); over the caller's
                     rate limit: answered */
    }
    if (env.params.len != 0 && !cJSON_IsArray(params))
        sub_reply_error(c, body, env.id, -32602, "invalid params: expected an array");
    else if (k != NULL)
        subscribe(c, k, params, body, env.id);
    else if (unsub)
        unsubscribe(c, method, params, body, env.id);
    else
        sub_reply_error(c, body, env.id, -32602,
              "invalid params: eth_subscribe serves \"newHeads\", \"logs\" and \"newPendingTransactions\"");
    cJSON_Delete(params);
    return 1;
}
