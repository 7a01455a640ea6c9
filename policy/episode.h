/* policy/episode.h: one event when a state begins, one when it ends.
 *
 * A state that comes back again and again (an endpoint answering 429 with
 * Retry-After: 2 is marked rate-limited, the mark expires, the next refusal
 * marks it again) is one episode while the gaps between its marks are short:
 * it gets one event when it begins and one when it ends, with how many marks
 * it took and how long it lasted, instead of an event per mark that pushes
 * everything else out of the operator's feed.
 *
 *   mark at now, lasting until `until`:
 *     no episode, or the last mark ended over quiet_ms ago  -> a new episode (event)
 *     otherwise                                              -> the same one (counted)
 *   quiet_ms after the last mark ended, nothing new         -> the episode is over (event)
 *
 * Pure: time is passed in; the caller keeps the record (state/) and turns
 * BEGAN and the end into events. */
#ifndef POLICY_EPISODE_H
#define POLICY_EPISODE_H

#include <stdint.h>

typedef struct policy_episode {
    uint64_t since_ms;            /* the episode began (0: none) */
    uint64_t last_until_ms;       /* its latest mark ends (or ended) then */
    uint32_t marks;               /* marks in it, the first included */
} policy_episode_t;

typedef enum policy_episode_note {
    POLICY_EPISODE_BEGAN,         /* a new episode: say so */
    POLICY_EPISODE_GOES_ON,       /* part of the one under way: counted, no event */
} policy_episode_note_t;

/* The quiet time after its last mark ended that ends an episode. It counts
 * from the mark's end, so it does not depend on the marks' length: while
 * marked nothing is sent, and the next call or health probe (seconds apart
 * at most) finds out whether the state goes on. */
#define POLICY_EPISODE_QUIET_MS 10000

/* A mark set at now_ms, lasting until until_ms. An episode that was over but
 * not yet closed (its end not reported) is replaced: the caller reports the
 * old one's end first (policy_episode_over). */
policy_episode_note_t policy_episode_mark(policy_episode_t *e, uint64_t now_ms, uint64_t until_ms,
                                          uint32_t quiet_ms);

/* 1 if an episode is under way and its last mark ended quiet_ms or more ago:
 * its end is due (the caller reports it, then policy_episode_close). */
int policy_episode_over(const policy_episode_t *e, uint64_t now_ms, uint32_t quiet_ms);

/* How long the episode lasted: from its start to its last mark's end. */
uint64_t policy_episode_duration_ms(const policy_episode_t *e);

void policy_episode_close(policy_episode_t *e);

#endif
