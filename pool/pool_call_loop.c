/* pool/pool_call_loop.c: the fallback attempt loop of one call.
 *
 * Endpoints are tried in plan order (a pinned endpoint first, then the
 * ranking), each once per round; when a round ends with items still pending,
 * another opens after a full-jitter backoff while attempts and time remain.
 * One free retry is allowed when a kept-alive connection turned out to be
 * closed by the upstream before it answered anything (the classic keep-alive
 * race: not the endpoint's fault). Each attempt carries only the items still
 * pending, so a batch member answered by the first endpoint is never asked
 * again. A failure that may be the request's own doing (policy/shape.h) is
 * held back from the endpoint's record until the next endpoint's attempt
 * settles it (pool_held.c). The call's states and satellites: pool_call.c. */
#include <string.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "policy/blockref.h"
#include "policy/retry.h"
#include "pool/pool_call_int.h"

static int item_is_write(const pool_item_t *it)
{
    return !it->method->retry_safe;
}

static size_t count_pending(const pool_call_t *call)
{
    size_t n = 0;
    for (size_t i = 0; i < call->nitems; i++)
        n += call->items[i].state == POOL_ITEM_PENDING;
    return n;
}

/* Remembers when a rate-limited endpoint frees up: if nothing is left, the
 * answer is a 429 whose Retry-After says when. */
static void note_unusable(pool_call_t *call, pool_endpoint_t *ep, uint64_t now)
{
    const state_endpoint_rec_t *r = &ep->health.shared;
    if (r->rate_limited_until_ms > now && r->breaker == POLICY_BREAKER_CLOSED && !r->drained) {
        if (call->rate_limited_until_ms == 0 || r->rate_limited_until_ms < call->rate_limited_until_ms)
            call->rate_limited_until_ms = r->rate_limited_until_ms;
    }
}

int pool_call_scope_admits(const pool_call_t *call, const pool_endpoint_t *ep)
{
    const policy_method_scope_t *s = &ep->conf->methods;
    if (s->allow == NULL && s->deny == NULL)
        return 1;
    for (size_t i = 0; i < call->nitems; i++) {
        const pool_item_t *it = &call->items[i];
        if (it->state == POOL_ITEM_PENDING && it->name != NULL && !policy_method_scope_admits(s, it->name, it->name_len))
            return 0;
    }
    return 1;
}

/* Where endpoint ep goes in this call's plan: 0 first, 1 after, -1 never
 * (a deep-history read: archive endpoints, then unknown ones). */
static int archive_tier(const pool_call_t *call, const pool_endpoint_t *ep)
{
    return policy_blockref_archive_tier(ep->conf->archive, call->chain.deep);
}

/* Where endpoint ep goes in the plan: its archive tier, after every such
 * tier if it said it does not serve this call (pool_learn.c); -1 never. */
static int plan_tier(pool_call_t *call, pool_endpoint_t *ep)
{
    int t = archive_tier(call, ep);
    return t < 0 ? t : pool_learn_lacks(call, ep) ? t + 2 : t;
}

/* 1 if the plan may send this call's next attempt to endpoint i now. */
static int candidate(pool_call_t *call, size_t i, uint64_t now)
{
    pool_endpoint_t *ep = &call->net->endpoints[i];
    if (call->tried[i] || !pool_call_scope_admits(call, ep) || archive_tier(call, ep) < 0)
        return 0;
    if (!pool_health_usable(ep, now))
        return 0;
    return ep->link.inflight < ep->max_inflight;
}

/* The next endpoint to try, or -1: the pinned endpoint first (a confirmation
 * poll of a transaction it accepted), then the ranked plan. Open breakers,
 * drains, rate-limit marks and full endpoints are skipped. */
int pool_call_plan_next(pool_call_t *call)
{
    pool_network_t *net = call->net;
    if (call->retry_same >= 0) {
        int ep = call->retry_same;
        call->retry_same = -1;
        return ep;
    }
    uint64_t now = sl_shared_ms();
    if (call->pinned >= 0 && candidate(call, (size_t)call->pinned, now))
        return call->pinned;
    int best = -1, best_tier = 4; /* the first in ranking order of the lowest tier */
    for (size_t k = 0; k < net->norder && best_tier > 0; k++) {
        if (!candidate(call, net->order[k], now))
            continue;
        int t = plan_tier(call, &net->endpoints[net->order[k]]);
        if (t >= 0 && t < best_tier) {
            best = net->order[k];
            best_tier = t;
        }
    }
    if (best >= 0)
        return best;
    /* endpoints the ranking has not seen yet (or without shared state) */
    for (size_t i = 0; i < net->nendpoints; i++) {
        if (candidate(call, i, now))
            return (int)i;
        if (!call->tried[i] && !pool_health_usable(&net->endpoints[i], now))
            note_unusable(call, &net->endpoints[i], now);
    }
    return -1;
}

static void on_backoff(pool_delay_t *d)
{
    pool_call_next(H2O_STRUCT_FROM_MEMBER(pool_call_t, backoff, d));
}

/* After a round over every endpoint: waits (full jitter) and opens another
 * round, if attempts, time and retryable endpoints remain. Returns 1 if a
 * round was scheduled. */
static int next_round(pool_call_t *call)
{
    pool_network_t *net = call->net;
    if (call->attempts == 0 || call->attempts >= net->max_attempts)
        return 0;
    int any = 0;
    for (size_t i = 0; i < net->nendpoints; i++)
        any |= !call->no_retry[i] && pool_health_usable(&net->endpoints[i], sl_shared_ms()) &&
               pool_call_scope_admits(call, &net->endpoints[i]) && archive_tier(call, &net->endpoints[i]) >= 0;
    if (!any)
        return 0;
    uint32_t wait = policy_retry_backoff_ms(net->conf->backoff_base_ms, net->conf->backoff_max_ms, ++call->round,
                                            (uint32_t)random());
    uint64_t left = call->deadline_ms > sl_now_ms() ? call->deadline_ms - sl_now_ms() : 0;
    if (wait + 10 >= left)
        return 0;
    for (size_t i = 0; i < net->nendpoints; i++)
        call->tried[i] = call->no_retry[i];
    pool_delay_add(&net->pool->t.delays, &call->backoff, wait, on_backoff);
    return 1;
}

/* Nothing was tried: the answer says why (rate limits first: they say when). */
static void settle_untried(pool_call_t *call)
{
    if (call->rate_limited_until_ms != 0) {
        uint64_t now = sl_shared_ms();
        uint64_t wait = call->rate_limited_until_ms > now ? call->rate_limited_until_ms - now : 1;
        for (size_t i = 0; i < call->nitems; i++) {
            call->items[i].rate_limited = 1;
            call->items[i].retry_after_ms = (uint32_t)(wait > UINT32_MAX ? UINT32_MAX : wait);
        }
        pool_answer_exhaust(call, POOL_OUTCOME_RATE_LIMITED);
        return;
    }
    pool_answer_exhaust(call, POOL_OUTCOME_UNAVAILABLE);
}

/* Appends raw with its id replaced by idx (or an id added, for a notification). */
static void append_with_id(sl_buf_t *b, const pool_item_t *it, uint32_t idx)
{
    if (it->id.len == 0) {
        sl_buf_append_str(b, "{\"id\":");
        sl_buf_append_u64(b, idx);
        sl_buf_append_char(b, ',');
        sl_buf_append(b, it->raw + 1, it->raw_len - 1);
        return;
    }
    sl_buf_append(b, it->raw, it->id.off);
    sl_buf_append_u64(b, idx);
    sl_buf_append(b, it->raw + it->id.off + it->id.len, it->raw_len - it->id.off - it->id.len);
}

/* Builds the upstream body from the pending items; returns whether one of
 * them is a write. A single call with an id goes byte-for-byte. */
static int build_request(pool_call_t *call, const char **body, size_t *len)
{
    int has_write = 0;
    call->nsent = 0;
    sl_buf_reset(&call->req);
    if (call->batch)
        sl_buf_append_char(&call->req, '[');
    for (size_t i = 0; i < call->nitems; i++) {
        pool_item_t *it = &call->items[i];
        if (it->state != POOL_ITEM_PENDING || it->verify)
            continue;
        has_write |= item_is_write(it);
        if (call->batch && call->nsent > 0)
            sl_buf_append_char(&call->req, ',');
        call->sent[call->nsent++] = (uint32_t)i;
        if (call->batch || it->id.len == 0 || call->renumbered)
            append_with_id(&call->req, it, (uint32_t)i);
    }
    if (call->batch)
        sl_buf_append_char(&call->req, ']');
    if (!call->batch && call->items[0].id.len != 0 && !call->renumbered) {
        *body = call->items[0].raw;
        *len = call->items[0].raw_len;
    } else {
        *body = call->req.base;
        *len = call->req.len;
    }
    return has_write;
}

void pool_call_log_attempt(pool_call_t *call, int ep, pool_fail_t fail, int status, uint32_t latency_us,
                           uint8_t flags)
{
    call->attempts++;
    if (call->nlog >= POOL_MAX_ATTEMPT_LOG)
        return;
    call->log[call->nlog++] = (pool_attempt_rec_t){(int16_t)ep, fail, (uint16_t)status, latency_us, flags};
}

static void log_attempt(pool_call_t *call, pool_exchange_t *ex, int ep, pool_fail_t fail, int status,
                        uint32_t latency_us)
{
    uint8_t flags = ex != &call->ex ? POOL_ATTEMPT_HEDGE : 0; /* the call's other exchange is its hedge */
    pool_call_log_attempt(call, ep, fail, status, latency_us, flags);
}

void pool_call_on_exchange_done(pool_exchange_t *ex)
{
    pool_call_t *call = ex->data;
    int ep = ex->link->index;
    if (ex == &call->ex)
        call->ex_active = 0;
    call->tried[ep] = 1;
    if (ex->fail != POOL_FAIL_NONE) {
        if (pool_attempt_judge(call, ex)) /* else the same endpoint once more: it does not count */
            log_attempt(call, ex, ep, ex->fail, 0, ex->latency_us);
        pool_exchange_body_dispose(ex);
    } else {
        log_attempt(call, ex, ep, POOL_FAIL_NONE, ex->head.status, ex->latency_us);
        pool_call_keep_exchange(call, ex);
        pool_attempt_judge(call, ex);
    }
    if (pool_call_done(call, ex))
        return; /* the other attempt is still in flight: its answer may do */
    pool_call_next(call);
}

/* Settles the item whose "nonce too low" was being checked by hash. */
static void on_verify_done(pool_exchange_t *ex)
{
    pool_call_t *call = ex->data;
    call->ex_active = 0;
    pool_item_t *it = NULL;
    for (size_t i = 0; i < call->nitems && it == NULL; i++)
        if (call->items[i].verify)
            it = &call->items[i];
    wire_envelope_t env;
    const char *body = pool_exchange_bytes(ex);
    int found = ex->fail == POOL_FAIL_NONE && ex->head.status >= 200 && ex->head.status < 300 &&
                wire_envelope_scan(body, pool_exchange_len(ex), &env) == SL_OK &&
                wire_json_kind(body, env.result) == WIRE_JSON_OBJECT;
    log_attempt(call, ex, ex->link->index, ex->fail, ex->head.status, ex->latency_us);
    pool_exchange_body_dispose(ex);
    if (it != NULL) {
        char txid[128];
        it->verify = 0;
        if (found && pool_write_txid(call, it, txid, sizeof(txid))) {
            pool_write_synthesize(call, it, ex->link->index, txid);
            pool_write_pin(call, ex->link->index, txid);
        } else {
            pool_item_settle(it, POOL_ITEM_ANSWERED); /* the node's "nonce too low", as-is */
        }
    }
    pool_call_next(call);
}

/* Starts the by-hash check of an item that got "nonce too low"; 1 if started. */
static int start_verify(pool_call_t *call)
{
    for (size_t i = 0; i < call->nitems; i++) {
        pool_item_t *it = &call->items[i];
        if (!it->verify)
            continue;
        if (pool_write_verify_body(call, it, &call->verify_req) &&
            pool_call_attempt_start(call, &call->ex, it->verify_ep, call->verify_req.base, call->verify_req.len, 0,
                                    on_verify_done) == POOL_FAIL_NONE) {
            call->ex_active = 1;
            return 1;
        }
        it->verify = 0;
        pool_item_settle(it, POOL_ITEM_ANSWERED);
    }
    return 0;
}

void pool_call_next(pool_call_t *call)
{
    pool_network_t *net = call->net;
    if (start_verify(call)) {
        pool_call_move(call, POOL_CALL_SENDING);
        return;
    }
    for (;;) {
        if (count_pending(call) == 0)
            break;
        int ep = call->attempts < net->max_attempts ? pool_call_plan_next(call) : -1;
        if (ep < 0 && next_round(call)) {
            pool_call_move(call, POOL_CALL_BACKOFF);
            return;
        }
        if (ep < 0 && call->attempts < net->max_attempts && pool_call_should_wait(call)) {
            pool_call_wait_start(call);
            pool_call_move(call, POOL_CALL_WAITING);
            return;
        }
        if (ep < 0) {
            if (call->attempts == 0)
                settle_untried(call);
            else
                pool_answer_exhaust(call, POOL_OUTCOME_OK);
            break;
        }
        const char *body;
        size_t len;
        int has_write = build_request(call, &body, &len);
        pool_gate_t gate = pool_call_gate(call, ep, 1);
        if (gate == POOL_GATE_WAIT) {
            pool_call_move(call, POOL_CALL_LEASING); /* the satellite goes on when it knows */
            return;
        }
        if (gate == POOL_GATE_SKIP)
            continue; /* skipped before any request was sent */
        if (call->moved_from >= 0) { /* the call did move on after that failure */
            POOL_STAT_ADD(&net->endpoints[call->moved_from], failovers, 1);
            call->moved_from = -1;
        }
        pool_fail_t fail =
            pool_call_attempt_start(call, &call->ex, ep, body, len, has_write, pool_call_on_exchange_done);
        if (fail == POOL_FAIL_NONE) {
            call->ex_active = 1;
            call->body = body;
            call->body_len = len;
            pool_call_move(call, POOL_CALL_SENDING);
            pool_call_started(call, ep, has_write);
            return;
        }
        pool_call_start_failed(call, ep, &call->ex, fail);
    }
    /* never call back from inside pool_call_start: defer to the loop */
    pool_call_move(call, POOL_CALL_SETTLED);
    h2o_timeout_link(net->pool->loop, &net->pool->zero_timeout, &call->defer);
}

void pool_call_start_failed(pool_call_t *call, int ep, pool_exchange_t *ex, pool_fail_t fail)
{
    call->tried[ep] = 1;
    ex->fail = fail;
    log_attempt(call, ex, ep, fail, 0, 0);
    pool_attempt_judge(call, ex);
}

