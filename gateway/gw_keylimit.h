/* gateway/gw_keylimit.h: a key's own limits (issue 33), charged at the
 * edge for each call however it came (HTTP, a call on a WebSocket, a
 * subscription call): its per_address limit (each client address under the
 * key) and its credits budget (the calls' cost in the cost profile of the
 * network's first endpoint). A refusal is counted (sluice_access_refusals_total
 * and the key's refusals); answering it is the caller's (gw_refuse_per_address,
 * gw_refuse_key_credits with the result). */
#ifndef GW_KEYLIMIT_H
#define GW_KEYLIMIT_H

#include <stddef.h>
#include <stdint.h>

#include "config/cfg.h"
#include "gateway/gw_handler.h"
#include "gateway/gw_limit.h"
#include "policy/cost.h"
#include "pool/pool.h"

/* n calls of the key's from client address ip, in bucket: 1 admitted (no
 * such limit, or cluster: a charge waiting for Redis, whose lease comes for
 * the next call), 0 refused (*lim says until when). key NULL: 1. */
int gw_keylimit_address(gw_handler_t *h, const cfg_key_conf_t *key, const char *ip, policy_bucket_t bucket,
                        uint32_t n, gw_limit_result_t *lim);

/* cost credits of the key's budget: 1 admitted (no budget, cost 0, or a
 * charge waiting for Redis) and the spend counted, 0 refused (*lim says
 * until when). key NULL: 1. */
int gw_keylimit_credits(gw_handler_t *h, const cfg_key_conf_t *key, uint32_t cost, gw_limit_result_t *lim);

/* The cost profile the key's credits count in on network nc (flat if its
 * first endpoint names none). */
const policy_cost_profile_t *gw_keylimit_profile(const pool_network_conf_t *nc);

#endif
