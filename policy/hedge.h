/* policy/hedge.h: when a read is also sent to a second endpoint.
 *
 * A hedged read: a call not answered within the hedge delay is sent to the
 * next endpoint of the plan as well; the first good answer wins and the
 * other exchange is cancelled. Three decisions, all pure:
 *   - eligibility: only calls whose every member is a cheap, retry-safe read
 *     (policy_method_t.cheap: never a write, never a heavy call whose
 *     slowness may be the request's own, see policy/shape.h), on a network
 *     with hedging enabled, while its pressure level is ok (at elevated or
 *     critical a hedge is load the network cannot take);
 *   - the delay: the endpoint's p95 latency for the call's method class (at
 *     least twice its median),
 *     from a decaying histogram, clamped to [min_ms, max_ms]; with too few
 *     samples 3 x the probe latency EWMA (clamped), else min_ms;
 *   - the budget: over a rolling window, hedges may be at most max_ratio of
 *     the upstream requests plus `burst` (a quiet network, whose ratio
 *     allows nothing, can still hedge a few reads around a hung endpoint). */
#ifndef POLICY_HEDGE_H
#define POLICY_HEDGE_H

#include <stddef.h>
#include <stdint.h>

#include "policy/method.h"
#include "policy/pressure.h"

typedef struct policy_hedge_conf {
    int enabled;                  /* 1 by default: reads are hedged */
    uint32_t min_ms;              /* the delay is never shorter (30) ... */
    uint32_t max_ms;              /* ... nor longer (1000) */
    double max_ratio;             /* hedges / upstream requests over the window (0.1) ... */
    uint32_t burst;               /* ... plus this many (10) */
    uint32_t window_ms;           /* the budget's rolling window (10000) */
} policy_hedge_conf_t;

#define POLICY_HEDGE_DEFAULTS                                                                     \
    ((policy_hedge_conf_t){.enabled = 1, .min_ms = 30, .max_ms = 1000, .max_ratio = 0.1,          \
                           .burst = 10, .window_ms = 10000})

typedef enum policy_hedge_why {
    POLICY_HEDGE_YES,
    POLICY_HEDGE_OFF,             /* hedge.enabled: false */
    POLICY_HEDGE_NOT_READ,        /* a member is a write, not retry-safe, or heavy */
    POLICY_HEDGE_PRESSURE,        /* the network is at elevated pressure or above */
    POLICY_HEDGE_PINNED,          /* a confirmation poll pinned to the endpoint that took
                                     the write: only that one knows; a null from another
                                     must never beat it */
    POLICY_HEDGE_BUDGET,          /* the window's hedges are used up */
} policy_hedge_why_t;

/* 1 if a call of this method may be hedged (a cheap, retry-safe read or poll). */
int policy_hedge_method_ok(const policy_method_t *m);

/* Whether a call of methods[0..n) may be hedged now (the budget aside);
 * pinned: the call is pinned to one endpoint (a transaction's pin). */
policy_hedge_why_t policy_hedge_eligible(const policy_hedge_conf_t *conf, const policy_method_t *const *methods,
                                         size_t n, int pinned, policy_pressure_level_t level);

/* 1 if one more hedge fits: (hedges + 1) <= max_ratio * requests + burst,
 * requests and hedges counted over the window. */
int policy_hedge_budget_ok(const policy_hedge_conf_t *conf, uint64_t requests, uint64_t hedges);

/* Latency histogram: bucket b holds samples up to policy_hedge_bounds_us[b];
 * the last one everything above. Counts halve when the total reaches
 * POLICY_HEDGE_DECAY_AT, so it follows the recent samples. */
#define POLICY_HEDGE_BUCKETS 25
#define POLICY_HEDGE_DECAY_AT 256
#define POLICY_HEDGE_MIN_SAMPLES 8
extern const uint32_t policy_hedge_bounds_us[POLICY_HEDGE_BUCKETS - 1];

typedef struct policy_hedge_hist {
    uint16_t n[POLICY_HEDGE_BUCKETS];
    uint16_t total;
} policy_hedge_hist_t;

void policy_hedge_hist_add(policy_hedge_hist_t *h, uint32_t latency_us);
/* The p90 in µs (the upper bound of its bucket), 0 with fewer than
 * POLICY_HEDGE_MIN_SAMPLES samples. */
uint32_t policy_hedge_p90_us(const policy_hedge_hist_t *h);
/* The same for any quantile, in permille (500: the median). */
uint32_t policy_hedge_quantile_us(const policy_hedge_hist_t *h, uint32_t permille);

/* The delay's rule: the endpoint's p95 (POLICY_HEDGE_QUANTILE permille), but
 * never under twice its median: a read is hedged only once it is slower than
 * 19 in 20 of its endpoint's answers and well past a typical one (a tight
 * distribution, whose p95 is barely above its median, is not hedged for
 * jitter a second endpoint would not beat). Measured (docs/guide/routing.md,
 * "Hedged reads"): 200 healthy reads with a latency tail cost 215 upstream
 * calls with a p90 delay, 203 to 205 with this one. */
#define POLICY_HEDGE_QUANTILE 950
#define POLICY_HEDGE_MEDIAN_TIMES 2

/* The hedge delay in ms for an endpoint with this histogram and probe EWMA
 * (0: unknown). */
uint32_t policy_hedge_delay_ms(const policy_hedge_conf_t *conf, const policy_hedge_hist_t *h, uint32_t probe_ewma_us);

#endif
