/* policy/episode.c: a repeating state as one episode (pure). */
#include "policy/episode.h"

int policy_episode_over(const policy_episode_t *e, uint64_t now_ms, uint32_t quiet_ms)
{
    return e->since_ms != 0 && now_ms >= e->last_until_ms + quiet_ms;
}

policy_episode_note_t policy_episode_mark(policy_episode_t *e, uint64_t now_ms, uint64_t until_ms,
                                          uint32_t quiet_ms)
{
    if (e->since_ms == 0 || policy_episode_over(e, now_ms, quiet_ms)) {
        *e = (policy_episode_t){.since_ms = now_ms ? now_ms : 1, .last_until_ms = until_ms, .marks = 1};
        return POLICY_EPISODE_BEGAN;
    }
    if (until_ms > e->last_until_ms)
        e->last_until_ms = until_ms;
    if (e->marks < UINT32_MAX)
        e->marks++;
    return POLICY_EPISODE_GOES_ON;
}

uint64_t policy_episode_duration_ms(const policy_episode_t *e)
{
    return e->last_until_ms > e->since_ms ? e->last_until_ms - e->since_ms : 0;
}

void policy_episode_close(policy_episode_t *e)
{
    *e = (policy_episode_t){0};
}
