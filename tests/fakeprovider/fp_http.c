/* fp_http.c: the server side of HTTP/1.1 — request heads, bodies framed by
 * Content-Length, keep-alive, and the status line + headers of answers.
 *
 * Deliberately narrow: no chunked request bodies (411), no header folding,
 * heads up to FP_MAX_HEAD (431) and bodies up to FP_MAX_BODY (413). Anything
 * malformed gets 400 and a lingering close; nothing a peer sends can crash
 * the provider or make it allocate beyond those limits. */
#include "fp.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct head_flags {
    bool have_length;
    bool conn_close;
    bool conn_keep_alive;
} head_flags_t;

typedef int (*header_fn)(fp_http_req_t *req, head_flags_t *f, const char *v, size_t n);

static int header_content_length(fp_http_req_t *req, head_flags_t *f, const char *v, size_t n)
{
    uint64_t len = 0;
    if (n == 0 || n > 18)
        return 400;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9')
            return 400;
        len = len * 10 + (uint64_t)(v[i] - '0');
    }
    if (f->have_length && len != req->body_len)
        return 400;     /* conflicting lengths: a smuggling attempt or a bug */
    if (len > FP_MAX_BODY)
        return 413;
    f->have_length = true;
    req->body_len = (size_t)len;
    return 0;
}

static int header_transfer_encoding(fp_http_req_t *req, head_flags_t *f, const char *v, size_t n)
{
    (void)req, (void)f, (void)v, (void)n;
    return 411;     /* chunked (or any coded) bodies are not supported: ask for a length */
}

static bool has_token(const char *v, size_t n, const char *tok)
{
    size_t tn = strlen(tok);
    for (size_t i = 0; i + tn <= n; i++) {
        bool start = i == 0 || v[i - 1] == ',' || v[i - 1] == ' ';
        bool end = i + tn == n || v[i + tn] == ',' || v[i + tn] == ' ';
        if (start && end && strncasecmp(v + i, tok, tn) == 0)
            return true;
    }
    return false;
}

static int header_connection(fp_http_req_t *req, head_flags_t *f, const char *v, size_t n)
{
    (void)req;
    f->conn_close |= has_token(v, n, "close");
    f->conn_keep_alive |= has_token(v, n, "keep-alive");
    return 0;
}

static int header_ws_key(fp_http_req_t *req, head_flags_t *f, const char *v, size_t n)
{
    (void)f;
    if (n == 0 || n >= sizeof req->ws_key)
        return 400;
    memcpy(req->ws_key, v, n);
    req->ws_key[n] = '\0';
    return 0;
}

static int header_traceparent(fp_http_req_t *req, head_flags_t *f, const char *v, size_t n)
{
    (void)f;
    if (n >= sizeof req->traceparent)
        n = sizeof req->traceparent - 1;
    memcpy(req->traceparent, v, n);
    req->traceparent[n] = '\0';
    return 0;
}

static int header_expect(fp_http_req_t *req, head_flags_t *f, const char *v, size_t n)
{
    (void)f;
    req->expect_continue = n == 12 && strncasecmp(v, "100-continue", 12) == 0;
    return 0;
}

/* The headers that change how we read or answer; all others are ignored. */
static const struct {
    const char *name;
    header_fn fn;
} header_table[] = {
    {"connection", header_connection},
    {"content-length", header_content_length},
    {"expect", header_expect},
    {"sec-websocket-key", header_ws_key},
    {"traceparent", header_traceparent},
    {"transfer-encoding", header_transfer_encoding},
};

static const struct {
    int status;
    const char *reason;
} status_table[] = {
    {200, "OK"},
    {400, "Bad Request"},
    {402, "Payment Required"},
    {404, "Not Found"},
    {405, "Method Not Allowed"},
    {411, "Length Required"},
    {413, "Content Too Large"},
    {429, "Too Many Requests"},
    {431, "Request Header Fields Too Large"},
    {500, "Internal Server Error"},
    {502, "Bad Gateway"},
    {503, "Service Unavailable"},
    {504, "Gateway Timeout"},
};

const char *fp_http_reason(int status)
{
    for (size_t i = 0; i < sizeof status_table / sizeof status_table[0]; i++)
        if (status_table[i].status == status)
            return status_table[i].reason;
    return "Unknown";
}

void fp_http_write_head(fp_buf_t *out, const fp_reply_t *r)
{
    fp_buf_puts(out, "HTTP/1.1 ");
    fp_buf_put_u64(out, (uint64_t)r->status);
    fp_buf_puts(out, " ");
    fp_buf_puts(out, fp_http_reason(r->status));
    if (r->content_type) {
        fp_buf_puts(out, "\r\nContent-Type: ");
        fp_buf_puts(out, r->content_type);
    }
    fp_buf_puts(out, "\r\nContent-Length: ");
    fp_buf_put_u64(out, r->body_len);
    if (r->retry_after >= 0) {
        fp_buf_puts(out, "\r\nRetry-After: ");
        fp_buf_put_u64(out, (uint64_t)r->retry_after);
    }
    fp_buf_puts(out, r->close ? "\r\nConnection: close\r\n\r\n" : "\r\n\r\n");
}

/* Offset just past the blank line ending the head, or 0 if not there yet.
 * Bare LF line ends are accepted; *scan remembers how far we looked. */
static size_t find_head_end(const char *p, size_t n, size_t *scan)
{
    size_t i = *scan;
    while (i < n) {
        const char *nl = memchr(p + i, '\n', n - i);
        if (!nl)
            break;
        size_t k = (size_t)(nl - p);
        if (k > 0 && (p[k - 1] == '\n' || (p[k - 1] == '\r' && k >= 2 && p[k - 2] == '\n')))
            return k + 1;
        i = k + 1;
    }
    *scan = n;
    return 0;
}

/* Returns the line at p (without its CR LF) and where the next one starts. */
static const char *next_line(const char *p, const char *end, size_t *len)
{
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl)
        nl = end;
    *len = (size_t)(nl - p);
    if (*len > 0 && p[*len - 1] == '\r')
        (*len)--;
    return nl < end ? nl + 1 : end;
}

static bool is_tchar(char ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')
           || (ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch));
}

static int parse_request_line(const char *line, size_t n, fp_http_req_t *req, bool *v11)
{
    const char *end = line + n;
    const char *sp1 = memchr(line, ' ', n);
    if (!sp1 || sp1 == line)
        return 400;
    for (const char *q = line; q < sp1; q++)
        if (!is_tchar(*q))
            return 400;
    const char *target = sp1 + 1;
    const char *sp2 = memchr(target, ' ', (size_t)(end - target));
    if (!sp2 || sp2 == target)
        return 400;
    for (const char *q = target; q < sp2; q++)
        if ((unsigned char)*q <= 0x20 || *q == 0x7f)
            return 400;
    size_t vn = (size_t)(end - sp2 - 1);
    if (vn != 8 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0 || (sp2[8] != '0' && sp2[8] != '1'))
        return 400;
    *v11 = sp2[8] == '1';
    req->is_get = sp1 - line == 3 && memcmp(line, "GET", 3) == 0;
    req->path_off = (size_t)(target - line);
    req->path_len = (size_t)(sp2 - target);
    return 0;
}

static int parse_header(const char *line, size_t n, fp_http_req_t *req, head_flags_t *f)
{
    const char *colon = memchr(line, ':', n);
    if (!colon || colon == line)
        return 400;     /* also rejects obsolete folding (a line starting with space) */
    size_t name_n = (size_t)(colon - line);
    for (size_t i = 0; i < name_n; i++)
        if (!is_tchar(line[i]))
            return 400;
    const char *v = colon + 1, *end = line + n;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    for (size_t i = 0; i < sizeof header_table / sizeof header_table[0]; i++)
        if (strlen(header_table[i].name) == name_n
            && strncasecmp(header_table[i].name, line, name_n) == 0)
            return header_table[i].fn(req, f, v, (size_t)(end - v));
    return 0;
}

/* 0 if the head is acceptable, else the HTTP status to fail with. */
static int parse_head(const char *p, size_t n, fp_http_req_t *req)
{
    const char *end = p + n;
    size_t len;
    bool v11 = false;
    head_flags_t f = {0};
    *req = (fp_http_req_t){.head_len = n};
    const char *next = next_line(p, end, &len);
    int st = parse_request_line(p, len, req, &v11);
    for (int count = 0; st == 0; count++) {
        const char *line = next;
        next = next_line(line, end, &len);
        if (len == 0)
            break;
        st = count >= FP_MAX_HEADERS ? 431 : parse_header(line, len, req, &f);
    }
    req->keep_alive = !f.conn_close && (v11 || f.conn_keep_alive);
    return st;
}

static bool is_control_path(const char *path, size_t n)
{
    static const char prefix[] = "/_control/";
    return n >= sizeof prefix - 1 && memcmp(path, prefix, sizeof prefix - 1) == 0;
}

static void answer_get(fp_conn_t *c)
{
    static const char body[] = "{\"error\":\"JSON-RPC wants POST\"}";
    fp_reply_t r = {
        .status = 405, .content_type = "application/json", .retry_after = -1,
        .body = body, .body_len = sizeof body - 1,
    };
    fp_conn_reply(c, &r);
}

static void dispatch(fp_conn_t *c, const char *start)
{
    const fp_http_req_t *req = &c->req;
    const char *path = start + req->path_off;
    const char *body = start + req->head_len;
    if (is_control_path(path, req->path_len)) {
        fp_control_handle(c, path, req->path_len, body, req->body_len);
        return;
    }
    if (req->is_get && req->ws_key[0] != '\0') { /* the WebSocket (fp_ws.c) */
        fp_ws_accept(c, req->ws_key);
        fp_conn_to_ws(c);
        return;
    }
    if (req->is_get) {
        answer_get(c);
        return;
    }
    fp_inflight_begin(c);
    memcpy(c->srv->stats.last_traceparent, req->traceparent, sizeof(req->traceparent));
    fp_fault_answer(c, body, req->body_len);
}

/* Finds and parses the head of the next request: 1 parsed, 0 need more,
 * -1 failed (the error answer is queued). */
static int take_head(fp_conn_t *c)
{
    while (c->in_off < c->in.len && (c->in.data[c->in_off] == '\r' || c->in.data[c->in_off] == '\n'))
        c->in_off++;    /* stray line ends between requests are allowed */
    const char *p = c->in.data + c->in_off;
    size_t avail = c->in.len - c->in_off;
    if (avail == 0)
        c->scan = 0;
    size_t end = find_head_end(p, avail, &c->scan);
    if (end == 0 || end > FP_MAX_HEAD) {
        if (avail <= FP_MAX_HEAD)
            return 0;
        fp_conn_fail(c, 431);
        return -1;
    }
    c->scan = 0;
    int st = parse_head(p, end, &c->req);
    if (st != 0) {
        fp_conn_fail(c, st);
        return -1;
    }
    c->head_done = true;
    c->continue_sent = false;
    return 1;
}

int fp_http_handle_next(fp_conn_t *c)
{
    if (!c->head_done) {
        int r = take_head(c);
        if (r <= 0)
            return r;
    }
    size_t avail = c->in.len - c->in_off;
    size_t total = c->req.head_len + c->req.body_len;
    if (avail < total) {
        if (c->req.expect_continue && !c->continue_sent) {
            fp_buf_puts(&c->out, "HTTP/1.1 100 Continue\r\n\r\n");
            c->out_limit = c->out.len;
            c->continue_sent = true;
        }
        fp_buf_reserve(&c->in, total - avail);
        return 0;
    }
    const char *start = c->in.data + c->in_off;
    c->in_off += total;     /* the bytes stay put until the next read */
    c->head_done = false;
    dispatch(c, start);
    return 1;
}
