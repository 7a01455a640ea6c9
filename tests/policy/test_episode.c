/* tests/policy/test_episode.c: a repeating state is one episode: one event
 * when it begins, one when it ends. */
#include <criterion/criterion.h>

#include "policy/episode.h"

Test(episode, marks_close_together_are_one_episode)
{
    policy_episode_t e = {0};
    uint32_t quiet = POLICY_EPISODE_QUIET_MS;
    /* 429 with Retry-After: 2, marked again 1 s after each mark ends, for a minute */
    cr_expect_eq(policy_episode_mark(&e, 1000, 3000, quiet), POLICY_EPISODE_BEGAN);
    uint64_t t = 4000;
    for (int i = 0; i < 19; i++, t += 3000) {
        cr_expect_not(policy_episode_over(&e, t, quiet));
        cr_expect_eq(policy_episode_mark(&e, t, t + 2000, quiet), POLICY_EPISODE_GOES_ON, "mark %d", i);
    }
    cr_expect_eq(e.marks, 20);
    cr_expect_eq(e.since_ms, 1000);
    cr_expect_eq(e.last_until_ms, t - 3000 + 2000);
    cr_expect_eq(policy_episode_duration_ms(&e), e.last_until_ms - 1000);
    /* quiet for less than quiet_ms: not over; then over */
    cr_expect_not(policy_episode_over(&e, e.last_until_ms + quiet - 1, quiet));
    cr_expect(policy_episode_over(&e, e.last_until_ms + quiet, quiet));
    policy_episode_close(&e);
    cr_expect_not(policy_episode_over(&e, UINT64_MAX / 2, quiet));
}

Test(episode, a_mark_after_the_quiet_time_begins_a_new_episode)
{
    policy_episode_t e = {0};
    uint32_t quiet = 5000;
    cr_expect_eq(policy_episode_mark(&e, 100, 1100, quiet), POLICY_EPISODE_BEGAN);
    cr_expect_eq(policy_episode_mark(&e, 1100 + quiet, 2100 + quiet, quiet), POLICY_EPISODE_BEGAN);
    cr_expect_eq(e.marks, 1);
    cr_expect_eq(e.since_ms, 1100 + quiet);
}

Test(episode, a_shorter_mark_never_moves_the_end_back)
{
    policy_episode_t e = {0};
    cr_expect_eq(policy_episode_mark(&e, 0, 60000, 10000), POLICY_EPISODE_BEGAN);
    cr_expect_neq(e.since_ms, 0, "an episode begun at time 0 is still under way");
    cr_expect_eq(policy_episode_mark(&e, 1000, 2000, 10000), POLICY_EPISODE_GOES_ON);
    cr_expect_eq(e.last_until_ms, 60000);
}
