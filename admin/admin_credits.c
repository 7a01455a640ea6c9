/* admin/admin_credits.c: credit budgets as the operator sees them.
 *
 * Spent and remaining come from the shared ledgers (what the workers leased,
 * used or not); the forecast divides what is left by the live spend rate
 * (every worker's calls and credits over the last ~10 s). */
#include <stdio.h>

#include "admin/admin_int.h"
#include "base/sl_time.h"
#include "policy/method.h"

/* What the ledger says window w of v's endpoint spent, 0 if its record is of
 * an earlier window; *start and *end get the window that holds now (or the
 * record's, when it is ahead: windows never move back, pool_credit.c). */
static uint64_t window_spent(const admin_ep_view_t *v, policy_credit_window_t w, uint64_t now, uint64_t *start,
                             uint64_t *end)
{
    policy_credit_window_bounds(w, now, v->ep->credits.month_reset_day, start, end);
    if (v->ledger[w].window_start_ms > *start)
        policy_credit_window_bounds(w, v->ledger[w].window_start_ms, v->ep->credits.month_reset_day, start, end);
    return v->ledger[w].window_start_ms == *start ? v->ledger[w].spent : 0;
}

/* The spend rate window w is counted in (credits per second x 1000). */
static uint64_t spend_milli(const admin_ep_view_t *v, policy_credit_window_t w)
{
    return v->rate_milli[policy_credit_counts_throughput(w) ? STATE_RATE_THROUGHPUT : STATE_RATE_BILLED];
}

cJSON *admin_credit_window_json(const admin_ep_view_t *v, policy_credit_window_t w, uint64_t now)
{
    uint64_t budget = v->ep->has_credits ? policy_credit_budget(&v->ep->credits, w) : 0;
    if (budget == 0)
        return NULL;
    uint64_t start, end, spent = window_spent(v, w, now, &start, &end);
    uint64_t left = budget > spent ? budget - spent : 0;
    cJSON *x = cJSON_CreateObject();
    char iso[32];
    cJSON_AddNumberToObject(x, "budget", (double)budget);
    cJSON_AddNumberToObject(x, "spent", (double)spent);
    cJSON_AddNumberToObject(x, "remaining", (double)left);
    admin_iso_time(end, iso);
    cJSON_AddStringToObject(x, "resets_at", iso);
    /* Little's law: the live arrival rate x the cost per call is what the
     * budget is being spent at; the remaining budget at that rate lasts
     * remaining / rate (a straight line from the window's start would
     * average in hours of other traffic) */
    uint64_t spend = spend_milli(v, w), calls = v->rate_milli[STATE_RATE_CALLS];
    cJSON_AddNumberToObject(x, "arrival_per_s", (double)calls / 1000.0);
    if (calls)
        cJSON_AddNumberToObject(x, "cost_per_call", (double)spend / (double)calls);
    else
        cJSON_AddNullToObject(x, "cost_per_call");
    cJSON_AddNumberToObject(x, "spend_per_s", (double)spend / 1000.0);
    double seconds;
    int before;
    if (policy_credit_forecast(left, spend, now, end, &seconds, &before)) {
        cJSON_AddNumberToObject(x, "exhausted_in_s", seconds);
        cJSON_AddBoolToObject(x, "exhausted_before_reset", before);
    } else {
        cJSON_AddNullToObject(x, "exhausted_in_s");
        cJSON_AddBoolToObject(x, "exhausted_before_reset", 0);
    }
    return x;
}

cJSON *admin_credits_json(const admin_ep_view_t *v, uint64_t now)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "profile", v->ep->cost_profile ? v->ep->cost_profile : "flat");
    cJSON_AddNumberToObject(o, "spent_total", (double)v->stats.credits_spent);
    cJSON *wins = cJSON_AddObjectToObject(o, "windows");
    for (policy_credit_window_t w = 0; w < POLICY_CREDIT_WINDOW_COUNT; w++) {
        cJSON *x = admin_credit_window_json(v, w, now);
        if (x != NULL)
            cJSON_AddItemToObject(wins, policy_credit_window_name(w), x);
    }
    return o;
}

static void per_method_metrics(sl_buf_t *b, const admin_ep_view_t *v, size_t n)
{
    static const char *const names[STATE_MC_COUNT] = {
        [STATE_MC_REQUESTS] = "sluice_endpoint_method_requests_total",
        [STATE_MC_CREDITS] = "sluice_endpoint_method_credits_total",
        [STATE_MC_REFUSALS] = "sluice_endpoint_method_refusals_total",
    };
    static const char *const help[STATE_MC_COUNT] = {
        [STATE_MC_REQUESTS] = "Upstream calls by endpoint and method.",
        [STATE_MC_CREDITS] = "Billed credits by endpoint and method (the provider's units).",
        [STATE_MC_REFUSALS] = "Calls refused with a rate limit, by endpoint and method.",
    };
    for (int k = 0; k < STATE_MC_COUNT; k++) {
        sl_buf_printf(b, "# HELP %s %s\n# TYPE %s counter\n", names[k], help[k], names[k]);
        for (size_t i = 0; i < n; i++) {
            size_t nm;
            const policy_method_t *table = policy_method_table(v[i].net->chain, &nm);
            for (size_t m = 0; v[i].per_method != NULL && m <= nm; m++) {
                uint64_t val = v[i].per_method[state_mc_index(m, (state_method_counter_t)k)];
                if (val != 0)
                    sl_buf_printf(b, "%s{network=\"%s\",endpoint=\"%s\",method=\"%s\"} %llu\n", names[k],
                                  v[i].net->name, v[i].ep->id, m < nm ? table[m].name : "other",
                                  (unsigned long long)val);
            }
        }
    }
}

void admin_credits_metrics(admin_t *a, sl_buf_t *b, const admin_ep_view_t *v, size_t n)
{
    (void)a;
    per_method_metrics(b, v, n);
    sl_buf_append_str(b, "# HELP sluice_credits_spent_total Billed credits spent at the endpoint (its provider's units).\n"
                         "# TYPE sluice_credits_spent_total counter\n");
    for (size_t i = 0; i < n; i++)
        sl_buf_printf(b, "sluice_credits_spent_total{network=\"%s\",endpoint=\"%s\"} %llu\n", v[i].net->name,
                      v[i].ep->id, (unsigned long long)v[i].stats.credits_spent);
    uint64_t now = sl_shared_ms();
    /* the budget next to what is left, so an alert can say "under 10%" */
    for (int remaining = 1; remaining >= 0; remaining--) {
        const char *name = remaining ? "sluice_credits_remaining" : "sluice_credits_budget";
        sl_buf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n", name,
                      remaining ? "Credits left in the current budget window." : "The budget of each credit window.",
                      name);
        for (size_t i = 0; i < n; i++) {
            if (!v[i].ep->has_credits)
                continue;
            for (policy_credit_window_t w = 0; w < POLICY_CREDIT_WINDOW_COUNT; w++) {
                uint64_t budget = policy_credit_budget(&v[i].ep->credits, w);
                if (budget == 0)
                    continue;
                uint64_t start, end, spent = window_spent(&v[i], w, now, &start, &end);
                uint64_t val = !remaining ? budget : budget > spent ? budget - spent : 0;
                sl_buf_printf(b, "%s{network=\"%s\",endpoint=\"%s\",window=\"%s\"} %llu\n", name, v[i].net->name,
                              v[i].ep->id, policy_credit_window_name(w), (unsigned long long)val);
            }
        }
    }
    sl_buf_append_str(b, "# HELP sluice_credits_exhausted_in_seconds When the window's budget runs out at the live spend "
                         "rate (absent: nothing is being spent).\n"
                         "# TYPE sluice_credits_exhausted_in_seconds gauge\n");
    for (size_t i = 0; i < n; i++) {
        if (!v[i].ep->has_credits)
            continue;
        for (policy_credit_window_t w = 0; w < POLICY_CREDIT_WINDOW_COUNT; w++) {
            uint64_t budget = policy_credit_budget(&v[i].ep->credits, w);
            if (budget == 0)
                continue;
            uint64_t start, end, spent = window_spent(&v[i], w, now, &start, &end);
            double seconds;
            int before;
            if (policy_credit_forecast(budget > spent ? budget - spent : 0, spend_milli(&v[i], w), now, end, &seconds,
                                       &before))
                sl_buf_printf(b, "sluice_credits_exhausted_in_seconds{network=\"%s\",endpoint=\"%s\",window=\"%s\"} %.3f\n",
                              v[i].net->name, v[i].ep->id, policy_credit_window_name(w), seconds);
        }
    }
}
