/* policy/rolling.h: counters over a rolling window, in the caller's storage.
 *
 * The window is POLICY_ROLL_SLOTS slots of window_ms / POLICY_ROLL_SLOTS;
 * a slot is recycled when time reaches it again, so old counts fall out
 * without a timer. Each slot holds `width` counters (a histogram, or several
 * related counts), stored by the caller as values[POLICY_ROLL_SLOTS][width].
 * Pure: time is passed in. Used for settle times and refusals (pressure) and
 * the live call and credit rates behind the capacity forecast. */
#ifndef POLICY_ROLLING_H
#define POLICY_ROLLING_H

#include <stddef.h>
#include <stdint.h>

#define POLICY_ROLL_SLOTS 10

typedef struct policy_roll {
    uint64_t start_ms[POLICY_ROLL_SLOTS]; /* the time each slot counts from (0: never used) */
    uint64_t first_ms;                    /* the first count ever (for rates over a young window) */
} policy_roll_t;

/* Adds amount to counter k of the slot that holds now_ms. */
void policy_roll_add(policy_roll_t *r, uint64_t *values, size_t width, uint32_t window_ms, uint64_t now_ms, size_t k,
                     uint64_t amount);

/* out[0..width) = the counters summed over the slots inside the window. */
void policy_roll_sum(const policy_roll_t *r, const uint64_t *values, size_t width, uint32_t window_ms, uint64_t now_ms,
                     uint64_t *out);

/* The time the window's live slots cover at now_ms (what a sum is over, for
 * a rate): the full slots plus the current one so far, or less when the first
 * count is younger than that; 0 before any count. */
uint64_t policy_roll_span_ms(const policy_roll_t *r, uint32_t window_ms, uint64_t now_ms);

/* sum per second x 1000 over span_ms (0 when span_ms is 0). */
uint64_t policy_roll_rate_milli(uint64_t sum, uint64_t span_ms);

#endif
