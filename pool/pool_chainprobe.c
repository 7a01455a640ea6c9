/* pool/pool_chainprobe.c: the chain probe (pool_net.h): each endpoint's
 * safe and finalized heads and its latest block's hashes, for the chain view.
 *
 * The health probe (pool_probe.c) stays eth_blockNumber (getSlot), the
 * cheapest call there is (Alchemy 10 CU against eth_getBlockByNumber's 20),
 * and every test and operator counts on it. This one is one batch, every
 * chain_probe_ms (30 s by default), claimed per host in the endpoint's shared
 * record as the health probe is (with cluster:, by the host holding the
 * endpoint's lease only: pool_lease.c):
 *   Ethereum [eth_getBlockByNumber latest, safe, finalized] (ids 1, 2, 3);
 *   Solana   [getSlot confirmed, finalized] (ids 2, 3).
 * The latest block's hash and parent feed the view's ring; a reorg it shows
 * is read deeper first (the blocks below it the ring holds, up to
 * POOL_CHAIN_WALK, in one batch), so the one `reorg` event has the depth the
 * ring can tell. The event is claimed in the network's chain record by the
 * new tip (state_chain_reorg): whichever workers see the reorg, through
 * their own probe or the shared record (feed), it is counted once, and
 * events are at most one a minute per network, carrying the count folded. An
 * answer that is not one counts for nothing: the health probe judges the
 * endpoint. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "pool/pool_net.h"
#include "wire/txid.h"

#define BLOCK(id, tag)                                                                                  \
    "{\"jsonrpc\":\"2.0\",\"id\":" #id ",\"method\":\"eth_getBlockByNumber\",\"params\":[\"" tag "\",false]}"
#define SLOT(id, c) "{\"jsonrpc\":\"2.0\",\"id\":" #id ",\"method\":\"getSlot\",\"params\":[{\"commitment\":\"" c "\"}]}"
static const char eth_req[] = "[" BLOCK(1, "latest") "," BLOCK(2, "safe") "," BLOCK(3, "finalized") "]";
static const char sol_req[] = "[" SLOT(2, "confirmed") "," SLOT(3, "finalized") "]";
static const char tip_req[] = "[" BLOCK(1, "latest") "]";

/* What one answer said, by head kind (the batch's ids 1..3). */
typedef struct chain_answer {
    uint64_t height[POLICY_HEAD_KIND_COUNT];
    uint8_t has[POLICY_HEAD_KIND_COUNT];
    uint8_t hash[32], parent[32];
    uint8_t has_hash, has_parent;
} chain_answer_t;

/* ---- reading answers ------------------------------------------------------ */

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (char)(c | 0x20);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static int hash_parse(const char *text, uint8_t out[32])
{
    if (strlen(text) != 66 || text[0] != '0' || (text[1] != 'x' && text[1] != 'X'))
        return 0;
    for (size_t i = 0; i < 32; i++) {
        int hi = hex_digit(text[2 + 2 * i]), lo = hex_digit(text[3 + 2 * i]);
        if (hi < 0 || lo < 0)
            return 0;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 1;
}

/* A height: a JSON number (Solana) or a hex string (Ethereum). */
static int height_parse(const char *buf, wire_span_t v, uint64_t *out)
{
    int64_t n;
    char hex[24], *end;
    if (wire_json_kind(buf, v) == WIRE_JSON_NUMBER)
        return wire_json_int64(buf, v, &n) == SL_OK && n > 0 && (*out = (uint64_t)n, 1);
    if (wire_json_string(buf, v, hex, sizeof(hex)) != SL_OK || strncmp(hex, "0x", 2) != 0 || hex[2] == '\0')
        return 0;
    *out = strtoull(hex + 2, &end, 16);
    return *end == '\0' && *out > 0;
}

static int block_hash(const char *buf, wire_span_t block, const char *key, uint8_t out[32])
{
    char text[80];
    wire_span_t v = wire_json_member(buf, block, key);
    return v.len != 0 && wire_json_string(buf, v, text, sizeof(text)) == SL_OK && hash_parse(text, out);
}

/* One member of a batch answer: its id says the kind; a block (object) or a
 * slot (number). A null (no safe block on this chain) says nothing. */
static void member_read(const char *body, wire_span_t item, chain_answer_t *a)
{
    const char *buf = body + item.off;
    wire_envelope_t env;
    int64_t id;
    if (wire_envelope_scan(buf, item.len, &env) != SL_OK || env.result.len == 0 || env.error.len != 0 ||
        wire_json_int64(buf, env.id, &id) != SL_OK || id < 1 || id > POLICY_HEAD_KIND_COUNT)
        return;
    policy_head_kind_t kind = (policy_head_kind_t)(id - 1);
    wire_span_t num = env.result;
    if (wire_json_kind(buf, env.result) == WIRE_JSON_OBJECT)
        num = wire_json_member(buf, env.result, "number");
    if (num.len == 0 || !height_parse(buf, num, &a->height[kind]))
        return;
    a->has[kind] = 1;
    if (kind == POLICY_HEAD_LATEST && wire_json_kind(buf, env.result) == WIRE_JSON_OBJECT) {
        a->has_hash = (uint8_t)block_hash(buf, env.result, "hash", a->hash);
        a->has_parent = (uint8_t)(a->has_hash && block_hash(buf, env.result, "parentHash", a->parent));
    }
}

static void answer_read(const pool_exchange_t *ex, chain_answer_t *a)
{
    memset(a, 0, sizeof(*a));
    wire_span_t items[POOL_CHAIN_WALK + 1];
    size_t n = 0;
    if (ex->fail != POOL_FAIL_NONE || ex->head.status < 200 || ex->head.status >= 300 ||
        wire_envelope_scan_array(pool_exchange_bytes(ex), pool_exchange_len(ex), items, 3, &n) != SL_OK)
        return;
    for (size_t i = 0; i < n; i++)
        member_read(pool_exchange_bytes(ex), items[i], a);
}

/* ---- the view and the reorg ------------------------------------------------ */

/* Feeds one block with its hashes to the view; a reorg it shows lowers
 * *low (0: none yet) to its lowest replaced height, whose old hash goes to old. */
static void block_observe(pool_endpoint_t *ep, uint64_t height, const uint8_t *hash, const uint8_t *parent,
                          int is_head, uint64_t *low, uint8_t old[32])
{
    policy_chainview_t *v = &ep->net->chain;
    uint8_t before[2][32] = {{0}};
    for (int k = 0; k < 2 && (uint64_t)k <= height; k++) {
        const uint8_t *held = policy_chainview_held_at(v, height - (uint64_t)k);
        if (held != NULL)
            memcpy(before[k], held, 32);
    }
    policy_chainview_obs_t obs = {.kind = POLICY_HEAD_LATEST, .height = height, .is_head = (uint8_t)is_head,
                                  .hash = hash, .parent = parent};
    policy_chainview_change_t change;
    policy_chainview_observe(v, (uint32_t)ep->index, &obs, sl_shared_ms(), &change);
    if (change.reorg_depth == 0 || (*low != 0 && change.reorg_height >= *low))
        return;
    *low = change.reorg_height;
    memcpy(old, before[height - change.reorg_height < 2 ? height - change.reorg_height : 0], 32);
}

/* A reorg down to low that led to tip: counted once, whichever worker claims
 * it first; an event and a warning at most once per POOL_REORG_EVENT_MS per
 * network, with the reorgs folded into it since the last one (a stream
 * pushing a new hash every block would otherwise rotate every other event
 * out of the bounded log). */
static void reorg_report(pool_endpoint_t *ep, uint64_t tip, const uint8_t tip_hash[32], uint64_t low,
                         const uint8_t old[32])
{
    pool_network_t *net = ep->net;
    uint64_t top = net->chain.ring_top > tip ? net->chain.ring_top : tip;
    uint32_t depth = (uint32_t)(top - low + 1);
    char tip_hex[67], old_hex[67], new_hex[67];
    wire_hash_hex(tip_hash, tip_hex);
    wire_hash_hex(old, old_hex);
    const uint8_t *now_at = policy_chainview_hash_at(&net->chain, low);
    wire_hash_hex(now_at != NULL ? now_at : tip_hash, new_hex);
    state_chain_reorg_claim_t claim;
    if (net->pool->state == NULL ||
        state_chain_reorg(net->pool->state, net->conf->name, tip, tip_hex, depth, sl_shared_ms(),
                          POOL_REORG_EVENT_MS, &claim) != SL_OK || !claim.first)
        return;
    if (!claim.report) {
        sl_log_debug("network %s: reorg of depth %" PRIu32 " at height %" PRIu64 " (seen at %s): folded into the next "
                     "reorg event", net->conf->name, depth, low, ep->conf->id);
        return;
    }
    state_event_t ev;
    state_event_init(&ev, STATE_EVENT_REORG, net->conf->name, ep->conf->id, sl_shared_ms());
    ev.count = depth;
    ev.duration_ms = claim.folded;
    snprintf(ev.reason, sizeof(ev.reason), "reorg of depth %" PRIu32 " at height %" PRIu64 ": %s replaced by %s",
             depth, low, old_hex, new_hex);
    if (claim.folded > 1) {
        size_t n = strlen(ev.reason);
        snprintf(ev.reason + n, sizeof(ev.reason) - n, " (%" PRIu64 " reorgs since the last reorg event, this one included)",
                 claim.folded);
    }
    sl_log_warn("network %s: %s (seen at %s)", net->conf->name, ev.reason, ep->conf->id);
    if (state_event_append(net->pool->state, &ev) != SL_OK)
        sl_log_warn("network %s: could not record the reorg event", net->conf->name);
}

/* ---- sharing ------------------------------------------------------------- */

static int share_cb(void *arg, state_endpoint_rec_t *rec, int exists, state_event_t *events, size_t *nevents)
{
    const state_endpoint_rec_t *w = arg;
    (void)exists;
    (void)events;
    (void)nevents;
    if (w->safe != 0)
        rec->safe = w->safe;
    if (w->finalized != 0)
        rec->finalized = w->finalized;
    if (w->hash_height != 0) {
        rec->hash_height = w->hash_height;
        memcpy(rec->head_hash, w->head_hash, sizeof(rec->head_hash));
        memcpy(rec->head_parent, w->head_parent, sizeof(rec->head_parent));
    }
    rec->chain_at_ms = w->chain_at_ms;
    return 1;
}

static void chain_share(pool_endpoint_t *ep, state_endpoint_rec_t *w)
{
    state_t *st = ep->net->pool->state;
    state_endpoint_rec_t out;
    int changed = 0;
    w->chain_at_ms = sl_shared_ms();
    if (st == NULL || state_endpoint_update_local(st, ep->health.key, share_cb, w, &changed, &out) != SL_OK)
        return;
    ep->health.shared = out;
    ep->chain_fed_at = out.chain_at_ms; /* this worker's view has it already */
    pool_lease_publish(ep, &out, out.chain_at_ms); /* cluster: the other hosts apply it */
}

/* ---- the probe ------------------------------------------------------------ */

static void on_chain_done(pool_exchange_t *ex);

/* The blocks below low whose hashes the ring holds, in one batch: the reorg
 * may be deeper than the tip's parent showed. 0 if there is none to read. */
static int walk_start(pool_endpoint_t *ep)
{
    sl_buf_t *b = &ep->chain_req;
    sl_buf_reset(b);
    sl_buf_append_char(b, '[');
    size_t n = 0;
    for (uint64_t h = ep->walk_low - 1; h > 0 && h + POOL_CHAIN_WALK >= ep->walk_low; h--) {
        if (policy_chainview_held_at(&ep->net->chain, h) == NULL)
            continue;
        sl_buf_printf(b, "%s{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_getBlockByNumber\","
                         "\"params\":[\"0x%" PRIx64 "\",false]}", n++ ? "," : "", h);
    }
    sl_buf_append_char(b, ']');
    if (n == 0 || ep->net->pool->t.ops->start(&ep->chain_probe, &ep->link, b->base, b->len, 0, on_chain_done, ep) !=
                      POOL_FAIL_NONE)
        return 0;
    ep->chain_probing = ep->chain_walking = 1;
    return 1;
}

static void walk_end(pool_endpoint_t *ep)
{
    reorg_report(ep, ep->walk_tip, ep->walk_tip_hash, ep->walk_low, ep->walk_old);
    chain_share(ep, &ep->walk_rec);
}

/* The walk's blocks (every member is id 1: a block by number) to the view. */
static void walk_read(pool_endpoint_t *ep, const pool_exchange_t *ex)
{
    wire_span_t items[POOL_CHAIN_WALK];
    size_t n = 0;
    const char *body = pool_exchange_bytes(ex);
    if (ex->fail != POOL_FAIL_NONE || ex->head.status < 200 || ex->head.status >= 300 ||
        wire_envelope_scan_array(body, pool_exchange_len(ex), items, POOL_CHAIN_WALK, &n) != SL_OK)
        return;
    for (size_t i = 0; i < n; i++) {
        chain_answer_t a = {0};
        member_read(body, items[i], &a);
        if (a.has[POLICY_HEAD_LATEST] && a.has_hash)
            block_observe(ep, a.height[POLICY_HEAD_LATEST], a.hash, a.has_parent ? a.parent : NULL, 0, &ep->walk_low,
                          ep->walk_old);
    }
}

/* The batch's answer: heads to the view, a reorg read deeper, then shared. */
static void fresh_done(pool_endpoint_t *ep, const chain_answer_t *a)
{
    state_endpoint_rec_t *w = &ep->walk_rec;
    memset(w, 0, sizeof(*w));
    uint64_t now = sl_shared_ms();
    for (int k = POLICY_HEAD_SAFE; k <= POLICY_HEAD_FINALIZED; k++)
        if (a->has[k])
            pool_chain_observe_head(ep, (policy_head_kind_t)k, a->height[k], now);
    w->safe = a->has[POLICY_HEAD_SAFE] ? a->height[POLICY_HEAD_SAFE] : 0;
    w->finalized = a->has[POLICY_HEAD_FINALIZED] ? a->height[POLICY_HEAD_FINALIZED] : 0;
    if (!a->has[POLICY_HEAD_LATEST] || !a->has_hash) {
        chain_share(ep, w);
        return;
    }
    uint64_t tip = a->height[POLICY_HEAD_LATEST];
    w->hash_height = tip;
    wire_hash_hex(a->hash, w->head_hash);
    if (a->has_parent)
        wire_hash_hex(a->parent, w->head_parent);
    ep->walk_low = 0;
    block_observe(ep, tip, a->hash, a->has_parent ? a->parent : NULL, 1, &ep->walk_low, ep->walk_old);
    if (ep->walk_low == 0) {
        chain_share(ep, w);
        return;
    }
    ep->walk_tip = tip;
    memcpy(ep->walk_tip_hash, a->hash, 32);
    if (!walk_start(ep))
        walk_end(ep);
}

/* The answer is read and its body let go before anything else: the walk
 * starts a new exchange on the same struct. */
static void on_chain_done(pool_exchange_t *ex)
{
    pool_endpoint_t *ep = ex->data;
    int walking = ep->chain_walking;
    ep->chain_probing = ep->chain_walking = 0;
    chain_answer_t a;
    if (walking)
        walk_read(ep, ex);
    else
        answer_read(ex, &a);
    pool_exchange_body_dispose(ex);
    if (walking)
        walk_end(ep);
    else if (a.has[POLICY_HEAD_LATEST] || a.has[POLICY_HEAD_SAFE] || a.has[POLICY_HEAD_FINALIZED])
        fresh_done(ep, &a);
}

typedef struct claim_ctx {
    uint64_t now;
    uint32_t every_ms;
} claim_ctx_t;

static int claim_cb(void *arg, state_endpoint_rec_t *rec, int exists, state_event_t *events, size_t *nevents)
{
    claim_ctx_t *c = arg;
    (void)exists;
    (void)events;
    (void)nevents;
    if (rec->breaker != POLICY_BREAKER_CLOSED || rec->drained || rec->chain_next_ms > c->now ||
        rec->rate_limited_until_ms > c->now)
        return 0;
    rec->chain_next_ms = c->now + c->every_ms;
    return 1;
}

void pool_chainprobe_tick(pool_endpoint_t *ep, uint64_t now_ms)
{
    pool_network_t *net = ep->net;
    const state_endpoint_rec_t *r = &ep->health.shared;
    uint32_t every = net->conf->chain_probe_ms;
    if (every == 0 || net->pool->state == NULL || ep->chain_probing || ep->wrong_chain || now_ms < r->chain_next_ms ||
        r->breaker != POLICY_BREAKER_CLOSED || r->drained || now_ms < r->rate_limited_until_ms ||
        !pool_lease_does_job(ep, now_ms)) /* cluster: another host's lease */
        return;
    claim_ctx_t c = {now_ms, every};
    state_endpoint_rec_t rec;
    int changed = 0;
    if (state_endpoint_update_local(net->pool->state, ep->health.key, claim_cb, &c, &changed, &rec) != SL_OK ||
        !changed)
        return;
    ep->health.shared = rec;
    pool_lease_claimed(ep, now_ms);
    int solana = net->conf->chain == POLICY_CHAIN_SOLANA;
    if (net->pool->t.ops->start(&ep->chain_probe, &ep->link, solana ? sol_req : eth_req,
                                solana ? sizeof(sol_req) - 1 : sizeof(eth_req) - 1, 0, on_chain_done,
                                ep) == POOL_FAIL_NONE)
        ep->chain_probing = 1;
}

/* cache.unfinalized: head keys answers by the hashes the ring vouches for,
 * and the pool's cache row serves none while the head is above the ring's
 * top (a block there may have replaced one below). So with it on, worker 1
 * asks for the new head's block once per height the head reaches (one
 * eth_getBlockByNumber per block per host: 20 CU on Alchemy), from a usable
 * endpoint at that head, through the chain probe's exchange: its hashes
 * feed the ring and are shared like the probe's, a reorg they show is read
 * deeper and reported as the probe's would be. */
void pool_chainprobe_tip_tick(pool_network_t *net, uint64_t now_ms)
{
    if (!net->pool->cache_unfinalized || net->pool->slot != 1 || net->pool->state == NULL ||
        net->conf->chain != POLICY_CHAIN_ETHEREUM || net->conf->chain_probe_ms == 0)
        return;
    uint64_t usable = pool_chain_usable(net, now_ms);
    uint64_t head = policy_chainview_head(&net->chain, POLICY_HEAD_LATEST, usable);
    if (head == 0 || head <= net->chain.ring_top || head == net->tip_asked)
        return;
    for (size_t i = 0; i < net->nendpoints && i < POLICY_CHAINVIEW_MAX_ENDPOINTS; i++) {
        pool_endpoint_t *ep = &net->endpoints[i];
        if (!(usable >> i & 1) || ep->chain_probing || ep->wrong_chain || net->chain.ep[i].head[POLICY_HEAD_LATEST] < head)
            continue;
        if (net->pool->t.ops->start(&ep->chain_probe, &ep->link, tip_req, sizeof(tip_req) - 1, 0, on_chain_done, ep) !=
            POOL_FAIL_NONE)
            continue;
        ep->chain_probing = 1;
        net->tip_asked = head;
        return;
    }
}

void pool_chainprobe_feed(pool_endpoint_t *ep, uint64_t now_ms)
{
    const state_endpoint_rec_t *r = &ep->health.shared;
    if (r->chain_at_ms == 0 || r->chain_at_ms == ep->chain_fed_at || ep->wrong_chain)
        return;
    ep->chain_fed_at = r->chain_at_ms;
    if (r->safe != 0)
        pool_chain_observe_head(ep, POLICY_HEAD_SAFE, r->safe, now_ms);
    if (r->finalized != 0)
        pool_chain_observe_head(ep, POLICY_HEAD_FINALIZED, r->finalized, now_ms);
    uint8_t hash[32], parent[32], old[32] = {0};
    if (r->hash_height == 0 || !hash_parse(r->head_hash, hash))
        return;
    uint64_t low = 0;
    int has_parent = hash_parse(r->head_parent, parent);
    block_observe(ep, r->hash_height, hash, has_parent ? parent : NULL, 0, &low, old);
    if (low != 0) /* the worker that probed claimed it first, with its depth: nothing here */
        reorg_report(ep, r->hash_height, hash, low, old);
}

void pool_chainprobe_dispose(pool_endpoint_t *ep)
{
    if (ep->chain_probing)
        ep->net->pool->t.ops->cancel(&ep->chain_probe);
    ep->chain_probing = ep->chain_walking = 0;
    sl_buf_dispose(&ep->chain_req);
}

void pool_chainprobe_observe_tip(pool_endpoint_t *ep, uint64_t height, const char *hash_hex, const char *parent_hex)
{
    uint8_t hash[32], parent[32], old[32] = {0};
    if (ep->wrong_chain)
        return;
    if (hash_hex == NULL || !hash_parse(hash_hex, hash)) {
        pool_chain_observe_head(ep, POLICY_HEAD_LATEST, height, sl_shared_ms());
        return;
    }
    int has_parent = parent_hex != NULL && hash_parse(parent_hex, parent);
    uint64_t low = 0;
    block_observe(ep, height, hash, has_parent ? parent : NULL, 1, &low, old);
    if (low != 0)
        reorg_report(ep, height, hash, low, old);
}

int pool_chainprobe_unconfirmed(const pool_endpoint_t *ep, uint64_t height, const char *hash_hex, const char *parent_hex)
{
    const policy_chainview_t *v = &ep->net->chain;
    uint8_t hash[32], parent[32];
    if (v->ring_top == 0)
        return 0; /* nothing held to differ from */
    if (hash_hex == NULL || !hash_parse(hash_hex, hash))
        return 1; /* a height alone, where the ring holds hashes: whether it is there is read */
    const uint8_t *held = policy_chainview_held_at(v, height);
    if (held != NULL && memcmp(held, hash, 32) != 0)
        return 1; /* another block at a height held */
    const uint8_t *below = height > 0 ? policy_chainview_held_at(v, height - 1) : NULL;
    if (below == NULL)
        return held == NULL; /* a gap above (or below) what the ring holds: its parent cannot be checked */
    return parent_hex == NULL || !hash_parse(parent_hex, parent) || memcmp(below, parent, 32) != 0;
}
