/* pool/pool_consensus.c: compared reads (consensus: on a network).
 *
 * A single call (not a batch) of a method listed in consensus.methods is
 * taken by this satellite at its first gate: instead of the one attempt the
 * loop was about to send, the same body goes at once to `of` endpoints, the
 * plan's best (the loop's endpoint first), each through the other rows'
 * gates as a hedge is (chain fitness, credits: no waiting), and the call
 * waits (LEASING) until the answers decide it (policy_consensus_decide):
 *   - an answer (a result, or a deterministic error such as a revert) is a
 *     vote; `quorum` equal votes that no rival can still match answer the
 *     call at once and the exchanges still out are cancelled;
 *   - a transient failure (transport, HTTP status, rate limit, a node
 *     behind) is no vote: the attempt is judged as any other (the endpoint's
 *     record), and another endpoint takes its place while one is left and
 *     the deadline allows;
 *   - no quorum possible any more: POOL_OUTCOME_NO_CONSENSUS, with the
 *     groups of endpoints per distinct answer (pool_call_consensus_groups);
 *     no vote at all: the usual failure (timeout, upstream error).
 * An endpoint outvoted by the quorum counts a disagreement (its score,
 * policy_consensus_disagreed) and gets an endpoint_disagreed event at most
 * once per POLICY_CONSENSUS_REPORT_MS from this worker. Such a call is never
 * hedged (the loop's started hook, which arms hedges, never runs for it).
 * A batch member is not compared: it goes with its batch like any read
 * (docs/guide/chain.md, "Consensus").
 * A method dispatched max (networks.<n>.methods.<m>: { dispatch: max, of: N })
 * fans out the same way to N endpoints, but waits for every answer (or its
 * failure) and gives the highest hex quantity (policy_consensus_max): the
 * safe nonce; nobody is outvoted. */
#include <stdlib.h>
#include <string.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "pool/pool_call_int.h"

#define REPLACE_MIN_LEFT_MS 20    /* a replacement needs at least this much of the deadline left */

/* One exchange of the fan-out. */
typedef struct cons_ex {
    pool_exchange_t ex;
    int16_t ep;
    uint8_t active;
} cons_ex_t;

/* One vote: an endpoint's answer object, kept with the call. */
typedef struct cons_vote {
    int16_t ep;
    pool_exchange_t *ex;          /* the exchange it came by */
    const char *obj;              /* the response object (in a body the call keeps) */
    uint32_t len;
    wire_span_t id;               /* its id, relative to obj */
    policy_verdict_t verdict;     /* SUCCESS or DETERMINISTIC */
} cons_vote_t;

struct pool_consensus_run {
    cons_ex_t *ex[POOL_MAX_ENDPOINTS]; /* each endpoint is asked once */
    size_t nex;
    uint32_t inflight;
    cons_vote_t votes[POOL_MAX_ENDPOINTS];
    policy_consensus_vote_t pv[POOL_MAX_ENDPOINTS];
    size_t nvotes;
    uint32_t failed, timeouts, rate_limited; /* attempts that gave no vote */
    uint8_t ended;                /* decided (or given up): late answers are ignored */
    const char *body;             /* the upstream body (the client's bytes or call->req) */
    size_t len;
};

static void row_start(pool_call_t *call)
{
    const pool_network_conf_t *c = call->net->conf;
    if (call->batch || call->carrier || call->nitems != 1)
        return;
    const pool_item_t *it = &call->items[0];
    if (it->name != NULL && it->method->retry_safe && it->method->dispatch == POLICY_DISPATCH_MAX &&
        it->method->of >= 2) {
        call->consensus.on = call->consensus.max = 1;
        call->consensus.of = it->method->of;
        return;
    }
    if (c->consensus.nmethods == 0 || c->consensus.of < 2)
        return;
    call->consensus.on = it->name != NULL && it->method->retry_safe &&
                         policy_consensus_applies(&c->consensus, it->name, it->name_len);
    call->consensus.of = (uint8_t)(c->consensus.of > 255 ? 255 : c->consensus.of);
}

/* ---- the votes ---- */

/* The answer of a finished exchange as a vote; 0 (no vote) if it is none. */
static int read_vote(pool_call_t *call, pool_exchange_t *ex, const char *body, size_t len, cons_vote_t *v,
                     policy_consensus_vote_t *pv)
{
    const pool_item_t *it = &call->items[0];
    wire_envelope_t env;
    if (ex->head.status < 200 || ex->head.status >= 300 || wire_envelope_scan(body, len, &env) != SL_OK ||
        (env.result.len != 0) == (env.error.len != 0))
        return 0;
    static const char zero[] = "0";
    int own = it->id.len != 0 && !call->renumbered;
    if (!(own ? wire_json_id_equal(body, env.id, it->raw, it->id)
              : wire_json_id_equal(body, env.id, zero, (wire_span_t){0, 1})))
        return 0;
    v->verdict = POLICY_VERDICT_SUCCESS;
    if (env.error.len != 0) {
        wire_rpc_error_t err;
        uint32_t retry_ms = 0;
        if (wire_envelope_error(body, env.error, &err) != SL_OK)
            return 0;
        v->verdict = policy_verdict_rpc_error(call->net->conf->chain, it->method, ex->head.status, &err, body,
                                              &retry_ms);
        if (v->verdict != POLICY_VERDICT_DETERMINISTIC)
            return 0;
    } else if (wire_json_kind(body, env.result) == WIRE_JSON_NULL &&
               pool_chain_null_is_behind(call, ex->link->index)) {
        return 0; /* another endpoint has the block this one lacks */
    }
    v->ep = (int16_t)ex->link->index;
    v->ex = ex;
    v->obj = body;
    v->len = (uint32_t)len;
    v->id = env.id;
    *pv = (policy_consensus_vote_t){.buf = body, .value = env.error.len != 0 ? env.error : env.result,
                                    .is_error = env.error.len != 0};
    return 1;
}

/* An HTTP answer that is no vote: what the endpoint's record says of it. */
static state_outcome_t no_vote_outcome(pool_call_t *call, pool_exchange_t *ex, const char *body, size_t len)
{
    wire_envelope_t env;
    wire_rpc_error_t err;
    uint32_t retry_ms = 0;
    policy_verdict_t v = policy_verdict_http(call->net->conf->chain, ex->head.status);
    if (v == POLICY_VERDICT_SUCCESS) {
        if (wire_envelope_scan(body, len, &env) != SL_OK || env.error.len == 0 ||
            wire_envelope_error(body, env.error, &err) != SL_OK)
            return env.result.len != 0 ? STATE_OUTCOME_MISSING_DATA : STATE_OUTCOME_MALFORMED;
        v = policy_verdict_rpc_error(call->net->conf->chain, call->items[0].method, ex->head.status, &err, body,
                                     &retry_ms);
    }
    switch (v) {
    case POLICY_VERDICT_RATE_LIMITED:
        pool_health_rate_limited(pool_link_endpoint(ex->link), retry_ms);
        return STATE_OUTCOME_RATE_LIMITED;
    case POLICY_VERDICT_MISSING_DATA:
        return STATE_OUTCOME_MISSING_DATA;
    case POLICY_VERDICT_UNSUPPORTED:
        return STATE_OUTCOME_UNSUPPORTED;
    case POLICY_VERDICT_SUCCESS:
    case POLICY_VERDICT_DETERMINISTIC:
    case POLICY_VERDICT_TRANSIENT:
    case POLICY_VERDICT_ALREADY_KNOWN:
    case POLICY_VERDICT_NONCE_TOO_LOW:
    case POLICY_VERDICT_COUNT:
        break;
    }
    return ex->head.status >= 200 && ex->head.status < 300 ? STATE_OUTCOME_MALFORMED : STATE_OUTCOME_HTTP_ERROR;
}

/* ---- reporting ---- */

static void report_disagreed(pool_call_t *call, pool_endpoint_t *e, uint32_t agreeing, uint32_t answered)
{
    pool_network_t *net = call->net;
    const pool_item_t *it = &call->items[0];
    POOL_STAT_ADD(e, consensus_disagreed, 1);
    policy_consensus_disagreed(&e->disagreed, &e->disagreed_at_ms, sl_now_ms(), 1);
    /* the log line and the event at most once per interval: a liar floods neither */
    int due = policy_consensus_report_due(&e->disagree_reported_ms, sl_now_ms());
    sl_log_level_t level = due ? SL_LOG_WARN : SL_LOG_DEBUG;
    if (sl_log_enabled(level))
        sl_log(level, "endpoint %s/%s: its answer to %.*s disagreed with %u of %u endpoints", net->conf->name,
               e->conf->id, (int)it->name_len, it->name, agreeing, answered);
    if (net->pool->state == NULL || !due)
        return;
    state_event_t ev;
    state_event_init(&ev, STATE_EVENT_ENDPOINT_DISAGREED, net->conf->name, e->conf->id, sl_shared_ms());
    snprintf(ev.reason, sizeof(ev.reason), "%.*s: its answer disagreed with %u of %u endpoints that answered",
             (int)(it->name_len > 128 ? 128 : it->name_len), it->name, agreeing, answered);
    ev.count = e->disagreed;
    if (state_event_append(net->pool->state, &ev) != SL_OK)
        sl_log_warn("endpoint %s/%s: could not record endpoint_disagreed", net->conf->name, e->conf->id);
}

/* ---- the end ---- */

static void cancel_rest(pool_call_t *call)
{
    pool_consensus_run_t *run = call->consensus.run;
    for (size_t i = 0; i < run->nex; i++) {
        cons_ex_t *x = run->ex[i];
        if (!x->active)
            continue;
        uint32_t waited = (uint32_t)(sl_now_us() - x->ex.started_us);
        x->active = 0;
        run->inflight--;
        pool_call_attempt_cancel(call, &x->ex);
        pool_call_log_attempt(call, x->ep, POOL_FAIL_NONE, 0, waited, POOL_ATTEMPT_CANCELLED | POOL_ATTEMPT_FANOUT);
    }
}

static void answer_with(pool_call_t *call, const policy_consensus_outcome_t *o)
{
    pool_consensus_run_t *run = call->consensus.run;
    pool_item_t *it = &call->items[0];
    const cons_vote_t *w = &run->votes[o->winner];
    pool_item_answer_set(it, &(pool_item_answer_t){.verdict = w->verdict,
                                                    .answer = w->obj,
                                                    .answer_len = w->len,
                                                    .answer_id = w->id,
                                                    .endpoint = w->ep});
    (void)pool_call_done(call, w->ex); /* the rows see the answer applied (a head answer feeds the chain view) */
    POOL_STAT_ADD(&call->net->endpoints[w->ep], consensus_agreed, 1);
    uint32_t agreeing = o->group_size[o->group_of[o->winner]];
    for (size_t i = 0; i < run->nvotes; i++)
        if (o->minority & ((uint64_t)1 << i))
            report_disagreed(call, &call->net->endpoints[run->votes[i].ep], agreeing, (uint32_t)run->nvotes);
}

static void give_up(pool_call_t *call)
{
    pool_consensus_run_t *run = call->consensus.run;
    pool_outcome_t why = POOL_OUTCOME_NO_CONSENSUS;
    if (run->nvotes == 0)
        why = run->rate_limited > 0 && run->rate_limited == run->failed ? POOL_OUTCOME_RATE_LIMITED
              : run->failed > 0 && run->timeouts == run->failed         ? POOL_OUTCOME_TIMEOUT
              : run->failed > 0                                          ? POOL_OUTCOME_UPSTREAM_ERROR
                                                                         : POOL_OUTCOME_UNAVAILABLE;
    else
        POOL_STAT_ADD(&call->net->endpoints[run->votes[0].ep], consensus_none, 1);
    if (why == POOL_OUTCOME_NO_CONSENSUS)
        sl_log_debug("network %s: no consensus on %.*s among %zu answers", call->net->conf->name,
                     (int)call->items[0].name_len, call->items[0].name, run->nvotes);
    pool_answer_exhaust(call, why);
}

/* dispatch: max, every answer in: the highest quantity (or the first vote,
 * if none is one); no vote at all fails as any call. */
static void answer_max(pool_call_t *call)
{
    pool_consensus_run_t *run = call->consensus.run;
    if (run->nvotes == 0) {
        give_up(call);
        return;
    }
    int best = policy_consensus_max(run->pv, run->nvotes);
    const cons_vote_t *w = &run->votes[best < 0 ? 0 : best];
    pool_item_answer_set(&call->items[0], &(pool_item_answer_t){.verdict = w->verdict,
                                                                .answer = w->obj,
                                                                .answer_len = w->len,
                                                                .answer_id = w->id,
                                                                .endpoint = w->ep});
    (void)pool_call_done(call, w->ex);
}

/* ---- the fan-out ---- */

static void on_ex_done(pool_exchange_t *ex);

/* Starts one more exchange at the plan's next endpoint that every gate lets
 * through; 0 if none is left. */
static int start_one(pool_call_t *call, int ep)
{
    pool_consensus_run_t *run = call->consensus.run;
    for (; ep >= 0; ep = pool_call_plan_next(call)) {
        call->consensus.fanning = 1;
        pool_gate_t g = pool_call_gate(call, ep, 0);
        call->consensus.fanning = 0;
        call->tried[ep] = 1;
        if (g != POOL_GATE_GO || run->nex >= POOL_MAX_ENDPOINTS)
            continue;
        cons_ex_t *x = sl_xcalloc(1, sizeof(*x));
        run->ex[run->nex++] = x;
        x->ep = (int16_t)ep;
        pool_fail_t fail = pool_call_attempt_start(call, &x->ex, ep, run->body, run->len, 0, on_ex_done);
        if (fail == POOL_FAIL_NONE) {
            x->active = 1;
            run->inflight++;
            pool_hedge_count(call->net, 0);
            return 1;
        }
        run->failed++;
        pool_call_start_failed(call, ep, &x->ex, fail);
    }
    return 0;
}

/* Judges the votes so far: the call answered (or given up) and the loop
 * told, or more answers awaited (replacing a lost one if it may). */
static void judge(pool_call_t *call)
{
    pool_consensus_run_t *run = call->consensus.run;
    const policy_consensus_conf_t *cc = &call->net->conf->consensus;
    uint64_t now = sl_now_ms();
    if (call->items[0].state == POOL_ITEM_PENDING && run->nvotes + run->inflight < call->consensus.of &&
        call->deadline_ms > now + REPLACE_MIN_LEFT_MS && call->attempts < call->net->max_attempts)
        start_one(call, pool_call_plan_next(call)); /* a failure's place, while an endpoint is left (the
                                                     * call was not hopeless with its answer to come) */
    policy_consensus_outcome_t o = {0};
    if (!call->consensus.max)
        policy_consensus_decide(run->pv, run->nvotes, run->inflight, cc->quorum, &o);
    if (call->items[0].state == POOL_ITEM_PENDING && !o.decided && !o.impossible && run->inflight > 0)
        return; /* dispatch: max waits for every answer */
    run->ended = 1;
    cancel_rest(call);
    if (call->items[0].state == POOL_ITEM_PENDING) {
        if (call->consensus.max)
            answer_max(call);
        else if (o.decided)
            answer_with(call, &o);
        else
            give_up(call);
    }
    pool_call_next(call); /* nothing pending: the call settles */
}

static void on_ex_done(pool_exchange_t *ex)
{
    pool_call_t *call = ex->data;
    pool_consensus_run_t *run = call->consensus.run;
    cons_ex_t *x = H2O_STRUCT_FROM_MEMBER(cons_ex_t, ex, ex);
    x->active = 0;
    run->inflight--;
    pool_endpoint_t *e = pool_link_endpoint(ex->link);
    if (ex->fail != POOL_FAIL_NONE) {
        run->failed++;
        run->timeouts += (pool_fail_flags(ex->fail) & POOL_FAIL_F_TIMEOUT) != 0;
        call->nsent = 1; /* the judge reads the one item */
        call->sent[0] = 0;
        if (pool_attempt_judge(call, ex))
            pool_call_log_attempt(call, x->ep, ex->fail, 0, ex->latency_us, POOL_ATTEMPT_FANOUT);
        pool_exchange_body_dispose(ex);
    } else {
        pool_call_log_attempt(call, x->ep, POOL_FAIL_NONE, ex->head.status, ex->latency_us, POOL_ATTEMPT_FANOUT);
        pool_call_keep_exchange(call, ex);
        const pool_body_t *b = &call->bodies[call->nbodies - 1];
        const char *body = pool_body_base(b);
        size_t len = pool_body_len(b);
        if (read_vote(call, ex, body, len, &run->votes[run->nvotes], &run->pv[run->nvotes])) {
            run->nvotes++;
            pool_health_record(e, STATE_OUTCOME_OK, ex->latency_us, 0);
        } else {
            state_outcome_t out = no_vote_outcome(call, ex, body, len);
            run->failed++;
            run->rate_limited += out == STATE_OUTCOME_RATE_LIMITED;
            pool_health_record(e, out, ex->latency_us, 0);
        }
    }
    judge(call);
}

/* Lets go of a round's exchanges (none in flight) and failures. */
static void run_clear(pool_consensus_run_t *run)
{
    for (size_t i = 0; i < run->nex; i++)
        free(run->ex[i]);
    memset(run, 0, sizeof(*run));
}

/* The loop's first attempt of a round: the fan-out goes instead (the loop's endpoint
 * first), and the call waits for its votes. */
static pool_gate_t row_gate(pool_call_t *call, int ep, int may_wait)
{
    (void)may_wait;
    if (!call->consensus.on || call->consensus.fanning)
        return POOL_GATE_GO;
    pool_consensus_run_t *run = call->consensus.run;
    if (run != NULL && (run->nvotes != 0 || run->inflight != 0)) { /* cannot be: judge settles it first */
        call->tried[ep] = 1;
        return POOL_GATE_SKIP;
    }
    if (run != NULL) /* a later round: nothing could be sent in the last one */
        run_clear(run);
    else
        run = call->consensus.run = sl_xcalloc(1, sizeof(*run));
    int own = !call->batch && call->items[0].id.len != 0 && !call->renumbered; /* as the loop builds it */
    run->body = own ? call->items[0].raw : call->req.base;
    run->len = own ? call->items[0].raw_len : call->req.len;
    uint32_t of = call->consensus.of;
    int next = ep; /* the loop's endpoint first (of is at least 2) */
    while (start_one(call, next) && run->inflight < of)
        next = pool_call_plan_next(call);
    if (run->inflight == 0) { /* nothing could be sent: the loop ends the call as for any */
        run->ended = 1;
        for (size_t i = 0; i < call->net->nendpoints; i++)
            call->tried[i] = 1;
        return POOL_GATE_SKIP;
    }
    sl_log_debug("network %s: %.*s compared across %u endpoints", call->net->conf->name,
                 (int)call->items[0].name_len, call->items[0].name, run->inflight);
    return POOL_GATE_WAIT;
}

static void row_stop(pool_call_t *call, pool_call_stop_t why)
{
    (void)why;
    pool_consensus_run_t *run = call->consensus.run;
    if (run == NULL)
        return;
    for (size_t i = 0; i < run->nex; i++)
        if (run->ex[i]->active) {
            run->ex[i]->active = 0;
            pool_call_attempt_cancel(call, &run->ex[i]->ex);
        }
    run->inflight = 0;
    if (why != POOL_CALL_RELEASED)
        return; /* the groups stay readable until the release */
    run_clear(run);
    free(run);
    call->consensus.run = NULL;
}

static size_t row_bytes(const pool_call_t *call)
{
    const pool_consensus_run_t *run = call->consensus.run;
    size_t n = 0;
    for (size_t i = 0; run != NULL && i < run->nex; i++)
        n += run->ex[i]->ex.charged; /* answers being read */
    return n;
}

size_t pool_call_consensus_groups(const pool_call_t *call, uint64_t *masks, size_t cap)
{
    const pool_consensus_run_t *run = call->consensus.run;
    if (run == NULL || run->nvotes == 0)
        return 0;
    policy_consensus_outcome_t o;
    policy_consensus_decide(run->pv, run->nvotes, 0, call->net->conf->consensus.quorum, &o);
    for (size_t g = 0; g < o.ngroups && g < cap; g++)
        masks[g] = 0;
    for (size_t i = 0; i < run->nvotes; i++)
        if (o.group_of[i] < cap)
            masks[o.group_of[i]] |= (uint64_t)1 << run->votes[i].ep;
    return o.ngroups;
}

const pool_call_row_t pool_consensus_row = {
    .name = "consensus",
    .start = row_start,
    .gate = row_gate,
    .stop = row_stop,
    .bytes = row_bytes,
};
