/* pool/pool_probe.c: probes, one prober for all workers.
 *
 * Two kinds share one exchange per endpoint:
 *  - the health probe: every ranking.probe_interval_ms, eth_blockNumber (or
 *    getSlot) to each endpoint whose breaker is closed; its latency and the
 *    head it reports feed the ranking. The worker that moves the shared
 *    probe_next_ms forward (compare-and-set) is the one that probes; with
 *    cluster:, on the host that holds the endpoint's lease only, which
 *    shares the results with the others (pool_lease.c).
 *  - the breaker probe: when an open breaker's cooldown is over, the worker
 *    that wins OPEN -> HALF_OPEN sends the one probe that decides whether it
 *    closes again. A claim whose owner died is taken over after
 *    breaker.probe_timeout_ms.
 *  - the confirm probe: a health probe sent at once when a call ends with a
 *    request-shaped failure nobody settled (pool_held.c), not claimed: the
 *    endpoint's breaker hears of that failure only through this probe.
 * Probes are calls: a health probe that times out, resets, gets a 5xx or an
 * unreadable answer counts toward the breaker like any call (the prober's
 * window, and the shared count of probes failed in a row: breaker.consecutive
 * of them open it, whichever workers sent them), and one refused with a rate
 * limit (429, 402, or a rate-limit error in the body) marks the endpoint
 * rate-limited. A probe sluice could not make for want of its own resources
 * counts for nothing. */
#include <string.h>
#include <unistd.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "policy/verdict.h"
#include "pool/pool_net.h"

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
        (void)pool_chain_head_write(rec, c->head, 1, c->now); /* its eth_blockNumber: the endpoint's head */
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
    probe_result_ctx_t c = {sl_shared_ms(), ok, head, latency_us, {0}};
    int changed = 0;
    if (state_endpoint_update(ep->net->pool->state, ep->health.key, probe_result_cb, &c, &changed) == SL_OK &&
        changed) {
        ep->health.shared = c.result;
        pool_lease_publish(ep, &c.result, c.now); /* cluster: the other hosts apply it */
    }
}

/* What a probe's answer says about its endpoint. */
typedef enum probe_verdict {
    PROBE_OK,                     /* a head came back */
    PROBE_RATE_LIMITED,           /* refused with a rate limit: alive, but mark it */
    PROBE_FAILED,                 /* a failure of the endpoint's, as a call's would be */
    PROBE_LOCAL,                  /* sluice could not make it: says nothing */
} probe_verdict_t;

typedef struct probe_result {
    probe_verdict_t verdict;
    state_outcome_t outcome;      /* PROBE_FAILED: how it counts */
    uint64_t head;                /* PROBE_OK */
    uint32_t retry_ms;            /* PROBE_RATE_LIMITED: Retry-After or the body's hint, 0 if none */
    char reason[160];
} probe_result_t;

/* Classifies a probe that got an HTTP answer: the statuses and bodies a
 * call's answer would be judged by (policy/verdict.h), so a 429 or an
 * in-body rate limit is a rate limit and a 5xx a failure. */
static void probe_judge_answer(const pool_endpoint_t *ep, const pool_exchange_t *ex, probe_result_t *r)
{
    const char *body = pool_exchange_bytes(ex);
    size_t len = pool_exchange_len(ex);
    int status = ex->head.status;
    policy_chain_t chain = ep->net->conf->chain;
    policy_verdict_t v = policy_verdict_http(chain, status);
    wire_envelope_t env;
    wire_rpc_error_t err;
    int rpc_error = wire_envelope_scan(body, len, &env) == SL_OK && env.error.len != 0 &&
                    wire_envelope_error(body, env.error, &err) == SL_OK;
    if (rpc_error) {
        uint32_t hint = 0;
        policy_verdict_t bv = policy_verdict_rpc_error(chain, NULL, status, &err, body, &hint);
        if (bv == POLICY_VERDICT_RATE_LIMITED || v == POLICY_VERDICT_SUCCESS)
            v = bv;
        r->retry_ms = hint;
    }
    if (v == POLICY_VERDICT_RATE_LIMITED) {
        r->verdict = PROBE_RATE_LIMITED;
        if (r->retry_ms == 0)
            r->retry_ms = pool_http_retry_after_ms(&ex->head);
        snprintf(r->reason, sizeof(r->reason), "probe refused with a rate limit (HTTP %d)", status);
        return;
    }
    if (status >= 200 && status < 300 && pool_rank_parse_head(body, len, &r->head)) {
        r->verdict = PROBE_OK;
        snprintf(r->reason, sizeof(r->reason), "probe answered in %u ms", ex->latency_us / 1000);
        return;
    }
    r->verdict = PROBE_FAILED;
    r->outcome = status >= 200 && status < 300 && !rpc_error ? STATE_OUTCOME_MALFORMED
                                                                      : STATE_OUTCOME_HTTP_ERROR;
    snprintf(r->reason, sizeof(r->reason), "probe failed: HTTP %d or no result", status);
}

static void probe_judge(const pool_endpoint_t *ep, const pool_exchange_t *ex, pool_fail_t fail, probe_result_t *r)
{
    memset(r, 0, sizeof(*r));
    if (fail == POOL_FAIL_NONE) {
        probe_judge_answer(ep, ex, r);
        return;
    }
    r->verdict = fail == POOL_FAIL_LOCAL ? PROBE_LOCAL : PROBE_FAILED;
    r->outcome = pool_fail_outcome(fail);
    snprintf(r->reason, sizeof(r->reason), "probe failed: %s", pool_fail_str(fail));
}

/* A health probe failed: it counts toward the breaker as a call does, and
 * breaker.consecutive probes failed in a row (counted in the shared record,
 * whichever workers probed) open it. */
static void probe_failed(pool_endpoint_t *ep, const probe_result_t *r, uint32_t latency_us)
{
    pool_health_record(ep, r->outcome, latency_us, 0);
    pool_demote_note(ep, r->outcome, 0); /* a probe is a cheap read */
    const policy_breaker_conf_t *conf = &ep->net->conf->breaker;
    const state_endpoint_rec_t *rec = &ep->health.shared;
    if (conf->consecutive == 0 || rec->breaker != POLICY_BREAKER_CLOSED || rec->probe_failures < conf->consecutive)
        return;
    char reason[160];
    snprintf(reason, sizeof(reason), "%u probes failed in a row (last: %s)", rec->probe_failures,
             state_outcome_name(r->outcome));
    if (pool_health_breaker_move(ep, POLICY_BREAKER_CLOSED, POLICY_BREAKER_OPEN, reason))
        policy_window_reset(&ep->health.window);
}

/* Applies a probe's result; kind is POOL_PROBE_HEALTH or POOL_PROBE_BREAKER. */
static void probe_apply(pool_endpoint_t *ep, int kind, const probe_result_t *r, uint32_t latency_us)
{
    if (r->verdict == PROBE_LOCAL) {
        /* no verdict: a half-open claim left as it is is taken over after
         * breaker.probe_timeout_ms, by this worker or another */
        sl_log_warn("endpoint %s/%s: %s (sluice's own resources; not counted against the endpoint)",
                    ep->net->conf->name, ep->conf->id, r->reason);
        return;
    }
    if (r->verdict != PROBE_RATE_LIMITED)
        record_probe(ep, r->verdict == PROBE_OK, r->head, latency_us);
    if (r->verdict == PROBE_RATE_LIMITED) {
        pool_health_record(ep, STATE_OUTCOME_RATE_LIMITED, latency_us, 0);
        pool_health_rate_limited(ep, r->retry_ms);
    }
    if (kind == POOL_PROBE_BREAKER) {
        /* a rate-limited endpoint is up: the breaker closes, the mark keeps traffic off */
        int up = r->verdict != PROBE_FAILED;
        if (up)
            policy_window_reset(&ep->health.window);
        pool_health_breaker_move(ep, POLICY_BREAKER_HALF_OPEN, up ? POLICY_BREAKER_CLOSED : POLICY_BREAKER_OPEN,
                                 r->reason);
    } else if (r->verdict == PROBE_FAILED) {
        probe_failed(ep, r, latency_us);
    }
}

static void on_probe_done(pool_exchange_t *ex)
{
    pool_endpoint_t *ep = ex->data;
    pool_health_t *h = &ep->health;
    int kind = h->probing;
    h->probing = POOL_PROBE_NONE;
    probe_result_t r;
    probe_judge(ep, ex, ex->fail, &r);
    pool_exchange_body_dispose(ex);
    probe_apply(ep, kind, &r, ex->latency_us);
}

static int probe_send(pool_endpoint_t *ep, int kind)
{
    int solana = ep->net->conf->chain == POLICY_CHAIN_SOLANA;
    pool_fail_t fail = ep->net->pool->t.ops->start(&ep->health.probe, &ep->link, solana ? sol_probe : eth_probe,
                                                   solana ? sizeof(sol_probe) - 1 : sizeof(eth_probe) - 1, 0,
                                                   on_probe_done, ep);
    if (fail == POOL_FAIL_NONE) {
        ep->health.probing = kind;
        return 1;
    }
    probe_result_t r;
    probe_judge(ep, NULL, fail, &r);
    probe_apply(ep, kind, &r, 0);
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

void pool_probe_confirm(pool_endpoint_t *ep)
{
    const state_endpoint_rec_t *r = &ep->health.shared;
    if (ep->health.probing || r->breaker != POLICY_BREAKER_CLOSED || r->drained ||
        sl_shared_ms() < r->rate_limited_until_ms)
        return;
    probe_send(ep, POOL_PROBE_HEALTH);
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
        /* not while rate-limited (it would spend the quota we wait for) or drained;
         * with cluster:, only on the host holding the endpoint's lease */
        if (pool_lease_does_job(ep, now) && claim(ep, now, 0)) {
            pool_lease_claimed(ep, now);
            probe_send(ep, POOL_PROBE_HEALTH);
        }
    }
}
