/* gateway/gw_rpc.h: a client's JSON-RPC 2.0 body, checked to the letter.
 *
 * Parsing works on byte spans (wire/envelope.h), never on a re-serialised
 * tree, so a member is forwarded exactly as the client wrote it and its id
 * is echoed exactly (big numbers stay intact). Pure: no I/O. */
#ifndef GW_RPC_H
#define GW_RPC_H

#include <stddef.h>
#include <stdint.h>

#include "base/sl_buf.h"
#include "wire/envelope.h"
#include "wire/rpc_error.h" /* the error object every reply writes */
#include "policy/method.h"
#include "pool/pool_conf.h"

typedef enum gw_rpc_kind {
    GW_RPC_SINGLE,            /* one request object */
    GW_RPC_BATCH,             /* an array of members */
    GW_RPC_REJECT,            /* one error object answers the whole body */
} gw_rpc_kind_t;

typedef enum gw_member_status {
    GW_MEMBER_FORWARD,        /* valid and allowed: goes upstream */
    GW_MEMBER_INVALID,        /* answered here with -32600 */
    GW_MEMBER_BLOCKED,        /* answered here with -32601 */
    GW_MEMBER_SHED,           /* refused under pressure: -32005, scope "pressure" (set by the handler) */
    GW_MEMBER_DENIED,         /* outside its key's scope: -32600, data.reason (set by gw_scope.c) */
} gw_member_status_t;

typedef struct gw_member {
    gw_member_status_t status;
    wire_span_t raw;            /* the member's bytes in the body */
    wire_span_t id;             /* id value in the body; len 0 = none / not echoable */
    wire_span_t params;         /* params value in the body; len 0 = absent */
    uint8_t notification;         /* a valid request without "id": gets no answer */
    uint8_t cheap;                /* a cheap read with these params (policy_method_call_cheap) */
    const policy_method_t *method; /* FORWARD and BLOCKED */
    char name[WIRE_RPC_METHOD_MAX]; /* method name ("" if absent or not a string) */
    const char *error;            /* INVALID / BLOCKED / DENIED: the message (static, in name's storage,
                                     or the call's memory pool) */
    uint8_t denied;               /* DENIED: its policy_access_reason_t */
    uint8_t unserved;             /* BLOCKED: no endpoint's methods: scope admits it
                                     (data.reason no_endpoint_for_method) */
} gw_member_t;

typedef struct gw_rpc_limits {
    uint32_t max_batch;
    policy_chain_t chain;
    const char *const *blocked;   /* patterns, see policy_method_match */
    size_t nblocked;
    const policy_method_t *overrides; /* the network's methods: rows */
    size_t noverrides;
    const char *subscribe_error;  /* a subscription's -32601 message; NULL: the HTTP one */
    const pool_endpoint_conf_t *endpoints; /* the network's: their methods: scopes (NULL: not checked) */
    size_t nendpoints;
} gw_rpc_limits_t;

typedef struct gw_rpc_request {
    gw_rpc_kind_t kind;
    int reject_code;              /* REJECT: -32700 or -32600 */
    char reject_msg[128];
    gw_member_t *members;         /* SINGLE: 1, BATCH: nmembers; caller's storage */
    size_t nmembers;
    /* set by the handler when it shed members (not by the parser) */
    uint8_t shed_level;           /* a policy_pressure_level_t */
    uint32_t shed_retry_ms;
} gw_rpc_request_t;

/* Allocator for the members array (h2o's request pool in the gateway). */
typedef void *(*gw_rpc_alloc_fn)(void *ctx, size_t size);

/* Parses body[0..len). Never fails: a broken body becomes kind REJECT with
 * the JSON-RPC error that answers it. */
void gw_rpc_parse(const char *body, size_t len, const gw_rpc_limits_t *lim, gw_rpc_alloc_fn alloc, void *alloc_ctx,
                  gw_rpc_request_t *out);


/* Appends answer[0..len) with its id (span answer_id) replaced by the
 * client's id bytes (body, span id). */
void gw_rpc_splice_id(sl_buf_t *out, const char *answer, size_t len, wire_span_t answer_id, const char *body,
                      wire_span_t id);

#endif
