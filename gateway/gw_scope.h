/* gateway/gw_scope.h: the edge asks the access policy (policy/access.h,
 * issue 33) once per request and once per call, before any budget, limit or
 * upstream is touched; the answers are the policy's, the replies and the
 * counters (sluice_access_refusals_total) are these.
 *
 * A refusal is charged to the caller's rate limit as a 401 is
 * (gw_exec_admit_refusal): no free probing of a scope. Worker-local. */
#ifndef GW_SCOPE_H
#define GW_SCOPE_H

#include <stddef.h>

#include <h2o.h>

#include "gateway/gw_exec.h"
#include "sub/sub.h"

/* The request's part, once the caller is identified (HTTP POST and the
 * WebSocket upgrade alike): a keyless call under access.anonymous: deny is
 * 401 key_required; a key's network and the request's Origin outside its
 * scope are 403. Returns 0 after answering (ops->reply ran). */
int gw_scope_request(gw_exec_t *x, h2o_req_t *req);

/* The calls' part, once x->rpc is parsed: each member going upstream that
 * its key's scope refuses becomes GW_MEMBER_DENIED with the reason and a
 * message (in x->mem). A single call so refused is answered 403 by
 * gw_reply_build; in a batch only those members get errors. */
void gw_scope_members(gw_exec_t *x);

/* A subscription call (body[0..len)) on a socket of key: 1 if its method
 * fits the key's scope, else 0 after sending the -32600 error with
 * data.reason through c->send. */
int gw_scope_sub(gw_handler_t *h, const cfg_key_conf_t *key, sub_client_t *c, const char *body, size_t len,
                 wire_span_t id);

#endif
