#include "policy/score.h"

void policy_score_compute(const policy_score_conf_t *conf, const policy_score_input_t *in, double unknown_latency_ms,
                          policy_score_t *out)
{
    out->latency_ms = in->latency_ms >= 0 ? in->latency_ms : unknown_latency_ms;
    out->error_ratio = in->calls ? (double)in->failures / in->calls : 0;
    out->rate_limit_ratio = in->calls ? (double)in->rate_limited / in->calls : 0;
    out->lag = in->lag;
    out->excluded = 0;
    double lag = in->lag > 0 ? (double)in->lag : 0;
    double disagreed = in->disagreed < POLICY_SCORE_MAX_DISAGREED ? in->disagreed : POLICY_SCORE_MAX_DISAGREED;
    out->cost = (out->latency_ms + 1) * (1 + conf->w_error * out->error_ratio +
                                         conf->w_rate_limit * out->rate_limit_ratio + conf->w_lag * lag +
                                         conf->w_disagree * disagreed);
    if (in->lag > (int64_t)conf->max_lag)
        out->excluded = "far behind the head";
    else if (in->calls >= conf->min_calls && out->error_ratio * 100 > conf->max_error_pct)
        out->excluded = "error ratio too high";
}

int policy_rank_keep(const policy_score_conf_t *conf, double primary_cost, double challenger_cost, uint64_t now_ms,
                     uint64_t *since_ms)
{
    int clearly_better = challenger_cost * 100 < primary_cost * (100 - conf->hysteresis_pct);
    if (!clearly_better) {
        *since_ms = 0;
        return 1;
    }
    if (*since_ms == 0)
        *since_ms = now_ms;
    return now_ms - *since_ms < conf->switch_after_ms;
}
