/* tests/base/test_buf.c: base/sl_buf.h (JSON string escaping, growth,
 * numbers) and base/sl_secret.h (scrubbing). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sl_buf.h"
#include "base/sl_secret.h"

/* ---- JSON string literals ---------------------------------------------- */

typedef struct json_case {
    const char *in;
    size_t len; /* 0: strlen(in) */
    const char *want;
} json_case_t;

static const json_case_t json_cases[] = {
    {"", 0, "\"\""},
    {"plain ascii 0123 ~!@#$%^&*()", 0, "\"plain ascii 0123 ~!@#$%^&*()\""},
    {"say \"hi\"", 0, "\"say \\\"hi\\\"\""},
    {"back\\slash", 0, "\"back\\\\slash\""},
    {"\\\"", 0, "\"\\\\\\\"\""},
    {"a/b", 0, "\"a/b\""},
    {"\n\r\t", 0, "\"\\n\\r\\t\""},
    {"\b\f\v", 0, "\"\\u0008\\u000c\\u000b\""},
    {"\x01\x1f\x1b", 0, "\"\\u0001\\u001f\\u001b\""},
    {"a\0b", 3, "\"a\\u0000b\""},
    {"\x7f", 0, "\"\x7f\""},
    {"\x20", 0, "\" \""},
    /* valid UTF-8 stays as it is */
    {"h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80", 0, "\"h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80\""},
    {"\xc2\x80\xdf\xbf", 0, "\"\xc2\x80\xdf\xbf\""},
    {"\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80\xef\xbf\xbf", 0, "\"\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80\xef\xbf\xbf\""},
    {"\xf0\x90\x80\x80\xf4\x8f\xbf\xbf", 0, "\"\xf0\x90\x80\x80\xf4\x8f\xbf\xbf\""},
    /* stray and impossible bytes */
    {"\x80", 0, "\"\\ufffd\""},
    {"\xbf", 0, "\"\\ufffd\""},
    {"\xff", 0, "\"\\ufffd\""},
    {"\xfe\xff", 0, "\"\\ufffd\\ufffd\""},
    {"\xc0\xaf", 0, "\"\\ufffd\\ufffd\""},                 /* overlong '/' */
    {"\xc1\xbf", 0, "\"\\ufffd\\ufffd\""},
    {"\xe0\x80\xaf", 0, "\"\\ufffd\\ufffd\\ufffd\""},      /* overlong, 3 bytes */
    {"\xe0\x9f\xbf", 0, "\"\\ufffd\\ufffd\\ufffd\""},
    {"\xf0\x80\x80\xaf", 0, "\"\\ufffd\\ufffd\\ufffd\\ufffd\""}, /* overlong, 4 bytes */
    {"\xf0\x8f\xbf\xbf", 0, "\"\\ufffd\\ufffd\\ufffd\\ufffd\""},
    {"\xed\xa0\x80", 0, "\"\\ufffd\\ufffd\\ufffd\""},      /* U+D800 */
    {"\xed\xbf\xbf", 0, "\"\\ufffd\\ufffd\\ufffd\""},      /* U+DFFF */
    {"\xed\xa0\xbd\xed\xb8\x80", 0, "\"\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\""}, /* CESU-8 pair */
    {"\xf4\x90\x80\x80", 0, "\"\\ufffd\\ufffd\\ufffd\\ufffd\""}, /* above U+10FFFF */
    {"\xf5\x80\x80\x80", 0, "\"\\ufffd\\ufffd\\ufffd\\ufffd\""},
    {"\xf8\x88\x80\x80\x80", 0, "\"\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\""},
    /* cut sequences, at the end and in the middle */
    {"\xe2\x82", 0, "\"\\ufffd\\ufffd\""},
    {"ab\xf0\x9f\x98", 0, "\"ab\\ufffd\\ufffd\\ufffd\""},
    {"\xe2\x82x", 0, "\"\\ufffd\\ufffdx\""},
    {"\xc3\"", 0, "\"\\ufffd\\\"\""},
    {"\xc3\xa9\xa9", 0, "\"\xc3\xa9\\ufffd\""},
    /* n, not the terminator, bounds the input */
    {"abc\xc3\xa9", 4, "\"abc\\ufffd\""},
    {"abcdef", 3, "\"abc\""},
};

Test(buf, json_str_table)
{
    size_t n = sizeof json_cases / sizeof json_cases[0];
    for (size_t i = 0; i < n; i++) {
        const json_case_t *c = &json_cases[i];
        size_t len = c->len ? c->len : strlen(c->in);
        char *in = malloc(len ? len : 1); /* no terminator: the length must bound every read */
        memcpy(in, c->in, len);
        sl_buf_t b = SL_BUF_INIT;
        sl_buf_append_str(&b, "x:");
        sl_buf_append_json_str(&b, in, len);
        cr_expect_str_eq(b.base + 2, c->want, "case %zu", i);
        cr_expect_eq(b.len, strlen(c->want) + 2, "case %zu: len", i);
        cr_expect_eq(b.base[b.len], '\0', "case %zu: terminator", i);
        sl_buf_dispose(&b);
        free(in);
    }
}

/* ---- a strict checker of one JSON string literal ----------------------- */

/* Length of the valid UTF-8 character at s (RFC 3629), 0 if none. */
static size_t utf8_char(const unsigned char *s, size_t n)
{
    static const struct {
        unsigned char lo, hi, ncont, lo1, hi1;
    } leads[] = {
        {0xc2, 0xdf, 1, 0x80, 0xbf}, {0xe0, 0xe0, 2, 0xa0, 0xbf}, {0xe1, 0xec, 2, 0x80, 0xbf},
        {0xed, 0xed, 2, 0x80, 0x9f}, {0xee, 0xef, 2, 0x80, 0xbf}, {0xf0, 0xf0, 3, 0x90, 0xbf},
        {0xf1, 0xf3, 3, 0x80, 0xbf}, {0xf4, 0xf4, 3, 0x80, 0x8f},
    };
    if (s[0] < 0x80)
        return 1;
    for (size_t k = 0; k < sizeof leads / sizeof leads[0]; k++) {
        if (s[0] < leads[k].lo || s[0] > leads[k].hi)
            continue;
        if (n < 1u + leads[k].ncont || s[1] < leads[k].lo1 || s[1] > leads[k].hi1)
            return 0;
        for (size_t j = 2; j <= leads[k].ncont; j++)
            if (s[j] < 0x80 || s[j] > 0xbf)
                return 0;
        return 1u + leads[k].ncont;
    }
    return 0;
}

/* 1 if s[0..n) is exactly one RFC 8259 string literal; *decoded gets its
 * length once unescaped, counting each \u escape as one unit. */
static int json_string_ok(const char *str, size_t n, size_t *units)
{
    const unsigned char *s = (const unsigned char *)str;
    if (n < 2 || s[0] != '"' || s[n - 1] != '"')
        return 0;
    *units = 0;
    for (size_t i = 1; i < n - 1;) {
        if (s[i] == '"' || s[i] < 0x20)
            return 0;
        if (s[i] == '\\') {
            if (i + 1 >= n - 1)
                return 0;
            unsigned char e = s[i + 1];
            if (e == 'u') {
                if (i + 5 >= n - 1)
                    return 0;
                for (int k = 2; k < 6; k++)
                    if (!strchr("0123456789abcdefABCDEF", s[i + k]) || s[i + k] == 0)
                        return 0;
                i += 6;
            } else if (e && strchr("\"\\/bfnrt", e)) {
                i += 2;
            } else {
                return 0;
            }
        } else {
            size_t l = utf8_char(s + i, n - 1 - i);
            if (l == 0)
                return 0;
            i += l;
        }
        ++*units;
    }
    return 1;
}

/* Every input of up to three bytes drawn from the bytes that matter comes
 * out as one valid literal with one unit per input character. */
Test(buf, json_str_always_valid)
{
    static const unsigned char alphabet[] = {0x00, 0x01, 0x08, 0x09, 0x0a, 0x0d, 0x1f, 0x20, '"',  '\\', '/',
                                             'A',  'u',  0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1,
                                             0xc2, 0xdf, 0xe0, 0xe1, 0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf4, 0xf5,
                                             0xff};
    size_t na = sizeof alphabet;
    size_t checked = 0;
    for (size_t len = 0; len <= 3; len++) {
        size_t total = 1;
        for (size_t k = 0; k < len; k++)
            total *= na;
        for (size_t v = 0; v < total; v++) {
            unsigned char in[4];
            size_t x = v;
            for (size_t k = 0; k < len; k++, x /= na)
                in[k] = alphabet[x % na];
            sl_buf_t b = SL_BUF_INIT;
            sl_buf_append_json_str(&b, (const char *)in, len);
            size_t units;
            cr_assert(json_string_ok(b.base, b.len, &units), "input %02x %02x %02x (len %zu) gave '%s'",
                      len > 0 ? in[0] : 0, len > 1 ? in[1] : 0, len > 2 ? in[2] : 0, len, b.base);
            /* each input byte is one unit unless it was part of a kept character */
            size_t chars = 0;
            for (size_t k = 0; k < len;) {
                size_t l = utf8_char(in + k, len - k);
                k += l ? l : 1;
                chars++;
            }
            cr_assert_eq(units, chars, "input of %zu bytes: %zu units, want %zu ('%s')", len, units, chars, b.base);
            sl_buf_dispose(&b);
            checked++;
        }
    }
    cr_expect_gt(checked, 40000);
}

/* ---- growth, printf, numbers ------------------------------------------- */

Test(buf, append_grows_and_terminates)
{
    sl_buf_t b;
    sl_buf_init(&b);
    cr_expect(b.base == NULL && b.len == 0 && b.cap == 0);
    char expect[5000];
    size_t n = 0;
    for (int i = 0; i < 1000; i++) {
        char piece[8];
        int k = snprintf(piece, sizeof piece, "%d,", i % 97);
        sl_buf_append(&b, piece, (size_t)k);
        memcpy(expect + n, piece, (size_t)k);
        n += (size_t)k;
        cr_assert_eq(b.len, n);
        cr_assert_gt(b.cap, b.len);
        cr_assert_eq(b.base[b.len], '\0');
    }
    cr_expect_eq(memcmp(b.base, expect, n), 0);
    sl_buf_append(&b, "", 0);
    cr_expect_eq(b.len, n);
    sl_buf_append_char(&b, '\0');
    cr_expect_eq(b.len, n + 1);
    size_t cap = b.cap;
    sl_buf_reset(&b);
    cr_expect(b.len == 0 && b.cap == cap && b.base[0] == '\0');
    sl_buf_dispose(&b);
    cr_expect(b.base == NULL && b.len == 0 && b.cap == 0);
}

Test(buf, printf)
{
    static const struct {
        size_t repeat; /* width of %*s */
        int num;
        const char *tail;
    } cases[] = {{0, 0, ""}, {1, -1, "x"}, {63, 42, "tail"}, {64, 7, ""}, {200, 123456, "end"}, {5000, -9, "z"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sl_buf_t b = SL_BUF_INIT;
        sl_buf_append_str(&b, "pre|");
        sl_buf_printf(&b, "%*s|%d|%s", (int)cases[i].repeat, "", cases[i].num, cases[i].tail);
        sl_buf_printf(&b, "%s", "");
        char *want = malloc(cases[i].repeat + 64);
        int k = sprintf(want, "pre|%*s|%d|%s", (int)cases[i].repeat, "", cases[i].num, cases[i].tail);
        cr_expect_eq(b.len, (size_t)k, "case %zu: len", i);
        cr_expect_str_eq(b.base, want, "case %zu", i);
        free(want);
        sl_buf_dispose(&b);
    }
}

Test(buf, u64)
{
    static const struct {
        uint64_t v;
        const char *want;
    } cases[] = {
        {0, "0"},
        {1, "1"},
        {9, "9"},
        {10, "10"},
        {4294967295u, "4294967295"},
        {4294967296u, "4294967296"},
        {10000000000000000000u, "10000000000000000000"},
        {UINT64_MAX, "18446744073709551615"},
    };
    sl_buf_t all = SL_BUF_INIT;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sl_buf_t b = SL_BUF_INIT;
        sl_buf_append_u64(&b, cases[i].v);
        cr_expect_str_eq(b.base, cases[i].want, "case %zu", i);
        cr_expect_eq(b.len, strlen(cases[i].want));
        sl_buf_dispose(&b);
        sl_buf_append_u64(&all, cases[i].v);
        sl_buf_append_char(&all, ' ');
    }
    cr_expect_str_eq(all.base, "0 1 9 10 4294967295 4294967296 10000000000000000000 18446744073709551615 ");
    sl_buf_dispose(&all);
}

/* Every length from 1 to 20 digits, both sides of each power of ten, and a
 * million pseudo-random values of every magnitude, against snprintf. */
static void expect_u64_str(uint64_t v)
{
    char got[SL_U64_STR_MAX + 1], want[32];
    memset(got, 'x', sizeof(got));
    size_t n = sl_u64_str(got, v);
    int wn = snprintf(want, sizeof(want), "%llu", (unsigned long long)v);
    cr_assert_eq(n, (size_t)wn, "length of %s", want);
    cr_assert_str_eq(got, want);
    cr_assert_eq(got[SL_U64_STR_MAX], 'x', "wrote past SL_U64_STR_MAX for %s", want);
}

Test(buf, u64_str_matches_snprintf)
{
    uint64_t p = 1;
    for (int d = 0; d < 20; d++, p *= 10) {
        expect_u64_str(p);
        expect_u64_str(p - 1);
        expect_u64_str(p + 1);
        expect_u64_str(p * 5);
    }
    expect_u64_str(UINT64_MAX);
    expect_u64_str(UINT64_MAX - 1);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 1000000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
        expect_u64_str(x >> (i % 64));
    }
}

Test(buf, steal)
{
    sl_buf_t b = SL_BUF_INIT;
    size_t len = 99;
    char *p = sl_buf_steal(&b, &len);
    cr_expect_str_eq(p, "");
    cr_expect_eq(len, 0);
    free(p);
    sl_buf_append_str(&b, "hello");
    p = sl_buf_steal(&b, &len);
    cr_expect_str_eq(p, "hello");
    cr_expect_eq(len, 5);
    cr_expect(b.base == NULL && b.len == 0 && b.cap == 0);
    free(p);
}

/* ---- secrets ------------------------------------------------------------ */

static void scrub_setup(void)
{
    sl_secret_clear();
}

static void scrub_teardown(void)
{
    sl_secret_clear();
}

typedef struct scrub_case {
    const char *secrets[4];
    const char *in;
    const char *want;
} scrub_case_t;

static const scrub_case_t scrub_cases[] = {
    {{NULL}, "nothing to hide", "nothing to hide"},
    {{NULL}, "", ""},
    {{"s3cr3t"}, "", ""},
    {{"s3cr3t"}, "s3cr3t", "***"},
    {{"s3cr3t"}, "key=s3cr3t&x=1", "key=***&x=1"},
    {{"s3cr3t"}, "s3cr3ts3cr3t s3cr3", "****** s3cr3"},
    {{"s3cr3t"}, "S3CR3T", "S3CR3T"},
    {{"abc"}, "abc abc", "abc abc"},                         /* under 4 bytes: ignored */
    {{"abcd", "wxyz"}, "abcd-wxyz-abcd", "***-***-***"},
    {{"https://rpc.example/v2/KEY123", "KEY123"}, "GET https://rpc.example/v2/KEY123 then KEY123",
     "GET *** then ***"},
    /* longest first at the same position */
    {{"tok_", "tok_abcdef"}, "x tok_abcdef y tok_z", "x *** y ***z"},
    {{"tok_abcdef", "tok_"}, "x tok_abcdef y", "x *** y"},
    /* the earliest occurrence first, the rest searched again */
    {{"bcdef", "abcd"}, "abcd bcdef", "*** ***"},
    {{"bcdef", "abcd"}, "xbcdef abcd", "x*** ***"},
    {{"same", "same"}, "same same", "*** ***"},
    {{"p4ss"}, "\n\"p4ss\"\x01p4ss\xff", "\n\"***\"\x01***\xff"},
};

Test(secret, scrub_table, .init = scrub_setup, .fini = scrub_teardown)
{
    for (size_t i = 0; i < sizeof scrub_cases / sizeof scrub_cases[0]; i++) {
        const scrub_case_t *c = &scrub_cases[i];
        sl_secret_clear();
        for (size_t k = 0; k < 4 && c->secrets[k]; k++)
            sl_secret_add(c->secrets[k]);
        size_t len = strlen(c->in);
        char *in = malloc(len ? len : 1);
        memcpy(in, c->in, len);
        sl_buf_t out = SL_BUF_INIT;
        sl_buf_append_str(&out, "|");
        sl_secret_scrub(&out, in, len);
        cr_expect_eq(out.base[0], '|', "case %zu: appends", i);
        cr_expect(strcmp(out.base + 1, c->want) == 0, "case %zu: '%s', want '%s'", i, out.base + 1, c->want);
        int has = 0;
        for (size_t k = 0; k < 4 && c->secrets[k]; k++)
            has |= strlen(c->secrets[k]) >= 4 && strstr(c->in, c->secrets[k]) != NULL;
        cr_expect_eq(sl_secret_contains(in, len), has, "case %zu: contains", i);
        sl_buf_dispose(&out);
        free(in);
    }
}

Test(secret, add_n_and_clear, .init = scrub_setup, .fini = scrub_teardown)
{
    sl_secret_add_n("tokenXYZ-and-more", 8);
    sl_secret_add(NULL);
    sl_secret_add_n(NULL, 10);
    sl_buf_t out = SL_BUF_INIT;
    sl_secret_scrub(&out, "a tokenXYZ b tokenXY", 20);
    cr_expect_str_eq(out.base, "a *** b tokenXY");
    cr_expect(sl_secret_contains("tokenXYZ", 8));
    cr_expect(!sl_secret_contains("tokenXY", 7));
    sl_secret_clear();
    cr_expect(!sl_secret_contains("tokenXYZ", 8));
    sl_buf_reset(&out);
    sl_secret_scrub(&out, "a tokenXYZ", 10);
    cr_expect_str_eq(out.base, "a tokenXYZ");
    sl_buf_dispose(&out);
}

/* Two secrets that overlap in the text: no byte of either may come out.
 * (Scrubbing the first and carrying on after it would print the rest of
 * the second: here "-two-three-four".) */
Test(secret, overlapping_secrets_leave_nothing, .init = scrub_setup, .fini = scrub_teardown)
{
    static const struct {
        const char *a, *b, *in;
    } cases[] = {
        {"key-one", "one-two-three-four", "x key-one-two-three-four y"},
        {"abcdef", "defghi", "abcdefghi"},
        {"defghi", "abcdef", "abcdefghi"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sl_secret_clear();
        sl_secret_add(cases[i].a);
        sl_secret_add(cases[i].b);
        sl_buf_t out = SL_BUF_INIT;
        sl_secret_scrub(&out, cases[i].in, strlen(cases[i].in));
        /* the tail of b that does not overlap a must not survive */
        const char *tail = cases[i].b + 3;
        const char *tail_a = cases[i].a + 3;
        cr_expect(strstr(out.base, tail) == NULL && strstr(out.base, tail_a) == NULL,
                  "case %zu: '%s' leaks part of a secret", i, out.base);
        sl_buf_dispose(&out);
    }
}

/* What is only suspected of being a key is registered if it looks like one. */
Test(secret, key_like_values_only, .init = scrub_setup, .fini = scrub_teardown)
{
    static const struct {
        const char *s;
        int key;
    } cases[] = {
        {"0123456789abcdef0123456789abcdef", 1}, /* Infura project id */
        {"1b2c3d4e-aaaa-bbbb-cccc-0123456789ab", 1}, /* a UUID (Helius) */
        {"Ak80gSCleU1Frwnafb5Ka4V", 1},
        {"abcdefghijklmnopqrstuvwxyz", 1},       /* 24+ bytes of anything */
        {"ethereum", 0},
        {"eth_sepolia", 0},
        {"application/json", 0},
        {"true", 0},
        {"8453", 0},
        {"127.0.0.1", 0},
        {"a1b2c3d", 0},                          /* under 8 bytes */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t n = strlen(cases[i].s);
        cr_expect_eq(sl_secret_key_like(cases[i].s, n), cases[i].key, "%s", cases[i].s);
        sl_secret_add_key(cases[i].s, n);
        cr_expect_eq(sl_secret_contains(cases[i].s, n), cases[i].key, "%s registered", cases[i].s);
    }
    sl_secret_add_words("Bearer  eyJhbGciOiJIUzI1NiJ9.e30.x, Basic ;");
    cr_expect(sl_secret_contains("eyJhbGciOiJIUzI1NiJ9.e30.x", 26));
    cr_expect(!sl_secret_contains("Bearer", 6));
    cr_expect(!sl_secret_contains("Basic", 5));
}

Test(buf, reserve_exact_allocates_what_is_asked)
{
    sl_buf_t b = SL_BUF_INIT;
    sl_buf_reserve_exact(&b, 4194340);
    cr_assert_eq(b.cap, 4194341); /* the bytes and the terminator, not 8 MiB */
    sl_buf_append(&b, "ab", 2);
    cr_assert_eq(b.cap, 4194341);
    sl_buf_reserve_exact(&b, 10); /* room already there: nothing moves */
    cr_assert_eq(b.cap, 4194341);
    cr_assert_str_eq(b.base, "ab");
    sl_buf_dispose(&b);
}
