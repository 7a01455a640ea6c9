/* tests/policy/test_credit.c: credit windows, their names, budgets and bounds. */
#include <criterion/criterion.h>
#include <time.h>

#include "policy/credit.h"

/* wall ms of a UTC date and time */
static uint64_t utc(int y, int mon, int d, int h, int mi, int s)
{
    struct tm tm = {.tm_year = y - 1900, .tm_mon = mon - 1, .tm_mday = d, .tm_hour = h, .tm_min = mi, .tm_sec = s};
    return (uint64_t)timegm(&tm) * 1000;
}

Test(credit, names_cover_every_window)
{
    const char *want[] = {"second", "minute", "day", "month"};
    cr_assert_eq(sizeof(want) / sizeof(want[0]), POLICY_CREDIT_WINDOW_COUNT);
    for (policy_credit_window_t w = 0; w < POLICY_CREDIT_WINDOW_COUNT; w++)
        cr_expect_str_eq(policy_credit_window_name(w), want[w]);
    cr_expect_str_eq(policy_credit_window_name(POLICY_CREDIT_WINDOW_COUNT), "unknown");
    cr_expect_str_eq(policy_credit_window_name((policy_credit_window_t)-1), "unknown");
}

Test(credit, budget_is_the_limit_of_the_window)
{
    policy_credits_t c = {.limit = {330, 0, 7, 300000000}, .month_reset_day = 1};
    cr_expect_eq(policy_credit_budget(&c, POLICY_CREDIT_SECOND), 330);
    cr_expect_eq(policy_credit_budget(&c, POLICY_CREDIT_MINUTE), 0);
    cr_expect_eq(policy_credit_budget(&c, POLICY_CREDIT_DAY), 7);
    cr_expect_eq(policy_credit_budget(&c, POLICY_CREDIT_MONTH), 300000000);
    cr_expect_eq(policy_credit_budget(&c, POLICY_CREDIT_WINDOW_COUNT), 0);
}

Test(credit, throughput_windows_are_second_and_minute)
{
    cr_expect(policy_credit_counts_throughput(POLICY_CREDIT_SECOND));
    cr_expect(policy_credit_counts_throughput(POLICY_CREDIT_MINUTE));
    cr_expect(!policy_credit_counts_throughput(POLICY_CREDIT_DAY));
    cr_expect(!policy_credit_counts_throughput(POLICY_CREDIT_MONTH));
}

Test(credit, fixed_windows_align_to_the_epoch)
{
    uint64_t now = utc(2026, 12, 1, 15, 42, 7) + 321, s, e;
    policy_credit_window_bounds(POLICY_CREDIT_SECOND, now, 1, &s, &e);
    cr_expect_eq(s, now - 321);
    cr_expect_eq(e, now - 321 + 1000);
    policy_credit_window_bounds(POLICY_CREDIT_MINUTE, now, 1, &s, &e);
    cr_expect_eq(s, utc(2026, 12, 1, 15, 42, 0));
    cr_expect_eq(e, utc(2026, 12, 1, 15, 43, 0));
    policy_credit_window_bounds(POLICY_CREDIT_DAY, now, 1, &s, &e);
    cr_expect_eq(s, utc(2026, 12, 1, 0, 0, 0));
    cr_expect_eq(e, utc(2026, 12, 2, 0, 0, 0));
}

Test(credit, month_turns_over_at_reset_day_midnight)
{
    uint64_t s, e;
    /* one ms before the 15th: still the month that began on 15 November */
    policy_credit_window_bounds(POLICY_CREDIT_MONTH, utc(2026, 12, 15, 0, 0, 0) - 1, 15, &s, &e);
    cr_expect_eq(s, utc(2026, 11, 15, 0, 0, 0));
    cr_expect_eq(e, utc(2026, 12, 15, 0, 0, 0));
    /* at midnight of the 15th: the new month */
    policy_credit_window_bounds(POLICY_CREDIT_MONTH, utc(2026, 12, 15, 0, 0, 0), 15, &s, &e);
    cr_expect_eq(s, utc(2026, 12, 15, 0, 0, 0));
    cr_expect_eq(e, utc(2027, 1, 15, 0, 0, 0));
}

Test(credit, month_rolls_over_the_year)
{
    uint64_t s, e;
    /* 3 January with reset day 10: the window began on 10 December of the year before */
    policy_credit_window_bounds(POLICY_CREDIT_MONTH, utc(2027, 1, 3, 12, 0, 0), 10, &s, &e);
    cr_expect_eq(s, utc(2026, 12, 10, 0, 0, 0));
    cr_expect_eq(e, utc(2027, 1, 10, 0, 0, 0));
    /* 31 December 23:59:59.999 with reset day 1: December, ending at New Year */
    policy_credit_window_bounds(POLICY_CREDIT_MONTH, utc(2027, 1, 1, 0, 0, 0) - 1, 1, &s, &e);
    cr_expect_eq(s, utc(2026, 12, 1, 0, 0, 0));
    cr_expect_eq(e, utc(2027, 1, 1, 0, 0, 0));
}

Test(credit, month_across_february_and_a_leap_year)
{
    uint64_t s, e;
    policy_credit_window_bounds(POLICY_CREDIT_MONTH, utc(2028, 2, 29, 8, 0, 0), 28, &s, &e);
    cr_expect_eq(s, utc(2028, 2, 28, 0, 0, 0));
    cr_expect_eq(e, utc(2028, 3, 28, 0, 0, 0));
    policy_credit_window_bounds(POLICY_CREDIT_MONTH, utc(2027, 3, 1, 0, 0, 0), 28, &s, &e);
    cr_expect_eq(s, utc(2027, 2, 28, 0, 0, 0));
    cr_expect_eq(e, utc(2027, 3, 28, 0, 0, 0));
}

Test(credit, reset_day_out_of_range_counts_as_the_first)
{
    uint64_t s, e, s1, e1;
    uint64_t now = utc(2026, 12, 20, 0, 0, 0);
    policy_credit_window_bounds(POLICY_CREDIT_MONTH, now, 1, &s1, &e1);
    for (uint32_t day = 0; day < 40; day += 29) { /* 0 and 29 */
        policy_credit_window_bounds(POLICY_CREDIT_MONTH, now, day, &s, &e);
        cr_expect_eq(s, s1, "reset day %u", day);
        cr_expect_eq(e, e1, "reset day %u", day);
    }
}

Test(credit, every_month_window_holds_now)
{
    /* a year of days at odd hours, every reset day: start <= now < end, and
     * the window is 28..31 days long */
    for (uint32_t day = 1; day <= 28; day++)
        for (uint64_t now = utc(2026, 1, 1, 5, 0, 0); now < utc(2027, 1, 1, 0, 0, 0); now += 86400000 + 3600000) {
            uint64_t s, e;
            policy_credit_window_bounds(POLICY_CREDIT_MONTH, now, day, &s, &e);
            cr_assert(s <= now && now < e, "reset day %u", day);
            cr_assert(e - s >= 28ull * 86400000 && e - s <= 31ull * 86400000, "reset day %u", day);
        }
}

Test(credit, the_steady_rate_is_the_tighter_of_second_and_minute)
{
    policy_credits_t c = {0};
    cr_expect_eq(policy_credit_rate_milli(&c), 0, "no budget: no rate");
    c.limit[POLICY_CREDIT_DAY] = 1000;
    cr_expect_eq(policy_credit_rate_milli(&c), 0, "a day budget is not a rate");
    c.limit[POLICY_CREDIT_SECOND] = 20;
    cr_expect_eq(policy_credit_rate_milli(&c), 20000);
    c.limit[POLICY_CREDIT_MINUTE] = 600; /* 10/s: tighter */
    cr_expect_eq(policy_credit_rate_milli(&c), 10000);
    c.limit[POLICY_CREDIT_MINUTE] = 6000; /* 100/s: looser */
    cr_expect_eq(policy_credit_rate_milli(&c), 20000);
    c.limit[POLICY_CREDIT_SECOND] = 0;
    cr_expect_eq(policy_credit_rate_milli(&c), 100000, "the minute alone");
}
