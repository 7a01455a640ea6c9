/* tests/state/test_key.c: the LMDB keys (their formats are on disk: a change
 * orphans every record of a running installation) and the slot sums. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sl_buf.h"
#include "state/state_key.h"
#include "state/state_sum.h"
#include "tests/lib/temp_state.h"

Test(key, formats_are_the_ones_on_disk)
{
    char k[STATE_KEY_MAX];
    cr_expect_eq(state_key_endpoint(k, sizeof(k), "eth", "alchemy"), 11);
    cr_expect_str_eq(k, "eth/alchemy");
    state_key_stats(k, sizeof(k), "eth", "alchemy", 2);
    cr_expect_str_eq(k, "eth/alchemy/2");
    state_key_per_method(k, sizeof(k), "eth", "alchemy", 12);
    cr_expect_str_eq(k, "pm/eth/alchemy/12");
    state_key_requests(k, sizeof(k), "solana", 1);
    cr_expect_str_eq(k, "req/solana/1");
    state_key_ledger(k, sizeof(k), "eth", "infura", "month");
    cr_expect_str_eq(k, "eth/infura/month");
    state_key_cell(k, sizeof(k), "ip:10.0.0.1", "read", "second");
    cr_expect_str_eq(k, "ip:10.0.0.1/read/second");
    state_key_pin(k, sizeof(k), "eth", "0xabc");
    cr_expect_str_eq(k, "eth/0xabc");
    state_key_level(k, sizeof(k), "base");
    cr_expect_str_eq(k, "level/base");
}

Test(key, a_key_that_does_not_fit_says_so)
{
    char k[8];
    size_t n = state_key_endpoint(k, sizeof(k), "ethereum", "alchemy");
    cr_expect_eq(n, strlen("ethereum/alchemy"), "the length it needed");
    cr_expect_geq(n, sizeof(k));
    cr_expect_eq(strlen(k), sizeof(k) - 1, "cut and terminated");
}

/* ---- sums over worker slots, on a real LMDB environment ---- */

TEMP_STATE_SUITE(sum);

static void put_stats(unsigned slot, const state_stats_rec_t *rec)
{
    char key[STATE_KEY_MAX];
    state_key_stats(key, sizeof(key), "eth", "a", slot);
    const char *kp = key;
    cr_assert_eq(state_stats_put(st, &kp, rec, 1), SL_OK);
}

Test(sum, stats_slots_add_up_and_the_freshest_ranks)
{
    state_stats_rec_t s1 = {.updated_ms = 1000, .attempts = 10, .failovers = 1, .ewma_us = 100, .inflight = 3,
                            .max_inflight_seen = 4, .rank = 2, .credits_spent = 5};
    s1.outcomes[0] = 9;
    s1.lat_hist[1] = 10;
    state_stats_rec_t s3 = {.updated_ms = 1900, .attempts = 30, .failovers = 2, .ewma_us = 200, .inflight = 5,
                            .max_inflight_seen = 6, .rank = 1, .credits_spent = 7};
    s3.outcomes[0] = 30;
    s3.lat_hist[1] = 30;
    put_stats(1, &s1);
    put_stats(3, &s3); /* slot 2 absent: counts as zero */
    cr_assert_eq(state_read_begin(st), SL_OK);
    state_stats_sum_t sum;
    state_stats_sum(st, "eth", "a", 3, 2000, 500, &sum);
    state_read_end(st);
    cr_expect_eq(sum.slots, 2);
    cr_expect_eq(sum.total.attempts, 40);
    cr_expect_eq(sum.total.outcomes[0], 39);
    cr_expect_eq(sum.total.lat_hist[1], 40);
    cr_expect_eq(sum.total.failovers, 3);
    cr_expect_eq(sum.total.credits_spent, 12);
    cr_expect_eq(sum.total.max_inflight_seen, 10, "peaks summed");
    cr_expect_eq(sum.inflight, 5, "only slot 3 flushed within 500 ms of now");
    cr_expect(sum.has_freshest);
    cr_expect_eq(sum.freshest.rank, 1, "the ranking of the slot flushed last");
    cr_expect_float_eq(sum.ewma_us, (100.0 * 10 + 200.0 * 30) / 40, 1e-9, "weighted by attempts");
}

Test(sum, no_slots_is_all_zero)
{
    cr_assert_eq(state_read_begin(st), SL_OK);
    state_stats_sum_t sum;
    state_stats_sum(st, "eth", "nobody", 4, 1, 1, &sum);
    state_read_end(st);
    cr_expect_eq(sum.slots, 0);
    cr_expect_eq(sum.total.attempts, 0);
    cr_expect(!sum.has_freshest);
    cr_expect_eq(sum.ewma_us, 0);
}

Test(sum, counters_of_the_right_length_add_up)
{
    state_counters_rec_t *a = sl_xcalloc(1, sizeof(*a)), *b = sl_xcalloc(1, sizeof(*b)),
                         *odd = sl_xcalloc(1, sizeof(*odd)), *sum = sl_xcalloc(1, sizeof(*sum));
    a->n = b->n = 6;
    odd->n = 5; /* written by another version of the method tables */
    for (uint32_t k = 0; k < 6; k++) {
        a->v[k] = k;
        b->v[k] = 10 * k;
        odd->v[k] = 1000;
    }
    char k1[STATE_KEY_MAX], k2[STATE_KEY_MAX], k3[STATE_KEY_MAX];
    state_key_per_method(k1, sizeof(k1), "eth", "a", 1);
    state_key_per_method(k2, sizeof(k2), "eth", "a", 2);
    state_key_per_method(k3, sizeof(k3), "eth", "a", 3);
    const char *keys[] = {k1, k2, k3};
    const state_counters_rec_t *recs[] = {a, b, odd};
    cr_assert_eq(state_counters_put(st, keys, recs, 3), SL_OK);
    cr_assert_eq(state_read_begin(st), SL_OK);
    state_counters_sum(st, STATE_COUNTERS_PER_METHOD, "eth", "a", 3, 6, sum);
    cr_expect_eq(sum->n, 6);
    for (uint32_t k = 0; k < 6; k++)
        cr_expect_eq(sum->v[k], 11 * k, "counter %u", k);
    state_counters_sum(st, STATE_COUNTERS_REQUESTS, "eth", NULL, 3, 6, sum);
    for (uint32_t k = 0; k < 6; k++)
        cr_expect_eq(sum->v[k], 0, "request counters are other keys");
    state_read_end(st);
    free(a), free(b), free(odd), free(sum);
}
