/* policy/resume.c: held subscriptions taken over or not (resume.h). */
#include "policy/resume.h"

int policy_resume_holds(policy_resume_mode_t mode, int keyed)
{
    switch (mode) {
    case POLICY_RESUME_OFF: return 0;
    case POLICY_RESUME_KEYED: return keyed != 0;
    case POLICY_RESUME_ALL: return 1;
    }
    return 0;
}

policy_resume_outcome_t policy_resume_judge(int found, uint64_t expires_ms, uint64_t height, uint64_t now_ms,
                                            uint64_t head, uint32_t max_behind)
{
    if (!found || height == 0)
        return POLICY_RESUME_NONE;
    if (now_ms >= expires_ms)
        return POLICY_RESUME_EXPIRED;
    /* a head above the position by more than the backfill bound: the follower would skip to the head */
    if (head > height && head - height > max_behind)
        return POLICY_RESUME_TOO_FAR;
    return POLICY_RESUME_RESUMED;
}
