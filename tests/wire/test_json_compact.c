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
