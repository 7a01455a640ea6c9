/* tests/policy/test_retry.c: policy/retry.h: the full-jitter round backoff
 * and the rate-limit backoff that doubles across workers. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "policy/retry.h"

Test(retry, full_jitter_cap_doubles_per_round_up_to_max)
{
    /* rnd = cap gives the cap itself: base * 2^(round-1), capped */
    static const uint32_t caps[] = {50, 100, 200, 400, 800, 1000, 1000, 1000};
    for (uint32_t round = 1; round <= 8; round++) {
        uint32_t cap = caps[round - 1];
        cr_expect_eq(policy_retry_backoff_ms(50, 1000, round, cap), cap, "round %u", round);
        cr_expect_eq(policy_retry_backoff_ms(50, 1000, round, cap + 1), 0, "round %u wraps to 0", round);
        cr_expect_eq(policy_retry_backoff_ms(50, 1000, round, 0), 0);
    }
}

Test(retry, full_jitter_spans_zero_to_cap)
{
    /* every value in [0, cap] is reachable, none above */
    uint32_t cap = 400, seen_low = 0, seen_high = 0;
    for (uint32_t rnd = 0; rnd < 10000; rnd++) {
        uint32_t w = policy_retry_backoff_ms(50, 1000, 4, rnd * 2654435761u);
        cr_assert_leq(w, cap);
        seen_low |= w < cap / 4;
        seen_high |= w > cap * 3 / 4;
    }
    cr_expect(seen_low && seen_high);
}

Test(retry, full_jitter_huge_rounds_do_not_overflow)
{
    cr_expect_eq(policy_retry_backoff_ms(60000, 600000, UINT32_MAX, 600000), 600000);
    cr_expect_eq(policy_retry_backoff_ms(1, 1, 1000, 1), 1);
}

Test(retry, rate_backoff_starts_at_the_minimum)
{
    cr_expect_eq(policy_rate_backoff_ms(0, 0, 0, 5000), POLICY_RATE_BACKOFF_MIN_MS);
    /* a hinted mark before (prev 0) does not start a doubling */
    cr_expect_eq(policy_rate_backoff_ms(0, 4000, 0, 4100), POLICY_RATE_BACKOFF_MIN_MS);
}

Test(retry, rate_backoff_doubles_while_refusals_go_on)
{
    /* 1 s mark ended at 10 000; refused again right after, nothing served since */
    cr_expect_eq(policy_rate_backoff_ms(1000, 10000, 500, 10050), 2000);
    cr_expect_eq(policy_rate_backoff_ms(2000, 12050, 500, 12100), 4000);
    cr_expect_eq(policy_rate_backoff_ms(32000, 50000, 0, 50001), POLICY_RATE_BACKOFF_MAX_MS);
    cr_expect_eq(policy_rate_backoff_ms(POLICY_RATE_BACKOFF_MAX_MS, 50000, 0, 50001), POLICY_RATE_BACKOFF_MAX_MS);
    /* a refusal seen while the mark still ran (another worker's in-flight call) doubles too */
    cr_expect_eq(policy_rate_backoff_ms(1000, 10000, 0, 9990), 2000);
}

Test(retry, rate_backoff_starts_over_once_served_or_long_after)
{
    /* served after the previous mark ended: the endpoint recovered */
    cr_expect_eq(policy_rate_backoff_ms(8000, 10000, 10000, 10100), POLICY_RATE_BACKOFF_MIN_MS);
    cr_expect_eq(policy_rate_backoff_ms(8000, 10000, 10050, 10100), POLICY_RATE_BACKOFF_MIN_MS);
    /* served before it ended does not count */
    cr_expect_eq(policy_rate_backoff_ms(8000, 10000, 9999, 10100), 16000);
    /* more than the maximum after it ended */
    cr_expect_eq(policy_rate_backoff_ms(8000, 10000, 0, 10000 + POLICY_RATE_BACKOFF_MAX_MS), 16000);
    cr_expect_eq(policy_rate_backoff_ms(8000, 10000, 0, 10001 + POLICY_RATE_BACKOFF_MAX_MS), POLICY_RATE_BACKOFF_MIN_MS);
}
