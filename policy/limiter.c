#include "policy/limiter.h"

/* n * I reaches 2^32 calls x 31 days in µs (~1.2e22), past 64 bits. */
typedef unsigned __int128 u128;

/* The cell's two constants: the emission interval I and the capacity C, the
 * most backlog (TAT - now) an admission may leave behind. */
typedef struct gcra_shape {
    uint64_t interval;
    uint64_t capacity;
} gcra_shape_t;

/* C is L * I rather than W: with I = floor(W / L) the window W would hold
 * floor(W / I) calls, which can be more than L (W = 1 s, L = 300000: I = 3,
 * 333333 at once). L * I <= W keeps the burst at exactly L; the two agree
 * whenever L divides W. More than one call per µs cannot be written in whole
 * µs: I becomes 1 and the burst is capped at W. */
static gcra_shape_t gcra_shape(const policy_gcra_t *g)
{
    uint64_t interval = g->window_us / g->limit;
    if (interval == 0)
        interval = 1;
    u128 capacity = (u128)interval * g->limit;
    gcra_shape_t s = {interval, capacity < g->window_us ? (uint64_t)capacity : g->window_us};
    return s;
}

/* How far the cell is booked ahead of now. A TAT behind now means a full cell;
 * a TAT far ahead (the clock went back) is just a long backlog. */
static uint64_t backlog(uint64_t tat_us, uint64_t now_us)
{
    return tat_us > now_us ? tat_us - now_us : 0;
}

/* Single calls that still fit on top of backlog d. At most L, so it fits. */
static uint32_t fits(gcra_shape_t s, uint64_t d)
{
    return d >= s.capacity ? 0 : (uint32_t)((s.capacity - d) / s.interval);
}

static uint64_t add_sat64(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

void policy_gcra_check(const policy_gcra_t *g, uint64_t tat_us, uint64_t now_us, uint32_t n, policy_gcra_result_t *out)
{
    if (g->limit == 0) {
        *out = (policy_gcra_result_t){.allowed = 1, .new_tat_us = tat_us, .remaining = UINT32_MAX};
        return;
    }
    gcra_shape_t s = gcra_shape(g);
    uint64_t d = backlog(tat_us, now_us);
    /* asking for nothing must not move the cell, even when it is over capacity */
    if (n == 0) {
        *out = (policy_gcra_result_t){.allowed = 1, .new_tat_us = tat_us, .remaining = fits(s, d), .reset_us = d};
        return;
    }
    u128 need = (u128)n * s.interval;
    if ((u128)d + need <= s.capacity) {
        uint64_t nd = d + (uint64_t)need; /* <= capacity */
        *out = (policy_gcra_result_t){
            .allowed = 1,
            .new_tat_us = add_sat64(now_us, nd),
            .remaining = fits(s, nd),
            .reset_us = nd,
        };
        return;
    }
    /* Refused. The backlog drains one µs per µs, so n calls fit once it is down
     * to C - n*I; a request larger than C never fits. */
    uint64_t wait = need > s.capacity ? UINT64_MAX : d - (s.capacity - (uint64_t)need);
    *out = (policy_gcra_result_t){
        .allowed = 0,
        .new_tat_us = tat_us,
        .remaining = fits(s, d),
        .reset_us = wait,
        .retry_after_us = wait,
    };
}

void policy_gcra_shape(const policy_gcra_t *g, uint64_t *interval_us, uint64_t *capacity_us)
{
    if (g->limit == 0) {
        *interval_us = *capacity_us = 0;
        return;
    }
    gcra_shape_t s = gcra_shape(g);
    *interval_us = s.interval;
    *capacity_us = s.capacity;
}

uint32_t policy_gcra_available(const policy_gcra_t *g, uint64_t tat_us, uint64_t now_us, uint32_t max)
{
    if (g->limit == 0)
        return max;
    uint32_t k = fits(gcra_shape(g), backlog(tat_us, now_us));
    return k < max ? k : max;
}

uint64_t policy_gcra_interval(const policy_gcra_t *g)
{
    return g->limit == 0 ? 0 : gcra_shape(g).interval;
}

static const char *const bucket_names[POLICY_BUCKET_COUNT] = {
    [POLICY_BUCKET_STANDARD] = "standard",
    [POLICY_BUCKET_READ] = "read",
};

const char *policy_bucket_name(policy_bucket_t b)
{
    return (unsigned)b < POLICY_BUCKET_COUNT ? bucket_names[b] : "unknown";
}
