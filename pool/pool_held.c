/* pool/pool_held.c: the penalty a call holds back from an endpoint.
 *
 * A failure that may be the request's own doing (policy/shape.h: an answer
 * over the size cap, a heavy call past the deadline or given up on by the
 * provider for time, a call answered at id null) is not recorded against its endpoint at once: the next endpoint's
 * attempt settles it. The same failure again spares both endpoints and ends
 * the call with the shape's outcome; anything else records the held failure
 * as usual; a held penalty nobody settled counts as usual too. */
#include "base/sl_log.h"
#include "pool/pool_call_int.h"

/* What a confirmed request shape counts as and how its items fail. */
static const struct {
    state_outcome_t outcome;
    pool_outcome_t item;
} shape_rows[POLICY_SHAPE_COUNT] = {
    [POLICY_SHAPE_NONE] = {STATE_OUTCOME_OK, POOL_OUTCOME_OK},
    [POLICY_SHAPE_TOO_LARGE] = {STATE_OUTCOME_TOO_LARGE, POOL_OUTCOME_TOO_LARGE},
    [POLICY_SHAPE_ID_UNANSWERABLE] = {STATE_OUTCOME_ID_UNANSWERABLE, POOL_OUTCOME_ID_UNANSWERABLE},
    [POLICY_SHAPE_SLOW_CALL] = {STATE_OUTCOME_SLOW_CALL, POOL_OUTCOME_SLOW_CALL},
};

static size_t count_pending(const pool_call_t *call)
{
    size_t n = 0;
    for (size_t i = 0; i < call->nitems; i++)
        n += call->items[i].state == POOL_ITEM_PENDING;
    return n;
}

void pool_held_release(pool_call_t *call)
{
    if (call->held.ep < 0)
        return;
    pool_health_record(&call->net->endpoints[call->held.ep], (state_outcome_t)call->held.outcome,
                       call->held.latency_us, 1);
    call->held.ep = -1;
}

/* 1 if the attempt carried a call that may be slow by nature (not a cheap read). */
static int attempt_is_heavy(const pool_call_t *call)
{
    for (size_t i = 0; i < call->nsent; i++)
        if (!call->items[call->sent[i]].cheap)
            return 1;
    return 0;
}

/* Two endpoints failed the call the same way: its items fail with the
 * shape's outcome (an earlier endpoint's fallback answer still wins), and
 * the call goes no further. */
static void settle_shaped(pool_call_t *call, policy_shape_t shape)
{
    for (size_t i = 0; i < call->nsent; i++) {
        pool_item_t *it = &call->items[call->sent[i]];
        if (it->state != POOL_ITEM_PENDING)
            continue;
        if (it->answer != NULL) {
            it->state = POOL_ITEM_ANSWERED;
            continue;
        }
        it->state = POOL_ITEM_FAILED;
        it->outcome = shape_rows[shape].item;
    }
    sl_log_debug("network %s: a call failed as %s at two endpoints: the request's doing, no endpoint penalised",
                call->net->conf->name, policy_shape_name(shape));
}

void pool_held_judge(pool_call_t *call, int ep, state_outcome_t outcome, policy_attempt_end_t end,
                          uint32_t latency_us)
{
    int heavy = attempt_is_heavy(call);
    pool_demote_note(&call->net->endpoints[ep], outcome, heavy);
    if (call->held.ep >= 0) {
        policy_held_t h = call->held.ep == ep ? POLICY_HELD_ENDPOINT /* the same endpoint again proves nothing */
                                              : policy_shape_settle((policy_shape_t)call->held.shape, end, heavy);
        if (h == POLICY_HELD_REQUEST) {
            policy_shape_t shape = (policy_shape_t)call->held.shape;
            pool_health_record(&call->net->endpoints[call->held.ep], shape_rows[shape].outcome,
                               call->held.latency_us, 1);
            pool_health_record(&call->net->endpoints[ep], shape_rows[shape].outcome, latency_us, 0);
            call->held.ep = -1;
            settle_shaped(call, shape);
            return;
        }
        if (h == POLICY_HELD_ENDPOINT)
            pool_held_release(call);
    }
    int moving_on = count_pending(call) > 0;
    policy_shape_t suspect = policy_shape_suspect(end, heavy);
    if (suspect != POLICY_SHAPE_NONE && moving_on && call->held.ep < 0) {
        call->held.ep = (int16_t)ep;
        call->held.shape = (uint8_t)suspect;
        call->held.outcome = (uint8_t)outcome;
        call->held.latency_us = latency_us;
        return;
    }
    pool_health_record(&call->net->endpoints[ep], outcome, latency_us, moving_on);
}

policy_attempt_end_t pool_held_answer_end(const pool_attempt_result_t *res)
{
    if (res->unread)
        return POLICY_END_UNREAD;
    if (res->outcome == STATE_OUTCOME_RATE_LIMITED)
        return POLICY_END_NEUTRAL;
    /* every failure in it was the upstream giving up for time; a malformed
     * member beside them (an outcome worse than HTTP_ERROR) is no give-up */
    if (res->gave_up > 0 && res->gave_up == res->transient && res->outcome == STATE_OUTCOME_HTTP_ERROR)
        return POLICY_END_GAVE_UP;
    return POLICY_END_OTHER;
}

policy_attempt_end_t pool_held_fail_end(pool_fail_t fail)
{
    switch (fail) {
    case POOL_FAIL_TOO_LARGE:
        return POLICY_END_TOO_LARGE;
    case POOL_FAIL_FIRST_BYTE_TIMEOUT:
    case POOL_FAIL_ATTEMPT_TIMEOUT:
        return POLICY_END_TIMEOUT;
    case POOL_FAIL_LOCAL:
        return POLICY_END_NEUTRAL;
    case POOL_FAIL_NONE:
    case POOL_FAIL_DNS:
    case POOL_FAIL_CONNECT:
    case POOL_FAIL_CONNECT_TIMEOUT:
    case POOL_FAIL_TLS:
    case POOL_FAIL_RESET:
    case POOL_FAIL_BAD_HTTP:
    case POOL_FAIL_HTTP_STATUS:
    case POOL_FAIL_RATE_LIMITED:
    case POOL_FAIL_BAD_JSON:
    case POOL_FAIL_WRONG_ID:
    case POOL_FAIL_RPC_ERROR:
    case POOL_FAIL_MISSING:
    case POOL_FAIL_COUNT:
        break;
    }
    return POLICY_END_OTHER;
}

static void row_stop(pool_call_t *call, pool_call_stop_t why)
{
    (void)why; /* a call cancelled half-way: what was held counts too */
    pool_held_release(call);
}

const pool_call_row_t pool_held_row = {
    .name = "held",
    .stop = row_stop,
};
