/* policy/retry.h: how long to wait before another round over the endpoints.
 * Full jitter (AWS architecture blog, "Exponential Backoff And Jitter"): a
 * uniformly random wait in [0, min(max, base * 2^(round - 1))], so clients that
 * failed together do not come back together. Pure: the caller passes rnd. */
#ifndef POLICY_RETRY_H
#define POLICY_RETRY_H

#include <stdint.h>

/* round counts from 1 (the first retry round). */
uint32_t policy_retry_backoff_ms(uint32_t base_ms, uint32_t max_ms, uint32_t round, uint32_t rnd);

/* The rate-limit mark sluice sets itself when a refusal says nothing of
 * when to come back (no Retry-After, no backoff_seconds):
 * POLICY_RATE_BACKOFF_MIN_MS, doubled while the refusals go on, up to
 * POLICY_RATE_BACKOFF_MAX_MS. They go on when this refusal came within
 * POLICY_RATE_BACKOFF_MAX_MS of the previous mark's end and nothing was
 * served in between (last_ok_ms: the last attempt answered otherwise, as
 * far as the caller knows; 0 = never). prev_ms and prev_until_ms are the
 * previous mark's length (0: none of its own) and end, from the record all
 * workers share, so the doubling does not restart in each worker. */
#define POLICY_RATE_BACKOFF_MIN_MS 1000
#define POLICY_RATE_BACKOFF_MAX_MS 60000
uint32_t policy_rate_backoff_ms(uint32_t prev_ms, uint64_t prev_until_ms, uint64_t last_ok_ms, uint64_t now_ms);

#endif
