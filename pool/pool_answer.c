/* pool/pool_answer.c: an answer's facts, and the actions on the items it carried.
 *
 * The body is never parsed into a tree: wire/envelope.h finds each
 * member's bytes and id, and only an "error" member is decoded, for the
 * verdict policy/attempt.c gives. What each verdict means for an item (an
 * answer, another endpoint, an ambiguous write) is decided there; this file
 * finds the facts and carries out the actions. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/sl_log.h"
#include "pool/pool_call_int.h"

/* How an item fails once two endpoints failed the call the same way. */
static const pool_outcome_t shaped_outcome[POLICY_SHAPE_COUNT] = {
    [POLICY_SHAPE_NONE] = POOL_OUTCOME_OK,
    [POLICY_SHAPE_TOO_LARGE] = POOL_OUTCOME_TOO_LARGE,
    [POLICY_SHAPE_ID_UNANSWERABLE] = POOL_OUTCOME_ID_UNANSWERABLE,
    [POLICY_SHAPE_SLOW_CALL] = POOL_OUTCOME_SLOW_CALL,
};

/* edges[from][to] of an item's machine */
static const uint8_t item_edges[POOL_ITEM_STATE_COUNT][POOL_ITEM_STATE_COUNT] = {
    [POOL_ITEM_PENDING] = {[POOL_ITEM_ANSWERED] = 1, [POOL_ITEM_FAILED] = 1},
};

int pool_item_edge_allowed(pool_item_state_t from, pool_item_state_t to)
{
    return (unsigned)from < POOL_ITEM_STATE_COUNT && (unsigned)to < POOL_ITEM_STATE_COUNT && item_edges[from][to];
}

void pool_item_settle(pool_item_t *it, pool_item_state_t to)
{
    if (!pool_item_edge_allowed(it->state, to)) {
        sl_log_error("bug: call item moved from state %d to %d", (int)it->state, (int)to);
        abort();
    }
    it->state = to;
}

void pool_item_answer_set(pool_item_t *it, const pool_item_answer_t *a)
{
    if (a->over && it->state == POOL_ITEM_ANSWERED) /* the answer it has (a refusal) is answered over */
        it->state = POOL_ITEM_PENDING;
    pool_item_settle(it, POOL_ITEM_ANSWERED);
    it->verdict = a->verdict;
    it->answer = a->answer;
    it->answer_len = a->answer_len;
    it->answer_id = a->answer_id;
    it->answer_result = a->answer_result;
    it->endpoint = a->endpoint;
}

void pool_item_answer_copy(pool_item_t *it, const pool_item_t *from, const char *answer)
{
    it->outcome = from->outcome;
    it->retry_after_ms = from->retry_after_ms;
    it->fail_seen = from->fail_seen;
    it->rate_limited = from->rate_limited;
    it->failures = from->failures;
    it->timeouts = from->timeouts;
    it->local_failures = from->local_failures;
    if (from->state == POOL_ITEM_ANSWERED) {
        pool_item_answer_set(it, &(pool_item_answer_t){.verdict = from->verdict,
                                                        .answer = answer,
                                                        .answer_len = from->answer_len,
                                                        .answer_id = from->answer_id,
                                                        .answer_result = from->answer_result,
                                                        .endpoint = from->endpoint});
        return;
    }
    it->verdict = from->verdict;
    it->endpoint = from->endpoint;
    pool_item_settle(it, POOL_ITEM_FAILED);
}

const policy_blockref_call_t *pool_item_blockref(pool_item_t *it, policy_chain_t chain)
{
    enum { UNREAD, READ, UNREADABLE };
    if (it->blockref_read == UNREAD) {
        wire_span_t params;
        it->blockref_read = it->name != NULL && pool_item_params(it, &params) &&
                                    policy_blockref_extract(chain, it->name, it->name_len, it->raw, params,
                                                            &it->blockref) == SL_OK
                                ? READ
                                : UNREADABLE;
    }
    return it->blockref_read == READ ? &it->blockref : NULL;
}

int pool_item_params(const pool_item_t *it, wire_span_t *params)
{
    if (it->params.len != 0) {
        *params = it->params;
        return 1;
    }
    wire_envelope_t env;
    if (wire_envelope_scan(it->raw, it->raw_len, &env) != SL_OK)
        return 0;
    *params = env.params;
    return 1;
}

/* 1 if id (span of buf) is the id this attempt sent for it: the client's
 * own, or the index it was renumbered to (pool_call.c build_request). */
static int is_sent_id(const pool_call_t *call, const pool_item_t *it, const char *buf, wire_span_t id)
{
    static const char zero[] = "0";
    if (it->id.len != 0 && !call->renumbered)
        return wire_json_id_equal(buf, id, it->raw, it->id);
    return wire_json_id_equal(buf, id, zero, (wire_span_t){0, 1});
}

/* ---- facts ---- */

static void object_facts(const char *buf, const wire_envelope_t *env, policy_object_t *o)
{
    o->buf = buf;
    o->envelope_ok = (env->result.len != 0) != (env->error.len != 0);
    o->id = POLICY_ID_SENT;
    o->null_result = env->error.len == 0 && env->result.len != 0 && wire_json_kind(buf, env->result) == WIRE_JSON_NULL;
    if (env->error.len == 0)
        o->error = POLICY_ERROR_NONE;
    else if (wire_envelope_error(buf, env->error, &o->err) == SL_OK)
        o->error = POLICY_ERROR_DECODED;
    else
        o->error = POLICY_ERROR_UNDECODABLE;
}

/* A batch's array: each member goes to the item its renumbered id names
 * (the first member with that id; one that is not a valid response to an
 * item sent is nobody's, and an item without a member is missing). */
static void member_facts(pool_call_t *call, const char *body, size_t len, policy_attempt_facts_t *f,
                         policy_item_facts_t *fi, pool_answer_obj_t *objs)
{
    size_t max = call->nsent + 8, n = 0;
    wire_span_t *spans = sl_xmalloc(max * sizeof(*spans));
    uint32_t *place = sl_xcalloc(call->nitems, sizeof(*place)); /* item index -> 1 + its place in sent */
    if (wire_envelope_scan_array(body, len, spans, max, &n) != SL_OK)
        goto cleanup;
    f->body = POLICY_BODY_ARRAY;
    for (size_t k = 0; k < call->nsent; k++)
        place[call->sent[k]] = (uint32_t)k + 1;
    for (size_t m = 0; m < n; m++) {
        const char *buf = body + spans[m].off;
        wire_envelope_t env;
        int64_t idx;
        if (wire_envelope_scan(buf, spans[m].len, &env) != SL_OK || (env.result.len != 0) == (env.error.len != 0) ||
            env.id.len == 0 || wire_json_int64(buf, env.id, &idx) != SL_OK || idx < 0 ||
            (uint64_t)idx >= call->nitems || place[idx] == 0 || fi[place[idx] - 1].member)
            continue;
        size_t k = place[idx] - 1;
        fi[k].member = 1;
        object_facts(buf, &env, &fi[k].obj);
        objs[k].ans = buf;
        objs[k].len = spans[m].len;
        objs[k].id = env.id;
        objs[k].result = env.result;
    }
cleanup:
    free(spans);
    free(place);
}

void pool_answer_facts(pool_call_t *call, policy_attempt_facts_t *f, policy_item_facts_t *fi,
                       pool_answer_obj_t *objs)
{
    const pool_body_t *b = &call->bodies[call->nbodies - 1];
    const char *body = pool_body_base(b);
    size_t len = pool_body_len(b), i = 0;
    f->body = POLICY_BODY_INVALID;
    while (i < len && (body[i] == ' ' || body[i] == '\n' || body[i] == '\r' || body[i] == '\t'))
        i++;
    if (call->batch && !(i < len && body[i] == '{')) {
        member_facts(call, body, len, f, fi, objs);
        return;
    }
    wire_envelope_t env;
    if (wire_envelope_scan(body, len, &env) != SL_OK)
        return;
    f->body = POLICY_BODY_OBJECT;
    object_facts(body, &env, &f->obj);
    if (call->batch)
        return;
    const pool_item_t *it = &call->items[call->sent[0]];
    wire_json_kind_t k = wire_json_kind(body, env.id);
    if (!is_sent_id(call, it, body, env.id))
        f->obj.id = k == WIRE_JSON_NULL || k == WIRE_JSON_NONE ? POLICY_ID_NULL : POLICY_ID_OTHER;
    objs[0].ans = body;
    objs[0].len = (uint32_t)len;
    objs[0].id = env.id;
    objs[0].result = env.result;
    objs[0].error = env.error;
    objs[0].foreign = f->obj.id != POLICY_ID_SENT;
}

/* ---- actions ---- */

/* A single call's error answered at another id (proxies answer a 429 or 5xx
 * at id null, or without an id): the error alone, at id null, as a body of
 * the call's own, so the gateway can splice the client's id in. */
static void rebuild_error(pool_call_t *call, pool_answer_obj_t *o)
{
    static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":";
    sl_buf_t b = SL_BUF_INIT;
    sl_buf_append(&b, head, sizeof(head) - 1);
    sl_buf_append(&b, o->ans + o->error.off, o->error.len);
    sl_buf_append_char(&b, '}');
    o->id = (wire_span_t){(uint32_t)sizeof(head) - 1 - 4 - 9, 4};
    o->len = (uint32_t)b.len;
    o->ans = pool_call_keep(call, &b);
    o->result = (wire_span_t){0, 0};
    o->foreign = 0;
}

static void count(pool_item_t *it, const policy_item_action_t *x)
{
    switch ((policy_item_count_t)x->count) {
    case POLICY_COUNT_NONE:
        return;
    case POLICY_COUNT_LOCAL: /* not an upstream failure */
        if (it->local_failures < UINT8_MAX)
            it->local_failures++;
        return;
    case POLICY_COUNT_FAILURE:
        if (it->failures < UINT8_MAX)
            it->failures++;
        if ((x->seen & POLICY_FAIL_F_TIMEOUT) && it->timeouts < UINT8_MAX)
            it->timeouts++;
        it->fail_seen |= x->seen;
        return;
    case POLICY_COUNT_RATE_LIMITED:
        if (it->rate_limited < UINT8_MAX)
            it->rate_limited++;
        if (x->retry_ms != 0 && (it->retry_after_ms == 0 || x->retry_ms < it->retry_after_ms))
            it->retry_after_ms = x->retry_ms;
        return;
    }
}

/* Makes the item's answer (or its fallback) the attempt's object for it. */
static void keep_answer(pool_item_t *it, policy_verdict_t v, const pool_answer_obj_t *o, int ep)
{
    it->verdict = v;
    it->answer = o != NULL ? o->ans : NULL;
    it->answer_len = o != NULL ? o->len : 0;
    it->answer_id = o != NULL ? o->id : (wire_span_t){0, 0};
    it->answer_result = o != NULL ? o->result : (wire_span_t){0, 0};
    it->endpoint = (int16_t)ep;
}

static void carry_item(pool_call_t *call, pool_endpoint_t *e, pool_item_t *it, const policy_item_action_t *x,
                       policy_shape_t shape, pool_answer_obj_t *o)
{
    int ep = e->index;
    if (x->object && o->foreign)
        rebuild_error(call, o);
    const pool_answer_obj_t *own = x->object ? o : NULL;
    count(it, x);
    if (x->refused)
        pool_method_count(e, it->method, STATE_MC_REFUSALS, 1);
    if (x->fallback) /* returned as-is if no endpoint does better */
        keep_answer(it, x->verdict, own, ep);
    switch ((policy_item_do_t)x->what) {
    case POLICY_ITEM_UNTOUCHED:
    case POLICY_ITEM_NEXT:
        return;
    case POLICY_ITEM_ANSWER:
        keep_answer(it, x->verdict, own, ep);
        pool_item_settle(it, POOL_ITEM_ANSWERED);
        if (x->pin)
            pool_write_accepted(call, it);
        return;
    case POLICY_ITEM_TXID: /* the node has it: answer with the id */
        pool_write_synthesize(call, it, ep, o->txid);
        pool_write_pin(call, ep, o->txid);
        return;
    case POLICY_ITEM_VERIFY: /* the node's own error is the answer if the check finds nothing */
        it->verify = 1;
        it->verify_ep = (int16_t)ep;
        keep_answer(it, x->verdict, own, ep);
        return;
    case POLICY_ITEM_FAIL_AMBIGUOUS:
        pool_item_settle(it, POOL_ITEM_FAILED);
        it->outcome = POOL_OUTCOME_AMBIGUOUS_WRITE;
        return;
    case POLICY_ITEM_FAIL_SHAPED:
        pool_item_settle(it, POOL_ITEM_FAILED);
        it->outcome = shaped_outcome[shape];
        return;
    case POLICY_ITEM_FALLBACK:
        pool_item_settle(it, POOL_ITEM_ANSWERED);
        return;
    }
}

void pool_answer_carry(pool_call_t *call, pool_endpoint_t *e, const policy_attempt_actions_t *a,
                       pool_answer_obj_t *objs)
{
    for (size_t k = 0; k < call->nsent; k++)
        carry_item(call, e, &call->items[call->sent[k]], &a->items[k], a->shape, &objs[k]);
}

static pool_outcome_t item_outcome(const pool_call_t *call, const pool_item_t *it)
{
    if (it->rate_limited > 0)
        return POOL_OUTCOME_RATE_LIMITED;
    if (it->failures > 0 && it->timeouts == it->failures)
        return POOL_OUTCOME_TIMEOUT;
    if (it->failures == 0)
        return it->local_failures > 0 ? POOL_OUTCOME_LOCAL : POOL_OUTCOME_UNAVAILABLE;
    (void)call;
    return POOL_OUTCOME_UPSTREAM_ERROR;
}

void pool_answer_exhaust(pool_call_t *call, pool_outcome_t forced)
{
    for (size_t i = 0; i < call->nitems; i++) {
        pool_item_t *it = &call->items[i];
        if (it->state != POOL_ITEM_PENDING)
            continue;
        if (it->answer != NULL) {
            pool_item_settle(it, POOL_ITEM_ANSWERED);
            continue;
        }
        pool_item_settle(it, POOL_ITEM_FAILED);
        it->outcome = forced != POOL_OUTCOME_OK ? forced : item_outcome(call, it);
    }
}
