/* pool/pool_logs.h: what the gateway's eth_getLogs splitting
 * (pool/pool_split.c) reads of a network: the block span its sub-calls
 * take and the numbers the chain view gives block tags. Reads only: the
 * sub-calls themselves are ordinary pool calls (pool_call_start). */
#ifndef POOL_LOGS_H
#define POOL_LOGS_H

#include <stdint.h>

#include "base/sl_err.h"
#include "policy/blockref.h"
#include "pool/pool.h"

/* The largest max_logs_blocks among the endpoints usable now (all of them
 * when none is): the widest range one sub-call can be sent whole to. 0 when
 * one of them takes any range (then nothing is split before a refusal). */
uint32_t pool_logs_blocks(pool_network_t *net);

/* The block number tag stands for now in the network's chain view, among
 * the usable endpoints (policy_chainview_resolve). SL_ERR_NOT_FOUND when no
 * usable endpoint has reported that head yet (or the network has more
 * endpoints than the view holds). */
SL_MUST_CHECK sl_err_t pool_logs_resolve(pool_network_t *net, policy_block_tag_t tag, uint64_t *n);

/* The network's splitting counters (this worker's; flushed with its
 * pressure slot, summed in /metrics). */
typedef enum pool_logs_counter {
    POOL_LOGS_SPLITS,             /* client eth_getLogs served by sub-calls */
    POOL_LOGS_SUBCALLS,           /* sub-calls sent */
    POOL_LOGS_REFUSED,            /* calls refused with -32005 past max_logs_split */
    POOL_LOGS_COUNTER_COUNT
} pool_logs_counter_t;

void pool_logs_count(pool_network_t *net, pool_logs_counter_t c, uint64_t n);

/* A call over from..to refused (it needs more than max_split sub-calls of
 * blocks each): counted, and a logs_split_refused event at most once every
 * POOL_LOGS_EVENT_EVERY_MS per network in this worker (the refusals held
 * back since are in the next one's count), so a client cannot flood the feed. */
#define POOL_LOGS_EVENT_EVERY_MS 10000
void pool_logs_refused(pool_network_t *net, uint64_t from, uint64_t to, uint32_t blocks, uint32_t max_split);

/* Answers the client's item with the answer the split made (the merged
 * logs, an error, a sub-call's own error): a pending item, or one whose
 * call is over and whose answer (a refusal) is answered over; never a
 * failed one. answer (its id at answer_id) must outlive the item; no
 * endpoint answered it as such. Through the call layer's one door
 * (pool_item_answer_set). */
void pool_logs_answer(pool_item_t *it, policy_verdict_t verdict, const char *answer, uint32_t answer_len,
                      wire_span_t answer_id);

#endif
