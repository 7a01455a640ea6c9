/* pool/pool_attempt.c: one finished attempt of a call, judged once.
 *
 * The facts come from the exchange (how it ended, the status, Retry-After),
 * the answer's body (pool_answer_facts) and the call (its items, what it
 * holds back from an earlier endpoint); policy_attempt_decide turns them into
 * actions, carried out here in the order the call needs them: the items
 * first, then the endpoint's demotion, its record (pool_held.c) and its
 * rate-limit mark. */
#include <stdlib.h>
#include <string.h>

#include "base/sl_log.h"
#include "pool/pool_call_int.h"

/* policy/ names pool/'s failure flags in its own words, value for value
 * (the outcomes are one list, base/sl_outcome.h). */
_Static_assert(POLICY_FAIL_F_AMBIG == POOL_FAIL_F_AMBIG && POLICY_FAIL_F_TIMEOUT == POOL_FAIL_F_TIMEOUT &&
                   POLICY_FAIL_F_LOCAL == POOL_FAIL_F_LOCAL,
               "failure flags");

static size_t count_pending(const pool_call_t *call)
{
    size_t n = 0;
    for (size_t i = 0; i < call->nitems; i++)
        n += call->items[i].state == POOL_ITEM_PENDING;
    return n;
}

/* The items the attempt carried, in the order sent; answered: it got an
 * HTTP answer. Returns how many of them are pending. */
static size_t item_facts(pool_call_t *call, int answered, policy_item_facts_t *fi, pool_answer_obj_t *objs)
{
    size_t pending = 0;
    for (size_t k = 0; k < call->nsent; k++) {
        const pool_item_t *it = &call->items[call->sent[k]];
        fi[k].method = it->method;
        fi[k].cheap = it->cheap;
        fi[k].pending = it->state == POOL_ITEM_PENDING;
        fi[k].has_fallback = it->answer != NULL;
        fi[k].null_next = it->method->dispatch == POLICY_DISPATCH_NOT_NULL;
        /* "already known" and "nonce too low" are answers to a write only */
        if (answered && fi[k].pending && it->method->cls == POLICY_CLASS_WRITE)
            fi[k].has_txid = (uint8_t)pool_write_txid(call, it, objs[k].txid, sizeof(objs[k].txid));
        pending += fi[k].pending;
    }
    return pending;
}

static void gather(pool_call_t *call, const pool_exchange_t *ex, policy_attempt_facts_t *f, policy_item_facts_t *fi,
                   pool_answer_obj_t *objs)
{
    const pool_network_conf_t *conf = call->net->conf;
    memset(f, 0, sizeof(*f));
    f->chain = conf->chain;
    f->resend_writes = conf->resend_writes != 0;
    f->broadcast = call->broadcast.on;
    f->failed = ex->fail != POOL_FAIL_NONE;
    f->fail_outcome = (policy_outcome_t)pool_fail_outcome(ex->fail);
    f->fail_flags = (uint8_t)pool_fail_flags(ex->fail);
    f->fail_too_large = ex->fail == POOL_FAIL_TOO_LARGE;
    f->sent = ex->sent != 0;
    f->reused = ex->reused != 0;
    f->got_bytes = ex->got_bytes != 0;
    f->stale_retry_used = call->stale_retry_used != 0;
    f->batch = call->batch != 0;
    f->held = call->held.ep >= 0 ? (policy_shape_t)call->held.shape : POLICY_SHAPE_NONE;
    f->held_here = call->held.ep == ex->link->index;
    f->nitems = call->nsent;
    f->items = fi;
    f->pending_elsewhere = count_pending(call) - item_facts(call, !f->failed, fi, objs);
    if (call->nsent == 1)
        fi[0].null_behind = (uint8_t)pool_chain_null_is_behind(call, ex->link->index);
    if (f->failed)
        return;
    f->status = ex->head.status;
    f->retry_after_ms = pool_http_retry_after_ms(&ex->head);
    pool_answer_facts(call, f, fi, objs);
    if (call->nsent == 1)
        fi[0].off_range = (uint8_t)pool_chain_logs_off_range(call, objs[0].ans, objs[0].len);
}

#define SMALL 4

int pool_attempt_judge(pool_call_t *call, pool_exchange_t *ex)
{
    pool_endpoint_t *e = pool_link_endpoint(ex->link);
    size_t n = call->nsent;
    /* most attempts carry one call: its facts on the stack, no allocation */
    policy_item_facts_t fi_small[SMALL];
    pool_answer_obj_t objs_small[SMALL];
    policy_item_action_t act_small[SMALL];
    int heap = n > SMALL;
    policy_item_facts_t *fi = heap ? sl_xcalloc(n, sizeof(*fi)) : memset(fi_small, 0, n * sizeof(*fi));
    pool_answer_obj_t *objs = heap ? sl_xcalloc(n, sizeof(*objs)) : memset(objs_small, 0, n * sizeof(*objs));
    policy_attempt_facts_t f;
    policy_attempt_actions_t a = {.items = heap ? sl_xcalloc(n, sizeof(*a.items))
                                                : memset(act_small, 0, n * sizeof(*a.items))};
    gather(call, ex, &f, fi, objs);
    pool_learn_from(call, e, &f);
    policy_attempt_decide(&f, &a);
    if (a.retry_same) {
        call->stale_retry_used = 1;
        call->retry_same = e->index;
        sl_log_debug("endpoint %s/%s: kept-alive connection was closed; retrying on a new one", call->net->conf->name,
                     e->conf->id);
    } else {
        pool_answer_carry(call, e, &a, objs);
        if (a.no_retry)
            call->no_retry[e->index] = 1;
        pool_demote(e, a.demote);
        pool_held_carry(call, e->index, &a, ex->latency_us);
        /* a failover counts once the call's next attempt starts (pool_call_next):
         * an attempt whose failure ended the call is none */
        call->moved_from = a.record == POLICY_RECORD_NOW && a.failover ? (int16_t)e->index : -1;
        if (a.rate_limit)
            pool_health_rate_limited(e, a.rate_limit_ms);
    }
    if (heap) {
        free(fi);
        free(objs);
        free(a.items);
    }
    return !a.retry_same;
}
