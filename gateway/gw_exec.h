/* gateway/gw_exec.h: one client body (a JSON-RPC call or a batch) through the
 * gateway, whichever connection carried it: parse (gw_rpc), the caller's
 * share of the answer bytes (gw_buffered), its rate limit (gw_limit),
 * pressure shedding, the pool call and the reply (gw_reply).
 *
 * Two carriers use it: the HTTP handler (gw_handler.c, one POST) and the
 * WebSocket connection (gw_ws.c, one text message). The carrier fills the
 * fields marked "carrier", calls gw_exec_run, and writes x->reply when its
 * ops->reply runs (once, from gw_exec_run or later from the event loop);
 * it calls gw_exec_commit just before writing and gw_exec_dispose when the
 * reply's bytes are no longer needed (or the client went away: the pool
 * call is released without a callback). Worker-local, one event loop. */
#ifndef GW_EXEC_H
#define GW_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include <h2o.h>

#include "wire/traceparent.h"
#include "gateway/gw_handler.h"
#include "gateway/gw_held.h"
#include "gateway/gw_limit.h"
#include "pool/pool_split.h"
#include "gateway/gw_reply.h"
#include "gateway/gw_rpc.h"
#include "policy/access.h"

#define GW_EXEC_IP_MAX 64
#define GW_EXEC_IDENT_MAX 96

typedef struct gw_exec gw_exec_t;

typedef struct gw_exec_ops {
    /* x->reply is ready: write it. Runs once per gw_exec_t. The carrier may
     * not dispose x from inside this callback (the caller may still read x
     * when it returns): dispose it when the bytes are written. */
    void (*reply)(gw_exec_t *x);
} gw_exec_ops_t;

struct gw_exec {
    gw_handler_t *h;
    const gw_exec_ops_t *ops;
    h2o_mem_pool_t *mem;          /* per-call memory (the request's pool, the message's) */
    /* carrier: */
    gw_net_t *net;
    const char *body;             /* the client's bytes, kept until gw_exec_dispose */
    size_t len;
    const cfg_key_conf_t *key;     /* NULL: anonymous */
    char ip[GW_EXEC_IP_MAX];      /* the caller's address (gw_identity_client_ip) */
    h2o_socket_t *sock;           /* its connection, for resets of stalled writers */
    const char *subscribe_error;  /* gw_rpc_limits_t's; NULL: the HTTP message */
    const char *refuse_message;   /* non-NULL: answered 503 / -32005 with it once parsed (at its id) */
    uint8_t no_cache;             /* Cache-Control: no-cache: the response cache is not looked in */
    char traceparent[WIRE_TRACEPARENT_LEN + 1]; /* the client's W3C traceparent, sent upstream ("": none) */
    char trace_id[33];            /* ... its trace id, for the access line */
    /* the call: */
    gw_rpc_request_t rpc;
    pool_item_t *items;
    uint32_t *item_member;        /* items[k] answers rpc.members[item_member[k]] */
    size_t nitems;
    pool_call_t *call;
    int call_done;
    pool_split_t *split;         /* eth_getLogs split into sub-calls (NULL: none) */
    pool_split_hooks_t split_hooks; /* what the split calls back (its charges, its reply) */
    gw_reply_t reply;
    int have_reply;
    uint64_t start_us;
    gw_limit_result_t limit;      /* this caller's rate limit, for the headers */
    gw_limit_wait_t limit_wait;   /* cluster: waiting for a lease of the caller's limit from Redis */
    uint8_t addr_charged;         /* the key's per_address limit charged (admit runs again after a wait) */
    size_t charged;               /* bytes of reply.out charged to the budget */
    uint64_t owner;               /* the caller's identity hashed (0: not needed): its share of the depth */
    int sent;                     /* the reply is being written */
    gw_held_entry_t held;         /* under its caller in h->buffered, once admitted */
    size_t reserved;              /* its share reserved at admission (gw_estimate.h); 0 once complete */
    int over_share;               /* cut while its answer was read (gw_exec_answer_grows): 503 share */
};

/* pool_params_t's on_grow: a call's answer grew while being read. Past its
 * reservation (and GW_BUFFERED_SMALL), with its caller's other entries
 * holding something and all of them together past the caller's share, the
 * call is cut (pool_call_cut) and answered 503 for the share: what a caller
 * holds while answers are read is its share plus one answer, however small
 * the estimates its calls reserved at admission (gw_buffered.h). */
void gw_exec_answer_grows(pool_call_t *call, void (*cb)(pool_call_t *, void *), void *cb_data);

/* Zeroes x and counts it in h->inflight / h->served (gw_exec_dispose
 * uncounts it). mem must outlive x. */
void gw_exec_init(gw_exec_t *x, gw_handler_t *h, const gw_exec_ops_t *ops, h2o_mem_pool_t *mem);
/* Parses x->body and takes it through budget, limit, pressure and pool:
 * ops->reply runs now or later. */
void gw_exec_run(gw_exec_t *x);
/* A body refused before it is parsed (unknown key, wrong content type)
 * still costs one standard call of the caller's address. Returns 1 when the
 * carrier should answer its refusal, 0 after ops->reply answered 429. */
int gw_exec_admit_refusal(gw_exec_t *x);
/* A request outside its key's scope: as gw_exec_admit_refusal, charged to
 * the caller as it is (the key's own tier when it has one). */
int gw_exec_admit_denied(gw_exec_t *x);
/* Refuses with the access reason (401 key_required, else 403) and message
 * at id null; ops->reply runs. */
void gw_exec_refuse_denied(gw_exec_t *x, policy_access_reason_t reason, const char *message);
/* Refuses 401 jwt_invalid with message (gateway/gw_jwt.h). */
void gw_exec_refuse_jwt(gw_exec_t *x, const char *message);
/* Refuses with status, code and message at id null; ops->reply runs. */
void gw_exec_refuse(gw_exec_t *x, int status, int code, const char *message);
/* "key:<name>" or "ip:<address>": whose limits the call counts against. */
void gw_exec_caller(const gw_exec_t *x, char *out, size_t cap);
/* The carrier is about to write x->reply: the call's answers go when the
 * reply does not point into them, and the reply's bytes are charged. */
void gw_exec_commit(gw_exec_t *x);
/* What an admitted x holds: its reservation until its answer is complete,
 * or more once it has read more (gw_exec_held), and its bytes alone (its
 * reply's charged bytes and its call's answers: gw_exec_real); the
 * measures gw_handler_register gives gw_buffered. */
size_t gw_exec_held(const gw_held_entry_t *e);
size_t gw_exec_real(const gw_held_entry_t *e);
/* Frees what x holds; a call still running is released (no callback). */
void gw_exec_dispose(gw_exec_t *x);

#endif
