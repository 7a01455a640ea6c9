/* tests/base/test_parse.c: hex digits and decimal whole numbers. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/sl_parse.h"

Test(parse, hex_digit_every_byte)
{
    for (int c = 0; c < 256; c++) {
        int want = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        cr_expect_eq(sl_hex_digit(c), want, "byte %d", c);
    }
}

static sl_err_t parse(const char *s, uint64_t max, uint64_t *v)
{
    return sl_parse_u64(s, strlen(s), max, v);
}

Test(parse, u64_accepts_digits_only)
{
    uint64_t v = 77;
    cr_expect_eq(parse("0", UINT64_MAX, &v), SL_OK);
    cr_expect_eq(v, 0);
    cr_expect_eq(parse("007", UINT64_MAX, &v), SL_OK);
    cr_expect_eq(v, 7);
    cr_expect_eq(parse("18446744073709551615", UINT64_MAX, &v), SL_OK);
    cr_expect_eq(v, UINT64_MAX);
    v = 77;
    const char *bad[] = {"", "-1", "+1", " 1", "1 ", "1.5", "1e3", "0x10", "١"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_expect_eq(parse(bad[i], UINT64_MAX, &v), SL_ERR_PARSE, "'%s'", bad[i]);
        cr_expect_eq(v, 77, "untouched on error");
    }
    cr_expect_eq(sl_parse_u64("12", 1, 100, &v), SL_OK, "only n bytes are read");
    cr_expect_eq(v, 1);
}

Test(parse, u64_range)
{
    uint64_t v = 0;
    cr_expect_eq(parse("18446744073709551616", UINT64_MAX, &v), SL_ERR_RANGE, "2^64 overflows");
    cr_expect_eq(parse("99999999999999999999999", UINT64_MAX, &v), SL_ERR_RANGE);
    cr_expect_eq(parse("99999999999999999999999x", UINT64_MAX, &v), SL_ERR_PARSE, "a non-digit beats range");
    cr_expect_eq(parse("65535", 65535, &v), SL_OK);
    cr_expect_eq(v, 65535);
    cr_expect_eq(parse("65536", 65535, &v), SL_ERR_RANGE);
    cr_expect_eq(parse("9", 8, &v), SL_ERR_RANGE);
    cr_expect_eq(parse("0", 0, &v), SL_OK);
    cr_expect_eq(parse("1", 0, &v), SL_ERR_RANGE);
}

Test(parse, u64_agrees_with_strtoull_around_every_power_of_ten)
{
    char buf[32];
    for (uint64_t p = 1; p <= UINT64_MAX / 10; p *= 10)
        for (int64_t k = -2; k <= 2; k++) {
            uint64_t x = p + (uint64_t)k, v;
            snprintf(buf, sizeof(buf), "%" PRIu64, x);
            cr_assert_eq(parse(buf, UINT64_MAX, &v), SL_OK, "%s", buf);
            cr_assert_eq(v, x);
            cr_assert_eq(parse(buf, x, &v), SL_OK, "%s at its own max", buf);
            if (x > 0)
                cr_assert_eq(parse(buf, x - 1, &v), SL_ERR_RANGE, "%s past max", buf);
        }
}
