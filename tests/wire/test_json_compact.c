/* tests/wire/test_json_compact.c: wire/json_compact.h: whitespace outside
 * strings goes, strings (with escaped quotes and backslashes) stay. */
#include <criterion/criterion.h>
#include <string.h>

#include "wire/json_compact.h"

static void expect_compact(const char *in, const char *want)
{
    sl_buf_t b;
    sl_buf_init(&b);
    wire_json_compact(in, (wire_span_t){0, (uint32_t)strlen(in)}, &b);
    cr_expect_eq(b.len, strlen(want), "%s -> %.*s", in, (int)b.len, b.base ? b.base : "");
    cr_expect(b.len == strlen(want) && memcmp(b.base ? b.base : "", want, b.len) == 0, "%s -> %.*s, want %s", in,
              (int)b.len, b.base ? b.base : "", want);
    sl_buf_dispose(&b);
}

Test(json_compact, drops_whitespace_outside_strings_only)
{
    expect_compact("[ \"0x1\" , false ]", "[\"0x1\",false]");
    expect_compact("{\n\t\"a b\" :\r\n [1, 2] }", "{\"a b\":[1,2]}");
    expect_compact("[\"x \\\" y \", \" \\\\\", 3 ]", "[\"x \\\" y \",\" \\\\\",3]");
    expect_compact("[]", "[]");
    expect_compact("  ", "");
    expect_compact("\"ends in a backslash \\\\\" ", "\"ends in a backslash \\\\\"");
}

Test(json_compact, two_spellings_of_one_value_agree)
{
    sl_buf_t a, b;
    sl_buf_init(&a);
    sl_buf_init(&b);
    const char *x = "[{\"to\":\"0xab\", \"data\":\"0x\"}, \"0x10\"]", *y = "[ {\"to\" :\"0xab\",\"data\": \"0x\"},\"0x10\" ]";
    wire_json_compact(x, (wire_span_t){0, (uint32_t)strlen(x)}, &a);
    wire_json_compact(y, (wire_span_t){0, (uint32_t)strlen(y)}, &b);
    cr_expect(a.len == b.len && memcmp(a.base, b.base, a.len) == 0);
    sl_buf_dispose(&a);
    sl_buf_dispose(&b);
}

/* wire_json_compact_plain: the compact bytes of a plain value, else 0 and out untouched. */
static int plain(const char *in, sl_buf_t *b)
{
    sl_buf_reset(b);
    sl_buf_append_str(b, "kept:");
    int ok = wire_json_compact_plain(in, (wire_span_t){0, (uint32_t)strlen(in)}, b);
    sl_buf_append_char(b, '\0');
    return ok;
}

Test(json_compact, plain_values_are_compacted)
{
    sl_buf_t b;
    sl_buf_init(&b);
    cr_expect_eq(plain("{ \"number\" : \"0x65\", \"a\": [1, -2, 0, 123456789012345, true, false, null] }", &b), 1);
    cr_expect_str_eq(b.base, "kept:{\"number\":\"0x65\",\"a\":[1,-2,0,123456789012345,true,false,null]}");
    cr_expect_eq(plain("[\"caf\xc3\xa9 \", {}]", &b), 1, "raw UTF-8 and spaces in strings are plain");
    cr_expect_str_eq(b.base, "kept:[\"caf\xc3\xa9 \",{}]");
    cr_expect_eq(plain(" 7 ", &b), 1);
    cr_expect_str_eq(b.base, "kept:7");
    sl_buf_dispose(&b);
}

Test(json_compact, values_a_tree_would_respell_are_refused)
{
    static const char *const not_plain[] = {
        "[\"a\\\"b\"]",          /* an escape: a tree decodes and re-encodes it */
        "{\"k\\u0065y\":1}",     /* ... in a key too */
        "[\"\\/\"]",
        "[1.5]",                 /* a fraction */
        "[1e3]",                 /* an exponent */
        "[1E3]",
        "[-0]",                  /* a tree prints 0 */
        "[1234567890123456]",    /* 16 digits: a tree prints 1.234567890123456e+15 */
        "{\"rentEpoch\":18446744073709551615}",
    };
    sl_buf_t b;
    sl_buf_init(&b);
    for (size_t i = 0; i < sizeof(not_plain) / sizeof(not_plain[0]); i++) {
        cr_expect_eq(plain(not_plain[i], &b), 0, "%s", not_plain[i]);
        cr_expect_str_eq(b.base, "kept:", "out untouched after %s", not_plain[i]);
    }
    sl_buf_dispose(&b);
}
