/* tests/pool/test_share.c: each identity's part of a worker's depth: a
 * bounded table that never loses a count, never underflows, and, once full,
 * holds further identities together (so filling it makes them shed sooner). */
#include <criterion/criterion.h>

#include "pool/pool_call_int.h"

#define N 2000

static pool_network_t net;
static pool_call_t calls[N];

static void setup(void)
{
    memset(&net, 0, sizeof(net));
    pool_share_init(&net);
    memset(calls, 0, sizeof(calls));
    for (size_t i = 0; i < N; i++)
        calls[i].net = &net;
}

static void teardown(void)
{
    pool_share_dispose(&net);
}

TestSuite(share, .init = setup, .fini = teardown);

Test(share, counts_per_identity_and_forgets_at_zero)
{
    for (int i = 0; i < 7; i++) {
        calls[i].owner = 42;
        pool_share_hold(&calls[i]);
    }
    calls[7].owner = 43;
    pool_share_hold(&calls[7]);
    cr_expect_eq(pool_share_held(&net, 42), 7);
    cr_expect_eq(pool_share_held(&net, 43), 1);
    cr_expect_eq(pool_share_held(&net, 44), 0);
    for (int i = 0; i < 7; i++)
        pool_share_release(&calls[i]);
    cr_expect_eq(pool_share_held(&net, 42), 0);
    cr_expect_eq(pool_share_held(&net, 43), 1, "another identity's count is kept");
    pool_share_release(&calls[7]);
    pool_share_release(&calls[7]); /* a second release never underflows */
    cr_expect_eq(pool_share_held(&net, 43), 0);
}

Test(share, owner_zero_is_not_counted)
{
    pool_share_hold(&calls[0]);
    cr_expect_eq(pool_share_held(&net, 0), 0);
    pool_share_release(&calls[0]);
}

/* Many identities with colliding homes, released in an order that moves
 * entries back over removed ones: every count stays right. */
Test(share, removals_keep_every_other_count)
{
    for (size_t i = 0; i < 300; i++) {
        calls[i].owner = (uint64_t)(i % 100) * 512 + 1; /* 100 identities, 3 calls each */
        pool_share_hold(&calls[i]);
    }
    for (size_t i = 0; i < 300; i += 2)
        pool_share_release(&calls[i]);
    for (size_t id = 0; id < 100; id++) {
        uint32_t want = 0;
        for (size_t i = 1; i < 300; i += 2)
            want += calls[i].owner == id * 512 + 1;
        cr_expect_eq(pool_share_held(&net, id * 512 + 1), want, "identity %zu", id);
    }
}

Test(share, a_full_table_holds_the_rest_together)
{
    for (size_t i = 0; i < N; i++) {
        calls[i].owner = i + 1;
        pool_share_hold(&calls[i]);
    }
    /* past three quarters of 512 rows, newcomers share one count */
    cr_expect_eq(pool_share_held(&net, 1), 1);
    cr_expect_geq(pool_share_held(&net, N), N - 384, "an identity with no row counts as the overflow group");
    for (size_t i = 0; i < N; i++)
        pool_share_release(&calls[i]);
    for (size_t i = 0; i < N; i++)
        cr_expect_eq(pool_share_held(&net, i + 1), 0, "identity %zu", i + 1);
}
