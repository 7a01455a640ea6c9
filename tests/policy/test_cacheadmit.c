/* tests/policy/test_cacheadmit.c: admission to the response cache (policy/cacheadmit.h). */
#include <criterion/criterion.h>
#include <string.h>

#include "policy/cacheadmit.h"

static const policy_cacheadmit_conf_t conf = {.max_entry = 1 << 20, .large = 64 << 10, .share_bytes = 4 << 20,
                                              .window_ms = 60000};

static const uint8_t *key(uint8_t k, uint8_t out[32])
{
    memset(out, k, 32);
    return out;
}

Test(cacheadmit, an_entry_over_the_cap_is_never_kept)
{
    policy_cacheadmit_t a;
    policy_cacheadmit_init(&a);
    uint8_t k[32];
    for (int i = 0; i < 3; i++)
        cr_expect_eq(policy_cacheadmit_judge(&a, &conf, key(1, k), (1 << 20) + 1, 7, 1000), POLICY_CACHEADMIT_TOO_LARGE);
    cr_expect_eq(policy_cacheadmit_judge(&a, &conf, key(1, k), 1 << 20, 7, 1000), POLICY_CACHEADMIT_FIRST_ASK);
    cr_expect_str_eq(policy_cacheadmit_name(POLICY_CACHEADMIT_TOO_LARGE), "too_large");
    cr_expect_str_eq(policy_cacheadmit_name(POLICY_CACHEADMIT_VERDICT_COUNT), "unknown");
}

Test(cacheadmit, a_large_entry_is_kept_on_its_second_ask)
{
    policy_cacheadmit_t a;
    policy_cacheadmit_init(&a);
    uint8_t k[32], other[32];
    cr_expect_eq(policy_cacheadmit_judge(&a, &conf, key(2, k), 100 << 10, 7, 1000), POLICY_CACHEADMIT_FIRST_ASK);
    cr_expect_eq(policy_cacheadmit_judge(&a, &conf, key(3, other), 100 << 10, 7, 1000), POLICY_CACHEADMIT_FIRST_ASK);
    cr_expect_eq(policy_cacheadmit_judge(&a, &conf, key(2, k), 100 << 10, 8, 1001), POLICY_CACHEADMIT_KEEP);
    /* small ones at once */
    cr_expect_eq(policy_cacheadmit_judge(&a, &conf, key(4, k), 64 << 10, 7, 1002), POLICY_CACHEADMIT_KEEP);
}

Test(cacheadmit, a_caller_inserts_its_share_per_window)
{
    policy_cacheadmit_t a;
    policy_cacheadmit_init(&a);
    uint8_t k[32];
    uint64_t kept = 0;
    for (int i = 0; i < 100; i++)
        kept += policy_cacheadmit_judge(&a, &conf, key((uint8_t)i, k), 60 << 10, 7, 1000 + (uint64_t)i) ==
                POLICY_CACHEADMIT_KEEP;
    cr_expect_eq(kept, (4 << 20) / (60 << 10), "%llu kept", (unsigned long long)kept);
    cr_expect_eq(policy_cacheadmit_judge(&a, &conf, key(200, k), 20 << 10, 7, 2000), POLICY_CACHEADMIT_OVER_SHARE);
    /* another caller is not held to the first one's */
    cr_expect_eq(policy_cacheadmit_judge(&a, &conf, key(201, k), 60 << 10, 9, 2000), POLICY_CACHEADMIT_KEEP);
    /* the window turns */
    cr_expect_eq(policy_cacheadmit_judge(&a, &conf, key(202, k), 60 << 10, 7, 1000 + 60000), POLICY_CACHEADMIT_KEEP);
}

Test(cacheadmit, many_callers_at_once_reuse_the_oldest_window)
{
    policy_cacheadmit_t a;
    policy_cacheadmit_init(&a);
    uint8_t k[32];
    for (uint64_t o = 1; o <= POLICY_CACHEADMIT_OWNERS + 10; o++)
        cr_expect_eq(policy_cacheadmit_judge(&a, &conf, key((uint8_t)o, k), 1000, o, o), POLICY_CACHEADMIT_KEEP);
    /* caller 1's window was the oldest: forgotten, a fresh one */
    cr_expect_eq(policy_cacheadmit_judge(&a, &conf, key(9, k), 4 << 20, 1, 5000), POLICY_CACHEADMIT_TOO_LARGE);
    policy_cacheadmit_conf_t no_cap = conf;
    no_cap.max_entry = 0;
    no_cap.large = 0;
    cr_expect_eq(policy_cacheadmit_judge(&a, &no_cap, key(9, k), 4 << 20, 1000, 5000), POLICY_CACHEADMIT_KEEP);
    cr_expect_eq(policy_cacheadmit_judge(&a, &no_cap, key(9, k), 1, 1000, 5001), POLICY_CACHEADMIT_OVER_SHARE);
}
