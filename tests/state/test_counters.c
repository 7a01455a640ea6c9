/* tests/state/test_counters.c: state/state_counters.h, a worker's counters
 * slot: its one writer marks it dirty, loading starts a wrong-length record
 * again at zero. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "state/state_counters.h"
#include "tests/lib/temp_state.h"

TEMP_STATE_SUITE(counters_slot);

Test(counters_slot, nothing_to_load_is_zero_and_clean)
{
    state_counters_slot_t s = {.key = "req/eth/1"};
    state_counters_slot_load(&s, NULL, 4);
    cr_assert_not_null(s.rec);
    cr_expect_eq(s.rec->n, 4);
    for (size_t i = 0; i < 4; i++)
        cr_expect_eq(s.rec->v[i], 0);
    cr_expect_eq(s.dirty, 0);
    state_counters_slot_dispose(&s);
    cr_expect_null(s.rec);
}

Test(counters_slot, add_and_set_mark_it_dirty)
{
    state_counters_slot_t s = {.key = "srv/1"};
    state_counters_slot_load(&s, NULL, 3);
    state_counters_slot_set(&s, 1, 0);
    cr_expect_eq(s.dirty, 0, "setting a gauge to what it is changes nothing");
    state_counters_slot_add(&s, 0, 5);
    cr_expect_eq(s.rec->v[0], 5);
    cr_expect_eq(s.dirty, 1);
    s.dirty = 0; /* flushed */
    state_counters_slot_set(&s, 1, 7);
    cr_expect_eq(s.rec->v[1], 7);
    cr_expect_eq(s.dirty, 1);
    s.dirty = 0;
    state_counters_slot_add(&s, 2, 0);
    cr_expect_eq(s.dirty, 1, "an add marks it even when it adds nothing (as the writers did)");
    s.dirty = 0;
    state_counters_slot_touch(&s);
    cr_expect_eq(s.dirty, 1);
    state_counters_slot_dispose(&s);
}

Test(counters_slot, loads_its_record_or_starts_again)
{
    state_counters_rec_t *rec = calloc(1, sizeof(*rec));
    rec->n = 3;
    rec->v[0] = 1;
    rec->v[1] = 2;
    rec->v[2] = 3;
    const char *keys[] = {"req/eth/1"};
    const state_counters_rec_t *recs[] = {rec};
    cr_assert_eq(state_counters_put(st, keys, recs, 1), SL_OK);
    free(rec);

    cr_assert_eq(state_read_begin(st), SL_OK);
    state_counters_slot_t s = {.key = "req/eth/1"}, odd = {.key = "req/eth/1"}, none = {.key = "req/eth/2"};
    state_counters_slot_load(&s, st, 3);
    state_counters_slot_load(&odd, st, 4); /* written by other method tables */
    state_counters_slot_load(&none, st, 2);
    state_read_end(st);
    cr_expect_eq(s.rec->n, 3);
    cr_expect_eq(s.rec->v[2], 3);
    cr_expect_eq(odd.rec->n, 4);
    cr_expect_eq(odd.rec->v[0] + odd.rec->v[1] + odd.rec->v[2] + odd.rec->v[3], 0);
    cr_expect_eq(none.rec->n, 2);
    cr_expect_eq(none.rec->v[0] + none.rec->v[1], 0);
    cr_expect_eq(s.dirty + odd.dirty + none.dirty, 0);
    state_counters_slot_dispose(&s);
    state_counters_slot_dispose(&odd);
    state_counters_slot_dispose(&none);
}
