/* base/sl_outcome.h: what one upstream attempt counts as, as one list.
 *
 * state/ stores the counters by it (state_outcome_t) and policy/ decides
 * with it (policy_outcome_t); neither room may include the other, so both
 * enums are generated from this list and agree value for value. X(name,
 * the name in records and metrics). */
#ifndef SL_OUTCOME_H
#define SL_OUTCOME_H

#define SL_OUTCOMES(X)                                                                    \
    X(OK, "ok")                                                                           \
    X(DETERMINISTIC, "deterministic_error")                                               \
    X(RATE_LIMITED, "rate_limited")                                                       \
    X(TIMEOUT, "timeout")                                                                 \
    X(CONNECT, "connect_error")                                                           \
    X(RESET, "reset")                                                                     \
    X(HTTP_ERROR, "http_error")                                                           \
    X(MALFORMED, "malformed")                                                             \
    X(UNSUPPORTED, "unsupported")                                                         \
    X(MISSING_DATA, "missing_data")                                                       \
    /* never the endpoint's fault: no breaker failure, no score penalty */                \
    X(LOCAL, "local_error")          /* sluice's own resources (fds, memory, temp files) */ \
    X(TOO_LARGE, "too_large")        /* request-shaped (policy/shape.h) */                 \
    X(ID_UNANSWERABLE, "id_unanswerable")                                                 \
    X(SLOW_CALL, "slow_call")

#endif
