/* tests/wire/test_envelope.c: wire/envelope.h, table-driven. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "wire/envelope.h"

/* The bytes of span s of buf, NUL-terminated, in one of a few rotating buffers. */
static const char *span_str(const char *buf, wire_span_t s)
{
    static char out[4][4096];
    static unsigned next;
    char *o = out[next++ % 4];
    snprintf(o, sizeof out[0], "%.*s", (int)s.len, buf + s.off);
    return o;
}

static void expect_span(const char *row, const char *field, const char *buf, wire_span_t s, const char *want)
{
    if (!want) {
        cr_expect_eq(s.len, 0, "%s: %s should be absent, is '%s'", row, field, span_str(buf, s));
        return;
    }
    cr_expect_str_eq(span_str(buf, s), want, "%s: %s", row, field);
}

/* ---- envelopes ------------------------------------------------------- */

typedef struct env_case {
    const char *in;
    size_t len; /* 0: strlen(in) */
    sl_err_t err;
    const char *jsonrpc, *id, *method, *params, *result, *error;
    uint32_t nmembers;
} env_case_t;

#define OK(in, n, ...) {in, 0, SL_OK, __VA_ARGS__, .nmembers = n}
#define BAD(in, e)     {in, 0, SL_ERR_##e}
static const env_case_t env_cases[] = {
    /* answers as providers send them */
    OK("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"0x10d4f3a\"}", 3,
       .jsonrpc = "\"2.0\"", .id = "1", .result = "\"0x10d4f3a\""),
    OK("{\"jsonrpc\":\"2.0\",\"result\":{\"number\":\"0x1\",\"transactions\":[]},\"id\":1}", 3,
       .jsonrpc = "\"2.0\"", .id = "1", .result = "{\"number\":\"0x1\",\"transactions\":[]}"),
    OK("{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32000,\"message\":\"execution reverted\","
       "\"data\":\"0x08c379a0\"}}", 3, .jsonrpc = "\"2.0\"", .id = "7",
       .error = "{\"code\":-32000,\"message\":\"execution reverted\",\"data\":\"0x08c379a0\"}"),
    OK("{\"jsonrpc\":\"2.0\",\"id\":\"abc-1\",\"result\":null}", 3, .jsonrpc = "\"2.0\"", .id = "\"abc-1\"",
       .result = "null"),
    OK("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"Parse error\"}}", 3,
       .jsonrpc = "\"2.0\"", .id = "null", .error = "{\"code\":-32700,\"message\":\"Parse error\"}"),
    OK("{\"id\":123456789012345678901234567890,\"result\":true}", 2, .id = "123456789012345678901234567890",
       .result = "true"),
    OK("{\"id\":-5,\"result\":false}", 2, .id = "-5", .result = "false"),
    OK("{\"id\":1.5e+3,\"result\":0}", 2, .id = "1.5e+3", .result = "0"),
    OK("{\"id\":-0.0E-0,\"result\":-0}", 2, .id = "-0.0E-0", .result = "-0"),
    OK("{\"jsonrpc\":\"2.0\",\"method\":\"eth_getBalance\",\"params\":[\"0xabc\",\"latest\"],\"id\":3}", 4,
       .jsonrpc = "\"2.0\"", .id = "3", .method = "\"eth_getBalance\"", .params = "[\"0xabc\",\"latest\"]"),
    OK("{\"jsonrpc\":\"2.0\",\"result\":{\"context\":{\"slot\":1},\"value\":{\"lamports\":5,\"data\":[\"\","
       "\"base64\"],\"executable\":false,\"rentEpoch\":18446744073709551615}},\"id\":1}", 3,
       .jsonrpc = "\"2.0\"", .id = "1",
       .result = "{\"context\":{\"slot\":1},\"value\":{\"lamports\":5,\"data\":[\"\",\"base64\"],"
                 "\"executable\":false,\"rentEpoch\":18446744073709551615}}"),
    OK(" \r\n\t{ \"id\" : 1 , \"result\" :\n[ 1 , 2 ] \t}\r\n ", 2, .id = "1", .result = "[ 1 , 2 ]"),
    OK("{\"result\":{\"id\":5,\"x\":{\"id\":6}},\"id\":7}", 2, .id = "7", .result = "{\"id\":5,\"x\":{\"id\":6}}"),
    OK("{\"method\":\"m\",\"params\":{\"result\":1,\"error\":2,\"id\":3}}", 2, .method = "\"m\"",
       .params = "{\"result\":1,\"error\":2,\"id\":3}"),
    OK("{}", 0, .id = NULL),
    OK("{\"a\":1,\"b\":[],\"id\":2}", 3, .id = "2"),
    OK("{\"i\\u0064\":1}", 1, .id = "1"),       /* an escaped key is that key, as nodes read it */
    OK("{\"x\":1,\"x\":2}", 2, .id = NULL),     /* only the six keys must be unique */
    OK("{\"\\u0069\\u0064\":5,\"re\\u0073ult\":[]}", 2, .id = "5", .result = "[]"),
    OK("{\"idd\":1,\"i\":2,\"\\u0069\\u0064\\u0064\":3}", 3, .id = NULL),
    OK("{\"\\u006aaaaaaaaaaaaaaaaaaaaaaaaaaa\\u0000\":1}", 1, .id = NULL), /* too long to be a name */
    OK("{\"\":1}", 1, .id = NULL),
    OK("{\"result\":\"h\\u00e9llo \\ud83d\\ude00 h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80\"}", 1,
       .result = "\"h\\u00e9llo \\ud83d\\ude00 h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80\""),
    OK("{\"result\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u0000\\u001F\\uFFFF\\uDBFF\\uDFFF\"}", 1,
       .result = "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u0000\\u001F\\uFFFF\\uDBFF\\uDFFF\""),
    OK("{\"result\":\"\x7f \xf4\x8f\xbf\xbf \xef\xbf\xbf \xed\x9f\xbf \xee\x80\x80 \xc2\x80\"}", 1,
       .result = "\"\x7f \xf4\x8f\xbf\xbf \xef\xbf\xbf \xed\x9f\xbf \xee\x80\x80 \xc2\x80\""),
    OK("{\"error\":{\"code\":1},\"result\":[{}],\"method\":\"x\",\"params\":{},\"jsonrpc\":1,\"id\":{}}", 6,
       .jsonrpc = "1", .id = "{}", .method = "\"x\"", .params = "{}", .result = "[{}]",
       .error = "{\"code\":1}"),
    /* duplicates of the six keys */
    BAD("{\"id\":1,\"id\":2}", PARSE),
    BAD("{\"result\":1,\"error\":{},\"result\":2}", PARSE),
    BAD("{\"jsonrpc\":\"2.0\",\"jsonrpc\":\"2.0\"}", PARSE),
    /* the same key to a node: escaped, in another case, or cut by a NUL */
    BAD("{\"id\":1,\"i\\u0064\":2}", PARSE), BAD("{\"ID\":1}", PARSE), BAD("{\"Result\":1}", PARSE),
    BAD("{\"mEthod\":\"x\"}", PARSE), BAD("{\"JSONRPC\":\"2.0\"}", PARSE), BAD("{\"id\\u0000\":1}", PARSE),
    BAD("{\"\\u0045rror\":{}}", PARSE),
    BAD("{\"id\":1,\"id\":", PARSE), BAD("{\"id\":1,\"id\"", PARSE), BAD("{\"id\":1, \"id\" ", PARSE),
    /* not one object */
    BAD("[]", PARSE), BAD("\"x\"", PARSE), BAD("1", PARSE), BAD("null", PARSE),
    BAD("", TRUNCATED), BAD("   ", TRUNCATED), BAD("\r\n\t", TRUNCATED),
    BAD("{} x", PARSE), BAD("{}{}", PARSE), BAD("{}]", PARSE), BAD("{\"id\":1}}", PARSE),
    {"{}\0", 3, SL_ERR_PARSE},
    /* structure */
    BAD("{\"id\":1,}", PARSE), BAD("{\"result\":[1,2,]}", PARSE), BAD("{\"result\":{\"a\":1,}}", PARSE),
    BAD("{,}", PARSE), BAD("{\"result\":[,1]}", PARSE), BAD("{\"id\" 1}", PARSE),
    BAD("{\"id\":1 \"x\":2}", PARSE), BAD("{\"id\"::1}", PARSE), BAD("{id:1}", PARSE),
    BAD("{'id':1}", PARSE), BAD("{\"result\":{\"a\"}}", PARSE), BAD("{\"result\":[1}", PARSE),
    BAD("{\"result\":{\"a\":1]}", PARSE), BAD("{\"result\":[1 2]}", PARSE), BAD("{\"id\":}", PARSE),
    /* strings */
    BAD("{\"result\":\"\\x\"}", PARSE), BAD("{\"result\":\"\\U0041\"}", PARSE),
    BAD("{\"result\":\"\\u12G4\"}", PARSE), BAD("{\"result\":\"\\ud800\"}", PARSE),
    BAD("{\"result\":\"\\udc00\"}", PARSE), BAD("{\"result\":\"\\uDFFF\"}", PARSE),
    BAD("{\"result\":\"\\udbff\"}", PARSE), BAD("{\"result\":\"\\ud800\\uE000\"}", PARSE),
    BAD("{\"result\":\"\\ud800\\u0041\"}", PARSE),
    BAD("{\"result\":\"\\ud800x\"}", PARSE), BAD("{\"result\":\"\\ud800\\n\"}", PARSE),
    BAD("{\"result\":\"\\ud800\\ud800\"}", PARSE), BAD("{\"result\":\"\\'\"}", PARSE),
    BAD("{\"result\":\"\\0\"}", PARSE), BAD("{\"result\":\"\\u00\"}", PARSE),
    /* UTF-8: overlong, surrogates, beyond U+10FFFF, stray and cut sequences */
    BAD("{\"result\":\"\xc0\xaf\"}", PARSE), BAD("{\"result\":\"\xc1\xbf\"}", PARSE),
    BAD("{\"result\":\"\xe0\x80\xaf\"}", PARSE), BAD("{\"result\":\"\xf0\x80\x80\xaf\"}", PARSE),
    BAD("{\"result\":\"\xed\xa0\x80\"}", PARSE), BAD("{\"result\":\"\xed\xbf\xbf\"}", PARSE),
    BAD("{\"result\":\"\xf4\x90\x80\x80\"}", PARSE), BAD("{\"result\":\"\xf5\x80\x80\x80\"}", PARSE),
    BAD("{\"result\":\"\x80\"}", PARSE), BAD("{\"result\":\"\xe2\x82\"}", PARSE),
    BAD("{\"result\":\"\xff\"}", PARSE), BAD("{\"result\":\"\xc3\xa9\xa9\"}", PARSE),
    BAD("{\"r\xc3sult\":1}", PARSE), BAD("{\"result\":\"\xf0\x9f\x98\"}", PARSE),
    /* control bytes */
    BAD("{\"result\":\"\x01\"}", PARSE), BAD("{\"result\":\"\x1f\"}", PARSE),
    BAD("{\"result\":\"a\nb\"}", PARSE), BAD("{\"result\":\"\t\"}", PARSE),
    {"{\"result\":\"\0\"}", 14, SL_ERR_PARSE},
    /* numbers */
    BAD("{\"id\":01}", PARSE), BAD("{\"id\":1.}", PARSE), BAD("{\"id\":.5}", PARSE), BAD("{\"id\":-}", PARSE),
    BAD("{\"id\":1e}", PARSE), BAD("{\"id\":+1}", PARSE), BAD("{\"id\":1.e5}", PARSE),
    BAD("{\"id\":-01}", PARSE), BAD("{\"id\":0x10}", PARSE), BAD("{\"id\":1e+}", PARSE),
    BAD("{\"id\":NaN}", PARSE), BAD("{\"id\":Infinity}", PARSE), BAD("{\"id\":- 1}", PARSE),
    BAD("{\"id\":1.5.5}", PARSE), BAD("{\"id\":--1}", PARSE),
    /* literals and whitespace */
    BAD("{\"result\":tru}", PARSE), BAD("{\"result\":True}", PARSE), BAD("{\"result\":nul}", PARSE),
    BAD("{\"result\":falsey}", PARSE), BAD("{\"result\":nulll}", PARSE), BAD("{\"result\":undefined}", PARSE),
    BAD("{\"id\":1\v}", PARSE), BAD("{\"id\":1\f}", PARSE), BAD("\xc2\xa0{}", PARSE), BAD("\xef\xbb\xbf{}", PARSE),
    /* input that stops early */
    BAD("{", TRUNCATED), BAD("{\"id\":1", TRUNCATED), BAD("{\"result\":\"0xab", TRUNCATED),
    BAD("{\"result\":[1,2", TRUNCATED), BAD("{\"result\":tr", TRUNCATED), BAD("{\"result\":\"\\u12", TRUNCATED),
    BAD("{\"result\":\"\\ud800", TRUNCATED), BAD("{\"result\":\"\\ud800\\", TRUNCATED),
    BAD("{\"result\":\"\\ud800\\udf", TRUNCATED), BAD("{\"result\":\"\xe2\x82", TRUNCATED),
    BAD("{\"id\":-", TRUNCATED), BAD("{\"id\":1.", TRUNCATED), BAD("{\"id\":1e", TRUNCATED),
    BAD("{\"id\":1e-", TRUNCATED), BAD("{\"id\"", TRUNCATED), BAD("{\"id\":1,", TRUNCATED),
    /* no completion of these is valid, even though they end early */
    BAD("{\"result\":\"\\udc", PARSE), BAD("{\"result\":\"\\ud800\\u00", PARSE),
    BAD("{\"result\":\"\\ud800\\ue", PARSE), BAD("{\"result\":\"\xed\xa0", PARSE),
    BAD("{\"result\":\"\xe0\x80", PARSE), BAD("{\"result\":\"\xf4\x90", PARSE),
};

Test(envelope, table)
{
    cr_assert_geq(sizeof env_cases / sizeof env_cases[0], 60);
    for (size_t i = 0; i < sizeof env_cases / sizeof env_cases[0]; i++) {
        const env_case_t *c = &env_cases[i];
        size_t len = c->len ? c->len : strlen(c->in);
        char row[64];
        snprintf(row, sizeof row, "row %zu '%.40s'", i, c->in);
        wire_envelope_t env;
        sl_err_t err = wire_envelope_scan(c->in, len, &env);
        cr_expect_eq(err, c->err, "%s: got %s, want %s", row, sl_err_name(err), sl_err_name(c->err));
        if (err != SL_OK || c->err != SL_OK)
            continue;
        expect_span(row, "jsonrpc", c->in, env.jsonrpc, c->jsonrpc);
        expect_span(row, "id", c->in, env.id, c->id);
        expect_span(row, "method", c->in, env.method, c->method);
        expect_span(row, "params", c->in, env.params, c->params);
        expect_span(row, "result", c->in, env.result, c->result);
        expect_span(row, "error", c->in, env.error, c->error);
        cr_expect_eq(env.nmembers, c->nmembers, "%s: nmembers %u", row, env.nmembers);
    }
}

/* ---- any value ------------------------------------------------------- */

typedef struct value_case {
    const char *in;
    sl_err_t err;
    wire_json_kind_t kind;
    const char *span; /* NULL: the whole input */
} value_case_t;

static const value_case_t value_cases[] = {
    {"1", SL_OK, WIRE_JSON_NUMBER},          {"-0", SL_OK, WIRE_JSON_NUMBER},
    {" 0 ", SL_OK, WIRE_JSON_NUMBER, "0"},   {"1.5e-3", SL_OK, WIRE_JSON_NUMBER},
    {"1E+2", SL_OK, WIRE_JSON_NUMBER},       {"0.0", SL_OK, WIRE_JSON_NUMBER},
    {"true", SL_OK, WIRE_JSON_TRUE},         {"false", SL_OK, WIRE_JSON_FALSE},
    {"\tnull\n", SL_OK, WIRE_JSON_NULL, "null"},
    {"\"\"", SL_OK, WIRE_JSON_STRING},       {"[]", SL_OK, WIRE_JSON_ARRAY},
    {"{}", SL_OK, WIRE_JSON_OBJECT},         {"[{\"a\":[{}]}]", SL_OK, WIRE_JSON_ARRAY},
    {"01", SL_ERR_PARSE},   {"1.", SL_ERR_TRUNCATED}, {".5", SL_ERR_PARSE},     {"-", SL_ERR_TRUNCATED},
    {"1e", SL_ERR_TRUNCATED}, {"1E-", SL_ERR_TRUNCATED}, {"+1", SL_ERR_PARSE},  {"--1", SL_ERR_PARSE},
    {"1.5.5", SL_ERR_PARSE}, {"1e5e5", SL_ERR_PARSE}, {"0x1", SL_ERR_PARSE},    {"-a", SL_ERR_PARSE},
    {"1.a", SL_ERR_PARSE},  {"1ea", SL_ERR_PARSE},    {"tr", SL_ERR_TRUNCATED}, {"trux", SL_ERR_PARSE},
    {"nulls", SL_ERR_PARSE}, {"f", SL_ERR_TRUNCATED}, {"1 2", SL_ERR_PARSE},    {"\"abc", SL_ERR_TRUNCATED},
    {"\"\\", SL_ERR_TRUNCATED}, {"[", SL_ERR_TRUNCATED}, {"[1", SL_ERR_TRUNCATED}, {"{\"a\"", SL_ERR_TRUNCATED},
    {"}", SL_ERR_PARSE},    {"]", SL_ERR_PARSE},      {",", SL_ERR_PARSE},      {":", SL_ERR_PARSE},
    {"", SL_ERR_TRUNCATED},
};

Test(validate, table)
{
    for (size_t i = 0; i < sizeof value_cases / sizeof value_cases[0]; i++) {
        const value_case_t *c = &value_cases[i];
        wire_json_kind_t kind;
        wire_span_t v;
        sl_err_t err = wire_json_validate(c->in, strlen(c->in), &kind, &v);
        cr_expect_eq(err, c->err, "'%s': got %s", c->in, sl_err_name(err));
        if (err != SL_OK || c->err != SL_OK)
            continue;
        cr_expect_eq(kind, c->kind, "'%s': kind %d", c->in, kind);
        cr_expect_str_eq(span_str(c->in, v), c->span ? c->span : c->in, "'%s'", c->in);
        cr_expect_eq(wire_json_kind(c->in, v), c->kind, "'%s'", c->in);
    }
}

Test(validate, kind_of_absent_span)
{
    cr_expect_eq(wire_json_kind("1", (wire_span_t){0, 0}), WIRE_JSON_NONE);
    cr_expect_eq(wire_json_kind("x", (wire_span_t){0, 1}), WIRE_JSON_NONE);
}

/* ---- arrays ------------------------------------------------------------ */

typedef struct array_case {
    const char *in;
    size_t max;
    sl_err_t err;
    size_t nitems;
    const char *items[5];
} array_case_t;

static const array_case_t array_cases[] = {
    {"[]", 8, SL_OK, 0},
    {" [ \n] ", 8, SL_OK, 0},
    {"[1,\"a\",{\"id\":1},[2],null]", 8, SL_OK, 5, {"1", "\"a\"", "{\"id\":1}", "[2]", "null"}},
    {" [ 1 , 2 ] ", 8, SL_OK, 2, {"1", "2"}},
    {"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_blockNumber\"},{\"jsonrpc\":\"2.0\",\"id\":2,"
     "\"method\":\"eth_chainId\",\"params\":[]}]", 8, SL_OK, 2,
     {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_blockNumber\"}",
      "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"eth_chainId\",\"params\":[]}"}},
    {"[1,2,3]", 3, SL_OK, 3, {"1", "2", "3"}},
    {"[1,2,3]", 2, SL_ERR_TOO_LARGE, 3},
    {"[1,2,3", 2, SL_ERR_TOO_LARGE, 3},
    {"[]", 0, SL_OK, 0},
    {"[1]", 0, SL_ERR_TOO_LARGE, 1},
    {"{}", 8, SL_ERR_PARSE},    {"1", 8, SL_ERR_PARSE},         {"[1,]", 8, SL_ERR_PARSE},
    {"[,1]", 8, SL_ERR_PARSE},  {"[1 2]", 8, SL_ERR_PARSE},     {"[]]", 8, SL_ERR_PARSE},
    {"[][]", 8, SL_ERR_PARSE},  {"[1}", 8, SL_ERR_PARSE},       {"", 8, SL_ERR_TRUNCATED},
    {"[", 8, SL_ERR_TRUNCATED}, {"[1", 8, SL_ERR_TRUNCATED},    {"[1,", 8, SL_ERR_TRUNCATED},
    {"[\"a", 8, SL_ERR_TRUNCATED},
};

Test(scan_array, table)
{
    for (size_t i = 0; i < sizeof array_cases / sizeof array_cases[0]; i++) {
        const array_case_t *c = &array_cases[i];
        wire_span_t items[8];
        size_t n = 99;
        sl_err_t err = wire_envelope_scan_array(c->in, strlen(c->in), items, c->max, &n);
        cr_expect_eq(err, c->err, "'%s' max %zu: got %s", c->in, c->max, sl_err_name(err));
        if (err == SL_OK || err == SL_ERR_TOO_LARGE)
            cr_expect_eq(n, c->nitems, "'%s': %zu items", c->in, n);
        for (size_t k = 0; err == SL_OK && k < n && k < c->nitems; k++)
            cr_expect_str_eq(span_str(c->in, items[k]), c->items[k], "'%s' item %zu", c->in, k);
    }
}

/* ---- input that stops early --------------------------------------------- */

static const char *const whole_objects[] = {
    "{\"jsonrpc\":\"2.0\",\"id\":-12.5e+3,\"result\":[true,false,null,{\"a\":[]},\"x\\u00e9\\ud83d\\ude00\"]}",
    "{ \"error\" : { \"code\" : -32000 , \"message\" : \"h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \\\"\\\\\" } }",
    ("{\"result\":\"0x0000000000000000000000000000000000000000000000000000000000000001"
     "00000000000000000000000000000000000000000000000000000000000000ff\",\"id\":\"a\"}"),
    "{\"result\":[[[[{\"a\":{\"b\":[0,-0,0.5,1E9,1e-9]}}]]]],\"id\":1234567890}",
};

Test(truncated, every_prefix_of_an_object)
{
    for (size_t d = 0; d < sizeof whole_objects / sizeof whole_objects[0]; d++) {
        const char *doc = whole_objects[d];
        size_t len = strlen(doc);
        wire_envelope_t env;
        wire_json_kind_t kind;
        wire_span_t v;
        cr_assert_eq(wire_envelope_scan(doc, len, &env), SL_OK, "document %zu", d);
        for (size_t n = 0; n < len; n++) {
            sl_err_t err = wire_envelope_scan(doc, n, &env);
            cr_expect_eq(err, SL_ERR_TRUNCATED, "document %zu cut at %zu: %s", d, n, sl_err_name(err));
            err = wire_json_validate(doc, n, &kind, &v);
            cr_expect_eq(err, SL_ERR_TRUNCATED, "document %zu cut at %zu: %s", d, n, sl_err_name(err));
        }
    }
}

Test(truncated, every_prefix_of_a_batch)
{
    const char *doc = "[{\"id\":1,\"method\":\"eth_chainId\"}, \"\\ud800\\udc00\", 1.0e1, []]";
    size_t len = strlen(doc), n;
    wire_span_t items[4];
    cr_assert_eq(wire_envelope_scan_array(doc, len, items, 4, &n), SL_OK);
    for (size_t cut = 0; cut < len; cut++) {
        sl_err_t err = wire_envelope_scan_array(doc, cut, items, 4, &n);
        cr_expect_eq(err, SL_ERR_TRUNCATED, "cut at %zu: %s", cut, sl_err_name(err));
    }
}

/* The string fast paths work on 16 and 8 bytes at a time: put each kind of
 * special byte at every offset of strings of every length around those. */
Test(strings, special_byte_at_every_offset)
{
    static const struct {
        const char *piece;
        sl_err_t err, cut_err; /* the whole document; cut right after the piece */
    } pieces[] = {
        {"\"", SL_ERR_PARSE, SL_ERR_TRUNCATED}, {"\x01", SL_ERR_PARSE, SL_ERR_PARSE},
        {"\x1f", SL_ERR_PARSE, SL_ERR_PARSE},   {"\x80", SL_ERR_PARSE, SL_ERR_PARSE},
        {"\xff", SL_ERR_PARSE, SL_ERR_PARSE},   {"\xc3\xa9", SL_OK, SL_ERR_TRUNCATED},
        {"\\n", SL_OK, SL_ERR_TRUNCATED},       {"\\u20ac", SL_OK, SL_ERR_TRUNCATED},
        {"\x7f", SL_OK, SL_ERR_TRUNCATED},      {" ", SL_OK, SL_ERR_TRUNCATED},
        {"\\x", SL_ERR_PARSE, SL_ERR_PARSE},    {"\xe2\x82", SL_ERR_PARSE, SL_ERR_TRUNCATED},
    };
    char doc[128];
    for (size_t k = 0; k < sizeof pieces / sizeof pieces[0]; k++)
        for (int n = 0; n < 48; n++)
            for (int at = 0; at <= n; at++) {
                int len = snprintf(doc, sizeof doc, "{\"result\":\"%.*s%s%.*s\"}", at,
                                   "0123456789abcdef0123456789abcdef0123456789abcdef", pieces[k].piece, n - at,
                                   "fedcba9876543210fedcba9876543210fedcba9876543210");
                wire_envelope_t env;
                sl_err_t err = wire_envelope_scan(doc, (size_t)len, &env);
                cr_expect_eq(err, pieces[k].err, "piece %zu, %d + %d bytes: %s", k, at, n - at, sl_err_name(err));
                if (err == SL_OK)
                    cr_expect_eq(env.result.len, (uint32_t)(len - 11), "piece %zu at %d", k, at);
                /* the same string cut just after the piece */
                int cut = 11 + at + (int)strlen(pieces[k].piece);
                err = wire_envelope_scan(doc, (size_t)cut, &env);
                cr_expect_eq(err, pieces[k].cut_err, "piece %zu cut %d: %s", k, cut, sl_err_name(err));
            }
}

/* ---- nesting ---------------------------------------------------------- */

/* n nested containers around a 1, every third one an object; the closing
 * bracket of level close_wrong_at is the wrong kind. */
static size_t nest(char *out, int n, int close_wrong_at)
{
    size_t len = 0;
    for (int i = 0; i < n; i++)
        len += (size_t)sprintf(out + len, "%s", i % 3 == 1 ? "{\"a\":" : "[");
    out[len++] = '1';
    for (int i = n - 1; i >= 0; i--)
        out[len++] = (i % 3 == 1) != (i == close_wrong_at) ? '}' : ']';
    out[len] = '\0';
    return len;
}

Test(depth, limit_is_128)
{
    static char doc[2048];
    wire_json_kind_t kind;
    wire_span_t v;
    size_t len = nest(doc, WIRE_JSON_MAX_DEPTH, -1);
    cr_expect_eq(wire_json_validate(doc, len, &kind, &v), SL_OK);
    cr_expect_eq(v.len, len);
    len = nest(doc, WIRE_JSON_MAX_DEPTH + 1, -1);
    cr_expect_eq(wire_json_validate(doc, len, &kind, &v), SL_ERR_TOO_DEEP);
    /* the bracket stack must remember the kind at every level, across its two words */
    for (int wrong = 0; wrong < WIRE_JSON_MAX_DEPTH; wrong++) {
        len = nest(doc, WIRE_JSON_MAX_DEPTH, wrong);
        cr_expect_eq(wire_json_validate(doc, len, &kind, &v), SL_ERR_PARSE, "wrong bracket at %d", wrong);
    }
}

Test(depth, envelope_counts_its_own_object)
{
    static char doc[2048];
    wire_envelope_t env;
    for (int n = WIRE_JSON_MAX_DEPTH - 1; n <= WIRE_JSON_MAX_DEPTH; n++) {
        size_t len = (size_t)sprintf(doc, "{\"result\":");
        len += nest(doc + len, n, -1);
        len += (size_t)sprintf(doc + len, ",\"id\":1}");
        sl_err_t want = n < WIRE_JSON_MAX_DEPTH ? SL_OK : SL_ERR_TOO_DEEP;
        cr_expect_eq(wire_envelope_scan(doc, len, &env), want, "%d levels inside", n);
    }
}

Test(size, four_gib_is_too_large)
{
    static const char doc[] = "{}";
    size_t huge = (size_t)UINT32_MAX + 1, n;
    wire_envelope_t env;
    wire_span_t items[1], v;
    wire_json_kind_t kind;
    cr_expect_eq(wire_envelope_scan(doc, huge, &env), SL_ERR_TOO_LARGE);
    cr_expect_eq(wire_envelope_scan_array(doc, huge, items, 1, &n), SL_ERR_TOO_LARGE);
    cr_expect_eq(wire_json_validate(doc, huge, &kind, &v), SL_ERR_TOO_LARGE);
}

/* ---- error objects ------------------------------------------------------ */

typedef struct error_case {
    const char *in;
    sl_err_t err;
    int has_code;
    int64_t code;
    const char *message;
    const char *data; /* NULL: absent */
} error_case_t;

static const error_case_t error_cases[] = {
    {"{\"code\":-32000,\"message\":\"execution reverted\",\"data\":\"0x08c379a0\"}", SL_OK, 1, -32000,
     "execution reverted", "\"0x08c379a0\""},
    {"{\"code\":3,\"message\":\"execution reverted: \\u0041BC\",\"data\":{\"x\":[1]}}", SL_OK, 1, 3,
     "execution reverted: ABC", "{\"x\":[1]}"},
    {" { \"data\" : null , \"message\" : \"a\\\"b\\\\c\\nd\\u00e9\\ud83d\\ude00\\/\" , \"code\" : -0 } ", SL_OK, 1,
     0, "a\"b\\c\nd\xc3\xa9\xf0\x9f\x98\x80/", "null"},
    {"{\"code\":1.5,\"message\":\"m\"}", SL_OK, 0, 0, "m", NULL},
    {"{\"code\":1e3}", SL_OK, 0, 0, "", NULL},
    {"{\"code\":\"-32000\"}", SL_OK, 0, 0, "", NULL},
    {"{\"code\":9223372036854775808}", SL_OK, 0, 0, "", NULL},
    {"{\"code\":-9223372036854775808}", SL_OK, 1, INT64_MIN, "", NULL},
    {"{\"code\":9223372036854775807}", SL_OK, 1, INT64_MAX, "", NULL},
    {"{\"message\":42,\"data\":[]}", SL_OK, 0, 0, "", "[]"},
    {"{\"message\":null}", SL_OK, 0, 0, "", NULL},
    {"{}", SL_OK, 0, 0, "", NULL},
    {"{\"code\":1,\"code\":2,\"message\":\"a\",\"message\":\"b\",\"data\":1,\"data\":2}", SL_OK, 1, 1, "a", "1"},
    {"{\"error\":{\"code\":5}}", SL_OK, 0, 0, "", NULL},
    {"\"oops\"", SL_ERR_PARSE},
    {"[{\"code\":1}]", SL_ERR_PARSE},
    {"{\"code\":1", SL_ERR_TRUNCATED},
};

Test(error, table)
{
    for (size_t i = 0; i < sizeof error_cases / sizeof error_cases[0]; i++) {
        const error_case_t *c = &error_cases[i];
        wire_rpc_error_t e;
        sl_err_t err = wire_envelope_error(c->in, (wire_span_t){0, (uint32_t)strlen(c->in)}, &e);
        if (*c->in == ' ') /* as a scan would hand it over: trimmed */
            err = wire_envelope_error(c->in, (wire_span_t){1, (uint32_t)strlen(c->in) - 2}, &e);
        cr_expect_eq(err, c->err, "'%s': %s", c->in, sl_err_name(err));
        if (err != SL_OK || c->err != SL_OK)
            continue;
        cr_expect_eq(e.has_code, c->has_code, "'%s'", c->in);
        if (c->has_code)
            cr_expect_eq(e.code, c->code, "'%s': code %lld", c->in, (long long)e.code);
        cr_expect_str_eq(e.message, c->message, "'%s'", c->in);
        expect_span(c->in, "data", c->in, e.data, c->data);
    }
}

Test(error, inside_an_answer)
{
    const char *doc = "{\"jsonrpc\":\"2.0\",\"id\":9,\"error\":{\"code\":-32602,\"message\":\"invalid params\","
                      "\"data\":{\"field\":\"to\"}}}";
    wire_envelope_t env;
    wire_rpc_error_t e;
    cr_assert_eq(wire_envelope_scan(doc, strlen(doc), &env), SL_OK);
    cr_assert_eq(wire_envelope_error(doc, env.error, &e), SL_OK);
    cr_expect_eq(e.has_code, 1);
    cr_expect_eq(e.code, -32602);
    cr_expect_str_eq(e.message, "invalid params");
    cr_expect_str_eq(span_str(doc, e.data), "{\"field\":\"to\"}");
    cr_expect_eq(wire_envelope_error(doc, env.id, &e), SL_ERR_PARSE);
    cr_expect_eq(wire_envelope_error(doc, env.result, &e), SL_ERR_PARSE);
}

/* ---- one member of an object, by name ---- */

typedef struct member_case {
    const char *in;
    const char *key;
    const char *want;             /* the value's bytes, NULL: absent */
} member_case_t;

static const member_case_t member_cases[] = {
    {"{\"a\":1,\"b\":[2,{\"a\":3}]}", "b", "[2,{\"a\":3}]"},
    {"{\"a\":1,\"b\":2}", "a", "1"},
    {"{ \"a\" : \"x y\" }", "a", "\"x y\""},
    {"{\"a\":1,\"a\":2}", "a", "1"},                       /* the first of duplicates */
    {"{\"a\":{\"b\":1}}", "b", NULL},                      /* members only, not nested ones */
    {"{\"ab\":1}", "a", NULL},
    {"{\"a\":1}", "ab", NULL},
    {"{\"\\u0061\":1}", "a", NULL},                          /* raw bytes: an escaped key never matches */
    {"{\"A\":1}", "a", NULL},
    {"{}", "a", NULL},
    {"[\"a\",1]", "a", NULL},                                /* not an object */
    {"\"a\"", "a", NULL},
    {"{\"b\":1,\"a\"}", "a", NULL},                          /* malformed before it */
    {"{\"a\":1,oops}", "a", "1"},                            /* ... after it: found first */
};

Test(member, table)
{
    for (size_t i = 0; i < sizeof member_cases / sizeof member_cases[0]; i++) {
        const member_case_t *c = &member_cases[i];
        wire_span_t v = wire_json_member(c->in, (wire_span_t){0, (uint32_t)strlen(c->in)}, c->key);
        if (c->want == NULL)
            cr_expect_eq(v.len, 0, "'%s' [%s]: got '%s'", c->in, c->key, span_str(c->in, v));
        else
            cr_expect_str_eq(span_str(c->in, v), c->want, "'%s' [%s]", c->in, c->key);
    }
}

Test(member, inside_a_larger_buffer)
{
    const char *doc = "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32005,\"message\":\"limit\","
                      "\"data\":{\"backoff_seconds\":30.0}}}";
    wire_envelope_t env;
    cr_assert_eq(wire_envelope_scan(doc, strlen(doc), &env), SL_OK);
    wire_span_t data = wire_json_member(doc, env.error, "data");
    cr_expect_str_eq(span_str(doc, wire_json_member(doc, data, "backoff_seconds")), "30.0");
    cr_expect_str_eq(span_str(doc, wire_json_member(doc, env.error, "code")), "-32005");
    cr_expect_eq(wire_json_member(doc, env.result, "code").len, 0, "an absent span");
    cr_expect_eq(wire_json_member(NULL, env.error, "code").len, 0, "no buffer");
}

/* A message longer than 255 bytes is cut where a character starts. */
Test(error, long_message_cut_on_a_character)
{
    static const struct {
        const char *unit; /* repeated */
        size_t want;      /* bytes kept */
    } cases[] = {
        {"a", 255}, {"\xc3\xa9", 254}, {"\xe2\x82\xac", 255}, {"\xf0\x9f\x98\x80", 252},
        {"\\u00e9", 254}, {"\\ud83d\\ude00", 252}, {"\\n", 255},
    };
    static char doc[4096];
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        size_t len = (size_t)sprintf(doc, "{\"code\":1,\"message\":\"");
        for (int i = 0; i < 300; i++)
            len += (size_t)sprintf(doc + len, "%s", cases[k].unit);
        len += (size_t)sprintf(doc + len, "\"}");
        wire_rpc_error_t e;
        cr_assert_eq(wire_envelope_error(doc, (wire_span_t){0, (uint32_t)len}, &e), SL_OK);
        cr_expect_eq(strlen(e.message), cases[k].want, "unit %zu: kept %zu", k, strlen(e.message));
        cr_expect_eq(e.has_code, 1);
    }
    /* exactly 255 fits; the 4-byte character that would end at 257 does not */
    size_t len = (size_t)sprintf(doc, "{\"message\":\"%0255d\"}", 0);
    wire_rpc_error_t e;
    cr_assert_eq(wire_envelope_error(doc, (wire_span_t){0, (uint32_t)len}, &e), SL_OK);
    cr_expect_eq(strlen(e.message), 255);
    len = (size_t)sprintf(doc, "{\"message\":\"%0253d\\ud83d\\ude00\"}", 0);
    cr_assert_eq(wire_envelope_error(doc, (wire_span_t){0, (uint32_t)len}, &e), SL_OK);
    cr_expect_eq(strlen(e.message), 253);
}

/* ---- tokens ------------------------------------------------------------- */

Test(tokens, string)
{
    static const struct {
        const char *in;
        size_t cap;
        sl_err_t err;
        const char *want;
    } cases[] = {
        {"\"abc\"", 16, SL_OK, "abc"},
        {"\"\"", 1, SL_OK, ""},
        {"\"\\u00e9\\u20AC\\ud83d\\ude00\"", 16, SL_OK, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"},
        {"\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", 16, SL_OK, "\"\\/\b\f\n\r\t"},
        {"\"abcdef\"", 4, SL_ERR_TOO_LARGE, "abc"},
        {"\"abc\"", 4, SL_OK, "abc"},
        {"\"\xc3\xa9\"", 2, SL_ERR_TOO_LARGE, ""},
        {"\"a\xe2\x82\xac\"", 4, SL_ERR_TOO_LARGE, "a"},
        {"\"a\\n\"", 2, SL_ERR_TOO_LARGE, "a"},
        {"123", 16, SL_ERR_PARSE, ""},
        {"\"abc", 16, SL_ERR_PARSE, ""},
        {"\"a\"b\"", 16, SL_ERR_PARSE, ""},
        {"\"\\x\"", 16, SL_ERR_PARSE, ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[16];
        memset(out, 'Z', sizeof out);
        sl_err_t err = wire_json_string(cases[i].in, (wire_span_t){0, (uint32_t)strlen(cases[i].in)}, out,
                                          cases[i].cap);
        cr_expect_eq(err, cases[i].err, "'%s': %s", cases[i].in, sl_err_name(err));
        cr_expect_str_eq(out, cases[i].want, "'%s'", cases[i].in);
    }
    char out[1];
    cr_expect_eq(wire_json_string("\"\"", (wire_span_t){0, 2}, out, 0), SL_ERR_INVALID);
}

Test(tokens, has_nul)
{
    static const struct {
        const char *in;
        int nul;
    } cases[] = {
        {"\"a\\u0000\"", 1}, {"\"\\u00000\"", 1}, {"\"a\\\\u0000\"", 0}, {"\"abc\"", 0},
        {"\"\\u0001\\n\"", 0}, {"\"\\\\\\u0000\"", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wire_span_t s = {0, (uint32_t)strlen(cases[i].in)};
        cr_expect_eq(wire_json_has_nul(cases[i].in, s), cases[i].nul, "%s", cases[i].in);
    }
}

Test(tokens, int64)
{
    static const struct {
        const char *in;
        sl_err_t err;
        int64_t want;
    } cases[] = {
        {"0", SL_OK, 0},
        {"-0", SL_OK, 0},
        {"42", SL_OK, 42},
        {"-42", SL_OK, -42},
        {"9223372036854775807", SL_OK, INT64_MAX},
        {"-9223372036854775808", SL_OK, INT64_MIN},
        {"9223372036854775808", SL_ERR_RANGE},
        {"-9223372036854775809", SL_ERR_RANGE},
        {"99999999999999999999", SL_ERR_RANGE},
        {"99999999999999999999.5", SL_ERR_PARSE},
        {"1.0", SL_ERR_PARSE},
        {"1e3", SL_ERR_PARSE},
        {"\"1\"", SL_ERR_PARSE},
        {"true", SL_ERR_PARSE},
        {"01", SL_ERR_PARSE},
        {"", SL_ERR_PARSE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t v = 12345;
        sl_err_t err = wire_json_int64(cases[i].in, (wire_span_t){0, (uint32_t)strlen(cases[i].in)}, &v);
        cr_expect_eq(err, cases[i].err, "'%s': %s", cases[i].in, sl_err_name(err));
        cr_expect_eq(v, err == SL_OK ? cases[i].want : 12345, "'%s': %lld", cases[i].in, (long long)v);
    }
}

Test(tokens, id_equal)
{
    static const struct {
        const char *a, *b;
        int equal;
    } cases[] = {
        {"1", "1", 1},
        {"1", "1.0", 1},
        {"1", "1e0", 1},
        {"1", "10e-1", 1},
        {"100", "1E+2", 1},
        {"0.5", "5e-1", 1},
        {"1.5", "1.50", 1},
        {"-0", "0", 1},
        {"0", "0.0e5", 1},
        {"-7", "-7.000", 1},
        {"123456789012345678901234567890", "1.2345678901234567890123456789e29", 1},
        {"\"a\"", "\"a\"", 1},
        {"null", "null", 1},
        {"1e99999999999999999999", "1e99999999999999999999", 1},
        {"\"1\"", "1", 0},
        {"\"a\"", "\"\\u0061\"", 0},
        {"1", "2", 0},
        {"-1", "1", 0},
        {"10", "1", 0},
        {"1.05", "1.5", 0},
        {"0.1", "1", 0},
        {"9223372036854775807", "9223372036854775806", 0},
        {"9007199254740993", "9007199254740992", 0},
        {"2e400", "1e400", 0},
        {"1e99999999999999999999", "10e99999999999999999998", 0},
        {"null", "0", 0},
        {"1", "", 0},
        {"", "", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wire_span_t sa = {0, (uint32_t)strlen(cases[i].a)}, sb = {0, (uint32_t)strlen(cases[i].b)};
        cr_expect_eq(wire_json_id_equal(cases[i].a, sa, cases[i].b, sb), cases[i].equal, "%s vs %s",
                     cases[i].a, cases[i].b);
        cr_expect_eq(wire_json_id_equal(cases[i].b, sb, cases[i].a, sa), cases[i].equal, "%s vs %s",
                     cases[i].b, cases[i].a);
    }
}

/* Ids every upstream echoes unchanged go up as they are; the others are
 * renumbered by the pool (jsonrpc-core answers 1.5 at id null). */
Test(tokens, id_portable)
{
    static const struct {
        const char *id;
        int portable;
    } cases[] = {
        {"0", 1},
        {"1", 1},
        {"42", 1},
        {"9007199254740991", 1}, /* 2^53 - 1 */
        {"null", 1},
        {"\"\"", 1},
        {"\"abc-123 _:/.\"", 1},
        {"\"1.5\"", 1},
        {"9007199254740992", 0}, /* 2^53: rounds in JavaScript */
        {"18446744073709551615", 0},
        {"99999999999999999999", 0},
        {"1.5", 0},
        {"1.0", 0},
        {"1e3", 0},
        {"1E3", 0},
        {"-1", 0},
        {"-0", 0},
        {"01", 0},
        {"\"caf\\u00e9\"", 0},
        {"\"a\\\"b\"", 0},
        {"\"caf\xc3\xa9\"", 0},
        {"\"tab\x7f\"", 0},
        {"true", 0},
        {"{}", 0},
        {"[1]", 0},
        {"", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wire_span_t s = {0, (uint32_t)strlen(cases[i].id)};
        cr_expect_eq(wire_json_id_portable(cases[i].id, s), cases[i].portable, "%s", cases[i].id);
    }
    /* a span inside a larger buffer */
    const char *body = "{\"id\":7,\"x\":1}";
    cr_expect_eq(wire_json_id_portable(body, (wire_span_t){6, 1}), 1);
}

/* Go's encoding/json folds a few non-ASCII letters onto ASCII ones when it
 * matches names: such a key would be read as the envelope key by geth. */
Test(envelope, go_folded_keys_are_ambiguous)
{
    static const char *const inputs[] = {
        "{\"\xc4\xb1" "d\":1,\"result\":1}",            /* dotless i */
        "{\"\xc4\xb0" "D\":1,\"result\":1}",            /* dotted capital I */
        "{\"id\":1,\"re\xc5\xbf" "ult\":1}",            /* long s */
        "{\"id\":1,\"re\\u017fult\":1}",                /* long s, escaped */
        "{\"id\":1,\"METHOD\":\"x\"}",
    };
    for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
        wire_envelope_t env;
        cr_assert_eq(wire_envelope_scan(inputs[i], strlen(inputs[i]), &env), SL_ERR_PARSE, "input %zu", i);
    }
    wire_envelope_t env;
    const char *fine = "{\"id\":1,\"result\":1,\"\xc5\xbftatus\":2}"; /* not an envelope key */
    cr_assert_eq(wire_envelope_scan(fine, strlen(fine), &env), SL_OK);
}
