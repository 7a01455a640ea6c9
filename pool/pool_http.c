#include "pool/pool_http.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/sl_parse.h"

/* picohttpparser ships inside libh2o (phr_* are exported) without a header;
 * struct phr_header has kept this layout in every release. */
struct phr_header {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
};
int phr_parse_response(const char *buf, size_t len, int *minor_version, int *status, const char **msg, size_t *msg_len,
                       struct phr_header *headers, size_t *num_headers, size_t last_len);

#define MAX_HEAD_BYTES (64 * 1024)

static int header_is(const struct phr_header *h, const char *name)
{
    size_t n = strlen(name);
    return h->name_len == n && strncasecmp(h->name, name, n) == 0;
}

/* Parses a decimal value with no sign and no junk (surrounding blanks are
 * fine, RFC 9110 field values); -1 on failure. */
static int64_t parse_decimal(const char *s, size_t n)
{
    while (n > 0 && (*s == ' ' || *s == '\t')) {
        s++;
        n--;
    }
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    uint64_t v; /* at most 18 digits: far past any answer, and no int64_t edge to get wrong */
    return sl_parse_u64(s, n, 999999999999999999ull, &v) == SL_OK ? (int64_t)v : -1;
}

/* The next comma-separated token of v[0..n) from *i on, blanks trimmed
 * (empty list elements are skipped, RFC 9110 5.6.1); 0 at the end. */
static int next_token(const char *v, size_t n, size_t *i, const char **tok, size_t *len)
{
    for (;;) {
        while (*i < n && (v[*i] == ' ' || v[*i] == '\t' || v[*i] == ','))
            (*i)++;
        if (*i >= n)
            return 0;
        size_t start = *i;
        while (*i < n && v[*i] != ',')
            (*i)++;
        size_t end = *i;
        while (end > start && (v[end - 1] == ' ' || v[end - 1] == '\t'))
            end--;
        if (end > start) {
            *tok = v + start;
            *len = end - start;
            return 1;
        }
    }
}

static int token_is(const char *tok, size_t len, const char *name)
{
    return len == strlen(name) && strncasecmp(tok, name, len) == 0;
}

/* 1 if the comma-separated header value contains token (case-insensitive). */
static int value_has_token(const char *v, size_t n, const char *token)
{
    const char *tok;
    size_t i = 0, len;
    while (next_token(v, n, &i, &tok, &len))
        if (token_is(tok, len, token))
            return 1;
    return 0;
}

/* 1 if every comma-separated token of the value is a or b (case-insensitive). */
static int only_tokens(const char *v, size_t n, const char *a, const char *b)
{
    const char *tok;
    size_t i = 0, len;
    while (next_token(v, n, &i, &tok, &len))
        if (!token_is(tok, len, a) && !token_is(tok, len, b))
            return 0;
    return 1;
}

static sl_err_t apply_header(const struct phr_header *h, pool_http_head_t *out)
{
    if (h->name == NULL)
        return SL_OK; /* continuation line: nothing we act on */
    if (header_is(h, "content-length")) {
        int64_t v = parse_decimal(h->value, h->value_len);
        if (v < 0 || (out->content_length >= 0 && out->content_length != v))
            return SL_ERR_PARSE;
        out->content_length = v;
    } else if (header_is(h, "transfer-encoding")) {
        /* only chunked (and identity) can be undone here: "gzip, chunked" cannot */
        if (!only_tokens(h->value, h->value_len, "chunked", "identity"))
            return SL_ERR_PARSE;
        if (value_has_token(h->value, h->value_len, "chunked"))
            out->chunked = 1;
    } else if (header_is(h, "connection")) {
        if (value_has_token(h->value, h->value_len, "close"))
            out->keep_alive = 0;
        else if (value_has_token(h->value, h->value_len, "keep-alive"))
            out->keep_alive = 1;
    } else if (header_is(h, "retry-after")) {
        out->retry_after_s = parse_decimal(h->value, h->value_len);
        if (out->retry_after_s < 0 && h->value_len < sizeof(out->retry_after_date)) {
            memcpy(out->retry_after_date, h->value, h->value_len);
            out->retry_after_date[h->value_len] = '\0';
        }
    } else if (header_is(h, "content-encoding")) {
        if (!only_tokens(h->value, h->value_len, "identity", "identity"))
            out->encoded = 1;
    }
    return SL_OK;
}

sl_err_t pool_http_parse_head(const char *buf, size_t len, pool_http_head_t *out)
{
    struct phr_header headers[POOL_HTTP_MAX_HEADERS];
    size_t nheaders = POOL_HTTP_MAX_HEADERS;
    const char *msg;
    size_t msg_len;
    int minor, status;

    int ret = phr_parse_response(buf, len, &minor, &status, &msg, &msg_len, headers, &nheaders, 0);
    if (ret == -2)
        return len > MAX_HEAD_BYTES ? SL_ERR_TOO_LARGE : SL_ERR_TRUNCATED;
    if (ret < 0 || status < 200 || status > 999)
        return SL_ERR_PARSE;
    if ((size_t)ret > MAX_HEAD_BYTES)
        return SL_ERR_TOO_LARGE;

    memset(out, 0, sizeof(*out));
    out->status = status;
    out->minor_version = minor;
    out->head_len = (size_t)ret;
    out->content_length = -1;
    out->retry_after_s = -1;
    out->keep_alive = minor >= 1;
    for (size_t i = 0; i < nheaders; i++) {
        sl_err_t err = apply_header(&headers[i], out);
        if (err != SL_OK)
            return err;
    }
    if (out->chunked) /* RFC 9112 6.3: chunked overrides Content-Length */
        out->content_length = -1;
    if (status == 204 || status == 304) { /* never a body, whatever the headers say */
        out->chunked = 0;
        out->content_length = 0;
    }
    return SL_OK;
}

enum {
    CH_SIZE,      /* hex digits of the chunk size */
    CH_EXT,       /* chunk extension, up to CR LF */
    CH_SIZE_LF,   /* LF after the size line */
    CH_DATA,
    CH_DATA_CR,
    CH_DATA_LF,
    CH_TRAILER,   /* start of a trailer line, or the final CR LF */
    CH_TRAILER_LINE,
    CH_END_LF,    /* LF of the final empty line */
    CH_DONE,
};


/* Handles one byte of the framing (every state but CH_DATA). */
static sl_err_t chunked_byte(pool_chunked_t *d, char c)
{
    int h;
    switch (d->state) {
    case CH_SIZE:
        if ((h = sl_hex_digit(c)) >= 0) {
            if (++d->digits > 15)
                return SL_ERR_PARSE;
            d->remaining = d->remaining * 16 + (uint64_t)h;
            return SL_OK;
        }
        if (d->digits == 0)
            return SL_ERR_PARSE;
        if (c == '\r')
            d->state = CH_SIZE_LF;
        else if (c == ';' || c == ' ' || c == '\t')
            d->state = CH_EXT;
        else
            return SL_ERR_PARSE;
        return SL_OK;
    case CH_EXT:
        if (c == '\r')
            d->state = CH_SIZE_LF;
        else if (c == '\n')
            return SL_ERR_PARSE;
        return SL_OK;
    case CH_SIZE_LF:
        if (c != '\n')
            return SL_ERR_PARSE;
        d->state = d->remaining == 0 ? CH_TRAILER : CH_DATA;
        return SL_OK;
    case CH_DATA_CR:
        if (c != '\r')
            return SL_ERR_PARSE;
        d->state = CH_DATA_LF;
        return SL_OK;
    case CH_DATA_LF:
        if (c != '\n')
            return SL_ERR_PARSE;
        d->state = CH_SIZE;
        d->digits = 0;
        d->remaining = 0;
        return SL_OK;
    case CH_TRAILER:
        /* an empty line ends the trailers; a bare LF ends it too, as bare
         * LFs end trailer lines */
        d->state = c == '\r' ? CH_END_LF : c == '\n' ? CH_DONE : CH_TRAILER_LINE;
        return SL_OK;
    case CH_TRAILER_LINE:
        if (c == '\n')
            d->state = CH_TRAILER;
        return SL_OK;
    case CH_END_LF:
        if (c != '\n')
            return SL_ERR_PARSE;
        d->state = CH_DONE;
        return SL_OK;
    case CH_DATA:
    case CH_DONE:
        break;
    }
    return SL_ERR_PARSE;
}

sl_err_t pool_chunked_feed(pool_chunked_t *d, const char *in, size_t len, sl_buf_t *out, size_t max_body,
                           size_t *consumed, int *done)
{
    size_t i = 0;
    *done = 0;
    while (i < len && d->state != CH_DONE) {
        if (d->state == CH_DATA) {
            size_t n = len - i;
            if (n > d->remaining)
                n = (size_t)d->remaining;
            if (out->len + n > max_body)
                return SL_ERR_TOO_LARGE;
            sl_buf_append(out, in + i, n);
            i += n;
            d->remaining -= n;
            if (d->remaining == 0)
                d->state = CH_DATA_CR;
            continue;
        }
        sl_err_t err = chunked_byte(d, in[i++]);
        if (err != SL_OK)
            return err;
    }
    *consumed = i;
    *done = d->state == CH_DONE;
    return SL_OK;
}

int64_t pool_http_date_delta(const char *date, int64_t now_s)
{
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    const char *end = strptime(date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    if (end == NULL || *end != '\0')
        return -1;
    int64_t t = (int64_t)timegm(&tm);
    return t > now_s ? t - now_s : 0;
}

uint32_t pool_http_retry_after_ms(const pool_http_head_t *h)
{
    int64_t s = h->retry_after_s;
    if (s < 0 && h->retry_after_date[0] != '\0')
        s = pool_http_date_delta(h->retry_after_date, (int64_t)time(NULL));
    if (s < 0)
        return 0;
    if (s > 86400)
        s = 86400;
    return (uint32_t)s * 1000;
}

sl_err_t pool_http_parse_upgrade(const char *buf, size_t len, int *status, size_t *head_len, char *accept,
                                 size_t accept_size)
{
    struct phr_header headers[POOL_HTTP_MAX_HEADERS];
    size_t nheaders = POOL_HTTP_MAX_HEADERS;
    const char *msg;
    size_t msg_len;
    int minor;
    int ret = phr_parse_response(buf, len, &minor, status, &msg, &msg_len, headers, &nheaders, 0);
    if (ret == -2)
        return len > MAX_HEAD_BYTES ? SL_ERR_TOO_LARGE : SL_ERR_TRUNCATED;
    if (ret < 0 || (size_t)ret > MAX_HEAD_BYTES)
        return SL_ERR_PARSE;
    *head_len = (size_t)ret;
    accept[0] = '\0';
    for (size_t i = 0; i < nheaders; i++)
        if (header_is(&headers[i], "sec-websocket-accept") && headers[i].value_len < accept_size) {
            memcpy(accept, headers[i].value, headers[i].value_len);
            accept[headers[i].value_len] = '\0';
        }
    return SL_OK;
}
