/* tests/policy/test_logfilter.c: geth's log filter rules (policy/logfilter.h). */
#include <criterion/criterion.h>
#include <string.h>

#include "policy/logfilter.h"

static uint8_t A1[20] = {1}, A2[20] = {2}, A3[20] = {3};
static uint8_t T1[32] = {0x11}, T2[32] = {0x22}, T3[32] = {0x33}, T4[32] = {0x44};

static int match(const policy_logfilter_t *f, const uint8_t *addr, const uint8_t (*topics)[32], size_t n)
{
    return policy_logfilter_match(f, addr, topics, n);
}

Test(logfilter, empty_filter_matches_every_log)
{
    policy_logfilter_t f;
    memset(&f, 0, sizeof(f));
    const uint8_t topics[2][32] = {{0x11}, {0x22}};
    cr_expect(match(&f, A1, topics, 2));
    cr_expect(match(&f, A2, NULL, 0)); /* LOG0: no topics */
}

Test(logfilter, address_one_or_many)
{
    const uint8_t one[1][20] = {{1}}, many[2][20] = {{2}, {3}};
    policy_logfilter_t f;
    memset(&f, 0, sizeof(f));
    f.addr = one;
    f.naddr = 1;
    cr_expect(match(&f, A1, NULL, 0));
    cr_expect_not(match(&f, A2, NULL, 0));
    f.addr = many;
    f.naddr = 2;
    cr_expect_not(match(&f, A1, NULL, 0));
    cr_expect(match(&f, A2, NULL, 0));
    cr_expect(match(&f, A3, NULL, 0));
}

Test(logfilter, topic_positions_and_wildcards)
{
    const uint8_t p0[1][32] = {{0x11}}, p1[1][32] = {{0x22}};
    const uint8_t log[3][32] = {{0x11}, {0x22}, {0x33}};
    policy_logfilter_t f;
    memset(&f, 0, sizeof(f));
    /* [T1]: first topic T1, the rest anything */
    f.npos = 1;
    f.pos[0] = (policy_logfilter_pos_t){p0, 1};
    cr_expect(match(&f, A1, log, 3));
    /* [null, T2]: anything first, T2 second */
    f.npos = 2;
    f.pos[0] = (policy_logfilter_pos_t){NULL, 0};
    f.pos[1] = (policy_logfilter_pos_t){p1, 1};
    cr_expect(match(&f, A1, log, 3));
    /* [T2]: the first topic is not T2 (positions are positions, not "contains") */
    f.npos = 1;
    f.pos[0] = (policy_logfilter_pos_t){p1, 1};
    cr_expect_not(match(&f, A1, log, 3));
}

Test(logfilter, more_positions_than_topics_never_match)
{
    const uint8_t log[2][32] = {{0x11}, {0x22}};
    policy_logfilter_t f;
    memset(&f, 0, sizeof(f));
    f.npos = 3; /* [null, null, null] */
    cr_expect_not(match(&f, A1, log, 2));
    cr_expect(match(&f, A1, (const uint8_t(*)[32])T1, 1) == 0);
    f.npos = 2;
    cr_expect(match(&f, A1, log, 2));
    f.npos = 1;
    cr_expect_not(match(&f, A1, NULL, 0)); /* [null] does not match a LOG0 */
}

Test(logfilter, or_at_a_position)
{
    const uint8_t or0[2][32] = {{0x11}, {0x33}};
    const uint8_t a[1][32] = {{0x11}}, b[1][32] = {{0x33}}, c[1][32] = {{0x22}};
    policy_logfilter_t f;
    memset(&f, 0, sizeof(f));
    f.npos = 1;
    f.pos[0] = (policy_logfilter_pos_t){or0, 2};
    cr_expect(match(&f, A1, a, 1));
    cr_expect(match(&f, A1, b, 1));
    cr_expect_not(match(&f, A1, c, 1));
    (void)T2;
    (void)T3;
    (void)T4;
}

Test(logfilter, address_and_topics_both_apply)
{
    const uint8_t one[1][20] = {{1}}, p0[1][32] = {{0x11}};
    const uint8_t log[1][32] = {{0x11}};
    policy_logfilter_t f;
    memset(&f, 0, sizeof(f));
    f.addr = one;
    f.naddr = 1;
    f.npos = 1;
    f.pos[0] = (policy_logfilter_pos_t){p0, 1};
    cr_expect(match(&f, A1, log, 1));
    cr_expect_not(match(&f, A2, log, 1));
    const uint8_t other[1][32] = {{0x12}};
    cr_expect_not(match(&f, A1, other, 1));
}

Test(logfilter, set_sort_orders_and_drops_duplicates)
{
    uint8_t a[5][20] = {{3}, {1}, {3}, {2}, {1}};
    cr_assert_eq(policy_logfilter_set_sort(a, 20, 5), 3);
    cr_expect(a[0][0] == 1 && a[1][0] == 2 && a[2][0] == 3);
    uint8_t t[3][32] = {{0, 9}, {0, 1}, {0, 9}};
    cr_assert_eq(policy_logfilter_set_sort(t, 32, 3), 2);
    cr_expect(t[0][1] == 1 && t[1][1] == 9);
    cr_expect_eq(policy_logfilter_set_sort(t, 32, 0), 0);
}

/* the cap's worth of addresses, sorted: each member found, non-members not
 * (those between, before and after every member) */
Test(logfilter, many_addresses_by_binary_search)
{
    static uint8_t set[POLICY_LOGFILTER_MAX_ADDRESSES][20];
    for (size_t i = 0; i < POLICY_LOGFILTER_MAX_ADDRESSES; i++) { /* members: even values, shuffled */
        size_t v = (i * 7919) % POLICY_LOGFILTER_MAX_ADDRESSES * 2 + 2;
        set[i][18] = (uint8_t)(v >> 8);
        set[i][19] = (uint8_t)v;
    }
    policy_logfilter_t f;
    memset(&f, 0, sizeof(f));
    f.addr = set;
    f.naddr = policy_logfilter_set_sort(set, 20, POLICY_LOGFILTER_MAX_ADDRESSES);
    cr_assert_eq(f.naddr, POLICY_LOGFILTER_MAX_ADDRESSES, "7919 is prime to 1000: no duplicates");
    for (size_t v = 0; v <= 2 * POLICY_LOGFILTER_MAX_ADDRESSES + 1; v++) {
        uint8_t a[20] = {0};
        a[18] = (uint8_t)(v >> 8);
        a[19] = (uint8_t)v;
        cr_expect_eq(match(&f, a, NULL, 0), v >= 2 && v % 2 == 0, "address ...%04zx", v);
    }
}

Test(logfilter, hex)
{
    uint8_t out[20];
    const char *ok = "0x00112233445566778899AABBccddeeff00112233";
    cr_assert(policy_logfilter_hex(ok, strlen(ok), out, 20));
    cr_expect_eq(out[0], 0x00);
    cr_expect_eq(out[10], 0xaa);
    cr_expect_eq(out[12], 0xcc);
    cr_expect_eq(out[19], 0x33);
    cr_expect_not(policy_logfilter_hex(ok, strlen(ok) - 1, out, 20));
    cr_expect_not(policy_logfilter_hex("1x00", 4, out, 1));
    cr_expect_not(policy_logfilter_hex("0x0g", 4, out, 1));
    cr_expect(policy_logfilter_hex("0X0f", 4, out, 1) && out[0] == 0x0f);
}
