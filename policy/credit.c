#include "policy/credit.h"

#include <time.h>

static const char *const window_names[POLICY_CREDIT_WINDOW_COUNT] = {
    [POLICY_CREDIT_SECOND] = "second",
    [POLICY_CREDIT_MINUTE] = "minute",
    [POLICY_CREDIT_DAY] = "day",
    [POLICY_CREDIT_MONTH] = "month",
};

/* length of the fixed windows, ms */
static const uint64_t window_len[POLICY_CREDIT_WINDOW_COUNT] = {
    [POLICY_CREDIT_SECOND] = 1000,
    [POLICY_CREDIT_MINUTE] = 60000,
    [POLICY_CREDIT_DAY] = 86400000,
};

const char *policy_credit_window_name(policy_credit_window_t w)
{
    return (unsigned)w < POLICY_CREDIT_WINDOW_COUNT ? window_names[w] : "unknown";
}

uint64_t policy_credit_budget(const policy_credits_t *c, policy_credit_window_t w)
{
    return (unsigned)w < POLICY_CREDIT_WINDOW_COUNT ? c->limit[w] : 0;
}

uint64_t policy_credit_rate_milli(const policy_credits_t *c)
{
    uint64_t best = 0;
    if (c->limit[POLICY_CREDIT_SECOND])
        best = c->limit[POLICY_CREDIT_SECOND] * 1000;
    if (c->limit[POLICY_CREDIT_MINUTE] && (best == 0 || c->limit[POLICY_CREDIT_MINUTE] * 1000 / 60 < best))
        best = c->limit[POLICY_CREDIT_MINUTE] * 1000 / 60;
    return best;
}

void policy_credit_window_bounds(policy_credit_window_t w, uint64_t now_ms, uint32_t reset_day,
                                 uint64_t *start, uint64_t *end)
{
    if ((unsigned)w >= POLICY_CREDIT_WINDOW_COUNT) {
        *start = 0;
        *end = UINT64_MAX;
        return;
    }
    if (w != POLICY_CREDIT_MONTH) {
        *start = now_ms - now_ms % window_len[w];
        *end = *start + window_len[w];
        return;
    }
    time_t t = (time_t)(now_ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    int day = reset_day >= 1 && reset_day <= 28 ? (int)reset_day : 1;
    /* timegm normalises tm_mon -1 and 12 into the neighbouring years */
    struct tm s = {.tm_year = tm.tm_year, .tm_mon = tm.tm_mon, .tm_mday = day};
    if (tm.tm_mday < day)
        s.tm_mon -= 1;
    struct tm e = s;
    e.tm_mon += 1;
    *start = (uint64_t)timegm(&s) * 1000;
    *end = (uint64_t)timegm(&e) * 1000;
}

int policy_credit_forecast(uint64_t left, uint64_t spend_milli, uint64_t now_ms, uint64_t end_ms, double *seconds,
                           int *before_reset)
{
    if (spend_milli == 0)
        return 0;
    double s = (double)left * 1000.0 / (double)spend_milli;
    *seconds = s;
    *before_reset = end_ms > now_ms && s * 1000.0 < (double)(end_ms - now_ms);
    return 1;
}
