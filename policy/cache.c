/* policy/cache.c: the response cache's plan per call and its keep rule
 * (policy/cache.h). */
#include "policy/cache.h"

#include <string.h>

static const char *const plan_names[] = {"skip", "final", "at_hash", "by_answer"};

const char *policy_cache_plan_name(policy_cache_plan_t p)
{
    return (unsigned)p < sizeof(plan_names) / sizeof(plan_names[0]) ? plan_names[p] : "unknown";
}

/* The highest block a BLOCK call reads, if it names blocks by number (or
 * `earliest`, block 0): eth_getLogs reads fromBlock..toBlock, the others
 * their one block. 0 if it names a moving tag. */
static int highest_number(const policy_blockref_call_t *ref, uint64_t *hi)
{
    const policy_blockref_t *at = &ref->at, *from = &ref->from;
    int at_fixed = at->kind == POLICY_BLOCKREF_NUMBER ||
                   (at->kind == POLICY_BLOCKREF_TAG && at->tag == POLICY_TAG_EARLIEST);
    int from_fixed = from->kind == POLICY_BLOCKREF_NONE || from->kind == POLICY_BLOCKREF_NUMBER ||
                     (from->kind == POLICY_BLOCKREF_TAG && from->tag == POLICY_TAG_EARLIEST);
    if (!at_fixed || !from_fixed)
        return 0;
    *hi = at->kind == POLICY_BLOCKREF_NUMBER ? at->number : 0;
    if (from->kind == POLICY_BLOCKREF_NUMBER && from->number > *hi)
        *hi = from->number; /* a backwards range: the node answers it; key it by its highest block */
    return 1;
}

/* `latest` named or left implicit, at both ends of a range. */
static int reads_latest(const policy_blockref_call_t *ref)
{
    const policy_blockref_t *at = &ref->at, *from = &ref->from;
    int at_latest = at->kind == POLICY_BLOCKREF_TAG && at->tag == POLICY_TAG_LATEST;
    int from_ok = from->kind == POLICY_BLOCKREF_NONE ||
                  (from->kind == POLICY_BLOCKREF_TAG && from->tag == POLICY_TAG_LATEST);
    return at_latest && from_ok;
}

static void block_plan(const policy_blockref_call_t *ref, policy_cache_heads_t heads, int unfinalized,
                       policy_cache_call_t *out)
{
    uint64_t hi;
    if (ref->at.kind == POLICY_BLOCKREF_HASH) {
        out->plan = POLICY_CACHE_FINAL; /* a block's hash names its contents for ever */
        return;
    }
    if (highest_number(ref, &hi)) {
        if (heads.finalized != 0 && hi <= heads.finalized) {
            out->plan = POLICY_CACHE_FINAL;
            out->height = hi;
        } else if (unfinalized && heads.latest != 0 && hi <= heads.latest) {
            out->plan = POLICY_CACHE_AT_HASH;
            out->height = hi;
        }
        return;
    }
    if (unfinalized && heads.latest != 0 && reads_latest(ref)) {
        out->plan = POLICY_CACHE_AT_HASH; /* valid while the head is this block */
        out->height = heads.latest;
    }
}

void policy_cache_plan(policy_chain_t chain, const policy_method_t *m, const policy_blockref_call_t *ref,
                       policy_cache_heads_t heads, int unfinalized, policy_cache_call_t *out)
{
    *out = (policy_cache_call_t){.plan = POLICY_CACHE_SKIP};
    switch ((policy_cache_kind_t)m->cache) {
    case POLICY_CACHE_STATIC:
        out->plan = POLICY_CACHE_FINAL;
        return;
    case POLICY_CACHE_TX:
        /* Solana: a transaction seen at processed or confirmed may still be dropped */
        if (chain == POLICY_CHAIN_SOLANA && ref->commitment != POLICY_COMMITMENT_DEFAULT &&
            ref->commitment != POLICY_COMMITMENT_FINALIZED)
            return;
        out->plan = POLICY_CACHE_BY_ANSWER;
        return;
    case POLICY_CACHE_BLOCK:
        block_plan(ref, heads, unfinalized, out);
        return;
    case POLICY_CACHE_NONE:
    default:
        return;
    }
}

/* The block a transaction's answer puts it in: Ethereum's "blockNumber"
 * (null while pending), Solana's "slot". */
int policy_cache_answer_block(policy_chain_t chain, const policy_cache_answer_t *a, uint64_t *n)
{
    wire_span_t v = wire_json_member(a->buf, a->result, chain == POLICY_CHAIN_SOLANA ? "slot" : "blockNumber");
    return v.len != 0 && policy_blockref_number(a->buf, v, n) == SL_OK;
}

int policy_cache_keep(policy_chain_t chain, const policy_cache_call_t *c, const policy_cache_answer_t *a,
                      uint64_t finalized)
{
    if (c->plan == POLICY_CACHE_SKIP)
        return 0;
    if (a->result.len == 0) /* an error: only one no node can answer otherwise, of a block that cannot change */
        return c->plan == POLICY_CACHE_FINAL && a->deterministic;
    if (a->result.len == 4 && memcmp(a->buf + a->result.off, "null", 4) == 0)
        return 0; /* "not found", which is usually "not yet" */
    if (c->plan != POLICY_CACHE_BY_ANSWER)
        return 1;
    uint64_t n;
    return finalized != 0 && policy_cache_answer_block(chain, a, &n) && n <= finalized;
}
