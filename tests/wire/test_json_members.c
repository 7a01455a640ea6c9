/* tests/wire/test_json_members.c: walking an object's members
 * (wire_json_each_member and its key helpers, wire/json_scan.h). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "wire/json_scan.h"

typedef struct seen {
    char keys[8][16];
    char values[8][16];
    size_t n;
    size_t stop_at;               /* answer SL_ERR_RANGE at this member */
} seen_t;

static sl_err_t record(const char *buf, wire_span_t key, wire_span_t value, void *arg)
{
    seen_t *s = arg;
    if (s->n == s->stop_at)
        return SL_ERR_RANGE;
    snprintf(s->keys[s->n], sizeof s->keys[0], "%.*s", (int)key.len, buf + key.off);
    snprintf(s->values[s->n], sizeof s->values[0], "%.*s", (int)value.len, buf + value.off);
    s->n++;
    return SL_OK;
}

static sl_err_t walk(const char *json, seen_t *s)
{
    memset(s, 0, sizeof *s);
    s->stop_at = 99;
    return wire_json_each_member(json, (wire_span_t){0, (uint32_t)strlen(json)}, record, s);
}

Test(members, in_order_with_raw_spans)
{
    seen_t s;
    cr_assert_eq(walk(" { \"a\" : 1 , \"b\":[2, {\"c\":3}],\"a\":\"x\" } ", &s), SL_OK);
    cr_assert_eq(s.n, 3);
    cr_expect_str_eq(s.keys[0], "\"a\"");
    cr_expect_str_eq(s.values[0], "1");
    cr_expect_str_eq(s.values[1], "[2, {\"c\":3}]");
    cr_expect_str_eq(s.keys[2], "\"a\"");
    cr_expect_str_eq(s.values[2], "\"x\"");
    cr_expect_eq(walk("{}", &s), SL_OK);
    cr_expect_eq(s.n, 0);
}

Test(members, refusals)
{
    seen_t s;
    const char *bad[] = {"[]", "", "{", "{\"a\"", "{\"a\":}", "{\"a\":1,}", "{\"a\":1", "{a:1}", "1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect_eq(walk(bad[i], &s), SL_ERR_PARSE, "%s", bad[i]);
    /* the callback's answer stops the walk and is passed on */
    memset(&s, 0, sizeof s);
    s.stop_at = 1;
    const char *two = "{\"a\":1,\"b\":2,\"c\":3}";
    cr_expect_eq(wire_json_each_member(two, (wire_span_t){0, (uint32_t)strlen(two)}, record, &s), SL_ERR_RANGE);
    cr_expect_eq(s.n, 1);
}

Test(members, keys)
{
    const char *json = "\"fromBlock\"\"from\\u0042lock\"\"from\"";
    wire_span_t plain = {0, 11}, escaped = {11, 17}, prefix = {28, 6};
    cr_expect(wire_json_key_is(json, plain, "fromBlock"));
    cr_expect(!wire_json_key_is(json, plain, "fromBloc"));
    cr_expect(!wire_json_key_is(json, prefix, "fromBlock"));
    cr_expect(!wire_json_key_is(json, escaped, "fromBlock"));
    cr_expect(wire_json_key_escaped(json, escaped));
    cr_expect(!wire_json_key_escaped(json, plain));
}

/* ---- wire_json_each_item ---- */

typedef struct items {
    char seen[8][32];
    size_t n;
    size_t stop_at;               /* answer SL_ERR_RANGE at this item (0: never) */
} items_t;

static sl_err_t record_item(const char *buf, wire_span_t v, void *arg)
{
    items_t *it = arg;
    cr_assert_lt(it->n, 8);
    snprintf(it->seen[it->n], sizeof(it->seen[0]), "%.*s", (int)v.len, buf + v.off);
    it->n++;
    return it->stop_at != 0 && it->n == it->stop_at ? SL_ERR_RANGE : SL_OK;
}

static sl_err_t walk_items(const char *json, items_t *it)
{
    return wire_json_each_item(json, (wire_span_t){0, (uint32_t)strlen(json)}, record_item, it);
}

Test(members, items_in_order_with_raw_spans)
{
    items_t it = {0};
    cr_assert_eq(walk_items(" [ 1 , \"a b\" ,{\"x\": [2, 3]}, null ] ", &it), SL_OK);
    cr_assert_eq(it.n, 4);
    cr_expect_str_eq(it.seen[0], "1");
    cr_expect_str_eq(it.seen[1], "\"a b\"");
    cr_expect_str_eq(it.seen[2], "{\"x\": [2, 3]}");
    cr_expect_str_eq(it.seen[3], "null");
    items_t none = {0};
    cr_expect_eq(walk_items("[]", &none), SL_OK);
    cr_expect_eq(none.n, 0);
}

Test(members, item_refusals)
{
    items_t it = {0};
    cr_expect_eq(walk_items("{\"a\":1}", &it), SL_ERR_PARSE, "an object is not an array");
    cr_expect_eq(walk_items("[1,2", &it), SL_ERR_PARSE, "a span ending inside");
    cr_expect_eq(walk_items("[1,,2]", &it), SL_ERR_PARSE);
    items_t stop = {.stop_at = 2};
    cr_expect_eq(walk_items("[1,2,3]", &stop), SL_ERR_RANGE, "fn's answer stops the walk");
    cr_expect_eq(stop.n, 2);
}
