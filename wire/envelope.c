/* wire/envelope.c: the JSON-RPC envelope on top of the scanner in
 * wire/json_scan.c, and the few token decoders a gateway needs. */
#include "wire/envelope.h"

#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "wire/json_scan.h"

/* Top-level keys of an envelope, as raw tokens. A key written with escapes
 * ("\u006dethod") or in another case ("Method") is the same key to the nodes
 * behind the gateway: Go's encoding/json (geth, erigon) unescapes names and
 * matches them case-insensitively, keeping the last duplicate. So such a key
 * is resolved too: unescaped and exact, it counts as that key (a duplicate is
 * refused); equal only ignoring case, the message is refused as ambiguous. */
typedef struct env_key {
    const char *token;
    size_t len;
    size_t slot; /* offsetof the wire_span_t in wire_envelope_t */
} env_key_t;

#define ENV_KEY(name) {"\"" #name "\"", sizeof(#name) + 1, offsetof(wire_envelope_t, name)}
static const env_key_t env_keys[] = {
    ENV_KEY(jsonrpc), ENV_KEY(id), ENV_KEY(method), ENV_KEY(params), ENV_KEY(result), ENV_KEY(error),
};
#undef ENV_KEY

static int key_is(const char *buf, wire_span_t key, const char *token, size_t len)
{
    return key.len == len && memcmp(buf + key.off, token, len) == 0;
}

#define ENV_KEY_AMBIGUOUS ((wire_span_t *)(void *)1)

/* Folds a decoded key the way Go's encoding/json compares names: ASCII case,
 * plus the non-ASCII letters it folds onto ASCII ones (Kelvin sign -> k,
 * long s -> s), and, stricter than Go, dotless and dotted I -> i (a key a
 * Turkish-locale lowercasing could make is refused rather than guessed).
 * Writes at most cap-1 bytes; a byte outside those stays as is (and so
 * matches nothing). */
static void go_fold(const char *in, char *out, size_t cap)
{
    static const struct {
        const char *utf8;
        char ascii;
    } folds[] = {{"\xe2\x84\xaa", 'k'}, {"\xc5\xbf", 's'}, {"\xc4\xb1", 'i'}, {"\xc4\xb0", 'i'}};
    size_t o = 0;
    while (*in != '\0' && o + 1 < cap) {
        size_t k = 0, n = sizeof folds / sizeof folds[0];
        while (k < n && strncmp(in, folds[k].utf8, strlen(folds[k].utf8)) != 0)
            k++;
        if (k < n) {
            out[o++] = folds[k].ascii;
            in += strlen(folds[k].utf8);
        } else {
            char ch = *in++;
            out[o++] = (char)(ch >= 'A' && ch <= 'Z' ? ch + 32 : ch);
        }
    }
    out[o] = '\0';
}

static wire_span_t *envelope_slot(wire_envelope_t *env, const char *buf, wire_span_t key)
{
    const size_t nkeys = sizeof env_keys / sizeof env_keys[0];
    for (size_t i = 0; i < nkeys; i++)
        if (key_is(buf, key, env_keys[i].token, env_keys[i].len))
            return (wire_span_t *)(void *)((char *)env + env_keys[i].slot);
    /* the longest envelope key, "jsonrpc", is 7 bytes: longer keys, even
     * escaped, decode to at most 7 bytes only if made of escapes */
    char name[16];
    if (wire_json_string(buf, key, name, sizeof name) != SL_OK)
        return NULL;
    if (wire_json_has_nul(buf, key)) /* "id\u0000": never a name to pass on */
        return ENV_KEY_AMBIGUOUS;
    size_t n = strlen(name);
    char folded[16];
    go_fold(name, folded, sizeof folded);
    size_t fn = strlen(folded);
    for (size_t i = 0; i < nkeys; i++) {
        const char *want = env_keys[i].token + 1;
        size_t wlen = env_keys[i].len - 2;
        if (n == wlen && memcmp(name, want, wlen) == 0)
            return (wire_span_t *)(void *)((char *)env + env_keys[i].slot);
        if (fn == wlen && memcmp(folded, want, wlen) == 0)
            return ENV_KEY_AMBIGUOUS;
    }
    return NULL;
}

sl_err_t wire_envelope_scan(const char *buf, size_t len, wire_envelope_t *out)
{
    memset(out, 0, sizeof *out);
    if (len > UINT32_MAX)
        return SL_ERR_TOO_LARGE;
    wire_scan_t s;
    wire_scan_init(&s, buf, 0, len);
    sl_err_t err = wire_scan_open(&s, '{');
    int first = 1, more = 0;
    while (err == SL_OK && (err = wire_scan_next(&s, &first, &more)) == SL_OK && more) {
        wire_span_t key, value;
        if ((err = wire_scan_key(&s, &key)) != SL_OK)
            break;
        wire_span_t *slot = envelope_slot(out, buf, key);
        /* refuse a second "result" (or a "Result") as soon as its key is
         * read: no completion of the input is an envelope any more */
        if (slot == ENV_KEY_AMBIGUOUS || (slot && slot->len)) {
            err = SL_ERR_PARSE;
            break;
        }
        if ((err = wire_scan_colon(&s)) != SL_OK || (err = wire_scan_value(&s, &value)) != SL_OK)
            break;
        if (slot)
            *slot = value;
        out->nmembers++;
    }
    return err == SL_OK ? wire_scan_finish(&s) : err;
}

sl_err_t wire_envelope_scan_array(const char *buf, size_t len, wire_span_t *items, size_t max_items,
                                    size_t *nitems)
{
    *nitems = 0;
    if (len > UINT32_MAX)
        return SL_ERR_TOO_LARGE;
    wire_scan_t s;
    wire_scan_init(&s, buf, 0, len);
    sl_err_t err = wire_scan_open(&s, '[');
    int first = 1, more = 0;
    while (err == SL_OK && (err = wire_scan_next(&s, &first, &more)) == SL_OK && more) {
        if (*nitems == max_items) {
            *nitems = max_items + 1;
            return SL_ERR_TOO_LARGE;
        }
        if ((err = wire_scan_value(&s, &items[*nitems])) != SL_OK)
            break;
        (*nitems)++;
    }
    return err == SL_OK ? wire_scan_finish(&s) : err;
}

sl_err_t wire_json_validate(const char *buf, size_t len, wire_json_kind_t *kind, wire_span_t *value)
{
    *kind = WIRE_JSON_NONE;
    *value = (wire_span_t){0, 0};
    if (len > UINT32_MAX)
        return SL_ERR_TOO_LARGE;
    wire_scan_t s;
    wire_scan_init(&s, buf, 0, len);
    wire_span_t v;
    sl_err_t err = wire_scan_value(&s, &v);
    if (err == SL_OK)
        err = wire_scan_finish(&s);
    if (err == SL_OK) {
        *value = v;
        *kind = wire_json_kind(buf, v);
    }
    return err;
}

wire_json_kind_t wire_json_kind(const char *buf, wire_span_t s)
{
    if (s.len == 0)
        return WIRE_JSON_NONE;
    return (wire_json_kind_t)wire_json_value_kind[(uint8_t)buf[s.off]];
}

/* Members of an error object; the first of duplicates wins. */
static void error_member(const char *buf, wire_span_t key, wire_span_t value, wire_rpc_error_t *out,
                         unsigned *seen)
{
    enum { SEEN_CODE = 1, SEEN_MESSAGE = 2, SEEN_DATA = 4 };
    if (key_is(buf, key, "\"code\"", 6) && !(*seen & SEEN_CODE)) {
        *seen |= SEEN_CODE;
        out->has_code = wire_json_int64(buf, value, &out->code) == SL_OK;
    } else if (key_is(buf, key, "\"message\"", 9) && !(*seen & SEEN_MESSAGE)) {
        *seen |= SEEN_MESSAGE;
        /* a cut message is still the message: TOO_LARGE is not an error here */
        if (wire_json_string(buf, value, out->message, sizeof out->message) == SL_ERR_PARSE)
            out->message[0] = '\0';
    } else if (key_is(buf, key, "\"data\"", 6) && !(*seen & SEEN_DATA)) {
        *seen |= SEEN_DATA;
        out->data = value;
    }
}

sl_err_t wire_envelope_error(const char *buf, wire_span_t err_span, wire_rpc_error_t *out)
{
    memset(out, 0, sizeof *out);
    if (wire_json_kind(buf, err_span) != WIRE_JSON_OBJECT)
        return SL_ERR_PARSE;
    wire_scan_t s;
    wire_scan_init(&s, buf, err_span.off, err_span.len);
    sl_err_t err = wire_scan_open(&s, '{');
    int first = 1, more = 0;
    unsigned seen = 0;
    while (err == SL_OK && (err = wire_scan_next(&s, &first, &more)) == SL_OK && more) {
        wire_span_t key, value;
        if ((err = wire_scan_key(&s, &key)) != SL_OK || (err = wire_scan_colon(&s)) != SL_OK ||
            (err = wire_scan_value(&s, &value)) != SL_OK)
            break;
        error_member(buf, key, value, out, &seen);
    }
    return err == SL_OK ? wire_scan_finish(&s) : err;
}

wire_span_t wire_json_member(const char *buf, wire_span_t obj, const char *key)
{
    static const wire_span_t none = {0, 0};
    if (buf == NULL || wire_json_kind(buf, obj) != WIRE_JSON_OBJECT)
        return none;
    wire_scan_t s;
    wire_scan_init(&s, buf, obj.off, obj.len);
    if (wire_scan_open(&s, '{') != SL_OK)
        return none;
    size_t klen = strlen(key);
    int first = 1, more = 0;
    while (wire_scan_next(&s, &first, &more) == SL_OK && more) {
        wire_span_t k, v;
        if (wire_scan_key(&s, &k) != SL_OK || wire_scan_colon(&s) != SL_OK || wire_scan_value(&s, &v) != SL_OK)
            return none;
        if (k.len == klen + 2 && memcmp(buf + k.off + 1, key, klen) == 0)
            return v;
    }
    return none;
}

/* ---- tokens ---------------------------------------------------------- */

static unsigned hex4(const uint8_t *p)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++)
        v = v << 4 | (unsigned)json_hex_digit(p[i]);
    return v;
}

/* *pp is just past "\u" of a validated escape; a surrogate pair is one code point. */
static uint32_t decode_u(const uint8_t **pp)
{
    const uint8_t *p = *pp;
    uint32_t cp = hex4(p);
    p += 4;
    if (cp >= 0xd800 && cp <= 0xdbff) {
        cp = 0x10000 + ((cp - 0xd800) << 10) + (hex4(p + 2) - 0xdc00);
        p += 6;
    }
    *pp = p;
    return cp;
}

static size_t utf8_encode(uint32_t cp, uint8_t out[4])
{
    if (cp < 0x80) {
        out[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (uint8_t)(0xc0 | cp >> 6);
        out[1] = (uint8_t)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xe0 | cp >> 12);
        out[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
        out[2] = (uint8_t)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (uint8_t)(0xf0 | cp >> 18);
    out[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3f));
    out[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
    out[3] = (uint8_t)(0x80 | (cp & 0x3f));
    return 4;
}

/* Unescapes the validated contents p..end of a string token into out, which
 * has room for room bytes and a NUL. */
static sl_err_t unescape(const uint8_t *p, const uint8_t *end, char *out, size_t room)
{
    size_t n = 0;
    for (;;) {
        const uint8_t *esc = memchr(p, '\\', (size_t)(end - p));
        size_t run = (size_t)((esc ? esc : end) - p);
        if (run > room - n) {
            size_t m = room - n;
            while (m > 0 && (p[m] & 0xc0) == 0x80) /* p[m] would start the next piece */
                m--;
            memcpy(out + n, p, m);
            out[n + m] = '\0';
            return SL_ERR_TOO_LARGE;
        }
        memcpy(out + n, p, run);
        n += run;
        if (!esc)
            break;
        p = esc + 1;
        uint8_t ch[4];
        size_t k = 1;
        if (*p == 'u') {
            p++;
            k = utf8_encode(decode_u(&p), ch);
        } else {
            ch[0] = wire_json_escape_char[*p++];
        }
        if (k > room - n) {
            out[n] = '\0';
            return SL_ERR_TOO_LARGE;
        }
        memcpy(out + n, ch, k);
        n += k;
    }
    out[n] = '\0';
    return SL_OK;
}

int wire_json_has_nul(const char *buf, wire_span_t s)
{
    const char *p = buf + s.off, *end = p + s.len;
    while (p < end) {
        if (*p != '\\') {
            p++;
            continue;
        }
        if (end - p >= 6 && p[1] == 'u' && memcmp(p + 2, "0000", 4) == 0)
            return 1;
        p += p + 1 < end && p[1] == 'u' ? 6 : 2; /* skip the whole escape */
    }
    return 0;
}

sl_err_t wire_json_string(const char *buf, wire_span_t s, char *out, size_t cap)
{
    if (cap == 0)
        return SL_ERR_INVALID;
    out[0] = '\0';
    if (wire_json_kind(buf, s) != WIRE_JSON_STRING)
        return SL_ERR_PARSE;
    /* a token from a scan is valid already; checking again keeps a wrong
     * span from turning into a read past its end */
    wire_scan_t sc;
    wire_scan_init(&sc, buf, s.off, s.len);
    if (wire_scan_string(&sc) != SL_OK || sc.p != sc.end)
        return SL_ERR_PARSE;
    const uint8_t *p = (const uint8_t *)buf + s.off;
    return unescape(p + 1, p + s.len - 1, out, cap - 1);
}

/* 1 if s is exactly one valid number token. */
static int is_number_token(const char *buf, wire_span_t s)
{
    wire_json_kind_t kind;
    wire_span_t v;
    if (wire_json_kind(buf, s) != WIRE_JSON_NUMBER)
        return 0;
    return wire_json_validate(buf + s.off, s.len, &kind, &v) == SL_OK && v.len == s.len;
}

sl_err_t wire_json_int64(const char *buf, wire_span_t s, int64_t *out)
{
    if (!is_number_token(buf, s))
        return SL_ERR_PARSE;
    const uint8_t *p = (const uint8_t *)buf + s.off, *end = p + s.len;
    int neg = *p == '-';
    p += neg;
    for (const uint8_t *q = p; q < end; q++)
        if ((unsigned)(*q - '0') > 9u)
            return SL_ERR_PARSE; /* a fraction or an exponent */
    const uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t v = 0;
    for (; p < end; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (limit - d) / 10)
            return SL_ERR_RANGE;
        v = v * 10 + d;
    }
    *out = neg ? (v ? -(int64_t)(v - 1) - 1 : 0) : (int64_t)v;
    return SL_OK;
}

/* A valid number token read as ±0.D × 10^exp, D being the mantissa's digits
 * from its first to its last nonzero one (a '.' may lie between). Comparing
 * these is exact, needs no locale and no copy, unlike strtod. */
typedef struct decimal {
    const uint8_t *first, *last; /* NULL for zero */
    int neg;
    int64_t exp;
} decimal_t;

static const uint8_t *first_nonzero(const uint8_t *p, const uint8_t *end)
{
    for (; p < end; p++)
        if (*p != '0')
            return p;
    return NULL;
}

static const uint8_t *last_nonzero(const uint8_t *p, const uint8_t *end)
{
    while (end > p)
        if (*--end != '0')
            return end;
    return NULL;
}

/* Returns 0 for an exponent of more than 17 digits: such ids are compared by
 * their bytes only. */
static int decimal_read(const uint8_t *p, const uint8_t *end, decimal_t *d)
{
    d->neg = *p == '-';
    p += d->neg;
    const uint8_t *int_start = p;
    while (p < end && (unsigned)(*p - '0') < 10u)
        p++;
    const uint8_t *int_end = p, *frac_start = p, *frac_end = p;
    if (p < end && *p == '.') {
        frac_start = ++p;
        while (p < end && (unsigned)(*p - '0') < 10u)
            p++;
        frac_end = p;
    }
    int64_t e = 0;
    if (p < end) { /* [eE][+-]?[0-9]+ */
        int eneg = *++p == '-';
        p += *p == '-' || *p == '+';
        while (p < end && *p == '0')
            p++;
        if (end - p > 17)
            return 0;
        for (; p < end; p++)
            e = e * 10 + (*p - '0');
        e = eneg ? -e : e;
    }
    if ((d->first = first_nonzero(int_start, int_end)) != NULL)
        d->exp = (int_end - d->first) + e;
    else if ((d->first = first_nonzero(frac_start, frac_end)) != NULL)
        d->exp = (frac_start - d->first) + e; /* 0.05: first at -1 */
    if ((d->last = last_nonzero(frac_start, frac_end)) == NULL)
        d->last = last_nonzero(int_start, int_end);
    return 1;
}

static int digits_equal(const decimal_t *a, const decimal_t *b)
{
    const uint8_t *p = a->first, *q = b->first;
    for (;; p++, q++) {
        p += *p == '.';
        q += *q == '.';
        if (*p != *q)
            return 0;
        if (p == a->last || q == b->last)
            return p == a->last && q == b->last;
    }
}

/* An absent id (len 0) equals nothing: a notification answers no request. */
int wire_json_id_equal(const char *a, wire_span_t sa, const char *b, wire_span_t sb)
{
    if (sa.len == 0 || sb.len == 0)
        return 0;
    if (sa.len == sb.len && memcmp(a + sa.off, b + sb.off, sa.len) == 0)
        return 1;
    if (!is_number_token(a, sa) || !is_number_token(b, sb))
        return 0;
    const uint8_t *pa = (const uint8_t *)a + sa.off, *pb = (const uint8_t *)b + sb.off;
    decimal_t da, db;
    if (!decimal_read(pa, pa + sa.len, &da) || !decimal_read(pb, pb + sb.len, &db))
        return 0;
    if (!da.first || !db.first)
        return !da.first && !db.first; /* -0 == 0 */
    return da.neg == db.neg && da.exp == db.exp && digits_equal(&da, &db);
}

#define ID_MAX_SAFE_INT 9007199254740991ull /* 2^53 - 1: exact in a double */

int wire_json_id_portable(const char *buf, wire_span_t s)
{
    const unsigned char *p = (const unsigned char *)buf + s.off;
    switch (wire_json_kind(buf, s)) {
    case WIRE_JSON_NULL:
        return 1;
    case WIRE_JSON_NUMBER: {
        if (s.len > 16 || (p[0] == '0' && s.len > 1))
            return 0;
        uint64_t v = 0;
        for (uint32_t i = 0; i < s.len; i++) {
            if (p[i] < '0' || p[i] > '9')
                return 0;
            v = v * 10 + (uint64_t)(p[i] - '0');
        }
        return v <= ID_MAX_SAFE_INT;
    }
    case WIRE_JSON_STRING:
        for (uint32_t i = 1; i + 1 < s.len; i++)
            if (p[i] < 0x20 || p[i] > 0x7e || p[i] == '\\')
                return 0;
        return s.len >= 2;
    case WIRE_JSON_NONE:
    case WIRE_JSON_OBJECT:
    case WIRE_JSON_ARRAY:
    case WIRE_JSON_TRUE:
    case WIRE_JSON_FALSE:
        break;
    }
    return 0;
}
