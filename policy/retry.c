#include "policy/retry.h"

uint32_t policy_retry_backoff_ms(uint32_t base_ms, uint32_t max_ms, uint32_t round, uint32_t rnd)
{
    uint64_t cap = base_ms;
    for (uint32_t i = 1; i < round && cap < max_ms; i++)
        cap *= 2;
    if (cap > max_ms)
        cap = max_ms;
    return (uint32_t)(rnd % (cap + 1));
}

uint32_t policy_rate_backoff_ms(uint32_t prev_ms, uint64_t prev_until_ms, uint64_t last_ok_ms, uint64_t now_ms)
{
    int goes_on = prev_ms != 0 && last_ok_ms < prev_until_ms && now_ms <= prev_until_ms + POLICY_RATE_BACKOFF_MAX_MS;
    if (!goes_on)
        return POLICY_RATE_BACKOFF_MIN_MS;
    uint64_t next = (uint64_t)prev_ms * 2;
    return next > POLICY_RATE_BACKOFF_MAX_MS ? POLICY_RATE_BACKOFF_MAX_MS : (uint32_t)next;
}
