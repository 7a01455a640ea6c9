/* tests/policy/test_hedge.c: hedged reads: who may be hedged, after how
 * long, and how many. */
#include <criterion/criterion.h>

#include "policy/hedge.h"
#include "policy/method.h"

static const policy_method_t *eth(const char *name)
{
    return policy_method_lookup(POLICY_CHAIN_ETHEREUM, name, strlen(name));
}

Test(hedge, only_cheap_retry_safe_reads_are_hedged)
{
    policy_hedge_conf_t c = POLICY_HEDGE_DEFAULTS;
    const policy_method_t *read[] = {eth("eth_blockNumber"), eth("eth_getBalance")};
    cr_expect_eq(policy_hedge_eligible(&c, read, 2, 0, POLICY_PRESSURE_OK), POLICY_HEDGE_YES);
    const policy_method_t *poll[] = {eth("eth_getTransactionReceipt")};
    cr_expect_eq(policy_hedge_eligible(&c, poll, 1, 0, POLICY_PRESSURE_OK), POLICY_HEDGE_YES);
    const policy_method_t *write[] = {eth("eth_blockNumber"), eth("eth_sendRawTransaction")};
    cr_expect_eq(policy_hedge_eligible(&c, write, 2, 0, POLICY_PRESSURE_OK), POLICY_HEDGE_NOT_READ);
    /* heavy: its slowness may be the request's own (slow_call) */
    const policy_method_t *heavy[] = {eth("eth_call")};
    cr_expect_eq(policy_hedge_eligible(&c, heavy, 1, 0, POLICY_PRESSURE_OK), POLICY_HEDGE_NOT_READ);
    const policy_method_t *logs[] = {eth("eth_getLogs")};
    cr_expect_eq(policy_hedge_eligible(&c, logs, 1, 0, POLICY_PRESSURE_OK), POLICY_HEDGE_NOT_READ);
    cr_expect_eq(policy_hedge_eligible(&c, read, 0, 0, POLICY_PRESSURE_OK), POLICY_HEDGE_NOT_READ);
    /* an unknown method is a read, but not a known cheap one */
    const policy_method_t *unknown[] = {eth("foo_bar")};
    cr_expect_eq(policy_hedge_eligible(&c, unknown, 1, 0, POLICY_PRESSURE_OK), POLICY_HEDGE_NOT_READ);
    /* a method the operator made not retry-safe */
    policy_method_t odd = *eth("eth_blockNumber");
    odd.retry_safe = 0;
    const policy_method_t *unsafe[] = {&odd};
    cr_expect_eq(policy_hedge_eligible(&c, unsafe, 1, 0, POLICY_PRESSURE_OK), POLICY_HEDGE_NOT_READ);
}

Test(hedge, a_pinned_poll_is_never_hedged)
{
    policy_hedge_conf_t c = POLICY_HEDGE_DEFAULTS;
    const policy_method_t *poll[] = {eth("eth_getTransactionReceipt")};
    cr_expect_eq(policy_hedge_eligible(&c, poll, 1, 0, POLICY_PRESSURE_OK), POLICY_HEDGE_YES);
    cr_expect_eq(policy_hedge_eligible(&c, poll, 1, 1, POLICY_PRESSURE_OK), POLICY_HEDGE_PINNED);
    /* the other reasons still speak first: a write is no read, pinned or not */
    const policy_method_t *write[] = {eth("eth_sendRawTransaction")};
    cr_expect_eq(policy_hedge_eligible(&c, write, 1, 1, POLICY_PRESSURE_OK), POLICY_HEDGE_NOT_READ);
}

Test(hedge, off_and_under_pressure_nothing_is_hedged)
{
    policy_hedge_conf_t c = POLICY_HEDGE_DEFAULTS;
    const policy_method_t *read[] = {eth("eth_blockNumber")};
    cr_expect_eq(policy_hedge_eligible(&c, read, 1, 0, POLICY_PRESSURE_ELEVATED), POLICY_HEDGE_PRESSURE);
    cr_expect_eq(policy_hedge_eligible(&c, read, 1, 0, POLICY_PRESSURE_CRITICAL), POLICY_HEDGE_PRESSURE);
    c.enabled = 0;
    cr_expect_eq(policy_hedge_eligible(&c, read, 1, 0, POLICY_PRESSURE_OK), POLICY_HEDGE_OFF);
}

Test(hedge, budget_is_a_ratio_plus_a_burst)
{
    policy_hedge_conf_t c = POLICY_HEDGE_DEFAULTS; /* 0.1, burst 10 */
    cr_expect(policy_hedge_budget_ok(&c, 0, 0));
    cr_expect(policy_hedge_budget_ok(&c, 10, 10));     /* 11 <= 1 + 10 */
    cr_expect_not(policy_hedge_budget_ok(&c, 10, 11)); /* 12 > 1 + 10 */
    cr_expect(policy_hedge_budget_ok(&c, 1000, 109));
    cr_expect_not(policy_hedge_budget_ok(&c, 1000, 110));
    c.burst = 0;
    cr_expect_not(policy_hedge_budget_ok(&c, 5, 0)); /* 1 > 0.5 */
    cr_expect(policy_hedge_budget_ok(&c, 10, 0));
    c.max_ratio = 0;
    cr_expect_not(policy_hedge_budget_ok(&c, 1000000, 0));
}

Test(hedge, p90_needs_samples_and_follows_the_slow_tail)
{
    policy_hedge_hist_t h = {0};
    for (int i = 0; i < POLICY_HEDGE_MIN_SAMPLES - 1; i++)
        policy_hedge_hist_add(&h, 700);
    cr_expect_eq(policy_hedge_p90_us(&h), 0);
    policy_hedge_hist_add(&h, 700);
    cr_expect_eq(policy_hedge_p90_us(&h), 1000); /* the bucket (500, 1000] */
    /* 8 fast + 2 slow of 10: the p90 is the 9th: still fast */
    policy_hedge_hist_add(&h, 300000);
    policy_hedge_hist_add(&h, 300000);
    cr_expect_eq(policy_hedge_p90_us(&h), 384000); /* ceil(0.9 x 10) = 9th: slow */
    policy_hedge_hist_t f = {0};
    for (int i = 0; i < 18; i++)
        policy_hedge_hist_add(&f, 900);
    policy_hedge_hist_add(&f, 300000);
    policy_hedge_hist_add(&f, 300000);
    cr_expect_eq(policy_hedge_p90_us(&f), 1000);
    /* beyond the last bound */
    policy_hedge_hist_t s = {0};
    for (int i = 0; i < 10; i++)
        policy_hedge_hist_add(&s, 5000000);
    cr_expect_eq(policy_hedge_p90_us(&s), UINT32_MAX);
}

Test(hedge, histogram_decays_towards_recent_samples)
{
    policy_hedge_hist_t h = {0};
    for (int i = 0; i < 1000; i++)
        policy_hedge_hist_add(&h, 200000);
    cr_expect_lt(h.total, POLICY_HEDGE_DECAY_AT);
    for (int i = 0; i < 1000; i++)
        policy_hedge_hist_add(&h, 900);
    cr_expect_eq(policy_hedge_p90_us(&h), 1000, "old slow samples fall out: %u", policy_hedge_p90_us(&h));
}

Test(hedge, delay_is_the_p95_at_least_twice_the_median_clamped)
{
    policy_hedge_conf_t c = POLICY_HEDGE_DEFAULTS;
    policy_hedge_hist_t h = {0};
    /* nothing known: min_ms */
    cr_expect_eq(policy_hedge_delay_ms(&c, &h, 0), 30);
    /* only the probe: 3 x its EWMA, clamped */
    cr_expect_eq(policy_hedge_delay_ms(&c, &h, 100000), 300);
    cr_expect_eq(policy_hedge_delay_ms(&c, &h, 1000), 30);
    cr_expect_eq(policy_hedge_delay_ms(&c, &h, 900000), 1000);
    for (int i = 0; i < 20; i++)
        policy_hedge_hist_add(&h, 100000);
    /* a tight distribution: twice its median, not its p95 (bucket (96, 128] ms) */
    cr_expect_eq(policy_hedge_delay_ms(&c, &h, 1000), 256);
    for (int i = 0; i < 200; i++)
        policy_hedge_hist_add(&h, 3000000);
    cr_expect_eq(policy_hedge_delay_ms(&c, &h, 1000), 1000);
    policy_hedge_hist_t f = {0};
    for (int i = 0; i < 20; i++)
        policy_hedge_hist_add(&f, 200);
    cr_expect_eq(policy_hedge_delay_ms(&c, &f, 0), 30);
    /* a tail: its p95 (90 at 10 ms, 10 at 100 ms: the 95th sample is in (96, 128] ms) */
    policy_hedge_hist_t t = {0};
    for (int i = 0; i < 90; i++)
        policy_hedge_hist_add(&t, 10000);
    for (int i = 0; i < 10; i++)
        policy_hedge_hist_add(&t, 100000);
    cr_expect_eq(policy_hedge_p90_us(&t), 12000);
    cr_expect_eq(policy_hedge_quantile_us(&t, 500), 12000);
    cr_expect_eq(policy_hedge_quantile_us(&t, 950), 128000);
    cr_expect_eq(policy_hedge_delay_ms(&c, &t, 0), 128);
}

Test(hedge, bounds_are_increasing)
{
    for (size_t i = 1; i + 1 < POLICY_HEDGE_BUCKETS; i++)
        cr_expect_gt(policy_hedge_bounds_us[i], policy_hedge_bounds_us[i - 1]);
}
