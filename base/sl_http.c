#include "base/sl_http.h"

#include "base/sl_buf.h"

#include <stdio.h>
#include <string.h>

static const struct {
    int status;
    const char *reason;
} reasons[] = {
    {200, "OK"},
    {204, "No Content"},
    {400, "Bad Request"},
    {401, "Unauthorized"},
    {403, "Forbidden"},
    {404, "Not Found"},
    {405, "Method Not Allowed"},
    {413, "Payload Too Large"},
    {414, "URI Too Long"},
    {415, "Unsupported Media Type"},
    {421, "Misdirected Request"},
    {429, "Too Many Requests"},
    {431, "Request Header Fields Too Large"},
    {500, "Internal Server Error"},
    {502, "Bad Gateway"},
    {503, "Service Unavailable"},
    {504, "Gateway Timeout"},
};

const char *sl_http_reason(int status)
{
    for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
        if (reasons[i].status == status)
            return reasons[i].reason;
    return "Unknown";
}

void sl_http_send_parts(h2o_req_t *req, int status, const char *content_type, h2o_iovec_t *parts, size_t n,
                        size_t len)
{
    static h2o_generator_t generator = {NULL, NULL};
    req->res.status = status;
    req->res.reason = sl_http_reason(status);
    if (status == 204)
        len = 0;
    if (len > 0 && content_type != NULL)
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, content_type,
                       strlen(content_type));
    req->res.content_length = len;
    /* the client listener's server_name is empty: h2o's HTTP/1 would write
     * its Server line with sprintf (sl_http.h) */
    if (req->conn->ctx->globalconf->server_name.len == 0)
        sl_http_header_iov(req, (h2o_iovec_t *)&H2O_TOKEN_SERVER->buf, H2O_STRLIT(SL_HTTP_SERVER_NAME));
    h2o_start_response(req, &generator);
    h2o_send(req, parts, len ? n : 0, H2O_SEND_STATE_FINAL);
}

void sl_http_send(h2o_req_t *req, int status, const char *content_type, const char *body, size_t len)
{
    h2o_iovec_t iov = h2o_iovec_init(body, len);
    sl_http_send_parts(req, status, content_type, &iov, 1, len);
}
