/* tests/policy/test_breaker.c: policy/breaker.h: the allowed-edges table, the
 * cooldown doubling, the probe deadline and the rolling window's rules. Time
 * is always passed in; nothing here reads a clock. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "policy/breaker.h"

#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))

static const policy_breaker_state_t all_states[] = {POLICY_BREAKER_CLOSED, POLICY_BREAKER_OPEN,
                                                    POLICY_BREAKER_HALF_OPEN};

/* ---- the state machine --------------------------------------------------- */

typedef struct edge_case {
    policy_breaker_state_t from, to;
    int allowed;
} edge_case_t;

/* Every ordered pair, self-loops included. */
static const edge_case_t edge_cases[] = {
    {POLICY_BREAKER_CLOSED, POLICY_BREAKER_CLOSED, 0},
    {POLICY_BREAKER_CLOSED, POLICY_BREAKER_OPEN, 1},
    {POLICY_BREAKER_CLOSED, POLICY_BREAKER_HALF_OPEN, 0},
    {POLICY_BREAKER_OPEN, POLICY_BREAKER_CLOSED, 0},
    {POLICY_BREAKER_OPEN, POLICY_BREAKER_OPEN, 0},
    {POLICY_BREAKER_OPEN, POLICY_BREAKER_HALF_OPEN, 1},
    {POLICY_BREAKER_HALF_OPEN, POLICY_BREAKER_CLOSED, 1},
    {POLICY_BREAKER_HALF_OPEN, POLICY_BREAKER_OPEN, 1},
    {POLICY_BREAKER_HALF_OPEN, POLICY_BREAKER_HALF_OPEN, 0},
};

Test(breaker, edge_table_covers_every_pair)
{
    cr_assert_eq(NELEMS(edge_cases), (size_t)POLICY_BREAKER_STATE_COUNT * POLICY_BREAKER_STATE_COUNT);
    unsigned seen = 0;
    for (size_t i = 0; i < NELEMS(edge_cases); i++)
        seen |= 1u << (edge_cases[i].from * POLICY_BREAKER_STATE_COUNT + edge_cases[i].to);
    cr_assert_eq(seen, (1u << (POLICY_BREAKER_STATE_COUNT * POLICY_BREAKER_STATE_COUNT)) - 1);
}

Test(breaker, edge_allowed)
{
    for (size_t i = 0; i < NELEMS(edge_cases); i++) {
        const edge_case_t *c = &edge_cases[i];
        cr_expect_eq(policy_breaker_edge_allowed(c->from, c->to), c->allowed, "%s -> %s",
                     policy_breaker_state_name(c->from), policy_breaker_state_name(c->to));
    }
    /* out of range on either side */
    for (size_t i = 0; i < NELEMS(all_states); i++) {
        cr_expect_eq(policy_breaker_edge_allowed(all_states[i], POLICY_BREAKER_STATE_COUNT), 0);
        cr_expect_eq(policy_breaker_edge_allowed(POLICY_BREAKER_STATE_COUNT, all_states[i]), 0);
        cr_expect_eq(policy_breaker_edge_allowed(all_states[i], (policy_breaker_state_t)-1), 0);
    }
}

Test(breaker, transition_follows_edges)
{
    const policy_breaker_conf_t conf = POLICY_BREAKER_DEFAULTS;
    for (size_t i = 0; i < NELEMS(edge_cases); i++) {
        const edge_case_t *c = &edge_cases[i];
        policy_breaker_t b = {.state = c->from, .since_ms = 111, .cooldown_ms = 2222, .opened_at_ms = 33};
        policy_breaker_t before = b;
        sl_err_t err = policy_breaker_transition(&b, &conf, c->to, 5000);
        if (!c->allowed) {
            cr_expect_eq(err, SL_ERR_STATE, "%s -> %s: %s", policy_breaker_state_name(c->from),
                         policy_breaker_state_name(c->to), sl_err_name(err));
            cr_expect(memcmp(&b, &before, sizeof(b)) == 0, "%s -> %s changed the breaker",
                      policy_breaker_state_name(c->from), policy_breaker_state_name(c->to));
            continue;
        }
        cr_expect_eq(err, SL_OK, "%s -> %s: %s", policy_breaker_state_name(c->from),
                     policy_breaker_state_name(c->to), sl_err_name(err));
        cr_expect_eq(b.state, c->to);
        cr_expect_eq(b.since_ms, 5000, "%s -> %s: since_ms", policy_breaker_state_name(c->from),
                     policy_breaker_state_name(c->to));
    }
}

Test(breaker, transition_to_out_of_range_state)
{
    const policy_breaker_conf_t conf = POLICY_BREAKER_DEFAULTS;
    for (size_t i = 0; i < NELEMS(all_states); i++) {
        policy_breaker_t b = {.state = all_states[i], .since_ms = 1, .cooldown_ms = 2, .opened_at_ms = 3};
        policy_breaker_t before = b;
        cr_expect_eq(policy_breaker_transition(&b, &conf, POLICY_BREAKER_STATE_COUNT, 9), SL_ERR_STATE);
        cr_expect(memcmp(&b, &before, sizeof(b)) == 0);
    }
}

Test(breaker, first_open_sets_cooldown_and_opened_at)
{
    policy_breaker_conf_t conf = POLICY_BREAKER_DEFAULTS;
    conf.cooldown_ms = 7000;
    policy_breaker_t b = {.state = POLICY_BREAKER_CLOSED, .since_ms = 10, .cooldown_ms = 0, .opened_at_ms = 0};
    cr_assert_eq(policy_breaker_transition(&b, &conf, POLICY_BREAKER_OPEN, 12345), SL_OK);
    cr_expect_eq(b.state, POLICY_BREAKER_OPEN);
    cr_expect_eq(b.cooldown_ms, 7000);
    cr_expect_eq(b.opened_at_ms, 12345);
    cr_expect_eq(b.since_ms, 12345);
}

/* Each row: the conf, then the cooldown after the first open and after each
 * failed probe (HALF_OPEN -> OPEN); 0 ends the row. */
typedef struct doubling_case {
    uint32_t cooldown_ms, max_cooldown_ms;
    uint32_t expect[12];
} doubling_case_t;

static const doubling_case_t doubling_cases[] = {
    {1000, 10000, {1000, 2000, 4000, 8000, 10000, 10000, 10000}},
    {5000, 300000, {5000, 10000, 20000, 40000, 80000, 160000, 300000, 300000}},
    {3, 7, {3, 6, 7, 7}},
    {1000, 1000, {1000, 1000, 1000}},
    /* doubling past 2^32 must saturate at the cap, not wrap */
    {3000000000u, UINT32_MAX, {3000000000u, UINT32_MAX, UINT32_MAX}},
    {0x80000000u, 0xfffffff0u, {0x80000000u, 0xfffffff0u, 0xfffffff0u}},
};

Test(breaker, cooldown_doubles_up_to_cap)
{
    for (size_t i = 0; i < NELEMS(doubling_cases); i++) {
        const doubling_case_t *c = &doubling_cases[i];
        policy_breaker_conf_t conf = POLICY_BREAKER_DEFAULTS;
        conf.cooldown_ms = c->cooldown_ms;
        conf.max_cooldown_ms = c->max_cooldown_ms;
        policy_breaker_t b = {.state = POLICY_BREAKER_CLOSED};
        uint64_t now = 1000;
        cr_assert_eq(policy_breaker_transition(&b, &conf, POLICY_BREAKER_OPEN, now), SL_OK);
        cr_expect_eq(b.cooldown_ms, c->expect[0], "case %zu step 0: %u", i, b.cooldown_ms);
        for (size_t k = 1; k < NELEMS(c->expect) && c->expect[k] != 0; k++) {
            now += 10;
            cr_assert_eq(policy_breaker_transition(&b, &conf, POLICY_BREAKER_HALF_OPEN, now), SL_OK);
            cr_expect_eq(b.cooldown_ms, c->expect[k - 1], "case %zu step %zu: HALF_OPEN changed the cooldown", i, k);
            now += 10;
            cr_assert_eq(policy_breaker_transition(&b, &conf, POLICY_BREAKER_OPEN, now), SL_OK);
            cr_expect_eq(b.cooldown_ms, c->expect[k], "case %zu step %zu: %u, expected %u", i, k, b.cooldown_ms,
                         c->expect[k]);
            cr_expect_eq(b.opened_at_ms, 1000, "case %zu step %zu: a failed probe moved opened_at", i, k);
            cr_expect_eq(b.since_ms, now);
        }
    }
}

Test(breaker, closing_resets_cooldown)
{
    policy_breaker_conf_t conf = POLICY_BREAKER_DEFAULTS;
    conf.cooldown_ms = 1000;
    conf.max_cooldown_ms = 60000;
    policy_breaker_t b = {.state = POLICY_BREAKER_CLOSED};
    cr_assert_eq(policy_breaker_transition(&b, &conf, POLICY_BREAKER_OPEN, 100), SL_OK);
    cr_assert_eq(policy_breaker_transition(&b, &conf, POLICY_BREAKER_HALF_OPEN, 1100), SL_OK);
    cr_assert_eq(policy_breaker_transition(&b, &conf, POLICY_BREAKER_OPEN, 1200), SL_OK);
    cr_assert_eq(b.cooldown_ms, 2000);
    cr_assert_eq(policy_breaker_transition(&b, &conf, POLICY_BREAKER_HALF_OPEN, 3200), SL_OK);
    cr_assert_eq(policy_breaker_transition(&b, &conf, POLICY_BREAKER_CLOSED, 3300), SL_OK);
    cr_expect_eq(b.state, POLICY_BREAKER_CLOSED);
    cr_expect_eq(b.cooldown_ms, 0);
    cr_expect_eq(b.since_ms, 3300);
    /* the next outage starts over: first cooldown, new opened_at */
    cr_assert_eq(policy_breaker_transition(&b, &conf, POLICY_BREAKER_OPEN, 9000), SL_OK);
    cr_expect_eq(b.cooldown_ms, 1000);
    cr_expect_eq(b.opened_at_ms, 9000);
}

Test(breaker, since_set_on_every_transition)
{
    const policy_breaker_conf_t conf = POLICY_BREAKER_DEFAULTS;
    static const struct {
        policy_breaker_state_t to;
        uint64_t now;
    } steps[] = {
        {POLICY_BREAKER_OPEN, 10},        {POLICY_BREAKER_HALF_OPEN, 5010}, {POLICY_BREAKER_OPEN, 5020},
        {POLICY_BREAKER_HALF_OPEN, 15020}, {POLICY_BREAKER_CLOSED, 15021},  {POLICY_BREAKER_OPEN, 99999999999ull},
    };
    policy_breaker_t b = {.state = POLICY_BREAKER_CLOSED, .since_ms = 0};
    for (size_t i = 0; i < NELEMS(steps); i++) {
        cr_assert_eq(policy_breaker_transition(&b, &conf, steps[i].to, steps[i].now), SL_OK, "step %zu", i);
        cr_expect_eq(b.state, steps[i].to, "step %zu", i);
        cr_expect_eq(b.since_ms, steps[i].now, "step %zu", i);
    }
}

Test(breaker, probe_due_exactly_at_cooldown_end)
{
    policy_breaker_t b = {.state = POLICY_BREAKER_OPEN, .since_ms = 1000, .cooldown_ms = 5000, .opened_at_ms = 1000};
    static const struct {
        uint64_t now;
        int due;
    } cases[] = {
        {0, 0}, {1000, 0}, {5999, 0}, {6000, 1}, {6001, 1}, {UINT64_MAX / 2, 1},
    };
    for (size_t i = 0; i < NELEMS(cases); i++)
        cr_expect_eq(policy_breaker_probe_due(&b, cases[i].now), cases[i].due, "now %llu",
                     (unsigned long long)cases[i].now);
    /* only an OPEN breaker has a probe due */
    b.state = POLICY_BREAKER_HALF_OPEN;
    cr_expect_eq(policy_breaker_probe_due(&b, 6000), 0);
    b.state = POLICY_BREAKER_CLOSED;
    cr_expect_eq(policy_breaker_probe_due(&b, 6000), 0);
}

Test(breaker, probe_due_after_real_transitions)
{
    policy_breaker_conf_t conf = POLICY_BREAKER_DEFAULTS;
    conf.cooldown_ms = 400;
    policy_breaker_t b = {.state = POLICY_BREAKER_CLOSED};
    cr_assert_eq(policy_breaker_transition(&b, &conf, POLICY_BREAKER_OPEN, 100), SL_OK);
    cr_expect_eq(policy_breaker_probe_due(&b, 499), 0);
    cr_expect_eq(policy_breaker_probe_due(&b, 500), 1);
    cr_assert_eq(policy_breaker_transition(&b, &conf, POLICY_BREAKER_HALF_OPEN, 500), SL_OK);
    cr_assert_eq(policy_breaker_transition(&b, &conf, POLICY_BREAKER_OPEN, 600), SL_OK);
    /* doubled: 800 from 600 */
    cr_expect_eq(policy_breaker_probe_due(&b, 1399), 0);
    cr_expect_eq(policy_breaker_probe_due(&b, 1400), 1);
}

Test(breaker, allows_only_closed)
{
    for (size_t i = 0; i < NELEMS(all_states); i++) {
        policy_breaker_t b = {.state = all_states[i]};
        cr_expect_eq(policy_breaker_allows(&b), all_states[i] == POLICY_BREAKER_CLOSED, "%s",
                     policy_breaker_state_name(all_states[i]));
    }
}

Test(breaker, state_names)
{
    cr_expect_str_eq(policy_breaker_state_name(POLICY_BREAKER_CLOSED), "closed");
    cr_expect_str_eq(policy_breaker_state_name(POLICY_BREAKER_OPEN), "open");
    cr_expect_str_eq(policy_breaker_state_name(POLICY_BREAKER_HALF_OPEN), "half_open");
    cr_expect_str_eq(policy_breaker_state_name(POLICY_BREAKER_STATE_COUNT), "unknown");
    cr_expect_str_eq(policy_breaker_state_name((policy_breaker_state_t)-1), "unknown");
}

/* ---- the rolling window -------------------------------------------------- */

/* A sequence of outcomes ('F' failure, 'S' success), all at one instant,
 * and the step at which policy_window_record() first says "open" (-1: never). */
typedef struct seq_case {
    const char *why;
    uint32_t min_calls, failure_count, failure_ratio_pct, consecutive;
    const char *outcomes;
    int opens_at;
} seq_case_t;

static const seq_case_t seq_cases[] = {
    /* consecutive rule alone (min_calls out of reach) */
    {"N in a row", 1000, 1000, 0, 3, "FFF", 2},
    {"N-1 then success resets", 1000, 1000, 0, 3, "FFSFFSFF", -1},
    {"reset then N in a row", 1000, 1000, 0, 3, "FFSFFF", 5},
    {"success first", 1000, 1000, 0, 3, "SSSSFFF", 6},
    {"consecutive 1", 1000, 1000, 0, 1, "SSF", 2},
    {"consecutive 0 disables", 1000, 1000, 0, 0, "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF", -1},
    /* count + ratio + min_calls (consecutive off) */
    {"5 of 10 at 50%", 10, 5, 50, 0, "SSSSSFFFFF", 9},
    {"4 of 10: count short", 10, 5, 50, 0, "SSSSSSFFFF", -1},
    {"5 of 9: min_calls short", 10, 5, 50, 0, "SSSSFFFFF", -1},
    {"min_calls reached on the 6th failure", 10, 5, 50, 0, "SSSSFFFFFF", 9},
    {"5 of 15 is 33%", 10, 5, 50, 0, "SSSSSSSSSSFFFFF", -1},
    {"10 of 20 is 50%", 10, 5, 50, 0, "SSSSSSSSSSFFFFFFFFFF", 19},
    {"all failures: opens at min_calls", 10, 5, 50, 0, "FFFFFFFFFFFF", 9},
    {"ratio 100% needs all failures", 4, 2, 100, 0, "SFFFF", -1},
    {"ratio 100% all failures", 4, 2, 100, 0, "FFFF", 3},
    {"ratio 0%: count alone", 1, 3, 0, 0, "SSSSSSSSSSFSFSF", 14},
    {"min_calls 0", 0, 1, 0, 0, "F", 0},
    {"a success never opens", 10, 5, 50, 0, "FFFFFSSSSS", -1},
    {"50 of 101 is 49%", 100, 1, 50, 0,
     "SSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSS"
     "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF", -1},
    {"51 of 102 is 50%", 100, 1, 50, 0,
     "SSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSS"
     "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF", 101},
    /* both rules live: whichever comes first */
    {"consecutive before ratio", 100, 50, 50, 3, "SSFFF", 4},
    {"ratio before consecutive", 4, 2, 50, 5, "SFSF", 3},
};

Test(breaker, window_sequences)
{
    for (size_t i = 0; i < NELEMS(seq_cases); i++) {
        const seq_case_t *c = &seq_cases[i];
        policy_breaker_conf_t conf = POLICY_BREAKER_DEFAULTS;
        conf.window_ms = 30000;
        conf.min_calls = c->min_calls;
        conf.failure_count = c->failure_count;
        conf.failure_ratio_pct = c->failure_ratio_pct;
        conf.consecutive = c->consecutive;
        policy_window_t w;
        policy_window_reset(&w);
        int first = -1;
        for (size_t k = 0; c->outcomes[k] != '\0'; k++) {
            int open = policy_window_record(&w, &conf, c->outcomes[k] == 'F', 1000000);
            if (c->outcomes[k] == 'S')
                cr_expect_eq(open, 0, "%s: step %zu: a success said open", c->why, k);
            if (open && first < 0)
                first = (int)k;
        }
        cr_expect_eq(first, c->opens_at, "%s: opened at step %d, expected %d", c->why, first, c->opens_at);
    }
}

Test(breaker, consecutive_counts_across_buckets)
{
    policy_breaker_conf_t conf = POLICY_BREAKER_DEFAULTS;
    conf.window_ms = 1000; /* buckets of 100 ms */
    conf.min_calls = 1000;
    conf.consecutive = 4;
    policy_window_t w;
    policy_window_reset(&w);
    cr_expect_eq(policy_window_record(&w, &conf, 1, 10000), 0);
    cr_expect_eq(policy_window_record(&w, &conf, 1, 10150), 0);
    cr_expect_eq(policy_window_record(&w, &conf, 1, 10420), 0);
    cr_expect_eq(w.consecutive, 3);
    cr_expect_eq(policy_window_record(&w, &conf, 1, 10790), 1);
}

/* Failures recorded at t0, one more failure at t1: does it open? window 1000 ms,
 * 5 failures needed, no ratio, no consecutive rule. */
typedef struct expiry_case {
    uint64_t t0, t1;
    int open;
} expiry_case_t;

static const expiry_case_t expiry_cases[] = {
    {10000, 10000, 1},
    {10000, 10500, 1},
    {10000, 10950, 1},
    {10000, 11100, 0}, /* the bucket of t0 has left the window */
    {10000, 12000, 0},
    {10000, 20000, 0}, /* same ring slot, many windows later */
    {10050, 10999, 1},
    {10050, 13150, 0}, /* a stale slot left by an earlier lap */
};

Test(breaker, old_failures_expire)
{
    policy_breaker_conf_t conf = POLICY_BREAKER_DEFAULTS;
    conf.window_ms = 1000;
    conf.min_calls = 1;
    conf.failure_count = 5;
    conf.failure_ratio_pct = 0;
    conf.consecutive = 0;
    for (size_t i = 0; i < NELEMS(expiry_cases); i++) {
        const expiry_case_t *c = &expiry_cases[i];
        policy_window_t w;
        policy_window_reset(&w);
        for (int k = 0; k < 4; k++)
            cr_assert_eq(policy_window_record(&w, &conf, 1, c->t0), 0, "case %zu", i);
        cr_expect_eq(policy_window_record(&w, &conf, 1, c->t1), c->open, "case %zu: t0 %llu t1 %llu", i,
                     (unsigned long long)c->t0, (unsigned long long)c->t1);
    }
}

Test(breaker, totals_follow_the_clock)
{
    policy_breaker_conf_t conf = POLICY_BREAKER_DEFAULTS;
    conf.window_ms = 1000;
    policy_window_t w;
    policy_window_reset(&w);
    /* bucket [5000,5100): 3 calls, 2 failures; [5300,5400): 2 calls, 1 failure;
     * [5900,6000): 1 call, 0 failures */
    (void)policy_window_record(&w, &conf, 1, 5000);
    (void)policy_window_record(&w, &conf, 1, 5050);
    (void)policy_window_record(&w, &conf, 0, 5099);
    (void)policy_window_record(&w, &conf, 1, 5300);
    (void)policy_window_record(&w, &conf, 0, 5399);
    (void)policy_window_record(&w, &conf, 0, 5900);
    static const struct {
        uint64_t now;
        uint32_t calls, failures;
    } cases[] = {
        {5950, 6, 3},
        {6000, 6, 3},
        {6099, 6, 3},  /* the first bucket ends at 5100 > 6099 - 1000 */
        {6100, 3, 1},  /* ... and is out at 5100 <= 6100 - 1000 */
        {6399, 3, 1},
        {6400, 1, 0},
        {6999, 1, 0},
        {7000, 0, 0},
        {100000, 0, 0},
    };
    for (size_t i = 0; i < NELEMS(cases); i++) {
        uint32_t calls = 99, failures = 99;
        policy_window_totals(&w, &conf, cases[i].now, &calls, &failures);
        cr_expect_eq(calls, cases[i].calls, "now %llu: calls %u", (unsigned long long)cases[i].now, calls);
        cr_expect_eq(failures, cases[i].failures, "now %llu: failures %u", (unsigned long long)cases[i].now,
                     failures);
    }
}

Test(breaker, totals_after_a_lap_of_the_ring)
{
    policy_breaker_conf_t conf = POLICY_BREAKER_DEFAULTS;
    conf.window_ms = 1000;
    policy_window_t w;
    policy_window_reset(&w);
    /* one call per bucket for three windows: only the last window's count */
    for (uint64_t t = 0; t < 3000; t += 100)
        (void)policy_window_record(&w, &conf, (t / 100) % 2, t);
    uint32_t calls, failures;
    policy_window_totals(&w, &conf, 2999, &calls, &failures);
    cr_expect_eq(calls, 10);
    cr_expect_eq(failures, 5);
}

Test(breaker, window_reset)
{
    policy_breaker_conf_t conf = POLICY_BREAKER_DEFAULTS;
    policy_window_t w;
    policy_window_reset(&w);
    for (int i = 0; i < 4; i++)
        (void)policy_window_record(&w, &conf, 1, 1000);
    policy_window_reset(&w);
    uint32_t calls = 9, failures = 9;
    policy_window_totals(&w, &conf, 1000, &calls, &failures);
    cr_expect_eq(calls, 0);
    cr_expect_eq(failures, 0);
    cr_expect_eq(w.consecutive, 0);
    /* the consecutive count starts over too: 4 + 1 would have opened */
    cr_expect_eq(policy_window_record(&w, &conf, 1, 1000), 0);
}

Test(breaker, tiny_window)
{
    /* window_ms below the bucket count: buckets of 1 ms, still a valid window */
    policy_breaker_conf_t conf = POLICY_BREAKER_DEFAULTS;
    conf.window_ms = 5;
    conf.min_calls = 1;
    conf.failure_count = 2;
    conf.failure_ratio_pct = 0;
    conf.consecutive = 0;
    policy_window_t w;
    policy_window_reset(&w);
    cr_expect_eq(policy_window_record(&w, &conf, 1, 100), 0);
    cr_expect_eq(policy_window_record(&w, &conf, 1, 103), 1);
    policy_window_reset(&w);
    cr_expect_eq(policy_window_record(&w, &conf, 1, 100), 0);
    cr_expect_eq(policy_window_record(&w, &conf, 1, 106), 0);
}
