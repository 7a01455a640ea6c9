#include "base/sl_secret.h"

#include <stdlib.h>
#include <string.h>

typedef struct secret {
    char *s;
    size_t n;
} secret_t;

static secret_t *secrets;
static size_t nsecrets;

void sl_secret_add_n(const char *s, size_t n)
{
    if (s == NULL || n < 4)
        return;
    for (size_t i = 0; i < nsecrets; i++)
        if (secrets[i].n == n && memcmp(secrets[i].s, s, n) == 0)
            return;
    secrets = sl_xrealloc(secrets, (nsecrets + 1) * sizeof(*secrets));
    secrets[nsecrets].s = sl_xstrndup(s, n);
    secrets[nsecrets].n = n;
    nsecrets++;
}

void sl_secret_add(const char *s)
{
    if (s != NULL)
        sl_secret_add_n(s, strlen(s));
}

int sl_secret_key_like(const char *s, size_t n)
{
    int digit = 0, alpha = 0;
    if (s == NULL || n < 8)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        digit |= c >= '0' && c <= '9';
        alpha |= (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
    }
    return (digit && alpha) || n >= 24;
}

void sl_secret_add_key(const char *s, size_t n)
{
    if (sl_secret_key_like(s, n))
        sl_secret_add_n(s, n);
}

void sl_secret_add_words(const char *s)
{
    while (s != NULL && *s != '\0') {
        size_t n = strcspn(s, " \t,;");
        sl_secret_add_key(s, n);
        s += n;
        s += strspn(s, " \t,;");
    }
}

void sl_secret_clear(void)
{
    for (size_t i = 0; i < nsecrets; i++)
        free(secrets[i].s);
    free(secrets);
    secrets = NULL;
    nsecrets = 0;
}

/* Finds the earliest, then longest, secret occurrence in s[0..n). */
static const char *find_first(const char *s, size_t n, size_t *len)
{
    const char *best = NULL;
    for (size_t i = 0; i < nsecrets; i++) {
        const char *p = memmem(s, n, secrets[i].s, secrets[i].n);
        if (p != NULL && (best == NULL || p < best || (p == best && secrets[i].n > *len))) {
            best = p;
            *len = secrets[i].n;
        }
    }
    return best;
}

/* Extends [p, *end) over every secret occurrence that starts inside it, so
 * overlapping secrets are masked as one: no tail of either is left. */
static void extend_overlaps(const char *p, const char **end, const char *limit)
{
    int grew = 1;
    while (grew) {
        grew = 0;
        for (size_t i = 0; i < nsecrets; i++) {
            const char *from = p + 1;
            while (from < *end) {
                const char *q = memmem(from, (size_t)(limit - from), secrets[i].s, secrets[i].n);
                if (q == NULL || q >= *end)
                    break;
                if (q + secrets[i].n > *end) {
                    *end = q + secrets[i].n;
                    grew = 1;
                }
                from = q + 1;
            }
        }
    }
}

void sl_secret_scrub(sl_buf_t *out, const char *s, size_t n)
{
    const char *limit = s + n;
    while (s < limit) {
        size_t len = 0;
        const char *p = find_first(s, (size_t)(limit - s), &len);
        if (p == NULL) {
            sl_buf_append(out, s, (size_t)(limit - s));
            return;
        }
        const char *end = p + len;
        extend_overlaps(p, &end, limit);
        sl_buf_append(out, s, (size_t)(p - s));
        sl_buf_append(out, "***", 3);
        s = end;
    }
}

int sl_secret_contains(const char *s, size_t n)
{
    size_t len = 0;
    return find_first(s, n, &len) != NULL;
}
