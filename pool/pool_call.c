/* pool/pool_call.c: the fallback attempt loop of one client call.
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
 * settles it (pool_held.c). */
#include <string.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "policy/retry.h"
#include "pool/pool_int.h"

static void call_next(pool_call_t *call);

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

static void stop_waiting(pool_call_t *call)
{
    if (h2o_linklist_is_linked(&call->wait_link))
        h2o_linklist_unlink(&call->wait_link);
}

static void call_finish(pool_call_t *call)
{
    if (call->finished)
        return;
    call->finished = 1;
    stop_waiting(call);
    pool_hedge_stop(call);
    pool_coalesce_done(call);
    pool_pressure_settle(call, 1);
    pool_held_release(call);
    if (h2o_timeout_is_linked(&call->deadline))
        h2o_timeout_unlink(&call->deadline);
    if (h2o_timeout_is_linked(&call->defer))
        h2o_timeout_unlink(&call->defer);
    call->cb(call, call->data);
}

static void on_defer(h2o_timeout_entry_t *entry)
{
    call_finish(H2O_STRUCT_FROM_MEMBER(pool_call_t, defer, entry));
}

static void on_credit_decided(pool_credit_wait_t *w)
{
    call_next(H2O_STRUCT_FROM_MEMBER(pool_call_t, credit_wait, w));
}

static void on_deadline(h2o_timeout_entry_t *entry)
{
    pool_call_t *call = H2O_STRUCT_FROM_MEMBER(pool_call_t, deadline, entry);
    pool_delay_cancel(&call->backoff);
    pool_credit_wait_cancel(&call->credit_wait);
    stop_waiting(call);
    pool_merge_leave(call);
    pool_hedge_stop(call);
    if (call->ex_active) {
        pool_exchange_cancel(&call->ex);
        call->ex_active = 0;
    }
    pool_answer_exhaust(call, POOL_OUTCOME_DEADLINE);
    call_finish(call);
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

/* 1 if the plan may send this call's next attempt to endpoint i now. */
static int candidate(pool_call_t *call, size_t i, uint64_t now)
{
    pool_endpoint_t *ep = &call->net->endpoints[i];
    if (call->tried[i])
        return 0;
    if (!pool_health_usable(ep, now))
        return 0;
    return ep->inflight < ep->max_inflight;
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
    for (size_t k = 0; k < net->norder; k++)
        if (candidate(call, net->order[k], now))
            return net->order[k];
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
    call_next(H2O_STRUCT_FROM_MEMBER(pool_call_t, backoff, d));
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
        any |= !call->no_retry[i] && pool_health_usable(&net->endpoints[i], sl_shared_ms());
    if (!any)
        return 0;
    uint32_t wait = policy_retry_backoff_ms(net->conf->backoff_base_ms, net->conf->backoff_max_ms, ++call->round,
                                            (uint32_t)random());
    uint64_t left = call->deadline_ms > sl_now_ms() ? call->deadline_ms - sl_now_ms() : 0;
    if (wait + 10 >= left)
        return 0;
    for (size_t i = 0; i < net->nendpoints; i++)
        call->tried[i] = call->no_retry[i];
    pool_delay_add(net->pool, &call->backoff, wait, on_backoff);
    return 1;
}

/* A confirmation poll never hears "every endpoint is at max_inflight": when
 * the only endpoints it could still use are full, it waits for a slot
 * (bounded by its deadline, timeouts.request_ms). 1 if call should wait. */
static int should_wait(pool_call_t *call)
{
    pool_network_t *net = call->net;
    if (!net->conf->pressure.enabled)
        return 0;
    for (size_t i = 0; i < call->nitems; i++)
        if (call->items[i].state == POOL_ITEM_PENDING && call->items[i].method->cls != POLICY_CLASS_CONFIRM)
            return 0;
    uint64_t now = sl_shared_ms();
    for (size_t i = 0; i < net->nendpoints; i++) {
        pool_endpoint_t *ep = &net->endpoints[i];
        if (!call->tried[i] && ep->max_inflight > 0 && ep->inflight >= ep->max_inflight && pool_health_usable(ep, now))
            return 1;
    }
    return 0;
}

static void start_waiting(pool_call_t *call)
{
    pool_network_t *net = call->net;
    h2o_linklist_insert(&net->waiters, &call->wait_link); /* at the tail: oldest first */
    if (!call->waited) {
        call->waited = 1;
        net->pressure.waits++;
    }
}

/* 1 if some usable endpoint of net has a free slot in this worker. */
static int slot_free(pool_network_t *net)
{
    uint64_t now = sl_shared_ms();
    for (size_t i = 0; i < net->nendpoints; i++) {
        pool_endpoint_t *ep = &net->endpoints[i];
        if (ep->inflight < ep->max_inflight && pool_health_usable(ep, now))
            return 1;
    }
    return 0;
}

/* Lets waiters go on, oldest first, each at most once (one that cannot use
 * what freed up goes back to the end of the line): while a slot is free, or
 * all of them when recheck is set. */
static void wake(pool_network_t *net, int recheck)
{
    if (net->waking || h2o_linklist_is_empty(&net->waiters))
        return;
    net->waking = 1;
    size_t n = 0;
    for (h2o_linklist_t *l = net->waiters.next; l != &net->waiters; l = l->next)
        n++;
    while (n-- > 0 && !h2o_linklist_is_empty(&net->waiters) && (recheck || slot_free(net))) {
        pool_call_t *call = H2O_STRUCT_FROM_MEMBER(pool_call_t, wait_link, net->waiters.next);
        h2o_linklist_unlink(&call->wait_link);
        call_next(call);
    }
    net->waking = 0;
}

void pool_call_wake_waiters(pool_network_t *net)
{
    wake(net, 0);
}

void pool_call_recheck_waiters(pool_network_t *net)
{
    wake(net, 1);
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
    uint8_t flags = ex == &call->hedge.ex ? POOL_ATTEMPT_HEDGE : 0;
    pool_call_log_attempt(call, ep, fail, status, latency_us, flags);
}

void pool_call_on_exchange_done(pool_exchange_t *ex)
{
    pool_call_t *call = ex->data;
    int ep = ex->ep->index;
    int hedge = ex == &call->hedge.ex;
    if (hedge)
        pool_hedge_landed(call);
    else
        call->ex_active = 0;
    call->tried[ep] = 1;
    if (ex->fail != POOL_FAIL_NONE) {
        if (pool_attempt_judge(call, ex)) /* else the same endpoint once more: it does not count */
            log_attempt(call, ex, ep, ex->fail, 0, ex->latency_us);
        pool_exchange_body_dispose(ex);
    } else {
        log_attempt(call, ex, ep, POOL_FAIL_NONE, ex->head.status, ex->latency_us);
        pool_hedge_sample(call, ex);
        pool_call_keep_exchange(call, ex);
        pool_attempt_judge(call, ex);
    }
    if (pool_hedge_settle(call, hedge))
        return; /* the other attempt is still in flight: its answer may do */
    call_next(call);
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
    log_attempt(call, ex, ex->ep->index, ex->fail, ex->head.status, ex->latency_us);
    pool_exchange_body_dispose(ex);
    if (it != NULL) {
        char txid[128];
        it->verify = 0;
        if (found && pool_write_txid(call, it, txid, sizeof(txid))) {
            pool_write_synthesize(call, it, ex->ep->index, txid);
            pool_write_pin(call, ex->ep->index, txid);
        } else {
            pool_item_settle(it, POOL_ITEM_ANSWERED); /* the node's "nonce too low", as-is */
        }
    }
    call_next(call);
}

/* Starts the by-hash check of an item that got "nonce too low"; 1 if started. */
static int start_verify(pool_call_t *call)
{
    for (size_t i = 0; i < call->nitems; i++) {
        pool_item_t *it = &call->items[i];
        if (!it->verify)
            continue;
        if (pool_write_verify_body(call, it, &call->verify_req) &&
            pool_exchange_start(&call->ex, &call->net->endpoints[it->verify_ep], call->verify_req.base,
                                call->verify_req.len, 0, on_verify_done, call) == POOL_FAIL_NONE) {
            call->ex_active = 1;
            return 1;
        }
        it->verify = 0;
        pool_item_settle(it, POOL_ITEM_ANSWERED);
    }
    return 0;
}

static void call_next(pool_call_t *call)
{
    pool_network_t *net = call->net;
    if (start_verify(call))
        return;
    for (;;) {
        if (count_pending(call) == 0)
            break;
        int ep = call->attempts < net->max_attempts ? pool_call_plan_next(call) : -1;
        if (ep < 0 && next_round(call))
            return;
        if (ep < 0 && call->attempts < net->max_attempts && should_wait(call)) {
            start_waiting(call);
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
        int credits = pool_credit_take_call(call, ep, on_credit_decided);
        if (credits < 0)
            return; /* waits for Redis' answer */
        if (credits == 0)
            continue; /* skipped before any request was sent */
        pool_fail_t fail = pool_exchange_start(&call->ex, &net->endpoints[ep], body, len, has_write,
                                               pool_call_on_exchange_done, call);
        if (fail == POOL_FAIL_NONE) {
            call->ex_active = 1;
            call->body = body;
            call->body_len = len;
            pool_hedge_count(net, 0);
            if (!has_write)
                pool_hedge_arm(call, ep);
            return;
        }
        pool_call_start_failed(call, ep, &call->ex, fail);
    }
    /* never call back from inside pool_call_start: defer to the loop */
    h2o_timeout_link(net->pool->loop, &net->pool->zero_timeout, &call->defer);
}

void pool_call_start_failed(pool_call_t *call, int ep, pool_exchange_t *ex, pool_fail_t fail)
{
    call->tried[ep] = 1;
    ex->fail = fail;
    log_attempt(call, ex, ep, fail, 0, 0);
    pool_attempt_judge(call, ex);
}

static pool_call_t *call_create(pool_network_t *net, pool_item_t *items, size_t n, int batch, pool_call_cb cb,
                               void *data)
{
    pool_call_t *call = sl_xcalloc(1, sizeof(*call));
    call->net = net;
    call->items = items;
    call->nitems = n;
    call->batch = batch;
    call->cb = cb;
    call->data = data;
    call->retry_same = -1;
    call->pinned = -1;
    call->held.ep = -1;
    call->hedge.primary = -1;
    call->hedge.ep = -1;
    /* an id some upstream could not echo goes up as 0; the client still gets its own back */
    call->renumbered = !batch && n == 1 && items[0].id.len != 0 && !wire_json_id_portable(items[0].raw, items[0].id);
    call->deadline_ms = sl_now_ms() + net->conf->timeouts.request_ms;
    call->sent = sl_xmalloc(n * sizeof(*call->sent));
    call->deadline.cb = on_deadline;
    call->defer.cb = on_defer;
    for (size_t i = 0; i < n; i++) {
        items[i].state = POOL_ITEM_PENDING; /* the initial state, not a transition */
        items[i].endpoint = -1;
        items[i].answer = NULL;
    }
    h2o_timeout_link(net->pool->loop, &net->request_timeout, &call->deadline);
    return call;
}

pool_call_t *pool_call_start(pool_network_t *net, pool_item_t *items, size_t n, int batch, uint64_t owner,
                             pool_call_cb cb, void *data)
{
    pool_call_t *call = call_create(net, items, n, batch, cb, data);
    call->owner = owner;
    pool_pressure_admit(call);
    call->pinned = pool_write_find_pin(call);
    if (pool_merge_offer(call) || pool_coalesce_offer(call))
        pool_pressure_share(call); /* rides on another's upstream call */
    else
        call_next(call);
    return call;
}

pool_call_t *pool_call_start_carrier(pool_network_t *net, pool_item_t *items, size_t n, int batch, int pinned,
                                     pool_call_cb cb, void *data)
{
    pool_call_t *call = call_create(net, items, n, batch, cb, data);
    call->carrier = 1;
    call->pinned = pinned;
    pool_pressure_hold(call); /* the merged polls' one upstream slot */
    call_next(call);
    return call;
}

void pool_call_finish(pool_call_t *call)
{
    call_finish(call);
}

void pool_call_resume(pool_call_t *call)
{
    pool_pressure_hold(call); /* it goes upstream itself now */
    call_next(call);
}

void pool_body_dispose(pool_body_t *b)
{
    sl_buf_dispose(&b->own);
    if (b->in != NULL)
        h2o_buffer_dispose(&b->in);
}

static pool_body_t *keep_slot(pool_call_t *call)
{
    call->bodies = sl_xrealloc(call->bodies, (call->nbodies + 1) * sizeof(*call->bodies));
    pool_body_t *b = &call->bodies[call->nbodies++];
    memset(b, 0, sizeof(*b));
    return b;
}

const char *pool_call_keep(pool_call_t *call, sl_buf_t *own)
{
    pool_body_t *b = keep_slot(call);
    b->own = *own;
    sl_buf_init(own);
    return pool_body_base(b);
}

void pool_call_keep_exchange(pool_call_t *call, pool_exchange_t *ex)
{
    pool_body_t *b = keep_slot(call);
    b->own = ex->body;
    sl_buf_init(&ex->body);
    b->in = ex->in;
    ex->in = NULL;
    call->charged += ex->charged;
    ex->charged = 0;
}

void pool_call_release(pool_call_t *call)
{
    if (call == NULL)
        return;
    stop_waiting(call);
    pool_merge_leave(call);
    pool_coalesce_leave(call);
    pool_hedge_stop(call);
    pool_pressure_settle(call, 0); /* not answered: the client went away first */
    pool_held_release(call); /* a call cancelled half-way: what was held counts */
    if (call->ex_active)
        pool_exchange_cancel(&call->ex);
    pool_delay_cancel(&call->backoff);
    pool_credit_wait_cancel(&call->credit_wait);
    if (h2o_timeout_is_linked(&call->deadline))
        h2o_timeout_unlink(&call->deadline);
    if (h2o_timeout_is_linked(&call->defer))
        h2o_timeout_unlink(&call->defer);
    for (size_t i = 0; i < call->nbodies; i++)
        pool_body_dispose(&call->bodies[i]);
    free(call->bodies);
    pool_budget_release(call->net->pool, call->charged);
    pool_coalesce_unshare(call);
    free(call->sent);
    sl_buf_dispose(&call->req);
    sl_buf_dispose(&call->verify_req);
    free(call);
}

void pool_call_cancel(pool_call_t *call)
{
    pool_call_release(call);
}
