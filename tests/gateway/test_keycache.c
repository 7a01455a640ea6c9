/* tests/gateway/test_keycache.c: presented key bytes -> the key they
 * resolved to, tied to the run-time keys' generation (gw_keycache.h). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "gateway/gw_keycache.h"

static const char KEY[] = "sl_benchkey0123456789abcdefgh";

Test(keycache, a_key_kept_is_found_at_its_generation_only)
{
    gw_keycache_t *c = gw_keycache_create();
    cfg_key_conf_t k = {.name = "k"};
    cr_expect_null(gw_keycache_get(c, KEY, strlen(KEY), 1), "never seen");
    gw_keycache_put(c, KEY, strlen(KEY), 1, &k);
    cr_expect_eq(gw_keycache_get(c, KEY, strlen(KEY), 1), &k);
    cr_expect_null(gw_keycache_get(c, KEY, strlen(KEY), 2), "another generation: resolved again");
    cr_expect_null(gw_keycache_get(c, KEY, strlen(KEY) - 1, 1), "a prefix is another key");
    char other[sizeof(KEY)];
    memcpy(other, KEY, sizeof(KEY));
    other[10] ^= 1;
    cr_expect_null(gw_keycache_get(c, other, strlen(other), 1), "one byte differs");
    gw_keycache_destroy(c);
}

Test(keycache, bounded_a_later_key_takes_the_slot)
{
    gw_keycache_t *c = gw_keycache_create();
    cfg_key_conf_t k[2 * GW_KEYCACHE_SLOTS];
    char keys[2 * GW_KEYCACHE_SLOTS][32];
    for (int i = 0; i < 2 * GW_KEYCACHE_SLOTS; i++) {
        snprintf(keys[i], sizeof(keys[i]), "sl_key%06d", i);
        gw_keycache_put(c, keys[i], strlen(keys[i]), 7, &k[i]);
    }
    int found = 0;
    for (int i = 0; i < 2 * GW_KEYCACHE_SLOTS; i++) {
        const cfg_key_conf_t *got = gw_keycache_get(c, keys[i], strlen(keys[i]), 7);
        cr_expect(got == NULL || got == &k[i], "a key found is its own");
        found += got != NULL;
    }
    cr_expect_leq(found, GW_KEYCACHE_SLOTS);
    cr_expect_gt(found, 0);
    gw_keycache_destroy(c);
}

Test(keycache, too_long_or_empty_is_not_kept)
{
    gw_keycache_t *c = gw_keycache_create();
    cfg_key_conf_t k;
    char long_key[GW_KEYCACHE_KEY_MAX + 2];
    memset(long_key, 'a', sizeof(long_key) - 1);
    long_key[sizeof(long_key) - 1] = '\0';
    gw_keycache_put(c, long_key, strlen(long_key), 1, &k);
    cr_expect_null(gw_keycache_get(c, long_key, strlen(long_key), 1));
    gw_keycache_put(c, "", 0, 1, &k);
    cr_expect_null(gw_keycache_get(c, "", 0, 1));
    cr_expect_null(gw_keycache_get(NULL, KEY, strlen(KEY), 1));
    gw_keycache_destroy(c);
}
