/* sl_log_limit: a line a flood repeats is written at most once per interval,
 * and the next one says how many were held back. Time is passed in. */
#include <criterion/criterion.h>

#include "base/sl_log.h"

Test(log_limit, first_line_passes_then_one_per_interval)
{
    sl_log_limit_t l = {0};
    uint64_t held = 99;
    cr_assert(sl_log_limit_pass(&l, 0, 10000, &held), "the first line at time 0 is written");
    cr_assert_eq(held, 0);
    for (uint64_t t = 1; t < 10000; t += 1000)
        cr_assert_not(sl_log_limit_pass(&l, t, 10000, &held));
    cr_assert(sl_log_limit_pass(&l, 10000, 10000, &held));
    cr_assert_eq(held, 10, "the 10 lines held back are counted");
    cr_assert_not(sl_log_limit_pass(&l, 19999, 10000, &held));
    cr_assert(sl_log_limit_pass(&l, 50000, 10000, &held));
    cr_assert_eq(held, 1);
    cr_assert(sl_log_limit_pass(&l, 60000, 10000, &held));
    cr_assert_eq(held, 0, "the count starts again after each line");
}

Test(log_limit, a_flood_writes_a_bounded_number_of_lines)
{
    sl_log_limit_t l = {0};
    uint64_t held, written = 0, total_held = 0;
    for (uint64_t t = 5; t < 60000; t++) /* one event per ms for a minute */
        if (sl_log_limit_pass(&l, t, 10000, &held)) {
            written++;
            total_held += held;
        }
    cr_assert_eq(written, 6);
    cr_assert_eq(written + total_held + l.held, 60000 - 5, "every event is written or counted");
}

Test(log_limit, held_text)
{
    char buf[SL_LOG_HELD_MAX];
    cr_assert_str_eq(sl_log_held_text(0, buf), "");
    cr_assert_str_eq(sl_log_held_text(37, buf), " (37 more like it since the last one)");
}
