/* pool/pool_broadcast.c: writes sent to several endpoints at once
 * (networks.<n>.methods.<m>: { broadcast: N }).
 *
 * Several providers' mempools propagate a transaction sooner than one, so a
 * single call (not a batch) of a WRITE whose row says broadcast: N is taken
 * by this satellite at its first gate: instead of the one attempt the loop
 * was about to send, the same body goes at once to N endpoints, the plan's
 * best (the loop's endpoint first), each through the other rows' gates
 * (chain fitness, credits: no waiting). Each answer is judged as any
 * attempt's (pool_attempt_judge, with the fact `broadcast`), so:
 *   - a result, or the node's "already known" (its transaction id, as for any
 *     write), answers the call at once: the exchanges still out are
 *     cancelled (their endpoints may have the transaction too: harmless, it
 *     is the same signed transaction);
 *   - a deterministic error (insufficient funds, a bad signature) answers
 *     it too: every node says the same;
 *   - "nonce too low" is kept; if nobody takes the transaction, the loop
 *     asks that node for it by hash (pool_call_loop.c), as for one endpoint;
 *   - a failure that may have reached the node (ambiguous) leaves the write
 *     pending for the others; if none takes it, it fails as an ambiguous
 *     write (not re-sent anywhere unless resend_writes), as with one endpoint;
 *   - a failure that did not reach the node (refused, rate-limited) leaves
 *     it pending too; if nobody takes it, the loop goes on to the endpoints
 *     not yet asked, one at a time, as for any write.
 * So the ambiguous-write rule holds per endpoint: each endpoint is sent the
 * transaction once, and a new endpoint only when no earlier send may have
 * reached a node. Such a call is never hedged (the loop's started hook,
 * which arms hedges, never runs for it) nor coalesced (a write never is). */
#include <stdlib.h>
#include <string.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "pool/pool_call_int.h"

/* One exchange of the broadcast. */
typedef struct bc_ex {
    pool_exchange_t ex;
    int16_t ep;
    uint8_t active;
} bc_ex_t;

struct pool_broadcast_run {
    bc_ex_t *ex[POOL_MAX_ENDPOINTS]; /* each endpoint is sent the write once */
    size_t nex;
    uint32_t inflight;
    uint8_t ended;                /* settled, or handed back to the loop: the gate lets attempts by */
};

static void row_start(pool_call_t *call)
{
    if (call->batch || call->carrier || call->nitems != 1)
        return;
    const pool_item_t *it = &call->items[0];
    if (it->name == NULL || it->method->cls != POLICY_CLASS_WRITE || it->method->retry_safe ||
        it->method->broadcast < 2)
        return;
    call->broadcast.on = 1;
    call->broadcast.of = it->method->broadcast;
}

/* The exchanges still out lost: cancelled and logged (not failures). */
static void cancel_rest(pool_call_t *call)
{
    pool_broadcast_run_t *run = call->broadcast.run;
    for (size_t i = 0; i < run->nex; i++) {
        bc_ex_t *x = run->ex[i];
        if (!x->active)
            continue;
        uint32_t waited = (uint32_t)(sl_now_us() - x->ex.started_us);
        x->active = 0;
        run->inflight--;
        pool_call_attempt_cancel(call, &x->ex);
        pool_call_log_attempt(call, x->ep, POOL_FAIL_NONE, 0, waited,
                              POOL_ATTEMPT_CANCELLED | POOL_ATTEMPT_BROADCAST);
    }
}

/* Every exchange is in and the write is still pending: fails it as an
 * ambiguous write if one of them may have reached a node, else hands it
 * back to the loop (a by-hash check of "nonce too low", or the endpoints
 * not asked yet). */
static void hand_back(pool_call_t *call)
{
    pool_item_t *it = &call->items[0];
    if (!it->verify && (it->fail_seen & POOL_FAIL_F_AMBIG) && !call->net->conf->resend_writes) {
        pool_item_settle(it, POOL_ITEM_FAILED);
        it->outcome = POOL_OUTCOME_AMBIGUOUS_WRITE;
    }
    pool_call_next(call);
}

static void on_ex_done(pool_exchange_t *ex)
{
    pool_call_t *call = ex->data;
    pool_broadcast_run_t *run = call->broadcast.run;
    bc_ex_t *x = H2O_STRUCT_FROM_MEMBER(bc_ex_t, ex, ex);
    x->active = 0;
    run->inflight--;
    int was_pending = call->items[0].state == POOL_ITEM_PENDING;
    call->nsent = 1; /* the judge reads the one item */
    call->sent[0] = 0;
    if (ex->fail != POOL_FAIL_NONE) {
        if (pool_attempt_judge(call, ex))
            pool_call_log_attempt(call, x->ep, ex->fail, 0, ex->latency_us, POOL_ATTEMPT_BROADCAST);
        pool_exchange_body_dispose(ex);
    } else {
        pool_call_log_attempt(call, x->ep, POOL_FAIL_NONE, ex->head.status, ex->latency_us, POOL_ATTEMPT_BROADCAST);
        pool_call_keep_exchange(call, ex);
        pool_attempt_judge(call, ex);
    }
    if (was_pending && call->items[0].state != POOL_ITEM_PENDING) {
        (void)pool_call_done(call, ex); /* the rows see the answer applied */
        run->ended = 1;
        cancel_rest(call);
        pool_call_next(call); /* nothing pending: the call settles */
        return;
    }
    if (run->inflight > 0)
        return;
    run->ended = 1;
    hand_back(call);
}

/* Starts one more exchange at the plan's next endpoint that every gate lets
 * through; 0 if none is left. */
static int start_one(pool_call_t *call, int ep)
{
    pool_broadcast_run_t *run = call->broadcast.run;
    for (; ep >= 0; ep = pool_call_plan_next(call)) {
        call->broadcast.fanning = 1;
        pool_gate_t g = pool_call_gate(call, ep, 0);
        call->broadcast.fanning = 0;
        call->tried[ep] = 1;
        if (g != POOL_GATE_GO || run->nex >= POOL_MAX_ENDPOINTS)
            continue;
        bc_ex_t *x = sl_xcalloc(1, sizeof(*x));
        run->ex[run->nex++] = x;
        x->ep = (int16_t)ep;
        pool_fail_t fail = pool_call_attempt_start(call, &x->ex, ep, call->body, call->body_len, 1, on_ex_done);
        if (fail == POOL_FAIL_NONE) {
            x->active = 1;
            run->inflight++;
            pool_hedge_count(call->net, 0);
            return 1;
        }
        pool_call_start_failed(call, ep, &x->ex, fail);
        if (call->items[0].state != POOL_ITEM_PENDING)
            return 0;
    }
    return 0;
}

/* The loop's first attempt: the broadcast goes instead (the loop's endpoint
 * first), and the call waits for its answers. Once it ended, the loop's
 * attempts go by. */
static pool_gate_t row_gate(pool_call_t *call, int ep, int may_wait)
{
    (void)may_wait;
    if (!call->broadcast.on || call->broadcast.fanning)
        return POOL_GATE_GO;
    pool_broadcast_run_t *run = call->broadcast.run;
    if (run != NULL)
        return run->ended ? POOL_GATE_GO : POOL_GATE_SKIP;
    run = call->broadcast.run = sl_xcalloc(1, sizeof(*run));
    /* the body the loop built for this attempt: a hedge's and the fan-out's too */
    int own = call->items[0].id.len != 0 && !call->renumbered;
    call->body = own ? call->items[0].raw : call->req.base;
    call->body_len = own ? call->items[0].raw_len : call->req.len;
    int next = ep;
    while (start_one(call, next) && run->inflight < call->broadcast.of)
        next = pool_call_plan_next(call);
    if (run->inflight == 0) { /* nothing could be sent (or a start failure settled it): the loop goes on */
        run->ended = 1;
        return POOL_GATE_SKIP;
    }
    sl_log_debug("network %s: %.*s broadcast to %u endpoints", call->net->conf->name, (int)call->items[0].name_len,
                 call->items[0].name, run->inflight);
    return POOL_GATE_WAIT;
}

static void row_stop(pool_call_t *call, pool_call_stop_t why)
{
    pool_broadcast_run_t *run = call->broadcast.run;
    if (run == NULL)
        return;
    for (size_t i = 0; i < run->nex; i++)
        if (run->ex[i]->active) {
            run->ex[i]->active = 0;
            pool_call_attempt_cancel(call, &run->ex[i]->ex);
        }
    run->inflight = 0;
    run->ended = 1;
    if (why != POOL_CALL_RELEASED)
        return;
    for (size_t i = 0; i < run->nex; i++)
        free(run->ex[i]);
    free(run);
    call->broadcast.run = NULL;
}

static size_t row_bytes(const pool_call_t *call)
{
    const pool_broadcast_run_t *run = call->broadcast.run;
    size_t n = 0;
    for (size_t i = 0; run != NULL && i < run->nex; i++)
        n += run->ex[i]->ex.charged; /* answers being read */
    return n;
}

const pool_call_row_t pool_broadcast_row = {
    .name = "broadcast",
    .start = row_start,
    .gate = row_gate,
    .stop = row_stop,
    .bytes = row_bytes,
};
