/* policy/credit.h: the windows of a provider's credit budget and their bounds.
 *
 * A plan limits credits per second, minute, day and calendar month (UTC
 * months that start on the plan's reset day). Pure: the caller supplies the
 * time; pool/ keeps the ledgers and admin/ shows them with the same bounds. */
#ifndef POLICY_CREDIT_H
#define POLICY_CREDIT_H

#include <stdint.h>

typedef enum policy_credit_window {
    POLICY_CREDIT_SECOND,
    POLICY_CREDIT_MINUTE,
    POLICY_CREDIT_DAY,
    POLICY_CREDIT_MONTH,
    POLICY_CREDIT_WINDOW_COUNT
} policy_credit_window_t;

/* A plan's budget in its provider's units. */
typedef struct policy_credits {
    uint64_t limit[POLICY_CREDIT_WINDOW_COUNT]; /* 0 = no limit in that window */
    uint32_t month_reset_day;                   /* 1..28: day of month the monthly budget resets */
} policy_credits_t;

/* "second", "minute", "day", "month"; "unknown" out of range. */
const char *policy_credit_window_name(policy_credit_window_t w);

/* The budget of window w (0 = unlimited, also out of range). */
uint64_t policy_credit_budget(const policy_credits_t *c, policy_credit_window_t w);

/* The tightest steady rate the budgets allow, in credits per second x 1000:
 * the per-second budget, or the per-minute one / 60 if that is lower (0: no
 * such budget). Longer windows are not a rate a call can be paced to. */
uint64_t policy_credit_rate_milli(const policy_credits_t *c);

/* Start and end (wall ms, end exclusive) of the window w that holds now_ms.
 * Second, minute and day windows are aligned to the epoch; a month runs from
 * reset_day 00:00 UTC to the same day of the next month (a reset_day outside
 * 1..28 counts as 1). Out of range w: the whole time line. */
void policy_credit_window_bounds(policy_credit_window_t w, uint64_t now_ms, uint32_t reset_day,
                                 uint64_t *start, uint64_t *end);

/* Whether window w counts throughput units (what a provider's rate limit
 * counts: second and minute) rather than billed units (day and month). */
static inline int policy_credit_counts_throughput(policy_credit_window_t w)
{
    return w == POLICY_CREDIT_SECOND || w == POLICY_CREDIT_MINUTE;
}

/* The capacity forecast of a window (Little's law: the credits calls in
 * flight and arriving will take = arrival rate x cost per call, here as the
 * spend rate measured over the last few seconds, spend_milli = credits per
 * second x 1000). Given what is left of the budget, when does it run out?
 * *seconds gets the time to exhaustion (left / rate), *before_reset whether
 * that comes before the window ends at end_ms. Returns 0 (outputs untouched)
 * when nothing is being spent: no exhaustion in sight. */
int policy_credit_forecast(uint64_t left, uint64_t spend_milli, uint64_t now_ms, uint64_t end_ms, double *seconds,
                           int *before_reset);

#endif
