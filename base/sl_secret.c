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

void sl_secret_scrub(sl_buf_t *out, const char *s, size_t n)
{
    while (n > 0) {
        size_t len = 0;
        const char *p = find_first(s, n, &len);
        if (p == NULL) {
            sl_buf_append(out, s, n);
            return;
        }
        sl_buf_append(out, s, (size_t)(p - s));
        sl_buf_append(out, "***", 3);
        n -= (size_t)(p - s) + len;
        s = p + len;
    }
}

int sl_secret_contains(const char *s, size_t n)
{
    size_t len = 0;
    return find_first(s, n, &len) != NULL;
}
