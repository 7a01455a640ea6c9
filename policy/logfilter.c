/* policy/logfilter.c: geth's log filter match (policy/logfilter.h). */
#include "policy/logfilter.h"

#include <stdlib.h>
#include <string.h>

/* v in the sorted set[0..n) of len-byte values: binary search */
static int one_of(const uint8_t *v, size_t len, const uint8_t *set, size_t n)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = memcmp(v, set + mid * len, len);
        if (c == 0)
            return 1;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return 0;
}

static int cmp20(const void *a, const void *b)
{
    return memcmp(a, b, 20);
}

static int cmp32(const void *a, const void *b)
{
    return memcmp(a, b, 32);
}

size_t policy_logfilter_set_sort(void *v, size_t size, size_t n)
{
    uint8_t *p = v;
    if (n < 2)
        return n;
    qsort(p, n, size, size == 20 ? cmp20 : cmp32); /* qsort has no context argument: a comparator per width */
    size_t out = 1;
    for (size_t i = 1; i < n; i++)
        if (memcmp(p + (out - 1) * size, p + i * size, size) != 0)
            memmove(p + out++ * size, p + i * size, size);
    return out;
}

int policy_logfilter_match(const policy_logfilter_t *f, const uint8_t addr[20], const uint8_t (*topics)[32],
                           size_t ntopics)
{
    if (f->naddr > 0 && !one_of(addr, 20, (const uint8_t *)f->addr, f->naddr))
        return 0;
    if (f->npos > ntopics) /* geth: more positions than the log has topics never match */
        return 0;
    for (size_t i = 0; i < f->npos && i < POLICY_LOGFILTER_POSITIONS; i++)
        if (f->pos[i].n > 0 && !one_of(topics[i], 32, (const uint8_t *)f->pos[i].v, f->pos[i].n))
            return 0;
    return 1;
}

static int nibble(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int policy_logfilter_hex(const char *s, size_t len, uint8_t *out, size_t n)
{
    if (len != 2 + 2 * n || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
        return 0;
    for (size_t i = 0; i < n; i++) {
        int hi = nibble(s[2 + 2 * i]), lo = nibble(s[3 + 2 * i]);
        if (hi < 0 || lo < 0)
            return 0;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 1;
}
