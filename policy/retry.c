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
