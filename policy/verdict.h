/* policy/verdict.h: what an upstream's answer means for the call.
 *
 * The same code means different things on different chains and providers
 * (reference/providers.md §A2), so every decision is keyed by chain. Rules
 * are tables of (code, HTTP status, method class, words, data member) ->
 * verdict, first match wins. Pure: no allocation, no I/O. */
#ifndef POLICY_VERDICT_H
#define POLICY_VERDICT_H

#include <stddef.h>
#include <stdint.h>

#include "policy/chain.h"
#include "wire/envelope.h"
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

/* Facts an error carries beside its verdict, for a caller that can act on
 * them; the verdict alone keeps meaning what it always did (pool/ acts on
 * it), so a caller that ignores the flags behaves as before.
 *   LOGS_RANGE: the endpoint refused the size of the request or of its
 *     result (a block range, a log count, a response size: every vendor
 *     words it differently). The verdict is UNSUPPORTED; for eth_getLogs a
 *     narrower range may pass (policy/logsplit.h), for other methods the flag
 *     says nothing more than the verdict.
 *   BEHIND: the endpoint has not reached the block the call names ("header
 *     not found", geth's "block range extends beyond current head block",
 *     Solana -32004/-32005/-32014/-32016). The verdict is MISSING_DATA (next
 *     endpoint); the chain view may learn that this endpoint is below the
 *     block, where a pruned node's MISSING_DATA says nothing of its head. */
#define POLICY_VERDICT_FLAG_MAP(X)                                                                    \
    X(LOGS_RANGE, "the range or result is too large for this endpoint: a narrower eth_getLogs may pass") \
    X(BEHIND, "this endpoint has not reached the block the call names")

typedef enum policy_verdict_flag_bit {
#define POLICY_VERDICT_FLAG_BIT_(name, msg) POLICY_VERDICT_FLAG_BIT_##name,
    POLICY_VERDICT_FLAG_MAP(POLICY_VERDICT_FLAG_BIT_)
#undef POLICY_VERDICT_FLAG_BIT_
    POLICY_VERDICT_FLAG_COUNT
} policy_verdict_flag_bit_t;

#define POLICY_VERDICT_F_LOGS_RANGE (1u << POLICY_VERDICT_FLAG_BIT_LOGS_RANGE)
#define POLICY_VERDICT_F_BEHIND (1u << POLICY_VERDICT_FLAG_BIT_BEHIND)

/* "LOGS_RANGE", ... for bit (not mask) b; "UNKNOWN" past the map. */
const char *policy_verdict_flag_name(unsigned b);

/* Verdict of an HTTP answer whose body is not a JSON-RPC response (or whose
 * status alone decides, as 429 and 5xx do). 2xx gives SUCCESS; 402/429 are
 * RATE_LIMITED; 405/413/415/501 UNSUPPORTED (this endpoint refuses this
 * request, another may not); everything else (401/403/404, 5xx) TRANSIENT. */
policy_verdict_t policy_verdict_http(policy_chain_t chain, int http_status);

/* Verdict of a JSON-RPC error object answered with http_status, for a call of
 * method (NULL: no method class, so no WRITE-only rule applies). buf holds
 * the bytes err->data points into (Infura's data.backoff_seconds, Solana's
 * data.err); NULL if none. *retry_after_ms gets a hint from the body for
 * RATE_LIMITED (0 if none). ALREADY_KNOWN and NONCE_TOO_LOW are only given for
 * WRITE methods; other methods get DETERMINISTIC for the same answers. */
policy_verdict_t policy_verdict_rpc_error(policy_chain_t chain, const policy_method_t *method, int http_status,
                                          const wire_rpc_error_t *err, const char *buf, uint32_t *retry_after_ms);

/* One row of a chain's rule table. A row matches when every condition it sets
 * holds; the first matching row gives the verdict. Public for the table tests
 * (tests/policy/test_verdict.c) only: callers use the functions above. */
typedef struct policy_verdict_rule {
    uint8_t coded;                 /* 1: err->code must lie in [code_lo, code_hi] */
    int64_t code_lo, code_hi;
    uint16_t status_lo, status_hi; /* HTTP status range; 0, 0: any status */
    uint8_t classes;               /* bit (1 << policy_method_class_t); 0: every class */
    const char *const *words;      /* message contains one (case-insensitive); NULL-terminated */
    const char *const *also;       /* ... and one of these as well */
    const char *const *unless;     /* ... and none of these */
    const char *equals;            /* message is exactly this (case-insensitive, trimmed) */
    const char *data_key;          /* data is an object whose member data_key is */
    const char *data_value;        /* ... the JSON string data_value */
    uint8_t catch_all;             /* deliberately matches whatever is left; last row only */
    policy_verdict_t verdict;
    uint8_t flags;                 /* POLICY_VERDICT_F_* the row adds */
} policy_verdict_rule_t;

/* The chain's rule table and its length (static storage); NULL and 0 for a
 * chain out of range. */
const policy_verdict_rule_t *policy_verdict_rules(policy_chain_t chain, size_t *count);

/* As policy_verdict_rpc_error; *rule also gets the index of the deciding row
 * in policy_verdict_rules(chain) (the table's length if none decided), for
 * logs and the table tests. */
policy_verdict_t policy_verdict_rpc_error_rule(policy_chain_t chain, const policy_method_t *method, int http_status,
                                               const wire_rpc_error_t *err, const char *buf, uint32_t *retry_after_ms,
                                               size_t *rule);

/* As policy_verdict_rpc_error; *flags also gets the deciding row's
 * POLICY_VERDICT_F_* (0 when no row decided). */
policy_verdict_t policy_verdict_rpc_error_flags(policy_chain_t chain, const policy_method_t *method, int http_status,
                                                const wire_rpc_error_t *err, const char *buf, uint32_t *retry_after_ms,
                                                unsigned *flags);

#endif
