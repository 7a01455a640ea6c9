/* policy/limiter.h: client rate limits, as GCRA (the generic cell rate
 * algorithm: a leaky bucket kept as one timestamp per cell).
 *
 * A limit of L calls per window W has an emission interval I = W / L and a
 * burst tolerance of W - I: L calls may come at once, then one per I. The
 * cell stores TAT, the theoretical arrival time; admitting n calls at t moves
 * it to max(TAT, t) + n * I and is allowed while that stays within t + W.
 * Exact, O(1), no per-call history. Times are microseconds, passed in. Pure:
 * state/ stores the cells and shares them across workers; a new cell has
 * TAT 0 (anything at or before now means a full burst).
 *
 * I is whole microseconds, floor(W / L), and the bound is t + L * I, which is
 * W when L divides W and a little less otherwise, so a burst is never more
 * than L (the long-run rate 1 / I may exceed L / W by under 1 µs per call).
 * Limits above one call per µs are treated as one per µs. */
#ifndef POLICY_LIMITER_H
#define POLICY_LIMITER_H

#include <stdint.h>

typedef struct policy_gcra {
    uint64_t window_us;           /* W */
    uint32_t limit;               /* L calls per W; 0 = no limit */
} policy_gcra_t;

typedef struct policy_gcra_result {
    int allowed;
    uint64_t new_tat_us;          /* the cell's TAT after this decision (unchanged if refused) */
    uint32_t remaining;           /* calls still admissible right now after this one */
    uint64_t reset_us;            /* until a refused call would be admitted (refused), or until
                                     the whole burst is available again (allowed); UINT64_MAX
                                     if the n calls can never fit (n > limit) */
    uint64_t retry_after_us;      /* refused: until n calls fit (UINT64_MAX: never); 0 if allowed */
} policy_gcra_result_t;

/* Decides whether n calls may pass at now_us given the cell's tat_us; the
 * caller stores out->new_tat_us. A batch of n calls passes whole or not at
 * all. n == 0 and limit == 0 always pass and leave the TAT as it was
 * (limit 0: remaining UINT32_MAX, reset 0). A clock that went back is a TAT
 * further ahead, never an underflow. */
void policy_gcra_check(const policy_gcra_t *g, uint64_t tat_us, uint64_t now_us, uint32_t n, policy_gcra_result_t *out);

/* The cell's emission interval I and capacity C (the most backlog an
 * admission may leave), for a store that runs the same arithmetic itself
 * (Redis, with cluster:). limit 0: both 0. */
void policy_gcra_shape(const policy_gcra_t *g, uint64_t *interval_us, uint64_t *capacity_us);

/* How many calls the cell admits right now, at most max (for leases). */
uint32_t policy_gcra_available(const policy_gcra_t *g, uint64_t tat_us, uint64_t now_us, uint32_t max);

/* The emission interval I in µs: what one call adds to the TAT (0 for
 * limit 0). A cell's backlog over I is the calls it owes. */
uint64_t policy_gcra_interval(const policy_gcra_t *g);

/* The bucket a request is charged to. */
typedef enum policy_bucket {
    POLICY_BUCKET_STANDARD,
    POLICY_BUCKET_READ,           /* cheap reads: the tier's limits x read_multiplier */
    POLICY_BUCKET_COUNT
} policy_bucket_t;

/* "standard", "read" ("unknown" out of range): a string literal. */
const char *policy_bucket_name(policy_bucket_t b);

#endif
