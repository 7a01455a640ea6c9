/* tests/pool/test_health.c: breaker timers and rate-limit marks
 * (pool/pool_health.c) in shared time, with the clocks injected
 * (tests/lib/fake_clock.h: every clock sluice reads is the test's).
 * The plan and the probes read shared time (sl_shared_ms) as these tests
 * do; what is checked is that the records the pool writes stay in step with
 * it through a step of the wall clock. No sleeps. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sl_time.h"
#include "pool/pool_call_int.h"
#include "state/state.h"
#include "tests/lib/fake_clock.h"
#include "tests/lib/temp_dir.h"

static char tmpdir[256], dbpath[300];
static state_t *st;
static pool_t *pool;
static h2o_loop_t *loop;
static pool_endpoint_conf_t epc;
static pool_network_conf_t netc;

static void setup(void)
{
    /* one minute past the start of December 2023 (UTC) */
    fake_clock_start(1701388860, 7000);
    temp_dir_make(tmpdir, sizeof(tmpdir), "health");
    snprintf(dbpath, sizeof(dbpath), "%s/state", tmpdir);
}

static void teardown(void)
{
    pool_destroy(pool);
    state_close(st);
    fake_clock_stop();
    temp_dir_remove(tmpdir);
}

TestSuite(health, .init = setup, .fini = teardown);

/* One network, one endpoint, in a pool of one worker. */
static pool_endpoint_t *open_pool(void)
{
    state_conf_t sc = {.path = dbpath, .map_size_mb = 16, .event_max_count = 1000, .event_max_age_s = 86400};
    cr_assert_eq(state_open(&sc, &st), SL_OK);
    epc = (pool_endpoint_conf_t){.id = "a", .url = "http://127.0.0.1:1", .url_redacted = "http://127.0.0.1:1",
                                 .cost_profile = "flat"};
    netc = (pool_network_conf_t){.name = "eth", .chain = POLICY_CHAIN_ETHEREUM, .endpoints = &epc, .nendpoints = 1,
                                 .breaker = POLICY_BREAKER_DEFAULTS, .ranking = POLICY_SCORE_DEFAULTS};
    loop = h2o_evloop_create();
    pool_params_t p = {.loop = loop, .networks = &netc, .nnetworks = 1, .nworkers = 1,
                       .max_response_bytes = 1 << 20, .state = st, .slot = 1};
    cr_assert_eq(pool_create(&p, &pool), SL_OK);
    return &pool_network_find(pool, "eth", 3)->endpoints[0];
}

#define HOUR_S 3600

Test(health, an_open_breaker_probes_after_its_cooldown_through_a_backward_step)
{
    pool_endpoint_t *ep = open_pool();
    cr_assert(pool_health_breaker_move(ep, POLICY_BREAKER_CLOSED, POLICY_BREAKER_OPEN, "test"));
    const state_endpoint_rec_t *r = &ep->health.shared;
    policy_breaker_t b = {(policy_breaker_state_t)r->breaker, r->since_ms, r->cooldown_ms, r->opened_at_ms};
    cr_assert_eq(b.cooldown_ms, 5000);
    fake_clock_step_wall_s(-HOUR_S);
    fake_clock_pass_ms(4000);
    cr_expect(!policy_breaker_probe_due(&b, sl_shared_ms()), "probe due before the cooldown ran out");
    fake_clock_pass_ms(1001);
    cr_expect(policy_breaker_probe_due(&b, sl_shared_ms()), "an hour's step back kept the breaker open");
}

Test(health, a_rate_limit_mark_ends_on_time_through_a_backward_step)
{
    pool_endpoint_t *ep = open_pool();
    pool_health_rate_limited(ep, 2000);
    cr_assert(!pool_health_usable(ep, sl_shared_ms()));
    fake_clock_step_wall_s(-HOUR_S);
    fake_clock_pass_ms(2001);
    cr_expect(pool_health_usable(ep, sl_shared_ms()), "an hour's step back kept the endpoint marked");
}

Test(health, a_forward_step_ends_a_mark_at_most_once)
{
    pool_endpoint_t *ep = open_pool();
    pool_health_rate_limited(ep, 60000);
    fake_clock_step_wall_s(HOUR_S);
    fake_clock_pass_ms(SL_SHARED_RESYNC_US / 1000 + 1);
    cr_expect(pool_health_usable(ep, sl_shared_ms()), "shared time follows a forward step");
    fake_clock_step_wall_s(-HOUR_S);
    fake_clock_pass_ms(1);
    cr_expect(pool_health_usable(ep, sl_shared_ms()), "and never goes back after it");
    pool_health_rate_limited(ep, 2000);
    cr_expect(!pool_health_usable(ep, sl_shared_ms()), "a new mark counts from the shared time");
}
