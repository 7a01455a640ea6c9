/* policy/access.h: does this call fit its key's scope? (issue 33)
 *
 * A key's scope (config's keys: networks, methods, contracts, origins) and
 * the pure decisions over it: the edge (gateway/gw_scope.c) asks once per
 * request (network, Origin) and once per call (method, contract) before any
 * budget, limit or upstream is touched, and answers a refusal with the
 * reason's name as data.reason. Pure: no I/O, no clocks, no globals. */
#ifndef POLICY_ACCESS_H
#define POLICY_ACCESS_H

#include <stddef.h>
#include <stdint.h>

typedef enum policy_access_reason {
    POLICY_ACCESS_OK,
    POLICY_ACCESS_KEY_REQUIRED,    /* no key where access.anonymous is deny (401) */
    POLICY_ACCESS_NETWORK,         /* network_not_allowed (403) */
    POLICY_ACCESS_METHOD,          /* method_not_allowed (403) */
    POLICY_ACCESS_CONTRACT,        /* contract_not_allowed (403) */
    POLICY_ACCESS_ORIGIN,          /* origin_not_allowed (403) */
    POLICY_ACCESS_REASON_COUNT
} policy_access_reason_t;

/* A key's scope. Every list empty (count 0): no bound of that kind. The
 * strings and arrays belong to whoever filled it (config/). */
typedef struct policy_access_scope {
    char **networks;               /* network names the key may call */
    size_t nnetworks;
    char **allow;                  /* method globs (policy_method_match): only these ... */
    size_t nallow;
    char **deny;                   /* ... and never these (deny wins) */
    size_t ndeny;
    uint8_t (*contracts)[20];      /* call / transaction recipients allowed */
    size_t ncontracts;
    char **origins;                /* browser Origins allowed ("https://app.example", exact) */
    size_t norigins;
} policy_access_scope_t;

/* The reason's data.reason text ("network_not_allowed", ...; "ok"). */
const char *policy_access_reason_name(policy_access_reason_t r);
/* 1 if the scope bounds anything. */
int policy_access_scoped(const policy_access_scope_t *s);

/* The request's part: its network, and its Origin header (NULL: none, which
 * is not a browser's call and passes). On a refusal msg[0..cap) names the
 * network or origin refused (never the key). s NULL: OK. */
policy_access_reason_t policy_access_request(const policy_access_scope_t *s, const char *network,
                                             const char *origin, size_t origin_len, char *msg, size_t cap);

/* 1 if the origin is one the scope lists (0 when it lists none). */
int policy_access_origin_listed(const policy_access_scope_t *s, const char *origin, size_t len);

/* One call's part: its method name, and for eth_call, eth_estimateGas,
 * eth_createAccessList (params[0].to) and eth_sendRawTransaction (the raw
 * transaction's to, wire/rawtx.h) its recipient under a contracts scope:
 * a call without one (a creation) or whose recipient cannot be read is
 * refused. params[0..plen) is the call's params value (plen 0: absent), as
 * a scan of the call validated it: only params[0] is read (and validated),
 * what follows it is not looked at. On a refusal msg[0..cap) names the
 * method or address. s NULL: OK. */
policy_access_reason_t policy_access_call(const policy_access_scope_t *s, const char *method, size_t mlen,
                                          const char *params, size_t plen, char *msg, size_t cap);

/* Both at once: the request's part, then the call's. */
policy_access_reason_t policy_access_check(const policy_access_scope_t *s, const char *network, const char *method,
                                           size_t mlen, const char *params, size_t plen, const char *origin,
                                           size_t origin_len, char *msg, size_t cap);

/* What is wrong with a method pattern (policy_method_match's: a name, or a
 * prefix and one '*' at its end) or an origin (scheme://host[:port] as a
 * browser sends it, no path, no '*'), or NULL if nothing: the config and
 * /admin/keys check a scope's entries with the same words. */
const char *policy_access_glob_problem(const char *s);
const char *policy_access_origin_problem(const char *s);

/* "0x" + 40 hex digits (either case) at s[0..len) into out; 0 if not one. */
int policy_access_parse_address(const char *s, size_t len, uint8_t out[20]);

#endif
