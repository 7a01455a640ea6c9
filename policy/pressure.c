#include "policy/pressure.h"

#include <string.h>

static const char *const level_names[POLICY_PRESSURE_LEVEL_COUNT + 1] = {
    [POLICY_PRESSURE_OK] = "ok",
    [POLICY_PRESSURE_ELEVATED] = "elevated",
    [POLICY_PRESSURE_CRITICAL] = "critical",
    [POLICY_SHED_NEVER] = "never",
};

/* edges[from][to]: up any number of steps at once, down one at a time (a
 * drop from critical straight to ok would skip the elevated shed order the
 * clients are pacing to). */
static const uint8_t edges[POLICY_PRESSURE_LEVEL_COUNT][POLICY_PRESSURE_LEVEL_COUNT] = {
    [POLICY_PRESSURE_OK] = {[POLICY_PRESSURE_ELEVATED] = 1, [POLICY_PRESSURE_CRITICAL] = 1},
    [POLICY_PRESSURE_ELEVATED] = {[POLICY_PRESSURE_OK] = 1, [POLICY_PRESSURE_CRITICAL] = 1},
    [POLICY_PRESSURE_CRITICAL] = {[POLICY_PRESSURE_ELEVATED] = 1},
};

const char *policy_pressure_level_name(policy_pressure_level_t l)
{
    return (unsigned)l <= POLICY_SHED_NEVER ? level_names[l] : "unknown";
}

int policy_pressure_level_parse(const char *s)
{
    for (int i = 0; i <= POLICY_SHED_NEVER; i++)
        if (strcmp(s, level_names[i]) == 0)
            return i;
    return -1;
}

double policy_pressure_utilisation(uint32_t depth, uint32_t ceiling)
{
    return ceiling ? (double)depth / (double)ceiling : 0;
}

policy_pressure_level_t policy_pressure_target(const policy_pressure_conf_t *conf,
                                               const policy_pressure_inputs_t *in, policy_pressure_level_t current,
                                               unsigned *why)
{
    double u = policy_pressure_utilisation(in->depth, in->ceiling);
    unsigned w = 0;
    policy_pressure_level_t level = POLICY_PRESSURE_OK;
    /* entered above critical, at or above elevated; kept down to threshold - hysteresis */
    if (u > conf->critical || (current == POLICY_PRESSURE_CRITICAL && u > conf->critical - conf->hysteresis))
        level = POLICY_PRESSURE_CRITICAL;
    else if (u >= conf->elevated || (current != POLICY_PRESSURE_OK && u >= conf->elevated - conf->hysteresis))
        level = POLICY_PRESSURE_ELEVATED;
    if (level != POLICY_PRESSURE_OK)
        w |= POLICY_PRESSURE_WHY_UTILISATION;
    uint64_t p90 = in->settle_p90_us, base = in->baseline_us;
    if (in->settles >= conf->min_samples && base > 0 && (double)p90 > conf->slow_factor * (double)base &&
        p90 >= base + (uint64_t)conf->slow_min_ms * 1000)
        w |= POLICY_PRESSURE_WHY_SLOW;
    if (in->tries >= conf->min_samples && (double)in->refusals > conf->refusal_ratio * (double)in->tries)
        w |= POLICY_PRESSURE_WHY_REFUSALS;
    if (level == POLICY_PRESSURE_OK && (w & (POLICY_PRESSURE_WHY_SLOW | POLICY_PRESSURE_WHY_REFUSALS)))
        level = POLICY_PRESSURE_ELEVATED;
    if (why != NULL)
        *why = w;
    return level;
}

int policy_pressure_edge_allowed(policy_pressure_level_t from, policy_pressure_level_t to)
{
    return (unsigned)from < POLICY_PRESSURE_LEVEL_COUNT && (unsigned)to < POLICY_PRESSURE_LEVEL_COUNT &&
           edges[from][to];
}

sl_err_t policy_pressure_transition(policy_pressure_t *p, policy_pressure_level_t to, uint64_t now_ms)
{
    if (!policy_pressure_edge_allowed(p->level, to))
        return SL_ERR_STATE;
    p->level = to;
    p->since_ms = now_ms;
    p->calm_since_ms = 0;
    p->high_since_ms = 0;
    return SL_OK;
}

policy_pressure_level_t policy_pressure_next(const policy_pressure_conf_t *conf, policy_pressure_t *p,
                                             policy_pressure_level_t target, uint64_t now_ms)
{
    if (target > p->level) {
        p->calm_since_ms = 0;
        if (p->high_since_ms == 0)
            p->high_since_ms = now_ms ? now_ms : 1;
        return now_ms >= p->high_since_ms + conf->rise_ms ? target : p->level;
    }
    p->high_since_ms = 0;
    if (target == p->level) {
        p->calm_since_ms = 0;
        return p->level;
    }
    if (p->calm_since_ms == 0)
        p->calm_since_ms = now_ms ? now_ms : 1;
    int lasted = now_ms >= p->since_ms + conf->hold_ms;
    int calm = now_ms >= p->calm_since_ms + conf->hold_ms;
    return lasted && calm ? (policy_pressure_level_t)(p->level - 1) : p->level;
}

uint32_t policy_pressure_retry_after_ms(const policy_pressure_conf_t *conf, policy_pressure_level_t level)
{
    uint64_t ms = level == POLICY_PRESSURE_CRITICAL ? (uint64_t)conf->retry_after_ms * 2 : conf->retry_after_ms;
    return ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
}

uint32_t policy_pressure_endpoint_slots(uint32_t max_inflight, uint64_t rate_milli, uint64_t cost_milli,
                                        uint64_t latency_us)
{
    if (rate_milli == 0 || cost_milli == 0 || latency_us == 0)
        return max_inflight;
    /* calls per second the budget allows x seconds each call is in flight */
    double slots = (double)rate_milli / (double)cost_milli * ((double)latency_us / 1e6);
    uint64_t n = (uint64_t)slots;
    if ((double)n < slots)
        n++;
    if (n < 1)
        n = 1;
    return n < max_inflight ? (uint32_t)n : max_inflight;
}

const uint32_t policy_settle_bounds_us[POLICY_SETTLE_BUCKETS] = {
    1000,   2500,   5000,    10000,   25000,   50000,   100000,   250000,
    500000, 750000, 1000000, 2000000, 5000000, 10000000, 30000000, UINT32_MAX,
};

size_t policy_settle_bucket(uint64_t us)
{
    size_t b = 0;
    while (b + 1 < POLICY_SETTLE_BUCKETS && us > policy_settle_bounds_us[b])
        b++;
    return b;
}

uint32_t policy_settle_p90_us(const uint64_t *hist, uint64_t *total)
{
    uint64_t n = 0;
    for (size_t k = 0; k < POLICY_SETTLE_BUCKETS; k++)
        n += hist[k];
    if (total != NULL)
        *total = n;
    if (n == 0)
        return 0;
    uint64_t want = (n * 9 + 9) / 10, seen = 0;
    for (size_t k = 0; k < POLICY_SETTLE_BUCKETS; k++) {
        if (seen + hist[k] < want) {
            seen += hist[k];
            continue;
        }
        double lo = k == 0 ? 0 : (double)policy_settle_bounds_us[k - 1];
        /* the last bucket has no upper bound: call it twice its lower one */
        double hi = k + 1 == POLICY_SETTLE_BUCKETS ? lo * 2 : (double)policy_settle_bounds_us[k];
        double v = lo + (hi - lo) * ((double)(want - seen) / (double)hist[k]);
        return v >= (double)UINT32_MAX ? UINT32_MAX : (uint32_t)v;
    }
    return 0;
}

uint32_t policy_pressure_baseline(const policy_pressure_conf_t *conf, uint32_t prev_us, const policy_pressure_inputs_t *in)
{
    if (in->settles < conf->min_samples || in->settle_p90_us == 0 ||
        policy_pressure_utilisation(in->depth, in->ceiling) >= conf->elevated)
        return prev_us;
    if (prev_us == 0)
        return in->settle_p90_us;
    int64_t diff = (int64_t)in->settle_p90_us - (int64_t)prev_us;
    int64_t step = diff / POLICY_BASELINE_DIVISOR;
    if (step == 0 && diff != 0)
        step = diff > 0 ? 1 : -1;
    return (uint32_t)((int64_t)prev_us + step);
}

uint32_t policy_pressure_share_cap(const policy_pressure_conf_t *conf, uint32_t ceiling, uint32_t nworkers)
{
    double cap = (double)ceiling * conf->identity_share / (double)(nworkers ? nworkers : 1);
    return cap < 1 ? 1 : cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
}

policy_pressure_level_t policy_pressure_level_for(const policy_pressure_conf_t *conf, policy_pressure_level_t level,
                                                  uint32_t held, uint32_t cap)
{
    if (conf->identity_share >= 1 || level == POLICY_PRESSURE_OK || held >= cap)
        return level;
    return (policy_pressure_level_t)(level - 1);
}
