/* pool/pool_chain_call.h: the chain satellite: a read goes to an endpoint
 * that has what it names, as the network's chain view knows it
 * (pool_chain.c): a `latest` read (or one naming no block) to an endpoint
 * within max_lag_blocks (Solana: max_lag_slots) of the head, a call naming a
 * block number (Solana: a slot, minContextSlot) to one not known to be below
 * it. Writes are never gated. An eth_blockNumber (Solana: getSlot) answer
 * tells the view that endpoint's head, and the client gets the view's head
 * (policy_chainview_serve_head): never below one already served while an
 * endpoint at it is usable. A single eth_getLogs over numbered blocks goes
 * to an endpoint whose max_logs_blocks takes its span while one is open, and
 * an answer with logs outside its range is a failed attempt. Its row:
 * pool_chain_row. */
#ifndef POOL_CHAIN_CALL_H
#define POOL_CHAIN_CALL_H

#include <stdint.h>

#include "pool/pool.h"

/* What a call names, read once at its start (pool_chain_call.c). */
typedef struct pool_chain_call {
    uint8_t gated;                /* reads only, and one names a block or reads latest */
    uint8_t latest;               /* an item reads latest (or names no block) ... */
    uint8_t kind;                 /* ... at this policy_head_kind_t (Solana: its commitment's) */
    uint8_t has_block;            /* an item names a block number or a minContextSlot ... */
    uint64_t block;               /* ... the highest of them */
    uint64_t served;              /* items (bit i: item i < 64) whose head answer was served */
    uint64_t sent_to;             /* endpoints (bit i) this call's own attempts went to, any round */
    uint64_t logs_from, logs_to;  /* a single eth_getLogs over numbered blocks (logs_span > 0) */
    uint64_t logs_span;           /* ... its blocks: kept off an endpoint whose max_logs_blocks is below it */
    uint8_t deep;                 /* an item reads more than archive_depth below the head
                                     (policy_blockref_deep): the plan puts archive endpoints first */
    uint64_t depth;               /* the deepest block an item names, below the head (policy_blockref_depth;
                                     0: none, or the head unknown): learned depth limits (pool_learn.c) */
} pool_chain_call_t;

/* 1 if a null result from endpoint ep for call (a single item naming a block
 * number) means ep is behind: another endpoint has that block. */
int pool_chain_null_is_behind(const pool_call_t *call, int ep);

/* 1 if ans[0..len) (the response object of call, a single eth_getLogs over
 * numbered blocks) carries a log outside the range it asked for, or out of
 * block order (policy_logsplit_check): the endpoint ignored the range, and
 * the attempt counts as failed (next endpoint). */
int pool_chain_logs_off_range(const pool_call_t *call, const char *ans, uint32_t len);

#endif
