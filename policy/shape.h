/* policy/shape.h: failures the request brings on itself.
 *
 * Some failures say as much about the call as about the endpoint: an answer
 * over server.max_response_bytes, a heavy call (eth_call, eth_getLogs,
 * trace_*: any call that is not a cheap read) that outlives the attempt
 * deadlines or that the provider itself gave up on for time (-32002 "request
 * timed out", "execution aborted (timeout = 5s)", an HTTP 502/504 from its
 * own gateway), a call the upstream could not read and answered with an error
 * at id null. One endpoint failing so cannot be told from an endpoint fault;
 * the next endpoint failing the same way shows that the request is the cause.
 * So the pool holds the first endpoint's penalty until the next attempt
 * settles it (policy_shape_settle):
 *   - the same failure again: request-shaped. Neither endpoint is penalised
 *     (no breaker failure, no score penalty) and the call stops there with a
 *     precise error: a request-shaped call tries POLICY_SHAPE_ENDPOINTS
 *     endpoints, not the whole plan;
 *   - any other outcome: the held failure was the endpoint's and counts;
 *   - an attempt that says nothing about the request (a rate limit, a local
 *     resource failure): the penalty stays held.
 * A penalty still held when the call ends (nobody could settle it: the
 * last usable endpoint, a cancel, the deadline) never counts as the
 * endpoint's by itself: it counts as its shape's outcome, and a cheap read
 * of the endpoint confirms (policy_attempt_unsettled_outcome): a hung or
 * broken endpoint fails that too and still trips its breaker, while slow
 * calls alone cannot open the last usable endpoint's. Pure. */
#ifndef POLICY_SHAPE_H
#define POLICY_SHAPE_H

#include "wire/envelope.h"

#define POLICY_SHAPE_MAP(X)                                                                         \
    X(NONE, "none")                                                                                 \
    X(TOO_LARGE, "too_large")                                                                       \
    X(ID_UNANSWERABLE, "id_unanswerable")                                                           \
    X(SLOW_CALL, "slow_call")

typedef enum policy_shape {
#define POLICY_SHAPE_ENUM_(name, str) POLICY_SHAPE_##name,
    POLICY_SHAPE_MAP(POLICY_SHAPE_ENUM_)
#undef POLICY_SHAPE_ENUM_
    POLICY_SHAPE_COUNT
} policy_shape_t;

/* The one that failed and the one that failed the same way. */
#define POLICY_SHAPE_ENDPOINTS 2

/* How one attempt ended, as far as the request's shape goes. */
typedef enum policy_attempt_end {
    POLICY_END_OTHER,        /* an answer, or a failure of the endpoint's own */
    POLICY_END_NEUTRAL,      /* says nothing about the request: a rate limit, a local resource failure */
    POLICY_END_TOO_LARGE,    /* the answer was over server.max_response_bytes */
    POLICY_END_TIMEOUT,      /* the request was sent; no complete answer within first_byte_ms / attempt_ms */
    POLICY_END_GAVE_UP,      /* the upstream answered that it gave up on the call for time
                                (policy_shape_gave_up), and failed it no other way */
    POLICY_END_UNREAD,       /* an error answered at id null: the upstream could not read the call */
    POLICY_END_COUNT
} policy_attempt_end_t;

typedef enum policy_held {
    POLICY_HELD_KEEP,        /* no evidence either way: keep holding */
    POLICY_HELD_REQUEST,     /* the same failure again: request-shaped, nobody's fault */
    POLICY_HELD_ENDPOINT,    /* another outcome: the held failure was the endpoint's */
    POLICY_HELD_UNSETTLED,   /* the same endpoint again proves nothing either way: released as a
                                penalty nobody settled (policy_attempt_unsettled_outcome) */
} policy_held_t;

const char *policy_shape_name(policy_shape_t s);

/* The request shape an attempt's end suggests, or POLICY_SHAPE_NONE. heavy:
 * the attempt carried a call that may legitimately be slow (a method that is
 * not a cheap read, policy_method_t.cheap); a cheap call that times out is
 * the endpoint's fault. */
policy_shape_t policy_shape_suspect(policy_attempt_end_t end, int heavy);

/* Settles a penalty held for shape `held` (not NONE) by the next endpoint's
 * attempt, which ended with `next` (heavy as above). */
policy_held_t policy_shape_settle(policy_shape_t held, policy_attempt_end_t next, int heavy);

/* 1 if an answer judged TRANSIENT (policy/verdict.h) says the upstream gave
 * up on the call for time rather than failed: an HTTP 502 or 504 (a
 * provider's gateway that stopped waiting for its node), or a JSON-RPC error
 * (err, NULL if the body held none) whose message speaks of a timeout
 * (geth's -32002 "request timed out", "execution aborted (timeout = 5s)",
 * "request timeout", "context deadline exceeded"). Only the verdict's
 * TRANSIENT answers are asked: a rate limit or a revert that mentions time is
 * still what its verdict says. */
int policy_shape_gave_up(int http_status, const wire_rpc_error_t *err);

/* 1 if err, answered at id null (or without an id), says the upstream could
 * not read the call: -32700 parse error or -32600 invalid request, what a
 * server sends when the id itself is what it could not take. Any other error
 * at id null (an outage page, "no backend available") is the endpoint's
 * wrong answer, never POLICY_END_UNREAD. */
int policy_shape_unread(const wire_rpc_error_t *err);

#endif
