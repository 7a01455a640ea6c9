#include "gateway/gw_access.h"

#include <arpa/inet.h>
#include <string.h>

#include "base/sl_buf.h"
#include "base/sl_log.h"

#define MAX_METHODS_LOGGED 8
/* a line over SL_LOG_ACCESS_LINE_MAX is written again in this shape: no URLs,
 * the first method and the first attempts only, and "truncated":true */
#define COMPACT_METHODS 1
#define COMPACT_ATTEMPTS 4

/* Appends n bytes; with a constant n the copy compiles to a few moves. The
 * terminating NUL is written once, at the end of the line. */
static inline void put(sl_buf_t *b, const void *p, size_t n)
{
    if (b->len + n >= b->cap)
        sl_buf_reserve(b, n);
    memcpy(b->base + b->len, p, n);
    b->len += n;
}

static void put_u64(sl_buf_t *b, uint64_t v)
{
    char tmp[SL_U64_STR_MAX];
    put(b, tmp, sl_u64_str(tmp, v));
}

static void put_str(sl_buf_t *b, const char *s)
{
    put(b, s, strlen(s));
}

/* Appends a string literal: its length is known at compile time. */
#define LIT(b, s) put((b), (s), sizeof(s) - 1)

typedef struct access_fields {
    const char *network;
    const gw_rpc_request_t *rpc;
    const pool_call_t *call;
    int status;
    const char *outcome;
    uint64_t latency_us;
    const cfg_key_conf_t *key;
    int websocket;                /* a WebSocket message, not an HTTP request */
    const char *trace_id;         /* the request's W3C trace id (32 hex digits), NULL if none */
} access_fields_t;

static void append_json(sl_buf_t *b, const char *s)
{
    sl_buf_append_json_str(b, s, strlen(s));
}

/* a.b.c.d without inet_ntop's generic machinery (every line has one) */
static void append_ipv4(sl_buf_t *b, const struct in_addr *a)
{
    const unsigned char *o = (const unsigned char *)&a->s_addr;
    char tmp[16], *p = tmp;
    for (int i = 0; i < 4; i++) {
        unsigned v = o[i];
        if (v >= 100)
            *p++ = (char)('0' + v / 100);
        if (v >= 10)
            *p++ = (char)('0' + v / 10 % 10);
        *p++ = (char)('0' + v % 10);
        *p++ = '.';
    }
    p[-1] = '"'; /* the last dot */
    sl_buf_append_char(b, '"');
    put(b, tmp, (size_t)(p - tmp));
}

static void append_client(sl_buf_t *b, h2o_socket_t *sock)
{
    struct sockaddr_storage ss;
    socklen_t len = sock != NULL ? h2o_socket_getpeername(sock, (struct sockaddr *)&ss) : 0;
    LIT(b, ",\"client\":");
    if (len != 0 && ss.ss_family == AF_INET) {
        append_ipv4(b, &((struct sockaddr_in *)&ss)->sin_addr);
        return;
    }
    char host[INET6_ADDRSTRLEN] = "";
    if (len != 0 && ss.ss_family == AF_INET6)
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, host, sizeof(host));
    append_json(b, host);
}

static void append_methods(sl_buf_t *b, const gw_rpc_request_t *rpc, size_t max)
{
    LIT(b, ",\"methods\":[");
    size_t n = rpc->kind == GW_RPC_REJECT ? 0 : rpc->nmembers;
    for (size_t i = 0; i < n && i < max; i++) {
        if (i)
            LIT(b, ",");
        append_json(b, rpc->members[i].name);
    }
    LIT(b, "],\"calls\":");
    put_u64(b, n);
}

static void append_endpoints(sl_buf_t *b, const pool_call_t *call, int compact)
{
    size_t n;
    const pool_attempt_rec_t *log = pool_call_log(call, &n);
    if (compact && n > COMPACT_ATTEMPTS)
        n = COMPACT_ATTEMPTS;
    LIT(b, ",\"upstream\":[");
    for (size_t i = 0; i < n; i++) {
        const char *what = log[i].flags & POOL_ATTEMPT_CANCELLED ? "cancelled"
                           : log[i].fail == POOL_FAIL_NONE      ? "answered"
                                                                : pool_fail_name(log[i].fail);
        if (i)
            LIT(b, ",");
        LIT(b, "{\"endpoint\":");
        append_json(b, pool_call_endpoint_id(call, log[i].endpoint));
        if (!compact) {
            LIT(b, ",\"url\":"); /* redacted: for operators */
            append_json(b, pool_call_endpoint_url(call, log[i].endpoint));
        }
        LIT(b, ",\"status\":");
        put_u64(b, log[i].http_status);
        LIT(b, ",\"result\":\"");
        put_str(b, what); /* a name from a table: nothing to escape */
        LIT(b, "\",\"us\":");
        put_u64(b, log[i].latency_us);
        if (log[i].flags & POOL_ATTEMPT_HEDGE)
            LIT(b, ",\"hedge\":true");
        LIT(b, "}");
    }
    LIT(b, "]");
}

/* The fields every line has, up to "us". */
static void append_head(sl_buf_t *b, const access_fields_t *f, const char *ts)
{
    LIT(b, "{\"ts\":\"");
    put_str(b, ts);
    LIT(b, "\",\"type\":\"access\",\"network\":");
    if (f->network != NULL)
        append_json(b, f->network);
    else
        LIT(b, "null");
}

static void append_status(sl_buf_t *b, const access_fields_t *f)
{
    LIT(b, ",\"status\":");
    put_u64(b, (uint64_t)(f->status < 0 ? 0 : f->status));
    LIT(b, ",\"outcome\":\"");
    put_str(b, f->outcome); /* a literal outcome name */
    LIT(b, "\",\"attempts\":");
    put_u64(b, f->call ? pool_call_attempts(f->call) : 0);
    LIT(b, ",\"us\":");
    put_u64(b, f->latency_us);
    if (f->call != NULL && pool_call_hedges(f->call) != 0) {
        LIT(b, ",\"hedges\":");
        put_u64(b, pool_call_hedges(f->call));
    }
    if (f->call != NULL && pool_call_coalesced(f->call))
        LIT(b, ",\"coalesced\":true");
    if (f->trace_id != NULL) { /* 32 hex digits: nothing to escape */
        LIT(b, ",\"trace_id\":\"");
        put_str(b, f->trace_id);
        sl_buf_append_char(b, '"');
    }
}

/* One line; compact keeps it short whatever the methods and URLs are. */
static void format_line(sl_buf_t *b, h2o_socket_t *sock, const access_fields_t *f, const char *ts, int compact)
{
    sl_buf_reset(b);
    append_head(b, f, ts);
    append_methods(b, f->rpc, compact ? COMPACT_METHODS : MAX_METHODS_LOGGED);
    append_status(b, f);
    if (f->call != NULL)
        append_endpoints(b, f->call, compact);
    append_client(b, sock);
    if (f->websocket)
        LIT(b, ",\"ws\":true");
    if (f->key != NULL) {
        LIT(b, ",\"key\":");
        append_json(b, f->key->name);
    }
    if (compact)
        LIT(b, ",\"truncated\":true");
    sl_buf_append_char(b, '}'); /* and the NUL */
}

void gw_access_log(h2o_socket_t *sock, int websocket, const char *network, const gw_rpc_request_t *rpc,
                   const pool_call_t *call, int status, const char *outcome, uint64_t latency_us,
                   const cfg_key_conf_t *key, const char *trace_id)
{
    static sl_buf_t line; /* per worker process, reused */
    const access_fields_t f = {network, rpc, call, status, outcome, latency_us, key, websocket,
                               trace_id != NULL && trace_id[0] != '\0' ? trace_id : NULL};
    char ts[32];
    sl_log_timestamp(ts);
    format_line(&line, sock, &f, ts, 0);
    if (line.len > SL_LOG_ACCESS_LINE_MAX)
        format_line(&line, sock, &f, ts, 1);
    if (line.len > SL_LOG_ACCESS_LINE_MAX) { /* names at their limits and escaped: the head alone */
        sl_buf_reset(&line);
        append_head(&line, &f, ts);
        append_status(&line, &f);
        LIT(&line, ",\"truncated\":true");
        sl_buf_append_char(&line, '}');
    }
    sl_log_access(line.base, line.len);
}
