#include "policy/rolling.h"

#include <string.h>

static uint64_t slot_ms(uint32_t window_ms)
{
    uint64_t s = window_ms / POLICY_ROLL_SLOTS;
    return s ? s : 1;
}

void policy_roll_add(policy_roll_t *r, uint64_t *values, size_t width, uint32_t window_ms, uint64_t now_ms, size_t k,
                     uint64_t amount)
{
    uint64_t len = slot_ms(window_ms), start = now_ms - now_ms % len;
    size_t i = (size_t)((now_ms / len) % POLICY_ROLL_SLOTS);
    if (r->start_ms[i] != start) {
        r->start_ms[i] = start;
        memset(values + i * width, 0, width * sizeof(*values));
    }
    if (r->first_ms == 0)
        r->first_ms = now_ms ? now_ms : 1;
    if (k < width)
        values[i * width + k] += amount;
}

void policy_roll_sum(const policy_roll_t *r, const uint64_t *values, size_t width, uint32_t window_ms, uint64_t now_ms,
                     uint64_t *out)
{
    uint64_t len = slot_ms(window_ms), current = now_ms - now_ms % len;
    memset(out, 0, width * sizeof(*out));
    for (size_t i = 0; i < POLICY_ROLL_SLOTS; i++) {
        uint64_t s = r->start_ms[i];
        /* live: used, not in the future, and one of the last SLOTS slots */
        if (s == 0 || s > current || current - s >= len * POLICY_ROLL_SLOTS)
            continue;
        for (size_t k = 0; k < width; k++)
            out[k] += values[i * width + k];
    }
}

uint64_t policy_roll_span_ms(const policy_roll_t *r, uint32_t window_ms, uint64_t now_ms)
{
    if (r->first_ms == 0 || now_ms < r->first_ms)
        return 0;
    uint64_t len = slot_ms(window_ms);
    uint64_t span = len * (POLICY_ROLL_SLOTS - 1) + now_ms % len + 1;
    uint64_t age = now_ms - r->first_ms + 1;
    return age < span ? age : span;
}

uint64_t policy_roll_rate_milli(uint64_t sum, uint64_t span_ms)
{
    if (span_ms == 0)
        return 0;
    /* sum * 1e6 / span would overflow past 1.8e13 calls: divide first then */
    if (sum > UINT64_MAX / 1000000)
        return sum / span_ms * 1000000;
    return sum * 1000000 / span_ms;
}
