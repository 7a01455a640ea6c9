/* tests/policy/test_joblease.c: who does a leased job (policy/joblease.c):
 * each role, the lapse of a lease heard of, the ttl and the next ask. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "policy/joblease.h"

static policy_joblease_view_t view(int cluster, int up, const char *holder, uint64_t until)
{
    return (policy_joblease_view_t){.cluster = (uint8_t)cluster, .redis_up = (uint8_t)up, .me = "gw-1",
                                    .holder = holder, .until_ms = until};
}

Test(joblease, no_cluster_is_alone_whatever_else)
{
    policy_joblease_view_t v = view(0, 0, "gw-2", 5000);
    cr_assert_eq(policy_joblease_role(&v, 1000), POLICY_JOBLEASE_ALONE);
    cr_assert(policy_joblease_does_job(POLICY_JOBLEASE_ALONE));
}

Test(joblease, redis_away_is_local_even_when_another_held_it)
{
    policy_joblease_view_t v = view(1, 0, "gw-2", 5000);
    cr_assert_eq(policy_joblease_role(&v, 1000), POLICY_JOBLEASE_LOCAL);
    cr_assert(policy_joblease_does_job(POLICY_JOBLEASE_LOCAL));
}

Test(joblease, own_lease_until_it_lapses)
{
    policy_joblease_view_t v = view(1, 1, "gw-1", 5000);
    cr_assert_eq(policy_joblease_role(&v, 4999), POLICY_JOBLEASE_HOLDER);
    cr_assert_eq(policy_joblease_role(&v, 5000), POLICY_JOBLEASE_PENDING);
    cr_assert(policy_joblease_does_job(POLICY_JOBLEASE_HOLDER));
}

Test(joblease, another_hosts_lease_until_it_lapses)
{
    policy_joblease_view_t v = view(1, 1, "gw-10", 5000); /* a name that starts with ours is another */
    cr_assert_eq(policy_joblease_role(&v, 1000), POLICY_JOBLEASE_FOLLOWER);
    cr_assert_eq(policy_joblease_role(&v, 6000), POLICY_JOBLEASE_PENDING);
    cr_assert_not(policy_joblease_does_job(POLICY_JOBLEASE_FOLLOWER));
    cr_assert_not(policy_joblease_does_job(POLICY_JOBLEASE_PENDING));
}

Test(joblease, nothing_heard_is_pending)
{
    policy_joblease_view_t a = view(1, 1, "", 0), b = view(1, 1, NULL, 9000);
    cr_assert_eq(policy_joblease_role(&a, 1), POLICY_JOBLEASE_PENDING);
    cr_assert_eq(policy_joblease_role(&b, 1), POLICY_JOBLEASE_PENDING);
}

Test(joblease, ttl_is_three_of_the_shorter_job_at_least_the_minimum)
{
    cr_assert_eq(policy_joblease_ttl_ms(2000, 30000), 6000);
    cr_assert_eq(policy_joblease_ttl_ms(0, 30000), 90000);
    cr_assert_eq(policy_joblease_ttl_ms(40000, 30000), 90000);
    cr_assert_eq(policy_joblease_ttl_ms(100, 0), POLICY_JOBLEASE_MIN_TTL_MS);
    cr_assert_eq(policy_joblease_ttl_ms(0, 0), 0);
    cr_assert_eq(policy_joblease_ttl_ms(3600000, 0), 3 * 3600000u);
}

Test(joblease, holder_renews_at_a_third)
{
    cr_assert_eq(policy_joblease_next_ask_ms(POLICY_JOBLEASE_HOLDER, 7000, 6000, 1000), 3000);
    cr_assert_eq(policy_joblease_next_ask_ms(POLICY_JOBLEASE_PENDING, 0, 6000, 1000), 3000);
    cr_assert_eq(policy_joblease_next_ask_ms(POLICY_JOBLEASE_LOCAL, 0, 6000, 1000), 3000);
    cr_assert_eq(policy_joblease_next_ask_ms(POLICY_JOBLEASE_ALONE, 0, 6000, 1000), UINT64_MAX);
}

Test(joblease, follower_asks_when_the_lease_lapses)
{
    /* the holder's lease heard of runs out in 500 ms: asked then, not later */
    cr_assert_eq(policy_joblease_next_ask_ms(POLICY_JOBLEASE_FOLLOWER, 1500, 6000, 1000), 1500);
    /* far off: a third of the ttl (to hear of a move) */
    cr_assert_eq(policy_joblease_next_ask_ms(POLICY_JOBLEASE_FOLLOWER, 7000, 6000, 1000), 3000);
    /* already lapsed: a third (the role was PENDING anyway) */
    cr_assert_eq(policy_joblease_next_ask_ms(POLICY_JOBLEASE_FOLLOWER, 900, 6000, 1000), 3000);
}

Test(joblease, takeover_within_one_ttl_of_the_last_renewal)
{
    /* a holder renews at t=0 (ttl 6000) and dies; a follower heard at t=10 that the lease
     * runs 5990 more: it asks at 6000 at the latest, when Redis has let the lease go */
    uint32_t ttl = 6000;
    uint64_t now = 10, until = now + 5990, ask = now;
    policy_joblease_view_t v = view(1, 1, "gw-2", until);
    while (policy_joblease_role(&v, ask) == POLICY_JOBLEASE_FOLLOWER)
        ask = policy_joblease_next_ask_ms(POLICY_JOBLEASE_FOLLOWER, until, ttl, ask);
    cr_assert_leq(ask, (uint64_t)ttl);
    cr_assert_eq(policy_joblease_role(&v, ask), POLICY_JOBLEASE_PENDING);
}

Test(joblease, every_role_has_a_name)
{
    for (int r = 0; r < POLICY_JOBLEASE_ROLE_COUNT; r++)
        cr_assert_str_neq(policy_joblease_role_name((policy_joblease_role_t)r), "unknown");
    cr_assert_str_eq(policy_joblease_role_name(POLICY_JOBLEASE_ROLE_COUNT), "unknown");
}
