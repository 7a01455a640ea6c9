/* tests/policy/test_lease.c: the lease ladder (policy/lease.c): each rung,
 * the fall to the degraded share, the retry timer and the way back. The
 * rungs' actions are scripted: each says what the test tells it to, and the
 * climb's path is recorded. */
#include <criterion/criterion.h>
#include <string.h>

#include "policy/lease.h"

#define EVERY 1000 /* the degraded timer, in the test's unit */

#define F POLICY_LEASE_FALL
#define NO POLICY_LEASE_NO
#define YES POLICY_LEASE_YES
#define WAIT POLICY_LEASE_WAIT
#define HELD POLICY_LEASE_RUNG_HELD
#define CLUSTER POLICY_LEASE_RUNG_CLUSTER
#define HOST POLICY_LEASE_RUNG_HOST
#define SHARE POLICY_LEASE_RUNG_SHARE

static const policy_lease_mode_t healthy = {0}, degraded = {.degraded = 1}, cluster = {.cluster = 1};

/* ---- a scripted climb: what each rung says, the rungs tried in order ---- */
static policy_lease_ladder_t ladder;
static policy_lease_result_t says[POLICY_LEASE_RUNG_COUNT];
static policy_lease_rung_t path[8], by;
static size_t npath;

static policy_lease_result_t tried(policy_lease_rung_t rung)
{
    cr_assert_lt(npath, 8, "a climb of more rungs than the ladder has");
    path[npath++] = rung;
    return says[rung];
}

static policy_lease_result_t on_held(void *ctx) { (void)ctx; return tried(HELD); }
static policy_lease_result_t on_cluster(void *ctx) { (void)ctx; return tried(CLUSTER); }
static policy_lease_result_t on_host(void *ctx) { (void)ctx; return tried(HOST); }
static policy_lease_result_t on_share(void *ctx) { (void)ctx; return tried(SHARE); }
static const policy_lease_ops_t ops = {.held = on_held, .cluster = on_cluster, .host = on_host, .share = on_share};

static void setup(void)
{
    policy_lease_init(&ladder, EVERY);
}

TestSuite(lease, .init = setup);

/* Climbs at now with what each rung says; returns the answer. */
static policy_lease_result_t climb(policy_lease_mode_t mode, uint64_t now, policy_lease_result_t held,
                                   policy_lease_result_t clustered, policy_lease_result_t host,
                                   policy_lease_result_t share)
{
    npath = 0;
    says[HELD] = held;
    says[CLUSTER] = clustered;
    says[HOST] = host;
    says[SHARE] = share;
    return policy_lease_climb(&ladder, mode, now, &ops, NULL, &by);
}

/* The rungs the last climb tried, ending with the one that answered. */
static void expect_path(size_t n, const policy_lease_rung_t *want)
{
    cr_assert_eq(npath, n, "%zu rungs tried, %zu expected", npath, n);
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(path[i], want[i], "rung %zu: %d, %d expected", i, path[i], want[i]);
    cr_expect_eq(by, want[n - 1], "decided by %d, %d expected", by, want[n - 1]);
}
#define PATH(...) expect_path(sizeof((policy_lease_rung_t[]){__VA_ARGS__}) / sizeof(policy_lease_rung_t), \
                              (policy_lease_rung_t[]){__VA_ARGS__})

/* ---- the rungs ---- */

Test(lease, what_is_held_answers_without_a_store)
{
    const policy_lease_mode_t modes[] = {healthy, degraded, cluster, {.cluster = 1, .degraded = 1}};
    for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
        cr_expect_eq(climb(modes[m], 5, YES, WAIT, NO, NO), YES, "mode %zu", m);
        PATH(HELD);
        cr_expect_eq(climb(modes[m], 5, NO, WAIT, YES, YES), NO, "refused until later: mode %zu", m);
        PATH(HELD);
    }
    cr_expect_eq(ladder.retry_shared_at, 0, "no store failed: no timer");
}

Test(lease, without_a_cluster_the_hosts_store_decides)
{
    cr_expect_eq(climb(healthy, 5, F, WAIT, YES, NO), YES);
    PATH(HELD, HOST);
    cr_expect_eq(climb(healthy, 6, F, WAIT, NO, YES), NO, "the store's refusal stands");
    PATH(HELD, HOST);
}

Test(lease, with_a_cluster_the_call_waits_for_it_and_falls_to_the_host_when_it_is_away)
{
    cr_expect_eq(climb(cluster, 5, F, WAIT, YES, YES), WAIT);
    PATH(HELD, CLUSTER);
    /* Redis away: this host's store, its share of what was left */
    cr_expect_eq(climb(cluster, 6, F, F, YES, NO), YES);
    PATH(HELD, CLUSTER, HOST);
    /* and when that fails too: the worker's own share */
    cr_expect_eq(climb(cluster, 7, F, F, F, YES), YES);
    PATH(HELD, CLUSTER, HOST, SHARE);
    cr_expect_eq(ladder.retry_shared_at, 7 + EVERY);
}

/* ---- the fall to degraded, the timer, the way back ---- */

Test(lease, a_failing_store_falls_to_the_share_and_starts_the_timer)
{
    cr_expect_eq(climb(healthy, 100, F, WAIT, F, NO), NO, "the share refuses: never unlimited");
    PATH(HELD, HOST, SHARE);
    cr_expect_eq(ladder.retry_shared_at, 100 + EVERY);
}

Test(lease, the_timer_keeps_a_degraded_climb_off_the_store_until_it_runs_out)
{
    (void)climb(healthy, 100, F, WAIT, F, YES); /* the store fails: degraded from here */
    for (uint64_t now = 100; now < 100 + EVERY; now += 99) {
        cr_expect_eq(climb(degraded, now, F, WAIT, YES, YES), YES);
        PATH(HELD, SHARE);
    }
    cr_expect_eq(climb(degraded, 100 + EVERY - 1, F, WAIT, YES, NO), NO, "the share's refusal");
    PATH(HELD, SHARE);
    /* the timer ran out: the store is tried again; it still fails: again a while */
    cr_expect_eq(climb(degraded, 100 + EVERY, F, WAIT, F, YES), YES);
    PATH(HELD, HOST, SHARE);
    cr_expect_eq(ladder.retry_shared_at, 100 + 2 * EVERY);
    cr_expect_eq(climb(degraded, 100 + EVERY + 1, F, WAIT, YES, YES), YES);
    PATH(HELD, SHARE);
}

Test(lease, the_way_back_once_the_store_answers)
{
    (void)climb(healthy, 100, F, WAIT, F, YES);
    /* the timer ran out and the store answers: the caller notes it, the part
     * is no longer degraded, and climbs stop at the store again */
    cr_expect_eq(climb(degraded, 100 + EVERY, F, WAIT, YES, NO), YES);
    PATH(HELD, HOST);
    cr_expect_eq(climb(healthy, 100 + EVERY + 1, F, WAIT, NO, YES), NO);
    PATH(HELD, HOST);
    /* with a cluster, Redis back: the cluster again */
    cr_expect_eq(climb(cluster, 100 + EVERY + 2, F, WAIT, YES, YES), WAIT);
    PATH(HELD, CLUSTER);
}

Test(lease, the_parts_state_wins_over_a_timer_still_running)
{
    /* another ladder of the same part (another endpoint) found the store
     * working again: this one's timer does not keep it off the store */
    (void)climb(healthy, 100, F, WAIT, F, YES);
    cr_expect_eq(climb(healthy, 101, F, WAIT, YES, YES), YES);
    PATH(HELD, HOST);
}

Test(lease, a_climb_nothing_answers_refuses)
{
    cr_expect_eq(climb(cluster, 5, F, F, F, F), NO, "fail safe");
    PATH(HELD, CLUSTER, HOST, SHARE);
    cr_expect_eq(climb(degraded, 6, F, F, YES, F), NO, "degraded: the share still decides");
    PATH(HELD, SHARE);
    cr_expect_eq(policy_lease_climb(&ladder, degraded, 7, &ops, NULL, NULL), NO, "no decided rung asked for");
}

/* ---- the edges ---- */

Test(lease, every_step_is_an_edge_down_the_ladder)
{
    const uint64_t times[] = {0, 99, 100 + EVERY - 1, 100 + EVERY, UINT64_MAX / 2};
    for (int cl = 0; cl < 2; cl++)
        for (int deg = 0; deg < 2; deg++)
            for (int from = 0; from < POLICY_LEASE_RUNG_COUNT; from++)
                for (int said = 0; said < POLICY_LEASE_RESULT_COUNT; said++)
                    for (size_t t = 0; t < sizeof(times) / sizeof(times[0]); t++) {
                        policy_lease_ladder_t l = {.retry_every = EVERY, .retry_shared_at = 100 + EVERY};
                        policy_lease_mode_t mode = {.cluster = (uint8_t)cl, .degraded = (uint8_t)deg};
                        policy_lease_rung_t to = policy_lease_next(&l, mode, (policy_lease_rung_t)from,
                                                                   (policy_lease_result_t)said, times[t]);
                        cr_expect(from == POLICY_LEASE_RUNG_COUNT || policy_lease_edge_allowed(from, to),
                                  "%d -> %d is no edge", from, to);
                        if (said != POLICY_LEASE_FALL)
                            cr_expect_eq(to, POLICY_LEASE_RUNG_DONE, "an answer ends the climb");
                        if (to == POLICY_LEASE_RUNG_CLUSTER)
                            cr_expect(cl, "no cluster configured, yet asked");
                    }
    /* nothing climbs back up, and the end is the end */
    for (int from = 0; from < POLICY_LEASE_RUNG_DONE; from++)
        for (int to = 0; to <= from; to++)
            cr_expect_not(policy_lease_edge_allowed(from, to), "%d -> %d goes back up", from, to);
    cr_expect(policy_lease_edge_allowed(POLICY_LEASE_RUNG_DONE, POLICY_LEASE_RUNG_DONE));
    cr_expect_not(policy_lease_edge_allowed(POLICY_LEASE_RUNG_COUNT, POLICY_LEASE_RUNG_DONE));
}
