/* policy/retry.h: how long to wait before another round over the endpoints.
 * Full jitter (AWS architecture blog, "Exponential Backoff And Jitter"): a
 * uniformly random wait in [0, min(max, base * 2^(round - 1))], so clients that
 * failed together do not come back together. Pure: the caller passes rnd. */
#ifndef POLICY_RETRY_H
#define POLICY_RETRY_H

#include <stdint.h>

/* round counts from 1 (the first retry round). */
uint32_t policy_retry_backoff_ms(uint32_t base_ms, uint32_t max_ms, uint32_t round, uint32_t rnd);

#endif
