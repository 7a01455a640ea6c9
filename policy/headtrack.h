/* policy/headtrack.h: which block headers a newHeads subscription sends
 * next, as plain data: every height exactly once, in order, and a reorg
 * told as a node tells it (a new header for a height already sent).
 *
 * The caller (sub/sub_follow.c) learns the network's head, asks
 * policy_headtrack_next which height to fetch, and shows each fetched header
 * to policy_headtrack_judge: EMIT (send it, then policy_headtrack_record),
 * BACK (its parent is not the hash sent one height below: the branch sent
 * was replaced, fetch that height again, walking back to the fork), DEEP
 * (a walk back reached the bottom of the ring before the fork), or DUP
 * (sent already, or too old to tell). A ring of the last
 * POLICY_HEADTRACK_RING hashes sent is the memory, so a walk back is at
 * most that deep. Pure: no clocks, no allocation, no I/O. */
#ifndef POLICY_HEADTRACK_H
#define POLICY_HEADTRACK_H

#include <stdint.h>

#define POLICY_HEADTRACK_RING 128
#define POLICY_HEADTRACK_HASH 32

typedef struct policy_headtrack_slot {
    uint64_t height;
    uint8_t hash[POLICY_HEADTRACK_HASH];
    uint8_t used;
} policy_headtrack_slot_t;

typedef struct policy_headtrack {
    uint64_t last;                /* the highest height sent on the branch sent (0: none yet) */
    policy_headtrack_slot_t ring[POLICY_HEADTRACK_RING]; /* at height % POLICY_HEADTRACK_RING */
} policy_headtrack_t;

typedef enum policy_headtrack_verdict {
    POLICY_HEADTRACK_DUP,         /* nothing to send */
    POLICY_HEADTRACK_BACK,        /* fetch height - 1 again: the branch sent there was replaced */
    POLICY_HEADTRACK_EMIT,        /* send it (a new height, or a replacement of one sent) */
    POLICY_HEADTRACK_DEEP,        /* send it, but it replaces one sent and its parent is older than the
                                     ring: the fork is deeper than the walk back can reach, heights
                                     below it may have been replaced unseen */
} policy_headtrack_verdict_t;

void policy_headtrack_init(policy_headtrack_t *t);

/* The next height to fetch towards head; 0 when caught up. The first
 * header is the head itself (the follower records it unsent: subscriptions
 * start after it, as geth's do). More than
 * max_backfill heights behind: start again from the head, and *skipped
 * (may be NULL) gets the heights jumped over (else 0). */
uint64_t policy_headtrack_next(const policy_headtrack_t *t, uint64_t head, uint32_t max_backfill,
                               uint64_t *skipped);

/* What to do with a fetched header of height (> 0), its hash and its
 * parent's hash. */
policy_headtrack_verdict_t policy_headtrack_judge(const policy_headtrack_t *t, uint64_t height, const uint8_t *hash,
                                                  const uint8_t *parent);

/* Records a header EMIT said to send: it is the branch now, heights above
 * it are forgotten (they are refetched). Returns 1 when it replaced a hash
 * sent at that height (a reorg), else 0. */
int policy_headtrack_record(policy_headtrack_t *t, uint64_t height, const uint8_t *hash);

/* The hash sent at height, or NULL when the ring does not hold it. */
const uint8_t *policy_headtrack_hash(const policy_headtrack_t *t, uint64_t height);

#endif
