/* tests/wire/test_json_scan_paths.c: the scanner's fast paths (64-byte
 * blocks classified with SWAR, SSE2 or AVX2, and the run of plain members;
 * wire/json_scan_simd.c) give the scalar path's verdicts and spans where
 * they are most likely not to: strings across 16/32/64-byte edges, escapes,
 * control bytes and UTF-8 at every offset, every cut of a document, and each
 * way a run of plain members stops. tests/fuzz/fuzz_scan_paths.c does the
 * same on random inputs. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/envelope.h"
#include "wire/json_scan.h"

static const wire_json_path_t fast_paths[] = {WIRE_JSON_PATH_SWAR, WIRE_JSON_PATH_SSE2, WIRE_JSON_PATH_AVX2};

typedef struct verdict {
    sl_err_t err, env_err;
    wire_json_kind_t kind;
    wire_span_t value, result, id;
} verdict_t;

static verdict_t scan(const char *doc, size_t len)
{
    /* a copy of exactly len bytes, so a read past the end is one (ASan) */
    char *copy = malloc(len ? len : 1);
    memcpy(copy, doc, len);
    verdict_t v = {0};
    wire_envelope_t env;
    v.err = wire_json_validate(copy, len, &v.kind, &v.value);
    v.env_err = wire_envelope_scan(copy, len, &env);
    if (v.env_err == SL_OK)
        v.result = env.result, v.id = env.id;
    free(copy);
    return v;
}

static int span_eq(wire_span_t a, wire_span_t b)
{
    return a.off == b.off && a.len == b.len;
}

/* Every path this CPU can take agrees with the scalar one; returns its verdict. */
static sl_err_t agree(const char *doc, size_t len, const char *what)
{
    cr_assert_eq(wire_json_scan_path_set(WIRE_JSON_PATH_SCALAR), 0);
    verdict_t want = scan(doc, len);
    for (size_t i = 0; i < sizeof fast_paths / sizeof fast_paths[0]; i++) {
        if (wire_json_scan_path_set(fast_paths[i]) != 0)
            continue;
        verdict_t got = scan(doc, len);
        cr_assert_eq(got.err, want.err, "%s, path %d: %s, scalar %s", what, fast_paths[i], sl_err_name(got.err),
                     sl_err_name(want.err));
        cr_assert_eq(got.env_err, want.env_err, "%s, path %d: envelope %s, scalar %s", what, fast_paths[i],
                     sl_err_name(got.env_err), sl_err_name(want.env_err));
        if (want.err == SL_OK)
            cr_assert(got.kind == want.kind && span_eq(got.value, want.value), "%s, path %d: value span", what,
                      fast_paths[i]);
        if (want.env_err == SL_OK)
            cr_assert(span_eq(got.result, want.result) && span_eq(got.id, want.id), "%s, path %d: envelope spans",
                      what, fast_paths[i]);
    }
    cr_assert_eq(wire_json_scan_path_set(WIRE_JSON_PATH_DEFAULT), 0);
    return want.err;
}

static void fill_hex(char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = "0123456789abcdef"[(i * 7) % 16];
}

Test(scan_paths, default_is_fast_and_the_environment_can_force_scalar)
{
    cr_assert_eq(wire_json_scan_path_set(WIRE_JSON_PATH_DEFAULT), 0);
    cr_expect_neq(wire_json_scan_path(), WIRE_JSON_PATH_SCALAR);
    setenv("SLUICE_JSON_SCAN", "scalar", 1);
    cr_assert_eq(wire_json_scan_path_set(WIRE_JSON_PATH_DEFAULT), 0);
    cr_expect_eq(wire_json_scan_path(), WIRE_JSON_PATH_SCALAR);
    setenv("SLUICE_JSON_SCAN", "swar", 1);
    cr_assert_eq(wire_json_scan_path_set(WIRE_JSON_PATH_DEFAULT), 0);
    cr_expect_eq(wire_json_scan_path(), WIRE_JSON_PATH_SWAR);
    unsetenv("SLUICE_JSON_SCAN");
    cr_assert_eq(wire_json_scan_path_set(WIRE_JSON_PATH_DEFAULT), 0);
}

/* Keys and values of every length from every start offset: both go through
 * the run of plain members, and cross the block edges at every byte. */
Test(scan_paths, strings_across_block_edges)
{
    char doc[512], a[160], b[160];
    fill_hex(a, sizeof a);
    fill_hex(b, sizeof b);
    for (int lead = 0; lead < 70; lead++)
        for (int n = 0; n < 140; n++) {
            int len = snprintf(doc, sizeof doc, "{\"jsonrpc\":\"2.0\",\"%.*s\":\"%.*s\",\"id\":7,\"result\":[\"%.*s\",\"x\"]}",
                               lead, a, n, b, n, a);
            char what[48];
            snprintf(what, sizeof what, "lead %d, %d bytes", lead, n);
            cr_assert_eq(agree(doc, (size_t)len, what), SL_OK, "%s", what);
        }
}

Test(scan_paths, escapes_at_every_offset)
{
    static const char *const escapes[] = {"\\n", "\\\"", "\\\\", "\\/", "\\u00e9", "\\ud83d\\ude00", "\\u0000"};
    char doc[512], hex[200];
    fill_hex(hex, sizeof hex);
    for (size_t e = 0; e < sizeof escapes / sizeof escapes[0]; e++)
        for (int at = 0; at < 140; at++) {
            char what[48];
            snprintf(what, sizeof what, "escape %zu at %d", e, at);
            int len = snprintf(doc, sizeof doc, "{\"result\":\"%.*s%s%.*s\",\"id\":1}", at, hex, escapes[e], 140 - at, hex);
            cr_assert_eq(agree(doc, (size_t)len, what), SL_OK, "%s", what);
            /* in a key, in a run of plain members */
            len = snprintf(doc, sizeof doc, "{\"id\":1,\"%.*s%s%.*s\":\"v\",\"result\":2}", at, hex, escapes[e], 70, hex);
            cr_assert_eq(agree(doc, (size_t)len, what), SL_OK, "%s (key)", what);
            /* cut just after the backslash */
            len = snprintf(doc, sizeof doc, "{\"result\":\"%.*s\\", at, hex);
            cr_assert_eq(agree(doc, (size_t)len, what), SL_ERR_TRUNCATED, "%s (cut)", what);
        }
}

/* A control byte is refused inside a string whatever its offset in a block. */
Test(scan_paths, control_bytes_at_every_offset)
{
    char doc[512], hex[200];
    fill_hex(hex, sizeof hex);
    for (int c = 0; c < 0x20; c++)
        for (int at = 0; at < 140; at++) {
            char what[48];
            snprintf(what, sizeof what, "byte 0x%02x at %d", c, at);
            int len = snprintf(doc, sizeof doc, "{\"id\":1,\"result\":\"%.*s", at, hex);
            doc[len++] = (char)c;
            len += snprintf(doc + len, sizeof doc - (size_t)len, "%.*s\",\"x\":\"y\"}", 140 - at, hex);
            cr_assert_eq(agree(doc, (size_t)len, what), SL_ERR_PARSE, "%s", what);
            len = snprintf(doc, sizeof doc, "{\"id\":1,\"a\":\"b\",\"%.*s", at, hex);
            doc[len++] = (char)c;
            len += snprintf(doc + len, sizeof doc - (size_t)len, "\":\"v\"}");
            cr_assert_eq(agree(doc, (size_t)len, what), SL_ERR_PARSE, "%s (key)", what);
        }
    /* 0x20 and 0x7f stand for themselves */
    cr_assert_eq(agree("[\"a\",\" \x7f\"]", 10, "space and DEL"), SL_OK);
}

Test(scan_paths, utf8_at_every_offset)
{
    static const struct {
        const char *seq;
        sl_err_t err;
    } seqs[] = {
        {"\xc3\xa9", SL_OK},          {"\xe2\x82\xac", SL_OK},      {"\xf0\x9f\x98\x80", SL_OK},
        {"\xc0\x80", SL_ERR_PARSE},   {"\xed\xa0\x80", SL_ERR_PARSE}, {"\xf5\x80\x80\x80", SL_ERR_PARSE},
        {"\x80", SL_ERR_PARSE},       {"\xe2\x82", SL_ERR_PARSE},     {"\xf4\x90\x80\x80", SL_ERR_PARSE},
    };
    char doc[512], hex[200];
    fill_hex(hex, sizeof hex);
    for (size_t k = 0; k < sizeof seqs / sizeof seqs[0]; k++)
        for (int at = 0; at < 140; at++) {
            char what[48];
            snprintf(what, sizeof what, "sequence %zu at %d", k, at);
            int len = snprintf(doc, sizeof doc, "{\"id\":1,\"result\":[\"%.*s%s%.*s\",\"z\"]}", at, hex, seqs[k].seq,
                               140 - at, hex);
            cr_assert_eq(agree(doc, (size_t)len, what), seqs[k].err, "%s", what);
            /* cut inside the sequence: a prefix of a valid one is truncated */
            len = snprintf(doc, sizeof doc, "{\"id\":1,\"result\":\"%.*s%.1s", at, hex, seqs[k].seq);
            agree(doc, (size_t)len, what);
        }
}

/* Every prefix of an eth_getLogs answer is truncated, on every path. */
Test(scan_paths, every_cut_of_a_logs_answer)
{
    char doc[2048], h[200];
    fill_hex(h, sizeof h);
    int len = snprintf(doc, sizeof doc,
                       "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":[{\"address\":\"0x%.40s\",\"topics\":[\"0x%.64s\","
                       "\"0x%.64s\"],\"data\":\"0x%.128s\",\"blockNumber\":\"0xf4240\",\"logIndex\":\"0x0\","
                       "\"removed\":false},{\"address\":\"0x%.40s\",\"topics\":[],\"data\":\"0x\",\"removed\":true,"
                       "\"blockHash\":\"0x%.64s\",\"n\":-1.5e3,\"z\":null}]}",
                       h, h + 3, h + 5, h, h + 1, h + 2);
    cr_assert_eq(agree(doc, (size_t)len, "whole"), SL_OK);
    for (int cut = 0; cut < len; cut++) {
        char what[32];
        snprintf(what, sizeof what, "cut %d", cut);
        cr_assert_eq(agree(doc, (size_t)cut, what), SL_ERR_TRUNCATED, "%s", what);
    }
}

/* Each way a run of plain members stops, at the start and across an edge. */
Test(scan_paths, where_a_plain_run_stops)
{
    static const struct {
        const char *doc;
        sl_err_t err;
    } cases[] = {
        {"{\"a\":\"b\",\"c\":1}", SL_OK},       {"{\"a\":\"b\" ,\"c\":\"d\"}", SL_OK},
        {"{\"a\":\"b\", \"c\":\"d\"}", SL_OK},  {"{\"a\":\"b\",\"c\" :\"d\"}", SL_OK},
        {"{\"a\":\"b\",\"c\": \"d\"}", SL_OK},  {"[\"a\",\"b\",1,\"c\",[\"d\"],{}]", SL_OK},
        {"[\"a\",\"b\"", SL_ERR_TRUNCATED},     {"[\"a\",", SL_ERR_TRUNCATED},
        {"{\"a\":\"b\",\"c\":", SL_ERR_TRUNCATED}, {"{\"a\":\"b\",\"c\"", SL_ERR_TRUNCATED},
        {"{\"a\":\"b\",\"c", SL_ERR_TRUNCATED}, {"{\"a\":\"b\",", SL_ERR_TRUNCATED},
        {"{\"a\":\"b\",\"c\":\"d", SL_ERR_TRUNCATED}, {"{\"a\":\"b\",\"c\":\"d\\u00", SL_ERR_TRUNCATED},
        {"[\"a\",]", SL_ERR_PARSE},             {"{\"a\":\"b\",}", SL_ERR_PARSE},
        {"{\"a\":\"b\",\"c\":\"d\"}x", SL_ERR_PARSE}, {"{\"a\":\"b\",\"c\"\"d\"}", SL_ERR_PARSE},
        {"{\"a\":\"b\",\"c\":\"d\"]", SL_ERR_PARSE}, {"[\"a\",\"b\"}", SL_ERR_PARSE},
        {"{\"a\":\"b\",\"c\":\"d\",\"e\":\"f\x01\"}", SL_ERR_PARSE}, {"{\"a\":\"b\",\"c\",\"d\"}", SL_ERR_PARSE},
        {"[\"a\",\"b\":\"c\"]", SL_ERR_PARSE},  {"{\"a\":\"b\",\"c\":\"d\"}", SL_OK},
    };
    char doc[256], pad[80];
    fill_hex(pad, sizeof pad);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int lead = 0; lead < 70; lead += 3) {
            /* the case as the value of "result", pushed across the block edges */
            int len = snprintf(doc, sizeof doc, "{\"id\":\"%.*s\",\"result\":%s", lead, pad, cases[i].doc);
            char what[96];
            snprintf(what, sizeof what, "case %zu (%s), lead %d", i, cases[i].doc, lead);
            sl_err_t err = agree(doc, (size_t)len, what);
            sl_err_t want = cases[i].err == SL_OK ? SL_ERR_TRUNCATED : cases[i].err; /* the outer '}' is missing */
            cr_assert_eq(err, want, "%s: %s", what, sl_err_name(err));
            if (lead == 0)
                cr_assert_eq(agree(cases[i].doc, strlen(cases[i].doc), what), cases[i].err, "%s alone", what);
        }
}
