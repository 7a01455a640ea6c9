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
