/* wire/traceparent.c: the W3C traceparent header (wire/traceparent.h). */
#include "wire/traceparent.h"

#include <string.h>

/* 1 if s[0..n) is lower-case hex; *zero: all of it '0'. */
static int hex_run(const char *s, size_t n, int *zero)
{
    *zero = 1;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return 0;
        *zero &= c == '0';
    }
    return 1;
}

int wire_traceparent_parse(const char *s, size_t len, char trace_id[33])
{
    int zero;
    if (s == NULL || len != WIRE_TRACEPARENT_LEN || s[2] != '-' || s[35] != '-' || s[52] != '-')
        return 0;
    if (!hex_run(s, 2, &zero) || memcmp(s, "ff", 2) == 0)
        return 0;
    if (!hex_run(s + 3, 32, &zero) || zero)
        return 0;
    if (!hex_run(s + 36, 16, &zero) || zero)
        return 0;
    if (!hex_run(s + 53, 2, &zero))
        return 0;
    if (trace_id != NULL) {
        memcpy(trace_id, s + 3, 32);
        trace_id[32] = '\0';
    }
    return 1;
}
