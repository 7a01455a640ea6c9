/* tests/pool/test_http.c: pool/pool_http.h, table-driven: the answer head,
 * the chunked decoder (whole, a byte at a time, and split at every point)
 * and HTTP-dates. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sl_buf.h"
#include "pool/pool_http.h"
#include "pool/pool_link.h"

/* ---- heads ------------------------------------------------------------- */

typedef struct head_case {
    const char *in;
    sl_err_t err;
    int status, minor;
    int64_t content_length;
    int chunked, keep_alive;
    int64_t retry_after_s;
    const char *retry_after_date;
    int encoded;
    size_t body; /* bytes after the head in `in` */
} head_case_t;

/* rows override the defaults HEAD() sets */
#pragma GCC diagnostic ignored "-Woverride-init"

#define OK200 "HTTP/1.1 200 OK\r\n"
/* a successful parse: fields not named are the defaults of a bare 1.1 answer */
#define HEAD(in_, ...) \
    {in_, SL_OK, .status = 200, .minor = 1, .content_length = -1, .keep_alive = 1, .retry_after_s = -1, \
     .retry_after_date = "", __VA_ARGS__}
#define BAD(in_, e) {in_, SL_ERR_##e}

static const head_case_t head_cases[] = {
    HEAD(OK200 "Content-Length: 5\r\n\r\nhello", .content_length = 5, .body = 5),
    HEAD(OK200 "content-length: 0\r\n\r\n", .content_length = 0),
    HEAD(OK200 "CONTENT-LENGTH:  42 \r\n\r\n", .content_length = 42),
    HEAD(OK200 "Content-Length: 999999999999999999\r\n\r\n", .content_length = 999999999999999999),
    HEAD(OK200 "Content-Length: 7\r\nContent-Length: 7\r\n\r\n", .content_length = 7),
    HEAD("HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n\r\n{}", .status = 404, .body = 2),
    HEAD("HTTP/1.1 429 Too Many Requests\r\nRetry-After: 120\r\n\r\n", .status = 429, .retry_after_s = 120),
    HEAD("HTTP/1.1 503 Service Unavailable\r\nRetry-After:  7 \r\n\r\n", .status = 503, .retry_after_s = 7),
    HEAD("HTTP/1.1 503 X\r\nRetry-After: Fri, 31 Dec 1999 23:59:59 GMT\r\n\r\n", .status = 503,
         .retry_after_date = "Fri, 31 Dec 1999 23:59:59 GMT"),
    HEAD("HTTP/1.1 429 X\r\nRetry-After: -5\r\n\r\n", .status = 429, .retry_after_date = "-5"),
    HEAD("HTTP/1.1 429 X\r\nRetry-After: 0123456789012345678901234567890123456789x\r\n\r\n", .status = 429),
    HEAD(OK200 "Transfer-Encoding: chunked\r\n\r\n5\r\n", .chunked = 1, .body = 3),
    HEAD(OK200 "Transfer-Encoding: Chunked\r\n\r\n", .chunked = 1),
    HEAD(OK200 "Content-Length: 10\r\nTransfer-Encoding: chunked\r\n\r\n", .chunked = 1),
    HEAD(OK200 "Transfer-Encoding: chunked\r\nContent-Length: 10\r\n\r\n", .chunked = 1),
    HEAD(OK200 "Transfer-Encoding: identity\r\nContent-Length: 3\r\n\r\n", .content_length = 3),
    HEAD("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n", .minor = 0, .keep_alive = 0, .content_length = 2),
    HEAD("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n", .minor = 0, .keep_alive = 1),
    HEAD("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n\r\n", .minor = 0, .keep_alive = 1),
    HEAD(OK200 "Connection: close\r\n\r\n", .keep_alive = 0),
    HEAD(OK200 "Connection: CLOSE\r\n\r\n", .keep_alive = 0),
    HEAD(OK200 "Connection: upgrade, close\r\n\r\n", .keep_alive = 0),
    HEAD(OK200 "Connection: closed\r\n\r\n", .keep_alive = 1),
    HEAD(OK200 "Connection: keep-alive\r\n\r\n", .keep_alive = 1),
    HEAD(OK200 "Content-Encoding: gzip\r\n\r\n", .encoded = 1),
    HEAD(OK200 "Content-Encoding: br\r\n\r\n", .encoded = 1),
    HEAD(OK200 "Content-Encoding: identity\r\n\r\n", .encoded = 0),
    HEAD(OK200 "X-A: 1\r\nX-B: 2\r\n\r\n"),
    HEAD("HTTP/1.1 204 No Content\r\n\r\n", .status = 204, .content_length = 0), /* never a body */
    HEAD("HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n", .status = 304, .content_length = 0),
    HEAD("HTTP/1.1 200 \r\n\r\n"),
    HEAD("HTTP/1.1 200 OK\n\n"),
    HEAD("HTTP/1.1 999 Whatever\r\n\r\n", .status = 999),
    HEAD("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1 200 OK\r\n\r\n", .content_length = 3,
         .body = 22),
    /* truncated heads */
    BAD("", TRUNCATED), BAD("H", TRUNCATED), BAD("HTTP/1.", TRUNCATED), BAD("HTTP/1.1 20", TRUNCATED),
    BAD(OK200, TRUNCATED), BAD(OK200 "Content-Length: 5\r\n", TRUNCATED), BAD(OK200 "Content-Len", TRUNCATED),
    BAD(OK200 "Content-Length: 5\r\n\r", TRUNCATED),
    /* not an HTTP/1.x answer */
    BAD("garbage\r\n\r\n", PARSE), BAD("HTTP/2 200\r\n\r\n", PARSE), BAD("HTTP/1.1 abc OK\r\n\r\n", PARSE),
    BAD("http/1.1 200 OK\r\n\r\n", PARSE), BAD("HTTP/1.1  200 OK\r\n\r\n", PARSE),
    BAD("GET / HTTP/1.1\r\nHost: x\r\n\r\n", PARSE), BAD(OK200 "No colon here\r\n\r\n", PARSE),
    BAD(OK200 "Bad Name: 1\r\n\r\n", PARSE),
    /* 1xx is never expected */
    BAD("HTTP/1.1 100 Continue\r\n\r\n", PARSE), BAD("HTTP/1.1 101 Switching Protocols\r\n\r\n", PARSE),
    BAD("HTTP/1.1 199 X\r\n\r\n", PARSE), BAD("HTTP/1.1 099 X\r\n\r\n", PARSE),
    /* bad framing */
    BAD(OK200 "Content-Length: 5\r\nContent-Length: 6\r\n\r\n", PARSE),
    BAD(OK200 "Content-Length: -1\r\n\r\n", PARSE), BAD(OK200 "Content-Length: 0x10\r\n\r\n", PARSE),
    BAD(OK200 "Content-Length: \r\n\r\n", PARSE), BAD(OK200 "Content-Length: 5 5\r\n\r\n", PARSE),
    BAD(OK200 "Content-Length: +5\r\n\r\n", PARSE),
    BAD(OK200 "Content-Length: 1234567890123456789\r\n\r\n", PARSE),
    BAD(OK200 "Transfer-Encoding: gzip\r\n\r\n", PARSE), BAD(OK200 "Transfer-Encoding: x\r\n\r\n", PARSE),
};

Test(http, head_table)
{
    size_t n = sizeof head_cases / sizeof head_cases[0];
    cr_assert_geq(n, 30);
    for (size_t i = 0; i < n; i++) {
        const head_case_t *c = &head_cases[i];
        size_t len = strlen(c->in);
        char *buf = malloc(len ? len : 1); /* no terminator: ASan sees an over-read */
        memcpy(buf, c->in, len);
        pool_http_head_t h;
        memset(&h, 0x5a, sizeof h);
        sl_err_t err = pool_http_parse_head(buf, len, &h);
        cr_expect_eq(err, c->err, "row %zu '%.40s': %s, want %s", i, c->in, sl_err_name(err), sl_err_name(c->err));
        if (err == SL_OK && c->err == SL_OK) {
            cr_expect_eq(h.status, c->status, "row %zu: status", i);
            cr_expect_eq(h.minor_version, c->minor, "row %zu: minor", i);
            cr_expect_eq(h.head_len, len - c->body, "row %zu: head_len %zu", i, h.head_len);
            cr_expect_eq(h.content_length, c->content_length, "row %zu: content_length %lld", i,
                         (long long)h.content_length);
            cr_expect_eq(h.chunked, c->chunked, "row %zu: chunked", i);
            cr_expect_eq(h.keep_alive, c->keep_alive, "row %zu: keep_alive", i);
            cr_expect_eq(h.retry_after_s, c->retry_after_s, "row %zu: retry_after_s %lld", i,
                         (long long)h.retry_after_s);
            cr_expect_str_eq(h.retry_after_date, c->retry_after_date, "row %zu: retry_after_date", i);
            cr_expect_eq(h.encoded, c->encoded, "row %zu: encoded", i);
        }
        free(buf);
    }
}

/* A complete head split anywhere is TRUNCATED at every proper prefix. */
Test(http, head_prefixes_are_truncated)
{
    const char *in = "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nContent-Length: 2\r\n"
                     "Connection: close\r\n\r\n";
    size_t len = strlen(in);
    for (size_t n = 0; n < len; n++) {
        pool_http_head_t h;
        char *buf = malloc(n ? n : 1);
        memcpy(buf, in, n);
        cr_expect_eq(pool_http_parse_head(buf, n, &h), SL_ERR_TRUNCATED, "prefix %zu", n);
        free(buf);
    }
    pool_http_head_t h;
    cr_assert_eq(pool_http_parse_head(in, len, &h), SL_OK);
    cr_expect(h.status == 429 && h.retry_after_s == 3 && h.content_length == 2 && !h.keep_alive);
}

/* The header count limit is POOL_HTTP_MAX_HEADERS, exactly. */
Test(http, header_count_limit)
{
    for (int extra = -1; extra <= 1; extra++) {
        sl_buf_t b = SL_BUF_INIT;
        sl_buf_append_str(&b, OK200);
        for (int i = 0; i < POOL_HTTP_MAX_HEADERS + extra; i++)
            sl_buf_printf(&b, "X-H%d: v\r\n", i);
        sl_buf_append_str(&b, "Content-Length: 1\r\n\r\nx");
        /* the Content-Length line is one more header */
        pool_http_head_t h;
        sl_err_t err = pool_http_parse_head(b.base, b.len, &h);
        if (extra < 0) {
            cr_expect_eq(err, SL_OK, "%d headers", POOL_HTTP_MAX_HEADERS + extra + 1);
            cr_expect_eq(h.content_length, 1);
        } else {
            cr_expect_eq(err, SL_ERR_PARSE, "%d headers: %s", POOL_HTTP_MAX_HEADERS + extra + 1, sl_err_name(err));
        }
        sl_buf_dispose(&b);
    }
}

/* Heads over 64 KiB: complete or not, TOO_LARGE; just under, fine. */
Test(http, head_size_limit)
{
    static const struct {
        size_t value; /* bytes of one header's value */
        int complete;
        sl_err_t err;
    } cases[] = {
        {60000, 1, SL_OK},
        {60000, 0, SL_ERR_TRUNCATED},
        {70000, 1, SL_ERR_TOO_LARGE},
        {70000, 0, SL_ERR_TOO_LARGE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sl_buf_t b = SL_BUF_INIT;
        sl_buf_append_str(&b, OK200 "X-Big: ");
        for (size_t k = 0; k < cases[i].value; k++)
            sl_buf_append_char(&b, 'v');
        sl_buf_append_str(&b, cases[i].complete ? "\r\n\r\n" : "\r\n");
        pool_http_head_t h;
        sl_err_t err = pool_http_parse_head(b.base, b.len, &h);
        cr_expect_eq(err, cases[i].err, "case %zu: %s", i, sl_err_name(err));
        sl_buf_dispose(&b);
    }
}

/* ---- chunked bodies ---------------------------------------------------- */

typedef struct chunk_case {
    const char *in;
    size_t max_body;     /* 0: 1 MiB */
    sl_err_t err;
    const char *out;     /* decoded body on SL_OK */
    int done;
    size_t rest;         /* bytes of `in` left unconsumed on SL_OK */
} chunk_case_t;

#define CH(in_, out_, done_, ...) {in_, .err = SL_OK, .out = out_, .done = done_, __VA_ARGS__}
#define CHBAD(in_, e, ...) {in_, .err = SL_ERR_##e, __VA_ARGS__}

static const chunk_case_t chunk_cases[] = {
    CH("5\r\nhello\r\n0\r\n\r\n", "hello", 1),
    CH("3\r\nabc\r\n4\r\ndefg\r\n1\r\nh\r\n0\r\n\r\n", "abcdefgh", 1),
    CH("A\r\n0123456789\r\na\r\nabcdefghij\r\n0\r\n\r\n", "0123456789abcdefghij", 1),
    CH("0000000000000A\r\n0123456789\r\n0\r\n\r\n", "0123456789", 1),
    CH("5;name=value\r\nhello\r\n0;last\r\n\r\n", "hello", 1),
    CH("5 ;x\r\nhello\r\n0\t;y=\"a b\"\r\n\r\n", "hello", 1),
    CH("5\r\nhe\r\nl\r\n0\r\n\r\n", "he\r\nl", 1),
    CH("0\r\nX-Trailer: 1\r\nOther: two\r\n\r\n", "", 1),
    CH("2\r\nab\r\n0\r\nChecksum: x\r\n\r\n", "ab", 1),
    CH("0\r\n\r\n", "", 1),
    CH("0\r\n\r\nHTTP/1.1 200 OK\r\n", "", 1, .rest = 17),
    CH("5\r\nhello\r\n0\r\n\r\nX", "hello", 1, .rest = 1),
    CH("5\r\nhel", "hel", 0),
    CH("5\r\nhello\r\n", "hello", 0),
    CH("5\r\nhello\r\n0\r\n", "hello", 0),
    CH("5\r\nhello\r\n0\r\nX: 1\r\n", "hello", 0),
    CH("", "", 0),
    CH("fffffffffffffff\r\nabc", "abc", 0),
    CH("a\r\n0123456789\r\n0\r\n\r\n", "0123456789", 1, .max_body = 10),
    CHBAD("b\r\n0123456789a\r\n0\r\n\r\n", TOO_LARGE, .max_body = 10),
    CHBAD("6\r\n012345\r\n6\r\n012345\r\n0\r\n\r\n", TOO_LARGE, .max_body = 11),
    CHBAD("ffffffffffffffff\r\n", PARSE),
    CHBAD("10000000000000000\r\n", PARSE),
    CHBAD("g\r\nabc\r\n", PARSE),
    CHBAD("\r\n", PARSE),
    CHBAD(";ext\r\n", PARSE),
    CHBAD("-1\r\n", PARSE),
    CHBAD("0x5\r\nhello\r\n", PARSE),
    CHBAD("5\nhello\r\n0\r\n\r\n", PARSE),
    CHBAD("5\r\rhello\r\n0\r\n\r\n", PARSE),
    CHBAD("5;ext\nhello\r\n", PARSE),
    CHBAD("5\r\nhelloX0\r\n\r\n", PARSE),
    CHBAD("5\r\nhello\n0\r\n\r\n", PARSE),
    CHBAD("5\r\nhello\r0\r\n\r\n", PARSE),
    CHBAD("5\r\nhello\r\n0\r\n\rX", PARSE),
    CHBAD("5\r\nhello\r\n\r\n", PARSE),
};

static sl_err_t feed_all(const char *in, size_t len, size_t max_body, sl_buf_t *out, size_t *consumed, int *done)
{
    pool_chunked_t d;
    memset(&d, 0, sizeof d);
    return pool_chunked_feed(&d, in, len, out, max_body, consumed, done);
}

/* Feeds in[0..len) in pieces starting at the given cut points. */
static sl_err_t feed_pieces(const char *in, size_t len, const size_t *cuts, size_t ncuts, size_t max_body,
                            sl_buf_t *out, size_t *consumed, int *done)
{
    pool_chunked_t d;
    memset(&d, 0, sizeof d);
    *consumed = 0;
    *done = 0;
    size_t start = 0;
    for (size_t k = 0; k <= ncuts; k++) {
        size_t end = k < ncuts ? cuts[k] : len;
        size_t used = 0;
        /* each piece in its own allocation, so ASan sees a read past it */
        char *piece = malloc(end - start ? end - start : 1);
        memcpy(piece, in + start, end - start);
        sl_err_t err = pool_chunked_feed(&d, piece, end - start, out, max_body, &used, done);
        free(piece);
        if (err != SL_OK)
            return err;
        cr_assert_leq(used, end - start);
        *consumed += used;
        if (*done)
            return SL_OK;
        cr_assert_eq(used, end - start, "a piece was not consumed although the body did not end");
        start = end;
    }
    return SL_OK;
}

static void check_chunk_result(const char *row, const char *how, const chunk_case_t *c, size_t len, sl_err_t err,
                               const sl_buf_t *out, size_t consumed, int done)
{
    size_t max = c->max_body ? c->max_body : 1 << 20;
    cr_expect_eq(err, c->err, "%s %s: %s, want %s", row, how, sl_err_name(err), sl_err_name(c->err));
    cr_expect_leq(out->len, max, "%s %s: body over max_body", row, how);
    if (err != SL_OK || c->err != SL_OK)
        return;
    cr_expect(out->len == strlen(c->out) && memcmp(out->len ? out->base : "", c->out, out->len) == 0,
              "%s %s: body '%.*s', want '%s'", row, how, (int)out->len, out->len ? out->base : "", c->out);
    cr_expect_eq(done, c->done, "%s %s: done", row, how);
    cr_expect_eq(consumed, len - c->rest, "%s %s: consumed %zu of %zu", row, how, consumed, len);
}

Test(http, chunked_table)
{
    size_t n = sizeof chunk_cases / sizeof chunk_cases[0];
    cr_assert_geq(n, 30);
    for (size_t i = 0; i < n; i++) {
        const chunk_case_t *c = &chunk_cases[i];
        size_t len = strlen(c->in), max = c->max_body ? c->max_body : 1 << 20;
        char row[64];
        snprintf(row, sizeof row, "row %zu '%.30s'", i, c->in);
        size_t consumed = 0;
        int done = 0;
        sl_buf_t out = SL_BUF_INIT;

        sl_err_t err = feed_all(c->in, len, max, &out, &consumed, &done);
        check_chunk_result(row, "whole", c, len, err, &out, consumed, done);
        sl_buf_dispose(&out);

        /* a byte at a time */
        size_t *cuts = malloc((len ? len : 1) * sizeof *cuts);
        for (size_t k = 0; k + 1 < len; k++)
            cuts[k] = k + 1;
        err = feed_pieces(c->in, len, cuts, len ? len - 1 : 0, max, &out, &consumed, &done);
        check_chunk_result(row, "bytewise", c, len, err, &out, consumed, done);
        sl_buf_dispose(&out);

        /* in two pieces, at every point */
        for (size_t cut = 0; cut <= len; cut++) {
            char how[32];
            snprintf(how, sizeof how, "split at %zu", cut);
            err = feed_pieces(c->in, len, &cut, 1, max, &out, &consumed, &done);
            check_chunk_result(row, how, c, len, err, &out, consumed, done);
            sl_buf_dispose(&out);
        }
        free(cuts);
    }
}

/* max_body counts what out already holds: the limit is on the whole body. */
Test(http, chunked_limit_counts_existing_output)
{
    sl_buf_t out = SL_BUF_INIT;
    sl_buf_append_str(&out, "12345678");
    size_t consumed;
    int done;
    cr_expect_eq(feed_all("3\r\nabc\r\n0\r\n\r\n", 13, 10, &out, &consumed, &done), SL_ERR_TOO_LARGE);
    cr_expect_leq(out.len, 10);
    sl_buf_reset(&out);
    sl_buf_append_str(&out, "1234567");
    cr_expect_eq(feed_all("3\r\nabc\r\n0\r\n\r\n", 13, 10, &out, &consumed, &done), SL_OK);
    cr_expect_str_eq(out.base, "1234567abc");
    cr_expect(done);
    sl_buf_dispose(&out);
}

/* A large body in many chunks, fed in ragged pieces, comes out whole. */
Test(http, chunked_many_chunks)
{
    sl_buf_t enc = SL_BUF_INIT, want = SL_BUF_INIT, out = SL_BUF_INIT;
    unsigned seed = 12345;
    for (int i = 0; i < 300; i++) {
        size_t n = (size_t)(i * 37 % 257) + 1;
        sl_buf_printf(&enc, i % 2 ? "%zx;i=%d\r\n" : "%zX\r\n", n, i);
        for (size_t k = 0; k < n; k++) {
            seed = seed * 1103515245u + 12345u;
            char ch = (char)(seed >> 16);
            sl_buf_append_char(&enc, ch);
            sl_buf_append_char(&want, ch);
        }
        sl_buf_append_str(&enc, "\r\n");
    }
    sl_buf_append_str(&enc, "0\r\nA: b\r\n\r\n");
    size_t cuts[64], ncuts = 0;
    for (size_t at = 1; at < enc.len && ncuts < 64; at += 1 + at % 997)
        cuts[ncuts++] = at;
    size_t consumed;
    int done;
    cr_assert_eq(feed_pieces(enc.base, enc.len, cuts, ncuts, enc.len, &out, &consumed, &done), SL_OK);
    cr_expect(done);
    cr_expect_eq(consumed, enc.len);
    cr_expect(out.len == want.len && memcmp(out.base, want.base, want.len) == 0);
    sl_buf_dispose(&enc);
    sl_buf_dispose(&want);
    sl_buf_dispose(&out);
}

/* ---- HTTP-dates -------------------------------------------------------- */

Test(http, date_delta)
{
    static const struct {
        const char *date;
        int64_t now;
        int64_t want;
    } cases[] = {
        {"Sun, 06 Nov 1994 08:49:37 GMT", 784111777, 0},
        {"Sun, 06 Nov 1994 08:49:37 GMT", 784111777 - 10, 10},
        {"Sun, 06 Nov 1994 08:49:37 GMT", 784111777 + 10, 0},
        {"Sun, 06 Nov 1994 08:49:37 GMT", 0, 784111777},
        {"Thu, 01 Jan 1970 00:00:00 GMT", 0, 0},
        {"Fri, 31 Dec 2038 23:59:59 GMT", 2177452799 - 1, 1},
        {"Sat, 29 Feb 2020 12:00:00 GMT", 1582977600 - 3600, 3600},
        {"Sun, 06 Nov 1994 08:49:37 UTC", 0, -1},
        {"Sun, 06 Nov 1994 08:49:37 GMT junk", 0, -1},
        {"Sun, 06 Nov 1994 08:49:37", 0, -1},
        {"Sun, 06 Nov 1994", 0, -1},
        {"120", 0, -1},
        {"", 0, -1},
        {"yesterday", 0, -1},
        {"Sun, 06 Xyz 1994 08:49:37 GMT", 0, -1},
        {"Sun, 06 Nov 1994 25:49:37 GMT", 0, -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_expect_eq(pool_http_date_delta(cases[i].date, cases[i].now), cases[i].want, "case %zu '%s': %lld", i,
                     cases[i].date, (long long)pool_http_date_delta(cases[i].date, cases[i].now));
}

/* ---- codings stacked in one header ------------------------------------- */

/* "gzip, chunked" is a gzip body sent chunked: taking out the chunks leaves
 * gzip, an encoding sluice cannot undo, so the head must be refused like
 * "Transfer-Encoding: gzip" alone is. And a Content-Encoding list that
 * names identity next to gzip is still gzip. */
Test(http, stacked_codings)
{
    static const struct {
        const char *in;
        sl_err_t err;
        int encoded;
    } cases[] = {
        {OK200 "Transfer-Encoding: gzip, chunked\r\n\r\n", SL_ERR_PARSE, 0},
        {OK200 "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n", SL_ERR_PARSE, 0},
        {OK200 "Content-Encoding: gzip, identity\r\n\r\n", SL_OK, 1},
        {OK200 "Content-Encoding: identity\r\n\r\n", SL_OK, 0},
        {OK200 "Content-Encoding: gzip\r\n\r\n", SL_OK, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pool_http_head_t h;
        sl_err_t err = pool_http_parse_head(cases[i].in, strlen(cases[i].in), &h);
        cr_expect_eq(err, cases[i].err, "case %zu '%s': %s, want %s", i, cases[i].in, sl_err_name(err),
                     sl_err_name(cases[i].err));
        if (err == SL_OK && cases[i].err == SL_OK)
            cr_expect_eq(h.encoded, cases[i].encoded, "case %zu '%s': encoded", i, cases[i].in);
    }
}

/* The WebSocket Upgrade's answer head, and the Accept its key asks for
 * (RFC 6455 section 1.3's own example). */
Test(http, upgrade_head_and_accept)
{
    char accept[29];
    pool_ws_accept_of("dGhlIHNhbXBsZSBub25jZQ==", accept);
    cr_expect_str_eq(accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    static const char head[] = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                               "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n\x81\x02hi";
    int status = 0;
    size_t len = 0;
    char got[64];
    cr_assert_eq(pool_http_parse_upgrade(head, sizeof(head) - 1, &status, &len, got, sizeof(got)), SL_OK);
    cr_expect_eq(status, 101);
    cr_expect_eq(len, sizeof(head) - 1 - 4);
    cr_expect_str_eq(got, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    cr_expect_eq(pool_http_parse_upgrade(head, 20, &status, &len, got, sizeof(got)), SL_ERR_TRUNCATED);
    static const char refused[] = "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n";
    cr_assert_eq(pool_http_parse_upgrade(refused, sizeof(refused) - 1, &status, &len, got, sizeof(got)), SL_OK);
    cr_expect_eq(status, 403);
    cr_expect_str_eq(got, "");
}
