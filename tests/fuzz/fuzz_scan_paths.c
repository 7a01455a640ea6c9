/* tests/fuzz/fuzz_scan_paths.c: the JSON scanner's fast paths (64-byte
 * blocks: SWAR, SSE2, AVX2 where the CPU has it; wire/json_scan_simd.c)
 * against its scalar path on every input: the same error, kind and spans
 * from wire_json_validate, wire_envelope_scan, wire_envelope_scan_array and
 * a member walk, on the input as given and on every cut of it at a block
 * edge (where a fast path switches between a whole block and the tail). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/envelope.h"
#include "wire/json_scan.h"

#define CHECK(cond) \
    ((cond) ? (void)0 : (fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond), abort()))

#define NITEMS 8
#define NMEMBERS 16

typedef struct outcome {
    sl_err_t verr, eerr, aerr, merr;
    wire_json_kind_t kind;
    wire_span_t value;
    wire_envelope_t env;
    size_t nitems, nmembers;
    wire_span_t items[NITEMS + 1];
    wire_span_t members[NMEMBERS][2];
} outcome_t;

static sl_err_t record_member(const char *buf, wire_span_t key, wire_span_t value, void *arg)
{
    (void)buf;
    outcome_t *o = arg;
    if (o->nmembers == NMEMBERS)
        return SL_ERR_RANGE;
    o->members[o->nmembers][0] = key;
    o->members[o->nmembers][1] = value;
    o->nmembers++;
    return SL_OK;
}

static void run(const char *buf, size_t len, outcome_t *o)
{
    memset(o, 0, sizeof *o);
    o->verr = wire_json_validate(buf, len, &o->kind, &o->value);
    o->eerr = wire_envelope_scan(buf, len, &o->env);
    o->aerr = wire_envelope_scan_array(buf, len, o->items, NITEMS, &o->nitems);
    o->merr = wire_json_each_member(buf, (wire_span_t){0, (uint32_t)len}, record_member, o);
}

static int span_eq(wire_span_t a, wire_span_t b)
{
    return a.off == b.off && a.len == b.len;
}

/* Outputs are compared only where the API defines them. */
static void compare(const outcome_t *a, const outcome_t *b)
{
    CHECK(a->verr == b->verr);
    if (a->verr == SL_OK)
        CHECK(a->kind == b->kind && span_eq(a->value, b->value));
    CHECK(a->eerr == b->eerr);
    if (a->eerr == SL_OK) {
        CHECK(span_eq(a->env.jsonrpc, b->env.jsonrpc) && span_eq(a->env.id, b->env.id));
        CHECK(span_eq(a->env.method, b->env.method) && span_eq(a->env.params, b->env.params));
        CHECK(span_eq(a->env.result, b->env.result) && span_eq(a->env.error, b->env.error));
    }
    CHECK(a->aerr == b->aerr);
    if (a->aerr == SL_OK || a->aerr == SL_ERR_TOO_LARGE) {
        CHECK(a->nitems == b->nitems);
        for (size_t i = 0; a->aerr == SL_OK && i < a->nitems; i++)
            CHECK(span_eq(a->items[i], b->items[i]));
    }
    CHECK(a->merr == b->merr && a->nmembers == b->nmembers);
    for (size_t i = 0; i < a->nmembers; i++)
        CHECK(span_eq(a->members[i][0], b->members[i][0]) && span_eq(a->members[i][1], b->members[i][1]));
}

static void compare_paths(const char *buf, size_t len)
{
    static const wire_json_path_t fast[] = {WIRE_JSON_PATH_SWAR, WIRE_JSON_PATH_SSE2, WIRE_JSON_PATH_AVX2};
    static outcome_t oracle, got;
    CHECK(wire_json_scan_path_set(WIRE_JSON_PATH_SCALAR) == 0);
    run(buf, len, &oracle);
    for (size_t i = 0; i < sizeof fast / sizeof fast[0]; i++) {
        if (wire_json_scan_path_set(fast[i]) != 0)
            continue; /* not on this CPU */
        run(buf, len, &got);
        compare(&oracle, &got);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    /* a copy of exactly size bytes: ASan sees any read past the end */
    char *buf = malloc(size ? size : 1);
    memcpy(buf, data, size);
    compare_paths(buf, size);
    for (size_t cut = 63; cut < size; cut += 64)
        for (size_t d = 0; d < 3 && cut + d < size; d++)
            compare_paths(buf, cut + d);
    free(buf);
    return 0;
}
