/* gateway/gw_refuse.c: replies of the calls sluice refuses itself. */
#include "gateway/gw_refuse.h"

#include <stdio.h>

static void set_body(gw_reply_t *r)
{
    r->body = r->out.base;
    r->len = r->out.len;
}

void gw_refuse_limited(gw_reply_t *r, const char *body, wire_span_t id, const gw_limit_result_t *lim)
{
    r->status = 429;
    r->outcome = "client_rate_limited";
    r->retry_after_s = lim->retry_after_s;
    char msg[200], data[200];
    snprintf(msg, sizeof(msg), "rate limit exceeded: %u calls per %u s for this caller (%s bucket); retry in %u s",
             lim->limit, lim->window_s, policy_bucket_name(lim->bucket), lim->retry_after_s);
    snprintf(data, sizeof(data), "{\"scope\":\"client\",\"retry_after_ms\":%llu,\"bucket\":\"%s\",\"limit\":%u,\"window_s\":%u}",
             (unsigned long long)lim->retry_after_ms, policy_bucket_name(lim->bucket), lim->limit, lim->window_s);
    wire_rpc_error(&r->out, body, id, WIRE_RPC_LIMIT_EXCEEDED, msg, data);
    set_body(r);
}

void gw_refuse_per_address(gw_reply_t *r, const char *body, wire_span_t id, const gw_limit_result_t *lim)
{
    r->status = 429;
    r->outcome = "client_rate_limited";
    r->retry_after_s = lim->retry_after_s;
    char msg[200], data[240];
    snprintf(msg, sizeof(msg),
             "rate limit exceeded: %u calls per %u s for this address under this key (%s bucket); retry in %u s",
             lim->limit, lim->window_s, policy_bucket_name(lim->bucket), lim->retry_after_s);
    snprintf(data, sizeof(data),
             "{\"scope\":\"client\",\"reason\":\"per_address\",\"retry_after_ms\":%llu,\"bucket\":\"%s\","
             "\"limit\":%u,\"window_s\":%u}",
             (unsigned long long)lim->retry_after_ms, policy_bucket_name(lim->bucket), lim->limit, lim->window_s);
    wire_rpc_error(&r->out, body, id, WIRE_RPC_LIMIT_EXCEEDED, msg, data);
    set_body(r);
}

void gw_refuse_key_credits(gw_reply_t *r, const char *body, wire_span_t id, const gw_limit_result_t *lim,
                           uint32_t cost)
{
    r->status = 429;
    r->outcome = "client_rate_limited";
    r->retry_after_s = lim->retry_after_s;
    char msg[200], data[240];
    snprintf(msg, sizeof(msg), "credits exhausted: this key's budget is %u credits per %u s; this call costs %u; "
             "retry in %u s", lim->limit, lim->window_s, cost, lim->retry_after_s);
    snprintf(data, sizeof(data),
             "{\"scope\":\"client\",\"reason\":\"key_credits\",\"reset_ms\":%llu,\"limit\":%u,"
             "\"window_s\":%u,\"cost\":%u}",
             (unsigned long long)lim->retry_after_ms, lim->limit, lim->window_s, cost);
    wire_rpc_error(&r->out, body, id, WIRE_RPC_LIMIT_EXCEEDED, msg, data);
    set_body(r);
}

void gw_refuse_jwt(gw_reply_t *r, const char *message)
{
    r->status = 401;
    r->outcome = "denied";
    wire_rpc_error(&r->out, "", (wire_span_t){0, 0}, WIRE_RPC_INVALID_REQUEST, message, "{\"reason\":\"jwt_invalid\"}");
    set_body(r);
}

void gw_refuse_buffered(gw_reply_t *r, const char *body, wire_span_t id, const char *msg, const char *data)
{
    r->status = 503;
    r->outcome = "overloaded";
    r->retry_after_s = 1;
    wire_rpc_error(&r->out, body, id, WIRE_RPC_LIMIT_EXCEEDED, msg, data);
    set_body(r);
}

void gw_refuse_http(gw_reply_t *r, int status, int code, const char *message)
{
    r->status = status;
    r->outcome = "refused";
    wire_rpc_error(&r->out, "", (wire_span_t){0, 0}, code, message, NULL);
    set_body(r);
}

void gw_refuse_denied(gw_reply_t *r, const char *body, wire_span_t id, policy_access_reason_t reason,
                      const char *message)
{
    r->status = reason == POLICY_ACCESS_KEY_REQUIRED ? 401 : 403;
    r->outcome = "denied";
    gw_refuse_denied_error(&r->out, body, id, reason, message);
    set_body(r);
}

void gw_refuse_denied_error(sl_buf_t *out, const char *body, wire_span_t id, policy_access_reason_t reason,
                            const char *message)
{
    char data[64];
    snprintf(data, sizeof(data), "{\"reason\":\"%s\"}", policy_access_reason_name(reason));
    wire_rpc_error(out, body, id, WIRE_RPC_INVALID_REQUEST, message, data);
}
