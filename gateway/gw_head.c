/* gateway/gw_head.c: the request head against the server's size limits. */
#include "gateway/gw_head.h"

#include <stdio.h>

/* The request head's size as the client sent it: the request line, and
 * every header line (Host and Upgrade are kept apart from the others by
 * h2o). *longest gets the longest header line. */
static size_t head_size(const h2o_req_t *req, size_t *request_line, size_t *longest)
{
    static const size_t crlf = 2, colon = 2; /* "\r\n", ": " */
    *request_line = req->input.method.len + 1 + req->input.path.len + sizeof(" HTTP/1.1") - 1;
    size_t total = *request_line + crlf, max = 0;
    for (size_t i = 0; i < req->headers.size; i++) {
        size_t n = req->headers.entries[i].name->len + colon + req->headers.entries[i].value.len;
        max = n > max ? n : max;
        total += n + crlf;
    }
    const h2o_iovec_t apart[] = {req->input.authority, req->upgrade};
    const size_t names[] = {sizeof("host") - 1, sizeof("upgrade") - 1};
    for (size_t i = 0; i < 2; i++) {
        if (apart[i].len == 0)
            continue;
        size_t n = names[i] + colon + apart[i].len;
        max = n > max ? n : max;
        total += n + crlf;
    }
    *longest = max;
    return total + crlf;
}

int gw_head_check(const h2o_req_t *req, const cfg_server_conf_t *srv, gw_head_verdict_t *out)
{
    size_t line, longest;
    out->total = head_size(req, &line, &longest);
    out->longest = longest > line ? longest : line;
    out->status = 431;
    if (line > srv->max_header_line_bytes) {
        out->status = 414;
        snprintf(out->message, sizeof(out->message),
                 "request line too long: over server.max_header_line_bytes (%u bytes)", srv->max_header_line_bytes);
    } else if (longest > srv->max_header_line_bytes) {
        snprintf(out->message, sizeof(out->message), "request header fields too large: a header line is over "
                 "server.max_header_line_bytes (%u bytes)", srv->max_header_line_bytes);
    } else if (out->total > srv->max_header_bytes) {
        snprintf(out->message, sizeof(out->message), "request header fields too large: the request head is over "
                 "server.max_header_bytes (%u bytes)", srv->max_header_bytes);
    } else {
        return 1;
    }
    return 0;
}
