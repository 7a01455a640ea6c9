/* policy/logsplit.h: an eth_getLogs over more blocks than an endpoint takes,
 * as sub-ranges sent apart and one answer put back together.
 *
 * Providers cap the blocks one eth_getLogs may span (Infura and QuickNode
 * 10,000, Alchemy 10 on its free tier) and word the refusal each their own way
 * (policy/verdict.h, POLICY_VERDICT_F_LOGS_RANGE). A range wider than the
 * endpoint's max_logs_blocks is planned as consecutive sub-ranges of at most
 * that many blocks, at most max_logs_split of them (a wider call is refused
 * with -32005 naming the limit, so one request cannot cost thousands of
 * credits); each sub-call's params are the client's filter with only
 * fromBlock and toBlock replaced; the answers are merged in block order.
 *
 * The merge rule: one node asked for the whole range answers one JSON array
 * of the logs of every block, in block order, written compactly (geth,
 * Erigon, reth and Nethermind put no whitespace between elements). The
 * sub-ranges are consecutive and in order, so the merged answer is "[" +
 * the elements of every non-empty sub-answer, each byte for byte, joined by
 * "," + "]": the bytes that node would have sent. policy_logsplit_check makes
 * sure each sub-answer keeps to its sub-range in order before it is merged.
 * Pure: no allocation (the caller gives the buffers), no I/O. */
#ifndef POLICY_LOGSPLIT_H
#define POLICY_LOGSPLIT_H

#include <stddef.h>
#include <stdint.h>

#include "base/sl_err.h"
#include "wire/envelope.h"

/* The JSON-RPC error a call past max_logs_split gets (EIP-1474 "limit exceeded"). */
#define POLICY_LOGSPLIT_TOO_WIDE_CODE (-32005)
/* What policy_logsplit_params adds to the client's params at most. */
#define POLICY_LOGSPLIT_PARAMS_EXTRA 96

typedef struct policy_logs_range {
    uint64_t from, to;            /* inclusive */
} policy_logs_range_t;

typedef enum policy_logsplit_plan {
    POLICY_LOGSPLIT_ONE,          /* fits one call (out[0] is the range) */
    POLICY_LOGSPLIT_SPLIT,        /* *n sub-ranges, in block order */
    POLICY_LOGSPLIT_TOO_WIDE,     /* needs more than max_split: refuse with -32005 */
    POLICY_LOGSPLIT_BACKWARDS,    /* from > to: not ours to judge; send it whole, the node answers */
} policy_logsplit_plan_t;

/* Plans [from, to] for an endpoint taking at most max_blocks blocks per call
 * (0: no limit) with at most max_split sub-calls (0 reads as 1). out has room
 * for cap ranges; the plan uses at most min(max_split, cap), so cap should
 * be at least max_split. *n gets the ranges written (0 unless ONE/SPLIT). */
policy_logsplit_plan_t policy_logsplit_plan(uint64_t from, uint64_t to, uint32_t max_blocks, uint32_t max_split,
                                            policy_logs_range_t *out, size_t cap, size_t *n);

/* The -32005 message for a TOO_WIDE plan, naming the range, the endpoint's
 * block limit and max_logs_split, NUL-terminated in out[0..cap). Returns the
 * length it wanted (as snprintf). */
size_t policy_logsplit_too_wide_message(char *out, size_t cap, uint64_t from, uint64_t to, uint32_t max_blocks,
                                        uint32_t max_split);

/* The params of the sub-call for r: the client's params at span params of
 * buf (`[filter]`) with fromBlock and toBlock set to r (as "0x..." numbers)
 * and every other member of the filter byte for byte, in its order. out
 * needs params.len + POLICY_LOGSPLIT_PARAMS_EXTRA bytes. SL_ERR_PARSE if
 * params are not one filter object (or it has a blockHash, or a key written
 * with escapes); SL_ERR_TOO_LARGE if cap is short. */
SL_MUST_CHECK sl_err_t policy_logsplit_params(const char *buf, wire_span_t params, policy_logs_range_t r, char *out,
                                              size_t cap, size_t *len);

/* SL_OK if the result at span result of buf is an array of log objects
 * whose blockNumber lies in r, in non-decreasing order (what the merge rule
 * relies on); SL_ERR_RANGE if one is out of r or out of order (an endpoint
 * that ignored the range); SL_ERR_PARSE if it is no such array. */
SL_MUST_CHECK sl_err_t policy_logsplit_check(const char *buf, wire_span_t result, policy_logs_range_t r);

/* One sub-answer's result array. */
typedef struct policy_logsplit_part {
    const char *buf;
    wire_span_t result;
} policy_logsplit_part_t;

/* The bytes the merge of parts[0..n) (in block order) takes. SL_ERR_PARSE if
 * a part is not an array. */
SL_MUST_CHECK sl_err_t policy_logsplit_merge_size(const policy_logsplit_part_t *parts, size_t n, size_t *size);

/* Writes the merged array into out[0..cap) (not NUL-terminated); *len its
 * length. SL_ERR_PARSE as above, SL_ERR_TOO_LARGE if cap is short. */
SL_MUST_CHECK sl_err_t policy_logsplit_merge(const policy_logsplit_part_t *parts, size_t n, char *out, size_t cap,
                                             size_t *len);

/* The built-in max_logs_blocks of a cost profile ("alchemy", ...; 0: no
 * limit, also for a name no row has). The table, with the source of each
 * value, is in policy/logsplit.c. */
uint32_t policy_logsplit_default_blocks(const char *profile);

/* For table tests: the i-th row's profile (*blocks its value), or NULL past the end. */
const char *policy_logsplit_default_row(size_t i, uint32_t *blocks);

#endif
