/* wire/json_scan.c: strict RFC 8259 validation in one pass, no DOM, no
 * recursion. Nesting is a 128-bit stack of "object or array" bits.
 *
 * Most bytes of a large upstream answer are hex inside strings, so the hot
 * loop is next_special(): a bit scan in the mask of the current 64-byte
 * block (wire/json_scan_simd.c classifies a block once, with AVX2 where the
 * CPU has it) until a byte that needs a closer look. skip_plain(), 16 bytes
 * at a time with SSE2 (8 with plain integer arithmetic elsewhere), is the
 * scalar path, kept as the oracle. */
#include "wire/json_scan.h"
#include "wire/json_scan_int.h"

#include <string.h>

#if defined(__SSE2__) && !defined(WIRE_JSON_SWAR_ONLY)
#include <emmintrin.h>
#define JSON_SCAN_SSE2 1
#endif

_Static_assert(WIRE_JSON_MAX_DEPTH <= 128, "the depth stack holds 128 bits");

const uint8_t wire_json_value_kind[256] = {
    ['{'] = WIRE_JSON_OBJECT, ['['] = WIRE_JSON_ARRAY,    ['"'] = WIRE_JSON_STRING,
    ['-'] = WIRE_JSON_NUMBER, ['0' ... '9'] = WIRE_JSON_NUMBER,
    ['t'] = WIRE_JSON_TRUE,   ['f'] = WIRE_JSON_FALSE,    ['n'] = WIRE_JSON_NULL,
};

const uint8_t wire_json_escape_char[256] = {
    ['"'] = '"',  ['\\'] = '\\', ['/'] = '/',  ['b'] = '\b',
    ['f'] = '\f', ['n'] = '\n',  ['r'] = '\r', ['t'] = '\t',
};

static const uint8_t json_ws[256] = {[' '] = 1, ['\t'] = 1, ['\n'] = 1, ['\r'] = 1};

/* Bytes that may stand for themselves in a string and need no further check. */
static const uint8_t plain[256] = {
    [0x20 ... '"' - 1] = 1, ['"' + 1 ... '\\' - 1] = 1, ['\\' + 1 ... 0x7f] = 1,
};

/* A UTF-8 lead byte: how many continuation bytes follow, and the range of the
 * first one (RFC 3629 table 4, which rules out overlong forms, UTF-16
 * surrogates and code points above U+10FFFF). Others are not lead bytes. */
typedef struct utf8_lead {
    uint8_t ncont, lo, hi;
} utf8_lead_t;

static const utf8_lead_t utf8_leads[256] = {
    [0xc2 ... 0xdf] = {1, 0x80, 0xbf}, [0xe0] = {2, 0xa0, 0xbf},
    [0xe1 ... 0xec] = {2, 0x80, 0xbf}, [0xed] = {2, 0x80, 0x9f},
    [0xee ... 0xef] = {2, 0x80, 0xbf}, [0xf0] = {3, 0x90, 0xbf},
    [0xf1 ... 0xf3] = {3, 0x80, 0xbf}, [0xf4] = {3, 0x80, 0x8f},
};

static const struct {
    const char *word;
    size_t len;
} literals[] = {
    [WIRE_JSON_TRUE] = {"true", 4},
    [WIRE_JSON_FALSE] = {"false", 5},
    [WIRE_JSON_NULL] = {"null", 4},
};

void wire_scan_init(wire_scan_t *s, const char *buf, size_t off, size_t len)
{
    s->base = (const uint8_t *)buf;
    s->p = s->base + off;
    s->end = s->p + len;
    s->depth = 0;
    s->is_object[0] = s->is_object[1] = 0;
    /* an empty block at the end: the first string loads one */
    s->blk = s->end;
    s->mask = ~0ull;
    wire_json_path_fns(&s->classify, &s->run);
}

static inline __attribute__((always_inline)) void skip_ws(wire_scan_t *s)
{
    /* upstream answers are mostly compact: one compare for "no whitespace" */
    if (__builtin_expect(s->p < s->end && *s->p > 0x20, 1))
        return;
    while (s->p < s->end && json_ws[*s->p])
        s->p++;
}

/* Returns the first byte of [p, end) that is not plain, or end. */
static inline const uint8_t *skip_plain(const uint8_t *p, const uint8_t *end)
{
#ifdef JSON_SCAN_SSE2
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20);
    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        /* a signed compare: bytes >= 0x80 are negative, so one test finds
         * both control bytes and non-ASCII */
        __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
                                   _mm_cmplt_epi8(v, space));
        unsigned bits = (unsigned)_mm_movemask_epi8(hit);
        if (bits)
            return p + __builtin_ctz(bits);
        p += 16;
    }
#endif
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    while (end - p >= 8) {
        uint64_t x;
        memcpy(&x, p, 8);
        uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
        /* a byte's high bit is set by a zero byte (q, b), by a byte below 0x20
         * or by a byte above 0x7f; borrows only start at such a byte, so the
         * word is flagged exactly when it holds one */
        uint64_t hit = ((q - ones) & ~q) | ((b - ones) & ~b) | (x - ones * 0x20) | x;
        if (hit & highs)
            break;
        p += 8;
    }
    while (p < end && plain[*p])
        p++;
    return p;
}

/* The first byte of [p, s->end) that is not plain, or s->end. */
static inline __attribute__((always_inline)) const uint8_t *next_special(wire_scan_t *s, const uint8_t *p)
{
    return wire_json_find(p, s->end, &s->blk, &s->mask, s->classify);
}

/* Reads the four hex digits of a \u escape. If the input ends first, [*lo, *hi]
 * is the range of code units the escape could still turn out to be. */
static sl_err_t read_hex4(wire_scan_t *s, unsigned *lo, unsigned *hi)
{
    unsigned v = 0;
    for (unsigned i = 0; i < 4; i++) {
        if (s->p == s->end) {
            unsigned free_bits = 4 * (4 - i);
            *lo = v << free_bits;
            *hi = *lo | ((1u << free_bits) - 1);
            return SL_ERR_TRUNCATED;
        }
        int d = json_hex_digit(*s->p);
        if (d < 0)
            return SL_ERR_PARSE;
        v = v << 4 | (unsigned)d;
        s->p++;
    }
    *lo = *hi = v;
    return SL_OK;
}

/* Is the next byte c? */
static inline sl_err_t peek_byte(const wire_scan_t *s, uint8_t c)
{
    if (s->p == s->end)
        return SL_ERR_TRUNCATED;
    return *s->p == c ? SL_OK : SL_ERR_PARSE;
}

static inline sl_err_t expect_byte(wire_scan_t *s, uint8_t c)
{
    if (s->p == s->end)
        return SL_ERR_TRUNCATED;
    if (*s->p != c)
        return SL_ERR_PARSE;
    s->p++;
    return SL_OK;
}

/* s->p is just past "\u". A high surrogate must be followed by an escaped low
 * one; a low surrogate alone is an error: neither is a character. */
static sl_err_t scan_u_escape(wire_scan_t *s)
{
    unsigned lo, hi;
    sl_err_t err = read_hex4(s, &lo, &hi);
    if (err == SL_ERR_PARSE || (lo >= 0xdc00 && hi <= 0xdfff))
        return SL_ERR_PARSE;
    if (err != SL_OK || lo < 0xd800 || lo > 0xdbff)
        return err;
    if ((err = expect_byte(s, '\\')) != SL_OK || (err = expect_byte(s, 'u')) != SL_OK)
        return err;
    err = read_hex4(s, &lo, &hi);
    if (err == SL_ERR_PARSE || hi < 0xdc00 || lo > 0xdfff)
        return SL_ERR_PARSE;
    return err;
}

/* s->p is at a backslash. */
static sl_err_t scan_escape(wire_scan_t *s)
{
    s->p++;
    if (s->p == s->end)
        return SL_ERR_TRUNCATED;
    uint8_t c = *s->p++;
    if (wire_json_escape_char[c])
        return SL_OK;
    return c == 'u' ? scan_u_escape(s) : SL_ERR_PARSE;
}

/* s->p is at a byte >= 0x80. */
static sl_err_t scan_utf8(wire_scan_t *s)
{
    utf8_lead_t lead = utf8_leads[*s->p++];
    if (lead.ncont == 0)
        return SL_ERR_PARSE;
    for (unsigned i = 0; i < lead.ncont; i++, s->p++) {
        uint8_t lo = i ? 0x80 : lead.lo, hi = i ? 0xbf : lead.hi;
        if (s->p == s->end)
            return SL_ERR_TRUNCATED;
        if (*s->p < lo || *s->p > hi)
            return SL_ERR_PARSE;
    }
    return SL_OK;
}

/* Inlined into the value loop: most of a large answer is strings. */
static inline __attribute__((always_inline)) sl_err_t scan_string(wire_scan_t *s)
{
    s->p++;
    for (;;) {
        s->p = s->classify ? next_special(s, s->p) : skip_plain(s->p, s->end);
        if (s->p == s->end)
            return SL_ERR_TRUNCATED;
        uint8_t c = *s->p;
        if (c == '"') {
            s->p++;
            return SL_OK;
        }
        sl_err_t err = c == '\\' ? scan_escape(s) : c < 0x20 ? SL_ERR_PARSE : scan_utf8(s);
        if (err != SL_OK)
            return err;
    }
}

sl_err_t wire_scan_string(wire_scan_t *s)
{
    return scan_string(s);
}

static inline int is_digit(uint8_t c)
{
    return (unsigned)(c - '0') < 10u;
}

/* One or more digits. */
static sl_err_t scan_digits(wire_scan_t *s)
{
    if (s->p == s->end)
        return SL_ERR_TRUNCATED;
    if (!is_digit(*s->p))
        return SL_ERR_PARSE;
    do
        s->p++;
    while (s->p < s->end && is_digit(*s->p));
    return SL_OK;
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? ; the byte after it is the
 * caller's to judge, so "01" is a 0 followed by garbage. */
static sl_err_t scan_number(wire_scan_t *s)
{
    sl_err_t err;
    if (*s->p == '-')
        s->p++;
    if (s->p < s->end && *s->p == '0')
        s->p++;
    else if ((err = scan_digits(s)) != SL_OK)
        return err;
    if (s->p < s->end && *s->p == '.') {
        s->p++;
        if ((err = scan_digits(s)) != SL_OK)
            return err;
    }
    if (s->p < s->end && (*s->p | 0x20) == 'e') {
        s->p++;
        if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
            s->p++;
        return scan_digits(s);
    }
    return SL_OK;
}

static sl_err_t scan_literal(wire_scan_t *s, wire_json_kind_t kind)
{
    const char *word = literals[kind].word;
    for (size_t i = 0; i < literals[kind].len; i++) {
        sl_err_t err = expect_byte(s, (uint8_t)word[i]);
        if (err != SL_OK)
            return err;
    }
    return SL_OK;
}

/* A member's key and its ':'. */
static inline __attribute__((always_inline)) sl_err_t scan_key(wire_scan_t *s)
{
    skip_ws(s);
    sl_err_t err = peek_byte(s, '"');
    if (err != SL_OK || (err = scan_string(s)) != SL_OK)
        return err;
    if (__builtin_expect(s->p < s->end && *s->p == ':', 1)) {
        s->p++;
        return SL_OK;
    }
    skip_ws(s);
    return expect_byte(s, ':');
}

/* Opens a container: consumes its bracket, and for a non-empty object its
 * first key. *inside is 1 if a value is now due inside it, 0 if it was empty
 * and is already closed again. */
static sl_err_t open_container(wire_scan_t *s, int is_object, int *inside)
{
    uint8_t close = is_object ? '}' : ']';
    sl_err_t err = wire_scan_push(s, is_object);
    if (err != SL_OK)
        return err;
    s->p++;
    skip_ws(s);
    if (s->p == s->end)
        return SL_ERR_TRUNCATED;
    if (*s->p == close) {
        s->p++;
        s->depth--;
        *inside = 0;
        return SL_OK;
    }
    *inside = 1;
    return is_object ? scan_key(s) : SL_OK;
}

/* Consumes a scalar, or the start of a container (*inside as above). */
static sl_err_t scan_value_start(wire_scan_t *s, int *inside)
{
    skip_ws(s);
    if (s->p == s->end)
        return SL_ERR_TRUNCATED;
    wire_json_kind_t kind = wire_json_value_kind[*s->p];
    *inside = 0;
    switch (kind) {
    case WIRE_JSON_OBJECT:
        return open_container(s, 1, inside);
    case WIRE_JSON_ARRAY:
        return open_container(s, 0, inside);
    case WIRE_JSON_STRING:
        return scan_string(s);
    case WIRE_JSON_NUMBER:
        return scan_number(s);
    case WIRE_JSON_TRUE:
    case WIRE_JSON_FALSE:
    case WIRE_JSON_NULL:
        return scan_literal(s, kind);
    case WIRE_JSON_NONE:
        return SL_ERR_PARSE;
    }
    return SL_ERR_PARSE;
}

/* After a complete value: consumes separators and closing brackets until
 * another value is due (*more = 1) or the depth is back to base (*more = 0). */
static sl_err_t scan_after_value(wire_scan_t *s, unsigned base, int *more)
{
    while (s->depth > base) {
        /* what follows, while it is compact and simple, in one go */
        if (s->run) {
            if (s->run(s, base)) {
                *more = 1;
                return SL_OK;
            }
            if (s->depth == base) /* it closed the last container */
                break;
        }
        skip_ws(s);
        if (s->p == s->end)
            return SL_ERR_TRUNCATED;
        int is_object = wire_scan_top_is_object(s);
        uint8_t c = *s->p++;
        if (c == ',') {
            sl_err_t err = is_object ? scan_key(s) : SL_OK;
            if (err != SL_OK)
                return err;
            /* a string right after the separator (the common case: hex in
             * "key":"0x…" and in arrays of hashes) is a complete value:
             * scanned here, without a round through the value loop */
            if (s->p < s->end && *s->p == '"') {
                if ((err = scan_string(s)) != SL_OK)
                    return err;
                continue;
            }
            *more = 1;
            return SL_OK;
        }
        if (c != (is_object ? '}' : ']'))
            return SL_ERR_PARSE;
        s->depth--;
    }
    *more = 0;
    return SL_OK;
}

sl_err_t wire_scan_value(wire_scan_t *s, wire_span_t *value)
{
    const unsigned base = s->depth;
    skip_ws(s);
    const uint8_t *start = s->p;
    sl_err_t err;
    int inside, more = 0;
    do {
        err = scan_value_start(s, &inside);
        if (err == SL_OK && !inside)
            err = scan_after_value(s, base, &more);
    } while (err == SL_OK && (inside || more));
    value->off = (uint32_t)(start - s->base);
    value->len = (uint32_t)(s->p - start);
    return err;
}

sl_err_t wire_scan_open(wire_scan_t *s, uint8_t open)
{
    skip_ws(s);
    sl_err_t err = expect_byte(s, open);
    if (err != SL_OK)
        return err;
    return wire_scan_push(s, open == '{');
}

sl_err_t wire_scan_next(wire_scan_t *s, int *first, int *more)
{
    skip_ws(s);
    if (s->p == s->end)
        return SL_ERR_TRUNCATED;
    uint8_t c = *s->p;
    if (c == (wire_scan_top_is_object(s) ? '}' : ']')) {
        s->p++;
        s->depth--;
        *more = 0;
        return SL_OK;
    }
    *more = 1;
    if (*first) {
        *first = 0;
        return SL_OK;
    }
    if (c != ',')
        return SL_ERR_PARSE;
    s->p++;
    return SL_OK;
}

sl_err_t wire_scan_key(wire_scan_t *s, wire_span_t *key)
{
    skip_ws(s);
    const uint8_t *start = s->p;
    sl_err_t err = peek_byte(s, '"');
    if (err != SL_OK || (err = scan_string(s)) != SL_OK)
        return err;
    key->off = (uint32_t)(start - s->base);
    key->len = (uint32_t)(s->p - start);
    return SL_OK;
}

sl_err_t wire_scan_colon(wire_scan_t *s)
{
    skip_ws(s);
    return expect_byte(s, ':');
}

sl_err_t wire_scan_finish(wire_scan_t *s)
{
    skip_ws(s);
    return s->p == s->end ? SL_OK : SL_ERR_PARSE;
}

sl_err_t wire_json_each_member(const char *buf, wire_span_t obj, wire_member_fn fn, void *arg)
{
    wire_scan_t s;
    wire_scan_init(&s, buf, obj.off, obj.len);
    sl_err_t err = wire_scan_open(&s, '{');
    int first = 1, more = 1;
    while (err == SL_OK && (err = wire_scan_next(&s, &first, &more)) == SL_OK && more) {
        wire_span_t k, v;
        if ((err = wire_scan_key(&s, &k)) != SL_OK || (err = wire_scan_colon(&s)) != SL_OK ||
            (err = wire_scan_value(&s, &v)) != SL_OK)
            break;
        err = fn(buf, k, v, arg);
    }
    if (err == SL_ERR_TRUNCATED)
        err = SL_ERR_PARSE; /* the span ends inside the object: as broken as any other way */
    return err;
}

sl_err_t wire_json_each_item(const char *buf, wire_span_t arr, wire_item_fn fn, void *arg)
{
    wire_scan_t s;
    wire_scan_init(&s, buf, arr.off, arr.len);
    sl_err_t err = wire_scan_open(&s, '[');
    int first = 1, more = 1;
    while (err == SL_OK && (err = wire_scan_next(&s, &first, &more)) == SL_OK && more) {
        wire_span_t v;
        if ((err = wire_scan_value(&s, &v)) != SL_OK)
            break;
        err = fn(buf, v, arg);
    }
    if (err == SL_ERR_TRUNCATED)
        err = SL_ERR_PARSE;
    return err;
}

int wire_json_key_is(const char *buf, wire_span_t key, const char *name)
{
    size_t n = strlen(name);
    return key.len == n + 2 && memcmp(buf + key.off + 1, name, n) == 0;
}

int wire_json_key_escaped(const char *buf, wire_span_t key)
{
    return memchr(buf + key.off, '\\', key.len) != NULL;
}
