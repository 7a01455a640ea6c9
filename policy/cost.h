/* policy/cost.h: what a call costs at a provider, in the provider's units.
 *
 * Providers meter by method, not by request (reference/providers.md §C):
 * on Alchemy eth_getLogs costs six times eth_blockNumber, and a send counts
 * 250 compute units against throughput while billing 40; Infura adds 1 credit
 * per batch. A profile is a table of per-method costs plus a default; config
 * overrides may replace rows. Pure. */
#ifndef POLICY_COST_H
#define POLICY_COST_H

#include <stddef.h>
#include <stdint.h>

#include "policy/chain.h"

typedef struct policy_cost {
    uint32_t billed;              /* what the call adds to the bill (credits, CU) */
    uint32_t throughput;          /* what it counts against the rate limit (Alchemy's "throughput CU") */
} policy_cost_t;

typedef struct policy_cost_row {
    const char *method;
    policy_cost_t cost;
} policy_cost_row_t;

typedef struct policy_cost_profile {
    const char *name;             /* "alchemy", "infura", "quicknode", "helius", "flat" */
    const policy_cost_row_t *ethereum;   /* sorted by method (a test checks it) */
    size_t nethereum;
    const policy_cost_row_t *solana;
    size_t nsolana;
    policy_cost_t eth_default;    /* a method not in the table */
    policy_cost_t sol_default;
    uint32_t per_batch;           /* added once per HTTP batch (Infura: 1), to billed and throughput */
} policy_cost_profile_t;

/* The built-in profile called name, or NULL. */
const policy_cost_profile_t *policy_cost_profile(const char *name);
/* Every built-in profile (for tests and docs); *n gets the count. */
const policy_cost_profile_t *policy_cost_profiles(size_t *n);

/* Cost of one call of method[0..len) (not NUL-terminated) on chain with
 * profile p (never NULL); overrides (config rows for this chain, unsorted)
 * win over the profile's table, and a method in neither costs the chain's
 * default. Costs never look at params. */
policy_cost_t policy_cost_of(const policy_cost_profile_t *p, policy_chain_t chain, const policy_cost_row_t *overrides,
                             size_t noverrides, const char *method, size_t len);

/* Cost of a whole request of n calls (methods[i], lens[i]): the sum plus the
 * profile's per-batch charge once when batch is set (a JSON array, even of
 * one call). Sums saturate at UINT32_MAX. */
policy_cost_t policy_cost_of_request(const policy_cost_profile_t *p, policy_chain_t chain,
                                     const policy_cost_row_t *overrides, size_t noverrides,
                                     const char *const *methods, const size_t *lens, size_t n, int batch);

#endif
