/* policy/headtrack.c: the headers a newHeads subscription sends next
 * (policy/headtrack.h). */
#include "policy/headtrack.h"

#include <string.h>

void policy_headtrack_init(policy_headtrack_t *t)
{
    memset(t, 0, sizeof(*t));
}

static policy_headtrack_slot_t *slot_of(policy_headtrack_t *t, uint64_t height)
{
    return &t->ring[height % POLICY_HEADTRACK_RING];
}

const uint8_t *policy_headtrack_hash(const policy_headtrack_t *t, uint64_t height)
{
    const policy_headtrack_slot_t *s = &t->ring[height % POLICY_HEADTRACK_RING];
    return height != 0 && height <= t->last && s->used && s->height == height ? s->hash : NULL;
}

uint64_t policy_headtrack_next(const policy_headtrack_t *t, uint64_t head, uint32_t max_backfill,
                               uint64_t *skipped)
{
    if (skipped != NULL)
        *skipped = 0;
    if (head == 0 || head <= t->last)
        return 0;
    if (t->last == 0)
        return head;
    if (head - t->last > (uint64_t)max_backfill) {
        if (skipped != NULL)
            *skipped = head - t->last - 1;
        return head;
    }
    return t->last + 1;
}

policy_headtrack_verdict_t policy_headtrack_judge(const policy_headtrack_t *t, uint64_t height, const uint8_t *hash,
                                                  const uint8_t *parent)
{
    if (height == 0)
        return POLICY_HEADTRACK_DUP;
    const uint8_t *sent = policy_headtrack_hash(t, height);
    if (sent != NULL && memcmp(sent, hash, POLICY_HEADTRACK_HASH) == 0)
        return POLICY_HEADTRACK_DUP;
    if (sent == NULL && height <= t->last)
        return POLICY_HEADTRACK_DUP; /* older than the ring: too old to tell */
    const uint8_t *below = policy_headtrack_hash(t, height - 1);
    if (below != NULL && memcmp(below, parent, POLICY_HEADTRACK_HASH) != 0)
        return POLICY_HEADTRACK_BACK;
    if (below == NULL && sent != NULL && height > 1)
        return POLICY_HEADTRACK_DEEP; /* the parent sent fell out of the ring: the fork is unseen */
    return POLICY_HEADTRACK_EMIT;
}

int policy_headtrack_record(policy_headtrack_t *t, uint64_t height, const uint8_t *hash)
{
    int replaced = policy_headtrack_hash(t, height) != NULL;
    /* the heights above are on the branch replaced: forgotten, refetched */
    for (uint64_t h = height + 1; h <= t->last && h - height <= POLICY_HEADTRACK_RING; h++) {
        policy_headtrack_slot_t *s = slot_of(t, h);
        if (s->height == h)
            s->used = 0;
    }
    policy_headtrack_slot_t *s = slot_of(t, height);
    s->height = height;
    memcpy(s->hash, hash, POLICY_HEADTRACK_HASH);
    s->used = 1;
    t->last = height;
    return replaced;
}
