/* wire/json_scan.h: the strict, DOM-free JSON scanner under
 * wire/envelope.h, for code that walks members itself (policy/verdict.c
 * reads an error object's members with it).
 *
 * A scanner walks buf[off..off+len) left to right. Every function consumes
 * what it recognises and returns SL_ERR_TRUNCATED only when it reached the end
 * of the input with everything read so far still a prefix of some valid JSON;
 * anything definitely invalid is SL_ERR_PARSE at the first byte that proves it. */
#ifndef WIRE_JSON_SCAN_H
#define WIRE_JSON_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "base/sl_err.h"
#include "wire/envelope.h"

typedef struct wire_scan {
    const uint8_t *base;   /* the caller's buf: spans are relative to it */
    const uint8_t *p;      /* next unread byte */
    const uint8_t *end;    /* one past the last byte that may be read */
    unsigned depth;        /* containers open */
    uint64_t is_object[2]; /* bit d: the container at depth d is an object, not an array */
    /* the string loop's 64-byte block (wire/json_scan_simd.c): bit i of mask
     * is set if blk[i] may not stand for itself in a string (bits past end
     * are set too); classify and run are NULL on the scalar path */
    const uint8_t *blk;
    uint64_t mask;
    uint64_t (*classify)(const uint8_t *p);
    int (*run)(struct wire_scan *s, unsigned base);
} wire_scan_t;

/* How string bodies are skipped. Every path gives the same verdicts and
 * spans; SCALAR (a byte loop, 16 bytes at a time with SSE2) is the oracle
 * the others are fuzzed against (tests/fuzz/fuzz_scan_paths.c). DEFAULT:
 * AVX2 if the CPU has it, else SSE2 on x86-64, else SWAR (64-bit integer
 * arithmetic). SLUICE_JSON_SCAN=scalar (or swar, sse2, avx2) in the
 * environment forces that path, if this CPU can take it. */
typedef enum wire_json_path {
    WIRE_JSON_PATH_DEFAULT,
    WIRE_JSON_PATH_SCALAR,
    WIRE_JSON_PATH_SWAR,
    WIRE_JSON_PATH_SSE2,
    WIRE_JSON_PATH_AVX2,
} wire_json_path_t;

/* The path scans started from now on take (never DEFAULT). */
wire_json_path_t wire_json_scan_path(void);

/* For tests and fuzzers, before any other thread scans: makes scans started
 * from now on take path (DEFAULT: choose again). -1 if this CPU or build
 * cannot run it (nothing changed). */
int wire_json_scan_path_set(wire_json_path_t path);

/* Kind of the value starting with a byte (WIRE_JSON_NONE if none can). */
extern const uint8_t wire_json_value_kind[256];

/* The byte a simple escape stands for ('n' -> '\n'); 0 for 'u' and invalid ones. */
extern const uint8_t wire_json_escape_char[256];

static inline int json_hex_digit(uint8_t c)
{
    if ((unsigned)(c - '0') < 10u)
        return c - '0';
    c |= 0x20;
    if ((unsigned)(c - 'a') < 6u)
        return c - 'a' + 10;
    return -1;
}

void wire_scan_init(wire_scan_t *s, const char *buf, size_t off, size_t len);

/* Skips whitespace and consumes the opening bracket (open is '{' or '[') of
 * the container the scan must start with. */
SL_MUST_CHECK sl_err_t wire_scan_open(wire_scan_t *s, uint8_t open);

/* Steps through the innermost open container: consumes the ',' before the next
 * member (*more = 1) or the closing bracket (*more = 0). *first must be 1
 * before the first call on a container; the scanner clears it. */
SL_MUST_CHECK sl_err_t wire_scan_next(wire_scan_t *s, int *first, int *more);

/* Consumes a member's key; *key is the raw key token. */
SL_MUST_CHECK sl_err_t wire_scan_key(wire_scan_t *s, wire_span_t *key);

/* Consumes the ':' after a key. */
SL_MUST_CHECK sl_err_t wire_scan_colon(wire_scan_t *s);

/* Consumes one value, whatever is nested in it, and the whitespace before it;
 * *value is its span. */
SL_MUST_CHECK sl_err_t wire_scan_value(wire_scan_t *s, wire_span_t *value);

/* Consumes a string token starting at s->p (which must be '"'). */
SL_MUST_CHECK sl_err_t wire_scan_string(wire_scan_t *s);

/* Requires that only whitespace is left. */
SL_MUST_CHECK sl_err_t wire_scan_finish(wire_scan_t *s);

/* Calls fn for each member of the object at span obj of buf, in order, with
 * its raw key token (quotes included) and its value's span; a non-SL_OK
 * answer from fn stops the walk and is returned. SL_ERR_PARSE if obj is not
 * an object or does not scan (a span that ends inside it included). Keys
 * compare on raw bytes (wire_json_key_is): a caller that must not misread a
 * key written with escapes checks wire_json_key_escaped and refuses it. */
typedef sl_err_t (*wire_member_fn)(const char *buf, wire_span_t key, wire_span_t value, void *arg);
SL_MUST_CHECK sl_err_t wire_json_each_member(const char *buf, wire_span_t obj, wire_member_fn fn, void *arg);

/* Calls fn for each element of the array at span arr of buf, in order, with
 * its value's span; as wire_json_each_member otherwise (SL_ERR_PARSE if arr
 * is not an array or does not scan; a non-SL_OK answer from fn stops the
 * walk and is returned). */
typedef sl_err_t (*wire_item_fn)(const char *buf, wire_span_t value, void *arg);
SL_MUST_CHECK sl_err_t wire_json_each_item(const char *buf, wire_span_t arr, wire_item_fn fn, void *arg);

/* 1 if the raw key token at span key is "name" (no escapes). */
int wire_json_key_is(const char *buf, wire_span_t key, const char *name);

/* 1 if the key token holds a backslash: what it decodes to is not its bytes. */
int wire_json_key_escaped(const char *buf, wire_span_t key);

#endif
