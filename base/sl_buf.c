#include "base/sl_buf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die_oom(size_t n)
{
    fprintf(stderr, "sluice: out of memory (allocating %zu bytes)\n", n);
    abort();
}

void *sl_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL)
        die_oom(n);
    return p;
}

void *sl_xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (p == NULL)
        die_oom(n * sz);
    return p;
}

void *sl_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (q == NULL)
        die_oom(n);
    return q;
}

char *sl_xstrdup(const char *s)
{
    return sl_xstrndup(s, strlen(s));
}

char *sl_xstrndup(const char *s, size_t n)
{
    char *p = sl_xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

void sl_buf_init(sl_buf_t *b)
{
    b->base = NULL;
    b->len = 0;
    b->cap = 0;
}

void sl_buf_dispose(sl_buf_t *b)
{
    free(b->base);
    sl_buf_init(b);
}

void sl_buf_reset(sl_buf_t *b)
{
    b->len = 0;
    if (b->cap)
        b->base[0] = '\0';
}

void sl_buf_reserve(sl_buf_t *b, size_t extra)
{
    if (extra > SIZE_MAX - b->len - 1)
        abort(); /* no buffer can be that large: a caller's arithmetic went wrong */
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    b->base = sl_xrealloc(b->base, cap);
    b->cap = cap;
}

void sl_buf_reserve_exact(sl_buf_t *b, size_t extra)
{
    if (extra > SIZE_MAX - b->len - 1)
        abort();
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return;
    b->base = sl_xrealloc(b->base, need);
    b->cap = need;
}

void sl_buf_append(sl_buf_t *b, const void *p, size_t n)
{
    sl_buf_reserve(b, n);
    if (n)
        memcpy(b->base + b->len, p, n);
    b->len += n;
    b->base[b->len] = '\0';
}

void sl_buf_append_str(sl_buf_t *b, const char *s)
{
    sl_buf_append(b, s, strlen(s));
}

void sl_buf_append_char(sl_buf_t *b, char c)
{
    sl_buf_reserve(b, 1);
    b->base[b->len++] = c;
    b->base[b->len] = '\0';
}

void sl_buf_vprintf(sl_buf_t *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n <= 0)
        return;
    sl_buf_reserve(b, (size_t)n);
    vsnprintf(b->base + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void sl_buf_printf(sl_buf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sl_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

size_t sl_u64_str(char out[SL_U64_STR_MAX], uint64_t v)
{
    static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                "8081828384858687888990919293949596979899";
    size_t n = 1;
    for (uint64_t t = v; t >= 10 && n < 20; n++)
        t /= 10;
    char *p = out + n;
    *p = '\0';
    while (v >= 100) {
        size_t i = (size_t)(v % 100) * 2;
        v /= 100;
        *--p = pairs[i + 1];
        *--p = pairs[i];
    }
    if (v >= 10) {
        *--p = pairs[v * 2 + 1];
        *--p = pairs[v * 2];
    } else {
        *--p = (char)('0' + v);
    }
    return n;
}

void sl_buf_append_u64(sl_buf_t *b, uint64_t v)
{
    char tmp[SL_U64_STR_MAX];
    sl_buf_append(b, tmp, sl_u64_str(tmp, v));
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if it is not one. */
static size_t utf8_seq_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return len;
}

/* Bytes that stand for themselves in a JSON string: printable ASCII but '"'
 * and '\\'. Others are escaped, or checked as UTF-8. */
static const uint8_t json_plain[256] = {
    [0x20 ... '"' - 1] = 1, ['"' + 1 ... '\\' - 1] = 1, ['\\' + 1 ... 0x7f] = 1,
};

void sl_buf_append_json_str(sl_buf_t *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n && json_plain[p[i]])
        i++;
    if (i == n) { /* the usual case (names, ids, URLs): nothing to escape, one copy */
        sl_buf_reserve(b, n + 2);
        char *o = b->base + b->len;
        o[0] = '"';
        if (n)
            memcpy(o + 1, s, n);
        o[n + 1] = '"';
        b->len += n + 2;
        b->base[b->len] = '\0';
        return;
    }
    sl_buf_append_char(b, '"');
    sl_buf_append(b, s, i); /* the plain run before the first byte to look at */
    while (i < n) {
        /* room for the worst case of a slice (every byte \u00XX or \ufffd, a
         * UTF-8 sequence running 3 bytes past it), then no check per byte */
        size_t stop = n - i > 4096 ? i + 4096 : n;
        sl_buf_reserve(b, (stop - i) * 6 + 8);
        char *o = b->base + b->len;
        while (i < stop) {
            unsigned char c = p[i];
            if (json_plain[c]) {
                *o++ = (char)c;
                i++;
            } else if (c == '"' || c == '\\') {
                *o++ = '\\';
                *o++ = (char)c;
                i++;
            } else if (c < 0x20) {
                *o++ = '\\';
                if (c == '\n') {
                    *o++ = 'n';
                } else if (c == '\t') {
                    *o++ = 't';
                } else if (c == '\r') {
                    *o++ = 'r';
                } else {
                    memcpy(o, "u00", 3);
                    o += 3;
                    *o++ = hex[c >> 4];
                    *o++ = hex[c & 15];
                }
                i++;
            } else {
                size_t len = utf8_seq_len(p + i, n - i);
                if (len == 0) {
                    memcpy(o, "\\ufffd", 6);
                    o += 6;
                    i++;
                } else {
                    memcpy(o, p + i, len);
                    o += len;
                    i += len;
                }
            }
        }
        b->len = (size_t)(o - b->base);
    }
    sl_buf_append_char(b, '"');
}

char *sl_buf_steal(sl_buf_t *b, size_t *len)
{
    char *p = b->base;
    if (len)
        *len = b->len;
    if (p == NULL)
        p = sl_xstrdup("");
    sl_buf_init(b);
    return p;
}
