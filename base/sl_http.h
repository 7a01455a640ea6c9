/* base/sl_http.h: small helpers for answering an h2o request in one piece.
 * Used by the client listener (gateway/) and the admin listener (admin/). */
#ifndef SL_HTTP_H
#define SL_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <h2o.h>

#include "base/sl_buf.h"

/* The standard reason phrase of an HTTP status ("OK", "Not Found"). */
const char *sl_http_reason(int status);

/* Adds a response header; name must be a lower-case string literal (or live
 * as long as the request) and is not looked up among h2o's tokens. The value
 * is copied into the request's pool, formatted there (_u64), or, for _static,
 * must itself be a string literal. */
void sl_http_header(h2o_req_t *req, const char *name, const char *value);

/* Inline, so the length of a literal name (and value) is known when compiled. */
static inline void sl_http_header_static(h2o_req_t *req, const char *name, const char *value)
{
    h2o_add_header_by_str(&req->pool, &req->res.headers, name, strlen(name), 0, NULL, value, strlen(value));
}

static inline void sl_http_header_u64(h2o_req_t *req, const char *name, uint64_t value)
{
    char *buf = h2o_mem_alloc_pool(&req->pool, SL_U64_STR_MAX);
    size_t n = sl_u64_str(buf, value);
    h2o_add_header_by_str(&req->pool, &req->res.headers, name, strlen(name), 0, NULL, buf, n);
}

/* Sends status with body[0..len) (not copied: it must live until the request
 * is disposed) and, when len > 0, the given content type. 204 sends no body. */
void sl_http_send(h2o_req_t *req, int status, const char *content_type, const char *body, size_t len);

#endif
