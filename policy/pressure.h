/* policy/pressure.h: a network's pressure level, its hysteresis and the shed order.
 *
 * sluice is the sender of the seed's backpressure note and its clients are
 * the schedulers: the level flows back to them on every answer
 * (X-Sluice-Pressure) and, when it is high, the calls that cost information
 * rather than certainty are refused before they reach an upstream.
 *
 *   utilisation = depth / ceiling          depth: calls admitted, not settled (all workers)
 *                                          ceiling: usable endpoints' max_inflight, or
 *                                          less where a credit rate binds first
 *   < elevated (0.6)  ok
 *   >= elevated       elevated   also when the p90 settle time is over
 *   > critical (0.85) critical   slow_factor x its baseline, or the refusal ratio
 *                                over the window is over refusal_ratio
 *
 *   OK --> ELEVATED --> CRITICAL          rising: once the inputs have stayed above the
 *                                         level for rise_ms (a call that settles at
 *                                         once is no pressure), any number of steps
 *   CRITICAL --> ELEVATED --> OK          falling: one step at a time, after the
 *                                         level has lasted hold_ms and the inputs
 *                                         have stayed below it (minus hysteresis)
 *                                         for hold_ms
 *
 * The only writer of a level is policy_pressure_transition(), checked
 * against an edges table. Pure: inputs and time are passed in; pool/ keeps
 * the level shared across workers (one compare-and-set, one event per
 * change), the gateway reads it and sheds, admin/ shows it. */
#ifndef POLICY_PRESSURE_H
#define POLICY_PRESSURE_H

#include <stddef.h>
#include <stdint.h>

#include "base/sl_err.h"
#include "policy/method.h"

typedef enum policy_pressure_level {
    POLICY_PRESSURE_OK,
    POLICY_PRESSURE_ELEVATED,
    POLICY_PRESSURE_CRITICAL,
    POLICY_PRESSURE_LEVEL_COUNT
} policy_pressure_level_t;

/* At which level a priority is shed: ELEVATED, CRITICAL, or NEVER. */
#define POLICY_SHED_NEVER POLICY_PRESSURE_LEVEL_COUNT
#define POLICY_PRIO_COUNT (POLICY_PRIO_CRITICAL + 1)

typedef struct policy_pressure_conf {
    int enabled;                  /* 0: no level, no header, nothing shed, nothing merged */
    double elevated;              /* utilisation thresholds (0.6, 0.85) */
    double critical;
    double hysteresis;            /* a level is left only below its threshold minus this (0.1) */
    uint32_t hold_ms;             /* a level lasts at least this; falling needs this long calm (2000) */
    uint32_t rise_ms;             /* rising needs the inputs above the level this long (100): no spikes */
    double slow_factor;           /* p90 settle over this x baseline: elevated (3) ... */
    uint32_t slow_min_ms;         /* ... when it is also this much over it (50) */
    double refusal_ratio;         /* refusals / tries over the window above this: elevated (0.2) */
    uint32_t window_ms;           /* rolling window of settle times and refusals (10000) */
    uint32_t min_samples;         /* settles (tries) in the window before p90 (the ratio) counts (20) */
    uint8_t shed[POLICY_PRIO_COUNT]; /* level at which each priority is shed, POLICY_SHED_NEVER */
    uint32_t retry_after_ms;      /* Retry-After of a shed call at elevated; twice this at critical (1000) */
    uint32_t merge_window_ms;     /* confirmation polls arriving this close go upstream as one (2); 0 off */
    double identity_share;        /* an identity holding more of the ceiling than this sees the level as
                                     it is; one under it, a step lower (0.5); 1: no identity shares */
} policy_pressure_conf_t;

/* The seed's order: low priority (simulations, heavy scans) at elevated,
 * normal reads at critical, high (writes and what they need) admitted,
 * critical (confirmation polls) never. */
#define POLICY_PRESSURE_DEFAULTS                                                                              \
    ((policy_pressure_conf_t){.enabled = 1, .elevated = 0.6, .critical = 0.85, .hysteresis = 0.1,             \
                              .hold_ms = 2000, .rise_ms = 100, .slow_factor = 3.0, .slow_min_ms = 50, .refusal_ratio = 0.2,   \
                              .window_ms = 10000, .min_samples = 20,                                          \
                              .shed = {POLICY_PRESSURE_ELEVATED, POLICY_PRESSURE_CRITICAL, POLICY_SHED_NEVER, \
                                       POLICY_SHED_NEVER},                                                    \
                              .retry_after_ms = 1000, .merge_window_ms = 2, .identity_share = 0.5})

/* What the level is computed from: every worker's counts merged. */
typedef struct policy_pressure_inputs {
    uint32_t depth;               /* calls admitted and not yet settled */
    uint32_t ceiling;             /* sum of usable endpoints' slots (policy_pressure_endpoint_slots) */
    uint32_t settle_p90_us;       /* over the window; 0 = no settles */
    uint32_t settles;             /* settles in the window */
    uint32_t baseline_us;         /* the slow-moving baseline of settle_p90 (0 = none yet) */
    uint64_t tries;               /* client calls settled in the window */
    uint64_t refusals;            /* ... of which the client got the upstreams' refusal (every endpoint
                                     tried rate-limited or out of credits): a refusal another endpoint
                                     answered for cost the client nothing and is not counted */
} policy_pressure_inputs_t;

/* The shared level and this worker's view of calm. */
typedef struct policy_pressure {
    policy_pressure_level_t level;
    uint64_t since_ms;            /* wall clock: the level was entered */
    uint64_t calm_since_ms;       /* inputs have been below the level since (0: they are not) */
    uint64_t high_since_ms;       /* ... above it since (0: they are not) */
} policy_pressure_t;

const char *policy_pressure_level_name(policy_pressure_level_t l);
/* "ok", "elevated", "critical" -> level; "never" -> POLICY_SHED_NEVER; -1 if unknown. */
int policy_pressure_level_parse(const char *s);

/* depth / ceiling; 0 with no ceiling: when no endpoint is usable (all
 * breakers open, rate-limited, drained, out of credits) the plan answers each
 * call with its own precise error (429 upstream with Retry-After, 503 no
 * endpoint), which shedding must not mask. */
double policy_pressure_utilisation(uint32_t depth, uint32_t ceiling);

/* Why the inputs ask for at least ELEVATED (bits), beside utilisation. */
#define POLICY_PRESSURE_WHY_UTILISATION 0x1
#define POLICY_PRESSURE_WHY_SLOW 0x2
#define POLICY_PRESSURE_WHY_REFUSALS 0x4

/* The level the inputs call for, seen from current: a level is entered above
 * (critical) or at (elevated) its threshold and kept until the utilisation
 * falls below threshold - hysteresis. *why gets POLICY_PRESSURE_WHY_* bits
 * (may be NULL). */
policy_pressure_level_t policy_pressure_target(const policy_pressure_conf_t *conf,
                                               const policy_pressure_inputs_t *in, policy_pressure_level_t current,
                                               unsigned *why);

/* 1 if from -> to is an edge of the level's machine. */
int policy_pressure_edge_allowed(policy_pressure_level_t from, policy_pressure_level_t to);

/* The only writer of p->level: from -> to at now_ms. SL_ERR_STATE (and no
 * change) if the edge is not allowed. */
SL_MUST_CHECK sl_err_t policy_pressure_transition(policy_pressure_t *p, policy_pressure_level_t to, uint64_t now_ms);

/* The level p should move to now, given the target: a higher target once
 * targets above the level have been seen for rise_ms (tracked in
 * p->high_since_ms); a lower one a step down once the level has
 * lasted hold_ms and the target has stayed lower for hold_ms (tracked in
 * p->calm_since_ms). Updates both; returns p->level when no move is due. */
policy_pressure_level_t policy_pressure_next(const policy_pressure_conf_t *conf, policy_pressure_t *p,
                                             policy_pressure_level_t target, uint64_t now_ms);

/* 1 if a call of method m is refused at level: its priority's shed level is
 * reached. Confirmation polls (class CONFIRM) are never shed, whatever the
 * table says: stopping them converts pending into unknown. */
static inline int policy_pressure_sheds(const policy_pressure_conf_t *conf, policy_pressure_level_t level,
                                        const policy_method_t *m)
{
    return level != POLICY_PRESSURE_OK && m->cls != POLICY_CLASS_CONFIRM && (unsigned)m->priority < POLICY_PRIO_COUNT &&
           (unsigned)level >= conf->shed[m->priority];
}

/* ---- the identity's share ----
 * One identity must not deny the others by filling the depth: the level a
 * caller's call is shed at is the network's for an identity holding more
 * than identity_share of the ceiling (it bears the shedding its load causes)
 * and a step lower for one under it (a light caller's normal reads still go
 * at critical; its simulations wait for elevated to pass). Each worker
 * counts the calls it holds for each identity against its part of the
 * share: ceiling x identity_share / nworkers, at least 1. */
uint32_t policy_pressure_share_cap(const policy_pressure_conf_t *conf, uint32_t ceiling, uint32_t nworkers);
/* The level to shed a caller's call at: level when held (the caller's calls
 * holding a slot in this worker) is at cap or over, else a step lower. */
policy_pressure_level_t policy_pressure_level_for(const policy_pressure_conf_t *conf, policy_pressure_level_t level,
                                                  uint32_t held, uint32_t cap);

/* Retry-After (ms) of a call shed at level. */
uint32_t policy_pressure_retry_after_ms(const policy_pressure_conf_t *conf, policy_pressure_level_t level);

/* ---- inputs ---- */

/* Concurrency one endpoint offers: its max_inflight, or fewer where its
 * credit rate binds first. Little's law: calls in flight = arrival rate x
 * time in flight, and the highest arrival rate the plan allows is
 * rate_per_s / cost_per_call, so the credit rate allows
 * ceil(rate_per_s / cost_per_call x latency_s) calls in flight (at least 1).
 * rate_milli: the tightest per-second budget (per_second, or per_minute/60)
 * x 1000, 0 = none; cost_milli: throughput units per call x 1000 (0 = unknown);
 * latency_us: the endpoint's attempt latency (0 = unknown). Unknowns: max_inflight. */
uint32_t policy_pressure_endpoint_slots(uint32_t max_inflight, uint64_t rate_milli, uint64_t cost_milli,
                                        uint64_t latency_us);

/* Settle times are counted in these buckets (upper bounds, µs; the last is +Inf). */
#define POLICY_SETTLE_BUCKETS 16
extern const uint32_t policy_settle_bounds_us[POLICY_SETTLE_BUCKETS];
/* The bucket of a settle time. */
size_t policy_settle_bucket(uint64_t us);
/* The 90th percentile (µs) of hist[0..POLICY_SETTLE_BUCKETS), interpolated
 * inside its bucket; 0 when empty. *total gets the count (may be NULL). */
uint32_t policy_settle_p90_us(const uint64_t *hist, uint64_t *total);

/* The slow-moving baseline of the p90 settle time: updated every
 * POLICY_BASELINE_STEP_MS by 1/POLICY_BASELINE_DIVISOR of the difference
 * (a time constant of about 5 minutes), from the first p90 seen; only from a
 * window with min_samples settles and a utilisation below elevated, so a
 * congestion never teaches it while a lasting change of latency becomes the
 * new normal in minutes. Returns the new baseline (prev when no update is due). */
#define POLICY_BASELINE_STEP_MS 10000
#define POLICY_BASELINE_DIVISOR 30
uint32_t policy_pressure_baseline(const policy_pressure_conf_t *conf, uint32_t prev_us, const policy_pressure_inputs_t *in);

#endif
