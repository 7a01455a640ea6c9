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
    cr_expect(state_link_edge_allowed(STATE_LINK_CONNECTING, STATE_LINK_JOINING));
    cr_expect(state_link_edge_allowed(STATE_LINK_JOINING, STATE_LINK_UP), "up only once a write succeeded");
    cr_expect(state_link_edge_allowed(STATE_LINK_UP, STATE_LINK_JOINING), "an error reply to a write: not a lost link");
    for (int s = 0; s < STATE_LINK_COUNT; s++) {
        cr_expect(!state_link_edge_allowed((state_link_t)s, (state_link_t)s), "%s -> itself", state_link_name(s));
        cr_expect_eq(state_link_edge_allowed((state_link_t)s, STATE_LINK_DOWN), s != STATE_LINK_DOWN,
                     "every state but DOWN may fall");
        if (s != STATE_LINK_JOINING)
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
    /* an unreachable Redis at the start is a fall too; the hosts last seen stay */
    cr_assert_eq(state_cluster_mode_reset(st, 7000), SL_OK);
    cr_expect_eq(state_cluster_mode_get(st).hosts, 3, "a restart keeps the hosts last seen");
    cr_expect_eq(state_cluster_mode_move(st, STATE_CLUSTER_DEGRADED, 1, "Redis unreachable", 7100), 1);
    cr_expect_eq(count_kind(st, STATE_EVENT_CLUSTER_DEGRADED), 2);
    close_tmp(st);
}

/* A Redis that comes and goes: one degraded/restored pair a minute, the
 * falls in between counted into the next event; a spell still going on
 * when the minute is over is logged by the tick. */
Test(cluster, mode_flaps_are_one_pair_a_minute)
{
    state_t *st = open_tmp();
    cr_assert_eq(state_cluster_mode_reset(st, 1000), SL_OK);
    cr_expect_eq(state_cluster_mode_move(st, STATE_CLUSTER_SHARED, 1, NULL, 1000), 1);
    uint64_t t = 2000;
    for (int i = 0; i < 20; i++, t += 150) {
        cr_expect_eq(state_cluster_mode_move(st, STATE_CLUSTER_DEGRADED, 1, "Redis lost: x", t), 1);
        cr_expect_eq(state_cluster_mode_move(st, STATE_CLUSTER_SHARED, 1, NULL, t + 100), 1);
    }
    cr_expect_eq(count_kind(st, STATE_EVENT_CLUSTER_DEGRADED), 1);
    cr_expect_eq(count_kind(st, STATE_EVENT_CLUSTER_RESTORED), 1);
    state_cluster_mode_tick(st, 2000 + STATE_CLUSTER_EVENT_EVERY_MS); /* shared by then: nothing to tell */
    cr_expect_eq(count_kind(st, STATE_EVENT_CLUSTER_DEGRADED), 1);
    /* the next fall after the minute carries the 19 before it */
    t = 2000 + STATE_CLUSTER_EVENT_EVERY_MS + 10;
    cr_expect_eq(state_cluster_mode_move(st, STATE_CLUSTER_DEGRADED, 1, "Redis lost: y", t), 1);
    state_event_t evs[8];
    size_t n;
    cr_assert_eq(state_events_read(st, 0, evs, 8, &n), SL_OK);
    cr_assert_eq(n, 3);
    cr_expect_eq(evs[2].kind, STATE_EVENT_CLUSTER_DEGRADED);
    cr_expect_eq(evs[2].count, 20, "this fall and the 19 held back");
    cr_expect_eq(evs[2].duration_ms, 19 * 100, "how long they lasted");
    /* back, and away again within the minute: held back ... */
    cr_expect_eq(state_cluster_mode_move(st, STATE_CLUSTER_SHARED, 1, NULL, t + 500), 1);
    cr_expect_eq(state_cluster_mode_move(st, STATE_CLUSTER_DEGRADED, 1, "Redis lost: z", t + 1000), 1);
    cr_expect_eq(count_kind(st, STATE_EVENT_CLUSTER_DEGRADED), 2);
    state_cluster_mode_tick(st, t + 30000);
    cr_expect_eq(count_kind(st, STATE_EVENT_CLUSTER_DEGRADED), 2, "not before the minute is over");
    /* ... and told by the tick once the minute is over, if still away */
    state_cluster_mode_tick(st, t + STATE_CLUSTER_EVENT_EVERY_MS);
    state_cluster_mode_tick(st, t + STATE_CLUSTER_EVENT_EVERY_MS + 1);
    cr_expect_eq(count_kind(st, STATE_EVENT_CLUSTER_DEGRADED), 3, "once");
    cr_assert_eq(state_events_read(st, 0, evs, 8, &n), SL_OK);
    cr_expect_eq(evs[n - 1].count, 1);
    cr_expect_eq(evs[n - 1].duration_ms, STATE_CLUSTER_EVENT_EVERY_MS - 1000);
    /* and its return is told */
    cr_expect_eq(count_kind(st, STATE_EVENT_CLUSTER_RESTORED), 2, "the pair of t: its fall and return");
    cr_expect_eq(state_cluster_mode_move(st, STATE_CLUSTER_SHARED, 1, NULL, t + 70000), 1);
    cr_expect_eq(count_kind(st, STATE_EVENT_CLUSTER_RESTORED), 3);
    close_tmp(st);
}

Test(cluster, shapes_keep_the_probe_owner_and_the_host_fields)
{
    state_endpoint_rec_t l = {.breaker = 2, .since_ms = 10, .cooldown_ms = 5000, .opened_at_ms = 5, .probe_pid = 4242,
                              .probe_at_ms = 10, .drained = 1, .drained_at_ms = 7, .rate_limited_until_ms = 99,
                              .transitions = {1, 2, 3}, .head = 123, .probe_ewma_us = 800, .probe_next_ms = 77,
                              .rl_backoff_ms = 4000};
    state_cluster_ep_t none, c;
    memset(&none, 0, sizeof(none));
    none.version = 55;
    state_cluster_ep_from_local(&l, &none, "h1", &c);
    cr_expect_eq(c.version, 55);
    cr_expect_str_eq(c.probe_host, "h1", "this host's process owns the claim");
    cr_expect_eq(c.probe_pid, 4242);
    cr_expect_eq(c.rate_limited_until_ms, 99);
    cr_expect_eq(c.transitions[2], 3);
    cr_expect_eq(c.rl_backoff_ms, 4000, "the backoff doubles across hosts");
    /* another host reads the claim as someone else's, keeps its own fields */
    state_endpoint_rec_t other = {.head = 500, .probe_ewma_us = 300, .probe_next_ms = 1};
    state_cluster_ep_to_local(&c, "h2", &other);
    cr_expect_eq(other.probe_pid, STATE_PROBE_ELSEWHERE);
    cr_expect_eq(other.breaker, 2);
    cr_expect_eq(other.head, 500, "the probe results of h2 stay h2's");
    cr_expect_eq(other.probe_ewma_us, 300);
    cr_expect_eq(other.probe_next_ms, 1);
    /* h2 changes something else: the claim stays h1's */
    other.rate_limited_until_ms = 200;
    state_cluster_ep_t back;
    state_cluster_ep_from_local(&other, &c, "h2", &back);
    cr_expect_str_eq(back.probe_host, "h1");
    cr_expect_eq(back.probe_pid, 4242);
    /* and h1 reads its own claim as its pid again */
    state_endpoint_rec_t mine;
    memset(&mine, 0, sizeof(mine));
    state_cluster_ep_to_local(&back, "h1", &mine);
    cr_expect_eq(mine.probe_pid, 4242);
    /* no claim: no owner */
    l.probe_pid = 0;
    state_cluster_ep_from_local(&l, &c, "h1", &back);
    cr_expect_str_eq(back.probe_host, "");
    state_cluster_ep_to_local(&back, "h2", &other);
    cr_expect_eq(other.probe_pid, 0);
    /* a breaker value that is no state reads closed */
    back.breaker = 9;
    state_cluster_ep_to_local(&back, "h2", &other);
    cr_expect_eq(other.breaker, 0);
}

Test(cluster, merge_after_an_outage)
{
    state_cluster_ep_t before = {.breaker = 0, .since_ms = 100, .drained = 0};
    /* here: opened at 300 and drained; Redis: another host closed at 200, marked until 900 */
    state_cluster_ep_t mine = {.breaker = 1, .since_ms = 300, .cooldown_ms = 5000, .opened_at_ms = 300, .drained = 1,
                               .drained_at_ms = 250, .rate_limited_until_ms = 400, .transitions = {0, 3, 0}};
    state_cluster_ep_t theirs = {.version = 9, .breaker = 0, .since_ms = 200, .rate_limited_until_ms = 900,
                                 .transitions = {2, 1, 1}};
    state_cluster_ep_t out;
    state_cluster_ep_merge(&mine, &before, &theirs, &out);
    cr_expect_eq(out.breaker, 1, "the later breaker change wins");
    cr_expect_eq(out.since_ms, 300);
    cr_expect_eq(out.drained, 1, "a drain made here wins");
    cr_expect_eq(out.rate_limited_until_ms, 900, "the later mark wins");
    cr_expect_eq(out.transitions[0], 2);
    cr_expect_eq(out.transitions[1], 3);
    cr_expect_eq(out.version, 9);
    /* Redis' later change wins, and a drain not changed here is Redis' */
    theirs.since_ms = 400;
    theirs.drained = 1;
    mine.drained = 0;
    state_cluster_ep_merge(&mine, &before, &theirs, &out);
    cr_expect_eq(out.breaker, 0);
    cr_expect_eq(out.since_ms, 400);
    cr_expect_eq(out.drained, 1);
}

Test(cluster, records_round_trip)
{
    state_cluster_ep_t c = {.version = 1700000000123456ull, .dirty = 1, .breaker = 2, .probe_pid = 7,
                            .transitions = {4, 5, 6}};
    snprintf(c.probe_host, sizeof(c.probe_host), "gw-1");
    sl_buf_t b = SL_BUF_INIT;
    cr_assert_eq(state_record_encode(&state_cluster_ep_schema, &c, &b), SL_OK);
    state_cluster_ep_t d;
    memset(&d, 0, sizeof(d));
    cr_assert_eq(state_record_decode(&state_cluster_ep_schema, b.base, b.len, &d), SL_OK);
    cr_expect_eq(memcmp(&c, &d, sizeof(c)), 0);
    sl_buf_dispose(&b);
}

/* A floor message of the channel raises the host's copy of a network's
 * floor of heads served, never lowers it, and garbage changes nothing. */
Test(cluster, floor_messages_raise_the_hosts_copy)
{
    state_t *st = open_tmp();
    state_cluster_t cl = {.st = st};
    state_chain_rec_t rec;
    static const char up[] = "f eth 2000010 2000000 1999990";
    state_cluster_floor_message(&cl, up, sizeof(up) - 1);
    cr_assert_eq(state_read_begin(st), SL_OK);
    cr_assert_eq(state_chain_get(st, "eth", &rec), SL_OK);
    state_read_end(st);
    cr_expect_eq(rec.floor[0], 2000010);
    cr_expect_eq(rec.floor[1], 2000000);
    cr_expect_eq(rec.floor[2], 1999990);
    static const char down[] = "f eth 2000001 2000005 0";
    state_cluster_floor_message(&cl, down, sizeof(down) - 1);
    static const char *const bad[] = {"f", "f eth", "f eth 1 2", "f eth x y z", "e 1 eth/a\n", "f  9 9 9"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        state_cluster_floor_message(&cl, bad[i], strlen(bad[i]));
    cr_assert_eq(state_read_begin(st), SL_OK);
    cr_assert_eq(state_chain_get(st, "eth", &rec), SL_OK);
    state_read_end(st);
    cr_expect_eq(rec.floor[0], 2000010, "never lowered");
    cr_expect_eq(rec.floor[1], 2000005, "raised where higher");
    cr_expect_eq(rec.floor[2], 1999990);
    close_tmp(st);
}
