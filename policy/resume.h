/* policy/resume.h: whether a subscription held after its socket closed
 * (sub/sub_resume.c, server.ws_resume) is taken over by a subscribe, as
 * plain data: who is held, and what a held position found is worth. Pure:
 * the caller reads the record (state/state_resume.h), the clock and the
 * chain view's head, and turns the outcome into a source and a counter. */
#ifndef POLICY_RESUME_H
#define POLICY_RESUME_H

#include <stdint.h>

/* server.ws_resume */
typedef enum policy_resume_mode {
    POLICY_RESUME_OFF,            /* nobody's subscriptions are held */
    POLICY_RESUME_KEYED,          /* callers with an API key (the default) */
    POLICY_RESUME_ALL,            /* ... and anonymous callers, by address (one NAT: one identity) */
} policy_resume_mode_t;

typedef enum policy_resume_outcome {
    POLICY_RESUME_NONE,           /* nothing was held: a new subscription */
    POLICY_RESUME_RESUMED,        /* go on from the position */
    POLICY_RESUME_EXPIRED,        /* held, but the caller came back after the hold ended: from the head */
    POLICY_RESUME_TOO_FAR,        /* held, but more than max_behind heights behind the head: from the head */
} policy_resume_outcome_t;

/* 1 if a caller's subscriptions are held under mode (keyed: it called with an API key). */
int policy_resume_holds(policy_resume_mode_t mode, int keyed);

/* What a subscribe does with what it found: found 0 (nothing held), or
 * the held position's height and the hold's end (expires_ms, shared time),
 * at now_ms with the network's head (0: unknown, trusted to be near). */
policy_resume_outcome_t policy_resume_judge(int found, uint64_t expires_ms, uint64_t height, uint64_t now_ms,
                                            uint64_t head, uint32_t max_behind);

#endif
