/* tests/policy/test_limiter.c: policy/limiter.h: GCRA against an injected
 * clock: bursts, refill, steady load, remaining/reset honesty, batches, big
 * windows, no limit, available() and clocks that go back. */
#include <criterion/criterion.h>
#include <string.h>

#include "policy/limiter.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define SEC 1000000ull
#define DAY (86400ull * SEC)
/* a realistic wall clock (2024 in µs), so nothing passes only because now is small */
#define T0 1700000000000000ull

/* One decision; the cell keeps the new TAT, as state/ would. */
static policy_gcra_result_t step(const policy_gcra_t *g, uint64_t *tat, uint64_t now, uint32_t n)
{
    policy_gcra_result_t r;
    memset(&r, 0xa5, sizeof r); /* every field must be written */
    policy_gcra_check(g, *tat, now, n, &r);
    if (!r.allowed)
        cr_expect_eq(r.new_tat_us, *tat, "a refusal moved the TAT");
    *tat = r.new_tat_us;
    return r;
}

/* How many single calls pass, one after another, at one instant. */
static uint32_t drain(const policy_gcra_t *g, uint64_t *tat, uint64_t now, uint32_t cap)
{
    uint32_t k = 0;
    while (k < cap && step(g, tat, now, 1).allowed)
        k++;
    return k;
}

/* ---- burst, then one per interval --------------------------------------- */

typedef struct shape {
    policy_gcra_t g;
    uint32_t burst;     /* calls admitted at once by a fresh cell */
} shape_t;

static const shape_t shapes[] = {
    {{SEC, 10}, 10},
    {{SEC, 1}, 1},
    {{60 * SEC, 100}, 100},
    {{SEC, 3}, 3},           /* 3 does not divide 1 s */
    {{SEC, 7}, 7},
    {{11, 10}, 10},          /* I = 1 µs, W = 11 µs: the burst is still 10 */
    {{SEC, 300000}, 300000}, /* I = 3 µs: a window-bounded burst would be 333333 */
    {{DAY, 1000}, 1000},
    {{5, 10}, 5},            /* more than one call per µs: one per µs, at most W at once */
};

Test(limiter, burst_of_exactly_limit_then_refused)
{
    for (size_t i = 0; i < COUNT(shapes); i++) {
        const policy_gcra_t *g = &shapes[i].g;
        uint32_t burst = shapes[i].burst;
        uint64_t tat = 0;
        for (uint32_t k = 0; k < burst; k++) {
            policy_gcra_result_t r = step(g, &tat, T0, 1);
            cr_assert(r.allowed, "shape %zu: call %u of a fresh burst refused", i, k + 1);
            cr_expect_eq(r.remaining, burst - 1 - k, "shape %zu: remaining after %u: %u", i, k + 1, r.remaining);
            cr_expect_eq(r.retry_after_us, 0);
        }
        policy_gcra_result_t r = step(g, &tat, T0, 1);
        cr_expect(!r.allowed, "shape %zu: call %u admitted", i, burst + 1);
        cr_expect_eq(r.remaining, 0);
        cr_expect_gt(r.retry_after_us, 0);
    }
}

Test(limiter, refills_one_per_interval)
{
    const policy_gcra_t g = {SEC, 10};
    uint64_t tat = 0;
    cr_assert_eq(drain(&g, &tat, T0, 100), 10);
    for (uint64_t k = 1; k <= 30; k++) {
        uint64_t t = T0 + k * 100000;
        cr_expect(!step(&g, &tat, t - 1, 1).allowed, "1 µs before slot %lu", (unsigned long)k);
        cr_expect(step(&g, &tat, t, 1).allowed, "slot %lu refused", (unsigned long)k);
        cr_expect(!step(&g, &tat, t, 1).allowed, "second call in slot %lu admitted", (unsigned long)k);
        cr_expect(!step(&g, &tat, t + 99999, 1).allowed, "end of slot %lu", (unsigned long)k);
    }
}

/* ---- steady offered load ------------------------------------------------ */

typedef struct load_case {
    policy_gcra_t g;
    uint64_t every_us;   /* one call offered every this many µs */
    int warm;            /* the cell starts exhausted (TAT = now + W) rather than fresh */
    uint32_t per_second; /* expected admissions per second, ±1, after the first */
    uint32_t first;      /* expected in the first second, ±1 */
} load_case_t;

static const load_case_t loads[] = {
    {{SEC, 10}, 20000, 0, 10, 19},      /* 50/s offered: the burst, then 9 refills */
    {{SEC, 10}, 20000, 1, 10, 10},
    {{SEC, 10}, 21277, 1, 10, 10},      /* 47/s: offers off the 100 ms grid */
    {{SEC, 7}, 20000, 1, 7, 7},         /* I = 142857 µs does not divide 1 s */
    {{SEC, 100}, 3003, 1, 100, 100},    /* 333/s */
    {{60 * SEC, 600}, 20000, 1, 10, 10}, /* 600/min is 10/s */
    {{SEC, 10}, 200000, 0, 5, 5},       /* 5/s offered under a 10/s limit: all pass */
};

Test(limiter, steady_load_admits_the_rate)
{
    enum { SECONDS = 5 };
    for (size_t i = 0; i < COUNT(loads); i++) {
        const load_case_t *c = &loads[i];
        uint64_t tat = c->warm ? T0 + c->g.window_us : 0;
        uint32_t per[SECONDS] = {0};
        for (uint64_t t = T0; t < T0 + SECONDS * SEC; t += c->every_us)
            if (step(&c->g, &tat, t, 1).allowed)
                per[(t - T0) / SEC]++;
        cr_expect(per[0] + 1 >= c->first && per[0] <= c->first + 1, "load %zu: %u in the first second, want %u", i,
                  per[0], c->first);
        for (int s = 1; s < SECONDS; s++)
            cr_expect(per[s] + 1 >= c->per_second && per[s] <= c->per_second + 1,
                      "load %zu: %u in second %d, want %u ± 1", i, per[s], s, c->per_second);
    }
}

/* ---- remaining and reset ----------------------------------------------- */

Test(limiter, remaining_and_reset_count_down)
{
    const policy_gcra_t g = {SEC, 10};
    uint64_t tat = 0;
    for (uint32_t k = 0; k < 10; k++) {
        policy_gcra_result_t r = step(&g, &tat, T0, 1);
        cr_assert(r.allowed);
        cr_expect_eq(r.remaining, 9 - k);
        /* allowed: until the burst is whole again, (k + 1) intervals */
        cr_expect_eq(r.reset_us, (k + 1) * 100000ull, "after %u: reset %lu", k + 1, (unsigned long)r.reset_us);
        cr_expect_eq(r.new_tat_us, T0 + (k + 1) * 100000ull);
    }
    /* refused: the reset falls as the clock runs, and is exactly the wait */
    for (uint64_t dt = 0; dt < 100000; dt += 12500) {
        policy_gcra_result_t r = step(&g, &tat, T0 + dt, 1);
        cr_expect(!r.allowed, "at +%lu", (unsigned long)dt);
        cr_expect_eq(r.reset_us, 100000 - dt, "at +%lu: reset %lu", (unsigned long)dt, (unsigned long)r.reset_us);
        cr_expect_eq(r.retry_after_us, r.reset_us);
        cr_expect_eq(r.remaining, 0);
    }
}

typedef struct honest_case {
    policy_gcra_t g;
    uint32_t used;   /* single calls spent at T0 */
    uint64_t later;  /* then, at T0 + later ... */
    uint32_t n;      /* ... a batch of n is refused */
} honest_case_t;

static const honest_case_t honest[] = {
    {{SEC, 10}, 10, 0, 1},       {{SEC, 10}, 10, 0, 4},      {{SEC, 10}, 8, 0, 3},
    {{SEC, 10}, 10, 12345, 10},  {{SEC, 3}, 3, 0, 1},        {{SEC, 7}, 5, 333, 4},
    {{60 * SEC, 100}, 100, 0, 1}, {{DAY, 1000000000}, 1000000000, 5000, 700}, /* 58 calls back, 700 asked */
};

/* At now + reset the refused batch passes; one µs earlier it does not. */
Test(limiter, reset_is_honest)
{
    for (size_t i = 0; i < COUNT(honest); i++) {
        const honest_case_t *c = &honest[i];
        uint64_t tat = 0;
        policy_gcra_result_t r = step(&c->g, &tat, T0, c->used);
        cr_assert(r.allowed, "case %zu: setup", i);
        uint64_t now = T0 + c->later;
        r = step(&c->g, &tat, now, c->n);
        cr_assert(!r.allowed, "case %zu: not refused", i);
        cr_assert_gt(r.reset_us, 0, "case %zu", i);
        cr_assert_eq(r.retry_after_us, r.reset_us, "case %zu", i);
        uint64_t at = now + r.reset_us;
        uint64_t t1 = tat, t2 = tat;
        cr_expect(!step(&c->g, &t1, at - 1, c->n).allowed, "case %zu: admitted 1 µs before reset", i);
        cr_expect(step(&c->g, &t2, at, c->n).allowed, "case %zu: refused at reset", i);
        cr_expect_eq(policy_gcra_available(&c->g, tat, at, c->n), c->n, "case %zu", i);
        cr_expect_lt(policy_gcra_available(&c->g, tat, at - 1, c->n), c->n, "case %zu", i);
    }
}

/* Allowed: the reset is when the whole burst is back, not a moment sooner. */
Test(limiter, allowed_reset_is_full_replenishment)
{
    for (size_t i = 0; i < COUNT(shapes); i++) {
        const policy_gcra_t *g = &shapes[i].g;
        uint32_t burst = shapes[i].burst;
        uint64_t tat = 0;
        uint32_t n = burst > 2 ? burst / 2 : 1;
        policy_gcra_result_t r = step(g, &tat, T0, n);
        cr_assert(r.allowed, "shape %zu", i);
        cr_expect_eq(r.new_tat_us, T0 + r.reset_us, "shape %zu", i);
        cr_expect_eq(policy_gcra_available(g, tat, T0 + r.reset_us, UINT32_MAX), burst, "shape %zu", i);
        cr_expect_eq(policy_gcra_available(g, tat, T0 + r.reset_us - 1, UINT32_MAX), burst - 1, "shape %zu", i);
    }
}

/* ---- batches ----------------------------------------------------------- */

Test(limiter, batches_count_as_n_calls)
{
    const policy_gcra_t g = {SEC, 10};
    uint64_t tat = 0;
    static const struct {
        uint64_t dt;
        uint32_t n;
        int allowed;
        uint32_t remaining;
        uint64_t reset;
    } seq[] = {
        {0, 4, 1, 6, 400000},
        {0, 4, 1, 2, 800000},
        {0, 4, 0, 2, 200000},       /* 2 left: two more intervals until 4 fit */
        {0, 3, 0, 2, 100000},
        {0, 2, 1, 0, 1000000},
        {0, 1, 0, 0, 100000},
        {199999, 2, 0, 1, 1},
        {200000, 2, 1, 0, 1000000},
        {200000, 0, 1, 0, 1000000}, /* n = 0: a question, not a call */
        {1200000, 10, 1, 0, 1000000},
    };
    for (size_t i = 0; i < COUNT(seq); i++) {
        policy_gcra_result_t r = step(&g, &tat, T0 + seq[i].dt, seq[i].n);
        cr_expect_eq(r.allowed, seq[i].allowed, "step %zu", i);
        cr_expect_eq(r.remaining, seq[i].remaining, "step %zu: remaining %u", i, r.remaining);
        cr_expect_eq(r.reset_us, seq[i].reset, "step %zu: reset %lu", i, (unsigned long)r.reset_us);
        cr_expect_eq(r.retry_after_us, seq[i].allowed ? 0 : seq[i].reset, "step %zu", i);
    }
}

typedef struct never_case {
    policy_gcra_t g;
    uint32_t n;
} never_case_t;

static const never_case_t nevers[] = {
    {{SEC, 10}, 11},
    {{SEC, 10}, UINT32_MAX},
    {{11, 10}, 11},               /* would fit a window-bounded burst: 11 * 1 <= 11 */
    {{SEC, 300000}, 300001},      /* likewise: 300001 * 3 <= 1000000 */
    {{SEC, 3}, 4},
    {{31 * DAY, 1}, 2},
    {{31 * DAY, 1}, UINT32_MAX},  /* n * I is 1.2e22: a 64-bit product would wrap */
    {{31 * DAY, 1000000000}, 1000000001},
};

Test(limiter, more_than_the_limit_never_passes)
{
    for (size_t i = 0; i < COUNT(nevers); i++) {
        const never_case_t *c = &nevers[i];
        /* fresh, long idle, and at the far end of the clock */
        static const uint64_t nows[] = {T0, T0 + 365 * DAY, UINT64_MAX / 2};
        for (size_t k = 0; k < COUNT(nows); k++) {
            uint64_t tat = 0;
            policy_gcra_result_t r = step(&c->g, &tat, nows[k], c->n);
            cr_expect(!r.allowed, "case %zu now %zu: %u calls admitted", i, k, c->n);
            cr_expect_eq(r.retry_after_us, UINT64_MAX, "case %zu: a batch that never fits has no retry time", i);
            cr_expect_eq(r.remaining, c->g.limit, "case %zu: a refusal spent calls", i);
            /* the whole limit at once still passes */
            r = step(&c->g, &tat, nows[k], c->g.limit);
            cr_expect(r.allowed, "case %zu now %zu: limit %u refused", i, k, c->g.limit);
        }
    }
}

/* The n whose n * I just passes 2^64: a 64-bit product wraps to less than I,
 * which would admit it. */
Test(limiter, batch_product_past_64_bits)
{
    static const uint64_t windows[] = {DAY, 31 * DAY};
    for (size_t i = 0; i < COUNT(windows); i++) {
        const policy_gcra_t g = {windows[i], 1};
        uint64_t n = UINT64_MAX / g.window_us + 1;
        cr_assert_leq(n, UINT32_MAX);
        uint64_t tat = 0;
        policy_gcra_result_t r = step(&g, &tat, T0, (uint32_t)n);
        cr_expect(!r.allowed, "window %zu: %lu calls admitted", i, (unsigned long)n);
        cr_expect_eq(r.retry_after_us, UINT64_MAX);
        cr_expect_eq(tat, 0);
    }
}

/* ---- big windows -------------------------------------------------------- */

Test(limiter, per_day_and_month_big_limits)
{
    static const struct {
        policy_gcra_t g;
        uint64_t interval;
    } cases[] = {
        {{DAY, 1000000000}, 86},
        {{DAY, UINT32_MAX}, 20},
        {{31 * DAY, 1000000000}, 2678},
        {{31 * DAY, UINT32_MAX}, 623},
        {{31 * DAY, 1}, 31 * DAY},
        {{30 * DAY, 300000000}, 8640},   /* Alchemy's 300M CU a month */
    };
    for (size_t i = 0; i < COUNT(cases); i++) {
        const policy_gcra_t *g = &cases[i].g;
        uint64_t I = cases[i].interval;
        uint64_t tat = 0;
        cr_expect_eq(policy_gcra_interval(g), I, "case %zu: the interval one call adds", i);
        cr_expect_eq(policy_gcra_available(g, tat, T0, UINT32_MAX), g->limit, "case %zu", i);
        /* the whole burst as one batch, then nothing */
        policy_gcra_result_t r = step(g, &tat, T0, g->limit);
        cr_assert(r.allowed, "case %zu: the burst was refused", i);
        cr_expect_eq(r.remaining, 0, "case %zu", i);
        cr_expect_eq(r.reset_us, (uint64_t)g->limit * I, "case %zu: reset %lu", i, (unsigned long)r.reset_us);
        cr_expect_leq(r.reset_us, g->window_us, "case %zu", i);
        r = step(g, &tat, T0, 1);
        cr_expect(!r.allowed, "case %zu", i);
        cr_expect_eq(r.retry_after_us, I, "case %zu: retry %lu", i, (unsigned long)r.retry_after_us);
        /* a quarter of the window later, a quarter of the burst (to within one call) is back */
        uint64_t q = g->window_us / 4;
        uint32_t back = policy_gcra_available(g, tat, T0 + q, UINT32_MAX);
        cr_expect(back == q / I || back + 1 == q / I, "case %zu: %u back after W/4", i, back);
    }
}

/* ---- the interval a cell stores (state/ evicts by calls owed) ----------- */

Test(limiter, interval_is_what_one_call_adds)
{
    static const policy_gcra_t gs[] = {{SEC, 5}, {60 * SEC, 200}, {DAY, 1000}, {SEC, 3000000}, {SEC, 0}};
    for (size_t i = 0; i < COUNT(gs); i++) {
        uint64_t tat = 0;
        policy_gcra_result_t r = step(&gs[i], &tat, T0, 1);
        cr_assert(r.allowed, "case %zu", i);
        /* limit 0 leaves the TAT alone: nothing added, interval 0 */
        uint64_t added = gs[i].limit == 0 ? 0 : tat - T0;
        cr_expect_eq(policy_gcra_interval(&gs[i]), added, "case %zu: interval %lu, one call added %lu", i,
                     (unsigned long)policy_gcra_interval(&gs[i]), (unsigned long)added);
    }
    cr_expect_eq(policy_gcra_interval(&gs[0]), 200000);
    cr_expect_eq(policy_gcra_interval(&gs[2]), 86400000);
}

/* ---- no limit, nothing asked --------------------------------------------- */

Test(limiter, limit_zero_is_no_limit)
{
    static const uint64_t windows[] = {0, 1, SEC, 31 * DAY};
    static const uint32_t ns[] = {0, 1, 1000, UINT32_MAX};
    for (size_t w = 0; w < COUNT(windows); w++)
        for (size_t k = 0; k < COUNT(ns); k++) {
            const policy_gcra_t g = {windows[w], 0};
            uint64_t tat = T0 + 12345;
            policy_gcra_result_t r = step(&g, &tat, T0, ns[k]);
            cr_expect(r.allowed);
            cr_expect_eq(r.remaining, UINT32_MAX);
            cr_expect_eq(r.reset_us, 0);
            cr_expect_eq(r.retry_after_us, 0);
            cr_expect_eq(r.new_tat_us, T0 + 12345, "limit 0 moved the TAT");
            cr_expect_eq(policy_gcra_available(&g, tat, T0, ns[k]), ns[k]);
        }
}

Test(limiter, n_zero_changes_nothing)
{
    const policy_gcra_t g = {SEC, 10};
    static const uint64_t tats[] = {0, T0, T0 + 300000, T0 + SEC, T0 + 50 * SEC}; /* the last: over capacity */
    static const uint32_t left[] = {10, 10, 7, 0, 0};
    for (size_t i = 0; i < COUNT(tats); i++) {
        policy_gcra_result_t r;
        policy_gcra_check(&g, tats[i], T0, 0, &r);
        cr_expect(r.allowed, "tat %zu", i);
        cr_expect_eq(r.new_tat_us, tats[i], "tat %zu", i);
        cr_expect_eq(r.remaining, left[i], "tat %zu: remaining %u", i, r.remaining);
        cr_expect_eq(r.retry_after_us, 0);
    }
}

/* ---- available() --------------------------------------------------------- */

Test(limiter, available_agrees_with_repeated_checks)
{
    static const int64_t offsets[] = {-(int64_t)(10 * SEC), -1, 0, 1, 99999, 100000, 450001, 999999,
                                      (int64_t)SEC, (int64_t)SEC + 1, (int64_t)(7 * SEC)};
    for (size_t i = 0; i < COUNT(shapes); i++) {
        const policy_gcra_t *g = &shapes[i].g;
        if (g->limit > 100000)
            continue; /* one check per call: keep it quick */
        for (size_t k = 0; k < COUNT(offsets); k++) {
            uint64_t start = (uint64_t)((int64_t)T0 + offsets[k]);
            uint32_t avail = policy_gcra_available(g, start, T0, UINT32_MAX);
            uint64_t tat = start;
            uint32_t passed = drain(g, &tat, T0, g->limit + 2);
            cr_expect_eq(avail, passed, "shape %zu offset %ld: available %u, checks passed %u", i, (long)offsets[k],
                         avail, passed);
            /* max caps it */
            cr_expect_eq(policy_gcra_available(g, start, T0, 2), avail < 2 ? avail : 2);
            cr_expect_eq(policy_gcra_available(g, start, T0, 0), 0);
        }
    }
}

/* ---- clocks that go back ------------------------------------------------- */

Test(limiter, clock_going_back)
{
    const policy_gcra_t g = {SEC, 10};
    uint64_t tat = 0;
    cr_assert_eq(drain(&g, &tat, T0, 100), 10);
    /* another worker's clock is 5 s behind: the cell looks 6 s booked, so it
     * refuses, and its reset is when its own clock catches up */
    uint64_t behind = T0 - 5 * SEC;
    policy_gcra_result_t r = step(&g, &tat, behind, 1);
    cr_expect(!r.allowed);
    cr_expect_eq(r.remaining, 0);
    cr_expect_eq(r.reset_us, 5 * SEC + 100000, "reset %lu", (unsigned long)r.reset_us);
    cr_expect(step(&g, &tat, behind + r.reset_us, 1).allowed);
    cr_expect_eq(policy_gcra_available(&g, tat, behind, 10), 0);
    cr_expect_eq(policy_gcra_available(&g, tat, 0, 10), 0);

    /* the extremes: TAT at the end of time, now at its start */
    static const struct {
        uint64_t tat, now;
    } ext[] = {{UINT64_MAX, 0}, {UINT64_MAX, T0}, {UINT64_MAX, UINT64_MAX - 2 * SEC}, {T0, 0}};
    for (size_t i = 0; i < COUNT(ext); i++) {
        uint64_t t = ext[i].tat;
        r = step(&g, &t, ext[i].now, 1);
        cr_expect(!r.allowed, "ext %zu", i);
        cr_expect_eq(r.remaining, 0, "ext %zu", i);
        cr_expect_eq(r.reset_us, ext[i].tat - ext[i].now - (SEC - 100000), "ext %zu: reset %lu", i,
                     (unsigned long)r.reset_us);
        cr_expect_eq(policy_gcra_available(&g, ext[i].tat, ext[i].now, 10), 0, "ext %zu", i);
    }
    /* now at the end of time: the new TAT saturates rather than wrapping to the past */
    uint64_t t = 0;
    r = step(&g, &t, UINT64_MAX - 10, 1);
    cr_expect(r.allowed);
    cr_expect_geq(r.new_tat_us, UINT64_MAX - 10);
}

/* ---- bucket names -------------------------------------------------------- */

Test(limiter, bucket_names)
{
    cr_expect_str_eq(policy_bucket_name(POLICY_BUCKET_STANDARD), "standard");
    cr_expect_str_eq(policy_bucket_name(POLICY_BUCKET_READ), "read");
    cr_expect_str_eq(policy_bucket_name(POLICY_BUCKET_COUNT), "unknown");
    cr_expect_str_eq(policy_bucket_name((policy_bucket_t)-1), "unknown");
    for (int b = 0; b < POLICY_BUCKET_COUNT; b++)
        for (int c = 0; c < b; c++)
            cr_expect_str_neq(policy_bucket_name(b), policy_bucket_name(c));
}

/* The shape handed to Redis is the one the C arithmetic uses: a cell that
 * admits k calls at backlog d is exactly floor((C - d) / I) of them. */
Test(limiter, shape_agrees_with_available)
{
    static const policy_gcra_t cases[] = {
        {1000000, 10}, {1000000, 3}, {1000000, 300000}, {1000000, 1000000}, {1000000, 4000000},
        {60000000, 7}, {86400000000ull, 1}, {86400000000ull, 4294967295u},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        uint64_t i, cap;
        policy_gcra_shape(&cases[c], &i, &cap);
        cr_assert_gt(i, 0);
        cr_expect_leq(cap, cases[c].window_us, "the burst never exceeds the window");
        for (uint64_t d = 0; d <= cap + i; d += cap / 7 + 1) {
            uint64_t now = 5000000000ull, tat = now + d;
            uint64_t fits = d >= cap ? 0 : (cap - d) / i;
            uint32_t want = fits > 100000 ? 100000 : (uint32_t)fits + 3;
            uint32_t got = policy_gcra_available(&cases[c], tat, now, want);
            cr_expect_eq(got, fits < want ? fits : want, "limit %u backlog %llu", cases[c].limit, (unsigned long long)d);
        }
    }
    uint64_t i = 9, cap = 9;
    policy_gcra_shape(&(policy_gcra_t){1000000, 0}, &i, &cap);
    cr_expect_eq(i, 0);
    cr_expect_eq(cap, 0);
}
