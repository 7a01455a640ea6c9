/* pool/pool_http.h: reading an upstream's HTTP/1.1 answer.
 *
 * Pure functions over bytes, fuzzed (tests/fuzz/fuzz_http.c): the status line
 * and the headers sluice acts on, and an incremental chunked decoder. */
#ifndef POOL_HTTP_H
#define POOL_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "base/sl_buf.h"
#include "base/sl_err.h"

#define POOL_HTTP_MAX_HEADERS 100

typedef struct pool_http_head {
    int status;
    int minor_version;
    size_t head_len;              /* bytes of status line + headers + blank line */
    int64_t content_length;       /* -1 if absent */
    int chunked;                  /* Transfer-Encoding: chunked */
    int keep_alive;               /* connection may be reused after this answer */
    int64_t retry_after_s;        /* Retry-After delta-seconds, -1 if absent or a date */
    char retry_after_date[40];    /* Retry-After HTTP-date, "" if absent */
    int encoded;                  /* Content-Encoding other than identity */
} pool_http_head_t;

/* Parses the answer head at buf[0..len). Returns SL_OK and fills *out,
 * SL_ERR_TRUNCATED if more bytes are needed, SL_ERR_PARSE if it is not an
 * HTTP/1.x answer (or has a bad Content-Length, or too many headers),
 * SL_ERR_TOO_LARGE if the head exceeds 64 KiB. 1xx answers are SL_ERR_PARSE:
 * sluice never sends Expect. */
SL_MUST_CHECK sl_err_t pool_http_parse_head(const char *buf, size_t len, pool_http_head_t *out);

/* Incremental decoder of a chunked body. Zero-initialise before use. */
typedef struct pool_chunked {
    int state;
    uint64_t remaining;           /* bytes left in the current chunk */
    unsigned digits;              /* hex digits read for the current size */
} pool_chunked_t;

/* Decodes in[0..len), appending data to out. *consumed is set to the bytes
 * used (all of them unless the body ended); *done to 1 once the last chunk
 * and trailers were read. SL_ERR_PARSE on a malformed encoding,
 * SL_ERR_TOO_LARGE when out would exceed max_body bytes. */
SL_MUST_CHECK sl_err_t pool_chunked_feed(pool_chunked_t *d, const char *in, size_t len, sl_buf_t *out,
                                         size_t max_body, size_t *consumed, int *done);

/* Converts an HTTP-date ("Sun, 06 Nov 1994 08:49:37 GMT") to seconds after
 * now_s (0 if in the past); -1 if it does not parse. */
int64_t pool_http_date_delta(const char *date, int64_t now_s);

/* An answer's Retry-After (seconds or an HTTP date), in ms capped at a day; 0 if none. */
uint32_t pool_http_retry_after_ms(const pool_http_head_t *h);

/* The head of an answer to a WebSocket Upgrade (pool_ws.c): its status
 * (101 expected), length, and Sec-WebSocket-Accept value ("" if absent or
 * longer than accept_size - 1). Errors as pool_http_parse_head's, but any
 * status parses. */
SL_MUST_CHECK sl_err_t pool_http_parse_upgrade(const char *buf, size_t len, int *status, size_t *head_len,
                                               char *accept, size_t accept_size);

#endif
