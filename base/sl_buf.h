/* base/sl_buf.h: a growable byte buffer.
 *
 * Storage is the caller's (init/dispose); the bytes are heap memory owned by
 * the buffer. Allocation failure aborts the process: sluice has no code path
 * that can do anything useful without memory. */
#ifndef SL_BUF_H
#define SL_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sl_buf {
    char *base;    /* NUL-terminated when cap > 0; owned */
    size_t len;    /* bytes used, excluding the terminator */
    size_t cap;    /* bytes allocated */
} sl_buf_t;

#define SL_BUF_INIT {NULL, 0, 0}

void sl_buf_init(sl_buf_t *b);
void sl_buf_dispose(sl_buf_t *b);
void sl_buf_reset(sl_buf_t *b);               /* len = 0, keeps the memory */
void sl_buf_reserve(sl_buf_t *b, size_t extra); /* room for extra more bytes */
/* Room for exactly extra more bytes when it must grow (no doubling): for a
 * size known in advance, such as an answer's Content-Length. */
void sl_buf_reserve_exact(sl_buf_t *b, size_t extra);
void sl_buf_append(sl_buf_t *b, const void *p, size_t n);
void sl_buf_append_str(sl_buf_t *b, const char *s);
void sl_buf_append_char(sl_buf_t *b, char c);
void sl_buf_printf(sl_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sl_buf_vprintf(sl_buf_t *b, const char *fmt, va_list ap);
void sl_buf_append_u64(sl_buf_t *b, uint64_t v);
/* Writes v in decimal to out, NUL-terminated; returns its length. For hot
 * paths (header values, Content-Length): no printf machinery. */
#define SL_U64_STR_MAX 21
size_t sl_u64_str(char out[SL_U64_STR_MAX], uint64_t v);
/* Appends s as a JSON string literal, quotes included; control bytes and
 * invalid UTF-8 are escaped so the output is always valid JSON. */
void sl_buf_append_json_str(sl_buf_t *b, const char *s, size_t n);
/* Hands the bytes to the caller (free() them) and leaves b empty. */
char *sl_buf_steal(sl_buf_t *b, size_t *len);

/* malloc/realloc/strdup that abort on failure. */
void *sl_xmalloc(size_t n);
void *sl_xcalloc(size_t n, size_t sz);
void *sl_xrealloc(void *p, size_t n);
char *sl_xstrdup(const char *s);
char *sl_xstrndup(const char *s, size_t n);

#endif
