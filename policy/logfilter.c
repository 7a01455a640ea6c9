/* policy/logfilter.c: geth's log filter match (policy/logfilter.h). */
#include "policy/logfilter.h"

#include <string.h>

static int one_of(const uint8_t *v, size_t len, const uint8_t *set, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(v, set + i * len, len) == 0)
            return 1;
    return 0;
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
