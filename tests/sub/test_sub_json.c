/* tests/sub/test_sub_json.c: sub/sub_json.c and the claim it rests on
 * (wire_json_compact_plain: a plain value's compact bytes are what a cJSON
 * parse-and-print gives), checked against cJSON itself: generated values,
 * the logs re-sent (as they are, and removed), an object without members. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "sub/sub_int.h"
#include "wire/json_compact.h"

/* ---- generated values against cJSON ---- */

static uint64_t rng = 0x9e3779b97f4a7c15u;

static unsigned next(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

static void ws(sl_buf_t *b)
{
    static const char *const w[] = {"", "", " ", "\n", "\t ", "\r\n  "};
    sl_buf_append_str(b, w[next(6)]);
}

/* A random JSON value; plain: only plain strings and numbers, else any. */
static void gen(sl_buf_t *b, int depth, int plain)
{
    static const char *const strs[] = {"\"0x65\"", "\"\"", "\"a b\"", "\"caf\xc3\xa9\"", "\"\\\"q\\\"\"",
                                       "\"\\u00e9\"", "\"a\\/b\"", "\"tab\\t\"", "\"\\u001F\""};
    static const char *const nums[] = {"0", "-1", "42", "2147483647", "2147483648", "-2147483649",
                                       "123456789012345", "-999999999999999", "1.5", "1e3", "-0",
                                       "1234567890123456", "18446744073709551615", "0.1", "1E-2"};
    ws(b);
    unsigned k = next(depth > 3 ? 4 : 6);
    switch (k) {
    case 0:
        sl_buf_append_str(b, strs[next(plain ? 4 : 9)]);
        break;
    case 1:
        sl_buf_append_str(b, nums[next(plain ? 8 : 15)]);
        break;
    case 2:
        sl_buf_append_str(b, (const char *[]){"true", "false", "null"}[next(3)]);
        break;
    case 3:
        sl_buf_append_str(b, "\"s\"");
        break;
    case 4:
    case 5: {
        int obj = k == 4;
        unsigned n = next(4);
        sl_buf_append_char(b, obj ? '{' : '[');
        for (unsigned i = 0; i < n; i++) {
            if (i > 0)
                sl_buf_append_char(b, ',');
            if (obj) {
                ws(b);
                sl_buf_printf(b, "\"%c\"", "abcab"[next(5)]); /* repeats on purpose */
                ws(b);
                sl_buf_append_char(b, ':');
            }
            gen(b, depth + 1, plain);
        }
        ws(b);
        sl_buf_append_char(b, obj ? '}' : ']');
    }
    }
    ws(b);
}

static char *tree_print(const char *text)
{
    cJSON *t = cJSON_Parse(text);
    cr_assert_not_null(t, "cJSON reads %s", text);
    char *s = cJSON_PrintUnformatted(t);
    cJSON_Delete(t);
    return s;
}

Test(sub_json, a_plain_value_s_compact_bytes_are_cjson_s_print)
{
    size_t plain = 0, refused = 0;
    for (int round = 0; round < 4000; round++) {
        sl_buf_t in, out;
        sl_buf_init(&in);
        sl_buf_init(&out);
        gen(&in, 0, round % 2);
        sl_buf_append_char(&in, '\0');
        char *want = tree_print(in.base);
        if (wire_json_compact_plain(in.base, (wire_span_t){0, (uint32_t)strlen(in.base)}, &out)) {
            plain++;
            cr_assert(out.len == strlen(want) && memcmp(out.base, want, out.len) == 0, "%s\n-> %.*s\ntree %s", in.base,
                      (int)out.len, out.base, want);
        } else {
            refused++;
            cr_assert_eq(out.len, 0);
        }
        free(want);
        sl_buf_dispose(&in);
        sl_buf_dispose(&out);
    }
    cr_expect_gt(plain, 1000);
    cr_expect_gt(refused, 100, "the generator makes values that are not plain too");
}

/* ---- logs ---- */

typedef struct got {
    sl_buf_t all;                 /* each text on its own line */
    size_t n;
} got_t;

static void collect(void *arg, const char *text, size_t len)
{
    got_t *g = arg;
    sl_buf_append(&g->all, text, len);
    sl_buf_append_char(&g->all, '\n');
    g->n++;
}

/* What sub_eth.c sent for logs before the scanner: a tree's print of each. */
static char *tree_logs(const char *logs, int removed)
{
    sl_buf_t b;
    sl_buf_init(&b);
    cJSON *arr = cJSON_Parse(logs);
    int n = cJSON_GetArraySize(arr);
    for (int k = 0; k < n; k++) {
        cJSON *log = cJSON_GetArrayItem(arr, removed ? n - 1 - k : k);
        if (removed) {
            cJSON_DeleteItemFromObjectCaseSensitive(log, "removed");
            cJSON_AddBoolToObject(log, "removed", 1);
        }
        char *s = cJSON_PrintUnformatted(log);
        sl_buf_append_str(&b, s);
        sl_buf_append_char(&b, '\n');
        free(s);
    }
    cJSON_Delete(arr);
    sl_buf_append_char(&b, '\0');
    return b.base;
}

static void expect_logs_as_tree(const char *logs)
{
    for (int removed = 0; removed < 2; removed++) {
        got_t g = {.n = 0};
        sl_buf_init(&g.all);
        size_t n = sub_json_each_log(logs, strlen(logs), removed, collect, &g);
        sl_buf_append_char(&g.all, '\0');
        char *want = tree_logs(logs, removed);
        cr_expect_str_eq(g.all.base, want, "%s (removed %d)", logs, removed);
        cr_expect_eq(n, g.n);
        free(want);
        sl_buf_dispose(&g.all);
    }
}

Test(sub_json, logs_are_sent_as_the_tree_sent_them)
{
    static const char *const cases[] = {
        "[]",
        "[{\"address\":\"0xaa\",\"logIndex\":\"0x0\",\"removed\":false}]",
        ("[ {\"removed\": false, \"address\": \"0xaa\", \"topics\": [ \"0x1\", \"0x2\" ] },\n"
         "  {\"address\":\"0xbb\",\"removed\":false,\"data\":\"0x\"} ]"), /* one string */
        "[{\"address\":\"0xaa\"},{\"removed\":false},{}]",                       /* no removed; only removed; none */
        "[{\"removed\":false,\"x\":1,\"removed\":false}]",                        /* a repeat: the first goes */
        "[{\"address\":\"0xa\\u0061\",\"removed\":false}]",                       /* an escape: the tree */
        "[{\"blockNumber\":1.0,\"removed\":false},{\"n\":12345678901234567}]",   /* numbers the tree respells */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        expect_logs_as_tree(cases[i]);
}

Test(sub_json, generated_logs_arrays_agree_with_the_tree)
{
    for (int round = 0; round < 1000; round++) {
        sl_buf_t in;
        sl_buf_init(&in);
        sl_buf_append_char(&in, '[');
        unsigned n = next(4);
        for (unsigned i = 0; i < n; i++) {
            sl_buf_append_str(&in, i > 0 ? ",{" : "{");
            unsigned m = next(4);
            for (unsigned j = 0; j < m; j++) {
                sl_buf_printf(&in, "%s\"%s\":", j > 0 ? "," : "", (const char *[]){"removed", "address", "x"}[next(3)]);
                gen(&in, 2, round % 3 != 0);
            }
            sl_buf_append_char(&in, '}');
        }
        sl_buf_append_str(&in, "]");
        sl_buf_append_char(&in, '\0');
        expect_logs_as_tree(in.base);
        sl_buf_dispose(&in);
    }
}

Test(sub_json, an_object_without_some_members)
{
    static const char *const keys[] = {"size", "uncles"};
    const char *o = "{\"a\":1,\"size\":\"0x1\",\"uncles\":[],\"size\":\"0x2\",\"b\":{\"size\":3}}";
    sl_buf_t out;
    sl_buf_init(&out);
    cr_assert_eq(sub_json_object_without(o, (wire_span_t){0, (uint32_t)strlen(o)}, keys, 2, NULL, &out), 1);
    sl_buf_append_char(&out, '\0');
    cr_expect_str_eq(out.base, "{\"a\":1,\"size\":\"0x2\",\"b\":{\"size\":3}}", "the first of each, at the top only");
    sl_buf_reset(&out);
    const char *only = "{\"size\":1}";
    cr_assert_eq(sub_json_object_without(only, (wire_span_t){0, (uint32_t)strlen(only)}, keys, 2, "\"z\":true", &out), 1);
    sl_buf_append_char(&out, '\0');
    cr_expect_str_eq(out.base, "{\"z\":true}");
    sl_buf_reset(&out);
    cr_expect_eq(sub_json_object_without("[1]", (wire_span_t){0, 3}, keys, 2, NULL, &out), 0);
    cr_expect_eq(out.len, 0);
    sl_buf_dispose(&out);
}

Test(sub_json, plain_items_of_an_array)
{
    sl_buf_t c;
    sl_buf_init(&c);
    sl_buf_append_str(&c, "x");
    wire_span_t *v = NULL;
    size_t n = 0;
    int objects = 0;
    const char *a = "[ {\"a\":1} , {} ]";
    cr_assert_eq(sub_json_plain_items(a, strlen(a), &c, &v, &n, &objects), 1);
    cr_expect_eq(n, 2);
    cr_expect_eq(objects, 1);
    cr_expect(v[0].len == 7 && memcmp(c.base + v[0].off, "{\"a\":1}", 7) == 0, "spans in c, after what it held");
    free(v);
    v = NULL;
    cr_expect_eq(sub_json_plain_items("[1,{}]", 6, &c, &v, &n, &objects), 1);
    cr_expect_eq(objects, 0);
    free(v);
    v = NULL;
    size_t len = c.len;
    cr_expect_eq(sub_json_plain_items("[1.5]", 5, &c, &v, &n, NULL), 0, "not plain");
    cr_expect_eq(sub_json_plain_items("{\"a\":1}", 7, &c, &v, &n, NULL), 0, "not an array");
    cr_expect_eq(c.len, len, "c as it was");
    cr_expect_null(v);
    sl_buf_dispose(&c);
}
