/* tests/base/test_fake_clock.c: the unit tests' injected clocks
 * (tests/lib/fake_clock.h) are the ones base/sl_time.h reads: the tests of
 * limits, credits, breakers and h2o's timers rely on it. */
#include <criterion/criterion.h>

#include "base/sl_time.h"
#include "tests/lib/fake_clock.h"

Test(fake_clock, sl_time_reads_the_injected_clocks)
{
    fake_clock_start(1700000000, 5000);
    cr_expect_eq(sl_wall_ms(), 1700000000000ull);
    cr_expect_eq(sl_now_ms(), 5000000ull);
    cr_expect_eq(sl_now_us(), 5000000000ull);
    fake_clock_pass_ms(1500);
    cr_expect_eq(sl_wall_ms(), 1700000001500ull, "time passes on the wall clock");
    cr_expect_eq(sl_now_ms(), 5001500ull, "and on the monotonic one");
    fake_clock_step_wall_s(-3600);
    cr_expect_eq(sl_wall_ms(), 1699996401500ull, "the wall clock steps back");
    cr_expect_eq(sl_now_ms(), 5001500ull, "monotonic time does not");
    fake_clock_step_wall_s(86400);
    cr_expect_eq(sl_wall_ms(), 1700082801500ull);
    fake_clock_stop();
    /* the kernel's wall clock again: after this test was written */
    cr_expect_gt(sl_wall_ms(), 1735689600000ull, "stop gives the real clock back");
}
