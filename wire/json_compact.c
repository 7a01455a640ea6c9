/* wire/json_compact.c: a JSON value without its insignificant whitespace
 * (wire/json_compact.h). */
#include "wire/json_compact.h"

void wire_json_compact(const char *buf, wire_span_t s, sl_buf_t *out)
{
    const char *p = buf + s.off, *end = p + s.len, *run = p;
    int in_string = 0;
    for (; p < end; p++) {
        char c = *p;
        if (in_string) {
            if (c == '\\')
                p++; /* the escaped byte cannot end the string */
            else if (c == '"')
                in_string = 0;
            continue;
        }
        if (c == '"') {
            in_string = 1;
        } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            sl_buf_append(out, run, (size_t)(p - run));
            run = p + 1;
        }
    }
    if (end > run)
        sl_buf_append(out, run, (size_t)(end - run));
}

/* The number token at p (a scan validated it) is an integer of at most 15
 * digits, not "-0": its length, else 0. */
static size_t plain_number(const char *p, const char *end)
{
    const char *q = p + (*p == '-');
    size_t digits = 0;
    while (q + digits < end && q[digits] >= '0' && q[digits] <= '9')
        digits++;
    const char *after = q + digits;
    if (after < end && (*after == '.' || *after == 'e' || *after == 'E'))
        return 0;
    if (digits == 0 || digits > 15 || (*p == '-' && digits == 1 && *q == '0'))
        return 0;
    return (size_t)(after - p);
}

int wire_json_compact_plain(const char *buf, wire_span_t s, sl_buf_t *out)
{
    size_t mark = out->len;
    const char *p = buf + s.off, *end = p + s.len, *run = p;
    while (p < end) {
        char c = *p;
        if (c == '"') {
            const char *q = p + 1;
            while (q < end && *q != '"' && *q != '\\')
                q++;
            if (q >= end || *q == '\\')
                goto refuse;
            p = q + 1;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            size_t n = plain_number(p, end);
            if (n == 0)
                goto refuse;
            p += n;
        } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            sl_buf_append(out, run, (size_t)(p - run));
            run = ++p;
        } else {
            p++;
        }
    }
    if (end > run)
        sl_buf_append(out, run, (size_t)(end - run));
    return 1;
refuse:
    out->len = mark;
    return 0;
}
