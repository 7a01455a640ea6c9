/* policy/hedge.c: hedged reads: eligibility, delay and budget (pure). */
#include "policy/hedge.h"

const uint32_t policy_hedge_bounds_us[POLICY_HEDGE_BUCKETS - 1] = {
    500,    1000,   1500,   2000,   3000,   4000,    6000,    8000,    12000,   16000,   24000,   32000,
    48000,  64000,  96000,  128000, 192000, 256000,  384000,  512000,  768000,  1024000, 1536000, 2048000,
};

int policy_hedge_method_ok(const policy_method_t *m)
{
    return m->retry_safe && m->cheap && (m->cls == POLICY_CLASS_READ || m->cls == POLICY_CLASS_CONFIRM);
}

policy_hedge_why_t policy_hedge_eligible(const policy_hedge_conf_t *conf, const policy_method_t *const *methods,
                                         size_t n, int pinned, policy_pressure_level_t level)
{
    if (!conf->enabled)
        return POLICY_HEDGE_OFF;
    if (n == 0)
        return POLICY_HEDGE_NOT_READ;
    for (size_t i = 0; i < n; i++)
        if (!policy_hedge_method_ok(methods[i]))
            return POLICY_HEDGE_NOT_READ;
    if (pinned)
        return POLICY_HEDGE_PINNED;
    if (level != POLICY_PRESSURE_OK)
        return POLICY_HEDGE_PRESSURE;
    return POLICY_HEDGE_YES;
}

int policy_hedge_budget_ok(const policy_hedge_conf_t *conf, uint64_t requests, uint64_t hedges)
{
    return (double)(hedges + 1) <= conf->max_ratio * (double)requests + (double)conf->burst;
}

void policy_hedge_hist_add(policy_hedge_hist_t *h, uint32_t latency_us)
{
    size_t b = 0;
    while (b + 1 < POLICY_HEDGE_BUCKETS && latency_us > policy_hedge_bounds_us[b])
        b++;
    if (h->total + 1 >= POLICY_HEDGE_DECAY_AT) {
        h->total = 0;
        for (size_t i = 0; i < POLICY_HEDGE_BUCKETS; i++) {
            h->n[i] /= 2;
            h->total += h->n[i];
        }
    }
    h->n[b]++;
    h->total++;
}

uint32_t policy_hedge_quantile_us(const policy_hedge_hist_t *h, uint32_t permille)
{
    if (h->total < POLICY_HEDGE_MIN_SAMPLES)
        return 0;
    uint32_t want = (h->total * permille + 999) / 1000, seen = 0; /* ceil(q x total) */
    for (size_t b = 0; b + 1 < POLICY_HEDGE_BUCKETS; b++) {
        seen += h->n[b];
        if (seen >= want)
            return policy_hedge_bounds_us[b];
    }
    return UINT32_MAX;
}

uint32_t policy_hedge_p90_us(const policy_hedge_hist_t *h)
{
    return policy_hedge_quantile_us(h, 900);
}

static uint32_t clamp(uint64_t v, uint32_t lo, uint32_t hi)
{
    return v < lo ? lo : v > hi ? hi : (uint32_t)v;
}

uint32_t policy_hedge_delay_ms(const policy_hedge_conf_t *conf, const policy_hedge_hist_t *h, uint32_t probe_ewma_us)
{
    uint64_t q = policy_hedge_quantile_us(h, POLICY_HEDGE_QUANTILE);
    if (q != 0) {
        uint64_t least = (uint64_t)policy_hedge_quantile_us(h, 500) * POLICY_HEDGE_MEDIAN_TIMES;
        return clamp(((q > least ? q : least) + 999) / 1000, conf->min_ms, conf->max_ms);
    }
    if (probe_ewma_us != 0)
        return clamp(((uint64_t)probe_ewma_us * 3 + 999) / 1000, conf->min_ms, conf->max_ms);
    return conf->min_ms;
}
