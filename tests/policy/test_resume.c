/* tests/policy/test_resume.c: policy/resume.h: who is held, and what a
 * held position found at a subscribe is worth. */
#include <criterion/criterion.h>

#include "policy/resume.h"

Test(resume, who_is_held)
{
    cr_assert_eq(policy_resume_holds(POLICY_RESUME_OFF, 1), 0);
    cr_assert_eq(policy_resume_holds(POLICY_RESUME_KEYED, 1), 1);
    cr_assert_eq(policy_resume_holds(POLICY_RESUME_KEYED, 0), 0, "an anonymous caller is not held by default");
    cr_assert_eq(policy_resume_holds(POLICY_RESUME_ALL, 0), 1);
}

Test(resume, nothing_held_is_a_new_subscription)
{
    cr_assert_eq(policy_resume_judge(0, 0, 0, 1000, 500, 128), POLICY_RESUME_NONE);
    cr_assert_eq(policy_resume_judge(1, 2000, 0, 1000, 500, 128), POLICY_RESUME_NONE, "no position");
}

Test(resume, within_the_window_and_the_bound)
{
    cr_assert_eq(policy_resume_judge(1, 61000, 1002, 1000, 1005, 128), POLICY_RESUME_RESUMED);
    cr_assert_eq(policy_resume_judge(1, 61000, 1002, 1000, 1002 + 128, 128), POLICY_RESUME_RESUMED, "at the bound");
    cr_assert_eq(policy_resume_judge(1, 61000, 1002, 1000, 0, 128), POLICY_RESUME_RESUMED, "head unknown");
    cr_assert_eq(policy_resume_judge(1, 61000, 1002, 1000, 990, 128), POLICY_RESUME_RESUMED,
                 "a head below the position (a lagging view): the follower fetches the latest itself");
}

Test(resume, past_the_window_or_the_bound)
{
    cr_assert_eq(policy_resume_judge(1, 61000, 1002, 61000, 1005, 128), POLICY_RESUME_EXPIRED, "at expires_ms");
    cr_assert_eq(policy_resume_judge(1, 61000, 1002, 1000, 1002 + 129, 128), POLICY_RESUME_TOO_FAR);
    cr_assert_eq(policy_resume_judge(1, 61000, 1002, 90000, 5000, 128), POLICY_RESUME_EXPIRED,
                 "expired first: the window is the caller's promise");
}
