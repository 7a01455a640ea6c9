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

/* Response headers name themselves with a static h2o_iovec_t, the way h2o's
 * own tokens do, so nothing is looked up or allocated for the name:
 *     static h2o_iovec_t name = {H2O_STRLIT("x-ratelimit-limit")};
 * _iov takes a value that lives as long as the request (a literal, or memory
 * of its pool); _u64 formats the number into the pool. */
static inline void sl_http_header_iov(h2o_req_t *req, h2o_iovec_t *name, const char *value, size_t len)
{
    h2o_vector_reserve(&req->pool, &req->res.headers, req->res.headers.size + 1);
    h2o_header_t *h = req->res.headers.entries + req->res.headers.size++;
    h->name = name;
    h->orig_name = NULL;
    h->value = h2o_iovec_init(value, len);
}

static inline void sl_http_header_u64(h2o_req_t *req, h2o_iovec_t *name, uint64_t value)
{
    char *buf = h2o_mem_alloc_pool(&req->pool, SL_U64_STR_MAX);
    sl_http_header_iov(req, name, buf, sl_u64_str(buf, value));
}

/* The Server header's value. h2o 2.2.5's HTTP/1 writes globalconf's
 * server_name with a sprintf of its own on every answer (500-770
 * instructions); the client listener leaves it empty and sl_http_send_parts
 * (and gateway/gw_early.c, for h2o's own error answers) add it as a plain
 * header instead. A WebSocket upgrade's 101 goes without one. */
#define SL_HTTP_SERVER_NAME "sluice"

/* Adds Server: sluice when the listener's server_name is empty (h2o then
 * writes none) and the answer has none yet. */
static inline void sl_http_server_header(h2o_req_t *req)
{
    if (req->conn->ctx->globalconf->server_name.len == 0 && h2o_find_header(&req->res.headers, H2O_TOKEN_SERVER, -1) < 0)
        sl_http_header_iov(req, (h2o_iovec_t *)&H2O_TOKEN_SERVER->buf, H2O_STRLIT(SL_HTTP_SERVER_NAME));
}

/* Sends status with body[0..len) (not copied: it must live until the request
 * is disposed) and, when len > 0, the given content type. 204 sends no body. */
void sl_http_send(h2o_req_t *req, int status, const char *content_type, const char *body, size_t len);
/* The same with a body of n parts, len bytes in all (each must live as long). */
void sl_http_send_parts(h2o_req_t *req, int status, const char *content_type, h2o_iovec_t *parts, size_t n,
                        size_t len);

#endif
