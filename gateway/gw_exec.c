/* gateway/gw_exec.c: one client body through the gateway (gw_exec.h), for
 * the HTTP handler and the WebSocket connections alike. */
#include "gateway/gw_exec.h"

#include <stdio.h>
#include <string.h>

#include "base/sl_hash.h"
#include "base/sl_time.h"
#include "gateway/gw_identity.h"
#include "gateway/gw_keylimit.h"
#include "gateway/gw_refuse.h"
#include "gateway/gw_scope.h"
#include "policy/cost.h"

void gw_exec_init(gw_exec_t *x, gw_handler_t *h, const gw_exec_ops_t *ops, h2o_mem_pool_t *mem)
{
    memset(x, 0, sizeof(*x));
    x->h = h;
    x->ops = ops;
    x->mem = mem;
    x->start_us = sl_now_us();
    sl_buf_init(&x->reply.out);
    h->inflight++;
    h->served++;
}

void gw_exec_dispose(gw_exec_t *x)
{
    gw_held_remove(x->h->buffered.held, &x->held);
    gw_limit_wait_cancel(&x->limit_wait);
    pool_call_release(x->call); /* done with it, or the client went away before its answer */
    x->call = NULL;
    pool_split_dispose(x->split);
    x->split = NULL;
    if (x->have_reply)
        gw_reply_dispose(&x->reply);
    else
        sl_buf_dispose(&x->reply.out);
    if (x->charged > 0)
        sl_budget_release(x->h->budget, x->charged);
    x->charged = 0;
    x->h->inflight--;
}

static void *pool_alloc(void *ctx, size_t size)
{
    return h2o_mem_alloc_pool((h2o_mem_pool_t *)ctx, size);
}

static const char *body_of(const gw_exec_t *x)
{
    return x->body != NULL ? x->body : "";
}

void gw_exec_commit(gw_exec_t *x)
{
    gw_reply_t *r = &x->reply;
    if (x->call != NULL && x->call_done && (r->len == 0 || r->body == r->out.base)) {
        /* the reply was assembled in its own buffer: the upstream's answers
         * are not needed while it is written (held once, not twice) */
        pool_call_release(x->call);
        x->call = NULL;
    }
    if (x->h->budget != NULL && r->out.len > 0) {
        x->charged = r->out.len;
        sl_budget_charge(x->h->budget, x->charged);
    }
    x->sent = 1;
}

static void reply(gw_exec_t *x)
{
    x->have_reply = 1;
    x->ops->reply(x);
}

/* The calls answered under the caller's key (each member of a batch). */
static void count_key_calls(gw_exec_t *x)
{
    if (x->key != NULL)
        gw_stats_key_add(x->h->stats, x->key->name, STATE_KEYC_CALLS,
                         x->rpc.kind == GW_RPC_REJECT ? 1 : (uint64_t)x->rpc.nmembers);
}

static size_t exec_sent_held(const gw_held_entry_t *e);
static void refuse_buffered(gw_exec_t *x, gw_buffered_verdict_t v, size_t held, size_t need);

/* A single call's answer size, for the caller's next estimate of its method. */
static void remember_size(gw_exec_t *x, size_t bytes)
{
    if (x->rpc.kind != GW_RPC_SINGLE || x->nitems != 1)
        return;
    char ident[GW_HELD_IDENT_MAX];
    gw_exec_caller(x, ident, sizeof(ident));
    gw_estimate_put(x->h->buffered.estimate, ident, x->rpc.members[0].name, bytes);
}

/* The reply, once the call and its eth_getLogs sub-calls are done (also
 * pool_split's callback). */
static void finish(void *data)
{
    gw_exec_t *x = data;
    size_t held;
    if (!x->call_done || pool_split_pending(x->split))
        return;
    size_t call_held = (x->call != NULL ? pool_call_held(x->call) : 0) + pool_split_held(x->split);
    x->reserved = 0; /* complete: what it holds is known */
    remember_size(x, call_held);
    if (!gw_buffered_keep(&x->h->buffered, &x->held, call_held, exec_sent_held, &held)) {
        pool_call_release(x->call); /* its bytes go now, not after a refusal nobody needs them for */
        x->call = NULL;
        refuse_buffered(x, GW_BUFFERED_SHARE, held, call_held);
        return;
    }
    gw_reply_build(&x->reply, x->body, &x->rpc, x->items, x->item_member, x->nitems, x->call);
    gw_stats_count_request(x->h->stats, x->net->sub.index, &x->rpc, x->items, x->item_member, x->nitems);
    count_key_calls(x);
    reply(x);
}

static void on_call_done(pool_call_t *call, void *data)
{
    gw_exec_t *x = data;
    (void)call;
    x->call_done = 1;
    if (x->over_share) { /* cut while read: its bytes go now */
        size_t need = pool_call_held(x->call);
        gw_held_t *t = x->h->buffered.held;
        pool_call_release(x->call);
        x->call = NULL;
        x->reserved = 0;
        refuse_buffered(x, GW_BUFFERED_SHARE, gw_held_others(t, &x->held, x->h->buffered.real), need);
        return;
    }
    if (x->split != NULL && pool_split_settle(x->split))
        return; /* a refused eth_getLogs went on in halves: finish runs when they are done */
    finish(x);
}

/* What an entry holds in answers, nothing for a call already cut (its
 * bytes go at the next loop turn): the calls that grow together are not all
 * cut for each other's bytes. */
static size_t real_uncut(const gw_held_entry_t *e)
{
    const gw_exec_t *x = (const gw_exec_t *)((const char *)e - offsetof(gw_exec_t, held));
    return x->over_share ? 0 : gw_exec_real(e);
}

void gw_exec_answer_grows(pool_call_t *call, void (*cb)(pool_call_t *, void *), void *cb_data)
{
    if (cb != on_call_done)
        return; /* a subscription's, a split's sub-call: their own bounds */
    gw_exec_t *x = cb_data;
    gw_buffered_t *b = &x->h->buffered;
    if (x->over_share || x->split != NULL || b->budget == NULL || b->share >= b->budget->limit)
        return;
    size_t mine = pool_call_held(call);
    if (mine <= x->reserved || mine <= GW_BUFFERED_SMALL)
        return;
    size_t others = gw_held_others(b->held, &x->held, real_uncut);
    if (others == 0 || others + mine <= b->share)
        return;
    x->over_share = 1;
    gw_stats_srv_add(b->stats, STATE_SRV_SHARE_REFUSED, 1);
    pool_call_cut(call);
}

/* Collects the members that go upstream; returns their number. */
static size_t collect_items(gw_exec_t *x)
{
    gw_rpc_request_t *rpc = &x->rpc;
    const char *body = x->body;
    size_t n = 0;
    for (size_t i = 0; i < rpc->nmembers; i++)
        n += rpc->members[i].status == GW_MEMBER_FORWARD;
    if (n == 0)
        return 0;
    x->items = h2o_mem_alloc_pool(x->mem, n * sizeof(*x->items));
    x->item_member = h2o_mem_alloc_pool(x->mem, n * sizeof(*x->item_member));
    memset(x->items, 0, n * sizeof(*x->items));
    size_t k = 0;
    for (size_t i = 0; i < rpc->nmembers; i++) {
        const gw_member_t *m = &rpc->members[i];
        if (m->status != GW_MEMBER_FORWARD)
            continue;
        pool_item_t *it = &x->items[k];
        it->raw = body + m->raw.off;
        it->raw_len = m->raw.len;
        it->id = m->id.len ? (wire_span_t){m->id.off - m->raw.off, m->id.len} : (wire_span_t){0, 0};
        it->params = m->params.len ? (wire_span_t){m->params.off - m->raw.off, m->params.len} : (wire_span_t){0, 0};
        it->method = m->method;
        it->cheap = m->cheap;
        it->no_cache = x->no_cache;
        it->name = m->name;
        it->name_len = (uint32_t)strlen(m->name);
        x->item_member[k++] = (uint32_t)i;
    }
    return n;
}

/* Cheap reads go to the larger read bucket; anything else, or anything
 * doubtful (a parse error, an invalid or expensive member), to standard. */
static policy_bucket_t choose_bucket(const gw_rpc_request_t *rpc)
{
    if (rpc->kind == GW_RPC_REJECT || rpc->nmembers == 0)
        return POLICY_BUCKET_STANDARD;
    for (size_t i = 0; i < rpc->nmembers; i++)
        if (rpc->members[i].status != GW_MEMBER_FORWARD || !rpc->members[i].cheap)
            return POLICY_BUCKET_STANDARD;
    return POLICY_BUCKET_READ;
}

void gw_exec_caller(const gw_exec_t *x, char *out, size_t cap)
{
    const char *prefix = x->key != NULL ? "key:" : "ip:";
    const char *who = x->key != NULL ? x->key->name : x->ip;
    /* who is terminated (a key name, or ip[]): strlen, then cut to fit */
    size_t p = strlen(prefix), w = strlen(who);
    if (w > cap - p - 1)
        w = cap - p - 1;
    memcpy(out, prefix, p);
    memcpy(out + p, who, w);
    out[p + w] = '\0';
}

/* The id a refusal of the whole body echoes: a single call's. */
static wire_span_t single_id(const gw_exec_t *x)
{
    return x->rpc.kind == GW_RPC_SINGLE ? x->rpc.members[0].id : (wire_span_t){0, 0};
}

static void forward(gw_exec_t *x);
static policy_lease_result_t admit(gw_exec_t *x);

/* cluster: the caller's lease came from Redis (or Redis failed): again */
static void on_admit_wake(gw_limit_wait_t *w)
{
    gw_exec_t *x = H2O_STRUCT_FROM_MEMBER(gw_exec_t, limit_wait, w);
    if (admit(x) == POLICY_LEASE_YES)
        forward(x);
}

/* The key's per_address limit (its visitors: each client address under
 * the key), charged once per request before the key's tier, so one visitor
 * over it spends none of the key's calls: 1 admitted (gw_keylimit.h), 0
 * after answering 429 with data.reason per_address. */
static int admit_address(gw_exec_t *x, policy_bucket_t bucket, uint32_t n)
{
    if (x->key == NULL || x->addr_charged)
        return 1;
    x->addr_charged = 1;
    gw_limit_result_t lim;
    if (gw_keylimit_address(x->h, x->key, x->ip, bucket, n, &lim))
        return 1;
    gw_refuse_per_address(&x->reply, body_of(x), single_id(x), &lim);
    reply(x);
    return 0;
}

/* What the call's forwarded members cost in credits, in the cost profile
 * of the network's first endpoint (flat: 1 a call, if it names none):
 * charged before an endpoint is chosen, so every endpoint costs the same. */
static uint32_t key_cost(const gw_exec_t *x)
{
    const pool_network_conf_t *nc = x->net != NULL ? x->net->sub.conf : NULL;
    const policy_cost_profile_t *p = gw_keylimit_profile(nc);
    uint64_t sum = 0;
    size_t calls = 0;
    for (size_t i = 0; x->rpc.kind != GW_RPC_REJECT && i < x->rpc.nmembers; i++) {
        const gw_member_t *m = &x->rpc.members[i];
        if (m->status != GW_MEMBER_FORWARD)
            continue;
        sum += policy_cost_of(p, nc != NULL ? nc->chain : POLICY_CHAIN_ETHEREUM, NULL, 0, m->name, strlen(m->name)).billed;
        calls++;
    }
    if (calls > 0 && x->rpc.kind == GW_RPC_BATCH)
        sum += p->per_batch;
    return sum > UINT32_MAX ? UINT32_MAX : (uint32_t)sum;
}

/* The key's credits: budget, charged its cost once its tier admitted the
 * call, across every worker: 1 admitted (gw_keylimit.h), 0 after answering
 * 429 key_credits. */
static int admit_credits(gw_exec_t *x)
{
    uint32_t cost = x->key != NULL ? key_cost(x) : 0;
    gw_limit_result_t lim;
    if (gw_keylimit_credits(x->h, x->key, cost, &lim))
        return 1;
    gw_refuse_key_credits(&x->reply, body_of(x), single_id(x), &lim, cost);
    reply(x);
    return 0;
}

/* Charges the caller: YES admitted, NO answered 429 (over its limit), WAIT
 * for a lease from Redis (cluster:; on_admit_wake goes on). */
static policy_lease_result_t admit(gw_exec_t *x)
{
    char ident[GW_EXEC_IDENT_MAX] = "";
    uint32_t n = x->rpc.kind == GW_RPC_REJECT ? 1 : (uint32_t)x->rpc.nmembers;
    const cfg_tier_conf_t *tier = gw_identity_tier(x->h->cfg, x->key);
    policy_bucket_t bucket = choose_bucket(&x->rpc);
    if (!admit_address(x, bucket, n))
        return POLICY_LEASE_NO;
    if (tier != NULL)
        gw_exec_caller(x, ident, sizeof(ident));
    gw_limit_charge(x->h->limit, tier, ident, bucket, n, &x->limit);
    policy_lease_result_t said = x->limit.said;
    if (said == POLICY_LEASE_WAIT)
        gw_limit_wait(x->h->limit, ident, bucket, &x->limit_wait, on_admit_wake);
    if (said == POLICY_LEASE_NO) {
        gw_refuse_limited(&x->reply, body_of(x), single_id(x), &x->limit);
        reply(x);
    }
    if (said == POLICY_LEASE_YES && !admit_credits(x))
        return POLICY_LEASE_NO;
    return said;
}

/* One standard call of the caller's (gw_exec_caller), in tier: 1 to answer
 * the refusal, 0 after answering 429. */
static int charge_refusal(gw_exec_t *x, const cfg_tier_conf_t *tier)
{
    char ident[GW_EXEC_IDENT_MAX] = "";
    if (tier != NULL)
        gw_exec_caller(x, ident, sizeof(ident));
    gw_limit_charge(x->h->limit, tier, ident, POLICY_BUCKET_STANDARD, 1, &x->limit);
    /* cluster: a charge waiting for Redis is not over the limit yet; the
     * request is refused anyway and the lease comes for the next one */
    if (x->limit.said != POLICY_LEASE_NO) {
        x->limit.limited = x->limit.said == POLICY_LEASE_WAIT ? 0 : x->limit.limited;
        return 1;
    }
    gw_refuse_limited(&x->reply, "", (wire_span_t){0, 0}, &x->limit);
    reply(x);
    return 0;
}

int gw_exec_admit_refusal(gw_exec_t *x)
{
    x->key = NULL;
    return charge_refusal(x, x->h->cfg->anonymous_tier);
}

int gw_exec_admit_denied(gw_exec_t *x)
{
    return charge_refusal(x, gw_identity_tier(x->h->cfg, x->key));
}

void gw_exec_refuse_denied(gw_exec_t *x, policy_access_reason_t reason, const char *message)
{
    gw_refuse_denied(&x->reply, "", (wire_span_t){0, 0}, reason, message);
    reply(x);
}

void gw_exec_refuse_jwt(gw_exec_t *x, const char *message)
{
    gw_refuse_jwt(&x->reply, message);
    reply(x);
}

void gw_exec_refuse(gw_exec_t *x, int status, int code, const char *message)
{
    gw_refuse_http(&x->reply, status, code, message);
    reply(x);
}


/* The caller's identity hashed, for its share of the network's depth
 * (pool_network_pressure_for); computed once per call. */
static uint64_t caller_owner(gw_exec_t *x)
{
    if (x->owner == 0) {
        char ident[GW_EXEC_IDENT_MAX];
        gw_exec_caller(x, ident, sizeof(ident));
        x->owner = sl_fnv1a_str(SL_FNV1A_OFFSET, ident) | 1; /* 0 means none */
    }
    return x->owner;
}

/* Under pressure, marks the members the shed order refuses (never a
 * confirmation poll); returns how many. */
static size_t shed(gw_exec_t *x)
{
    const policy_pressure_conf_t *pc = &x->net->sub.conf->pressure;
    if (!pc->enabled || x->rpc.kind == GW_RPC_REJECT)
        return 0;
    if (pool_network_pressure(x->net->sub.pool_net) == POLICY_PRESSURE_OK)
        return 0;
    /* the caller's level: the network's for one at its share of the depth, a step lower below it */
    policy_pressure_level_t level = pool_network_pressure_for(x->net->sub.pool_net, caller_owner(x));
    if (level == POLICY_PRESSURE_OK)
        return 0;
    size_t n = 0;
    for (size_t i = 0; i < x->rpc.nmembers; i++) {
        gw_member_t *m = &x->rpc.members[i];
        if (m->status == GW_MEMBER_FORWARD && policy_pressure_sheds(pc, level, m->method)) {
            m->status = GW_MEMBER_SHED;
            n++;
        }
    }
    x->rpc.shed_level = (uint8_t)level;
    x->rpc.shed_retry_ms = policy_pressure_retry_after_ms(pc, level);
    return n;
}

size_t gw_exec_real(const gw_held_entry_t *e)
{
    const gw_exec_t *x = (const gw_exec_t *)((const char *)e - offsetof(gw_exec_t, held));
    return x->charged + (x->call != NULL ? pool_call_held(x->call) : 0) + pool_split_held(x->split);
}

size_t gw_exec_held(const gw_held_entry_t *e)
{
    const gw_exec_t *x = (const gw_exec_t *)((const char *)e - offsetof(gw_exec_t, held));
    size_t real = gw_exec_real(e);
    return real > x->reserved ? real : x->reserved;
}

/* ... counting only a reply being written (what waits for its client). */
static size_t exec_sent_held(const gw_held_entry_t *e)
{
    const gw_exec_t *x = (const gw_exec_t *)((const char *)e - offsetof(gw_exec_t, held));
    return x->sent ? gw_exec_held(e) : 0;
}

/* 503 for a call refused for want of answer bytes: the worker's, or this
 * caller's share of them (v). */
static void refuse_buffered(gw_exec_t *x, gw_buffered_verdict_t v, size_t held, size_t need)
{
    char msg[400], data[280];
    gw_buffered_refusal(&x->h->buffered, v, held, need, sl_now_ms(), msg, sizeof(msg), data, sizeof(data));
    gw_refuse_buffered(&x->reply, body_of(x), single_id(x), msg, data);
    reply(x);
}

/* What the members going upstream are expected to hold (gw_estimate.h). */
static size_t expected_bytes(const gw_exec_t *x, const char *ident)
{
    if (x->rpc.kind == GW_RPC_REJECT)
        return 0;
    size_t sum = 0;
    for (size_t i = 0; i < x->rpc.nmembers; i++) {
        const gw_member_t *m = &x->rpc.members[i];
        if (m->status == GW_MEMBER_FORWARD)
            sum += gw_estimate_get(x->h->buffered.estimate, ident, m->name, m->method);
    }
    return sum;
}

/* The worker's answer bytes and the caller's share of them (gw_buffered.h),
 * reserved now for what the call is expected to hold: a refused call gets
 * 503 (calls in flight go on); an admitted one is counted under its caller
 * until freed. Returns 0 after answering. */
static int within_budget(gw_exec_t *x)
{
    gw_handler_t *h = x->h;
    char ident[GW_HELD_IDENT_MAX];
    size_t held;
    gw_exec_caller(x, ident, sizeof(ident));
    x->owner = sl_fnv1a_str(SL_FNV1A_OFFSET, ident) | 1; /* caller_owner's, computed once */
    size_t need = expected_bytes(x, ident);
    gw_buffered_verdict_t v = gw_buffered_admit(&h->buffered, ident, need, sl_now_ms(), &held);
    if (v != GW_BUFFERED_ADMIT) {
        refuse_buffered(x, v, held, need);
        return 0;
    }
    x->reserved = need;
    x->held.sock = x->sock;
    gw_held_add(h->buffered.held, &x->held, ident);
    return 1;
}

void gw_exec_run(gw_exec_t *x)
{
    const gw_net_t *net = x->net;
    gw_rpc_limits_t lim = {x->h->cfg->server.max_batch, net->sub.conf->chain, net->blocked, net->nblocked,
                           net->sub.conf->method_overrides, net->sub.conf->nmethod_overrides, x->subscribe_error,
                           net->sub.conf->endpoints, net->sub.conf->nendpoints};
    gw_rpc_parse(body_of(x), x->len, &lim, pool_alloc, x->mem, &x->rpc);
    if (x->refuse_message != NULL) {
        gw_refuse_buffered(&x->reply, body_of(x), single_id(x), x->refuse_message, "{\"scope\":\"connection\"}");
        reply(x);
        return;
    }
    gw_scope_members(x); /* the key's scope, before any budget, limit or upstream */
    if (within_budget(x) && admit(x) == POLICY_LEASE_YES)
        forward(x);
}

/* Charges calls more upstream calls (eth_getLogs sub-calls past the one
 * each item was charged as) to the caller's limits, in its standard bucket
 * (eth_getLogs is no cheap read); 0 if they are refused (x->limit says
 * why). cluster: a charge that must wait for Redis is let through (its
 * lease is asked for, and the next call pays). */
static int charge_more(gw_exec_t *x, uint32_t calls)
{
    const cfg_tier_conf_t *tier = gw_identity_tier(x->h->cfg, x->key);
    if (tier == NULL || calls == 0)
        return 1;
    char ident[GW_EXEC_IDENT_MAX];
    gw_exec_caller(x, ident, sizeof(ident));
    gw_limit_charge(x->h->limit, tier, ident, POLICY_BUCKET_STANDARD, calls, &x->limit);
    return x->limit.said != POLICY_LEASE_NO;
}

static int split_charge(void *data, uint32_t calls)
{
    return charge_more(data, calls);
}

/* The split's plan charged to the caller's limits before any sub-call goes
 * out (its share of answer bytes was reserved at admission): 429 for the
 * whole request when the limit refuses them, else the sub-calls start.
 * Returns 0 after answering. */
static int split_charged(gw_exec_t *x)
{
    size_t jobs;
    if (!charge_more(x, pool_split_planned(x->split, &jobs))) {
        pool_split_dispose(x->split);
        x->split = NULL;
        gw_refuse_limited(&x->reply, body_of(x), single_id(x), &x->limit);
        reply(x);
        return 0;
    }
    pool_split_start(x->split);
    return 1;
}

/* The admitted call: shed by the pressure level, answered by sluice alone,
 * or sent upstream. */
static void forward(gw_exec_t *x)
{
    const gw_net_t *net = x->net;
    size_t nshed = shed(x);
    x->nitems = x->rpc.kind == GW_RPC_REJECT ? 0 : collect_items(x);
    if (x->nitems == 0) {
        gw_reply_build(&x->reply, body_of(x), &x->rpc, NULL, NULL, 0, NULL);
        if (nshed > 0 && x->reply.status != 204) {
            /* nothing went upstream because of the pressure: say when to come back */
            x->reply.status = 503;
            x->reply.outcome = "shed";
            x->reply.retry_after_s = (x->rpc.shed_retry_ms + 999) / 1000;
        }
        gw_stats_count_request(x->h->stats, net->sub.index, &x->rpc, NULL, NULL, 0);
        count_key_calls(x);
        reply(x);
        return;
    }
    uint64_t owner = net->sub.conf->pressure.enabled ? caller_owner(x) : 0;
    pool_item_t *items = x->items;
    size_t nitems = x->nitems;
    x->split_hooks = (pool_split_hooks_t){finish, split_charge, x->h->cfg->server.max_response_bytes};
    if ((x->split = pool_split_take(net->sub.pool_net, x->items, x->nitems, owner, &x->split_hooks, x)) != NULL) {
        if (!split_charged(x))
            return;
        items = pool_split_rest(x->split, &nitems);
    }
    if (nitems == 0) { /* every member went into sub-calls or was refused */
        x->call_done = 1;
        finish(x);
        return;
    }
    for (size_t i = 0; i < nitems && x->traceparent[0] != '\0'; i++)
        items[i].traceparent = x->traceparent;
    x->call = pool_call_start(net->sub.pool_net, items, nitems, x->rpc.kind == GW_RPC_BATCH, owner, on_call_done, x);
}
