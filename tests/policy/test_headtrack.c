/* tests/policy/test_headtrack.c: the headers a newHeads subscription sends
 * (policy/headtrack.h): every height once, in order, a bounded backfill,
 * and a reorg walked back from the hashes. */
#include <criterion/criterion.h>
#include <string.h>

#include "policy/headtrack.h"

/* hash of height h on fork f: h in the first bytes, f in the last */
static const uint8_t *H(uint64_t h, uint8_t f)
{
    static uint8_t buf[8][POLICY_HEADTRACK_HASH];
    static int k;
    uint8_t *b = buf[k++ % 8];
    memset(b, 0, POLICY_HEADTRACK_HASH);
    memcpy(b, &h, sizeof(h));
    b[POLICY_HEADTRACK_HASH - 1] = f;
    return b;
}

/* sends height h of fork f (parent on fork pf), as the caller would */
static policy_headtrack_verdict_t show(policy_headtrack_t *t, uint64_t h, uint8_t f, uint8_t pf)
{
    policy_headtrack_verdict_t v = policy_headtrack_judge(t, h, H(h, f), H(h - 1, pf));
    if (v == POLICY_HEADTRACK_EMIT)
        policy_headtrack_record(t, h, H(h, f));
    return v;
}

Test(headtrack, starts_at_the_head_then_every_height)
{
    policy_headtrack_t t;
    uint64_t skipped = 9;
    policy_headtrack_init(&t);
    cr_expect_eq(policy_headtrack_next(&t, 0, 128, &skipped), 0);
    cr_expect_eq(policy_headtrack_next(&t, 100, 128, &skipped), 100);
    cr_expect_eq(skipped, 0);
    cr_expect_eq(show(&t, 100, 0, 0), POLICY_HEADTRACK_EMIT);
    cr_expect_eq(policy_headtrack_next(&t, 100, 128, NULL), 0);
    /* the head jumps by 3: 101, 102, 103 in order */
    for (uint64_t h = 101; h <= 103; h++) {
        cr_expect_eq(policy_headtrack_next(&t, 103, 128, NULL), h);
        cr_expect_eq(show(&t, h, 0, 0), POLICY_HEADTRACK_EMIT);
    }
    cr_expect_eq(policy_headtrack_next(&t, 103, 128, NULL), 0);
    /* the same header again: nothing */
    cr_expect_eq(show(&t, 103, 0, 0), POLICY_HEADTRACK_DUP);
    cr_expect_eq(show(&t, 101, 0, 0), POLICY_HEADTRACK_DUP);
}

Test(headtrack, backfill_is_bounded)
{
    policy_headtrack_t t;
    uint64_t skipped = 0;
    policy_headtrack_init(&t);
    show(&t, 100, 0, 0);
    cr_expect_eq(policy_headtrack_next(&t, 228, 128, &skipped), 101); /* 128 behind: all backfilled */
    cr_expect_eq(skipped, 0);
    cr_expect_eq(policy_headtrack_next(&t, 229, 128, &skipped), 229); /* 129: start from the head */
    cr_expect_eq(skipped, 128);
    cr_expect_eq(show(&t, 229, 0, 0), POLICY_HEADTRACK_EMIT);
}

Test(headtrack, reorg_at_the_tip_replaces_the_height)
{
    policy_headtrack_t t;
    policy_headtrack_init(&t);
    for (uint64_t h = 100; h <= 105; h++)
        show(&t, h, 0, 0);
    /* a new 105 whose parent is the 104 sent: a replacement, sent */
    cr_expect_eq(policy_headtrack_judge(&t, 105, H(105, 1), H(104, 0)), POLICY_HEADTRACK_EMIT);
    cr_expect_eq(policy_headtrack_record(&t, 105, H(105, 1)), 1);
    cr_expect_eq(memcmp(policy_headtrack_hash(&t, 105), H(105, 1), POLICY_HEADTRACK_HASH), 0);
}

Test(headtrack, deeper_reorg_walks_back_then_forward)
{
    policy_headtrack_t t;
    policy_headtrack_init(&t);
    for (uint64_t h = 100; h <= 105; h++)
        show(&t, h, 0, 0);
    /* heights 103.. replaced (fork 1); the head is now 106 */
    cr_expect_eq(policy_headtrack_next(&t, 106, 128, NULL), 106);
    cr_expect_eq(show(&t, 106, 1, 1), POLICY_HEADTRACK_BACK);
    cr_expect_eq(show(&t, 105, 1, 1), POLICY_HEADTRACK_BACK);
    cr_expect_eq(show(&t, 104, 1, 1), POLICY_HEADTRACK_BACK);
    cr_expect_eq(show(&t, 103, 1, 0), POLICY_HEADTRACK_EMIT); /* its parent is the 102 sent */
    cr_expect_eq(t.last, 103);
    cr_expect_null(policy_headtrack_hash(&t, 104));
    /* forward again: 104, 105, 106 of the new branch */
    for (uint64_t h = 104; h <= 106; h++) {
        cr_expect_eq(policy_headtrack_next(&t, 106, 128, NULL), h);
        cr_expect_eq(show(&t, h, 1, 1), POLICY_HEADTRACK_EMIT);
    }
    cr_expect_eq(policy_headtrack_next(&t, 106, 128, NULL), 0);
}

Test(headtrack, too_old_to_tell)
{
    policy_headtrack_t t;
    policy_headtrack_init(&t);
    show(&t, 1000, 0, 0);
    for (uint64_t h = 1001; h <= 1000 + POLICY_HEADTRACK_RING + 5; h++)
        show(&t, h, 0, 0);
    cr_expect_null(policy_headtrack_hash(&t, 1001));
    cr_expect_eq(policy_headtrack_judge(&t, 1001, H(1001, 3), H(1000, 3)), POLICY_HEADTRACK_DUP);
    /* a walk back stops at the ring's end: the oldest height held is sent, told as deep (the fork
     * below it is unseen: a logs subscription cannot undo what it cannot see) */
    uint64_t low = t.last - POLICY_HEADTRACK_RING + 1;
    cr_expect_eq(policy_headtrack_judge(&t, low, H(low, 3), H(low - 1, 3)), POLICY_HEADTRACK_DEEP);
    /* one height above, its parent held: a walk back that finds the fork is no deep one */
    cr_expect_eq(policy_headtrack_judge(&t, low + 1, H(low + 1, 3), H(low, 0)), POLICY_HEADTRACK_EMIT);
}
