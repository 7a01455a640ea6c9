/* pool/pool_cache_call.c: the cache satellite (pool/pool_cache_call.h).
 *
 * offer: each item is planned (policy_cache_plan, over the network's
 * heights) and looked up; a hit settles the item with the kept answer. If
 * every item hit, the call is answered from the loop (RIDING, then DONE by
 * the deferred finish: a callback never runs inside pool_call_start);
 * otherwise the loop sends the items still pending. done: an item a miss
 * left pending that is now answered is planned again over the answering
 * endpoint's own heights; if that gives the same plan (so the same key) and
 * policy_cache_keep agrees, its answer is stored. stop: the plans go. */
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "pool/pool_call_int.h"
#include "state/state_cache.h"
#include "state/state_cache_redis.h"
#include "wire/json_compact.h"

/* An entry's bytes: this header, then the answer object. */
typedef struct entry_head {
    uint8_t format;
    uint8_t verdict;              /* policy_verdict_t: SUCCESS, or DETERMINISTIC */
    uint8_t zero[2];
    uint32_t id_off, id_len;      /* the id inside the answer */
} entry_head_t;

#define ENTRY_FORMAT 1
#define CACHE_ITEMS_MAX 64

static int enabled(const pool_call_t *call)
{
    return call->net->pool->cache != NULL && !call->carrier;
}

/* SHA-256 of p[0..n) into out, with a digest context kept for the
 * process's life (a worker is one thread): the one-shot SHA256() fetches
 * the algorithm on every call, half its cost on a key this short. */
static void digest(const void *p, size_t n, uint8_t out[POOL_CACHE_KEY_LEN])
{
    static EVP_MD *md;
    static EVP_MD_CTX *ctx;
    if (ctx == NULL) {
        md = EVP_MD_fetch(NULL, "SHA256", NULL);
        ctx = EVP_MD_CTX_new();
        if (md == NULL || ctx == NULL) {
            sl_log_error("cache: SHA-256 is not available from OpenSSL");
            abort();
        }
    }
    unsigned int len = 0;
    if (EVP_DigestInit_ex2(ctx, md, NULL) != 1 || EVP_DigestUpdate(ctx, p, n) != 1 ||
        EVP_DigestFinal_ex(ctx, out, &len) != 1 || len != POOL_CACHE_KEY_LEN) {
        sl_log_error("cache: SHA-256 failed");
        abort();
    }
}

static void key_of(const pool_call_t *call, const pool_item_t *it, const policy_cache_call_t *plan,
                   const uint8_t *hash, uint8_t key[POOL_CACHE_KEY_LEN])
{
    sl_buf_t k;
    sl_buf_init(&k);
    sl_buf_append_str(&k, call->net->conf->name);
    sl_buf_append(&k, "", 1);
    sl_buf_append(&k, it->name, it->name_len);
    sl_buf_append(&k, "", 1);
    wire_span_t params;
    if (pool_item_params(it, &params))
        wire_json_compact(it->raw, params, &k);
    if (plan->plan == POLICY_CACHE_AT_HASH) {
        uint8_t h[8];
        for (int i = 0; i < 8; i++)
            h[i] = (uint8_t)(plan->height >> (56 - 8 * i));
        sl_buf_append(&k, "", 1);
        sl_buf_append(&k, (const char *)h, sizeof(h));
        sl_buf_append(&k, (const char *)hash, 32);
    }
    digest(k.base, k.len, key);
    sl_buf_dispose(&k);
}

/* The plan of item it over heads; 0 if it has none (or no key can be made). */
static int plan_item(pool_call_t *call, pool_item_t *it, policy_cache_heads_t heads, pool_cache_item_t *out)
{
    pool_network_t *net = call->net;
    if (it->method->cache == POLICY_CACHE_NONE || it->no_cache || it->name == NULL)
        return 0;
    static const policy_blockref_call_t none; /* a constant names no block: nothing to read */
    const policy_blockref_call_t *ref = it->method->cache == POLICY_CACHE_STATIC ? &none
                                                                                 : pool_item_blockref(it, net->conf->chain);
    if (ref == NULL)
        return 0; /* the node answers the call's mistake, and nobody keeps it */
    policy_cache_plan(net->conf->chain, it->method, ref, heads, net->pool->cache_unfinalized, &out->plan);
    if (out->plan.plan == POLICY_CACHE_SKIP)
        return 0;
    const uint8_t *hash = NULL;
    /* a head above the ring's top may have replaced any block below it: no
     * hash is vouched for until the new head's block is read
     * (pool_chainprobe_tip_tick) */
    if (out->plan.plan == POLICY_CACHE_AT_HASH &&
        (heads.latest > net->chain.ring_top || (hash = policy_chainview_hash_at(&net->chain, out->plan.height)) == NULL))
        return 0; /* no hash known at that height: nothing to key it by */
    key_of(call, it, &out->plan, hash, out->key);
    return 1;
}

/* The network's heads for the cache: latest as routing sees it (a lead
 * nobody confirms is out of usable), finalized as the endpoints agree on it
 * (policy_chainview_final: never one endpoint's word, never the tip). */
static policy_cache_heads_t network_heads(pool_network_t *net)
{
    uint64_t usable = pool_chain_usable(net, sl_shared_ms());
    return (policy_cache_heads_t){
        policy_chainview_head(&net->chain, POLICY_HEAD_LATEST, usable),
        policy_chainview_final(&net->chain, usable, pool_chain_max_lag(net))};
}

/* Settles it with the entry in b (kept with the call), found in tier
 * (POOL_CACHE_LOCAL or POOL_CACHE_REDIS); 0 if b is no entry. */
static int serve_hit(pool_call_t *call, pool_item_t *it, sl_buf_t *b, uint8_t tier)
{
    entry_head_t h;
    if (b->len < sizeof(h))
        return 0;
    memcpy(&h, b->base, sizeof(h));
    size_t len = b->len - sizeof(h);
    if (h.format != ENTRY_FORMAT || h.verdict >= POLICY_VERDICT_COUNT || (uint64_t)h.id_off + h.id_len > len ||
        len > UINT32_MAX)
        return 0;
    wire_envelope_t env; /* Redis is shared: what comes from it is checked as an answer again */
    if (tier == POOL_CACHE_REDIS && (wire_envelope_scan(b->base + sizeof(h), len, &env) != SL_OK ||
                                     env.id.off != h.id_off || env.id.len != h.id_len))
        return 0;
    const char *base = pool_call_keep(call, b);
    it->cached = tier;
    it->cache_miss = 0;
    pool_item_answer_set(it, &(pool_item_answer_t){.verdict = (policy_verdict_t)h.verdict,
                                                    .answer = base + sizeof(h),
                                                    .answer_len = (uint32_t)len,
                                                    .answer_id = {h.id_off, h.id_len},
                                                    .endpoint = -1});
    return 1;
}

static int row_offer(pool_call_t *call)
{
    if (!enabled(call))
        return 0;
    pool_network_t *net = call->net;
    size_t n = call->nitems < CACHE_ITEMS_MAX ? call->nitems : CACHE_ITEMS_MAX, hits = 0, marked = 0;
    for (size_t i = 0; i < n; i++)
        marked += call->items[i].method->cache != POLICY_CACHE_NONE && !call->items[i].no_cache;
    if (marked == 0)
        return 0; /* most calls: no heads to read, no plan to make */
    policy_cache_heads_t heads = network_heads(net);
    for (size_t i = 0; i < n; i++) {
        pool_item_t *it = &call->items[i];
        pool_cache_item_t plan;
        if (!plan_item(call, it, heads, &plan))
            continue;
        if (call->cache.items == NULL)
            call->cache.items = sl_xcalloc(call->nitems, sizeof(*call->cache.items));
        call->cache.items[i] = plan;
        sl_buf_t b;
        sl_buf_init(&b);
        if (state_cache_get(net->pool->cache, plan.key, &b) == SL_OK && serve_hit(call, it, &b, POOL_CACHE_LOCAL)) {
            hits++;
        } else {
            call->cache.pending |= UINT64_C(1) << i;
            it->cache_miss = POOL_CACHE_MISSED;
            if (plan.plan.plan != POLICY_CACHE_AT_HASH) /* those stay local (pool_cache_call.h) */
                call->cache.remote |= UINT64_C(1) << i;
        }
        sl_buf_dispose(&b);
    }
    if (state_cache_tier(net->pool->cache, NULL) == NULL)
        call->cache.remote = 0;
    if (hits == 0 || hits < call->nitems)
        return 0;
    h2o_timeout_link(net->pool->loop, &net->pool->zero_timeout, &call->defer); /* answered from the loop */
    return 1;
}

/* 1 if two endpoints of the network report a finalized height at or above
 * the one the entry is final at (its plan's height; BY_ANSWER: the block its
 * answer shows). */
static int final_confirmed(pool_network_t *net, const pool_cache_item_t *c, const policy_cache_answer_t *a)
{
    uint64_t n = c->plan.height;
    if (c->plan.plan == POLICY_CACHE_BY_ANSWER && !policy_cache_answer_block(net->conf->chain, a, &n))
        return 0;
    if (n == 0)
        return 1; /* named by hash, or the genesis: final on anybody's word */
    return policy_chainview_final_confirmed(&net->chain, pool_chain_known(net), n);
}

/* The answer of item it (answered by an endpoint) under plan c: stored if
 * that endpoint's heights give the same plan and the keep rule agrees. */
static void keep_item(pool_call_t *call, pool_item_t *it, const pool_cache_item_t *c)
{
    pool_network_t *net = call->net;
    if (it->endpoint < 0 || (size_t)it->endpoint >= net->nendpoints || it->endpoint >= POLICY_CHAINVIEW_MAX_ENDPOINTS)
        return;
    /* the answering endpoint's own heights, no further than the network's:
     * an endpoint that says its height is final does not make it so */
    const policy_chainview_ep_t *e = &net->chain.ep[it->endpoint];
    policy_cache_heads_t net_heads = network_heads(net);
    policy_cache_heads_t own = {e->head[POLICY_HEAD_LATEST], e->head[POLICY_HEAD_FINALIZED]};
    if (own.latest > net_heads.latest)
        own.latest = net_heads.latest;
    if (own.finalized > net_heads.finalized)
        own.finalized = net_heads.finalized;
    pool_cache_item_t again;
    if (!plan_item(call, it, own, &again) || again.plan.plan != c->plan.plan ||
        memcmp(again.key, c->key, sizeof(again.key)) != 0)
        return; /* the endpoint is not as far as the network: its answer may not be final */
    wire_envelope_t env;
    if (wire_envelope_scan(it->answer, it->answer_len, &env) != SL_OK || env.id.len == 0)
        return;
    policy_cache_answer_t a = {.buf = it->answer, .result = env.result,
                               .deterministic = it->verdict == POLICY_VERDICT_DETERMINISTIC};
    if ((env.result.len == 0 && env.error.len == 0) ||
        (it->verdict != POLICY_VERDICT_SUCCESS && it->verdict != POLICY_VERDICT_DETERMINISTIC) ||
        !policy_cache_keep(net->conf->chain, &c->plan, &a, own.finalized))
        return;
    policy_cacheadmit_verdict_t admit = policy_cacheadmit_judge(net->pool->admit, &net->pool->cache_admit, c->key,
                                                                it->answer_len, call->owner, sl_now_ms());
    if (admit != POLICY_CACHEADMIT_KEEP) {
        sl_log_debug("cache: an answer of %s (%u bytes) not kept: %s", net->conf->name, it->answer_len,
                     policy_cacheadmit_name(admit));
        return;
    }
    entry_head_t h = {.format = ENTRY_FORMAT, .verdict = (uint8_t)it->verdict, .id_off = env.id.off,
                      .id_len = env.id.len};
    sl_buf_t b;
    sl_buf_init(&b);
    sl_buf_append(&b, (const char *)&h, sizeof(h));
    sl_buf_append(&b, it->answer, it->answer_len);
    /* a full or failing cache loses an entry, never an answer (the store counts its failures) */
    if (state_cache_put(net->pool->cache, c->key, net->conf->name, b.base, b.len, sl_shared_ms()) != SL_OK)
        sl_log_debug("cache: an answer of %s could not be kept", net->conf->name);
    state_cache_redis_conf_t rc;
    state_cluster_t *cl = state_cache_tier(net->pool->cache, &rc);
    /* only with the generation this call's lookup read: without it, a purge
     * may be missed; and only what two endpoints say is final (other hosts
     * read it for a day), unless the network has one endpoint to ask */
    if (cl != NULL && call->cache.gen_known && c->plan.plan != POLICY_CACHE_AT_HASH &&
        (net->nendpoints == 1 || final_confirmed(net, c, &a)))
        (void)state_cache_redis_put(cl, &rc, c->key, call->cache.gen, b.base, b.len);
    sl_buf_dispose(&b);
}

/* ---- the Redis tier ---- */

/* Every item still asked of Redis gets miss (why: POOL_CACHE_MISSED_*). */
static void remote_missed(pool_call_t *call, uint8_t why)
{
    for (uint64_t p = call->cache.remote; p != 0; p &= p - 1) {
        pool_item_t *it = &call->items[__builtin_ctzll(p)];
        if (it->state == POOL_ITEM_PENDING)
            it->cache_miss = why;
    }
    call->cache.remote = 0;
}

/* Redis answered the lookup: its entries are served and kept locally. */
static void on_remote(void *data, const state_cache_redis_found_t *r)
{
    pool_call_t *call = data;
    pool_network_t *net = call->net;
    call->cache.ask = NULL;
    pool_delay_cancel(&call->cache.wait);
    if (!r->ok) {
        remote_missed(call, POOL_CACHE_MISSED_ERROR);
        pool_call_next(call);
        return;
    }
    call->cache.gen = r->gen;
    call->cache.gen_known = 1;
    size_t k = 0;
    for (uint64_t p = call->cache.remote; p != 0 && k < r->n; p &= p - 1, k++) {
        size_t i = (size_t)__builtin_ctzll(p);
        pool_item_t *it = &call->items[i];
        if (r->bytes[k] == NULL || it->state != POOL_ITEM_PENDING)
            continue;
        const uint8_t *key = call->cache.items[i].key;
        if (state_cache_put(net->pool->cache, key, net->conf->name, r->bytes[k], r->len[k], sl_shared_ms()) != SL_OK)
            sl_log_debug("cache: an answer of %s from Redis could not be kept", net->conf->name);
        sl_buf_t b;
        sl_buf_init(&b);
        sl_buf_append(&b, r->bytes[k], r->len[k]);
        if (serve_hit(call, it, &b, POOL_CACHE_REDIS))
            call->cache.pending &= ~(UINT64_C(1) << i); /* found: nothing to keep */
        sl_buf_dispose(&b);
    }
    call->cache.remote = 0;
    pool_call_next(call); /* every item answered: the call settles; else it goes upstream */
}

static void on_remote_late(pool_delay_t *d)
{
    pool_call_t *call = H2O_STRUCT_FROM_MEMBER(pool_call_t, cache.wait, d);
    state_cache_redis_cancel(call->cache.ask);
    call->cache.ask = NULL;
    remote_missed(call, POOL_CACHE_MISSED_TIMEOUT);
    pool_call_next(call);
}

/* Before the call's first attempt: the items it missed locally are asked
 * of Redis, and the call waits for the answer (at most redis_wait_ms). A
 * hedge never waits (the lookup is over by then anyway). */
static pool_gate_t row_gate(pool_call_t *call, int ep, int may_wait)
{
    (void)ep;
    if (call->cache.remote == 0 || !may_wait || call->cache.ask != NULL)
        return POOL_GATE_GO;
    state_cache_redis_conf_t rc;
    state_cluster_t *cl = state_cache_tier(call->net->pool->cache, &rc);
    uint8_t keys[STATE_CACHE_REDIS_KEYS_MAX][STATE_CACHE_KEY_LEN];
    size_t n = 0;
    for (uint64_t p = call->cache.remote; p != 0 && n < STATE_CACHE_REDIS_KEYS_MAX; p &= p - 1)
        memcpy(keys[n++], call->cache.items[__builtin_ctzll(p)].key, STATE_CACHE_KEY_LEN);
    if (cl == NULL ||
        state_cache_redis_get(cl, call->net->conf->name, keys, n, on_remote, call, &call->cache.ask) != 0) {
        remote_missed(call, POOL_CACHE_MISSED_ERROR); /* Redis is down (or busy): a miss at once */
        return POOL_GATE_GO;
    }
    pool_delay_add(&call->net->pool->t.delays, &call->cache.wait, rc.wait_ms, on_remote_late);
    return POOL_GATE_WAIT;
}

static int row_done(pool_call_t *call, pool_exchange_t *ex)
{
    (void)ex;
    for (uint64_t p = call->cache.pending; p != 0; p &= p - 1) {
        size_t i = (size_t)__builtin_ctzll(p);
        pool_item_t *it = &call->items[i];
        if (it->state == POOL_ITEM_PENDING)
            continue;
        call->cache.pending &= ~(UINT64_C(1) << i);
        if (it->state == POOL_ITEM_ANSWERED)
            keep_item(call, it, &call->cache.items[i]);
    }
    return 0;
}

static void row_stop(pool_call_t *call, pool_call_stop_t why)
{
    state_cache_redis_cancel(call->cache.ask);
    call->cache.ask = NULL;
    call->cache.remote = 0;
    pool_delay_cancel(&call->cache.wait);
    if (why != POOL_CALL_RELEASED)
        return;
    free(call->cache.items);
    call->cache.items = NULL;
    call->cache.pending = 0;
}

const pool_call_row_t pool_cache_row = {
    .name = "cache",
    .offer = row_offer,
    .gate = row_gate,
    .done = row_done,
    .stop = row_stop,
};
