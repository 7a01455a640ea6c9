/* wire/rpc_error.h: the JSON-RPC 2.0 error object, written. Every room that
 * answers a client (gateway/'s replies and refusals, sub/'s subscription
 * calls) writes its errors through this one writer. */
#ifndef WIRE_RPC_ERROR_H
#define WIRE_RPC_ERROR_H

#include "base/sl_buf.h"
#include "wire/envelope.h"

/* The codes sluice answers with (JSON-RPC 2.0's, and -32005 "limit exceeded"
 * as geth and the providers use it). */
#define WIRE_RPC_PARSE_ERROR -32700
#define WIRE_RPC_INVALID_REQUEST -32600
#define WIRE_RPC_METHOD_NOT_FOUND -32601
#define WIRE_RPC_INTERNAL_ERROR -32603
#define WIRE_RPC_LIMIT_EXCEEDED -32005
#define WIRE_RPC_METHOD_MAX 128 /* the longest method name a call may give, with its NUL */

/* Appends {"jsonrpc":"2.0","id":<id>,"error":{"code":..,"message":..[,"data":<data_json>]}}.
 * id is the span in body (len 0 writes null); data_json is raw JSON or NULL. */
void wire_rpc_error(sl_buf_t *out, const char *body, wire_span_t id, int code, const char *message,
                    const char *data_json);

#endif
