/* policy/score.h: how good an endpoint is right now, as one number.
 *
 * Lower cost is better:
 *   cost = (latency_ms + 1) * (1 + w_error * error_ratio + w_rate_limit * rate_limit_ratio
 *                                + w_lag * lag + w_disagree * disagreed)
 * latency is the probes' EWMA (every endpoint is probed with the same cheap
 * method, so they compare fairly); error and rate-limit ratios come from the
 * rolling window of real calls; lag is blocks (or slots) behind the best head
 * seen by the probes; disagreed is the endpoint's recent minority answers
 * under consensus (policy/consensus.h: a lying endpoint sinks). An endpoint far behind, or failing most calls, is
 * excluded outright. Stickiness (policy_rank_keep) stops the primary from
 * flapping: a challenger must be clearly better for a while. Pure. */
#ifndef POLICY_SCORE_H
#define POLICY_SCORE_H

#include <stdint.h>

typedef struct policy_score_conf {
    double w_error;               /* weight of the error ratio (default 4) */
    double w_rate_limit;          /* weight of the rate-limit ratio (default 3) */
    double w_lag;                 /* weight per block/slot behind (default 0.5) */
    double w_disagree;            /* weight per recent minority answer under consensus (default 2) */
    uint32_t max_lag;             /* behind by more than this: excluded (eth 8 blocks, solana 150 slots) */
    uint32_t max_error_pct;       /* failing more than this share of calls: excluded (70) ... */
    uint32_t min_calls;           /* ... once the window holds this many calls (10) */
    uint32_t hysteresis_pct;      /* a challenger must cost this much less than the primary (30) ... */
    uint32_t switch_after_ms;     /* ... for this long before it takes over (5000) */
    uint32_t probe_interval_ms;   /* head/latency probe period per endpoint, one prober for all workers
                                     (2000); 0 = no health probes: config order and call outcomes rank */
} policy_score_conf_t;

#define POLICY_SCORE_DEFAULTS                                                                       \
    ((policy_score_conf_t){.w_error = 4, .w_rate_limit = 3, .w_lag = 0.5, .w_disagree = 2,   \
                           .max_lag = 8,            \
                           .max_error_pct = 70, .min_calls = 10, .hysteresis_pct = 30,             \
                           .switch_after_ms = 5000, .probe_interval_ms = 2000})

typedef struct policy_score_input {
    double latency_ms;            /* probe latency EWMA; < 0 if never measured */
    uint32_t calls;               /* calls in the window */
    uint32_t failures;            /* ... that failed (breaker failures) */
    uint32_t rate_limited;        /* ... refused with a rate limit */
    int64_t lag;                  /* blocks/slots behind the best head; < 0 if unknown */
    uint32_t disagreed;           /* recent minority answers under consensus (decayed) */
} policy_score_input_t;

#define POLICY_SCORE_MAX_DISAGREED 8 /* counted up to this: a liar sinks, it is not excluded for it */

typedef struct policy_score {
    double cost;
    double latency_ms;            /* the latency used (a stand-in if never measured) */
    double error_ratio;
    double rate_limit_ratio;
    int64_t lag;
    const char *excluded;         /* why the endpoint is left out, or NULL */
} policy_score_t;

/* Scores one endpoint. unknown_latency_ms stands in for an endpoint never
 * measured (the caller passes the median of the others). */
void policy_score_compute(const policy_score_conf_t *conf, const policy_score_input_t *in, double unknown_latency_ms,
                          policy_score_t *out);

/* Stickiness: 1 if the current primary should stay although `challenger`
 * costs less. *since_ms tracks how long the challenger has been clearly
 * better (0 = not); the caller keeps it between calls. */
int policy_rank_keep(const policy_score_conf_t *conf, double primary_cost, double challenger_cost, uint64_t now_ms,
                     uint64_t *since_ms);

#endif
