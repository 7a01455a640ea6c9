/* policy/blockref.h: which block a call names.
 *
 * The chain view routes by it (policy/chainview.h): a call for block N is
 * not sent to an endpoint known to be below N, a `latest` read only to an
 * endpoint near the head, Solana's minContextSlot only to an endpoint that
 * reached it. Read from the method and its params bytes with wire/'s
 * scanner, never past params; one table says where each method keeps its
 * block (policy/blockref.c), so a method the table does not know names no
 * block. Pure: no allocation, no I/O; fuzzed through policy_blockref_extract. */
#ifndef POLICY_BLOCKREF_H
#define POLICY_BLOCKREF_H

#include <stddef.h>
#include <stdint.h>

#include "base/sl_err.h"
#include "policy/chain.h"
#include "wire/envelope.h"

typedef enum policy_block_tag {
    POLICY_TAG_LATEST,
    POLICY_TAG_PENDING,
    POLICY_TAG_SAFE,
    POLICY_TAG_FINALIZED,
    POLICY_TAG_EARLIEST,
    POLICY_TAG_COUNT
} policy_block_tag_t;

typedef enum policy_blockref_kind {
    POLICY_BLOCKREF_NONE,         /* no block named */
    POLICY_BLOCKREF_NUMBER,       /* a block number, or a Solana slot */
    POLICY_BLOCKREF_TAG,
    POLICY_BLOCKREF_HASH,
} policy_blockref_kind_t;

typedef struct policy_blockref {
    policy_blockref_kind_t kind;
    uint8_t implicit;             /* TAG latest because an optional param was left out (or null) */
    policy_block_tag_t tag;       /* TAG */
    uint64_t number;              /* NUMBER */
    uint8_t hash[32];             /* HASH */
} policy_blockref_t;

/* Solana's commitment levels, as a config object names them. */
typedef enum policy_commitment {
    POLICY_COMMITMENT_DEFAULT,    /* none named: the node's default (finalized) */
    POLICY_COMMITMENT_PROCESSED,
    POLICY_COMMITMENT_CONFIRMED,
    POLICY_COMMITMENT_FINALIZED,
} policy_commitment_t;

typedef struct policy_blockref_call {
    policy_blockref_t at;         /* the block the call reads; eth_getLogs: toBlock, or its blockHash */
    policy_blockref_t from;       /* eth_getLogs: fromBlock (NONE with a blockHash); NONE for other methods */
    uint8_t has_min_context;      /* Solana: a config object names minContextSlot ... */
    uint64_t min_context_slot;    /* ... this one: the endpoint must have reached it */
    policy_commitment_t commitment; /* Solana: the config object's commitment */
} policy_blockref_call_t;

/* What the call method[0..mlen) with params at span params of buf (len 0:
 * none) names. Ethereum: the block param of eth_getBlockByNumber, eth_call,
 * eth_getBalance, eth_getCode, eth_getStorageAt, eth_getTransactionCount,
 * eth_getProof, eth_getBlockReceipts, eth_feeHistory (newestBlock), ...: a
 * number ("0x1b4", a decimal string or a JSON number), a tag, a 32-byte hash,
 * or an EIP-1898 object ({"blockNumber": ...} / {"blockHash": ...}); an
 * optional one left out (or null) is an implicit `latest`. eth_getLogs:
 * fromBlock and toBlock (each an implicit `latest` when absent) or blockHash.
 * Solana: getBlock's (and getBlockTime's, getBlockCommitment's) slot; any
 * call's config object with minContextSlot or commitment.
 * SL_OK with *out filled (all NONE for a method the table does not know);
 * SL_ERR_PARSE when params are not what the method takes there (a block
 * param of the wrong shape, a number past 2^64, fromBlock beside blockHash,
 * an object key written with escapes): *out is then all NONE and the caller
 * routes as if no block were named (the node answers the call's mistake). */
SL_MUST_CHECK sl_err_t policy_blockref_extract(policy_chain_t chain, const char *method, size_t mlen,
                                               const char *buf, wire_span_t params, policy_blockref_call_t *out);

/* The block number a value of an answer holds (a receipt's "blockNumber", a
 * Solana transaction's "slot"), read as a block param's number is ("0x1b4",
 * a decimal string or a JSON number). SL_ERR_PARSE for anything else (null:
 * a pending transaction; a tag; a hash). */
SL_MUST_CHECK sl_err_t policy_blockref_number(const char *buf, wire_span_t v, uint64_t *n);

/* 1 if the call reads history more than depth blocks below head: a block
 * number (eth_getLogs: its fromBlock too) below head - depth, or `earliest`.
 * head 0 (not known yet): 0. Tags, hashes and no block: 0. */
int policy_blockref_deep(const policy_blockref_call_t *c, uint64_t head, uint32_t depth);

/* How far below head the deepest block the call names is (eth_getLogs: its
 * fromBlock too; `earliest`: head). 0: head unknown, or no block below it. */
uint64_t policy_blockref_depth(const policy_blockref_call_t *c, uint64_t head);

/* An endpoint's archive: key (zero: unset, so a zeroed config is unknown). */
typedef enum policy_archive {
    POLICY_ARCHIVE_UNKNOWN,
    POLICY_ARCHIVE_YES,
    POLICY_ARCHIVE_NO,
} policy_archive_t;

/* Where an endpoint of archive (a policy_archive_t) goes in the plan of a
 * call: 0 first, 1 after the tier-0 ones, -1 never. A deep call
 * (policy_blockref_deep): archive endpoints, then unknown ones, never
 * archive: false; any other call: every endpoint at 0. */
int policy_blockref_archive_tier(int archive, int deep);

/* "latest", "pending", ... ; "unknown" past the enum. */
const char *policy_block_tag_name(policy_block_tag_t tag);

/* For table tests: the i-th row of the table (*chain its chain), or NULL past the end. */
const char *policy_blockref_row(size_t i, policy_chain_t *chain);

#endif
