/* gateway/gw_refuse.h: the replies of calls sluice refuses itself, before
 * anything goes upstream: over the caller's rate limit (429), over the
 * answer-byte budget or the caller's share of it (503), and HTTP-level
 * refusals (a status and a JSON-RPC error). Each fills a reply the handler
 * then sends; the body's id is the client's own where one can be read. */
#ifndef GW_REFUSE_H
#define GW_REFUSE_H

#include "gateway/gw_limit.h"
#include "policy/access.h"
#include "gateway/gw_reply.h"

/* 429, -32005 scope "client": lim says which limit, when to come back. */
void gw_refuse_limited(gw_reply_t *r, const char *body, wire_span_t id, const gw_limit_result_t *lim);

/* As gw_refuse_limited, for a key's per_address limit (one client address
 * under the key over it): data.reason "per_address". */
void gw_refuse_per_address(gw_reply_t *r, const char *body, wire_span_t id, const gw_limit_result_t *lim);

/* 429 for a key's credits: budget spent (cost credits did not fit):
 * data.reason "key_credits", data.reset_ms when they would. */
void gw_refuse_key_credits(gw_reply_t *r, const char *body, wire_span_t id, const gw_limit_result_t *lim,
                           uint32_t cost);

/* 401, -32600 with message and data {"reason": "jwt_invalid"} (gw_jwt.h). */
void gw_refuse_jwt(gw_reply_t *r, const char *message);

/* 503 + Retry-After: 1, -32005 with msg and data (gw_buffered_refusal). */
void gw_refuse_buffered(gw_reply_t *r, const char *body, wire_span_t id, const char *msg, const char *data);

/* status with a JSON-RPC error (code, message) at id null. */
void gw_refuse_http(gw_reply_t *r, int status, int code, const char *message);

/* An access refusal (policy/access.h): 401 for key_required, else 403;
 * -32600 with message and data {"reason": the reason's name}. */
void gw_refuse_denied(gw_reply_t *r, const char *body, wire_span_t id, policy_access_reason_t reason,
                      const char *message);
/* The error object alone, for a batch member. */
void gw_refuse_denied_error(sl_buf_t *out, const char *body, wire_span_t id, policy_access_reason_t reason,
                            const char *message);

#endif
