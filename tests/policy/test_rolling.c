/* tests/policy/test_rolling.c: rolling-window counters and rates, and the
 * credit forecast built on them. */
#include <criterion/criterion.h>

#include "policy/credit.h"
#include "policy/rolling.h"

Test(rolling, counts_fall_out_of_the_window)
{
    policy_roll_t r = {0};
    uint64_t v[POLICY_ROLL_SLOTS][2] = {{0}}, out[2];
    /* 10 s window: 1 s slots */
    policy_roll_add(&r, &v[0][0], 2, 10000, 100500, 0, 3);
    policy_roll_add(&r, &v[0][0], 2, 10000, 100900, 1, 1);
    policy_roll_add(&r, &v[0][0], 2, 10000, 105000, 0, 2);
    policy_roll_sum(&r, &v[0][0], 2, 10000, 105000, out);
    cr_expect_eq(out[0], 5);
    cr_expect_eq(out[1], 1);
    /* at 109.999 s the slot of 100 s is still inside; at 110 s it is out */
    policy_roll_sum(&r, &v[0][0], 2, 10000, 109999, out);
    cr_expect_eq(out[0], 5);
    policy_roll_sum(&r, &v[0][0], 2, 10000, 110000, out);
    cr_expect_eq(out[0], 2);
    cr_expect_eq(out[1], 0);
    policy_roll_sum(&r, &v[0][0], 2, 10000, 200000, out);
    cr_expect_eq(out[0], 0);
    /* a recycled slot starts from zero */
    policy_roll_add(&r, &v[0][0], 2, 10000, 110100, 0, 7);
    policy_roll_sum(&r, &v[0][0], 2, 10000, 110100, out);
    cr_expect_eq(out[0], 9);
    cr_expect_eq(out[1], 0);
}

Test(rolling, counter_out_of_width_is_ignored)
{
    policy_roll_t r = {0};
    uint64_t v[POLICY_ROLL_SLOTS][1] = {{0}}, out[1];
    policy_roll_add(&r, &v[0][0], 1, 1000, 5000, 1, 9);
    policy_roll_sum(&r, &v[0][0], 1, 1000, 5000, out);
    cr_expect_eq(out[0], 0);
}

Test(rolling, span_and_rate)
{
    policy_roll_t r = {0};
    uint64_t v[POLICY_ROLL_SLOTS][1] = {{0}};
    cr_expect_eq(policy_roll_span_ms(&r, 10000, 5000), 0);
    policy_roll_add(&r, &v[0][0], 1, 10000, 100000, 0, 1);
    /* young: the span is the age */
    cr_expect_eq(policy_roll_span_ms(&r, 10000, 102499), 2500);
    /* old: nine full slots and the current one so far */
    cr_expect_eq(policy_roll_span_ms(&r, 10000, 200499), 9500);
    cr_expect_eq(policy_roll_rate_milli(50, 10000), 5000);
    cr_expect_eq(policy_roll_rate_milli(1, 3), 333333);
    cr_expect_eq(policy_roll_rate_milli(7, 0), 0);
    cr_expect_eq(policy_roll_rate_milli(UINT64_MAX, 1000), UINT64_MAX / 1000 * 1000000);
}

/* A steady 40 calls/s, added each 25 ms, reads as 40/s at any time. */
Test(rolling, steady_rate_reads_back)
{
    policy_roll_t r = {0};
    uint64_t v[POLICY_ROLL_SLOTS][1] = {{0}}, out[1];
    for (uint64_t t = 1000000; t < 1030000; t += 25) {
        policy_roll_add(&r, &v[0][0], 1, 10000, t, 0, 1);
        if (t > 1012000 && t % 1000 == 0) {
            policy_roll_sum(&r, &v[0][0], 1, 10000, t, out);
            uint64_t rate = policy_roll_rate_milli(out[0], policy_roll_span_ms(&r, 10000, t));
            cr_expect(rate > 38000 && rate < 42000, "at %llu: %llu", (unsigned long long)t, (unsigned long long)rate);
        }
    }
}

Test(credit, forecast_is_left_over_the_spend_rate)
{
    double s = -1;
    int before = -1;
    cr_expect_eq(policy_credit_forecast(1000, 0, 0, 10000, &s, &before), 0);
    cr_expect_eq(s, -1);
    /* 1000 left at 40/s: 25 s; the window ends in 60 s */
    cr_expect_eq(policy_credit_forecast(1000, 40000, 1000, 61000, &s, &before), 1);
    cr_expect_float_eq(s, 25.0, 1e-9);
    cr_expect_eq(before, 1);
    cr_expect_eq(policy_credit_forecast(1000, 10000, 1000, 61000, &s, &before), 1);
    cr_expect_float_eq(s, 100.0, 1e-9);
    cr_expect_eq(before, 0);
    cr_expect_eq(policy_credit_forecast(0, 10000, 1000, 61000, &s, &before), 1);
    cr_expect_float_eq(s, 0.0, 1e-9);
    cr_expect_eq(before, 1);
}
