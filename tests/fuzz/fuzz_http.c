/* tests/fuzz/fuzz_http.c: pool/pool_http.h on every input.
 *
 * The input is an upstream's answer as it comes off the socket. The head
 * is parsed; the chunked decoder gets what follows a parsed head (or the
 * whole input if there is none). A hash of the input picks max_body and the
 * points where the bytes are split, so every run of an input is the same.
 *
 * Oracles:
 *  - the head: fields in range, the head alone parses the same, and every
 *    proper prefix of it is TRUNCATED (a head that arrives in pieces is
 *    never refused);
 *  - the decoder: fed at once, split at one point, split at many points and
 *    a byte at a time, it gives the same error or the same body, consumed
 *    count and done flag; its output never exceeds max_body; after done,
 *    more input is left alone;
 *  - picohttpparser's phr_decode_chunked (more lenient): when sluice has
 *    the whole body, so has it, with the same bytes and the same end.
 *
 * Set SLUICE_FUZZ_SKIP_KNOWN=1 to skip the picohttpparser comparison for
 * bodies with an empty trailer line ended by a bare LF (a known divergence:
 * sluice reads it as the start of another trailer line). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "base/sl_buf.h"
#include "base/sl_hash.h"
#include "pool/pool_http.h"

#define CHECK(cond) \
    ((cond) ? (void)0 : (fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond), abort()))

/* picohttpparser ships inside libh2o without its header (see pool_http.c);
 * room to spare in case a later version grows the struct. */
struct phr_chunked_decoder {
    size_t bytes_left_in_chunk;
    char consume_trailer;
    char _hex_count;
    char _state;
    char spare[64];
};
ssize_t phr_decode_chunked(struct phr_chunked_decoder *decoder, char *buf, size_t *bufsz);

static int skip_known;

/* ---- heads -------------------------------------------------------------- */

static int head_eq(const pool_http_head_t *a, const pool_http_head_t *b)
{
    return a->status == b->status && a->minor_version == b->minor_version && a->head_len == b->head_len &&
           a->content_length == b->content_length && a->chunked == b->chunked && a->keep_alive == b->keep_alive &&
           a->retry_after_s == b->retry_after_s && strcmp(a->retry_after_date, b->retry_after_date) == 0 &&
           a->encoded == b->encoded;
}

static sl_err_t parse_copy(const uint8_t *data, size_t n, pool_http_head_t *h)
{
    char *buf = malloc(n ? n : 1); /* exactly n bytes: ASan sees any over-read */
    memcpy(buf, data, n);
    sl_err_t err = pool_http_parse_head(buf, n, h);
    free(buf);
    return err;
}

static size_t check_head(const uint8_t *data, size_t size)
{
    pool_http_head_t h;
    sl_err_t err = parse_copy(data, size, &h);
    CHECK(err == SL_OK || err == SL_ERR_TRUNCATED || err == SL_ERR_PARSE || err == SL_ERR_TOO_LARGE);
    if (err == SL_ERR_TOO_LARGE)
        CHECK(size > 64 * 1024);
    if (err != SL_OK)
        return 0;
    CHECK(h.head_len > 0 && h.head_len <= size && h.head_len <= 64 * 1024);
    CHECK(h.status >= 200 && h.status <= 999);
    CHECK(h.minor_version >= 0 && h.minor_version <= 9);
    CHECK(h.content_length >= -1);
    CHECK(!h.chunked || h.content_length == -1);
    CHECK(h.chunked == 0 || h.chunked == 1);
    CHECK(h.keep_alive == 0 || h.keep_alive == 1);
    CHECK(h.encoded == 0 || h.encoded == 1);
    CHECK(h.retry_after_s >= -1);
    CHECK(memchr(h.retry_after_date, '\0', sizeof h.retry_after_date) != NULL);
    if (h.retry_after_date[0] != '\0')
        (void)pool_http_date_delta(h.retry_after_date, (int64_t)(sl_fnv1a(SL_FNV1A_OFFSET, data, size) >> 33));

    /* the head alone is the same head */
    pool_http_head_t alone;
    CHECK(parse_copy(data, h.head_len, &alone) == SL_OK);
    CHECK(head_eq(&h, &alone));

    /* a head that arrives in pieces is waited for, never refused */
    size_t step = h.head_len <= 512 ? 1 : h.head_len / 256;
    for (size_t n = 0; n < h.head_len; n += step) {
        pool_http_head_t part;
        CHECK(parse_copy(data, n, &part) == SL_ERR_TRUNCATED);
    }
    return h.head_len;
}

/* ---- chunked bodies ----------------------------------------------------- */

typedef struct feed_result {
    sl_err_t err;
    sl_buf_t out;
    size_t consumed;
    int done;
} feed_result_t;

/* Feeds in[0..len) in pieces that end at cuts[0..ncuts) and at len. */
static void feed(const uint8_t *in, size_t len, const size_t *cuts, size_t ncuts, size_t max_body, feed_result_t *r)
{
    pool_chunked_t d;
    memset(&d, 0, sizeof d);
    sl_buf_init(&r->out);
    r->err = SL_OK;
    r->consumed = 0;
    r->done = 0;
    size_t start = 0;
    for (size_t k = 0; k <= ncuts; k++) {
        size_t end = k < ncuts ? cuts[k] : len;
        CHECK(end >= start && end <= len);
        char *piece = malloc(end - start ? end - start : 1);
        memcpy(piece, in + start, end - start);
        size_t used = 0;
        int done = 0;
        r->err = pool_chunked_feed(&d, piece, end - start, &r->out, max_body, &used, &done);
        free(piece);
        CHECK(r->out.len <= max_body);
        if (r->err != SL_OK) {
            CHECK(r->err == SL_ERR_PARSE || r->err == SL_ERR_TOO_LARGE);
            return;
        }
        CHECK(used <= end - start);
        r->consumed += used;
        if (done) {
            r->done = 1;
            /* more bytes after the end are left alone */
            size_t more = 0;
            int again = 0;
            size_t before = r->out.len;
            CHECK(pool_chunked_feed(&d, "0\r\n\r\n", 5, &r->out, max_body, &more, &again) == SL_OK);
            CHECK(more == 0 && again == 1 && r->out.len == before);
            return;
        }
        CHECK(used == end - start);
        start = end;
    }
}

static void check_same(const feed_result_t *a, const feed_result_t *b)
{
    CHECK(a->err == b->err);
    if (a->err != SL_OK)
        return;
    CHECK(a->out.len == b->out.len && (a->out.len == 0 || memcmp(a->out.base, b->out.base, a->out.len) == 0));
    CHECK(a->consumed == b->consumed);
    CHECK(a->done == b->done);
}

static void check_chunked(const uint8_t *in, size_t len, uint64_t h)
{
    static const size_t limits[] = {0, 1, 7, 64, 1000, 1 << 20};
    size_t max_body = limits[h % 6];
    h /= 6;

    feed_result_t whole, one, many;
    feed(in, len, NULL, 0, max_body, &whole);

    size_t cut = len ? (size_t)(h % (len + 1)) : 0;
    h /= len + 1;
    feed(in, len, &cut, 1, max_body, &one);
    check_same(&whole, &one);

    size_t cuts[16], ncuts = 0, at = 0;
    while (ncuts < 16 && len > 0) {
        at += 1 + (size_t)(h % 7);
        h = h * 6364136223846793005ull + 1442695040888963407ull;
        if (at >= len)
            break;
        cuts[ncuts++] = at;
    }
    feed(in, len, cuts, ncuts, max_body, &many);
    check_same(&whole, &many);
    sl_buf_dispose(&many.out);

    if (len <= 4096) {
        size_t *bytes = malloc((len ? len : 1) * sizeof *bytes);
        for (size_t k = 0; k + 1 < len; k++)
            bytes[k] = k + 1;
        feed_result_t each;
        feed(in, len, bytes, len ? len - 1 : 0, max_body, &each);
        check_same(&whole, &each);
        sl_buf_dispose(&each.out);
        free(bytes);
    }

    /* picohttpparser agrees on every body sluice calls complete */
    int known = skip_known && memmem(in, whole.consumed, "\n\n", 2) != NULL;
    if (whole.err == SL_OK && whole.done && !known) {
        struct phr_chunked_decoder pd;
        memset(&pd, 0, sizeof pd);
        pd.consume_trailer = 1;
        char *buf = malloc(len ? len : 1);
        memcpy(buf, in, len);
        size_t n = len;
        ssize_t rest = phr_decode_chunked(&pd, buf, &n);
        CHECK(rest >= 0);
        CHECK((size_t)rest == len - whole.consumed);
        CHECK(n == whole.out.len && memcmp(buf, whole.out.len ? whole.out.base : "", n) == 0);
        free(buf);
    }
    sl_buf_dispose(&whole.out);
    sl_buf_dispose(&one.out);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *s = getenv("SLUICE_FUZZ_SKIP_KNOWN");
    skip_known = s != NULL && s[0] == '1';
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t head_len = check_head(data, size);
    check_chunked(data + head_len, size - head_len, sl_fnv1a(SL_FNV1A_OFFSET, data, size));
    return 0;
}
