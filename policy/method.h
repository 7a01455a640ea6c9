/* policy/method.h: what each JSON-RPC method is, per chain.
 *
 * Behaviour keys off the flags in one table per chain (policy/method.c),
 * never off method names in `if`s: "get..." is not "read" (simulateTransaction
 * is a read, getSignatureStatuses is a confirmation poll). Pure. */
#ifndef POLICY_METHOD_H
#define POLICY_METHOD_H

#include <stddef.h>
#include <stdint.h>

#include "policy/chain.h"
#include "wire/envelope.h"

typedef enum policy_method_class {
    POLICY_CLASS_READ,          /* state reads: any endpoint, retry freely */
    POLICY_CLASS_WRITE,         /* broadcasts: never re-sent after an ambiguous failure */
    POLICY_CLASS_CONFIRM,       /* confirmation polls of a sent transaction */
    POLICY_CLASS_SIMULATE,      /* read-only execution: eth_call, simulateTransaction */
    POLICY_CLASS_SUBSCRIBE,     /* needs a WebSocket; refused over HTTP */
    POLICY_CLASS_BLOCKED,       /* node administration: refused by default */
    POLICY_CLASS_COUNT
} policy_method_class_t;

typedef enum policy_priority {
    POLICY_PRIO_LOW,            /* shed first: heavy scans, simulations */
    POLICY_PRIO_NORMAL,
    POLICY_PRIO_HIGH,           /* broadcasts */
    POLICY_PRIO_CRITICAL,       /* confirmations: shed last */
} policy_priority_t;

/* How a method's answer can go stale: the response cache's column
 * (policy/cache.h decides per call from it). */
typedef enum policy_cache_kind {
    POLICY_CACHE_NONE,          /* never kept: it answers about now */
    POLICY_CACHE_STATIC,        /* the chain's constants: the same answer for ever */
    POLICY_CACHE_BLOCK,         /* names a block (policy/blockref.h): kept when the block cannot change */
    POLICY_CACHE_TX,            /* a transaction by hash: kept once its answer shows a finalized block */
} policy_cache_kind_t;

/* How a call of a method is dispatched (methods.<name>.dispatch): the
 * method table's column, overridable per network. */
typedef enum policy_dispatch {
    POLICY_DISPATCH_FIRST,      /* the first usable answer is the answer */
    POLICY_DISPATCH_NOT_NULL,   /* a null result tries the next usable endpoint; the null is the
                                   answer if nobody has better (policy/attempt.c) */
    POLICY_DISPATCH_MAX,        /* `of` endpoints at once, the highest answer (a hex quantity: a nonce;
                                   pool/pool_consensus.c, policy_consensus_max) */
    POLICY_DISPATCH_COUNT
} policy_dispatch_t;

typedef struct policy_method {
    const char *name;
    policy_method_class_t cls;
    policy_priority_t priority;
    uint8_t retry_safe;         /* 1: may be sent to another endpoint after an ambiguous failure */
    uint8_t cheap;              /* 1: a cheap read, metered in the client's larger "read" bucket.
                                   A conservative allowlist: nothing that executes code or scans */
    uint8_t solo;               /* 1: never shares an upstream call with identical calls in flight
                                   (the rows for methods no table knows: what they do is unknown) */
    uint8_t cache;              /* policy_cache_kind_t */
    uint32_t timeout_ms;        /* methods.<name>.timeout_ms: a call of it ends by then, every attempt
                                   in it too (pool/pool_call.c); 0 = the network's timeouts */
    uint8_t dispatch;           /* policy_dispatch_t */
    uint8_t of;                 /* POLICY_DISPATCH_MAX: endpoints asked (2 or more) */
    uint8_t broadcast;          /* methods.<name>.broadcast: a WRITE sent to this many endpoints at once
                                   (2 or more; pool/pool_broadcast.c); 0 = one endpoint at a time */
} policy_method_t;

/* Looks up name[0..len) in the chain's table. A method not in the table gets
 * a shared row with an empty name: a WRITE (not retry-safe, HIGH) if its
 * name says it changes state (policy_method_sounds_like_write), else a
 * retry-safe READ of NORMAL priority; both are solo. NULL is never returned. */
const policy_method_t *policy_method_lookup(policy_chain_t chain, const char *name, size_t len);

/* As policy_method_lookup, but rows in overrides[0..n) (from the config)
 * come first. overrides need not be sorted. */
const policy_method_t *policy_method_lookup_in(const policy_method_t *overrides, size_t n, policy_chain_t chain,
                                               const char *name, size_t len);

/* 1 if name[0..len), a method no table knows, names a state change. The
 * rule: a verb of the table in policy/method.c (send, cancel, submit,
 * register, unregister, request) opens a segment of the name (the name's
 * start, or right after a '_'), case aside. "send" is a prefix there, as it
 * always was ("eth_sendFoo", "sender_x"); the other verbs must be whole words:
 * the next byte ends the name, is '_', or is not a lowercase letter (the next
 * camelCase word, a digit). So "mev_submitBundle", "eth_cancelBundle",
 * "requestAirdrop", "flashbots_cancel" are writes; "eth_getRequestStatus"
 * (not first in its segment), "eth_registered" and "eth_requests" are not. */
int policy_method_sounds_like_write(const char *name, size_t len);

/* 1 if a call of m may share an upstream call with identical calls in flight
 * (pool/pool_coalesce.c): retry-safe, of class read, simulate or confirm, and
 * not solo. */
int policy_method_coalesces(const policy_method_t *m);

/* 1 if this call of m, with params at span params of buf (len 0: none), is a
 * cheap read: m->cheap, unless a rule of the chain for m's name reads its
 * params and finds the call heavy (eth_feeHistory over many blocks or with
 * reward percentiles). Params that cannot be read make such a call heavy. */
int policy_method_call_cheap(policy_chain_t chain, const policy_method_t *m, const char *buf, wire_span_t params);

/* eth_feeHistory is cheap up to this many blocks without reward percentiles. */
#define POLICY_FEE_HISTORY_CHEAP_BLOCKS 10

/* "read", "write", ... -> class; "low".."critical" -> priority; -1 if unknown. */
int policy_method_class_parse(const char *s);
int policy_priority_parse(const char *s);
const char *policy_priority_name(policy_priority_t p);
/* "first", "not_null", "max" -> policy_dispatch_t; -1 if unknown. */
int policy_dispatch_parse(const char *s);

/* The chain's default blocked-method patterns (NULL-terminated). A pattern is
 * an exact name or a prefix ending in '*'. */
const char *const *policy_method_default_blocked(policy_chain_t chain);

/* 1 if name[0..len) matches one of patterns[0..n) (exact, or prefix + '*'). */
int policy_method_match(const char *const *patterns, size_t n, const char *name, size_t len);

const char *policy_method_class_name(policy_method_class_t cls);

/* An endpoint's method scope (networks.<n>.endpoints[].methods): allow and
 * deny globs as policy_method_match's. NULL allow: every method. */
typedef struct policy_method_scope {
    char **allow;
    size_t nallow;
    char **deny;
    size_t ndeny;
} policy_method_scope_t;

/* 1 if an endpoint of scope s serves name[0..len): allowed (no allow list:
 * any) and not denied. Deny wins over allow. */
int policy_method_scope_admits(const policy_method_scope_t *s, const char *name, size_t len);

/* For table tests: the i-th verb of policy_method_sounds_like_write's table
 * (*prefix: it need not end a word), or NULL past the end. */
const char *policy_method_write_verb(size_t i, int *prefix);

/* For table tests: the name of the i-th params rule of policy_method_call_cheap
 * (*chain: its chain), or NULL past the end. */
const char *policy_method_param_rule(size_t i, policy_chain_t *chain);

/* For table tests: the chain's table and its length. */
const policy_method_t *policy_method_table(policy_chain_t chain, size_t *count);

#endif
