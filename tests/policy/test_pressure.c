/* tests/policy/test_pressure.c: the pressure level (thresholds, hysteresis,
 * the transition table, stepping down), the shed order, the endpoint slots
 * a credit rate allows, settle-time percentiles and the baseline. */
#include <criterion/criterion.h>

#include "policy/method.h"
#include "policy/pressure.h"

static const policy_pressure_conf_t defaults = POLICY_PRESSURE_DEFAULTS;

static policy_pressure_level_t target(uint32_t depth, uint32_t ceiling, policy_pressure_level_t current)
{
    policy_pressure_inputs_t in = {.depth = depth, .ceiling = ceiling};
    return policy_pressure_target(&defaults, &in, current, NULL);
}

Test(pressure, names_and_parse_round_trip)
{
    const char *want[] = {"ok", "elevated", "critical", "never"};
    for (int i = 0; i <= POLICY_SHED_NEVER; i++) {
        cr_expect_str_eq(policy_pressure_level_name((policy_pressure_level_t)i), want[i]);
        cr_expect_eq(policy_pressure_level_parse(want[i]), i);
    }
    cr_expect_str_eq(policy_pressure_level_name((policy_pressure_level_t)9), "unknown");
    cr_expect_eq(policy_pressure_level_parse("Critical"), -1);
    cr_expect_eq(policy_pressure_level_parse(""), -1);
}

Test(pressure, utilisation_thresholds_from_ok)
{
    cr_expect_eq(target(0, 10, POLICY_PRESSURE_OK), POLICY_PRESSURE_OK);
    cr_expect_eq(target(5, 10, POLICY_PRESSURE_OK), POLICY_PRESSURE_OK);
    cr_expect_eq(target(6, 10, POLICY_PRESSURE_OK), POLICY_PRESSURE_ELEVATED); /* 0.6 is elevated */
    cr_expect_eq(target(85, 100, POLICY_PRESSURE_OK), POLICY_PRESSURE_ELEVATED); /* 0.85 is not yet critical */
    cr_expect_eq(target(86, 100, POLICY_PRESSURE_OK), POLICY_PRESSURE_CRITICAL);
    cr_expect_eq(target(40, 10, POLICY_PRESSURE_OK), POLICY_PRESSURE_CRITICAL); /* waiting work: over 1 */
}

/* Nothing usable: the plan's own answer (429 upstream, 503 no endpoint) says
 * why, so the level does not shed on top of it. */
Test(pressure, no_ceiling_leaves_the_answer_to_the_plan)
{
    cr_expect_eq(target(0, 0, POLICY_PRESSURE_OK), POLICY_PRESSURE_OK);
    cr_expect_eq(target(1, 0, POLICY_PRESSURE_OK), POLICY_PRESSURE_OK);
    cr_expect_eq(target(50, 0, POLICY_PRESSURE_OK), POLICY_PRESSURE_OK);
    cr_expect_float_eq(policy_pressure_utilisation(3, 0), 0.0, 1e-9);
    cr_expect_float_eq(policy_pressure_utilisation(3, 4), 0.75, 1e-9);
}

Test(pressure, hysteresis_keeps_a_level_down_to_threshold_minus_band)
{
    /* critical is kept above 0.75, elevated from 0.5 */
    cr_expect_eq(target(80, 100, POLICY_PRESSURE_CRITICAL), POLICY_PRESSURE_CRITICAL);
    cr_expect_eq(target(75, 100, POLICY_PRESSURE_CRITICAL), POLICY_PRESSURE_ELEVATED);
    cr_expect_eq(target(50, 100, POLICY_PRESSURE_CRITICAL), POLICY_PRESSURE_ELEVATED);
    cr_expect_eq(target(49, 100, POLICY_PRESSURE_CRITICAL), POLICY_PRESSURE_OK);
    cr_expect_eq(target(50, 100, POLICY_PRESSURE_ELEVATED), POLICY_PRESSURE_ELEVATED);
    cr_expect_eq(target(49, 100, POLICY_PRESSURE_ELEVATED), POLICY_PRESSURE_OK);
    /* from ok, the same 0.55 does not enter */
    cr_expect_eq(target(55, 100, POLICY_PRESSURE_OK), POLICY_PRESSURE_OK);
    cr_expect_eq(target(80, 100, POLICY_PRESSURE_ELEVATED), POLICY_PRESSURE_ELEVATED);
}

Test(pressure, slow_settles_elevate_only_with_samples_and_a_real_margin)
{
    policy_pressure_inputs_t in = {.depth = 0, .ceiling = 10, .settle_p90_us = 400000, .settles = 20,
                                   .baseline_us = 100000};
    unsigned why = 0;
    cr_expect_eq(policy_pressure_target(&defaults, &in, POLICY_PRESSURE_OK, &why), POLICY_PRESSURE_ELEVATED);
    cr_expect_eq(why, POLICY_PRESSURE_WHY_SLOW);
    in.settle_p90_us = 300000; /* exactly 3x: not over it */
    cr_expect_eq(policy_pressure_target(&defaults, &in, POLICY_PRESSURE_OK, &why), POLICY_PRESSURE_OK);
    in.settle_p90_us = 400000;
    in.settles = 19;
    cr_expect_eq(policy_pressure_target(&defaults, &in, POLICY_PRESSURE_OK, &why), POLICY_PRESSURE_OK);
    /* 4x a 5 ms baseline is only 15 ms more: noise, not slowness */
    in = (policy_pressure_inputs_t){.ceiling = 10, .settle_p90_us = 20000, .settles = 50, .baseline_us = 5000};
    cr_expect_eq(policy_pressure_target(&defaults, &in, POLICY_PRESSURE_OK, &why), POLICY_PRESSURE_OK);
    in.settle_p90_us = 60000;
    cr_expect_eq(policy_pressure_target(&defaults, &in, POLICY_PRESSURE_OK, &why), POLICY_PRESSURE_ELEVATED);
    /* no baseline yet: nothing to compare with */
    in.baseline_us = 0;
    cr_expect_eq(policy_pressure_target(&defaults, &in, POLICY_PRESSURE_OK, &why), POLICY_PRESSURE_OK);
    cr_expect_eq(why, 0);
}

Test(pressure, refusals_over_the_ratio_elevate)
{
    policy_pressure_inputs_t in = {.ceiling = 10, .tries = 100, .refusals = 21};
    unsigned why = 0;
    cr_expect_eq(policy_pressure_target(&defaults, &in, POLICY_PRESSURE_OK, &why), POLICY_PRESSURE_ELEVATED);
    cr_expect_eq(why, POLICY_PRESSURE_WHY_REFUSALS);
    in.refusals = 20;
    cr_expect_eq(policy_pressure_target(&defaults, &in, POLICY_PRESSURE_OK, &why), POLICY_PRESSURE_OK);
    in = (policy_pressure_inputs_t){.ceiling = 10, .tries = 19, .refusals = 19}; /* too few to judge */
    cr_expect_eq(policy_pressure_target(&defaults, &in, POLICY_PRESSURE_OK, &why), POLICY_PRESSURE_OK);
    /* they never make it critical: only depth does */
    in = (policy_pressure_inputs_t){.depth = 9, .ceiling = 10, .tries = 100, .refusals = 100};
    cr_expect_eq(policy_pressure_target(&defaults, &in, POLICY_PRESSURE_OK, &why), POLICY_PRESSURE_CRITICAL);
    cr_expect_eq(why, POLICY_PRESSURE_WHY_UTILISATION | POLICY_PRESSURE_WHY_REFUSALS);
}

Test(pressure, edges_up_any_down_one)
{
    const int want[3][3] = {{0, 1, 1}, {1, 0, 1}, {0, 1, 0}};
    for (int f = 0; f < 3; f++)
        for (int t = 0; t < 3; t++)
            cr_expect_eq(policy_pressure_edge_allowed((policy_pressure_level_t)f, (policy_pressure_level_t)t),
                         want[f][t], "%d -> %d", f, t);
    cr_expect_eq(policy_pressure_edge_allowed(POLICY_PRESSURE_OK, POLICY_PRESSURE_LEVEL_COUNT), 0);
    cr_expect_eq(policy_pressure_edge_allowed(POLICY_PRESSURE_LEVEL_COUNT, POLICY_PRESSURE_OK), 0);
    policy_pressure_t p = {POLICY_PRESSURE_CRITICAL, 100, 50, 60};
    cr_expect_eq(policy_pressure_transition(&p, POLICY_PRESSURE_OK, 200), SL_ERR_STATE);
    cr_expect_eq(p.level, POLICY_PRESSURE_CRITICAL);
    cr_expect_eq(p.since_ms, 100);
    cr_expect_eq(policy_pressure_transition(&p, POLICY_PRESSURE_ELEVATED, 200), SL_OK);
    cr_expect_eq(p.level, POLICY_PRESSURE_ELEVATED);
    cr_expect_eq(p.since_ms, 200);
    cr_expect_eq(p.calm_since_ms, 0);
    cr_expect_eq(p.high_since_ms, 0);
}

Test(pressure, next_rises_once_the_inputs_stay_high_for_rise_ms)
{
    policy_pressure_t p = {POLICY_PRESSURE_OK, 1000, 0, 0};
    cr_expect_eq(policy_pressure_next(&defaults, &p, POLICY_PRESSURE_CRITICAL, 5000), POLICY_PRESSURE_OK);
    cr_expect_eq(p.high_since_ms, 5000);
    cr_expect_eq(policy_pressure_next(&defaults, &p, POLICY_PRESSURE_ELEVATED, 5050), POLICY_PRESSURE_OK);
    /* straight to what the target is then, past elevated */
    cr_expect_eq(policy_pressure_next(&defaults, &p, POLICY_PRESSURE_CRITICAL, 5100), POLICY_PRESSURE_CRITICAL);
    /* a spike that is gone by the next look starts over */
    p = (policy_pressure_t){POLICY_PRESSURE_OK, 1000, 0, 0};
    cr_expect_eq(policy_pressure_next(&defaults, &p, POLICY_PRESSURE_CRITICAL, 5000), POLICY_PRESSURE_OK);
    cr_expect_eq(policy_pressure_next(&defaults, &p, POLICY_PRESSURE_OK, 5050), POLICY_PRESSURE_OK);
    cr_expect_eq(p.high_since_ms, 0);
    cr_expect_eq(policy_pressure_next(&defaults, &p, POLICY_PRESSURE_CRITICAL, 5100), POLICY_PRESSURE_OK);
    /* rise_ms 0: at once; a rise breaks the calm */
    policy_pressure_conf_t c = defaults;
    c.rise_ms = 0;
    p = (policy_pressure_t){POLICY_PRESSURE_ELEVATED, 1000, 900, 0};
    cr_expect_eq(policy_pressure_next(&c, &p, POLICY_PRESSURE_CRITICAL, 1001), POLICY_PRESSURE_CRITICAL);
    cr_expect_eq(p.calm_since_ms, 0);
}

Test(pressure, next_falls_one_step_after_hold_and_calm)
{
    policy_pressure_t p = {POLICY_PRESSURE_CRITICAL, 10000, 0, 0};
    /* calm starts now; the level is old enough, but calm is not */
    cr_expect_eq(policy_pressure_next(&defaults, &p, POLICY_PRESSURE_OK, 20000), POLICY_PRESSURE_CRITICAL);
    cr_expect_eq(p.calm_since_ms, 20000);
    cr_expect_eq(policy_pressure_next(&defaults, &p, POLICY_PRESSURE_OK, 21999), POLICY_PRESSURE_CRITICAL);
    /* a target back at the level breaks the calm */
    cr_expect_eq(policy_pressure_next(&defaults, &p, POLICY_PRESSURE_CRITICAL, 21999), POLICY_PRESSURE_CRITICAL);
    cr_expect_eq(p.calm_since_ms, 0);
    cr_expect_eq(policy_pressure_next(&defaults, &p, POLICY_PRESSURE_OK, 22000), POLICY_PRESSURE_CRITICAL);
    /* two seconds of calm: one step down, not two */
    cr_expect_eq(policy_pressure_next(&defaults, &p, POLICY_PRESSURE_OK, 24000), POLICY_PRESSURE_ELEVATED);
    cr_assert_eq(policy_pressure_transition(&p, POLICY_PRESSURE_ELEVATED, 24000), SL_OK);
    /* the new level lasts hold_ms before the next step */
    cr_expect_eq(policy_pressure_next(&defaults, &p, POLICY_PRESSURE_OK, 24100), POLICY_PRESSURE_ELEVATED);
    cr_expect_eq(policy_pressure_next(&defaults, &p, POLICY_PRESSURE_OK, 26099), POLICY_PRESSURE_ELEVATED);
    cr_expect_eq(policy_pressure_next(&defaults, &p, POLICY_PRESSURE_OK, 26100), POLICY_PRESSURE_OK);
}

Test(pressure, a_young_level_is_not_left_even_when_calm)
{
    policy_pressure_t p = {POLICY_PRESSURE_ELEVATED, 5000, 0, 0};
    cr_expect_eq(policy_pressure_next(&defaults, &p, POLICY_PRESSURE_OK, 5001), POLICY_PRESSURE_ELEVATED);
    cr_expect_eq(policy_pressure_next(&defaults, &p, POLICY_PRESSURE_OK, 6999), POLICY_PRESSURE_ELEVATED);
    cr_expect_eq(policy_pressure_next(&defaults, &p, POLICY_PRESSURE_OK, 7001), POLICY_PRESSURE_OK);
}

/* Load that oscillates around the threshold must not flap the level. */
Test(pressure, oscillating_load_does_not_flap)
{
    policy_pressure_t p = {POLICY_PRESSURE_OK, 0, 0, 0};
    int changes = 0;
    for (uint64_t t = 1; t < 60000; t += 50) {
        uint32_t depth = (t / 200) % 2 ? 62 : 52; /* 0.62, 0.52, 0.62, ... each for 200 ms */
        policy_pressure_inputs_t in = {.depth = depth, .ceiling = 100};
        policy_pressure_level_t tg = policy_pressure_target(&defaults, &in, p.level, NULL);
        policy_pressure_level_t next = policy_pressure_next(&defaults, &p, tg, t);
        if (next != p.level) {
            cr_assert_eq(policy_pressure_transition(&p, next, t), SL_OK);
            changes++;
        }
    }
    cr_expect_eq(changes, 1, "one change into elevated, then held (got %d)", changes);
    cr_expect_eq(p.level, POLICY_PRESSURE_ELEVATED);
}

Test(pressure, default_shed_order)
{
    size_t n;
    const policy_method_t *eth = policy_method_table(POLICY_CHAIN_ETHEREUM, &n);
    (void)eth;
    const policy_method_t *call = policy_method_lookup(POLICY_CHAIN_ETHEREUM, "eth_call", 8);
    const policy_method_t *logs = policy_method_lookup(POLICY_CHAIN_ETHEREUM, "eth_getLogs", 11);
    const policy_method_t *bal = policy_method_lookup(POLICY_CHAIN_ETHEREUM, "eth_getBalance", 14);
    const policy_method_t *send = policy_method_lookup(POLICY_CHAIN_ETHEREUM, "eth_sendRawTransaction", 22);
    const policy_method_t *rcpt = policy_method_lookup(POLICY_CHAIN_ETHEREUM, "eth_getTransactionReceipt", 25);
    const policy_method_t *sim = policy_method_lookup(POLICY_CHAIN_SOLANA, "simulateTransaction", 19);
    const policy_method_t *gpa = policy_method_lookup(POLICY_CHAIN_SOLANA, "getProgramAccounts", 18);
    const policy_method_t *est = policy_method_lookup(POLICY_CHAIN_ETHEREUM, "eth_estimateGas", 15);
    const policy_method_t *sigs = policy_method_lookup(POLICY_CHAIN_SOLANA, "getSignatureStatuses", 20);
    const policy_method_t *low[] = {call, logs, sim, gpa, est};
    for (size_t i = 0; i < sizeof(low) / sizeof(low[0]); i++) {
        cr_expect(!policy_pressure_sheds(&defaults, POLICY_PRESSURE_OK, low[i]), "%s", low[i]->name);
        cr_expect(policy_pressure_sheds(&defaults, POLICY_PRESSURE_ELEVATED, low[i]), "%s", low[i]->name);
        cr_expect(policy_pressure_sheds(&defaults, POLICY_PRESSURE_CRITICAL, low[i]), "%s", low[i]->name);
    }
    cr_expect(!policy_pressure_sheds(&defaults, POLICY_PRESSURE_ELEVATED, bal));
    cr_expect(policy_pressure_sheds(&defaults, POLICY_PRESSURE_CRITICAL, bal));
    for (int l = 0; l < POLICY_PRESSURE_LEVEL_COUNT; l++) {
        cr_expect(!policy_pressure_sheds(&defaults, (policy_pressure_level_t)l, send));
        cr_expect(!policy_pressure_sheds(&defaults, (policy_pressure_level_t)l, rcpt));
        cr_expect(!policy_pressure_sheds(&defaults, (policy_pressure_level_t)l, sigs));
    }
}

Test(pressure, confirmation_polls_are_never_shed_whatever_the_table)
{
    policy_pressure_conf_t c = defaults;
    for (int p = 0; p < POLICY_PRIO_COUNT; p++)
        c.shed[p] = POLICY_PRESSURE_ELEVATED;
    policy_method_t poll = {"x", POLICY_CLASS_CONFIRM, POLICY_PRIO_LOW, 1, 0};
    policy_method_t write = {"y", POLICY_CLASS_WRITE, POLICY_PRIO_HIGH, 0, 0};
    cr_expect(!policy_pressure_sheds(&c, POLICY_PRESSURE_CRITICAL, &poll));
    cr_expect(policy_pressure_sheds(&c, POLICY_PRESSURE_ELEVATED, &write));
    c.shed[POLICY_PRIO_HIGH] = POLICY_PRESSURE_CRITICAL; /* shed_writes_at_critical */
    cr_expect(!policy_pressure_sheds(&c, POLICY_PRESSURE_ELEVATED, &write));
    cr_expect(policy_pressure_sheds(&c, POLICY_PRESSURE_CRITICAL, &write));
}

Test(pressure, retry_after_doubles_at_critical)
{
    cr_expect_eq(policy_pressure_retry_after_ms(&defaults, POLICY_PRESSURE_ELEVATED), 1000);
    cr_expect_eq(policy_pressure_retry_after_ms(&defaults, POLICY_PRESSURE_CRITICAL), 2000);
    policy_pressure_conf_t c = defaults;
    c.retry_after_ms = UINT32_MAX;
    cr_expect_eq(policy_pressure_retry_after_ms(&c, POLICY_PRESSURE_CRITICAL), UINT32_MAX);
}

Test(pressure, endpoint_slots_from_a_credit_rate)
{
    /* no rate, or nothing known: max_inflight */
    cr_expect_eq(policy_pressure_endpoint_slots(64, 0, 1000, 50000), 64);
    cr_expect_eq(policy_pressure_endpoint_slots(64, 40000, 0, 50000), 64);
    cr_expect_eq(policy_pressure_endpoint_slots(64, 40000, 1000, 0), 64);
    /* 40 credits/s at 1 a call, 100 ms each: 4 calls in flight */
    cr_expect_eq(policy_pressure_endpoint_slots(64, 40000, 1000, 100000), 4);
    /* 330 CU/s at 26 CU a call (eth_call on Alchemy), 300 ms: 12.7 -> 13 */
    cr_expect_eq(policy_pressure_endpoint_slots(64, 330000, 26000, 300000), 4);
    cr_expect_eq(policy_pressure_endpoint_slots(64, 3300000, 26000, 100000), 13);
    /* never under one, never over max_inflight */
    cr_expect_eq(policy_pressure_endpoint_slots(64, 1000, 1000, 1000), 1);
    cr_expect_eq(policy_pressure_endpoint_slots(8, 1000000000, 1000, 1000000), 8);
}

Test(pressure, settle_buckets_and_p90)
{
    for (size_t i = 1; i < POLICY_SETTLE_BUCKETS; i++)
        cr_expect_gt(policy_settle_bounds_us[i], policy_settle_bounds_us[i - 1]);
    cr_expect_eq(policy_settle_bucket(0), 0);
    cr_expect_eq(policy_settle_bucket(1000), 0);
    cr_expect_eq(policy_settle_bucket(1001), 1);
    cr_expect_eq(policy_settle_bucket(UINT64_MAX), POLICY_SETTLE_BUCKETS - 1);
    uint64_t hist[POLICY_SETTLE_BUCKETS] = {0}, total = 1;
    cr_expect_eq(policy_settle_p90_us(hist, &total), 0);
    cr_expect_eq(total, 0);
    /* 90 fast (<= 1 ms), 10 in (100, 250] ms: the 90th is the last fast one */
    hist[0] = 90;
    hist[policy_settle_bucket(200000)] = 10;
    cr_expect_eq(policy_settle_p90_us(hist, &total), 1000);
    cr_expect_eq(total, 100);
    /* 80 fast, 20 slow: the 90th is half-way into the slow bucket */
    hist[0] = 80;
    hist[policy_settle_bucket(200000)] = 20;
    cr_expect_eq(policy_settle_p90_us(hist, NULL), 175000);
}

Test(pressure, baseline_starts_at_first_p90_and_moves_slowly)
{
    policy_pressure_inputs_t in = {.depth = 0, .ceiling = 10, .settle_p90_us = 90000, .settles = 20};
    cr_expect_eq(policy_pressure_baseline(&defaults, 0, &in), 90000);
    cr_expect_eq(policy_pressure_baseline(&defaults, 60000, &in), 61000); /* 1/30 of the gap */
    in.settle_p90_us = 30000;
    cr_expect_eq(policy_pressure_baseline(&defaults, 60000, &in), 59000);
    in.settle_p90_us = 60010; /* a gap under 30 µs still moves it */
    cr_expect_eq(policy_pressure_baseline(&defaults, 60000, &in), 60001);
    /* too few settles, or congestion: unchanged */
    in.settle_p90_us = 900000;
    in.settles = 19;
    cr_expect_eq(policy_pressure_baseline(&defaults, 60000, &in), 60000);
    in.settles = 100;
    in.depth = 6;
    cr_expect_eq(policy_pressure_baseline(&defaults, 60000, &in), 60000);
    /* a lasting 3x slowdown: after ~5 minutes of steps the trigger is gone */
    in.depth = 0;
    in.settle_p90_us = 400000;
    uint32_t b = 100000;
    int steps = 0;
    while ((double)in.settle_p90_us > defaults.slow_factor * b && steps < 1000) {
        b = policy_pressure_baseline(&defaults, b, &in);
        steps++;
    }
    cr_expect(steps > 3 && steps * POLICY_BASELINE_STEP_MS <= 600000, "%d steps", steps);
}

Test(pressure, an_identity_under_its_share_sees_a_step_lower)
{
    policy_pressure_conf_t c = POLICY_PRESSURE_DEFAULTS;
    cr_expect_eq(c.identity_share, 0.5);
    /* a ceiling of 10 slots, two workers: each holds 2.5 of an identity's share, 2 */
    cr_expect_eq(policy_pressure_share_cap(&c, 10, 2), 2);
    cr_expect_eq(policy_pressure_share_cap(&c, 10, 1), 5);
    cr_expect_eq(policy_pressure_share_cap(&c, 1, 4), 1, "at least one call");
    cr_expect_eq(policy_pressure_share_cap(&c, 0, 0), 1);
    /* the one filling the depth sees the level as it is; a light caller a step lower */
    cr_expect_eq(policy_pressure_level_for(&c, POLICY_PRESSURE_CRITICAL, 5, 5), POLICY_PRESSURE_CRITICAL);
    cr_expect_eq(policy_pressure_level_for(&c, POLICY_PRESSURE_CRITICAL, 4, 5), POLICY_PRESSURE_ELEVATED);
    cr_expect_eq(policy_pressure_level_for(&c, POLICY_PRESSURE_ELEVATED, 0, 5), POLICY_PRESSURE_OK);
    cr_expect_eq(policy_pressure_level_for(&c, POLICY_PRESSURE_OK, 9, 5), POLICY_PRESSURE_OK);
    /* 1: no identity shares: everyone sees the network's level */
    c.identity_share = 1;
    cr_expect_eq(policy_pressure_level_for(&c, POLICY_PRESSURE_CRITICAL, 0, 5), POLICY_PRESSURE_CRITICAL);
}
