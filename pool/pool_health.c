/* pool/pool_health.c: what every attempt teaches about an endpoint.
 *
 * Each worker keeps its own rolling window and counters; the breaker state,
 * drain flag and rate-limit mark are shared through state/ and changed only
 * by compare-and-set (state_endpoint_update), so one transition is one event
 * however many workers saw it. The tick that reads the records back and
 * flushes the counters is pool_tick.c. */
#include <string.h>
#include <unistd.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "policy/episode.h"
#include "policy/retry.h"
#include "pool/pool_net.h"
#include "state/state_key.h"

#define EWMA_ALPHA_PCT 20
#define RATE_PENDING_MS 250      /* a mark being decided holds back further writes this long */

/* ---- network level (redundancy_low, network_down, network_up) ---- */

static int usable_rec(const state_endpoint_rec_t *r)
{
    return r->breaker == POLICY_BREAKER_CLOSED && !r->drained;
}

typedef struct level_ctx {
    const pool_network_conf_t *net;
    uint64_t now;
    state_network_level_t level;
} level_ctx_t;

static int level_cb(void *arg, const state_endpoint_rec_t *recs, size_t n, state_network_rec_t *level, int exists,
                    state_event_t *events, size_t *nevents)
{
    level_ctx_t *c = arg;
    size_t usable = 0;
    for (size_t i = 0; i < n; i++)
        usable += usable_rec(&recs[i]);
    state_network_level_t now_level = usable == 0 ? STATE_NETWORK_DOWN : usable == 1 && n > 1 ? STATE_NETWORK_LOW : STATE_NETWORK_REDUNDANT;
    state_network_level_t before = exists ? (state_network_level_t)level->level : STATE_NETWORK_REDUNDANT;
    c->level = now_level;
    if (now_level == before)
        return 0;
    level->level = (uint8_t)now_level;
    level->since_ms = c->now;
    state_event_kind_t kind = now_level == STATE_NETWORK_DOWN  ? STATE_EVENT_NETWORK_DOWN
                              : now_level == STATE_NETWORK_LOW ? STATE_EVENT_REDUNDANCY_LOW
                                                       : STATE_EVENT_NETWORK_UP;
    if (now_level == STATE_NETWORK_LOW && before == STATE_NETWORK_DOWN)
        kind = STATE_EVENT_NETWORK_UP;
    state_event_init(&events[0], kind, c->net->name, NULL, c->now);
    events[0].count = usable;
    snprintf(events[0].reason, sizeof(events[0].reason), "%zu of %zu endpoints usable", usable, n);
    *nevents = 1;
    return 1;
}

/* Re-evaluates how many endpoints of a network are usable (breaker closed,
 * not drained) from shared state, and records redundancy_low / network_down /
 * network_up events when that level changed. */
static state_network_level_t network_level_check(const pool_network_conf_t *conf, state_t *st)
{
    char keys[POOL_MAX_ENDPOINTS][STATE_KEY_MAX];
    const char *kp[POOL_MAX_ENDPOINTS];
    size_t n = conf->nendpoints < POOL_MAX_ENDPOINTS ? conf->nendpoints : POOL_MAX_ENDPOINTS;
    for (size_t i = 0; i < n; i++) {
        state_key_endpoint(keys[i], sizeof(keys[i]), conf->name, conf->endpoints[i].id);
        kp[i] = keys[i];
    }
    level_ctx_t c = {conf, sl_shared_ms(), STATE_NETWORK_REDUNDANT};
    if (state_network_update(st, conf->name, kp, n, level_cb, &c) != SL_OK)
        sl_log_warn("network %s: cannot record its level in shared state", conf->name);
    return c.level;
}

void pool_health_network_check(pool_network_t *net)
{
    net->level = network_level_check(net->conf, net->pool->state);
}

/* ---- breaker transitions ---- */

typedef struct breaker_ctx {
    pool_endpoint_t *ep;
    policy_breaker_state_t from;
    policy_breaker_state_t to;
    char reason[160];
    uint64_t now;
    pool_then_t then;             /* what follows a move this call made */
    int *made;                    /* while the call is under way: set to whether it moved */
} breaker_ctx_t;

static const state_event_kind_t entered_event[POLICY_BREAKER_STATE_COUNT] = {
    [POLICY_BREAKER_CLOSED] = STATE_EVENT_BREAKER_CLOSED,
    [POLICY_BREAKER_OPEN] = STATE_EVENT_BREAKER_OPENED,
    [POLICY_BREAKER_HALF_OPEN] = STATE_EVENT_BREAKER_HALF_OPEN,
};

static int breaker_cb(void *arg, state_endpoint_rec_t *rec, int exists, state_event_t *events, size_t *nevents)
{
    breaker_ctx_t *c = arg;
    (void)exists;
    pool_endpoint_t *ep = c->ep;
    if (rec->breaker != c->from)
        return 0; /* another worker got there first */
    /* only the probe's owner settles it; a stale claim may be taken over */
    if (c->from == POLICY_BREAKER_HALF_OPEN && rec->probe_pid != (uint32_t)getpid())
        return 0;
    policy_breaker_t b = {(policy_breaker_state_t)rec->breaker, rec->since_ms, rec->cooldown_ms, rec->opened_at_ms};
    /* the probe was found due on this worker's copy: on the record, another
     * worker's probe may have failed since and opened it again (a new cooldown) */
    if (c->to == POLICY_BREAKER_HALF_OPEN && !policy_breaker_probe_due(&b, c->now))
        return 0;
    if (policy_breaker_transition(&b, &ep->net->conf->breaker, c->to, c->now) != SL_OK)
        return 0;
    rec->breaker = (uint8_t)b.state;
    rec->since_ms = b.since_ms;
    rec->cooldown_ms = b.cooldown_ms;
    rec->opened_at_ms = b.opened_at_ms;
    rec->transitions[c->to]++;
    rec->probe_pid = c->to == POLICY_BREAKER_HALF_OPEN ? (uint32_t)getpid() : 0;
    rec->probe_at_ms = c->to == POLICY_BREAKER_HALF_OPEN ? c->now : 0;
    state_event_t *ev = &events[0];
    state_event_init(ev, entered_event[c->to], ep->net->conf->name, ep->conf->id, c->now);
    ev->from = (uint8_t)c->from;
    ev->to = (uint8_t)c->to;
    snprintf(ev->reason, sizeof(ev->reason), "%s", c->reason);
    if (c->to == POLICY_BREAKER_CLOSED)
        ev->duration_ms = c->now - b.opened_at_ms;
    if (c->to == POLICY_BREAKER_OPEN)
        ev->duration_ms = b.cooldown_ms;
    *nevents = 1;
    return 1;
}

static unsigned move_bit(policy_breaker_state_t from, policy_breaker_state_t to)
{
    return 1u << (from * POLICY_BREAKER_STATE_COUNT + to);
}

static void breaker_done(void *data, sl_err_t err, int changed, const state_endpoint_rec_t *rec)
{
    (void)err; /* logged by state/; nothing changed */
    breaker_ctx_t *c = data;
    pool_endpoint_t *ep = c->ep;
    ep->health.moving &= ~move_bit(c->from, c->to);
    if (c->made != NULL)
        *c->made = changed;
    if (changed) {
        ep->health.shared = *rec;
        sl_log_warn("endpoint %s/%s: breaker %s -> %s (%s)", ep->net->conf->name, ep->conf->id,
                    policy_breaker_state_name(c->from), policy_breaker_state_name(c->to), c->reason);
        if (c->to != POLICY_BREAKER_HALF_OPEN)
            pool_health_network_check(ep->net);
        if (c->then == POOL_THEN_RESET_WINDOW)
            policy_window_reset(&ep->health.window);
        else if (c->then == POOL_THEN_PROBE)
            pool_probe_send_breaker(ep);
    }
    free(c);
}

int pool_health_breaker_move_then(pool_endpoint_t *ep, policy_breaker_state_t from, policy_breaker_state_t to,
                                  const char *reason, pool_then_t then)
{
    pool_t *pool = ep->net->pool;
    unsigned bit = move_bit(from, to);
    if (pool->state == NULL || (ep->health.moving & bit) != 0)
        return 0; /* the same move is already being decided (by Redis) */
    breaker_ctx_t *c = sl_xcalloc(1, sizeof(*c));
    *c = (breaker_ctx_t){.ep = ep, .from = from, .to = to, .now = sl_shared_ms(), .then = then};
    snprintf(c->reason, sizeof(c->reason), "%s", reason);
    int made = -1;
    c->made = &made;
    ep->health.moving |= bit;
    state_endpoint_transition(pool->state, ep->health.key, breaker_cb, c, sizeof(*c), breaker_done, c);
    if (made < 0) {
        c->made = NULL; /* decided later, by Redis' answer */
        return 0;
    }
    return made;
}

int pool_health_breaker_move(pool_endpoint_t *ep, policy_breaker_state_t from, policy_breaker_state_t to,
                             const char *reason)
{
    return pool_health_breaker_move_then(ep, from, to, reason, POOL_THEN_NONE);
}

/* ---- outcomes ---- */

static void count_latency(state_stats_rec_t *s, uint32_t latency_us)
{
    size_t b = 0;
    while (b + 1 < STATE_LAT_BUCKETS && latency_us > state_lat_bounds_us[b])
        b++;
    s->lat_hist[b]++;
    s->lat_sum_us += latency_us;
    s->ewma_us = s->ewma_us == 0 ? latency_us : (s->ewma_us * (100 - EWMA_ALPHA_PCT) + (uint64_t)latency_us * EWMA_ALPHA_PCT) / 100;
}

void pool_health_record(pool_endpoint_t *ep, state_outcome_t outcome, uint32_t latency_us, int failover)
{
    pool_health_t *h = &ep->health;
    /* one list of outcomes: base/sl_outcome.h */
    policy_evidence_t ev = policy_outcome_evidence((policy_outcome_t)outcome);
    h->stats.attempts++;
    h->stats.outcomes[outcome]++;
    h->stats.failovers += failover != 0;
    h->dirty = 1;
    if (ev == POLICY_EVIDENCE_UNSENT)
        return; /* nothing reached the endpoint: no latency, no verdict */
    count_latency(&h->stats, latency_us);
    if (ev == POLICY_EVIDENCE_NONE)
        return; /* counted, but neither fails nor vouches for it */
    if (ev != POLICY_EVIDENCE_REFUSED)
        h->last_ok_ms = sl_shared_ms(); /* served: a later refusal starts the backoff over */
    const policy_breaker_conf_t *conf = &ep->net->conf->breaker;
    policy_window_record(&h->rl_window, conf, ev == POLICY_EVIDENCE_REFUSED, sl_now_ms());
    int failure = ev == POLICY_EVIDENCE_FAILED;
    if (!policy_window_record(&h->window, conf, failure, sl_now_ms()))
        return;
    if (h->shared.breaker != POLICY_BREAKER_CLOSED)
        return;
    char reason[160];
    uint32_t calls, failures;
    policy_window_totals(&h->window, conf, sl_now_ms(), &calls, &failures);
    if (conf->consecutive != 0 && h->window.consecutive >= conf->consecutive)
        snprintf(reason, sizeof(reason), "%u failures in a row (last: %s)", h->window.consecutive,
                 state_outcome_name(outcome));
    else
        snprintf(reason, sizeof(reason), "%u of %u calls failed within %u ms (last: %s)", failures, calls,
                 conf->window_ms, state_outcome_name(outcome));
    pool_health_breaker_move_then(ep, POLICY_BREAKER_CLOSED, POLICY_BREAKER_OPEN, reason, POOL_THEN_RESET_WINDOW);
}

/* ---- rate-limit marks ---- */

typedef struct rate_ctx {
    pool_endpoint_t *ep;
    uint64_t now;
    uint32_t retry_ms;            /* the refusal's hint; 0: sluice's own backoff */
    uint64_t last_ok_ms;          /* this worker's last attempt here not refused so */
    uint64_t until;               /* out: the mark written */
    state_endpoint_rec_t result;
} rate_ctx_t;

/* A new mark (not an extension) in the rate-limit episode: 1 if it begins
 * one (an event says so); marks close together are one episode, counted, and
 * the master reports its end (pool_health_rate_episode_end). An episode that
 * was over but not yet reported is reported here first. */
static int rate_episode_mark(rate_ctx_t *c, state_endpoint_rec_t *rec, state_event_t *events, size_t *nevents)
{
    policy_episode_t e = {rec->rl_since_ms, rec->rl_last_until_ms, rec->rl_marks};
    if (policy_episode_over(&e, c->now, POLICY_EPISODE_QUIET_MS))
        *nevents += pool_health_rate_episode_end(c->ep->net->conf->name, c->ep->conf->id, rec, c->now, events);
    policy_episode_note_t n = policy_episode_mark(&e, c->now, c->until, POLICY_EPISODE_QUIET_MS);
    rec->rl_since_ms = e.since_ms;
    rec->rl_last_until_ms = e.last_until_ms;
    rec->rl_marks = e.marks;
    return n == POLICY_EPISODE_BEGAN;
}

int pool_health_rate_episode_end(const char *network, const char *endpoint, state_endpoint_rec_t *rec,
                                 uint64_t now, state_event_t *ev)
{
    policy_episode_t e = {rec->rl_since_ms, rec->rl_last_until_ms, rec->rl_marks};
    if (!policy_episode_over(&e, now, POLICY_EPISODE_QUIET_MS))
        return 0;
    state_event_init(ev, STATE_EVENT_ENDPOINT_RATE_LIMIT_ENDED, network, endpoint, now);
    ev->count = e.marks;
    ev->duration_ms = policy_episode_duration_ms(&e);
    snprintf(ev->reason, sizeof(ev->reason), "no longer rate limited: %u refusal mark(s) over %llu ms, none since",
             e.marks, (unsigned long long)ev->duration_ms);
    policy_episode_close(&e);
    rec->rl_since_ms = rec->rl_last_until_ms = 0;
    rec->rl_marks = 0;
    return 1;
}

/* Extends the shared mark. Without a hint the length comes from the shared
 * record (policy_rate_backoff_ms), so the doubling goes on across workers;
 * a record marked already (another worker was first) is left alone. */
static int rate_cb(void *arg, state_endpoint_rec_t *rec, int exists, state_event_t *events, size_t *nevents)
{
    rate_ctx_t *c = arg;
    (void)exists;
    int was_limited = rec->rate_limited_until_ms > c->now;
    uint32_t len = c->retry_ms;
    if (len == 0) {
        if (was_limited)
            return 0;
        len = policy_rate_backoff_ms(rec->rl_backoff_ms, rec->rate_limited_until_ms, c->last_ok_ms, c->now);
    }
    c->until = c->now + len;
    if (rec->rate_limited_until_ms >= c->until)
        return 0;
    rec->rate_limited_until_ms = c->until;
    rec->rl_backoff_ms = c->retry_ms == 0 ? len : 0;
    if (!was_limited && rate_episode_mark(c, rec, events, nevents)) {
        state_event_t *ev = &events[*nevents];
        state_event_init(ev, STATE_EVENT_ENDPOINT_RATE_LIMITED, c->ep->net->conf->name, c->ep->conf->id, c->now);
        ev->duration_ms = len;
        snprintf(ev->reason, sizeof(ev->reason), "rate limited for %u ms%s", len,
                 c->retry_ms == 0 ? " (no Retry-After: sluice's own backoff)" : "");
        (*nevents)++;
    }
    c->result = *rec;
    return 1;
}

static void rate_done(void *data, sl_err_t err, int changed, const state_endpoint_rec_t *rec)
{
    (void)err; /* logged by state/; nothing changed */
    pool_endpoint_t *ep = data;
    if (!changed)
        return;
    ep->health.shared = *rec;
    ep->health.rl_written_until_ms = rec->rate_limited_until_ms;
}

void pool_health_rate_limited(pool_endpoint_t *ep, uint32_t retry_ms)
{
    pool_health_t *h = &ep->health;
    uint64_t now = sl_shared_ms();
    /* a storm of 429s must not become a storm of write transactions */
    if (retry_ms == 0 ? h->shared.rate_limited_until_ms > now || h->rl_written_until_ms > now
                      : now + retry_ms <= h->shared.rate_limited_until_ms + 250 ||
                            now + retry_ms <= h->rl_written_until_ms + 250)
        return;
    rate_ctx_t c = {ep, now, retry_ms, h->last_ok_ms, 0, {0}};
    if (ep->net->pool->state == NULL) { /* unit tests: this worker is all there is */
        state_event_t ev;
        size_t n = 0;
        if (rate_cb(&c, &h->shared, 1, &ev, &n))
            h->rl_written_until_ms = c.until;
        return;
    }
    /* until the mark is decided (by Redis, with cluster:), the refusals
     * that follow write nothing either */
    h->rl_written_until_ms = now + (retry_ms ? retry_ms : RATE_PENDING_MS);
    state_endpoint_transition(ep->net->pool->state, h->key, rate_cb, &c, sizeof(c), rate_done, ep);
}

int pool_health_usable(pool_endpoint_t *ep, uint64_t now_ms)
{
    const state_endpoint_rec_t *r = &ep->health.shared;
    return r->breaker == POLICY_BREAKER_CLOSED && !r->drained && now_ms >= r->rate_limited_until_ms &&
           pool_dns_usable(&ep->link) && !ep->wrong_chain;
}

/* ---- per-method counters ---- */

void pool_method_count(pool_endpoint_t *ep, const policy_method_t *m, int what, uint64_t amount)
{
    pool_health_t *h = &ep->health;
    size_t nmethods;
    const policy_method_t *table = policy_method_table(ep->net->conf->chain, &nmethods);
    if (h->per_method == NULL)
        return;
    size_t mi = m >= table && m < table + nmethods ? (size_t)(m - table) : nmethods;
    h->per_method->v[state_mc_index(mi, (state_method_counter_t)what)] += amount;
    h->per_method_dirty = 1;
}
