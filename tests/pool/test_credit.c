/* tests/pool/test_credit.c: credit budgets (pool/pool_credit.c) against a
 * real LMDB environment, with the clocks injected (tests/lib/fake_clock.h:
 * every clock sluice reads is the test's), and commits that fail as on a
 * full map (tests/lib/fail_commits.h). No sleeps. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool/pool_call_int.h"
#include "state/state.h"
#include "tests/lib/fail_commits.h"
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
    temp_dir_make(tmpdir, sizeof(tmpdir), "credit");
    snprintf(dbpath, sizeof(dbpath), "%s/state", tmpdir);
}

static void teardown(void)
{
    pool_destroy(pool);
    state_close(st);
    fake_clock_stop();
    temp_dir_remove(tmpdir);
}

TestSuite(credit, .init = setup, .fini = teardown);

/* One network, one endpoint with budget, in a pool of one worker out of nworkers. */
static pool_endpoint_t *open_pool(pool_credits_conf_t credits, uint32_t nworkers)
{
    state_conf_t sc = {.path = dbpath, .map_size_mb = 16, .event_max_count = 1000, .event_max_age_s = 86400};
    cr_assert_eq(state_open(&sc, &st), SL_OK);
    epc = (pool_endpoint_conf_t){.id = "a", .url = "http://127.0.0.1:1", .url_redacted = "http://127.0.0.1:1",
                                 .has_credits = 1, .credits = credits, .cost_profile = "flat"};
    netc = (pool_network_conf_t){.name = "eth", .chain = POLICY_CHAIN_ETHEREUM, .endpoints = &epc, .nendpoints = 1,
                                 .breaker = POLICY_BREAKER_DEFAULTS, .ranking = POLICY_SCORE_DEFAULTS};
    loop = h2o_evloop_create();
    pool_params_t p = {.loop = loop, .networks = &netc, .nnetworks = 1, .nworkers = nworkers,
                       .max_response_bytes = 1 << 20, .state = st, .slot = 1};
    cr_assert_eq(pool_create(&p, &pool), SL_OK);
    return &pool_network_find(pool, "eth", 3)->endpoints[0];
}

/* How many of n calls of one credit each the budget covers now. */
static int taken(pool_endpoint_t *ep, int n)
{
    int ok = 0;
    for (int i = 0; i < n; i++) {
        uint64_t retry = 0;
        ok += pool_credit_take(ep, (policy_cost_t){1, 1}, &retry) == POLICY_LEASE_YES;
    }
    return ok;
}

static size_t count_events(const char *kind)
{
    state_event_t evs[64];
    size_t n = 0, k = 0;
    cr_assert_eq(state_events_read(st, 0, evs, 64, &n), SL_OK);
    for (size_t i = 0; i < n; i++)
        k += strcmp(state_event_kind_name(evs[i].kind), kind) == 0;
    return k;
}

Test(credit, a_backward_step_over_the_start_of_a_month_does_not_open_a_budget_twice)
{
    pool_endpoint_t *ep = open_pool((pool_credits_conf_t){.limit = {[POLICY_CREDIT_MONTH] = 100}, .month_reset_day = 1}, 1);
    cr_assert_eq(taken(ep, 90), 90, "December's budget");
    /* the wall clock steps back two minutes, into November */
    fake_clock_step_wall_s(-120);
    fake_clock_pass_ms(1000);
    int in_november = taken(ep, 50);
    /* and comes back into December */
    fake_clock_pass_ms(180000);
    int back_in_december = taken(ep, 50);
    cr_expect_eq(in_november + back_in_december, 10, "100 credits a month, but %d + %d after 90 were spent",
                 in_november, back_in_december);
}

Test(credit, a_failing_ledger_spends_the_workers_share_of_what_was_left)
{
    pool_endpoint_t *ep = open_pool((pool_credits_conf_t){.limit = {[POLICY_CREDIT_MONTH] = 1000}, .month_reset_day = 1}, 2);
    cr_assert_eq(taken(ep, 200), 200);
    /* every commit fails from now on: the ledger had 1000 - 200 (and a lease
     * of 10 this worker holds) left; this worker may spend half of what the
     * ledger had, on top of its lease */
    fail_commits = 1;
    int degraded = taken(ep, 2000);
    cr_expect_geq(degraded, 390, "the worker's share: %d", degraded);
    cr_expect_leq(degraded, 410, "never unlimited: %d of 2000 calls covered", degraded);
    cr_expect_eq(count_events("state_degraded"), 0, "no room for the event: it waits");
    fail_commits = 0;
    fake_clock_pass_ms(1100);
    cr_expect_geq(taken(ep, 1), 0);
    cr_expect_eq(count_events("state_degraded"), 1);
    cr_expect_eq(count_events("state_restored"), 1);
}
