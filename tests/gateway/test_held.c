/* tests/gateway/test_held.c: the per-caller table of held answer bytes. */
#include <criterion/criterion.h>
#include <stddef.h>
#include <string.h>

#include "gateway/gw_held.h"

typedef struct fake_req {
    size_t bytes;
    gw_held_entry_t e;
} fake_req_t;

static size_t bytes_of(const gw_held_entry_t *e)
{
    return ((const fake_req_t *)((const char *)e - offsetof(fake_req_t, e)))->bytes;
}

Test(held, sums_a_callers_entries_and_frees_its_slot_with_the_last)
{
    gw_held_t *t = gw_held_create(8, bytes_of);
    fake_req_t a1 = {.bytes = 100}, a2 = {.bytes = 50}, b1 = {.bytes = 7};
    gw_held_add(t, &a1.e, "ip:127.0.0.2");
    gw_held_add(t, &a2.e, "ip:127.0.0.2");
    gw_held_add(t, &b1.e, "key:alice");
    cr_assert_eq(gw_held_of(t, "ip:127.0.0.2"), 150);
    cr_assert_eq(gw_held_of(t, "key:alice"), 7);
    cr_assert_eq(gw_held_of(t, "ip:127.0.0.3"), 0);
    cr_assert_eq(gw_held_callers(t), 2);
    a1.bytes = 1000; /* read as it grows, not charged once */
    cr_assert_eq(gw_held_of(t, "ip:127.0.0.2"), 1050);
    cr_assert_eq(gw_held_others(t, &a1.e, bytes_of), 50);
    cr_assert_eq(gw_held_others(t, &b1.e, bytes_of), 0);
    gw_held_remove(t, &a1.e);
    gw_held_remove(t, &a1.e); /* twice: a no-op */
    cr_assert_eq(gw_held_callers(t), 2);
    gw_held_remove(t, &a2.e);
    cr_assert_eq(gw_held_callers(t), 1);
    cr_assert_eq(gw_held_of(t, "ip:127.0.0.2"), 0);
    gw_held_remove(t, &b1.e);
    cr_assert_eq(gw_held_callers(t), 0);
    gw_held_destroy(t);
}

Test(held, a_full_table_counts_newcomers_together_and_one_caller_cannot_fill_it)
{
    gw_held_t *t = gw_held_create(2, bytes_of);
    fake_req_t many[50], x = {.bytes = 10}, y = {.bytes = 20}, z = {.bytes = 30};
    for (int i = 0; i < 50; i++) {
        many[i] = (fake_req_t){.bytes = 1};
        gw_held_add(t, &many[i].e, "ip:10.0.0.1");
    }
    cr_assert_eq(gw_held_callers(t), 1, "one caller, one slot");
    gw_held_add(t, &x.e, "ip:10.0.0.2");
    cr_assert_eq(gw_held_callers(t), 2);
    cr_assert_eq(gw_held_aggregated(t), 0);
    gw_held_add(t, &y.e, "ip:10.0.0.3"); /* the table is full: the aggregate */
    gw_held_add(t, &z.e, "ip:10.0.0.4");
    cr_assert_eq(gw_held_aggregated(t), 2);
    /* a caller without a slot is judged by the aggregate it would join */
    cr_assert_eq(gw_held_of(t, "ip:10.0.0.3"), 50);
    cr_assert_eq(gw_held_of(t, "ip:10.0.0.9"), 50);
    cr_assert_eq(gw_held_of(t, "ip:10.0.0.1"), 50);
    cr_assert_eq(gw_held_of(t, "ip:10.0.0.2"), 10);
    /* a slot freed: a new caller gets it, the aggregate stays as it is */
    gw_held_remove(t, &x.e);
    cr_assert_eq(gw_held_of(t, "ip:10.0.0.9"), 0);
    fake_req_t w = {.bytes = 5};
    gw_held_add(t, &w.e, "ip:10.0.0.9");
    cr_assert_eq(gw_held_of(t, "ip:10.0.0.9"), 5);
    gw_held_remove(t, &y.e);
    gw_held_remove(t, &z.e);
    cr_assert_eq(gw_held_aggregated(t), 0);
    gw_held_remove(t, &w.e);
    for (int i = 0; i < 50; i++)
        gw_held_remove(t, &many[i].e);
    cr_assert_eq(gw_held_callers(t), 0);
    gw_held_destroy(t);
}

static void count(gw_held_entry_t *e, void *arg)
{
    *(size_t *)arg += bytes_of(e);
}

Test(held, each_visits_every_entry_the_aggregate_included)
{
    gw_held_t *t = gw_held_create(1, bytes_of);
    fake_req_t a = {.bytes = 1}, b = {.bytes = 2}, c = {.bytes = 4};
    gw_held_add(t, &a.e, "ip:a");
    gw_held_add(t, &b.e, "ip:b");
    gw_held_add(t, &c.e, "ip:c");
    size_t sum = 0;
    gw_held_each(t, count, &sum);
    cr_assert_eq(sum, 7);
    gw_held_remove(t, &a.e);
    gw_held_remove(t, &b.e);
    gw_held_remove(t, &c.e);
    gw_held_destroy(t);
}

Test(held, a_long_identity_is_cut_and_still_found)
{
    gw_held_t *t = gw_held_create(4, bytes_of);
    char id[200];
    memset(id, 'k', sizeof(id) - 1);
    id[sizeof(id) - 1] = '\0';
    fake_req_t a = {.bytes = 3}, b = {.bytes = 4};
    gw_held_add(t, &a.e, id);
    gw_held_add(t, &b.e, id);
    cr_assert_eq(gw_held_callers(t), 1);
    cr_assert_eq(gw_held_of(t, id), 7);
    gw_held_remove(t, &a.e);
    gw_held_remove(t, &b.e);
    gw_held_destroy(t);
}
