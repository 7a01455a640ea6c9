/* pool/pool_chain_call.c: the chain satellite (pool/pool_chain_call.h).
 *
 * At its start a call's items say what they read (policy/blockref.h); the
 * gate then keeps each attempt off an endpoint the chain view knows to be
 * behind that, as long as a fitter endpoint is left for the plan: with none
 * left (the fit one failed, or is busy) a lagging answer beats no answer, and
 * the view lets every endpoint try a block nobody is known to have. Once an
 * attempt is applied, a head answer (eth_blockNumber, getSlot) feeds the
 * view and is replaced by the head the view serves when the two differ. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/sl_time.h"
#include "policy/blockref.h"
#include "policy/logsplit.h"
#include "pool/pool_call_int.h"

/* Adds what one read item names to *c (head: the network's, 0 unknown). */
static void note_item(pool_chain_call_t *c, const pool_network_t *net, pool_item_t *it, int single, uint64_t head)
{
    static const policy_blockref_call_t none; /* routed as naming no block: the node answers the mistake */
    policy_chain_t chain = net->conf->chain;
    const policy_blockref_call_t *read = pool_item_blockref(it, chain);
    policy_blockref_call_t ref = read != NULL ? *read : none;
    if (policy_blockref_deep(&ref, head, net->conf->archive_depth))
        c->deep = 1;
    uint64_t depth = policy_blockref_depth(&ref, head);
    if (depth > c->depth)
        c->depth = depth;
    if (single && ref.from.kind == POLICY_BLOCKREF_NUMBER && ref.at.kind == POLICY_BLOCKREF_NUMBER &&
        ref.from.number <= ref.at.number && ref.at.number - ref.from.number < UINT64_MAX) {
        c->logs_from = ref.from.number; /* from is only set for eth_getLogs */
        c->logs_to = ref.at.number;
        c->logs_span = ref.at.number - ref.from.number + 1;
    }
    if (ref.has_min_context && (!c->has_block || ref.min_context_slot > c->block)) {
        c->has_block = 1;
        c->block = ref.min_context_slot;
    }
    if (ref.at.kind == POLICY_BLOCKREF_NUMBER) {
        if (!c->has_block || ref.at.number > c->block)
            c->block = ref.at.number;
        c->has_block = 1;
        return;
    }
    int latest = ref.at.kind == POLICY_BLOCKREF_NONE ||
                 (ref.at.kind == POLICY_BLOCKREF_TAG &&
                  (ref.at.tag == POLICY_TAG_LATEST || ref.at.tag == POLICY_TAG_PENDING));
    if (latest && !c->latest) {
        c->latest = 1;
        c->kind = chain == POLICY_CHAIN_SOLANA ? (uint8_t)policy_chainview_kind_of(ref.commitment)
                                               : (uint8_t)POLICY_HEAD_LATEST;
    }
}

static void row_start(pool_call_t *call)
{
    pool_chain_call_t c;
    memset(&c, 0, sizeof(c));
    memset(&call->chain, 0, sizeof(call->chain));
    uint64_t head = pool_network_head(call->net);
    for (size_t i = 0; i < call->nitems; i++) {
        if (!call->items[i].method->retry_safe)
            return; /* a call carrying a write goes wherever the plan says */
        note_item(&c, call->net, &call->items[i], call->nitems == 1, head);
    }
    c.gated = c.latest || c.has_block || c.logs_span > 0;
    call->chain = c;
}

/* 1 if endpoint ep has what the call names, as far as the view knows: a
 * head nobody confirms (bit in implausible) is no `latest` to read. */
static int fits(const pool_call_t *call, int ep, uint64_t usable, uint64_t implausible)
{
    const pool_chain_call_t *c = &call->chain;
    const policy_chainview_t *v = &call->net->chain;
    uint32_t logs_max = call->net->endpoints[ep].conf->max_logs_blocks;
    if (c->logs_span > 0 && logs_max != 0 && c->logs_span > logs_max)
        return 0; /* a range wider than it takes: refused there, while another may take it */
    if (c->latest && ((implausible >> ep & 1) || !policy_chainview_latest_ok(v, (uint32_t)ep,
                                                                             (policy_head_kind_t)c->kind,
                                                                             pool_chain_max_lag(call->net), usable)))
        return 0;
    return !c->has_block || policy_chainview_block_ok(v, (uint32_t)ep, c->block, usable);
}

/* 1 if the plan may still send the call to j: what pool_call_plan_next asks
 * (not tried, usable, a free slot), and not sent to in an earlier round. */
static int still_open(const pool_call_t *call, size_t j, uint64_t usable)
{
    const pool_endpoint_t *e = &call->net->endpoints[j];
    return !call->tried[j] && !(call->chain.sent_to >> j & 1) && (usable >> j & 1) &&
           e->link.inflight < e->max_inflight;
}

/* SKIP (ep marked tried, as the loop expects of a skip) when ep lacks what
 * the call names and another endpoint that has it is still open to the call;
 * else GO: a fit endpoint that is full, or failed the call, leaves the
 * others to take it (a skip with nothing left to try would answer
 * "unavailable" without an attempt). */
static pool_gate_t row_gate(pool_call_t *call, int ep, int may_wait)
{
    (void)may_wait;
    pool_network_t *net = call->net;
    if (!call->chain.gated || net->nendpoints > POLICY_CHAINVIEW_MAX_ENDPOINTS)
        return POOL_GATE_GO;
    uint64_t bad;
    uint64_t usable = pool_chain_usable_why(net, sl_shared_ms(), &bad);
    if (fits(call, ep, usable, bad))
        return POOL_GATE_GO;
    for (size_t j = 0; j < net->nendpoints; j++)
        if ((int)j != ep && still_open(call, j, usable) && fits(call, (int)j, usable, bad)) {
            call->tried[ep] = 1;
            return POOL_GATE_SKIP;
        }
    return POOL_GATE_GO;
}

int pool_chain_null_is_behind(const pool_call_t *call, int ep)
{
    const pool_network_t *net = call->net;
    if (!call->chain.has_block || call->nitems != 1 || net->nendpoints > POLICY_CHAINVIEW_MAX_ENDPOINTS)
        return 0;
    uint64_t among = net->nendpoints == 64 ? UINT64_MAX : (UINT64_C(1) << net->nendpoints) - 1;
    return policy_chainview_null_is_behind(&net->chain, (uint32_t)ep, call->chain.block, among);
}

int pool_chain_logs_off_range(const pool_call_t *call, const char *ans, uint32_t len)
{
    wire_envelope_t env;
    if (call->chain.logs_span == 0 || ans == NULL || wire_envelope_scan(ans, len, &env) != SL_OK ||
        env.result.len == 0)
        return 0;
    policy_logs_range_t r = {call->chain.logs_from, call->chain.logs_to};
    return policy_logsplit_check(ans, env.result, r) == SL_ERR_RANGE;
}

static void row_started(pool_call_t *call, int ep, int is_write)
{
    (void)is_write;
    if (ep >= 0 && ep < 64)
        call->chain.sent_to |= UINT64_C(1) << ep;
}

/* The methods whose answer is the endpoint's head. */
static const struct head_method {
    policy_chain_t chain;
    const char *name;
} head_methods[] = {
    {POLICY_CHAIN_ETHEREUM, "eth_blockNumber"},
    {POLICY_CHAIN_SOLANA, "getSlot"},
};

static int is_head_method(policy_chain_t chain, const pool_item_t *it)
{
    for (size_t i = 0; i < sizeof(head_methods) / sizeof(head_methods[0]); i++)
        if (head_methods[i].chain == chain && it->name != NULL && it->name_len == strlen(head_methods[i].name) &&
            memcmp(it->name, head_methods[i].name, it->name_len) == 0)
            return 1;
    return 0;
}

/* The head kind a head method's item reads: Solana's getSlot at its commitment. */
static policy_head_kind_t head_kind(policy_chain_t chain, pool_item_t *it)
{
    if (chain != POLICY_CHAIN_SOLANA)
        return POLICY_HEAD_LATEST;
    const policy_blockref_call_t *ref = pool_item_blockref(it, chain);
    return policy_chainview_kind_of(ref != NULL ? ref->commitment : POLICY_COMMITMENT_DEFAULT);
}

/* Makes {"jsonrpc":"2.0","id":0,"result":<head>} the item's answer (the
 * client's id is spliced over the 0 like any upstream answer's); the
 * endpoint that answered stays its endpoint. */
static void serve(pool_call_t *call, pool_item_t *it, uint64_t head)
{
    static const char lead[] = "{\"jsonrpc\":\"2.0\",\"id\":";
    char num[40];
    if (call->net->conf->chain == POLICY_CHAIN_ETHEREUM)
        snprintf(num, sizeof(num), "\"0x%" PRIx64 "\"", head);
    else
        snprintf(num, sizeof(num), "%" PRIu64, head);
    sl_buf_t b = SL_BUF_INIT;
    sl_buf_append_str(&b, lead);
    sl_buf_append_str(&b, "0,\"result\":");
    sl_buf_append_str(&b, num);
    sl_buf_append_char(&b, '}');
    it->answer_len = (uint32_t)b.len;
    it->answer = pool_call_keep(call, &b);
    it->answer_id = (wire_span_t){sizeof(lead) - 1, 1};
    it->answer_result = (wire_span_t){0, 0};
}

/* An applied attempt at ex's endpoint: each head answer it gave feeds the
 * view, and the client gets the head the view serves. */
static int row_done(pool_call_t *call, pool_exchange_t *ex)
{
    pool_network_t *net = call->net;
    int ep = ex->link->index;
    uint64_t now = sl_shared_ms();
    for (size_t i = 0; i < call->nitems && i < 64; i++) {
        pool_item_t *it = &call->items[i];
        uint64_t answered;
        if (it->state != POOL_ITEM_ANSWERED || it->endpoint != ep || it->verdict != POLICY_VERDICT_SUCCESS ||
            (call->chain.served >> i & 1) || !is_head_method(net->conf->chain, it) ||
            !(it->answer_result.len != 0 ? pool_rank_head_value(it->answer, it->answer_result, &answered)
                                         : pool_rank_parse_head(it->answer, it->answer_len, &answered)))
            continue;
        call->chain.served |= UINT64_C(1) << i;
        policy_head_kind_t kind = head_kind(net->conf->chain, it);
        pool_chain_observe_head(&net->endpoints[ep], kind, answered, now);
        pool_chain_sync(net, now); /* what the other workers served and saw */
        /* an endpoint this call was sent to and that did not answer it is not
         * one to vouch for a head (a killed node's breaker may not be open yet) */
        uint64_t failed_here = call->chain.sent_to & ~(UINT64_C(1) << ep);
        int regressed = 0;
        uint64_t bad;
        uint64_t usable = pool_chain_usable_why(net, now, &bad) & ~failed_here;
        uint64_t hold = net->conf->ranking.max_lag;
        /* a head nobody confirms is not served, nor one from outside the
         * plan (a demoted endpoint's hedge) that no usable head comes near;
         * a floor another worker or host served, or one set by an endpoint
         * now gone or hedged away, is held while the usable endpoints' head
         * is within ranking.max_lag of it (further behind, an endpoint is
         * out of every plan) */
        uint64_t trusted = answered, known = policy_chainview_head(&net->chain, kind, usable);
        if (known != 0 && ((bad >> ep & 1) || (!(usable >> ep & 1) && answered > known + hold)))
            trusted = 0;
        uint64_t head = policy_chainview_serve_head(&net->chain, kind, trusted, usable, hold, &regressed);
        if (head == 0)
            head = answered; /* nothing known to set against it */
        pool_chain_publish(&net->endpoints[ep], kind, answered, now);
        if (head != answered)
            serve(call, it, head);
    }
    return 0;
}

const pool_call_row_t pool_chain_row = {
    .name = "chain",
    .start = row_start,
    .gate = row_gate,
    .started = row_started,
    .done = row_done,
};
