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
    if (out->plan.plan == POLICY_CACHE_AT_HASH && (hash = policy_chainview_hash_at(&net->chain, out->plan.height)) == NULL)
        return 0; /* no hash known at that height: nothing to key it by */
    key_of(call, it, &out->plan, hash, out->key);
    return 1;
}

static policy_cache_heads_t network_heads(pool_network_t *net)
{
    uint64_t usable = pool_chain_usable(net, sl_shared_ms());
    return (policy_cache_heads_t){policy_chainview_head(&net->chain, POLICY_HEAD_LATEST, usable),
                                  policy_chainview_head(&net->chain, POLICY_HEAD_FINALIZED, usable)};
}

/* Settles it with the entry in b (kept with the call); 0 if b is no entry. */
static int serve_hit(pool_call_t *call, pool_item_t *it, sl_buf_t *b)
{
    entry_head_t h;
    if (b->len < sizeof(h))
        return 0;
    memcpy(&h, b->base, sizeof(h));
    size_t len = b->len - sizeof(h);
    if (h.format != ENTRY_FORMAT || h.verdict >= POLICY_VERDICT_COUNT || (uint64_t)h.id_off + h.id_len > len ||
        len > UINT32_MAX)
        return 0;
    const char *base = pool_call_keep(call, b);
    it->answer = base + sizeof(h);
    it->answer_len = (uint32_t)len;
    it->answer_id = (wire_span_t){h.id_off, h.id_len};
    it->verdict = (policy_verdict_t)h.verdict;
    it->endpoint = -1;
    it->cached = 1;
    pool_item_settle(it, POOL_ITEM_ANSWERED);
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
        if (state_cache_get(net->pool->cache, plan.key, &b) == SL_OK && serve_hit(call, it, &b)) {
            hits++;
        } else {
            call->cache.pending |= UINT64_C(1) << i;
            it->cache_miss = 1;
        }
        sl_buf_dispose(&b);
    }
    if (hits == 0 || hits < call->nitems)
        return 0;
    h2o_timeout_link(net->pool->loop, &net->pool->zero_timeout, &call->defer); /* answered from the loop */
    return 1;
}

/* The answer of item it (answered by an endpoint) under plan c: stored if
 * that endpoint's heights give the same plan and the keep rule agrees. */
static void keep_item(pool_call_t *call, pool_item_t *it, const pool_cache_item_t *c)
{
    pool_network_t *net = call->net;
    if (it->endpoint < 0 || (size_t)it->endpoint >= net->nendpoints || it->endpoint >= POLICY_CHAINVIEW_MAX_ENDPOINTS)
        return;
    const policy_chainview_ep_t *e = &net->chain.ep[it->endpoint];
    policy_cache_heads_t own = {e->head[POLICY_HEAD_LATEST], e->head[POLICY_HEAD_FINALIZED]};
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
    entry_head_t h = {.format = ENTRY_FORMAT, .verdict = (uint8_t)it->verdict, .id_off = env.id.off,
                      .id_len = env.id.len};
    sl_buf_t b;
    sl_buf_init(&b);
    sl_buf_append(&b, (const char *)&h, sizeof(h));
    sl_buf_append(&b, it->answer, it->answer_len);
    /* a full or failing cache loses an entry, never an answer (the store counts its failures) */
    if (state_cache_put(net->pool->cache, c->key, net->conf->name, b.base, b.len, sl_shared_ms()) != SL_OK)
        sl_log_debug("cache: an answer of %s could not be kept", net->conf->name);
    sl_buf_dispose(&b);
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
    if (why != POOL_CALL_RELEASED)
        return;
    free(call->cache.items);
    call->cache.items = NULL;
    call->cache.pending = 0;
}

const pool_call_row_t pool_cache_row = {
    .name = "cache",
    .offer = row_offer,
    .done = row_done,
    .stop = row_stop,
};
