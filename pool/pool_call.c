/* pool/pool_call.c: one call's lifecycle: its states and their one writer,
 * the satellites' rows and the order they run in, the call's start and its
 * one stop path, the attempt plumbing to the transport, and the answer bytes
 * kept until release. The attempt loop itself is pool_call_loop.c. */
#include <stddef.h>
#include <string.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "pool/pool_call_int.h"

/* The satellites, in the order every hook runs:
 *   pressure  start: the call counts in the depth; enter: one riding on
 *             another's upstream call leaves it, one going upstream holds
 *             again; stop: its settle time and try.
 *   cache     offer: items whose answer cannot change are answered from
 *             the response cache (all of them: the call rides on nothing,
 *             answered from the loop); gate: with cache.redis, the items
 *             missed are looked up in Redis before the first attempt (the
 *             call waits, bounded); done: an answer that may be kept is
 *             stored; stop: the plans go (and a Redis lookup is dropped).
 *   merge     offer: a confirmation poll joins a merged poll; stop: leaves.
 *   coalesce  offer: an identical read in flight answers this one too;
 *             stop: the group's waiters get the answer, or the group is
 *             handed to the next waiter.
 *   hedge     started: a second attempt is armed while the first is slow;
 *             done: the race is settled; stop: the hedge is cancelled.
 *   consensus start: a single read of a consensus method is compared;
 *             gate: its first attempt becomes the fan-out to `of`
 *             endpoints (each through the gates below) and the call waits
 *             for the votes (never hedged); stop: the fan-out is cancelled.
 *   broadcast start: a single write of a method with broadcast: N is
 *             broadcast; gate: its first attempt becomes N exchanges at
 *             once (each through the gates below); the first to take it
 *             answers; stop: the rest are cancelled.
 *   chain     start: what block each item names; gate: an endpoint behind
 *             it (or too far behind the head for a latest read) is skipped
 *             while a fitter one is left; done: a head answer feeds the
 *             chain view and the client gets the head it serves.
 *   credit    gate: the attempt's credits at the endpoint (or a wait for a
 *             lease); stop: the wait is given up.
 *   held      stop: a held request-shaped penalty nobody settled counts.
 * Pressure comes first (a call rides only once counted); offers are tried
 * in order and the first taker wins; cache gates first (a Redis hit sends
 * nothing and is charged nothing), then consensus and broadcast (each
 * fan-out asks the others for each endpoint), chain before credit, so a skipped
 * endpoint is charged nothing. A new satellite is a file and a row. */
static const pool_call_row_t *const rows[] = {
    &pool_pressure_row, &pool_cache_row,     &pool_merge_row, &pool_coalesce_row, &pool_hedge_row,
    &pool_consensus_row, &pool_broadcast_row, &pool_chain_row, &pool_credit_row, &pool_held_row,
};
#define NROWS (sizeof(rows) / sizeof(rows[0]))

/* For each hook, the rows that have one, in the table's order: the hot paths
 * call just those (built once, when the first network is set up). */
enum { HOOK_START, HOOK_OFFER, HOOK_ENTER, HOOK_GATE, HOOK_STARTED, HOOK_DONE, HOOK_STOP, HOOK_BYTES, HOOK_COUNT };
static const size_t hook_at[HOOK_COUNT] = {
    offsetof(pool_call_row_t, start), offsetof(pool_call_row_t, offer),   offsetof(pool_call_row_t, enter),
    offsetof(pool_call_row_t, gate),  offsetof(pool_call_row_t, started), offsetof(pool_call_row_t, done),
    offsetof(pool_call_row_t, stop),  offsetof(pool_call_row_t, bytes),
};
static const pool_call_row_t *hooked[HOOK_COUNT][NROWS];
static size_t nhooked[HOOK_COUNT];

static void index_rows(void)
{
    static int indexed;
    if (indexed)
        return;
    indexed = 1;
    for (size_t h = 0; h < HOOK_COUNT; h++)
        for (size_t i = 0; i < NROWS; i++) {
            void (*fn)(void);
            memcpy(&fn, (const char *)rows[i] + hook_at[h], sizeof(fn));
            if (fn != NULL)
                hooked[h][nhooked[h]++] = rows[i];
        }
}

/* for (each row r having hook h, in order) */
#define EACH_ROW(h, r) for (size_t k_ = 0; k_ < nhooked[h] && ((r) = hooked[h][k_]) != NULL; k_++)

/* edges[from][to] of the lifecycle (pool_int.h draws it). */
#define LIVE_TO {[POOL_CALL_SENDING] = 1, [POOL_CALL_BACKOFF] = 1, [POOL_CALL_WAITING] = 1, \
                 [POOL_CALL_LEASING] = 1, [POOL_CALL_SETTLED] = 1, [POOL_CALL_DONE] = 1}
static const uint8_t call_edges[POOL_CALL_STATE_COUNT][POOL_CALL_STATE_COUNT] = {
    [POOL_CALL_NEW] = {[POOL_CALL_RIDING] = 1, [POOL_CALL_SENDING] = 1, [POOL_CALL_BACKOFF] = 1,
                       [POOL_CALL_WAITING] = 1, [POOL_CALL_LEASING] = 1, [POOL_CALL_SETTLED] = 1},
    [POOL_CALL_RIDING] = LIVE_TO,
    [POOL_CALL_SENDING] = LIVE_TO,
    [POOL_CALL_BACKOFF] = LIVE_TO,
    [POOL_CALL_WAITING] = LIVE_TO,
    [POOL_CALL_LEASING] = LIVE_TO,
    [POOL_CALL_SETTLED] = {[POOL_CALL_DONE] = 1},
};

int pool_call_edge_allowed(pool_call_state_t from, pool_call_state_t to)
{
    return (unsigned)from < POOL_CALL_STATE_COUNT && (unsigned)to < POOL_CALL_STATE_COUNT && call_edges[from][to];
}

void pool_call_move(pool_call_t *call, pool_call_state_t to)
{
    pool_call_state_t from = call->state;
    if (!pool_call_edge_allowed(from, to)) {
        sl_log_error("bug: a call moved from state %d to %d", (int)from, (int)to);
        abort();
    }
    call->state = to;
    const pool_call_row_t *r;
    EACH_ROW(HOOK_ENTER, r)
        r->enter(call, from, to);
}

pool_gate_t pool_call_gate(pool_call_t *call, int ep, int may_wait)
{
    const pool_call_row_t *r;
    EACH_ROW(HOOK_GATE, r) {
        pool_gate_t g = r->gate(call, ep, may_wait);
        if (g != POOL_GATE_GO)
            return g;
    }
    return POOL_GATE_GO;
}

void pool_call_started(pool_call_t *call, int ep, int is_write)
{
    const pool_call_row_t *r;
    EACH_ROW(HOOK_STARTED, r)
        r->started(call, ep, is_write);
}

int pool_call_done(pool_call_t *call, pool_exchange_t *ex)
{
    int wait = 0;
    const pool_call_row_t *r;
    EACH_ROW(HOOK_DONE, r)
        wait |= r->done(call, ex);
    return wait;
}

size_t pool_call_rows_bytes(const pool_call_t *call)
{
    size_t n = 0;
    const pool_call_row_t *r;
    EACH_ROW(HOOK_BYTES, r)
        n += r->bytes(call);
    return n;
}

/* The one stop path: the call's own waits and attempt end, then (a deadline)
 * its pending items fail, then every satellite stops in the rows' order;
 * FINISHED and DEADLINE end in the callback, RELEASED in the free (by
 * pool_call_release). Runs again harmlessly on a release after the end. */
void pool_call_stop(pool_call_t *call, pool_call_stop_t why)
{
    pool_delay_cancel(&call->backoff);
    pool_delay_cancel(&call->method_deadline);
    pool_call_wait_stop(call);
    if (call->ex_active) {
        pool_call_attempt_cancel(call, &call->ex);
        call->ex_active = 0;
    }
    if (why == POOL_CALL_DEADLINE)
        pool_answer_exhaust(call, POOL_OUTCOME_DEADLINE);
    const pool_call_row_t *r;
    EACH_ROW(HOOK_STOP, r)
        r->stop(call, why);
    if (h2o_timeout_is_linked(&call->deadline))
        h2o_timeout_unlink(&call->deadline);
    if (h2o_timeout_is_linked(&call->defer))
        h2o_timeout_unlink(&call->defer);
    if (why != POOL_CALL_RELEASED && call->state != POOL_CALL_DONE) {
        pool_call_move(call, POOL_CALL_DONE);
        call->cb(call, call->data);
    }
}

void pool_call_net_init(pool_network_t *net)
{
    index_rows();
    for (size_t i = 0; i < NROWS; i++)
        if (rows[i]->net_init != NULL)
            rows[i]->net_init(net);
}

void pool_call_net_dispose(pool_network_t *net)
{
    for (size_t i = NROWS; i-- > 0;) /* the reverse order */
        if (rows[i]->net_dispose != NULL)
            rows[i]->net_dispose(net);
}

static void on_method_deadline(pool_delay_t *d)
{
    pool_call_stop(H2O_STRUCT_FROM_MEMBER(pool_call_t, method_deadline, d), POOL_CALL_DEADLINE);
}

/* The shortest methods.<name>.timeout_ms of the call's items, when it ends
 * before timeouts.request_ms: the call's deadline (attempts end with it). */
static void method_deadline(pool_call_t *call)
{
    uint32_t ms = call->net->conf->timeouts.request_ms;
    for (size_t i = 0; i < call->nitems; i++) {
        uint32_t t = call->items[i].method->timeout_ms;
        if (t != 0 && t < ms)
            ms = t;
    }
    if (ms == call->net->conf->timeouts.request_ms)
        return;
    call->deadline_ms = sl_now_ms() + ms;
    pool_delay_add(&call->net->pool->t.delays, &call->method_deadline, ms, on_method_deadline);
}

static void on_defer(h2o_timeout_entry_t *entry)
{
    pool_call_stop(H2O_STRUCT_FROM_MEMBER(pool_call_t, defer, entry), POOL_CALL_FINISHED);
}

static void on_deadline(h2o_timeout_entry_t *entry)
{
    pool_call_stop(H2O_STRUCT_FROM_MEMBER(pool_call_t, deadline, entry), POOL_CALL_DEADLINE);
}

pool_fail_t pool_call_attempt_start(pool_call_t *call, pool_exchange_t *ex, int ep, const char *body, size_t len,
                                    int is_write, pool_exchange_cb cb)
{
    pool_endpoint_t *e = &call->net->endpoints[ep];
    pool_fail_t fail = call->net->pool->t.ops->start(ex, &e->link, body, len, is_write, cb, call);
    if (fail == POOL_FAIL_NONE) {
        if (call->items[0].traceparent != NULL && ex->bufs[1].base == ex->clen) /* a real exchange */
            pool_exchange_traceparent(ex, call->items[0].traceparent);
        ex->grow_call = call;
        POOL_STAT_PEAK(e, max_inflight_seen, e->link.inflight);
    }
    return fail;
}

void pool_call_cut(pool_call_t *call)
{
    if (call == NULL || call->state == POOL_CALL_DONE)
        return;
    if (h2o_timeout_is_linked(&call->deadline))
        h2o_timeout_unlink(&call->deadline);
    h2o_timeout_link(call->net->pool->loop, &call->net->pool->t.zero_timeout, &call->deadline);
}

void pool_call_attempt_cancel(pool_call_t *call, pool_exchange_t *ex)
{
    call->net->pool->t.ops->cancel(ex);
}

/* Who a new call is for: a client (its identity), or pool/ itself (a
 * merged poll's carrier, with its pin). */
typedef struct call_origin {
    uint64_t owner;
    uint8_t carrier;
    int pinned;
} call_origin_t;

_Static_assert(offsetof(pool_call_t, nlog) == offsetof(pool_call_t, log) + sizeof(((pool_call_t *)0)->log),
               "call_create zeroes everything but log: nlog must follow it");

/* A new call: its items PENDING, its deadline running, the rows' start
 * hooks run (a client's call has its owner, a carrier its pin, first). */
static pool_call_t *call_create(pool_network_t *net, pool_item_t *items, size_t n, int batch, call_origin_t who,
                               pool_call_cb cb, void *data)
{
    /* zeroed but for the attempt log, written before it is read (nlog): 1,800
     * bytes instead of 2,120 stay under glibc's rep-stosb threshold (2 KiB), and
     * callgrind counted that memset at ~2,300 instructions a call */
    pool_call_t *call = sl_xmalloc(sizeof(*call));
    memset(call, 0, offsetof(pool_call_t, log));
    memset(&call->nlog, 0, sizeof(*call) - offsetof(pool_call_t, nlog));
    call->net = net;
    call->items = items;
    call->nitems = n;
    call->batch = batch;
    call->cb = cb;
    call->data = data;
    call->owner = who.owner;
    call->carrier = who.carrier;
    call->pinned = who.pinned;
    call->state = POOL_CALL_NEW;
    call->retry_same = -1;
    call->moved_from = -1;
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
        items[i].cached = items[i].cache_miss = 0;
    }
    h2o_timeout_link(net->pool->loop, &net->request_timeout, &call->deadline);
    method_deadline(call);
    const pool_call_row_t *r;
    EACH_ROW(HOOK_START, r)
        r->start(call);
    return call;
}

pool_call_t *pool_call_start(pool_network_t *net, pool_item_t *items, size_t n, int batch, uint64_t owner,
                             pool_call_cb cb, void *data)
{
    pool_call_t *call = call_create(net, items, n, batch, (call_origin_t){owner, 0, -1}, cb, data);
    call->pinned = pool_write_find_pin(call); /* a confirmation poll of a transaction an endpoint accepted */
    const pool_call_row_t *r;
    EACH_ROW(HOOK_OFFER, r)
        if (r->offer(call)) {
            pool_call_move(call, POOL_CALL_RIDING); /* rides on another's upstream call */
            return call;
        }
    pool_call_next(call);
    return call;
}

pool_call_t *pool_call_start_carrier(pool_network_t *net, pool_item_t *items, size_t n, int batch, int pinned,
                                     pool_call_cb cb, void *data)
{
    pool_call_t *call = call_create(net, items, n, batch, (call_origin_t){0, 1, pinned}, cb, data);
    pool_call_next(call);
    return call;
}

void pool_call_finish(pool_call_t *call)
{
    pool_call_stop(call, POOL_CALL_FINISHED);
}

void pool_call_resume(pool_call_t *call)
{
    pool_call_next(call); /* it goes upstream itself now (the move out of RIDING tells pressure) */
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
    pool_call_stop(call, POOL_CALL_RELEASED);
    for (size_t i = 0; i < call->nbodies; i++)
        pool_body_dispose(&call->bodies[i]);
    free(call->bodies);
    pool_budget_release(&call->net->pool->t, call->charged);
    free(call->sent);
    sl_buf_dispose(&call->req);
    sl_buf_dispose(&call->verify_req);
    free(call);
}
