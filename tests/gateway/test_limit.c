/* tests/gateway/test_limit.c: client limits (gateway/gw_limit.c) against a
 * real LMDB environment, with the clocks injected (tests/lib/fake_clock.h
 * defines clock_gettime, so every clock sluice reads is the test's), and
 * LMDB's commits fail as on a full map when a test says so
 * (tests/lib/fail_commits.h). Each test runs in its own process (Criterion). No sleeps. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/sl_log.h"
#include "config/cfg.h"
#include "gateway/gw_limit.h"
#include "state/state.h"
#include "state/state_key.h"
#include "tests/lib/fail_commits.h"
#include "tests/lib/fake_clock.h"
#include "tests/lib/config_file.h"
#include "tests/lib/temp_dir.h"

/* ---- fixtures ---- */
static char tmpdir[256], dbpath[300];
static state_t *st;
static cfg_t *cfg;
static gw_limit_t *lim;

static void open_all(size_t map_mb, const char *tiers)
{
    char yaml[512];
    snprintf(yaml, sizeof(yaml),
             "server: { workers: 1 }\ntiers: %s\nnetworks:\n  eth:\n    endpoints: [\"http://127.0.0.1:1\"]\n", tiers);
    cfg = config_load_ok(yaml);
    state_conf_t sc = {.path = dbpath, .map_size_mb = map_mb, .event_max_count = 1000, .event_max_age_s = 86400};
    cr_assert_eq(state_open(&sc, &st), SL_OK);
    lim = gw_limit_create(cfg, st);
}

static void setup(void)
{
    fake_clock_start(1700000000, 5000); /* November 2023, 5000 s since boot */
    temp_dir_make(tmpdir, sizeof(tmpdir), "limit");
    snprintf(dbpath, sizeof(dbpath), "%s/state", tmpdir);
}

static void teardown(void)
{
    gw_limit_destroy(lim);
    state_close(st);
    cfg_destroy(cfg);
    fake_clock_stop();
    temp_dir_remove(tmpdir);
}

TestSuite(limit, .init = setup, .fini = teardown);

/* How many of n single calls, one after the other at this instant, pass. */
static int admitted(const char *who, int n)
{
    int ok = 0;
    for (int i = 0; i < n; i++) {
        gw_limit_result_t r;
        gw_limit_charge(lim, cfg->anonymous_tier, who, POLICY_BUCKET_STANDARD, 1, &r);
        cr_assert(r.limited);
        ok += r.said == POLICY_LEASE_YES;
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

Test(limit, a_backward_step_of_the_wall_clock_does_not_refuse_an_active_client)
{
    open_all(16, "{ anonymous: { per_second: 5, per_minute: 100 } }");
    cr_assert_eq(admitted("ip:10.0.0.1", 8), 5, "the burst is the limit");
    fake_clock_pass_ms(1000);
    cr_assert_eq(admitted("ip:10.0.0.1", 8), 5, "a second later, the burst again");
    /* NTP steps the wall clock back an hour; the client goes on */
    fake_clock_step_wall_s(-3600);
    fake_clock_pass_ms(1000);
    cr_assert_eq(admitted("ip:10.0.0.1", 8), 5, "refused after a backward step: the cells count wall time");
    gw_limit_result_t r;
    gw_limit_charge(lim, cfg->anonymous_tier, "ip:10.0.0.1", POLICY_BUCKET_STANDARD, 1, &r);
    cr_assert_eq(r.said, POLICY_LEASE_NO);
    cr_expect_leq(r.retry_after_s, 1, "Retry-After %u s after a backward step", r.retry_after_s);
    fake_clock_pass_ms(200);
    cr_expect_eq(admitted("ip:10.0.0.1", 2), 1, "one call per 200 ms, as before the step");
}

Test(limit, a_forward_step_then_back_admits_no_more_than_the_limit_per_window)
{
    open_all(16, "{ anonymous: { per_minute: 10 } }");
    cr_assert_eq(admitted("ip:10.0.0.2", 20), 10);
    /* a forward step of a day and back: the minute is still the same minute
     * for shared time, which only follows the forward step once */
    fake_clock_step_wall_s(86400);
    fake_clock_pass_ms(200); /* shared time looks at the wall clock every 100 ms */
    int after_forward = admitted("ip:10.0.0.2", 20);
    fake_clock_step_wall_s(-86400);
    fake_clock_pass_ms(10);
    int after_back = admitted("ip:10.0.0.2", 20);
    cr_expect_leq(after_forward + after_back, 10, "a step forward and back gave %d + %d calls more", after_forward,
                  after_back);
}

Test(limit, failing_shared_cells_enforce_the_limit_locally_and_say_so)
{
    open_all(1, "{ anonymous: { per_second: 5 } }");
    /* every write transaction from here on meets a full map */
    fail_commits = 1;
    cr_assert_eq(admitted("ip:10.0.0.3", 12), 5, "a full map must not switch the limit off");
    fake_clock_pass_ms(1000);
    cr_assert_eq(admitted("ip:10.0.0.3", 12), 5, "a second later: the burst again, locally");
    cr_expect_eq(gw_limit_failures(lim) > 0, 1);
    cr_expect_eq(count_events("state_degraded"), 0, "no room for the event either: it waits");
    fail_commits = 0;
    fake_clock_pass_ms(1100);
    cr_expect_eq(admitted("ip:10.0.0.3", 12), 5, "after the map has room");
    cr_expect_eq(count_events("state_degraded"), 1, "one state_degraded event for the episode");
    cr_expect_eq(count_events("state_restored"), 1, "and one state_restored");
}

/* Each cell a lease writes carries its window's emission interval, which
 * eviction divides the time owed by (state/state_budget.c): without it a
 * per-second cell owing a burst looks like it owes less than a day cell
 * owing one call. */
Test(limit, the_cells_carry_their_windows_interval)
{
    open_all(16, "{ anonymous: { per_second: 5, per_minute: 100, per_day: 1000 } }");
    cr_assert_eq(admitted("ip:10.0.0.4", 1), 1);
    static const struct {
        const char *window;
        uint64_t interval_us;
    } want[] = {{"1", 200000}, {"60", 600000}, {"86400", 86400000}};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        char key[STATE_KEY_MAX];
        state_key_cell(key, sizeof(key), "ip:10.0.0.4", "standard", want[i].window);
        state_cell_rec_t c;
        cr_assert_eq(state_read_begin(st), SL_OK);
        cr_assert_eq(state_budget_get(st, STATE_BUDGET_LIMITS, key, &c), SL_OK, "%s", key);
        state_read_end(st);
        cr_expect_eq(c.interval_us, want[i].interval_us, "%s: interval %lu", key, (unsigned long)c.interval_us);
        cr_expect_gt(c.tat_us, 0, "%s", key);
    }
}
