#include "base/sl_parse.h"

sl_err_t sl_parse_u64(const char *s, size_t n, uint64_t max, uint64_t *out)
{
    if (n == 0)
        return SL_ERR_PARSE;
    uint64_t v = 0;
    int over = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return SL_ERR_PARSE; /* a non-digit anywhere beats a range error */
        uint64_t d = (uint64_t)(s[i] - '0');
        /* v * 10 + d <= max, without overflowing */
        if (over || d > max || v > (max - d) / 10)
            over = 1;
        else
            v = v * 10 + d;
    }
    if (over)
        return SL_ERR_RANGE;
    *out = v;
    return SL_OK;
}
