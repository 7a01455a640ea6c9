/* pool/pool_probe.c: probes, one prober for all workers.
 *
 * Two kinds share one exchange per endpoint:
 *  - the health probe: every ranking.probe_interval_ms, eth_blockNumber (or
 *    getSlot) to each endpoint whose breaker is closed; its latency and the
 *    head it reports feed the ranking. The worker that moves the shared
 *    probe_next_ms forward (compare-and-set) is the one that probes.
 *  - the breaker probe: when an open breaker's cooldown is over, the worker
 *    that wins OPEN -> HALF_OPEN sends the one probe that decides whether it
 *    closes again. A claim whose owner died is taken over after
 *    breaker.probe_timeout_ms. */
#include <string.h>
#include <unistd.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "pool/pool_int.h"

#define PROBE_EWMA_PCT 30

static const char eth_probe[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_blockNumber\",\"params\":[]}";
static const char sol_probe[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"getSlot\"}";

typedef struct probe_result_ctx {
    uint64_t now;
    int ok;
    uint64_t head;
    uint32_t latency_us;
    state_endpoint_rec_t result;
} probe_result_ctx_t;

/* Writes a probe's outcome into the shared record: head, latency EWMA. */
static int probe_result_cb(void *arg, state_endpoint_rec_t *rec, int exists, state_event_t *events, size_t *nevents)
{
    probe_result_ctx_t *c = arg;
    (void)exists;
    (void)events;
    (void)nevents;
    if (c->ok) {
        rec->head = c->head;
        rec->head_at_ms = c->now;
        rec->probe_failures = 0;
        uint64_t ewma = rec->probe_ewma_us == 0
                            ? c->latency_us
                            : (rec->probe_ewma_us * (100 - PROBE_EWMA_PCT) + (uint64_t)c->latency_us * PROBE_EWMA_PCT) / 100;
        rec->probe_ewma_us = (uint32_t)(ewma ? ewma : 1);
    } else {
        rec->probe_failures++;
    }
    c->result = *rec;
    return 1;
}

static void record_probe(pool_endpoint_t *ep, int ok, uint64_t head, uint32_t latency_us)
{
    probe_result_ctx_t c = {sl_wall_ms(), ok, head, latency_us, {0}};
    int changed = 0;
    if (state_endpoint_update(ep->net->pool->state, ep->health.key, probe_result_cb, &c, &changed) == SL_OK && changed)
        ep->health.shared = c.result;
}

static void on_probe_done(pool_exchange_t *ex)
{
    pool_endpoint_t *ep = ex->data;
    pool_health_t *h = &ep->health;
    int breaker_probe = h->probing == POOL_PROBE_BREAKER;
    h->probing = POOL_PROBE_NONE;
    uint64_t head = 0;
    int ok = ex->fail == POOL_FAIL_NONE && ex->head.status >= 200 && ex->head.status < 300 &&
             pool_rank_parse_head(ex->body.base ? ex->body.base : "", ex->body.len, &head);
    char reason[160];
    if (ok)
        snprintf(reason, sizeof(reason), "probe answered in %u ms", ex->latency_us / 1000);
    else if (ex->fail != POOL_FAIL_NONE)
        snprintf(reason, sizeof(reason), "probe failed: %s", pool_fail_str(ex->fail));
    else
        snprintf(reason, sizeof(reason), "probe failed: HTTP %d or no result", ex->head.status);
    sl_buf_dispose(&ex->body);
    record_probe(ep, ok, head, ex->latency_us);
    if (!breaker_probe)
        return;
    if (ok)
        policy_window_reset(&h->window);
    pool_health_breaker_move(ep, POLICY_BREAKER_HALF_OPEN, ok ? POLICY_BREAKER_CLOSED : POLICY_BREAKER_OPEN, reason);
}

static int probe_send(pool_endpoint_t *ep, int kind)
{
    int solana = ep->net->conf->chain == POLICY_CHAIN_SOLANA;
    pool_fail_t fail = pool_exchange_start(&ep->health.probe, ep, solana ? sol_probe : eth_probe,
                                           solana ? sizeof(sol_probe) - 1 : sizeof(eth_probe) - 1, 0, on_probe_done, ep);
    if (fail == POOL_FAIL_NONE) {
        ep->health.probing = kind;
        return 1;
    }
    char reason[160];
    snprintf(reason, sizeof(reason), "probe failed: %s", pool_fail_str(fail));
    record_probe(ep, 0, 0, 0);
    if (kind == POOL_PROBE_BREAKER)
        pool_health_breaker_move(ep, POLICY_BREAKER_HALF_OPEN, POLICY_BREAKER_OPEN, reason);
    return 0;
}

typedef struct claim_ctx {
    uint64_t now;
    uint32_t interval_ms;
    uint32_t timeout_ms;
    int takeover;                 /* claim a stale half-open probe instead */
} claim_ctx_t;

/* Claims the next health probe (moves probe_next_ms forward), or a half-open
 * probe whose owner died mid-probe. */
static int claim_cb(void *arg, state_endpoint_rec_t *rec, int exists, state_event_t *events, size_t *nevents)
{
    claim_ctx_t *c = arg;
    (void)exists;
    (void)events;
    (void)nevents;
    if (c->takeover) {
        if (rec->breaker != POLICY_BREAKER_HALF_OPEN || c->now < rec->probe_at_ms + c->timeout_ms)
            return 0;
        rec->probe_pid = (uint32_t)getpid();
        rec->probe_at_ms = c->now;
    } else {
        if (rec->breaker != POLICY_BREAKER_CLOSED || rec->probe_next_ms > c->now)
            return 0;
        rec->probe_next_ms = c->now + c->interval_ms;
    }
    return 1;
}

static void takeover_done(void *data, sl_err_t err, int changed, const state_endpoint_rec_t *rec)
{
    (void)err; /* logged by state/; nothing changed */
    pool_endpoint_t *ep = data;
    ep->health.claiming = 0;
    if (!changed)
        return;
    ep->health.shared = *rec;
    sl_log_warn("endpoint %s/%s: took over a stale half-open probe", ep->net->conf->name, ep->conf->id);
    pool_probe_send_breaker(ep);
}

/* Health probes are this host's (each host ranks from where it is): an LMDB
 * claim. A stale half-open probe is everyone's: a shared transition, whose
 * winner sends the probe. Returns 1 if a health probe was claimed. */
static int claim(pool_endpoint_t *ep, uint64_t now, int takeover)
{
    /* a probe still within its attempt deadline is never taken over: one
     * probe at a time, whatever the two settings say */
    const pool_network_conf_t *conf = ep->net->conf;
    uint32_t stale_ms = conf->breaker.probe_timeout_ms;
    if (stale_ms <= conf->timeouts.attempt_ms)
        stale_ms = conf->timeouts.attempt_ms + 1000;
    claim_ctx_t c = {now, conf->ranking.probe_interval_ms, stale_ms, takeover};
    if (takeover) {
        if (!ep->health.claiming) {
            ep->health.claiming = 1;
            state_endpoint_transition(ep->net->pool->state, ep->health.key, claim_cb, &c, sizeof(c), takeover_done, ep);
        }
        return 0;
    }
    int changed = 0;
    state_endpoint_rec_t rec;
    if (state_endpoint_update_local(ep->net->pool->state, ep->health.key, claim_cb, &c, &changed, &rec) != SL_OK ||
        !changed)
        return 0;
    ep->health.shared = rec;
    return 1;
}

void pool_probe_send_breaker(pool_endpoint_t *ep)
{
    if (!ep->health.probing)
        probe_send(ep, POOL_PROBE_BREAKER);
}

void pool_probe_tick(pool_endpoint_t *ep, uint64_t now)
{
    pool_health_t *h = &ep->health;
    const state_endpoint_rec_t *r = &h->shared;
    if (h->probing)
        return;
    policy_breaker_t b = {(policy_breaker_state_t)r->breaker, r->since_ms, r->cooldown_ms, r->opened_at_ms};
    if (policy_breaker_probe_due(&b, now)) {
        char reason[96];
        snprintf(reason, sizeof(reason), "cooldown of %u ms over: one probe", b.cooldown_ms);
        pool_health_breaker_move_then(ep, POLICY_BREAKER_OPEN, POLICY_BREAKER_HALF_OPEN, reason, POOL_THEN_PROBE);
    } else if (b.state == POLICY_BREAKER_HALF_OPEN &&
               now >= r->probe_at_ms + ep->net->conf->breaker.probe_timeout_ms) {
        claim(ep, now, 1);
    } else if (b.state == POLICY_BREAKER_CLOSED && ep->net->conf->ranking.probe_interval_ms != 0 &&
               now >= r->probe_next_ms && !r->drained && now >= r->rate_limited_until_ms) {
        /* not while rate-limited (it would spend the quota we wait for) or drained */
        if (claim(ep, now, 0))
            probe_send(ep, POOL_PROBE_HEALTH);
    }
}
