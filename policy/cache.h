/* policy/cache.h: which answers the response cache may keep, and under what.
 *
 * The rule is "never wrong": an answer is kept only when nothing the chain
 * can still do changes it. A method's row says how its answer goes stale
 * (policy_cache_kind_t, a column of policy/method.c); this file decides for
 * one call, given the chain view's heights, whether the cache is looked in
 * and under which block, and, once the answer is back, whether it is kept:
 *   STATIC  the chain's constants (eth_chainId, net_version, getGenesisHash);
 *   BLOCK   the call names a block (policy/blockref.h): kept when it names
 *           it by hash, or by a number at or below `finalized` (eth_getLogs:
 *           both ends); a tag moves, so a tagged call is not kept;
 *   TX      a transaction by hash: looked up always, kept only once the
 *           answer shows its block at or below `finalized`.
 * With cache.unfinalized: head, a BLOCK call above `finalized` (and a
 * `latest` read) is kept under the hash the chain view's ring holds at its
 * height (AT_HASH): a reorg gives that height another hash, and the entry is
 * never found again. Never kept: null (usually "not yet"), an error other
 * than a deterministic one of a finalized block, any answer of a method the
 * tables do not mark. Solana: getTransaction only at the finalized
 * commitment (the default). Pure: no allocation, no I/O. */
#ifndef POLICY_CACHE_H
#define POLICY_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "policy/blockref.h"
#include "policy/method.h"

typedef enum policy_cache_plan {
    POLICY_CACHE_SKIP,            /* not looked up, not kept */
    POLICY_CACHE_FINAL,           /* looked up; kept if policy_cache_keep says so */
    POLICY_CACHE_AT_HASH,         /* looked up and kept under the hash of block `height` (none known: skip) */
    POLICY_CACHE_BY_ANSWER,       /* looked up; kept only if the answer shows a finalized block */
} policy_cache_plan_t;

/* The chain view's heights a plan reads (0: not known yet). */
typedef struct policy_cache_heads {
    uint64_t latest;
    uint64_t finalized;
} policy_cache_heads_t;

typedef struct policy_cache_call {
    policy_cache_plan_t plan;
    uint64_t height;              /* AT_HASH: the block whose hash keys the entry; FINAL: the
                                     highest block it names by number (0: by hash, or none) */
} policy_cache_call_t;

/* The plan for a call of m naming ref (from policy_blockref_extract) on
 * chain, at heads; unfinalized: cache.unfinalized is head. */
void policy_cache_plan(policy_chain_t chain, const policy_method_t *m, const policy_blockref_call_t *ref,
                       policy_cache_heads_t heads, int unfinalized, policy_cache_call_t *out);

/* One answer as the cache judges it. */
typedef struct policy_cache_answer {
    const char *buf;
    wire_span_t result;           /* the result's value (len 0: the answer is an error) */
    uint8_t deterministic;        /* an error: policy/verdict.h judged it deterministic */
} policy_cache_answer_t;

/* 1 if the answer a of a call planned as c may be kept (finalized: the
 * chain view's finalized height now). */
int policy_cache_keep(policy_chain_t chain, const policy_cache_call_t *c, const policy_cache_answer_t *a,
                      uint64_t finalized);

/* 1 and *n: the block a transaction's answer puts it in (Ethereum's
 * "blockNumber", Solana's "slot"); 0 while it has none (pending). */
int policy_cache_answer_block(policy_chain_t chain, const policy_cache_answer_t *a, uint64_t *n);

const char *policy_cache_plan_name(policy_cache_plan_t p);

#endif
