#include "policy/breaker.h"

#include <string.h>

static const char *const state_names[POLICY_BREAKER_STATE_COUNT] = {
    [POLICY_BREAKER_CLOSED] = "closed",
    [POLICY_BREAKER_OPEN] = "open",
    [POLICY_BREAKER_HALF_OPEN] = "half_open",
};

/* edges[from][to] */
static const uint8_t edges[POLICY_BREAKER_STATE_COUNT][POLICY_BREAKER_STATE_COUNT] = {
    [POLICY_BREAKER_CLOSED] = {[POLICY_BREAKER_OPEN] = 1},
    [POLICY_BREAKER_OPEN] = {[POLICY_BREAKER_HALF_OPEN] = 1},
    [POLICY_BREAKER_HALF_OPEN] = {[POLICY_BREAKER_CLOSED] = 1, [POLICY_BREAKER_OPEN] = 1},
};

const char *policy_breaker_state_name(policy_breaker_state_t s)
{
    return (unsigned)s < POLICY_BREAKER_STATE_COUNT ? state_names[s] : "unknown";
}

int policy_breaker_edge_allowed(policy_breaker_state_t from, policy_breaker_state_t to)
{
    if ((unsigned)from >= POLICY_BREAKER_STATE_COUNT || (unsigned)to >= POLICY_BREAKER_STATE_COUNT)
        return 0;
    return edges[from][to];
}

sl_err_t policy_breaker_transition(policy_breaker_t *b, const policy_breaker_conf_t *conf,
                                   policy_breaker_state_t to, uint64_t now_ms)
{
    if (!policy_breaker_edge_allowed(b->state, to))
        return SL_ERR_STATE;
    switch (to) {
    case POLICY_BREAKER_OPEN:
        if (b->state == POLICY_BREAKER_CLOSED) {
            b->cooldown_ms = conf->cooldown_ms;
            b->opened_at_ms = now_ms;
        } else {
            uint64_t next = (uint64_t)b->cooldown_ms * 2;
            b->cooldown_ms = next > conf->max_cooldown_ms ? conf->max_cooldown_ms : (uint32_t)next;
        }
        break;
    case POLICY_BREAKER_CLOSED:
        b->cooldown_ms = 0;
        break;
    case POLICY_BREAKER_HALF_OPEN:
    case POLICY_BREAKER_STATE_COUNT:
        break;
    }
    b->state = to;
    b->since_ms = now_ms;
    return SL_OK;
}

static uint64_t bucket_len(const policy_breaker_conf_t *conf)
{
    uint64_t len = conf->window_ms / POLICY_WINDOW_BUCKETS;
    return len ? len : 1;
}

int policy_window_record(policy_window_t *w, const policy_breaker_conf_t *conf, int failure, uint64_t now_ms)
{
    uint64_t len = bucket_len(conf);
    uint64_t start = now_ms - now_ms % len;
    size_t i = (size_t)((now_ms / len) % POLICY_WINDOW_BUCKETS);
    if (w->bucket_start_ms[i] != start) {
        w->bucket_start_ms[i] = start;
        w->calls[i] = 0;
        w->failures[i] = 0;
    }
    w->calls[i]++;
    if (failure) {
        w->failures[i]++;
        w->consecutive++;
    } else {
        w->consecutive = 0;
    }
    if (!failure)
        return 0;
    if (conf->consecutive != 0 && w->consecutive >= conf->consecutive)
        return 1;
    uint32_t calls, failures;
    policy_window_totals(w, conf, now_ms, &calls, &failures);
    return calls >= conf->min_calls && failures >= conf->failure_count &&
           (uint64_t)failures * 100 >= (uint64_t)calls * conf->failure_ratio_pct;
}

void policy_window_totals(const policy_window_t *w, const policy_breaker_conf_t *conf, uint64_t now_ms,
                          uint32_t *calls, uint32_t *failures)
{
    uint64_t horizon = now_ms >= conf->window_ms ? now_ms - conf->window_ms : 0;
    *calls = 0;
    *failures = 0;
    for (size_t i = 0; i < POLICY_WINDOW_BUCKETS; i++) {
        if (w->calls[i] == 0 || w->bucket_start_ms[i] + bucket_len(conf) <= horizon)
            continue;
        *calls += w->calls[i];
        *failures += w->failures[i];
    }
}

void policy_window_reset(policy_window_t *w)
{
    memset(w, 0, sizeof(*w));
}

int policy_breaker_probe_due(const policy_breaker_t *b, uint64_t now_ms)
{
    return b->state == POLICY_BREAKER_OPEN && now_ms >= b->since_ms + b->cooldown_ms;
}

int policy_breaker_allows(const policy_breaker_t *b)
{
    return b->state == POLICY_BREAKER_CLOSED;
}
