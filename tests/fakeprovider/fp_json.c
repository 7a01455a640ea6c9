/* fp_json.c: a small validating JSON scanner that hands back raw spans.
 *
 * Why not cJSON for requests: the answer must echo the request id byte for
 * byte (1e3, 12345678901234567890, "\u00e9" all survive), and scanning spans
 * without building a tree keeps the healthy path cheap. Nesting is limited so
 * hostile input cannot exhaust the stack. */
#include "fp.h"

#include <string.h>

#define FP_JSON_MAX_DEPTH 128

static const char *skip_value(const char *p, const char *end, int depth);

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

static bool is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static const char *skip_string(const char *p, const char *end)
{
    for (p++; p < end; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"')
            return p + 1;
        if (c < 0x20)
            return NULL;
        if (c != '\\')
            continue;
        if (++p >= end)
            return NULL;
        if (*p == 'u') {
            if (end - p < 5 || !is_hex(p[1]) || !is_hex(p[2]) || !is_hex(p[3]) || !is_hex(p[4]))
                return NULL;
            p += 4;
        } else if (!strchr("\"\\/bfnrt", *p) || *p == '\0') {
            return NULL;
        }
    }
    return NULL;
}

static const char *skip_digits(const char *p, const char *end)
{
    const char *start = p;
    while (p < end && *p >= '0' && *p <= '9')
        p++;
    return p == start ? NULL : p;
}

static const char *skip_number(const char *p, const char *end)
{
    if (*p == '-')
        p++;
    if (p < end && *p == '0')
        p++;
    else if (!(p = skip_digits(p, end)))
        return NULL;
    if (p < end && *p == '.' && !(p = skip_digits(p + 1, end)))
        return NULL;
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (!(p = skip_digits(p, end)))
            return NULL;
    }
    return p;
}

static const char *skip_literal(const char *p, const char *end, const char *lit)
{
    size_t n = strlen(lit);
    if ((size_t)(end - p) < n || memcmp(p, lit, n) != 0)
        return NULL;
    return p + n;
}

/* Arrays and objects share one loop: an object member is "string : value". */
static const char *skip_container(const char *p, const char *end, int depth)
{
    char close = *p == '[' ? ']' : '}';
    bool object = close == '}';
    p = skip_ws(p + 1, end);
    if (p < end && *p == close)
        return p + 1;
    for (;;) {
        if (object) {
            if (p >= end || *p != '"' || !(p = skip_string(p, end)))
                return NULL;
            p = skip_ws(p, end);
            if (p >= end || *p++ != ':')
                return NULL;
        }
        if (!(p = skip_value(p, end, depth + 1)))
            return NULL;
        p = skip_ws(p, end);
        if (p >= end)
            return NULL;
        if (*p == close)
            return p + 1;
        if (*p++ != ',')
            return NULL;
        p = skip_ws(p, end);
    }
}

static const char *skip_value(const char *p, const char *end, int depth)
{
    p = skip_ws(p, end);
    if (p >= end || depth > FP_JSON_MAX_DEPTH)
        return NULL;
    switch (*p) {
    case '"': return skip_string(p, end);
    case '[': case '{': return skip_container(p, end, depth);
    case 't': return skip_literal(p, end, "true");
    case 'f': return skip_literal(p, end, "false");
    case 'n': return skip_literal(p, end, "null");
    default:
        if (*p == '-' || (*p >= '0' && *p <= '9'))
            return skip_number(p, end);
        return NULL;
    }
}

const char *fp_json_skip(const char *p, const char *end)
{
    return skip_value(p, end, 0);
}

bool fp_json_valid(const char *p, size_t n)
{
    const char *end = p + n;
    const char *q = skip_value(p, end, 0);
    return q && skip_ws(q, end) == end;
}

fp_span_t fp_json_trim(const char *p, size_t n)
{
    const char *end = p + n;
    p = skip_ws(p, end);
    while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n' || end[-1] == '\r'))
        end--;
    return (fp_span_t){p, (size_t)(end - p)};
}

bool fp_json_iter_begin(fp_json_iter_t *it, fp_span_t v, char open)
{
    if (v.n < 2 || v.p[0] != open)
        return false;
    it->p = v.p + 1;
    it->end = v.p + v.n;
    it->first = true;
    return true;
}

/* Moves past the separator before the next item; 0 at the closing bracket. */
static int iter_step(fp_json_iter_t *it)
{
    it->p = skip_ws(it->p, it->end);
    if (it->p >= it->end)
        return -1;
    if (*it->p == ']' || *it->p == '}')
        return 0;
    if (!it->first) {
        if (*it->p != ',')
            return -1;
        it->p = skip_ws(it->p + 1, it->end);
    }
    it->first = false;
    return 1;
}

int fp_json_array_next(fp_json_iter_t *it, fp_span_t *elem)
{
    int r = iter_step(it);
    if (r <= 0)
        return r;
    const char *q = skip_value(it->p, it->end, 1);
    if (!q)
        return -1;
    *elem = (fp_span_t){it->p, (size_t)(q - it->p)};
    it->p = q;
    return 1;
}

int fp_json_object_next(fp_json_iter_t *it, fp_span_t *key, fp_span_t *val)
{
    int r = iter_step(it);
    if (r <= 0)
        return r;
    if (*it->p != '"')
        return -1;
    const char *q = skip_string(it->p, it->end);
    if (!q)
        return -1;
    *key = (fp_span_t){it->p + 1, (size_t)(q - it->p - 2)};
    q = skip_ws(q, it->end);
    if (q >= it->end || *q != ':')
        return -1;
    const char *v = skip_ws(q + 1, it->end);
    if (!(q = skip_value(v, it->end, 1)))
        return -1;
    *val = (fp_span_t){v, (size_t)(q - v)};
    it->p = q;
    return 1;
}

bool fp_json_array_get(fp_span_t arr, size_t idx, fp_span_t *out)
{
    fp_json_iter_t it;
    if (!fp_json_iter_begin(&it, arr, '['))
        return false;
    for (size_t i = 0; fp_json_array_next(&it, out) == 1; i++)
        if (i == idx)
            return true;
    return false;
}

bool fp_json_string(fp_span_t v, fp_span_t *inner)
{
    if (v.n < 2 || v.p[0] != '"' || v.p[v.n - 1] != '"')
        return false;
    *inner = (fp_span_t){v.p + 1, v.n - 2};
    return true;
}

bool fp_span_eq(fp_span_t s, const char *lit)
{
    size_t n = strlen(lit);
    return s.n == n && memcmp(s.p, lit, n) == 0;
}

static bool parse_u64(const char *p, size_t n, unsigned base, uint64_t *out)
{
    uint64_t v = 0;
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
                   : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                   : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 99;
        if (d >= base || v > (UINT64_MAX - d) / base)
            return false;
        v = v * base + d;
    }
    *out = v;
    return true;
}

bool fp_json_u64(fp_span_t v, uint64_t *out)
{
    fp_span_t s;
    if (fp_json_string(v, &s))
        return s.n > 2 && s.p[0] == '0' && (s.p[1] == 'x' || s.p[1] == 'X')
               && parse_u64(s.p + 2, s.n - 2, 16, out);
    return parse_u64(v.p, v.n, 10, out);
}
