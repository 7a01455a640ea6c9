/* tests/state/test_cache.c: state/state_cache.h on a real LMDB environment:
 * keep and get, the least recently used bytes go first (hits counted only
 * once flushed), a cache filled far past its map stays under it, purge by
 * network, entries kept across a reopen, an entry too large refused. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "state/state_cache.h"
#include "tests/lib/temp_dir.h"

static char dir[256];
static char path[512];
static state_cache_t *c;

static state_cache_t *open_cache(size_t max_mb)
{
    state_cache_t *h = NULL;
    cr_assert_eq(state_cache_open(&(state_cache_conf_t){.path = path, .max_mb = max_mb}, &h), SL_OK);
    return h;
}

static void setup(void)
{
    temp_dir_make(dir, sizeof(dir), "cache");
    snprintf(path, sizeof(path), "%s/cache", dir);
    c = open_cache(2);
}

static void teardown(void)
{
    state_cache_close(c);
    temp_dir_remove(dir);
}

TestSuite(state_cache, .init = setup, .fini = teardown);

static void key_of(uint32_t n, uint8_t key[STATE_CACHE_KEY_LEN])
{
    memset(key, 0, STATE_CACHE_KEY_LEN);
    memcpy(key, &n, sizeof(n));
    key[31] = 0x5a;
}

static void put_n(uint32_t n, const char *network, size_t len)
{
    uint8_t key[STATE_CACHE_KEY_LEN];
    char bytes[8192];
    cr_assert(len <= sizeof(bytes));
    memset(bytes, 'a' + (int)(n % 26), len);
    key_of(n, key);
    cr_assert_eq(state_cache_put(c, key, network, bytes, len, 1000 + n), SL_OK, "put %u", n);
}

static int has(uint32_t n)
{
    uint8_t key[STATE_CACHE_KEY_LEN];
    sl_buf_t b;
    sl_buf_init(&b);
    key_of(n, key);
    int found = state_cache_get(c, key, &b) == SL_OK;
    sl_buf_dispose(&b);
    return found;
}

Test(state_cache, keeps_and_gives_back_the_bytes)
{
    uint8_t key[STATE_CACHE_KEY_LEN];
    key_of(7, key);
    const char *answer = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"0x1\"}";
    cr_assert_eq(state_cache_put(c, key, "eth", answer, strlen(answer), 5), SL_OK);
    sl_buf_t b;
    sl_buf_init(&b);
    cr_assert_eq(state_cache_get(c, key, &b), SL_OK);
    cr_expect_eq(b.len, strlen(answer));
    cr_expect_eq(memcmp(b.base, answer, b.len), 0);
    key_of(8, key);
    cr_expect_eq(state_cache_get(c, key, &b), SL_ERR_NOT_FOUND);
    sl_buf_dispose(&b);
    cr_expect_eq(state_cache_stats(c)->hits, 1);
    cr_expect_eq(state_cache_stats(c)->misses, 1);
    cr_expect_eq(state_cache_stats(c)->puts, 1);
}

Test(state_cache, a_full_map_stays_under_its_size_and_loses_the_oldest_first)
{
    /* 2 MB map, 4 KB entries: 2,000 of them are four times what fits */
    put_n(0, "eth", 4000);
    put_n(1, "eth", 4000);
    for (uint32_t n = 2; n < 2000; n++) {
        put_n(n, "eth", 4000);
        if (n % 50 == 0) { /* entry 0 is used all along: it stays young */
            cr_assert(has(0), "entry 0 was evicted at %u though it is hit", n);
            cr_assert_eq(state_cache_flush(c), SL_OK);
        }
    }
    state_cache_usage_t u;
    state_cache_usage(c, &u);
    cr_expect_leq(u.bytes, u.size / 100 * STATE_CACHE_ENTRIES_PCT, "entries hold %llu of %zu", (unsigned long long)u.bytes, u.size);
    cr_expect_leq(u.used, u.size, "pages %zu of %zu", u.used, u.size);
    cr_expect_gt(u.entries, 100);
    cr_expect_lt(u.entries, 2000);
    cr_expect_gt(state_cache_stats(c)->evictions, 0);
    cr_expect_eq(u.evictions, state_cache_stats(c)->evictions, "the shared count is this process's here");
    cr_expect_eq(u.entries + u.evictions, 2000);
    cr_expect_eq(u.bytes, u.entries * (4000 + 16 + 3), "the entries' bytes are counted exactly");
    cr_expect(has(0), "the hit entry survived");
    cr_expect(!has(1), "the untouched old entry went");
    cr_expect(has(1999), "the youngest is there");
    cr_expect_eq(state_cache_stats(c)->put_failures, 0, "no put met a full map");
}

Test(state_cache, small_entries_in_a_small_map_are_evicted_too)
{
    state_cache_close(c);
    c = open_cache(1);
    for (uint32_t n = 0; n < 4000; n++)
        put_n(n, "eth", 700);
    state_cache_usage_t u;
    state_cache_usage(c, &u);
    cr_expect_gt(u.evictions, 0);
    cr_expect_eq(state_cache_stats(c)->put_failures, 0);
    cr_expect(has(3999));
}

Test(state_cache, purge_by_network_and_all)
{
    for (uint32_t n = 0; n < 10; n++)
        put_n(n, n % 2 ? "sol" : "eth", 100);
    size_t removed;
    cr_assert_eq(state_cache_purge(c, "sol", &removed), SL_OK);
    cr_expect_eq(removed, 5);
    cr_expect(has(0) && !has(1) && has(8) && !has(9));
    cr_assert_eq(state_cache_purge(c, NULL, &removed), SL_OK);
    cr_expect_eq(removed, 5);
    state_cache_usage_t u;
    state_cache_usage(c, &u);
    cr_expect_eq(u.entries, 0);
    put_n(3, "eth", 100); /* the sequences go on after a purge */
    cr_expect(has(3));
}

Test(state_cache, entries_outlive_the_process_handle)
{
    put_n(42, "eth", 300);
    cr_assert_eq(state_cache_flush(c), SL_OK);
    state_cache_close(c);
    c = open_cache(2);
    cr_expect(has(42));
}

Test(state_cache, an_entry_over_a_quarter_of_the_map_is_refused)
{
    uint8_t key[STATE_CACHE_KEY_LEN];
    key_of(1, key);
    size_t len = 2 * 1024 * 1024 / 4 + 1;
    char *big = calloc(1, len);
    cr_expect_eq(state_cache_put(c, key, "eth", big, len, 1), SL_ERR_TOO_LARGE);
    free(big);
    cr_expect(!has(1));
}

Test(state_cache, a_long_network_name_is_kept_shortened)
{
    char name[200];
    memset(name, 'n', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    put_n(5, name, 10);
    cr_expect(has(5));
    size_t removed;
    cr_assert_eq(state_cache_purge(c, name, &removed), SL_OK);
    cr_expect_eq(removed, 1);
}
