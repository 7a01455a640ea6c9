/* pool/pool_call_int.h: pool/'s call layer: one call's lifecycle, its
 * attempt loop and the satellites' rows (pool_call.c draws the order). For
 * the call layer's files and the satellites (each of which includes this
 * header only; its own header comes with it). Below it: the endpoint state
 * (pool/pool_net.h) and the transport (pool/pool_link.h). */
#ifndef POOL_CALL_INT_H
#define POOL_CALL_INT_H

#include "pool/pool_net.h"
#include "pool/pool_broadcast.h"
#include "pool/pool_cache_call.h"
#include "pool/pool_chain_call.h"
#include "pool/pool_coalesce.h"
#include "pool/pool_consensus.h"
#include "pool/pool_hedge.h"
#include "pool/pool_held.h"
#include "pool/pool_merge.h"
#include "pool/pool_pressure.h"

/* An answer's bytes, kept until the call is released (items point into
 * them): bytes of sluice's own, or the socket buffer an answer was read
 * into, taken whole so it is not copied (pool_conn.c). */
typedef struct pool_body {
    sl_buf_t own;
    h2o_buffer_t *in;             /* non-NULL: the bytes are in->bytes[0..in->size) */
} pool_body_t;

static inline const char *pool_body_base(const pool_body_t *b)
{
    return b->in != NULL ? b->in->bytes : b->own.base != NULL ? b->own.base : "";
}

static inline size_t pool_body_len(const pool_body_t *b)
{
    return b->in != NULL ? b->in->size : b->own.len;
}

void pool_body_dispose(pool_body_t *b);

/* A call's lifecycle (pool_call.c's pool_call_move is the one writer of
 * call->state, checked against pool_call_edge_allowed):
 *
 *   NEW --offer taken--> RIDING --answered by the other call--> DONE
 *   NEW, RIDING (it goes upstream itself) --> SENDING | BACKOFF | WAITING | LEASING | SETTLED
 *     (BACKOFF at once when no attempt could even start: each counts)
 *   SENDING, BACKOFF, WAITING, LEASING --> one another, or SETTLED
 *   SETTLED --the callback, from the loop--> DONE
 *   any live state --deadline--> DONE
 *
 * Stopping is one path with a reason (pool_call_stop_t); a release frees
 * the call in any state. */
typedef enum pool_call_state {
    POOL_CALL_NEW,                /* created, not yet offered to the satellites */
    POOL_CALL_RIDING,             /* answered by another call's upstream call (coalesced, merged) */
    POOL_CALL_SENDING,            /* an attempt (or the by-hash check) is in flight */
    POOL_CALL_BACKOFF,            /* waiting to open another round over the endpoints */
    POOL_CALL_WAITING,            /* a confirmation poll waiting for a free slot */
    POOL_CALL_LEASING,            /* a gate said wait: a credit lease from Redis, or a compared
                                     read's votes (pool_consensus.c) */
    POOL_CALL_SETTLED,            /* every item settled: the callback runs from the loop */
    POOL_CALL_DONE,               /* the callback ran: only the release is left */
    POOL_CALL_STATE_COUNT
} pool_call_state_t;

int pool_call_edge_allowed(pool_call_state_t from, pool_call_state_t to);

/* Why a call stops. */
typedef enum pool_call_stop {
    POOL_CALL_FINISHED,           /* every item settled: the callback runs */
    POOL_CALL_DEADLINE,           /* timeouts.request_ms ran out: pending items fail, the callback runs */
    POOL_CALL_RELEASED,           /* the owner let go (done with it, or its client went away) */
} pool_call_stop_t;

/* What a satellite says of an attempt about to be sent. */
typedef enum pool_gate {
    POOL_GATE_GO,                 /* send it */
    POOL_GATE_SKIP,               /* not to this endpoint (marked tried): the plan goes on */
    POOL_GATE_WAIT,               /* the call waits; the satellite calls pool_call_next */
} pool_gate_t;

/* A satellite of the call loop: one file, one row of hooks (any may be
 * NULL). pool_call.c runs the rows in its table's order (see there). */
typedef struct pool_call_row {
    const char *name;
    void (*start)(pool_call_t *call);             /* a call was created (a client's or a carrier) */
    int (*offer)(pool_call_t *call);              /* a client's call: 1 if the satellite took it (RIDING) */
    void (*enter)(pool_call_t *call, pool_call_state_t from, pool_call_state_t to); /* it moved */
    pool_gate_t (*gate)(pool_call_t *call, int ep, int may_wait); /* an attempt at ep is about to be
                                                  * sent (a hedge may not wait) */
    void (*started)(pool_call_t *call, int ep, int is_write); /* the call's own attempt at ep was sent */
    int (*done)(pool_call_t *call, pool_exchange_t *ex); /* an exchange of the call finished, its outcome
                                                     * applied: 1 if the call must wait for another one */
    void (*stop)(pool_call_t *call, pool_call_stop_t why);
    size_t (*bytes)(const pool_call_t *call);     /* answer bytes it holds for the call */
    void (*net_init)(pool_network_t *net);        /* the satellite's state of a network */
    void (*net_dispose)(pool_network_t *net);
} pool_call_row_t;

extern const pool_call_row_t pool_pressure_row, pool_cache_row, pool_merge_row, pool_coalesce_row, pool_hedge_row,
    pool_consensus_row, pool_broadcast_row, pool_chain_row, pool_credit_row, pool_held_row;

/* One client call walking the plan (pool_call.c); answers applied to its
 * items by pool_answer.c. */

struct pool_call {
    pool_network_t *net;
    pool_item_t *items;
    size_t nitems;
    int batch;
    pool_call_cb cb;
    void *data;
    h2o_timeout_entry_t deadline;     /* timeouts.request_ms */
    pool_delay_t method_deadline;     /* an item's methods.<name>.timeout_ms, when it ends first */
    h2o_timeout_entry_t defer;        /* finishing outside pool_call_start */
    uint64_t deadline_ms;             /* monotonic: when timeouts.request_ms runs out */
    pool_call_state_t state;          /* written only by pool_call_move (pool_call.c) */
    pool_exchange_t ex;               /* the call's own attempt (a hedge has its own) */
    int ex_active;
    uint32_t attempts;
    uint8_t tried[POOL_MAX_ENDPOINTS];
    int retry_same;                   /* endpoint allowed once more (stale connection), or -1 */
    int16_t moved_from;               /* the endpoint the last attempt failed at and the call moves on
                                       * from: its failover counts when the next attempt starts, -1 */
    int stale_retry_used;
    int pinned;                       /* endpoint to try first (tx pin), or -1 */
    uint32_t round;                   /* rounds over the endpoints so far (retries) */
    uint8_t no_retry[POOL_MAX_ENDPOINTS]; /* not in later rounds (said "unsupported") */
    pool_delay_t backoff;             /* the wait before the next round */
    pool_credit_wait_t credit_wait;   /* cluster: waiting for a credit lease from Redis */
    uint64_t credits;                 /* credits billed for its attempts, every endpoint (pool_credit_call.c) */
    uint64_t rate_limited_until_ms;   /* ... skipped as rate-limited: the earliest end */
    sl_buf_t req;                     /* upstream body when it is not the client's bytes */
    sl_buf_t verify_req;              /* the by-hash check of a "nonce too low" */
    uint32_t *sent;                   /* indices of the items in the current attempt */
    size_t nsent;
    pool_body_t *bodies;              /* answers kept until release (items point into them) */
    size_t nbodies;
    size_t charged;                   /* their bytes charged to pool->budget */
    pool_attempt_rec_t log[POOL_MAX_ATTEMPT_LOG]; /* [0, nlog) only: not zeroed at creation */
    size_t nlog;                      /* right after log (call_create zeroes around it) */
    uint64_t owner;                   /* the caller's identity (0: none): its share of the depth */
    uint8_t carrier;                  /* sluice's own merged call, not a client's (pool_merge.c) */
    h2o_linklist_t wait_link;         /* in net->waiters while waiting for a slot */
    uint8_t waited;                   /* it waited at least once (counted once) */
    int renumbered;                   /* a single call sent with id 0: its id is not portable */
    const char *body;                 /* the current attempt's upstream body (a hedge sends the same) */
    size_t body_len;
    pool_hedge_call_t hedge;
    /* the satellites' own, each written only by its file */
    pool_pressure_call_t pressure;
    pool_merge_call_t merge;
    pool_coalesce_call_t coalesce;
    pool_held_call_t held;
    pool_chain_call_t chain;
    pool_cache_call_t cache;
    pool_consensus_call_t consensus;
    pool_broadcast_call_t broadcast;
};

/* One finished attempt of a call (pool_attempt.c, pool_answer.c, pool_held.c):
 * pool/ gathers its facts, policy_attempt_decide (policy/attempt.h) returns
 * the actions, pool/ carries them out. */
/* Judges the finished exchange ex of call (an HTTP answer, whose body is
 * bodies[nbodies-1]; a transport failure; or a start that failed, ex->fail
 * set): the items it carried, the endpoint's record, its rate-limit mark and
 * demotion. Returns 0 if the attempt does not count (a kept-alive connection
 * closed before it answered: the same endpoint is tried once more, nothing
 * was recorded; the caller logs no attempt), else 1. */
int pool_attempt_judge(pool_call_t *call, pool_exchange_t *ex);

/* Where one carried item's answer is, as pool_answer_facts found it. */
typedef struct pool_answer_obj {
    const char *ans;              /* its response object in the body, NULL if none */
    uint32_t len;
    wire_span_t id;               /* the id inside it */
    wire_span_t result;           /* its result member ({0, 0}: none), from the same scan */
    wire_span_t error;            /* a single call's error member ... */
    uint8_t foreign;              /* ... when its id is not the one sent: the error is given at id null */
    char txid[128];               /* a pending write's transaction id ("" if none could be read) */
} pool_answer_obj_t;

/* pool_answer.c: the facts of an HTTP answer (the body's shape, f->obj, each
 * carried item's member in fi[] and where it is in objs[], both in the order
 * of call->sent); then the items' actions carried out at endpoint e. */
void pool_answer_facts(pool_call_t *call, policy_attempt_facts_t *f, policy_item_facts_t *fi,
                       pool_answer_obj_t *objs);
void pool_answer_carry(pool_call_t *call, pool_endpoint_t *e, const policy_attempt_actions_t *a,
                       pool_answer_obj_t *objs);
/* Settles every pending item once no further attempt will be made. */
void pool_answer_exhaust(pool_call_t *call, pool_outcome_t forced);

/* pool_call_loop.c, for pool_hedge.c: the next endpoint of call's plan (-1:
 * none); the exchange callback of a call's attempts; an attempt that could
 * not start (fail) at ep. */
int pool_call_plan_next(pool_call_t *call);
/* 1 if ep's method scope (endpoints[].methods, policy_method_scope_admits)
 * admits every pending item of call: the plan sends it nowhere else. */
int pool_call_scope_admits(const pool_call_t *call, const pool_endpoint_t *ep);
void pool_call_on_exchange_done(pool_exchange_t *ex);
/* Starts an attempt of call at endpoint ep through the transport's
 * operations (pool_transport_ops_t: sockets, or a unit test's script);
 * cancels one. */
pool_fail_t pool_call_attempt_start(pool_call_t *call, pool_exchange_t *ex, int ep, const char *body, size_t len,
                                    int is_write, pool_exchange_cb cb);
void pool_call_attempt_cancel(pool_call_t *call, pool_exchange_t *ex);
void pool_call_start_failed(pool_call_t *call, int ep, pool_exchange_t *ex, pool_fail_t fail);
/* Appends one line to the call's attempt log (counts the attempt). */
void pool_call_log_attempt(pool_call_t *call, int ep, pool_fail_t fail, int status, uint32_t latency_us,
                           uint8_t flags);

/* pool_learn.c: what an endpoint said it does not serve (policy/capability.h).
 * pool_learn_from: after an attempt's facts were gathered (a single call's
 * error answer at e), learns from it (an event when it is news).
 * pool_learn_lacks: 1 if e is remembered not to serve a pending item's
 * method, or state as deep as the call reads: the plan puts it last. Forgets
 * what expired first (an event each). */
void pool_learn_from(pool_call_t *call, pool_endpoint_t *e, const policy_attempt_facts_t *f);
int pool_learn_lacks(pool_call_t *call, pool_endpoint_t *e);

/* pool_write.c: idempotent broadcasts, nonce checks, transaction pins. */
int pool_write_txid(const pool_call_t *call, const pool_item_t *it, char *out, size_t cap);
void pool_write_synthesize(pool_call_t *call, pool_item_t *it, int ep, const char *txid);
void pool_write_pin(pool_call_t *call, int ep, const char *txid);
void pool_write_accepted(pool_call_t *call, pool_item_t *it);
int pool_write_find_pin(pool_call_t *call);
int pool_write_verify_body(pool_call_t *call, const pool_item_t *it, sl_buf_t *out);

/* pool_answer.c: the one writer of pool_item_t.state. An item starts
 * PENDING (pool_call_start) and is settled once: to ANSWERED or FAILED. A
 * transition that is not an edge is a bug: logged, then abort(). */
int pool_item_edge_allowed(pool_item_state_t from, pool_item_state_t to);
void pool_item_settle(pool_item_t *it, pool_item_state_t to);
/* The one door for an item's answer made or taken from elsewhere than its
 * own attempts (the cache, a synthesized txid, a consensus vote, a merged or
 * coalesced call's, the getLogs split's): the answer's fields, written
 * together, and the item settled ANSWERED. answer must outlive the item
 * (kept by the item's call, pool_call_keep, or in a shared body). */
typedef struct pool_item_answer {
    policy_verdict_t verdict;
    const char *answer;
    uint32_t answer_len;
    wire_span_t answer_id;        /* the id value, relative to answer */
    wire_span_t answer_result;    /* the result value, relative to answer; {0, 0}: not known */
    int16_t endpoint;             /* the endpoint that answered it, -1 if none as such */
    uint8_t over;                 /* 1: the item may be answered already, and this answer replaces
                                     that one (a refusal the split answers over); 0: it is pending */
} pool_item_answer_t;
void pool_item_answer_set(pool_item_t *it, const pool_item_answer_t *a);
/* A pending item ends as from ended (coalesce, merge): answered, with answer
 * (the caller's copy of from->answer, or from's own bytes if they outlive it
 * too), or failed; its outcome, verdict, endpoint and attempt counts are
 * from's either way. */
void pool_item_answer_copy(pool_item_t *it, const pool_item_t *from, const char *answer);
/* The params of it, relative to it->raw (len 0: none): the span the
 * gateway's parse found, else a scan of raw. 0 if raw does not scan. */
int pool_item_params(const pool_item_t *it, wire_span_t *params);

/* pool_call.c: a freed slot of one of net's endpoints goes to the oldest
 * waiting confirmation poll first. */
void pool_call_wake_waiters(pool_network_t *net);
/* Installs the call layer's hook in the transport (pool_create). */
void pool_call_layer_init(pool_t *pool);
/* Keeps *own with the call until it is released (*own is left empty);
 * returns where its bytes now are. */
const char *pool_call_keep(pool_call_t *call, sl_buf_t *own);
/* The same for a finished exchange's body, wherever it was read, with its
 * charge to the budget; the last body kept is the one pool_answer_facts reads. */
void pool_call_keep_exchange(pool_call_t *call, pool_exchange_t *ex);
/* Every snapshot: waiters whose full endpoints became unusable (a breaker
 * opened, a drain) get their answer now rather than at their deadline. */
void pool_call_recheck_waiters(pool_network_t *net);
/* Starts a call of pool/'s own (a merged poll): not counted as a client's. */
pool_call_t *pool_call_start_carrier(pool_network_t *net, pool_item_t *items, size_t n, int batch, int pinned,
                                     pool_call_cb cb, void *data);
/* Settles a client call from outside its attempt loop (a merged poll's answer). */
void pool_call_finish(pool_call_t *call);
/* Sends a call that was held (a merge it left, or one that went nowhere). */
void pool_call_resume(pool_call_t *call);
/* pool_call_loop.c: the next step of a call's loop (its next attempt, a
 * round's backoff, a wait, or the end): where satellites and timers go on. */
void pool_call_next(pool_call_t *call);
/* pool_call.c: moves call to state to (an edge, or a bug: logged, abort()),
 * telling the satellites; the call's stop path with its reason. */
void pool_call_move(pool_call_t *call, pool_call_state_t to);
void pool_call_stop(pool_call_t *call, pool_call_stop_t why);
/* The rows' gates for an attempt at ep (pool_call.c, as every hook run). */
pool_gate_t pool_call_gate(pool_call_t *call, int ep, int may_wait);
/* Runs the rows' started / done hooks. */
void pool_call_started(pool_call_t *call, int ep, int is_write);
int pool_call_done(pool_call_t *call, pool_exchange_t *ex);
/* Answer bytes the rows hold for the call (pool_call_held adds the call's own). */
size_t pool_call_rows_bytes(const pool_call_t *call);
/* pool_call_wait.c: 1 if a confirmation poll should wait for a slot; its
 * place in the network's line. */
int pool_call_should_wait(pool_call_t *call);
void pool_call_wait_start(pool_call_t *call);
void pool_call_wait_stop(pool_call_t *call);

/* pool_call.c: the satellites' network state, set up and let go with the
 * network (pool.c). */
void pool_call_net_init(pool_network_t *net);
void pool_call_net_dispose(pool_network_t *net);

#endif
