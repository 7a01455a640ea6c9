/* fp_buf.c: growable byte buffers and the JSON value writers built on them. */
#include "fp.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *fp_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        abort();
    return p;
}

void *fp_xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        abort();
    return p;
}

char *fp_xstrndup(const char *s, size_t n)
{
    char *d = fp_xmalloc(n + 1);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

void fp_buf_dispose(fp_buf_t *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void fp_buf_reserve(fp_buf_t *b, size_t extra)
{
    if (b->cap - b->len >= extra)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < extra)
        cap *= 2;
    b->data = fp_xrealloc(b->data, cap);
    b->cap = cap;
}

void fp_buf_shrink(fp_buf_t *b, size_t keep)
{
    if (b->len == 0 && b->cap > keep) {
        free(b->data);
        b->data = NULL;
        b->cap = 0;
    }
}

void fp_buf_put(fp_buf_t *b, const void *p, size_t n)
{
    fp_buf_reserve(b, n);
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

void fp_buf_puts(fp_buf_t *b, const char *s)
{
    fp_buf_put(b, s, strlen(s));
}

void fp_buf_printf(fp_buf_t *b, const char *fmt, ...)
{
    va_list ap;
    fp_buf_reserve(b, 128);
    va_start(ap, fmt);
    int n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0)
        abort();
    if ((size_t)n >= b->cap - b->len) {
        fp_buf_reserve(b, (size_t)n + 1);
        va_start(ap, fmt);
        vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
    }
    b->len += (size_t)n;
}

/* Hand-rolled digit writers: they run several times per healthy request and
 * printf is a measurable share of the benchmark budget. */
void fp_buf_put_u64(fp_buf_t *b, uint64_t v)
{
    char tmp[24];
    size_t i = sizeof tmp;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    fp_buf_put(b, tmp + i, sizeof tmp - i);
}

void fp_buf_put_quantity(fp_buf_t *b, uint64_t v)
{
    static const char hex[] = "0123456789abcdef";
    char tmp[24];
    size_t i = sizeof tmp;
    tmp[--i] = '"';
    do {
        tmp[--i] = hex[v & 15];
        v >>= 4;
    } while (v);
    tmp[--i] = 'x';
    tmp[--i] = '0';
    tmp[--i] = '"';
    fp_buf_put(b, tmp + i, sizeof tmp - i);
}

void fp_buf_put_hex(fp_buf_t *b, const uint8_t *p, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    fp_buf_reserve(b, 2 * n + 4);
    char *d = b->data + b->len;
    *d++ = '"';
    *d++ = '0';
    *d++ = 'x';
    for (size_t i = 0; i < n; i++) {
        *d++ = hex[p[i] >> 4];
        *d++ = hex[p[i] & 15];
    }
    *d++ = '"';
    b->len = (size_t)(d - b->data);
}

void fp_buf_put_json_str(fp_buf_t *b, const char *s, size_t n)
{
    fp_buf_reserve(b, n + 2);
    fp_buf_put(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\')
            fp_buf_printf(b, "\\%c", ch);
        else if (ch < 0x20)
            fp_buf_printf(b, "\\u%04x", ch);
        else
            fp_buf_put(b, &s[i], 1);
    }
    fp_buf_put(b, "\"", 1);
}
