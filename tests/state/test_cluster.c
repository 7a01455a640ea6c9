/* tests/state/test_cluster.c: the link's machine and the host's cluster
 * mode (one event per fall and return, however many workers move it). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "state/state_cluster_int.h"

static char dir[64];

static state_t *open_tmp(void)
{
    snprintf(dir, sizeof(dir), "/tmp/sluice-cluster-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    state_t *st = NULL;
    cr_assert_eq(state_open(&(state_conf_t){dir, 16, 1000, 3600}, &st), SL_OK);
    return st;
}

static void close_tmp(state_t *st)
{
    state_close(st);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

static size_t count_kind(state_t *st, state_event_kind_t kind)
{
    state_event_t evs[64];
    size_t n = 0, hits = 0;
    cr_assert_eq(state_events_read(st, 0, evs, 64, &n), SL_OK);
    for (size_t i = 0; i < n; i++)
        hits += evs[i].kind == kind;
    return hits;
}

Test(cluster, link_edges)
{
    /* the edges the manager takes, and no shortcut to UP */
    cr_expect(state_link_edge_allowed(STATE_LINK_DOWN, STATE_LINK_CONNECTING));
    cr_expect(state_link_edge_allowed(STATE_LINK_DOWN, STATE_LINK_RESOLVING));
    cr_expect(state_link_edge_allowed(STATE_LINK_RESOLVING, STATE_LINK_CONNECTING));
    cr_expect(state_link_edge_allowed(STATE_LINK_CONNECTING, STATE_LINK_UP));
    for (int s = 0; s < STATE_LINK_COUNT; s++) {
        cr_expect(!state_link_edge_allowed((state_link_t)s, (state_link_t)s), "%s -> itself", state_link_name(s));
        cr_expect_eq(state_link_edge_allowed((state_link_t)s, STATE_LINK_DOWN), s != STATE_LINK_DOWN,
                     "every state but DOWN may fall");
        if (s != STATE_LINK_CONNECTING)
            cr_expect(!state_link_edge_allowed((state_link_t)s, STATE_LINK_UP), "%s -> up", state_link_name(s));
    }
    cr_expect(!state_link_edge_allowed(STATE_LINK_COUNT, STATE_LINK_DOWN));
}

Test(cluster, scripts_are_named_and_load)
{
    for (int s = 0; s < STATE_SCRIPT_COUNT; s++) {
        cr_expect_neq(strcmp(state_script_name((state_script_t)s), "unknown"), 0);
        cr_expect_gt(strlen(state_script_source((state_script_t)s)), 20);
    }
}

Test(cluster, mode_moves_report_once)
{
    state_t *st = open_tmp();
    cr_expect_eq(state_cluster_mode_get(st).mode, STATE_CLUSTER_OFF, "absent: off");
    cr_assert_eq(state_cluster_mode_reset(st, 1000), SL_OK);
    cr_expect_eq(state_cluster_mode_get(st).mode, STATE_CLUSTER_STARTING);
    /* a first connect: shared, no event */
    cr_expect_eq(state_cluster_mode_move(st, STATE_CLUSTER_SHARED, 1, NULL, 1100), 1);
    cr_expect_eq(count_kind(st, STATE_EVENT_CLUSTER_RESTORED), 0);
    /* two workers notice the fall: one event */
    cr_expect_eq(state_cluster_mode_move(st, STATE_CLUSTER_DEGRADED, 2, "Redis lost: x", 2000), 1);
    cr_expect_eq(state_cluster_mode_move(st, STATE_CLUSTER_DEGRADED, 2, "Redis lost: y", 2001), 0);
    cr_expect_eq(count_kind(st, STATE_EVENT_CLUSTER_DEGRADED), 1);
    state_cluster_mode_rec_t m = state_cluster_mode_get(st);
    cr_expect_eq(m.mode, STATE_CLUSTER_DEGRADED);
    cr_expect_eq(m.since_ms, 2000);
    cr_expect_eq(m.hosts, 2, "the hosts last seen stay");
    /* the return: one event with the outage's length */
    cr_expect_eq(state_cluster_mode_move(st, STATE_CLUSTER_SHARED, 2, NULL, 5000), 1);
    cr_expect_eq(state_cluster_mode_move(st, STATE_CLUSTER_SHARED, 2, NULL, 5001), 0);
    cr_expect_eq(count_kind(st, STATE_EVENT_CLUSTER_RESTORED), 1);
    state_event_t evs[8];
    size_t n;
    cr_assert_eq(state_events_read(st, 0, evs, 8, &n), SL_OK);
    cr_assert_eq(n, 2);
    cr_expect_eq(evs[1].duration_ms, 3000);
    cr_expect(strstr(evs[0].reason, "Redis lost: x") != NULL);
    /* a new host counted: recorded without an event */
    cr_expect_eq(state_cluster_mode_move(st, STATE_CLUSTER_SHARED, 3, NULL, 6000), 1);
    cr_expect_eq(state_cluster_mode_get(st).hosts, 3);
    cr_expect_eq(state_cluster_mode_get(st).since_ms, 5000);
    cr_assert_eq(state_events_read(st, 0, evs, 8, &n), SL_OK);
    cr_expect_eq(n, 2);
    /* an unreachable Redis at the start is a fall too */
    cr_assert_eq(state_cluster_mode_reset(st, 7000), SL_OK);
    cr_expect_eq(state_cluster_mode_move(st, STATE_CLUSTER_DEGRADED, 1, "Redis unreachable", 7100), 1);
    cr_expect_eq(count_kind(st, STATE_EVENT_CLUSTER_DEGRADED), 2);
    close_tmp(st);
}
