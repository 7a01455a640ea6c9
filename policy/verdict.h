/* policy/verdict.h: what an upstream's answer means for the call.
 *
 * The same code means different things on different chains and providers
 * (reference/providers.md §A2), so every decision is keyed by chain. Rules
 * are tables of (code, words) -> verdict, first match wins. Pure. */
#ifndef POLICY_VERDICT_H
#define POLICY_VERDICT_H

#include <stdint.h>

#include "policy/chain.h"
#include "policy/envelope.h"
#include "policy/method.h"

#define POLICY_VERDICT_MAP(X)                                                             \
    X(SUCCESS, "success")                                                                 \
    X(DETERMINISTIC, "deterministic error: any endpoint would answer the same")           \
    X(TRANSIENT, "transient failure of this endpoint")                                    \
    X(RATE_LIMITED, "rate limited by this endpoint")                                      \
    X(MISSING_DATA, "this endpoint lacks the data (pruned or lagging)")                   \
    X(UNSUPPORTED, "this endpoint does not support the method")                            \
    X(ALREADY_KNOWN, "the node already has this transaction: the broadcast succeeded")     \
    X(NONCE_TOO_LOW, "nonce too low: the transaction may already be mined (check by hash)")

typedef enum policy_verdict {
#define POLICY_VERDICT_ENUM_(name, msg) POLICY_VERDICT_##name,
    POLICY_VERDICT_MAP(POLICY_VERDICT_ENUM_)
#undef POLICY_VERDICT_ENUM_
    POLICY_VERDICT_COUNT
} policy_verdict_t;

const char *policy_verdict_name(policy_verdict_t v);
const char *policy_verdict_str(policy_verdict_t v);

/* Verdict of an HTTP answer whose body is not a JSON-RPC response (or whose
 * status alone decides, as 429 and 5xx do). 2xx is never passed here. */
policy_verdict_t policy_verdict_http(policy_chain_t chain, int http_status);

/* Verdict of a JSON-RPC error object answered with http_status. buf holds the
 * bytes err->data points into (for Infura's data.backoff_seconds);
 * *retry_after_ms gets a hint from the body for RATE_LIMITED (0 if none). */
policy_verdict_t policy_verdict_rpc_error(policy_chain_t chain, const policy_method_t *method, int http_status,
                                          const policy_rpc_error_t *err, const char *buf, uint32_t *retry_after_ms);

#endif
