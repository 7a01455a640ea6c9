/* tests/fuzz/fuzz_logfilter.c: policy_logfilter_match and
 * policy_logfilter_hex on every input.
 *
 * The bytes build a filter and a log over a small alphabet (so matches are
 * frequent): addresses and topics are one byte repeated, sets of 0-3 of
 * them, 0-4 positions (an empty set: any), a log of 0-5 topics. Oracle for
 * the match: geth's filterLogs written out plainly here (address in the set
 * or no set; no more positions than topics; each non-empty position holds
 * the topic), the sets sorted first by policy_logfilter_set_sort, which
 * must leave them ascending, unique and holding the same members. For
 * the hex decoder: what it accepts re-encodes to the input,
 * case aside, and it never writes past n bytes. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/logfilter.h"

#define CHECK(cond) \
    ((cond) ? (void)0 : (fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond), abort()))

typedef struct reader {
    const uint8_t *p;
    size_t n;
} reader_t;

static uint8_t next(reader_t *r)
{
    if (r->n == 0)
        return 0;
    r->n--;
    return *r->p++;
}

static int oracle(uint8_t naddr, const uint8_t *addr, uint8_t la, uint8_t npos, const uint8_t *nset,
                  const uint8_t sets[4][3], uint8_t ntopics, const uint8_t *topics)
{
    int hit = naddr == 0;
    for (uint8_t i = 0; i < naddr; i++)
        hit |= addr[i] == la;
    if (!hit || npos > ntopics)
        return 0;
    for (uint8_t k = 0; k < npos; k++) {
        if (nset[k] == 0)
            continue;
        int in = 0;
        for (uint8_t j = 0; j < nset[k]; j++)
            in |= sets[k][j] == topics[k];
        if (!in)
            return 0;
    }
    return 1;
}

/* policy_logfilter_set_sort over v (n values of size bytes, each one byte
 * repeated: bytes[i]), checked: ascending, unique, the same members. */
static size_t sorted(void *v, size_t size, uint8_t n, const uint8_t *bytes)
{
    const uint8_t *p = v;
    size_t m = policy_logfilter_set_sort(v, size, n);
    CHECK(m <= n && (m > 0) == (n > 0));
    for (size_t i = 1; i < m; i++)
        CHECK(p[(i - 1) * size] < p[i * size]);
    for (uint8_t i = 0; i < n; i++) {
        int in = 0;
        for (size_t j = 0; j < m; j++)
            in |= p[j * size] == bytes[i] && p[j * size + size - 1] == bytes[i];
        CHECK(in);
    }
    return m;
}

static void fuzz_match(reader_t *r)
{
    uint8_t a[3][20], t[4][3][32], lt[5][32], la[20];
    uint8_t addr[3], nset[4], sets[4][3], topics[5];
    uint8_t naddr = next(r) % 4, npos = next(r) % 5, ntopics = next(r) % 6;
    policy_logfilter_t f;
    memset(&f, 0, sizeof(f));
    for (uint8_t i = 0; i < naddr; i++) {
        addr[i] = next(r) % 4;
        memset(a[i], addr[i], 20);
    }
    f.addr = (const uint8_t(*)[20])a;
    f.naddr = sorted(a, 20, naddr, addr);
    f.npos = npos;
    for (uint8_t k = 0; k < npos; k++) {
        nset[k] = next(r) % 4;
        for (uint8_t j = 0; j < nset[k]; j++) {
            sets[k][j] = next(r) % 4;
            memset(t[k][j], sets[k][j], 32);
        }
        f.pos[k] = (policy_logfilter_pos_t){(const uint8_t(*)[32])t[k], sorted(t[k], 32, nset[k], sets[k])};
    }
    uint8_t lab = next(r) % 4;
    memset(la, lab, 20);
    for (uint8_t k = 0; k < ntopics; k++) {
        topics[k] = next(r) % 4;
        memset(lt[k], topics[k], 32);
    }
    int got = policy_logfilter_match(&f, la, (const uint8_t(*)[32])lt, ntopics);
    CHECK(got == oracle(naddr, addr, lab, npos, nset, (const uint8_t(*)[3])sets, ntopics, topics));
}

static void fuzz_hex(const uint8_t *data, size_t size)
{
    size_t n = size > 2 ? (size - 2) / 2 : 0;
    char *s = malloc(size ? size : 1);
    memcpy(s, data, size);
    uint8_t *out = malloc(n ? n : 1);
    if (policy_logfilter_hex(s, size, out, n)) {
        char back[3];
        CHECK(size == 2 + 2 * n && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'));
        for (size_t i = 0; i < n; i++) {
            snprintf(back, sizeof(back), "%02x", out[i]);
            CHECK(tolower((unsigned char)s[2 + 2 * i]) == back[0] && tolower((unsigned char)s[3 + 2 * i]) == back[1]);
        }
    }
    free(out);
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 4096)
        return 0;
    if (data[0] & 1) {
        fuzz_hex(data + 1, size - 1);
        return 0;
    }
    reader_t r = {data + 1, size - 1};
    fuzz_match(&r);
    return 0;
}
