/* policy/attempt.c: one finished attempt's facts to its actions (policy/attempt.h).
 *
 * In order: the keep-alive race (nothing counts), then each carried item's
 * verdict and what follows from it, the attempt's worst outcome and its end
 * (policy/shape.h), demotion, and last what the endpoint's record gets: now,
 * held back as a possible request shape, or spared because the call proved
 * the shape at a second endpoint. */
#include "policy/attempt.h"

#include <string.h>

static const char *const outcome_names[POLICY_OUTCOME_COUNT] = {
#define POLICY_OUTCOME_NAME_(name, str) [POLICY_OUTCOME_##name] = str,
    SL_OUTCOMES(POLICY_OUTCOME_NAME_)
#undef POLICY_OUTCOME_NAME_
};

/* How bad an outcome is for the endpoint: an attempt of several items keeps
 * the worst. The last four never come from an answer. */
static const uint8_t outcome_rank[POLICY_OUTCOME_COUNT] = {
    [POLICY_OUTCOME_OK] = 0,           [POLICY_OUTCOME_DETERMINISTIC] = 1, [POLICY_OUTCOME_UNSUPPORTED] = 2,
    [POLICY_OUTCOME_MISSING_DATA] = 3, [POLICY_OUTCOME_RATE_LIMITED] = 4,  [POLICY_OUTCOME_HTTP_ERROR] = 5,
    [POLICY_OUTCOME_RESET] = 6,        [POLICY_OUTCOME_TIMEOUT] = 7,       [POLICY_OUTCOME_CONNECT] = 8,
    [POLICY_OUTCOME_MALFORMED] = 9,
    [POLICY_OUTCOME_LOCAL] = 0,        [POLICY_OUTCOME_TOO_LARGE] = 0,     [POLICY_OUTCOME_ID_UNANSWERABLE] = 0,
    [POLICY_OUTCOME_SLOW_CALL] = 0,
};

/* The breaker opens on failures of the endpoint's own (policy/breaker.h): a
 * 429 is a refusal, not a failure; sluice's own resources and a request's
 * shape say nothing about the endpoint. */
static const policy_evidence_t outcome_evidence[POLICY_OUTCOME_COUNT] = {
    [POLICY_OUTCOME_OK] = POLICY_EVIDENCE_SERVED,
    [POLICY_OUTCOME_DETERMINISTIC] = POLICY_EVIDENCE_SERVED,
    [POLICY_OUTCOME_RATE_LIMITED] = POLICY_EVIDENCE_REFUSED,
    [POLICY_OUTCOME_TIMEOUT] = POLICY_EVIDENCE_FAILED,
    [POLICY_OUTCOME_CONNECT] = POLICY_EVIDENCE_FAILED,
    [POLICY_OUTCOME_RESET] = POLICY_EVIDENCE_FAILED,
    [POLICY_OUTCOME_HTTP_ERROR] = POLICY_EVIDENCE_FAILED,
    [POLICY_OUTCOME_MALFORMED] = POLICY_EVIDENCE_FAILED,
    [POLICY_OUTCOME_UNSUPPORTED] = POLICY_EVIDENCE_SERVED,
    [POLICY_OUTCOME_MISSING_DATA] = POLICY_EVIDENCE_SERVED,
    [POLICY_OUTCOME_LOCAL] = POLICY_EVIDENCE_UNSENT,
    [POLICY_OUTCOME_TOO_LARGE] = POLICY_EVIDENCE_NONE,
    [POLICY_OUTCOME_ID_UNANSWERABLE] = POLICY_EVIDENCE_NONE,
    [POLICY_OUTCOME_SLOW_CALL] = POLICY_EVIDENCE_NONE,
};

static const policy_outcome_t verdict_outcome[POLICY_VERDICT_COUNT] = {
    [POLICY_VERDICT_SUCCESS] = POLICY_OUTCOME_OK,
    [POLICY_VERDICT_DETERMINISTIC] = POLICY_OUTCOME_DETERMINISTIC,
    [POLICY_VERDICT_TRANSIENT] = POLICY_OUTCOME_HTTP_ERROR,
    [POLICY_VERDICT_RATE_LIMITED] = POLICY_OUTCOME_RATE_LIMITED,
    [POLICY_VERDICT_MISSING_DATA] = POLICY_OUTCOME_MISSING_DATA,
    [POLICY_VERDICT_UNSUPPORTED] = POLICY_OUTCOME_UNSUPPORTED,
    [POLICY_VERDICT_ALREADY_KNOWN] = POLICY_OUTCOME_OK,
    [POLICY_VERDICT_NONCE_TOO_LOW] = POLICY_OUTCOME_DETERMINISTIC,
};

/* What a request shape counts as once a second endpoint confirmed it. */
static const policy_outcome_t shape_outcome[POLICY_SHAPE_COUNT] = {
    [POLICY_SHAPE_NONE] = POLICY_OUTCOME_OK,
    [POLICY_SHAPE_TOO_LARGE] = POLICY_OUTCOME_TOO_LARGE,
    [POLICY_SHAPE_ID_UNANSWERABLE] = POLICY_OUTCOME_ID_UNANSWERABLE,
    [POLICY_SHAPE_SLOW_CALL] = POLICY_OUTCOME_SLOW_CALL,
};

policy_outcome_t policy_attempt_unsettled_outcome(policy_shape_t shape)
{
    return (unsigned)shape < POLICY_SHAPE_COUNT ? shape_outcome[shape] : POLICY_OUTCOME_OK;
}

const char *policy_outcome_name(policy_outcome_t o)
{
    return (unsigned)o < POLICY_OUTCOME_COUNT ? outcome_names[o] : "unknown";
}

policy_evidence_t policy_outcome_evidence(policy_outcome_t o)
{
    return (unsigned)o < POLICY_OUTCOME_COUNT ? outcome_evidence[o] : POLICY_EVIDENCE_FAILED;
}

typedef struct judge {
    const policy_attempt_facts_t *f;
    policy_attempt_actions_t *a;
    uint32_t transient;           /* answers (objects or whole bodies) judged TRANSIENT ... */
    uint32_t gave_up;             /* ... of which said the upstream gave up for time */
    int unread;                   /* a single call answered with an error at id null */
} judge_t;

static int is_write(const policy_item_facts_t *it)
{
    return !it->method->retry_safe;
}

static int is_2xx(int status)
{
    return status >= 200 && status < 300;
}

static void note_outcome(judge_t *j, policy_outcome_t o)
{
    if (outcome_rank[o] > outcome_rank[j->a->outcome])
        j->a->outcome = o;
}

/* err: the JSON-RPC error the verdict came from, NULL if none. */
static void note_transient(judge_t *j, policy_verdict_t v, const wire_rpc_error_t *err)
{
    if (v != POLICY_VERDICT_TRANSIENT)
        return;
    j->transient++;
    j->gave_up += (uint32_t)policy_shape_gave_up(j->f->status, err);
}

/* Item i failed (flags: POLICY_FAIL_F_* of the failure). It moves on, unless
 * it is a write that may have reached the upstream (ambiguous) and the
 * operator did not opt in to re-sending. */
static void item_failed(judge_t *j, size_t i, unsigned flags, int ambiguous)
{
    policy_item_action_t *x = &j->a->items[i];
    if (flags & POLICY_FAIL_F_LOCAL) {
        x->count = POLICY_COUNT_LOCAL;
    } else {
        x->count = POLICY_COUNT_FAILURE;
        x->seen = (uint8_t)(flags & (POLICY_FAIL_F_AMBIG | POLICY_FAIL_F_TIMEOUT));
    }
    int stop = ambiguous && is_write(&j->f->items[i]) && !j->f->resend_writes;
    if (stop && j->f->broadcast) { /* the other endpoints of the broadcast may still answer it */
        x->count = POLICY_COUNT_FAILURE;
        x->seen |= POLICY_FAIL_F_AMBIG;
        stop = 0;
    }
    x->what = stop ? POLICY_ITEM_FAIL_AMBIGUOUS : POLICY_ITEM_NEXT;
}

static void answer(policy_item_action_t *x, policy_verdict_t v, int object, int pin)
{
    x->what = POLICY_ITEM_ANSWER;
    x->verdict = v;
    x->object = (uint8_t)object;
    x->pin = (uint8_t)pin;
}

/* A null result for a block another endpoint has: this endpoint has not
 * reached it (the view was stale when the call was sent), so the null is
 * missing data, kept as a fallback while the next endpoint is asked. So is
 * any null of a method dispatched not_null (a lookup another endpoint may
 * answer: a transaction only some mempools or indexes have yet). */
static int null_behind(const policy_attempt_facts_t *f, const policy_item_facts_t *it)
{
    const policy_object_t *o = f->batch ? &it->obj : &f->obj;
    return (it->null_behind || it->null_next) && o->error == POLICY_ERROR_NONE && o->null_result;
}

/* Verdict v for item i; object: its own response object is in the answer. */
static void item_verdict(judge_t *j, size_t i, policy_verdict_t v, uint32_t retry_ms, int object)
{
    const policy_attempt_facts_t *f = j->f;
    const policy_item_facts_t *it = &f->items[i];
    policy_attempt_actions_t *a = j->a;
    policy_item_action_t *x = &a->items[i];
    uint32_t ms = retry_ms != 0 ? retry_ms : f->retry_after_ms;
    if (v == POLICY_VERDICT_SUCCESS && object && null_behind(f, it)) {
        v = POLICY_VERDICT_MISSING_DATA;
        /* a lookup's null is what this endpoint knows now: not asked again in a later round */
        if (!it->null_behind)
            a->no_retry = 1;
    }
    if (v == POLICY_VERDICT_SUCCESS && object && it->off_range)
        v = POLICY_VERDICT_TRANSIENT; /* a wrong answer: never given, the endpoint counted as failed */
    note_outcome(j, verdict_outcome[v]);
    switch (v) {
    case POLICY_VERDICT_ALREADY_KNOWN: /* the node has it: the broadcast succeeded */
        if (it->has_txid)
            x->what = POLICY_ITEM_TXID;
        else
            answer(x, POLICY_VERDICT_DETERMINISTIC, object, 0);
        return;
    case POLICY_VERDICT_NONCE_TOO_LOW: /* maybe mined already: ask the same node by hash first */
        answer(x, POLICY_VERDICT_DETERMINISTIC, object, 0);
        if (it->has_txid)
            x->what = POLICY_ITEM_VERIFY;
        return;
    case POLICY_VERDICT_SUCCESS:
    case POLICY_VERDICT_DETERMINISTIC:
        answer(x, v, object, v == POLICY_VERDICT_SUCCESS && it->method->cls == POLICY_CLASS_WRITE);
        return;
    case POLICY_VERDICT_RATE_LIMITED: /* refused before processing: safe to move on, writes included */
        if (!a->rate_limit || (ms != 0 && ms > a->rate_limit_ms))
            a->rate_limit_ms = ms;
        a->rate_limit = 1;
        x->what = POLICY_ITEM_NEXT;
        x->count = POLICY_COUNT_RATE_LIMITED;
        x->retry_ms = ms;
        x->refused = 1;
        return;
    case POLICY_VERDICT_UNSUPPORTED:
        a->no_retry = 1; /* asking it again will not change its mind */
        /* fall through */
    case POLICY_VERDICT_MISSING_DATA:
        if (object) { /* returned as-is if no endpoint does better */
            x->object = x->fallback = 1;
            x->verdict = v;
        }
        item_failed(j, i, 0, v == POLICY_VERDICT_MISSING_DATA);
        return;
    case POLICY_VERDICT_TRANSIENT:
        /* the upstream got the request: for a write that is ambiguous (a
         * JSON-RPC error for a whole batch included), except for a redirect
         * or a 4xx refusal (authentication, wrong path) */
        item_failed(j, i, 0, f->status < 300 || f->status >= 500);
        return;
    case POLICY_VERDICT_COUNT:
        break;
    }
}

/* One verdict for every pending item, none with an object of its own. */
static void all_items(judge_t *j, policy_verdict_t v, uint32_t retry_ms)
{
    for (size_t i = 0; i < j->f->nitems; i++)
        if (j->f->items[i].pending)
            item_verdict(j, i, v, retry_ms, 0);
}

/* The answer is no answer for the call (not JSON-RPC, wrong id): every
 * pending item failed as malformed, which a write may have reached. */
static void all_malformed(judge_t *j)
{
    note_outcome(j, POLICY_OUTCOME_MALFORMED);
    for (size_t i = 0; i < j->f->nitems; i++)
        if (j->f->items[i].pending)
            item_failed(j, i, POLICY_FAIL_F_AMBIG, 1);
}

static policy_verdict_t object_verdict(judge_t *j, const policy_object_t *o, const policy_method_t *method,
                                       uint32_t *retry_ms)
{
    const policy_attempt_facts_t *f = j->f;
    policy_verdict_t v;
    *retry_ms = 0;
    switch ((policy_error_form_t)o->error) {
    case POLICY_ERROR_NONE:
        v = is_2xx(f->status) ? POLICY_VERDICT_SUCCESS : policy_verdict_http(f->chain, f->status);
        note_transient(j, v, NULL);
        return v;
    case POLICY_ERROR_UNDECODABLE:
        note_transient(j, POLICY_VERDICT_TRANSIENT, NULL);
        return POLICY_VERDICT_TRANSIENT;
    case POLICY_ERROR_DECODED:
        break;
    }
    v = policy_verdict_rpc_error(f->chain, method, f->status, &o->err, o->buf, retry_ms);
    note_transient(j, v, &o->err);
    return v;
}

/* A 429, 402 or 5xx. The status says rate limit or transient, but the body
 * may say more: Infura's data.backoff_seconds sets the mark, OP-Stack's
 * "sender is over rate limit" is the sender's own limit (deterministic), and
 * a write the node "already knows" in a 5xx was broadcast. So a JSON-RPC
 * error in the body is judged with the status (policy/verdict.c: rows above
 * STATUS_ROWS speak first); a body that is none leaves the status to decide. */
static void judge_refusal(judge_t *j)
{
    const policy_attempt_facts_t *f = j->f;
    const policy_object_t *o = &f->obj;
    policy_verdict_t by_status = policy_verdict_http(f->chain, f->status);
    if (f->body != POLICY_BODY_OBJECT || o->error != POLICY_ERROR_DECODED) {
        note_transient(j, by_status, NULL);
        all_items(j, by_status, 0);
        return;
    }
    uint32_t retry_ms = 0;
    policy_verdict_t v = policy_verdict_rpc_error(f->chain, f->items[0].method, f->status, &o->err, o->buf, &retry_ms);
    int answers = v == POLICY_VERDICT_DETERMINISTIC || v == POLICY_VERDICT_ALREADY_KNOWN ||
                  v == POLICY_VERDICT_NONCE_TOO_LOW;
    if (!answers) {
        policy_verdict_t all = v == POLICY_VERDICT_RATE_LIMITED || v == POLICY_VERDICT_TRANSIENT ? v : by_status;
        note_transient(j, all, &o->err);
        all_items(j, all, retry_ms);
        return;
    }
    if (f->batch || f->nitems != 1) { /* one error for a whole batch is no member's answer */
        note_transient(j, by_status, &o->err);
        all_items(j, by_status, 0);
        return;
    }
    if (f->items[0].pending)
        item_verdict(j, 0, v, retry_ms, 1);
}

static void judge_single(judge_t *j)
{
    const policy_attempt_facts_t *f = j->f;
    const policy_object_t *o = &f->obj;
    if (f->body != POLICY_BODY_OBJECT || !o->envelope_ok) {
        if (is_2xx(f->status)) {
            all_malformed(j);
        } else {
            policy_verdict_t v = policy_verdict_http(f->chain, f->status);
            note_transient(j, v, NULL);
            all_items(j, v, 0);
        }
        return;
    }
    if (o->id != POLICY_ID_SENT && (f->status == 401 || f->status == 403)) {
        /* an authentication refusal written as a JSON-RPC error at id null
         * (Alchemy's "Must be authenticated!", many proxies'): refused before
         * anything was processed, the status decides as for a plain body */
        policy_verdict_t v = policy_verdict_http(f->chain, f->status);
        note_transient(j, v, NULL);
        all_items(j, v, 0);
        return;
    }
    if (o->id != POLICY_ID_SENT) {
        /* an error at id null: the upstream could not read the call (it may
         * be the request's doing: the next endpoint settles that) */
        j->unread = o->error == POLICY_ERROR_DECODED && o->id == POLICY_ID_NULL && policy_shape_unread(&o->err);
        all_malformed(j);
        return;
    }
    uint32_t retry_ms;
    policy_verdict_t v = object_verdict(j, o, f->items[0].method, &retry_ms);
    if (f->items[0].pending)
        item_verdict(j, 0, v, retry_ms, 1);
}

static void judge_batch(judge_t *j)
{
    const policy_attempt_facts_t *f = j->f;
    uint32_t retry_ms;
    if (f->body == POLICY_BODY_OBJECT) { /* the upstream refused the batch itself */
        if (f->obj.error == POLICY_ERROR_NONE) {
            all_malformed(j);
            return;
        }
        policy_verdict_t v = object_verdict(j, &f->obj, f->items[0].method, &retry_ms);
        if (v == POLICY_VERDICT_SUCCESS || v == POLICY_VERDICT_DETERMINISTIC)
            v = POLICY_VERDICT_UNSUPPORTED; /* e.g. "batch requests are not supported" */
        all_items(j, v, retry_ms);
        return;
    }
    if (f->body != POLICY_BODY_ARRAY) {
        all_malformed(j);
        return;
    }
    for (size_t i = 0; i < f->nitems; i++) {
        const policy_item_facts_t *it = &f->items[i];
        if (!it->pending)
            continue;
        if (it->member) {
            policy_verdict_t v = object_verdict(j, &it->obj, it->method, &retry_ms);
            item_verdict(j, i, v, retry_ms, 1);
        } else { /* missing from the batch: fails alone */
            note_outcome(j, POLICY_OUTCOME_MALFORMED);
            item_failed(j, i, 0, 1);
        }
    }
}

static policy_attempt_end_t judge_answer(judge_t *j)
{
    int status = j->f->status;
    if (status == 429 || status == 402 || status >= 500)
        judge_refusal(j);
    else if (j->f->batch)
        judge_batch(j);
    else
        judge_single(j);
    policy_outcome_t o = j->a->outcome;
    if (j->unread)
        return POLICY_END_UNREAD;
    if (o == POLICY_OUTCOME_RATE_LIMITED)
        return POLICY_END_NEUTRAL;
    /* every failure in it was the upstream giving up for time; a malformed
     * member beside them (an outcome worse than HTTP_ERROR) is no give-up */
    if (j->gave_up > 0 && j->gave_up == j->transient && o == POLICY_OUTCOME_HTTP_ERROR)
        return POLICY_END_GAVE_UP;
    return POLICY_END_OTHER;
}

static policy_attempt_end_t judge_transport(judge_t *j)
{
    const policy_attempt_facts_t *f = j->f;
    unsigned fl = f->fail_flags;
    /* a local failure after sending (no room for the answer) leaves a write ambiguous too */
    int ambiguous = f->sent && (fl & (POLICY_FAIL_F_AMBIG | POLICY_FAIL_F_LOCAL));
    j->a->outcome = f->fail_outcome;
    for (size_t i = 0; i < f->nitems; i++)
        if (f->items[i].pending)
            item_failed(j, i, fl, ambiguous);
    if (fl & POLICY_FAIL_F_LOCAL)
        return POLICY_END_NEUTRAL;
    if (f->fail_too_large)
        return POLICY_END_TOO_LARGE;
    /* a deadline that ran out once the request may have reached the upstream
     * (first byte, whole attempt), not while connecting */
    if ((fl & POLICY_FAIL_F_TIMEOUT) && (fl & POLICY_FAIL_F_AMBIG))
        return POLICY_END_TIMEOUT;
    return POLICY_END_OTHER;
}

/* The classic keep-alive race: a reused connection the upstream had closed
 * before it answered anything. Not the endpoint's fault; one free retry,
 * for calls without writes. */
static int stale_connection(const policy_attempt_facts_t *f)
{
    if (!f->failed || f->fail_outcome != POLICY_OUTCOME_RESET || !f->reused || f->got_bytes || f->stale_retry_used)
        return 0;
    for (size_t i = 0; i < f->nitems; i++)
        if (is_write(&f->items[i]))
            return 0;
    return 1;
}

/* 1 if the attempt carried a call that may be slow by nature (not a cheap read). */
static int carries_heavy(const policy_attempt_facts_t *f)
{
    for (size_t i = 0; i < f->nitems; i++)
        if (!f->items[i].cheap)
            return 1;
    return 0;
}

static int moves_on(const judge_t *j)
{
    if (j->f->pending_elsewhere > 0)
        return 1;
    for (size_t i = 0; i < j->f->nitems; i++)
        if (j->a->items[i].what == POLICY_ITEM_NEXT || j->a->items[i].what == POLICY_ITEM_VERIFY)
            return 1;
    return 0;
}

/* Two endpoints failed the call the same way: neither is penalised, and
 * the items still pending end with the shape's outcome (one holding an
 * answer as a fallback gets that). */
static void settle_request(judge_t *j, policy_shape_t shape)
{
    policy_attempt_actions_t *a = j->a;
    a->held = POLICY_HELD_REQUEST;
    a->shape = shape;
    a->record = POLICY_RECORD_NOW;
    a->record_outcome = shape_outcome[shape];
    a->failover = 0;
    for (size_t i = 0; i < j->f->nitems; i++) {
        policy_item_action_t *x = &a->items[i];
        int holds;
        if (x->what == POLICY_ITEM_VERIFY)
            holds = x->object; /* its object, as the check's fallback */
        else if (x->what == POLICY_ITEM_NEXT)
            holds = j->f->items[i].has_fallback || x->fallback;
        else
            continue;
        x->fallback = x->fallback || (x->what == POLICY_ITEM_VERIFY && holds);
        x->what = holds ? POLICY_ITEM_FALLBACK : POLICY_ITEM_FAIL_SHAPED;
    }
}

/* The endpoint's record, and the one held back from an earlier endpoint
 * (policy/shape.h): the same endpoint again proves nothing. */
static void decide_record(judge_t *j, int heavy)
{
    const policy_attempt_facts_t *f = j->f;
    policy_attempt_actions_t *a = j->a;
    a->record_outcome = a->outcome;
    a->held = POLICY_HELD_KEEP;
    if (f->held != POLICY_SHAPE_NONE) {
        policy_held_t h = f->held_here ? POLICY_HELD_UNSETTLED : policy_shape_settle(f->held, a->end, heavy);
        if (h == POLICY_HELD_REQUEST) {
            settle_request(j, f->held);
            return;
        }
        a->held = h;
    }
    int still_held = f->held != POLICY_SHAPE_NONE && a->held == POLICY_HELD_KEEP;
    int moving_on = moves_on(j);
    policy_shape_t suspect = policy_shape_suspect(a->end, heavy);
    a->failover = (uint8_t)moving_on;
    if (suspect != POLICY_SHAPE_NONE && moving_on && !still_held) {
        a->record = POLICY_RECORD_HOLD;
        a->shape = suspect;
        return;
    }
    a->record = POLICY_RECORD_NOW;
}

void policy_attempt_decide(const policy_attempt_facts_t *f, policy_attempt_actions_t *a)
{
    policy_item_action_t *items = a->items;
    memset(a, 0, sizeof(*a));
    memset(items, 0, f->nitems * sizeof(*items));
    a->items = items;
    if (stale_connection(f)) {
        a->retry_same = 1;
        return;
    }
    judge_t j = {f, a, 0, 0, 0};
    a->end = f->failed ? judge_transport(&j) : judge_answer(&j);
    int heavy = carries_heavy(f);
    a->demote = policy_demote_cause(a->outcome == POLICY_OUTCOME_TIMEOUT, a->outcome == POLICY_OUTCOME_RESET, heavy);
    decide_record(&j, heavy);
}
