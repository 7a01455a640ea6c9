/* policy/breaker.h: the per-endpoint circuit breaker. Pure: the caller
 * passes time in and persists the state (state/ shares it across workers).
 *
 *   CLOSED --(failures cross the window threshold, or N in a row)--> OPEN
 *   OPEN --(cooldown over; one probe claimed across all workers)--> HALF_OPEN
 *   HALF_OPEN --(probe succeeded)--> CLOSED
 *   HALF_OPEN --(probe failed)--> OPEN, cooldown doubled up to a cap
 *
 * Failures are connect errors, resets, timeouts and hangs, 5xx and malformed
 * answers, from calls and health probes alike: a hung upstream trips it
 * (eRPC's does not, erpc/erpc#1130). A 429 is not a failure: it marks the
 * endpoint rate-limited instead. Nor are failures of sluice's own resources
 * or request-shaped ones (policy/shape.h). The only
 * writer of ->state is policy_breaker_transition(), checked against a table
 * of allowed edges. */
#ifndef POLICY_BREAKER_H
#define POLICY_BREAKER_H

#include <stdint.h>

#include "base/sl_err.h"

typedef enum policy_breaker_state {
    POLICY_BREAKER_CLOSED,
    POLICY_BREAKER_OPEN,
    POLICY_BREAKER_HALF_OPEN,
    POLICY_BREAKER_STATE_COUNT
} policy_breaker_state_t;

typedef struct policy_breaker_conf {
    uint32_t window_ms;           /* rolling window of outcomes (default 30 s) */
    uint32_t min_calls;           /* calls in the window before the ratio counts (10) */
    uint32_t failure_count;       /* failures in the window that open it (5) ... */
    uint32_t failure_ratio_pct;   /* ... when they are also this share of calls (50) */
    uint32_t consecutive;         /* or this many failures in a row (5) */
    uint32_t cooldown_ms;         /* first open period (5 s) */
    uint32_t max_cooldown_ms;     /* cap of the doubling (5 min) */
    uint32_t probe_timeout_ms;    /* a claimed probe older than this may be re-claimed (15 s) */
} policy_breaker_conf_t;

#define POLICY_BREAKER_DEFAULTS                                                                   \
    ((policy_breaker_conf_t){.window_ms = 30000, .min_calls = 10, .failure_count = 5,             \
                             .failure_ratio_pct = 50, .consecutive = 5, .cooldown_ms = 5000,      \
                             .max_cooldown_ms = 300000, .probe_timeout_ms = 15000})

/* The shared part: what every worker sees (persisted by state/). */
typedef struct policy_breaker {
    policy_breaker_state_t state;
    uint64_t since_ms;            /* ms of the caller's clock (shared time, base/sl_time.h) when state was entered */
    uint32_t cooldown_ms;         /* current open period; doubles on each failed probe */
    uint64_t opened_at_ms;        /* when the current outage began (for "open for N ms") */
} policy_breaker_t;

#define POLICY_WINDOW_BUCKETS 10

/* The local part: one worker's rolling window of outcomes. */
typedef struct policy_window {
    uint64_t bucket_start_ms[POLICY_WINDOW_BUCKETS];
    uint32_t calls[POLICY_WINDOW_BUCKETS];
    uint32_t failures[POLICY_WINDOW_BUCKETS];
    uint32_t consecutive;         /* failures in a row, across buckets */
} policy_window_t;

const char *policy_breaker_state_name(policy_breaker_state_t s);

/* 1 if from -> to is an edge of the machine. */
int policy_breaker_edge_allowed(policy_breaker_state_t from, policy_breaker_state_t to);

/* The only writer of b->state: applies from -> to at now_ms. SL_ERR_STATE
 * (and no change) if the edge is not allowed. Entering OPEN from CLOSED sets
 * the first cooldown and opened_at; from HALF_OPEN doubles it (capped). */
SL_MUST_CHECK sl_err_t policy_breaker_transition(policy_breaker_t *b, const policy_breaker_conf_t *conf,
                                                 policy_breaker_state_t to, uint64_t now_ms);

/* Records one outcome in the window; returns 1 if the breaker should now
 * open (only meaningful while CLOSED). */
int policy_window_record(policy_window_t *w, const policy_breaker_conf_t *conf, int failure, uint64_t now_ms);

/* Calls and failures currently inside the window. */
void policy_window_totals(const policy_window_t *w, const policy_breaker_conf_t *conf, uint64_t now_ms,
                          uint32_t *calls, uint32_t *failures);

void policy_window_reset(policy_window_t *w);

/* 1 when an OPEN breaker's cooldown has run out (a probe may be claimed). */
int policy_breaker_probe_due(const policy_breaker_t *b, uint64_t now_ms);

/* 1 if traffic may use the endpoint (CLOSED). */
int policy_breaker_allows(const policy_breaker_t *b);

#endif
