/* tests/fuzz/fuzz_envelope.c: every entry point of wire/envelope.h on every
 * input, against three oracles:
 *  - a slow reference scanner written here (recursive, a byte at a time, and
 *    judging a cut-off UTF-8 or \u sequence by trying its completions), which
 *    must return exactly the same error and spans;
 *  - cJSON, which must accept whatever we call valid (it is more lenient, so
 *    only that direction holds) and must decode strings and codes alike;
 *  - the API itself: spans in bounds and re-validating alone, prefixes of a
 *    valid document truncated, id equality consistent with int64 and strtod. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/envelope.h"
#include "wire/json_scan.h"

#define CHECK(cond) \
    ((cond) ? (void)0 : (fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond), abort()))

#define NITEMS 4

/* ---- the reference scanner ---------------------------------------------- */

typedef struct ref {
    const uint8_t *base, *p, *end;
    int depth;
} ref_t;

#define NEED(r) \
    do { \
        if ((r)->p == (r)->end) \
            return SL_ERR_TRUNCATED; \
    } while (0)

static void ref_ws(ref_t *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
        r->p++;
}

static int scalar_ok(uint32_t lo, uint32_t hi)
{
    if (hi > 0x10ffff)
        hi = 0x10ffff;
    return lo <= hi && !(lo >= 0xd800 && hi <= 0xdfff);
}

/* A UTF-8 sequence, decoded; cut short, it is fine if some completion is. */
static sl_err_t ref_utf8(ref_t *r)
{
    uint8_t c = *r->p++;
    int n = c >= 0xf0 && c < 0xf8 ? 3 : c >= 0xe0 && c < 0xf0 ? 2 : c >= 0xc0 && c < 0xe0 ? 1 : 0;
    static const uint32_t mins[] = {0, 0x80, 0x800, 0x10000};
    if (n == 0)
        return SL_ERR_PARSE;
    uint32_t cp = c & (0x3f >> n);
    for (int i = 0; i < n; i++) {
        if (r->p == r->end) {
            int bits = 6 * (n - i);
            uint32_t lo = cp << bits, hi = lo | ((1u << bits) - 1);
            return scalar_ok(lo < mins[n] ? mins[n] : lo, hi) ? SL_ERR_TRUNCATED : SL_ERR_PARSE;
        }
        if ((*r->p & 0xc0) != 0x80)
            return SL_ERR_PARSE;
        cp = cp << 6 | (*r->p++ & 0x3f);
    }
    return cp >= mins[n] && scalar_ok(cp, cp) ? SL_OK : SL_ERR_PARSE;
}

/* Four hex digits; cut short, *ndigits says how many were there. */
static sl_err_t ref_hex(ref_t *r, uint32_t *v, int *ndigits)
{
    *v = 0;
    for (*ndigits = 0; *ndigits < 4; ++*ndigits) {
        NEED(r);
        char hex[2] = {(char)*r->p, 0};
        if (!strchr("0123456789abcdefABCDEF", hex[0]) || hex[0] == 0)
            return SL_ERR_PARSE;
        *v = *v << 4 | (uint32_t)strtoul(hex, NULL, 16);
        r->p++;
    }
    return SL_OK;
}

/* Does some completion of the first n hex digits v fall in [lo, hi] (in = 1)
 * or outside it (in = 0)? Tried one by one. */
static int some_completion(uint32_t v, int n, uint32_t lo, uint32_t hi, int in)
{
    uint32_t span = 1u << (4 * (4 - n));
    for (uint32_t x = v * span; x < (v + 1) * span; x++)
        if ((x >= lo && x <= hi) == in)
            return 1;
    return 0;
}

static sl_err_t ref_u_escape(ref_t *r)
{
    uint32_t v, w;
    int n;
    sl_err_t e = ref_hex(r, &v, &n);
    if (e == SL_ERR_TRUNCATED)
        return some_completion(v, n, 0xdc00, 0xdfff, 0) ? e : SL_ERR_PARSE;
    if (e != SL_OK || (v >= 0xdc00 && v <= 0xdfff))
        return SL_ERR_PARSE;
    if (v < 0xd800 || v > 0xdbff)
        return SL_OK;
    NEED(r);
    if (*r->p++ != '\\')
        return SL_ERR_PARSE;
    NEED(r);
    if (*r->p++ != 'u')
        return SL_ERR_PARSE;
    e = ref_hex(r, &w, &n);
    if (e == SL_ERR_TRUNCATED)
        return some_completion(w, n, 0xdc00, 0xdfff, 1) ? e : SL_ERR_PARSE;
    return e == SL_OK && w >= 0xdc00 && w <= 0xdfff ? SL_OK : SL_ERR_PARSE;
}

static sl_err_t ref_string(ref_t *r)
{
    r->p++;
    for (;;) {
        NEED(r);
        uint8_t c = *r->p;
        sl_err_t e = SL_OK;
        if (c == '"') {
            r->p++;
            return SL_OK;
        } else if (c < 0x20) {
            return SL_ERR_PARSE;
        } else if (c == '\\') {
            r->p++;
            NEED(r);
            c = *r->p++;
            if (c == 'u')
                e = ref_u_escape(r);
            else if (!strchr("\"\\/bfnrt", c) || c == 0)
                e = SL_ERR_PARSE;
        } else if (c >= 0x80) {
            e = ref_utf8(r);
        } else {
            r->p++;
        }
        if (e != SL_OK)
            return e;
    }
}

/* Numbers as a DFA: states that may end a number are the accepting ones. */
enum { N_START, N_MINUS, N_ZERO, N_INT, N_DOT, N_FRAC, N_E, N_ESIGN, N_EXP, N_STOP, N_BAD };

static int num_next(int st, uint8_t c)
{
    int digit = c >= '0' && c <= '9', e = c == 'e' || c == 'E';
    switch (st) {
    case N_START: return c == '-' ? N_MINUS : c == '0' ? N_ZERO : digit ? N_INT : N_BAD;
    case N_MINUS: return c == '0' ? N_ZERO : digit ? N_INT : N_BAD;
    case N_ZERO: return c == '.' ? N_DOT : e ? N_E : N_STOP;
    case N_INT: return digit ? N_INT : c == '.' ? N_DOT : e ? N_E : N_STOP;
    case N_DOT: return digit ? N_FRAC : N_BAD;
    case N_FRAC: return digit ? N_FRAC : e ? N_E : N_STOP;
    case N_E: return c == '+' || c == '-' ? N_ESIGN : digit ? N_EXP : N_BAD;
    case N_ESIGN: return digit ? N_EXP : N_BAD;
    case N_EXP: return digit ? N_EXP : N_STOP;
    }
    return N_BAD;
}

static sl_err_t ref_number(ref_t *r)
{
    int st = N_START;
    for (;;) {
        if (r->p == r->end)
            return st == N_ZERO || st == N_INT || st == N_FRAC || st == N_EXP ? SL_OK : SL_ERR_TRUNCATED;
        int next = num_next(st, *r->p);
        if (next == N_STOP)
            return SL_OK;
        if (next == N_BAD)
            return SL_ERR_PARSE;
        st = next;
        r->p++;
    }
}

static sl_err_t ref_word(ref_t *r, const char *w)
{
    for (; *w; w++, r->p++) {
        NEED(r);
        if (*r->p != (uint8_t)*w)
            return SL_ERR_PARSE;
    }
    return SL_OK;
}

static sl_err_t ref_value(ref_t *r);

static sl_err_t ref_container(ref_t *r, uint8_t close)
{
    if (++r->depth > WIRE_JSON_MAX_DEPTH)
        return SL_ERR_TOO_DEEP;
    r->p++;
    ref_ws(r);
    NEED(r);
    if (*r->p == close) {
        r->p++;
        r->depth--;
        return SL_OK;
    }
    for (;;) {
        sl_err_t e;
        if (close == '}') {
            ref_ws(r);
            NEED(r);
            if (*r->p != '"')
                return SL_ERR_PARSE;
            if ((e = ref_string(r)) != SL_OK)
                return e;
            ref_ws(r);
            NEED(r);
            if (*r->p++ != ':')
                return SL_ERR_PARSE;
        }
        if ((e = ref_value(r)) != SL_OK)
            return e;
        ref_ws(r);
        NEED(r);
        uint8_t c = *r->p++;
        if (c == close) {
            r->depth--;
            return SL_OK;
        }
        if (c != ',')
            return SL_ERR_PARSE;
    }
}

static sl_err_t ref_value(ref_t *r)
{
    ref_ws(r);
    NEED(r);
    switch (*r->p) {
    case '{': return ref_container(r, '}');
    case '[': return ref_container(r, ']');
    case '"': return ref_string(r);
    case 't': return ref_word(r, "true");
    case 'f': return ref_word(r, "false");
    case 'n': return ref_word(r, "null");
    default: return ref_number(r);
    }
}

static wire_span_t ref_span(const ref_t *r, const uint8_t *start)
{
    return (wire_span_t){(uint32_t)(start - r->base), (uint32_t)(r->p - start)};
}

static sl_err_t ref_end(ref_t *r, sl_err_t e)
{
    if (e != SL_OK)
        return e;
    ref_ws(r);
    return r->p == r->end ? SL_OK : SL_ERR_PARSE;
}

static sl_err_t ref_validate(const uint8_t *buf, size_t len, wire_span_t *v)
{
    ref_t r = {buf, buf, buf + len, 0};
    ref_ws(&r);
    const uint8_t *start = r.p;
    sl_err_t e = ref_value(&r);
    *v = ref_span(&r, start);
    return ref_end(&r, e);
}

/* Bytes a valid string token decodes to, and whether one is a NUL. */
static size_t ref_decoded_len(const uint8_t *p, size_t n, int *nul)
{
    const uint8_t *end = p + n - 1;
    size_t len = 0;
    for (*nul = 0, p++; p < end; len++) {
        if (*p != '\\' || p[1] != 'u') {
            p += *p == '\\' ? 2 : 1;
            continue;
        }
        char hex[5] = {(char)p[2], (char)p[3], (char)p[4], (char)p[5], 0};
        unsigned long v = strtoul(hex, NULL, 16);
        *nul |= v == 0;
        len += v >= 0xd800 && v <= 0xdbff ? 3 : v >= 0x800 ? 2 : v >= 0x80;
        p += v >= 0xd800 && v <= 0xdbff ? 12 : 6;
    }
    return len;
}

/* Folds a decoded name by code point: ASCII upper case to lower, and the
 * four non-ASCII letters that fold onto ASCII ones (U+212A Kelvin -> k,
 * U+017F long s -> s, U+0130 and U+0131 -> i); any other code point is kept
 * as U+FFFD-like 0xff so it matches nothing. out holds strlen(s) + 1. */
static void ref_fold(const char *s, char *out)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0;
    while (*p) {
        uint32_t cp;
        size_t n = *p < 0x80 ? 1 : *p < 0xe0 ? 2 : *p < 0xf0 ? 3 : 4;
        cp = n == 1 ? *p : n == 2 ? *p & 0x1f : n == 3 ? *p & 0x0f : *p & 0x07;
        for (size_t i = 1; i < n; i++) {
            if (p[i] == 0) { /* cut sequence (cJSON passes bytes through): stop at the end */
                n = i;
                cp = 0xfffd;
                break;
            }
            cp = cp << 6 | (p[i] & 0x3f);
        }
        p += n;
        if (cp >= 'A' && cp <= 'Z')
            out[o++] = (char)(cp + 32);
        else if (cp < 0x80)
            out[o++] = (char)cp;
        else
            out[o++] = cp == 0x212a ? 'k' : cp == 0x17f ? 's' : cp == 0x130 || cp == 0x131 ? 'i' : (char)0xff;
    }
    out[o] = 0;
}

/* The lead's rule for envelope keys: the raw token, else the decoded name if
 * it is at most 15 bytes; a NUL in it, or a match after folding (ASCII case
 * and the four letters of ref_fold) only, makes the message ambiguous. */
#define REF_AMBIGUOUS ((wire_span_t *)(void *)1)
static wire_span_t *ref_slot(wire_envelope_t *env, const uint8_t *key, size_t n)
{
    static const char *const names[] = {"jsonrpc", "id", "method", "params", "result", "error"};
    wire_span_t *slots[] = {&env->jsonrpc, &env->id, &env->method, &env->params, &env->result, &env->error};
    for (int i = 0; i < 6; i++)
        if (strlen(names[i]) + 2 == n && memcmp(names[i], key + 1, n - 2) == 0)
            return slots[i];
    int nul;
    if (ref_decoded_len(key, n, &nul) > 15)
        return NULL;
    if (nul)
        return REF_AMBIGUOUS;
    cJSON *cj = cJSON_ParseWithLength((const char *)key, n);
    CHECK(cj && cJSON_IsString(cj));
    wire_span_t *slot = NULL;
    char folded[64];
    ref_fold(cj->valuestring, folded);
    for (int i = 0; i < 6 && !slot; i++)
        if (strcmp(folded, names[i]) == 0)
            slot = strcmp(cj->valuestring, names[i]) == 0 ? slots[i] : REF_AMBIGUOUS;
    cJSON_Delete(cj);
    return slot;
}

/* An object's members at depth 1 (envelope) or an array's elements. */
static sl_err_t ref_top(ref_t *r, uint8_t close, wire_envelope_t *env, wire_span_t *items, size_t max,
                        size_t *n)
{
    ref_ws(r);
    NEED(r);
    if (*r->p++ != (close == '}' ? '{' : '['))
        return SL_ERR_PARSE;
    r->depth = 1;
    ref_ws(r);
    NEED(r);
    if (*r->p == close)
        return r->p++, SL_OK;
    for (;;) {
        wire_span_t *slot = NULL;
        sl_err_t e;
        if (close == '}') {
            ref_ws(r);
            NEED(r);
            const uint8_t *key = r->p;
            if (*r->p != '"')
                return SL_ERR_PARSE;
            if ((e = ref_string(r)) != SL_OK)
                return e;
            slot = ref_slot(env, key, (size_t)(r->p - key));
            if (slot == REF_AMBIGUOUS || (slot && slot->len))
                return SL_ERR_PARSE;
            ref_ws(r);
            NEED(r);
            if (*r->p++ != ':')
                return SL_ERR_PARSE;
        } else if (*n == max) {
            *n = max + 1;
            return SL_ERR_TOO_LARGE;
        }
        ref_ws(r);
        const uint8_t *start = r->p;
        if ((e = ref_value(r)) != SL_OK)
            return e;
        if (slot)
            *slot = ref_span(r, start);
        if (close == ']')
            items[*n] = ref_span(r, start);
        ++*n;
        ref_ws(r);
        NEED(r);
        uint8_t c = *r->p++;
        if (c == close)
            return SL_OK;
        if (c != ',')
            return SL_ERR_PARSE;
    }
}

/* ---- checks on results -------------------------------------------------- */

static int span_eq(wire_span_t a, wire_span_t b)
{
    return a.off == b.off && a.len == b.len;
}

static int utf8_valid(const char *s, size_t n)
{
    ref_t r = {(const uint8_t *)s, (const uint8_t *)s, (const uint8_t *)s + n, 0};
    while (r.p < r.end)
        if (*r.p < 0x80)
            r.p++;
        else if (ref_utf8(&r) != SL_OK)
            return 0;
    return 1;
}

/* A span of buf[0..len) is in bounds and is exactly one valid value. */
static void check_value_span(const char *buf, size_t len, wire_span_t s)
{
    wire_json_kind_t kind;
    wire_span_t v;
    CHECK(s.len > 0 && s.off <= len && s.len <= len - s.off);
    CHECK(wire_json_validate(buf + s.off, s.len, &kind, &v) == SL_OK);
    CHECK(v.off == 0 && v.len == s.len && kind == wire_json_kind(buf, s) && kind != WIRE_JSON_NONE);
}

/* A string token decodes as cJSON decodes it, and cut copies are prefixes. */
static void check_string(const char *buf, wire_span_t s)
{
    static char big[8192];
    char small[7];
    sl_err_t e = wire_json_string(buf, s, big, sizeof big);
    CHECK(e == SL_OK || e == SL_ERR_TOO_LARGE);
    int nul;
    size_t len = ref_decoded_len((const uint8_t *)buf + s.off, s.len, &nul);
    CHECK(wire_json_has_nul(buf, s) == nul);
    CHECK(e == (len < sizeof big ? SL_OK : SL_ERR_TOO_LARGE));
    if (e == SL_OK && !nul)
        CHECK(strlen(big) == len);
    CHECK(utf8_valid(big, strlen(big)));
    sl_err_t es = wire_json_string(buf, s, small, sizeof small);
    CHECK(es == SL_OK || es == SL_ERR_TOO_LARGE);
    CHECK(strlen(small) < sizeof small && memcmp(small, big, strlen(small)) == 0);
    CHECK(utf8_valid(small, strlen(small)));
    cJSON *cj = cJSON_ParseWithLength(buf + s.off, s.len);
    CHECK(cj && cJSON_IsString(cj));
    if (e == SL_OK)
        CHECK(strcmp(cj->valuestring, big) == 0);
    cJSON_Delete(cj);
}

/* int64 against cJSON's double where a double is exact. */
static void check_number(const char *buf, wire_span_t s)
{
    int64_t v;
    sl_err_t e = wire_json_int64(buf, s, &v);
    int integer = !memchr(buf + s.off, '.', s.len) && !memchr(buf + s.off, 'e', s.len) &&
                  !memchr(buf + s.off, 'E', s.len);
    CHECK(integer ? e == SL_OK || e == SL_ERR_RANGE : e == SL_ERR_PARSE);
    cJSON *cj = cJSON_ParseWithLength(buf + s.off, s.len);
    CHECK(cj && cJSON_IsNumber(cj));
    if (integer && fabs(cj->valuedouble) < 9007199254740992.0)
        CHECK(e == SL_OK && (double)v == cj->valuedouble);
    cJSON_Delete(cj);
    if (e != SL_OK)
        return;
    char t[48];
    wire_span_t ts = {0, (uint32_t)snprintf(t, sizeof t, "%lld", (long long)v)};
    CHECK(wire_json_id_equal(buf, s, t, ts) == 1);
    ts.len = (uint32_t)snprintf(t, sizeof t, "%lld.000e0", (long long)v);
    CHECK(wire_json_id_equal(buf, s, t, ts) == 1);
    if (v != 0) {
        ts.len = (uint32_t)snprintf(t, sizeof t, "%lld0E-1", (long long)v);
        CHECK(wire_json_id_equal(buf, s, t, ts) == 1);
    }
    if (v < INT64_MAX) {
        ts.len = (uint32_t)snprintf(t, sizeof t, "%lld", (long long)v + 1);
        CHECK(wire_json_id_equal(buf, s, t, ts) == 0);
    }
}

/* A portable id: null, plain digits up to 2^53-1, or a string of printable
 * ASCII without escapes (a reference, byte by byte). */
static void check_portable(const char *buf, wire_span_t s)
{
    const unsigned char *p = (const unsigned char *)buf + s.off;
    int want = 0;
    wire_json_kind_t k = wire_json_kind(buf, s);
    if (k == WIRE_JSON_NULL) {
        want = 1;
    } else if (k == WIRE_JSON_STRING) {
        want = 1;
        for (uint32_t i = 1; i + 1 < s.len; i++)
            want &= p[i] >= 0x20 && p[i] <= 0x7e && p[i] != '\\';
    } else if (k == WIRE_JSON_NUMBER) {
        int64_t v;
        int digits = 1;
        for (uint32_t i = 0; i < s.len; i++)
            digits &= p[i] >= '0' && p[i] <= '9';
        want = digits && (s.len == 1 || p[0] != '0') && wire_json_int64(buf, s, &v) == SL_OK &&
               v <= 9007199254740991LL;
    }
    CHECK(wire_json_id_portable(buf, s) == want);
}

static void check_token(const char *buf, wire_span_t s)
{
    CHECK(wire_json_id_equal(buf, s, buf, s) == 1);
    check_portable(buf, s);
    switch (wire_json_kind(buf, s)) {
    case WIRE_JSON_STRING: check_string(buf, s); break;
    case WIRE_JSON_NUMBER: check_number(buf, s); break;
    default: break;
    }
}

/* Two tokens: equal as ids is symmetric, agrees with int64 and implies equal doubles. */
static void check_pair(const char *buf, wire_span_t a, wire_span_t b)
{
    int eq = wire_json_id_equal(buf, a, buf, b);
    CHECK(eq == wire_json_id_equal(buf, b, buf, a));
    if (a.len == b.len && memcmp(buf + a.off, buf + b.off, a.len) == 0)
        CHECK(eq);
    if (wire_json_kind(buf, a) != WIRE_JSON_NUMBER || wire_json_kind(buf, b) != WIRE_JSON_NUMBER) {
        CHECK(eq == (a.len == b.len && memcmp(buf + a.off, buf + b.off, a.len) == 0));
        return;
    }
    int64_t x, y;
    if (wire_json_int64(buf, a, &x) == SL_OK && wire_json_int64(buf, b, &y) == SL_OK)
        CHECK(eq == (x == y));
    if (eq && a.len < 512 && b.len < 512) {
        char ta[512], tb[512];
        snprintf(ta, sizeof ta, "%.*s", (int)a.len, buf + a.off);
        snprintf(tb, sizeof tb, "%.*s", (int)b.len, buf + b.off);
        CHECK(strtod(ta, NULL) == strtod(tb, NULL));
    }
}

/* Error members by raw key and by cJSON's unescaped key agree unless a key
 * is written with escapes. */
static int keys_plain(const char *buf, wire_span_t obj)
{
    wire_scan_t s;
    wire_scan_init(&s, buf, obj.off, obj.len);
    int first = 1, more = 0;
    wire_span_t key, value;
    if (wire_scan_open(&s, '{') != SL_OK)
        return 0;
    while (wire_scan_next(&s, &first, &more) == SL_OK && more) {
        if (wire_scan_key(&s, &key) != SL_OK || wire_scan_colon(&s) != SL_OK ||
            wire_scan_value(&s, &value) != SL_OK)
            return 0;
        if (memchr(buf + key.off, '\\', key.len))
            return 0;
    }
    return 1;
}

static void check_error_vs_cjson(const char *buf, wire_span_t s, const wire_rpc_error_t *e)
{
    cJSON *cj = cJSON_ParseWithLength(buf + s.off, s.len);
    CHECK(cj && cJSON_IsObject(cj));
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(cj, "code");
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(cj, "message");
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(cj, "data");
    if (e->has_code) {
        CHECK(code && cJSON_IsNumber(code));
        if (llabs(e->code) < (1ll << 53))
            CHECK((double)e->code == code->valuedouble);
    }
    if (msg && cJSON_IsString(msg)) {
        size_t ours = strlen(e->message), theirs = strlen(msg->valuestring);
        CHECK(ours <= theirs && memcmp(e->message, msg->valuestring, ours) == 0);
        CHECK(theirs < sizeof e->message ? ours == theirs : ours + 4 > sizeof e->message - 1);
    } else {
        CHECK(e->message[0] == '\0');
    }
    CHECK((data != NULL) == (e->data.len != 0));
    cJSON_Delete(cj);
}

static void check_error(const char *buf, wire_span_t s)
{
    wire_rpc_error_t e;
    sl_err_t err = wire_envelope_error(buf, s, &e);
    if (wire_json_kind(buf, s) != WIRE_JSON_OBJECT) {
        CHECK(err == SL_ERR_PARSE && !e.has_code && e.message[0] == '\0' && e.data.len == 0);
        return;
    }
    CHECK(err == SL_OK);
    CHECK(span_eq(wire_json_member(buf, s, "data"), e.data)); /* both take the first, by raw key */
    CHECK(strlen(e.message) < sizeof e.message && utf8_valid(e.message, strlen(e.message)));
    if (e.data.len) {
        CHECK(e.data.off > s.off && e.data.off + e.data.len < s.off + s.len);
        check_value_span(buf, s.off + s.len, e.data);
    }
    if (keys_plain(buf, s))
        check_error_vs_cjson(buf, s, &e);
}

static void check_envelope(const uint8_t *data, size_t size)
{
    const char *buf = (const char *)data;
    wire_envelope_t env, renv = {0};
    size_t rn = 0;
    ref_t r = {data, data, data + size, 0};
    sl_err_t rerr = ref_end(&r, ref_top(&r, '}', &renv, NULL, 0, &rn));
    sl_err_t err = wire_envelope_scan(buf, size, &env);
    CHECK(err == rerr);
    if (err != SL_OK)
        return;
    const wire_span_t *ours[] = {&env.jsonrpc, &env.id, &env.method, &env.params, &env.result, &env.error};
    const wire_span_t *theirs[] = {&renv.jsonrpc, &renv.id, &renv.method, &renv.params, &renv.result,
                                     &renv.error};
    for (int i = 0; i < 6; i++) {
        CHECK(span_eq(*ours[i], *theirs[i]));
        if (ours[i]->len) {
            check_value_span(buf, size, *ours[i]);
            check_token(buf, *ours[i]);
        }
    }
    CHECK(env.nmembers == rn);
    /* what gw_rpc_parse's one-scan path relies on: a body that scans as an
     * envelope validates as an object, from its first '{' to its last '}' */
    wire_json_kind_t kind;
    wire_span_t v;
    CHECK(wire_json_validate(buf, size, &kind, &v) == SL_OK && kind == WIRE_JSON_OBJECT);
    size_t first = 0, last = size;
    while (buf[first] != '{')
        first++;
    while (buf[last - 1] != '}')
        last--;
    CHECK(v.off == first && v.len == last - first);
    if (env.error.len)
        check_error(buf, env.error);
    if (env.id.len && env.result.len)
        check_pair(buf, env.id, env.result);
}

static void check_array(const uint8_t *data, size_t size)
{
    const char *buf = (const char *)data;
    wire_span_t items[NITEMS], ritems[NITEMS];
    size_t n = 0, rn = 0;
    ref_t r = {data, data, data + size, 0};
    sl_err_t rerr = ref_end(&r, ref_top(&r, ']', NULL, ritems, NITEMS, &rn));
    sl_err_t err = wire_envelope_scan_array(buf, size, items, NITEMS, &n);
    CHECK(err == rerr);
    if (err == SL_ERR_TOO_LARGE)
        CHECK(n == NITEMS + 1 && rn == n);
    if (err != SL_OK)
        return;
    CHECK(n == rn && n <= NITEMS);
    for (size_t i = 0; i < n; i++) {
        CHECK(span_eq(items[i], ritems[i]));
        CHECK(i == 0 || items[i].off > items[i - 1].off + items[i - 1].len);
        check_value_span(buf, size, items[i]);
        check_token(buf, items[i]);
        for (size_t j = 0; j < i; j++)
            check_pair(buf, items[j], items[i]);
        if (wire_json_kind(buf, items[i]) == WIRE_JSON_OBJECT)
            check_error(buf, items[i]);
    }
}

/* Every proper prefix of a valid document is truncated, unless it already
 * holds a whole number (a prefix of "12" is "1"). */
static void check_prefixes(const char *buf, size_t size, wire_json_kind_t kind, wire_span_t v)
{
    size_t step = size <= 64 ? 1 : size / 16;
    for (size_t n = 0; n < size; n += step) {
        wire_json_kind_t k;
        wire_span_t pv;
        sl_err_t err = wire_json_validate(buf, n, &k, &pv);
        if (n >= v.off + v.len)
            CHECK(err == SL_OK && span_eq(pv, v));
        else if (kind == WIRE_JSON_NUMBER)
            CHECK(err == SL_OK || err == SL_ERR_TRUNCATED);
        else
            CHECK(err == SL_ERR_TRUNCATED);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *buf = (const char *)data;
    wire_json_kind_t kind;
    wire_span_t v, rv;
    sl_err_t err = wire_json_validate(buf, size, &kind, &v);
    CHECK(err == ref_validate(data, size, &rv));
    if (err == SL_OK) {
        CHECK(span_eq(v, rv));
        check_value_span(buf, size, v);
        cJSON *cj = cJSON_ParseWithLength(buf, size);
        CHECK(cj != NULL); /* cJSON accepts more than we do, never less */
        cJSON_Delete(cj);
        check_prefixes(buf, size, kind, v);
        check_token(buf, v);
    }
    check_envelope(data, size);
    check_array(data, size);
    return 0;
}
