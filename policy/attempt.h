/* policy/attempt.h: what one finished attempt of a call means, as actions.
 *
 * pool/ gathers the facts of an attempt (how its exchange ended, the HTTP
 * status, the body's shape and each carried item's response object, which
 * items are writes or cheap reads, what the call holds back from an earlier
 * endpoint) and calls policy_attempt_decide once; it carries out the actions
 * it gets (settle or move on each item, record the endpoint's outcome or hold
 * it back, mark it rate-limited, demote it). Every mapping from a verdict or
 * a failure to what is done about it lives here: the verdict tables are
 * policy/verdict.h's, the request-shape rules policy/shape.h's, demotion
 * policy/demote.h's. Pure: no allocation, no I/O, no clock. */
#ifndef POLICY_ATTEMPT_H
#define POLICY_ATTEMPT_H

#include <stddef.h>
#include <stdint.h>

#include "base/sl_outcome.h"
#include "policy/chain.h"
#include "policy/demote.h"
#include "policy/method.h"
#include "policy/shape.h"
#include "policy/verdict.h"
#include "wire/envelope.h"

/* What an attempt counts as in its endpoint's statistics: base/'s list, the
 * one state/ stores the counters by (state_outcome_t, value for value). */
typedef enum policy_outcome {
#define POLICY_OUTCOME_ENUM_(name, str) POLICY_OUTCOME_##name,
    SL_OUTCOMES(POLICY_OUTCOME_ENUM_)
#undef POLICY_OUTCOME_ENUM_
    POLICY_OUTCOME_COUNT
} policy_outcome_t;

const char *policy_outcome_name(policy_outcome_t o);

/* What a recorded outcome tells the endpoint's windows (pool/pool_health.c). */
typedef enum policy_evidence {
    POLICY_EVIDENCE_UNSENT,       /* nothing reached the endpoint (sluice's own resources): counted, no latency */
    POLICY_EVIDENCE_NONE,         /* the request's own doing: latency only, neither fails nor vouches for it */
    POLICY_EVIDENCE_REFUSED,      /* a rate limit: the refusal window, not a breaker failure, not served */
    POLICY_EVIDENCE_SERVED,       /* an answer: a success in the breaker window */
    POLICY_EVIDENCE_FAILED,       /* connect errors, resets, timeouts, 5xx, malformed answers: a breaker failure */
    POLICY_EVIDENCE_COUNT
} policy_evidence_t;

/* The evidence of outcome o (an outcome out of range is FAILED). */
policy_evidence_t policy_outcome_evidence(policy_outcome_t o);

/* A transport failure's kind, as pool/'s POOL_FAIL_F_* flags (same values). */
#define POLICY_FAIL_F_AMBIG 0x1   /* the request may have reached the upstream */
#define POLICY_FAIL_F_TIMEOUT 0x2 /* a deadline ran out */
#define POLICY_FAIL_F_LOCAL 0x4   /* sluice's own resources failed, never the endpoint */

/* The body of an HTTP answer, as the call's envelope scan saw it. */
typedef enum policy_body {
    POLICY_BODY_INVALID,          /* neither one JSON-RPC object nor (for a batch) an array of them */
    POLICY_BODY_OBJECT,           /* one object: facts.obj */
    POLICY_BODY_ARRAY,            /* a batch's array: each item's member in its facts */
} policy_body_t;

typedef enum policy_error_form {
    POLICY_ERROR_NONE,            /* no "error" member */
    POLICY_ERROR_DECODED,         /* an error object: err */
    POLICY_ERROR_UNDECODABLE,     /* an "error" member that is no error object */
} policy_error_form_t;

typedef enum policy_id_form {
    POLICY_ID_SENT,               /* the id this attempt sent for the item */
    POLICY_ID_NULL,               /* null, or no id at all */
    POLICY_ID_OTHER,              /* another id */
} policy_id_form_t;

/* One JSON-RPC response object of the answer. */
typedef struct policy_object {
    uint8_t error;                /* policy_error_form_t */
    uint8_t envelope_ok;          /* exactly one of "result" and "error", as JSON-RPC 2.0 requires */
    uint8_t id;                   /* policy_id_form_t (a single call's object; a batch member is matched by id) */
    const char *buf;              /* the object's bytes, which err.data points into */
    uint8_t null_result;          /* "result": null */
    wire_rpc_error_t err;         /* POLICY_ERROR_DECODED */
} policy_object_t;

/* One item the attempt carried. */
typedef struct policy_item_facts {
    const policy_method_t *method; /* its row: class, retry_safe */
    uint8_t cheap;                /* a cheap read, params considered: never slow by nature */
    uint8_t pending;              /* still pending when the attempt ended (the call's other attempt may have settled it) */
    uint8_t has_fallback;         /* holds an earlier endpoint's answer, given if no endpoint does better */
    uint8_t has_txid;             /* a write whose transaction id could be read from its params */
    uint8_t null_behind;          /* a null result from this endpoint means it is behind the block the
                                     item names (pool/'s chain view: policy_chainview_null_is_behind) */
    uint8_t null_next;            /* its method's dispatch is not_null: a null result is kept as the
                                     fallback while the next usable endpoint is asked */
    uint8_t off_range;            /* its result holds logs outside the range it asked for (an endpoint
                                     that ignored the eth_getLogs range): a failed attempt */
    uint8_t member;               /* POLICY_BODY_ARRAY: a member of the array carries its id ... */
    policy_object_t obj;          /* ... this one */
} policy_item_facts_t;

typedef struct policy_attempt_facts {
    policy_chain_t chain;
    uint8_t resend_writes;        /* the network re-sends writes after an ambiguous failure */
    uint8_t broadcast;            /* one of a write's broadcast exchanges (methods.<m>.broadcast): an
                                     ambiguous failure leaves the write pending (NEXT, seen AMBIG) for the
                                     other exchanges' answers; pool/ fails it ambiguous if none answers */
    /* how the exchange ended */
    uint8_t failed;               /* no HTTP answer: fail_* say why */
    policy_outcome_t fail_outcome; /* what the failure class counts as (POOL_FAIL_MAP's outcome) */
    uint8_t fail_flags;           /* POLICY_FAIL_F_* of the failure class */
    uint8_t fail_too_large;       /* the answer was over server.max_response_bytes */
    uint8_t sent;                 /* request bytes were handed to the kernel */
    uint8_t reused;               /* on a kept-alive connection ... */
    uint8_t got_bytes;            /* ... and some answer bytes arrived */
    uint8_t stale_retry_used;     /* the call had its one free retry for a closed kept-alive connection */
    /* the HTTP answer (failed = 0) */
    int status;
    uint32_t retry_after_ms;      /* its Retry-After, 0 if none */
    uint8_t batch;                /* the call was sent as a batch */
    uint8_t body;                 /* policy_body_t */
    policy_object_t obj;          /* POLICY_BODY_OBJECT */
    /* the call */
    policy_shape_t held;          /* the failure it holds back from an earlier endpoint (NONE: none) */
    uint8_t held_here;            /* ... held back from this same endpoint */
    size_t pending_elsewhere;     /* its pending items this attempt did not carry (a by-hash check's) */
    size_t nitems;                /* the items the attempt carried, in the order sent (at least one) */
    const policy_item_facts_t *items;
} policy_attempt_facts_t;

/* What becomes of one carried item. */
typedef enum policy_item_do {
    POLICY_ITEM_UNTOUCHED,        /* not pending, or the attempt does not count */
    POLICY_ITEM_NEXT,             /* stays pending for another endpoint */
    POLICY_ITEM_ANSWER,           /* answered: its object (or none), verdict SUCCESS or DETERMINISTIC */
    POLICY_ITEM_TXID,             /* answered with its transaction id, pinned to the endpoint ("already known") */
    POLICY_ITEM_VERIFY,           /* stays pending: checked by hash at this endpoint ("nonce too low");
                                     its object is the answer if the check finds nothing */
    POLICY_ITEM_FAIL_AMBIGUOUS,   /* failed: a write that may have reached the upstream, not re-sent */
    POLICY_ITEM_FAIL_SHAPED,      /* failed as the request's shape (actions.shape) */
    POLICY_ITEM_FALLBACK,         /* answered with the fallback it holds (request-shaped end) */
} policy_item_do_t;

/* What the attempt adds to an item's tally (pool_answer_exhaust reads it). */
typedef enum policy_item_count {
    POLICY_COUNT_NONE,
    POLICY_COUNT_FAILURE,         /* a failure; seen says of which kind */
    POLICY_COUNT_LOCAL,           /* an attempt sluice could not make */
    POLICY_COUNT_RATE_LIMITED,    /* a refusal; retry_ms says until when */
} policy_item_count_t;

typedef struct policy_item_action {
    uint8_t what;                 /* policy_item_do_t */
    uint8_t count;                /* policy_item_count_t, counted before `what` is carried out */
    uint8_t seen;                 /* POLICY_FAIL_F_AMBIG | _TIMEOUT of a counted failure */
    uint8_t object;               /* its own object in the answer is its answer (ANSWER, VERIFY) or fallback */
    uint8_t fallback;             /* that object becomes its fallback, with verdict */
    uint8_t refused;              /* its method was refused by the endpoint (a per-method counter) */
    uint8_t pin;                  /* ANSWER: an accepted write, pinned to the endpoint */
    policy_verdict_t verdict;     /* ANSWER: SUCCESS or DETERMINISTIC; fallback: the fallback's */
    uint32_t retry_ms;            /* RATE_LIMITED: when the endpoint may take it again (0: unknown) */
} policy_item_action_t;

/* What is written to the endpoint's record for this attempt. */
typedef enum policy_record {
    POLICY_RECORD_NONE,           /* nothing: the attempt does not count */
    POLICY_RECORD_NOW,            /* record_outcome, with failover */
    POLICY_RECORD_HOLD,           /* held back as `shape` until the next endpoint's attempt settles it;
                                     recorded as record_outcome (failover) if nobody does */
} policy_record_t;

typedef struct policy_attempt_actions {
    uint8_t retry_same;           /* the keep-alive race: the same endpoint once more; nothing else is done */
    policy_outcome_t outcome;     /* what the attempt taught about the endpoint (the worst of its items) */
    policy_attempt_end_t end;     /* how it ended, as far as the request's shape goes */
    policy_record_t record;
    policy_outcome_t record_outcome; /* the outcome, or the request shape's when the call proved it */
    uint8_t failover;             /* the call moves on after it (always, for HOLD) */
    policy_held_t held;           /* the earlier endpoint's held failure: KEEP it (or nothing held),
                                     ENDPOINT: record it as its own, REQUEST: record it as record_outcome */
    policy_shape_t shape;         /* HOLD, or held REQUEST: the request's shape */
    uint8_t rate_limit;           /* mark the endpoint rate-limited ... */
    uint32_t rate_limit_ms;       /* ... for this long (0: sluice's own backoff) */
    policy_demote_cause_t demote; /* demote the endpoint (NONE: no) */
    uint8_t no_retry;             /* the endpoint said "unsupported": not in the call's later rounds */
    policy_item_action_t *items;  /* the caller's storage for facts->nitems actions, in the same order */
} policy_attempt_actions_t;

/* Decides everything one finished attempt means. a->items must hold
 * f->nitems entries; every other field of *a is overwritten. */
void policy_attempt_decide(const policy_attempt_facts_t *f, policy_attempt_actions_t *a);

/* What a penalty held as shape (not NONE) counts as when the call ends with
 * nobody to settle it (one usable endpoint, the others drained or open, a
 * cancel or the deadline): the shape's outcome, which is no verdict on the
 * endpoint. A request-shaped failure never counts as the endpoint's by
 * itself: the caller confirms with a cheap read of the endpoint (pool/'s
 * confirm probe), whose failure counts as any probe's does. */
policy_outcome_t policy_attempt_unsettled_outcome(policy_shape_t shape);

#endif
