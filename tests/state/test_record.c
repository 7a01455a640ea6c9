/* tests/state/test_record.c: state/state_record.h: the schema tables, round
 * trips of every record, golden bytes of the on-disk format, and the exact
 * rejection of everything malformed (prefixes, trailing bytes, versions,
 * field counts and types, ranges, strings, hostile container counts). */
#include <criterion/criterion.h>
#include <msgpack.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "state/state.h"
#include "state/state_record.h"

#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* ---- helpers --------------------------------------------------------------- */

static int buf_write(void *data, const char *p, size_t n)
{
    sl_buf_append(data, p, n);
    return 0;
}

typedef struct schema_case {
    const state_schema_t *schema;
    size_t rec_size;
    size_t first_offset;          /* bytes of the struct before the first encoded field */
} schema_case_t;

static const schema_case_t schemas[] = {
    {&state_endpoint_schema, sizeof(state_endpoint_rec_t), 0},
    {&state_event_schema, sizeof(state_event_t), sizeof(uint64_t)}, /* seq is the key */
    {&state_stats_schema, sizeof(state_stats_rec_t), 0},
    {&state_network_schema, sizeof(state_network_rec_t), 0},
    {&state_pressure_schema, sizeof(state_pressure_rec_t), 0},
    {&state_pressure_slot_schema, sizeof(state_pressure_slot_rec_t), 0},
    {&state_chain_schema, sizeof(state_chain_rec_t), 0},
};

static size_t field_bytes(const state_field_t *f)
{
    switch (f->type) {
    case STATE_F_U8: return 1;
    case STATE_F_U32: return 4;
    case STATE_F_U64: return 8;
    case STATE_F_STR: return f->size;
    case STATE_F_U64_ARRAY: return 8 * f->size;
    }
    return 0;
}

static uint64_t field_max(const state_field_t *f)
{
    switch (f->type) {
    case STATE_F_U8: return UINT8_MAX;
    case STATE_F_U32: return UINT32_MAX;
    case STATE_F_U64:
    case STATE_F_U64_ARRAY: return UINT64_MAX;
    case STATE_F_STR: break;
    }
    return 0;
}

static void set_uint(void *rec, const state_field_t *f, size_t i, uint64_t v)
{
    char *p = (char *)rec + f->offset;
    switch (f->type) {
    case STATE_F_U8: *(uint8_t *)p = (uint8_t)v; break;
    case STATE_F_U32: *(uint32_t *)p = (uint32_t)v; break;
    case STATE_F_U64: *(uint64_t *)p = v; break;
    case STATE_F_U64_ARRAY: ((uint64_t *)p)[i] = v; break;
    case STATE_F_STR: break;
    }
}

/* Fills every field with a distinct value; variant 0 uses maxima and
 * longest strings, others small values and short strings. */
static void fill(const state_schema_t *s, void *rec, size_t rec_size, int variant)
{
    memset(rec, 0, rec_size);
    for (size_t i = 0; i < s->nfields; i++) {
        const state_field_t *f = &s->fields[i];
        if (f->type == STATE_F_STR) {
            char *p = (char *)rec + f->offset;
            size_t n = variant == 0 ? f->size - 1 : (size_t)variant % f->size;
            for (size_t k = 0; k < n; k++)
                p[k] = (char)('a' + (i + k) % 26);
            continue;
        }
        size_t n = f->type == STATE_F_U64_ARRAY ? f->size : 1;
        for (size_t k = 0; k < n; k++)
            set_uint(rec, f, k, variant == 0 ? field_max(f) - k : (uint64_t)(variant * 100 + i * 10 + k));
    }
}

static void encode_ok(const state_schema_t *s, const void *rec, sl_buf_t *out)
{
    sl_buf_reset(out);
    cr_assert_eq(state_record_encode(s, rec, out), SL_OK, "%s: encode", s->name);
    cr_assert_gt(out->len, 0);
}

/* What to put in place of one field of an otherwise valid record. */
typedef enum bad_kind {
    BAD_STR,
    BAD_EMPTY_STR,
    BAD_NEG,
    BAD_NEG_BIG,
    BAD_FLOAT32,
    BAD_FLOAT64,
    BAD_MAP,
    BAD_NIL,
    BAD_TRUE,
    BAD_FALSE,
    BAD_BIN,
    BAD_EXT,
    BAD_EMPTY_ARRAY,
    BAD_ARRAY1,
    BAD_POS,                      /* a valid positive integer (bad for strings and arrays) */
    BAD_KIND_COUNT
} bad_kind_t;

static const char *const bad_names[BAD_KIND_COUNT] = {
    [BAD_STR] = "str",         [BAD_EMPTY_STR] = "empty str", [BAD_NEG] = "-1",      [BAD_NEG_BIG] = "INT64_MIN",
    [BAD_FLOAT32] = "float32", [BAD_FLOAT64] = "float64",     [BAD_MAP] = "map",     [BAD_NIL] = "nil",
    [BAD_TRUE] = "true",       [BAD_FALSE] = "false",         [BAD_BIN] = "bin",     [BAD_EXT] = "ext",
    [BAD_EMPTY_ARRAY] = "[]",  [BAD_ARRAY1] = "[1]",          [BAD_POS] = "7",
};

static void pack_bad(msgpack_packer *pk, bad_kind_t k)
{
    switch (k) {
    case BAD_STR: msgpack_pack_str_with_body(pk, "12", 2); break;
    case BAD_EMPTY_STR: msgpack_pack_str_with_body(pk, "", 0); break;
    case BAD_NEG: msgpack_pack_int64(pk, -1); break;
    case BAD_NEG_BIG: msgpack_pack_int64(pk, INT64_MIN); break;
    case BAD_FLOAT32: msgpack_pack_float(pk, 1.0f); break;
    case BAD_FLOAT64: msgpack_pack_double(pk, 2.0); break;
    case BAD_MAP:
        msgpack_pack_map(pk, 1);
        msgpack_pack_uint8(pk, 1);
        msgpack_pack_uint8(pk, 2);
        break;
    case BAD_NIL: msgpack_pack_nil(pk); break;
    case BAD_TRUE: msgpack_pack_true(pk); break;
    case BAD_FALSE: msgpack_pack_false(pk); break;
    case BAD_BIN: msgpack_pack_bin_with_body(pk, "ab", 2); break;
    case BAD_EXT: msgpack_pack_ext_with_body(pk, "abcd", 4, 5); break;
    case BAD_EMPTY_ARRAY: msgpack_pack_array(pk, 0); break;
    case BAD_ARRAY1:
        msgpack_pack_array(pk, 1);
        msgpack_pack_uint8(pk, 1);
        break;
    case BAD_POS: msgpack_pack_uint8(pk, 7); break;
    case BAD_KIND_COUNT: break;
    }
}

/* An independent encoder: version, then the fields of rec, except that field
 * `bad` (if < nfields) is written by bad_fn. nfields_delta changes the array
 * header and the number of fields written (extra ones are small ints). */
typedef void (*bad_fn_t)(msgpack_packer *pk, const state_field_t *f, const void *ctx);

static void pack_record(sl_buf_t *out, const state_schema_t *s, const void *rec, uint64_t version, size_t bad,
                        bad_fn_t bad_fn, const void *ctx, int nfields_delta)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, out, buf_write);
    size_t n = (size_t)((long)s->nfields + nfields_delta);
    msgpack_pack_array(&pk, n + 1);
    msgpack_pack_uint64(&pk, version);
    for (size_t i = 0; i < n; i++) {
        if (i >= s->nfields) {
            msgpack_pack_uint8(&pk, 0);
            continue;
        }
        const state_field_t *f = &s->fields[i];
        const char *p = (const char *)rec + f->offset;
        if (i == bad) {
            bad_fn(&pk, f, ctx);
        } else if (f->type == STATE_F_STR) {
            msgpack_pack_str_with_body(&pk, p, strlen(p));
        } else if (f->type == STATE_F_U64_ARRAY) {
            msgpack_pack_array(&pk, f->size);
            for (size_t k = 0; k < f->size; k++)
                msgpack_pack_uint64(&pk, ((const uint64_t *)p)[k]);
        } else if (f->type == STATE_F_U8) {
            msgpack_pack_uint64(&pk, *(const uint8_t *)p);
        } else if (f->type == STATE_F_U32) {
            msgpack_pack_uint64(&pk, *(const uint32_t *)p);
        } else {
            msgpack_pack_uint64(&pk, *(const uint64_t *)p);
        }
    }
}

static void pack_bad_kind(msgpack_packer *pk, const state_field_t *f, const void *ctx)
{
    (void)f;
    pack_bad(pk, *(const bad_kind_t *)ctx);
}

static void pack_u64(msgpack_packer *pk, const state_field_t *f, const void *ctx)
{
    (void)f;
    msgpack_pack_uint64(pk, *(const uint64_t *)ctx);
}

static sl_err_t decode(const state_schema_t *s, const sl_buf_t *b, void *rec)
{
    return state_record_decode(s, b->base, b->len, rec);
}

/* Large enough for any record. */
typedef union any_rec {
    state_endpoint_rec_t endpoint;
    state_event_t event;
    state_stats_rec_t stats;
    state_network_rec_t network;
    state_pressure_rec_t pressure;
    state_pressure_slot_rec_t pressure_slot;
} any_rec_t;

/* ---- the tables ------------------------------------------------------------ */

Test(record, schema_tables_cover_their_structs)
{
    for (size_t c = 0; c < NELEMS(schemas); c++) {
        const state_schema_t *s = schemas[c].schema;
        cr_assert_gt(s->nfields, 0, "%s", s->name);
        cr_expect_geq(s->version, 1, "%s", s->name);
        size_t end = schemas[c].first_offset;
        for (size_t i = 0; i < s->nfields; i++) {
            const state_field_t *f = &s->fields[i];
            cr_expect_not_null(f->name);
            cr_expect_geq(f->offset, end, "%s.%s overlaps the field before it or is out of order", s->name, f->name);
            cr_expect_lt(f->offset - end, 8, "%s.%s: %zu bytes before it are not in the schema", s->name, f->name,
                         f->offset - end);
            cr_expect_gt(f->size, 0, "%s.%s", s->name, f->name);
            if (f->type != STATE_F_STR && f->type != STATE_F_U64_ARRAY)
                cr_expect_eq(f->size, 1, "%s.%s: scalar size", s->name, f->name);
            end = f->offset + field_bytes(f);
            for (size_t k = 0; k < i; k++)
                cr_expect_neq(strcmp(s->fields[k].name, f->name), 0, "%s: duplicate %s", s->name, f->name);
        }
        cr_expect_leq(end, schemas[c].rec_size, "%s: last field past the struct", s->name);
        cr_expect_lt(schemas[c].rec_size - end, 8, "%s: %zu bytes at the end are not in the schema", s->name,
                     schemas[c].rec_size - end);
        for (size_t k = 0; k < c; k++)
            cr_expect_neq(strcmp(schemas[k].schema->name, s->name), 0);
    }
}

Test(record, name_tables)
{
    for (int k = 0; k < STATE_EVENT_KIND_COUNT; k++) {
        const char *n = state_event_kind_name((state_event_kind_t)k);
        cr_assert_not_null(n);
        cr_expect_neq(strcmp(n, "unknown"), 0, "event kind %d has no name", k);
        for (int j = 0; j < k; j++)
            cr_expect_neq(strcmp(n, state_event_kind_name((state_event_kind_t)j)), 0, "duplicate %s", n);
    }
    for (int k = 0; k < STATE_OUTCOME_COUNT; k++) {
        const char *n = state_outcome_name((state_outcome_t)k);
        cr_assert_not_null(n);
        cr_expect_neq(strcmp(n, "unknown"), 0, "outcome %d has no name", k);
        for (int j = 0; j < k; j++)
            cr_expect_neq(strcmp(n, state_outcome_name((state_outcome_t)j)), 0, "duplicate %s", n);
    }
    for (int k = 0; k < STATE_REQ_OUTCOME_COUNT; k++) {
        const char *n = state_req_outcome_name((state_req_outcome_t)k);
        cr_assert_not_null(n);
        cr_expect_neq(strcmp(n, "unknown"), 0, "request outcome %d has no name", k);
        for (int j = 0; j < k; j++)
            cr_expect_neq(strcmp(n, state_req_outcome_name((state_req_outcome_t)j)), 0, "duplicate %s", n);
    }
    for (int k = 0; k < STATE_SRV_COUNT; k++) {
        const char *n = state_srv_counter_name((state_srv_counter_t)k);
        cr_assert_not_null(n);
        cr_expect_neq(strcmp(n, "unknown"), 0, "worker counter %d has no name", k);
        for (int j = 0; j < k; j++)
            cr_expect_neq(strcmp(n, state_srv_counter_name((state_srv_counter_t)j)), 0, "duplicate %s", n);
    }
    cr_expect(state_srv_counter_is_gauge(STATE_SRV_CONNECTIONS));
    cr_expect(state_srv_counter_is_gauge(STATE_SRV_BUFFERED_BYTES));
    cr_expect_not(state_srv_counter_is_gauge(STATE_SRV_WRITE_TIMEOUTS));
    cr_expect_not(state_srv_counter_is_gauge(STATE_SRV_COUNT));
    cr_expect_str_eq(state_srv_counter_name(STATE_SRV_COUNT), "unknown");
    cr_expect_str_eq(state_event_kind_name(STATE_EVENT_KIND_COUNT), "unknown");
    cr_expect_str_eq(state_outcome_name(STATE_OUTCOME_COUNT), "unknown");
    cr_expect_str_eq(state_req_outcome_name(STATE_REQ_OUTCOME_COUNT), "unknown");
    cr_expect_str_eq(state_event_kind_name((state_event_kind_t)-1), "unknown");
}

Test(record, latency_bounds_increase)
{
    for (size_t i = 1; i < STATE_LAT_BUCKETS; i++)
        cr_expect_gt(state_lat_bounds_us[i], state_lat_bounds_us[i - 1], "bucket %zu", i);
    cr_expect_eq(state_lat_bounds_us[STATE_LAT_BUCKETS - 1], UINT64_MAX);
}

/* ---- round trips ----------------------------------------------------------- */

Test(record, round_trip_every_schema)
{
    sl_buf_t b = SL_BUF_INIT, b2 = SL_BUF_INIT;
    for (size_t c = 0; c < NELEMS(schemas); c++) {
        const state_schema_t *s = schemas[c].schema;
        for (int variant = 0; variant < 4; variant++) {
            any_rec_t in, out;
            fill(s, &in, schemas[c].rec_size, variant);
            encode_ok(s, &in, &b);
            memset(&out, 0, sizeof(out));
            cr_assert_eq(decode(s, &b, &out), SL_OK, "%s variant %d: %s", s->name, variant,
                         sl_err_name(decode(s, &b, &out)));
            cr_expect(memcmp(&in, &out, schemas[c].rec_size) == 0, "%s variant %d: decoded record differs", s->name,
                      variant);
            /* the independent encoder produces a record the decoder takes too */
            sl_buf_reset(&b2);
            pack_record(&b2, s, &in, s->version, SIZE_MAX, NULL, NULL, 0);
            memset(&out, 0, sizeof(out));
            cr_assert_eq(decode(s, &b2, &out), SL_OK, "%s variant %d (test encoder)", s->name, variant);
            cr_expect(memcmp(&in, &out, schemas[c].rec_size) == 0);
        }
    }
    sl_buf_dispose(&b);
    sl_buf_dispose(&b2);
}

Test(record, round_trip_endpoint_fields)
{
    state_endpoint_rec_t in, out;
    memset(&in, 0, sizeof(in));
    in.breaker = 2;
    in.since_ms = 1700000000123ull;
    in.cooldown_ms = 40000;
    in.opened_at_ms = 1700000000000ull;
    in.probe_pid = 4242;
    in.probe_at_ms = 1700000000100ull;
    in.drained = 1;
    in.drained_at_ms = 5;
    in.rate_limited_until_ms = UINT64_MAX;
    in.transitions[0] = 1;
    in.transitions[1] = 2;
    in.transitions[2] = 3;
    sl_buf_t b = SL_BUF_INIT;
    encode_ok(&state_endpoint_schema, &in, &b);
    memset(&out, 0xaa, sizeof(out));
    cr_assert_eq(decode(&state_endpoint_schema, &b, &out), SL_OK);
    cr_expect_eq(out.breaker, 2);
    cr_expect_eq(out.since_ms, 1700000000123ull);
    cr_expect_eq(out.cooldown_ms, 40000);
    cr_expect_eq(out.opened_at_ms, 1700000000000ull);
    cr_expect_eq(out.probe_pid, 4242);
    cr_expect_eq(out.probe_at_ms, 1700000000100ull);
    cr_expect_eq(out.drained, 1);
    cr_expect_eq(out.drained_at_ms, 5);
    cr_expect_eq(out.rate_limited_until_ms, UINT64_MAX);
    cr_expect_eq(out.transitions[0], 1);
    cr_expect_eq(out.transitions[1], 2);
    cr_expect_eq(out.transitions[2], 3);
    sl_buf_dispose(&b);
}

Test(record, round_trip_event_max_strings)
{
    state_event_t in, out;
    memset(&in, 0, sizeof(in));
    in.seq = 0;
    in.ts_ms = 1;
    in.kind = STATE_EVENT_STATE_ERROR;
    memset(in.network, 'n', sizeof(in.network) - 1);
    memset(in.endpoint, 'e', sizeof(in.endpoint) - 1);
    memset(in.reason, 'r', sizeof(in.reason) - 1);
    in.from = 1;
    in.to = 2;
    in.duration_ms = 3;
    in.count = 4;
    in.pid = UINT32_MAX;
    sl_buf_t b = SL_BUF_INIT;
    encode_ok(&state_event_schema, &in, &b);
    memset(&out, 0, sizeof(out));
    cr_assert_eq(decode(&state_event_schema, &b, &out), SL_OK);
    cr_expect_eq(strlen(out.network), sizeof(out.network) - 1);
    cr_expect_eq(strlen(out.endpoint), sizeof(out.endpoint) - 1);
    cr_expect_eq(strlen(out.reason), sizeof(out.reason) - 1);
    cr_expect(memcmp(&in, &out, sizeof(in)) == 0);
    sl_buf_dispose(&b);
}

Test(record, encode_truncates_an_unterminated_string)
{
    /* a field filled to the last byte without a NUL is encoded as size-1 bytes */
    state_event_t in, out;
    memset(&in, 0, sizeof(in));
    memset(in.network, 'x', sizeof(in.network));
    memset(in.reason, 'y', sizeof(in.reason));
    sl_buf_t b = SL_BUF_INIT;
    encode_ok(&state_event_schema, &in, &b);
    memset(&out, 0, sizeof(out));
    cr_assert_eq(decode(&state_event_schema, &b, &out), SL_OK);
    cr_expect_eq(strlen(out.network), sizeof(out.network) - 1);
    cr_expect_eq(strlen(out.reason), sizeof(out.reason) - 1);
    cr_expect_eq(out.endpoint[0], '\0');
    sl_buf_dispose(&b);
}

/* Bytes stored on disk must not change silently: a change needs a new version. */
Test(record, golden_bytes)
{
    sl_buf_t b = SL_BUF_INIT;
    state_network_rec_t net = {.level = 2, .since_ms = 1000};
    encode_ok(&state_network_schema, &net, &b);
    static const unsigned char want_net[] = {0x93, 0x01, 0x02, 0xcd, 0x03, 0xe8};
    cr_assert_eq(b.len, sizeof(want_net));
    cr_expect(memcmp(b.base, want_net, sizeof(want_net)) == 0);

    state_endpoint_rec_t ep;
    memset(&ep, 0, sizeof(ep));
    ep.breaker = 1;
    ep.cooldown_ms = 5000;
    ep.transitions[1] = 1;
    encode_ok(&state_endpoint_schema, &ep, &b);
    /* 42 elements: past fixarray's 15, so an array16 header; version 8 (5:
     * the chain probe's safe, finalized, chain_at_ms, chain_next_ms,
     * hash_height and two empty hash strings; 6: the ws_url stream's holder,
     * claim, state, heads and last head; 7: the pushed heads not confirmed;
     * 8: the probes' lease: an empty holder, token, until, next ask, an empty
     * chain heard and when) */
    static const unsigned char want_ep[] = {0xdc, 0x00, 0x2a, 0x08, 0x01, 0x00, 0xcd, 0x13, 0x88, 0x00, 0x00,
                                            0x00, 0x00, 0x00, 0x00, 0x93, 0x00, 0x01, 0x00,
                                            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xa0, 0xa0,
                                            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xa0, 0x00, 0x00, 0x00, 0xa0, 0x00};
    cr_assert_eq(b.len, sizeof(want_ep), "len %zu", b.len);
    cr_expect(memcmp(b.base, want_ep, sizeof(want_ep)) == 0);

    state_counters_rec_t *cn = calloc(1, sizeof(*cn));
    cn->n = 2;
    cn->v[0] = 5;
    cn->v[1] = 300;
    sl_buf_reset(&b);
    cr_assert_eq(state_counters_encode(cn, &b), SL_OK);
    static const unsigned char want_cn[] = {0x93, 0x01, 0x02, 0x92, 0x05, 0xcd, 0x01, 0x2c};
    cr_assert_eq(b.len, sizeof(want_cn));
    cr_expect(memcmp(b.base, want_cn, sizeof(want_cn)) == 0);
    free(cn);
    sl_buf_dispose(&b);
}

/* Other encodings of the same values are valid msgpack and decode the same. */
Test(record, non_minimal_integers_accepted)
{
    /* [1 as u64, level 2 as int8, since 1000 as u32] */
    static const unsigned char in[] = {0x93, 0xcf, 0, 0, 0, 0, 0, 0, 0, 1, 0xd0, 0x02, 0xce, 0, 0, 0x03, 0xe8};
    state_network_rec_t out = {9, 9};
    cr_assert_eq(state_record_decode(&state_network_schema, in, sizeof(in), &out), SL_OK);
    cr_expect_eq(out.level, 2);
    cr_expect_eq(out.since_ms, 1000);
}

/* ---- rejection --------------------------------------------------------------- */

Test(record, empty_input)
{
    for (size_t c = 0; c < NELEMS(schemas); c++) {
        any_rec_t out;
        static const unsigned char one = 0x90;
        cr_expect_eq(state_record_decode(schemas[c].schema, &one, 0, &out), SL_ERR_CORRUPT, "%s",
                     schemas[c].schema->name);
        cr_expect_eq(state_record_decode(schemas[c].schema, NULL, 0, &out), SL_ERR_CORRUPT);
        cr_expect_eq(state_record_decode(schemas[c].schema, &one, 1, &out), SL_ERR_CORRUPT, "%s: []",
                     schemas[c].schema->name);
    }
}

Test(record, every_proper_prefix_is_corrupt)
{
    sl_buf_t b = SL_BUF_INIT;
    for (size_t c = 0; c < NELEMS(schemas); c++) {
        const state_schema_t *s = schemas[c].schema;
        for (int variant = 0; variant < 2; variant++) {
            any_rec_t in, out;
            fill(s, &in, schemas[c].rec_size, variant);
            encode_ok(s, &in, &b);
            /* a copy of exactly len bytes, so ASan sees any read past the end */
            for (size_t len = 0; len < b.len; len++) {
                unsigned char *p = malloc(len ? len : 1);
                memcpy(p, b.base, len);
                sl_err_t err = state_record_decode(s, p, len, &out);
                cr_expect_eq(err, SL_ERR_CORRUPT, "%s variant %d: prefix %zu of %zu: %s", s->name, variant, len,
                             b.len, sl_err_name(err));
                free(p);
            }
        }
    }
    sl_buf_dispose(&b);
}

Test(record, trailing_bytes)
{
    sl_buf_t b = SL_BUF_INIT;
    static const unsigned char tails[][3] = {{1, 0x00}, {1, 0xc0}, {1, 0x90}, {2, 0xa1, 'x'}, {1, 0xc1}};
    for (size_t c = 0; c < NELEMS(schemas); c++) {
        const state_schema_t *s = schemas[c].schema;
        any_rec_t in, out;
        fill(s, &in, schemas[c].rec_size, 1);
        for (size_t t = 0; t < NELEMS(tails); t++) {
            encode_ok(s, &in, &b);
            sl_buf_append(&b, &tails[t][1], tails[t][0]);
            cr_expect_eq(decode(s, &b, &out), SL_ERR_CORRUPT, "%s tail %zu", s->name, t);
        }
        /* two records back to back */
        encode_ok(s, &in, &b);
        size_t one = b.len;
        cr_assert_eq(state_record_encode(s, &in, &b), SL_OK);
        cr_assert_eq(b.len, 2 * one);
        cr_expect_eq(decode(s, &b, &out), SL_ERR_CORRUPT, "%s twice", s->name);
    }
    sl_buf_dispose(&b);
}

Test(record, versions)
{
    /* rel: version is relative to the schema's own (a record of the version
     * before or after it); else absolute */
    static const struct {
        int rel;
        int64_t version;
        int nfields_delta;
        sl_err_t want;
    } cases[] = {
        {0, 0, 0, SL_ERR_VERSION},
        /* an older version reads with exactly the fields it had (see
         * older_versions_read_with_new_fields_zero); here it has too many */
        {1, -1, 1, SL_ERR_CORRUPT},
        {1, 1, 0, SL_ERR_VERSION},
        {1, 1, 3, SL_ERR_VERSION},  /* a newer version with more fields: still VERSION */
        {1, 1, -1, SL_ERR_VERSION},
        {0, 255, 0, SL_ERR_VERSION},
        {0, UINT32_MAX + 2ll, 0, SL_ERR_VERSION},
        {0, -1, 0, SL_ERR_VERSION}, /* UINT64_MAX */
        {1, 0, 0, SL_OK},
    };
    sl_buf_t b = SL_BUF_INIT;
    for (size_t c = 0; c < NELEMS(schemas); c++) {
        const state_schema_t *s = schemas[c].schema;
        cr_assert(s->version >= 1 && s->version < 255, "update this test for %s", s->name);
        any_rec_t in, out;
        fill(s, &in, schemas[c].rec_size, 1);
        for (size_t i = 0; i < NELEMS(cases); i++) {
            uint64_t version = cases[i].rel ? (uint64_t)((int64_t)s->version + cases[i].version)
                                            : (uint64_t)cases[i].version;
            sl_buf_reset(&b);
            pack_record(&b, s, &in, version, SIZE_MAX, NULL, NULL, cases[i].nfields_delta);
            sl_err_t err = decode(s, &b, &out);
            sl_err_t want = cases[i].rel && cases[i].version == -1 && s->version == 1 ? SL_ERR_VERSION : cases[i].want;
            /* version-1 endpoint records had every field but rl_backoff_ms: one too many is all of them */
            if (cases[i].rel && cases[i].version == -1 && s == &state_endpoint_schema && cases[i].nfields_delta == 1)
                want = SL_ERR_CORRUPT;
            cr_expect_eq(err, want, "%s version %llu, %d fields more: %s", s->name, (unsigned long long)version,
                         cases[i].nfields_delta, sl_err_name(err));
        }
    }
    sl_buf_dispose(&b);
}

static void pack_bad_version(msgpack_packer *pk, bad_kind_t k)
{
    msgpack_pack_array(pk, 3);
    pack_bad(pk, k);
    msgpack_pack_uint8(pk, 0);
    msgpack_pack_uint8(pk, 0);
}

Test(record, version_of_the_wrong_type)
{
    static const bad_kind_t kinds[] = {BAD_STR, BAD_EMPTY_STR, BAD_NEG, BAD_FLOAT32, BAD_FLOAT64, BAD_MAP,
                                       BAD_NIL, BAD_TRUE, BAD_BIN, BAD_EXT, BAD_EMPTY_ARRAY, BAD_ARRAY1};
    sl_buf_t b = SL_BUF_INIT;
    for (size_t i = 0; i < NELEMS(kinds); i++) {
        sl_buf_reset(&b);
        msgpack_packer pk;
        msgpack_packer_init(&pk, &b, buf_write);
        pack_bad_version(&pk, kinds[i]);
        state_network_rec_t out;
        cr_expect_eq(decode(&state_network_schema, &b, &out), SL_ERR_CORRUPT, "version %s", bad_names[kinds[i]]);
    }
    sl_buf_dispose(&b);
}

Test(record, field_count)
{
    static const int deltas[] = {-100, -2, -1, 1, 2, 20};
    sl_buf_t b = SL_BUF_INIT;
    for (size_t c = 0; c < NELEMS(schemas); c++) {
        const state_schema_t *s = schemas[c].schema;
        any_rec_t in, out;
        fill(s, &in, schemas[c].rec_size, 1);
        for (size_t i = 0; i < NELEMS(deltas); i++) {
            int d = deltas[i] < -(int)s->nfields ? -(int)s->nfields : deltas[i];
            sl_buf_reset(&b);
            pack_record(&b, s, &in, s->version, SIZE_MAX, NULL, NULL, d);
            sl_err_t err = decode(s, &b, &out);
            cr_expect_eq(err, SL_ERR_CORRUPT, "%s with %d fields: %s", s->name, (int)s->nfields + d, sl_err_name(err));
        }
    }
    sl_buf_dispose(&b);
}

Test(record, root_not_an_array)
{
    static const bad_kind_t kinds[] = {BAD_STR, BAD_NEG, BAD_FLOAT64, BAD_MAP, BAD_NIL, BAD_TRUE, BAD_BIN, BAD_EXT, BAD_POS};
    sl_buf_t b = SL_BUF_INIT;
    for (size_t c = 0; c < NELEMS(schemas); c++) {
        for (size_t i = 0; i < NELEMS(kinds); i++) {
            sl_buf_reset(&b);
            msgpack_packer pk;
            msgpack_packer_init(&pk, &b, buf_write);
            pack_bad(&pk, kinds[i]);
            any_rec_t out;
            cr_expect_eq(decode(schemas[c].schema, &b, &out), SL_ERR_CORRUPT, "%s: root %s", schemas[c].schema->name,
                         bad_names[kinds[i]]);
        }
    }
    sl_buf_dispose(&b);
}

/* Every field of every schema, replaced by every kind of value it must refuse. */
Test(record, wrong_types)
{
    sl_buf_t b = SL_BUF_INIT;
    size_t checked = 0;
    for (size_t c = 0; c < NELEMS(schemas); c++) {
        const state_schema_t *s = schemas[c].schema;
        any_rec_t in, out;
        fill(s, &in, schemas[c].rec_size, 1);
        for (size_t i = 0; i < s->nfields; i++) {
            const state_field_t *f = &s->fields[i];
            for (bad_kind_t k = 0; k < BAD_KIND_COUNT; k++) {
                int fine = (f->type == STATE_F_STR && (k == BAD_STR || k == BAD_EMPTY_STR)) ||
                           (f->type != STATE_F_STR && f->type != STATE_F_U64_ARRAY && k == BAD_POS) ||
                           (f->type == STATE_F_U64_ARRAY && k == BAD_ARRAY1 && f->size == 1) ||
                           (f->type == STATE_F_U64_ARRAY && k == BAD_EMPTY_ARRAY && f->size == 0);
                sl_buf_reset(&b);
                pack_record(&b, s, &in, s->version, i, pack_bad_kind, &k, 0);
                sl_err_t err = decode(s, &b, &out);
                cr_expect_eq(err, fine ? SL_OK : SL_ERR_CORRUPT, "%s.%s = %s: %s", s->name, f->name, bad_names[k],
                             sl_err_name(err));
                checked++;
            }
        }
    }
    cr_expect_gt(checked, 100);
    sl_buf_dispose(&b);
}

typedef struct array_bad {
    size_t len;                   /* elements written */
    size_t bad_at;                /* index written as bad_kind (SIZE_MAX: none) */
    bad_kind_t bad_kind;
} array_bad_t;

static void pack_bad_array(msgpack_packer *pk, const state_field_t *f, const void *ctx)
{
    (void)f;
    const array_bad_t *a = ctx;
    msgpack_pack_array(pk, a->len);
    for (size_t k = 0; k < a->len; k++) {
        if (k == a->bad_at)
            pack_bad(pk, a->bad_kind);
        else
            msgpack_pack_uint64(pk, k);
    }
}

Test(record, arrays_of_wrong_length_or_content)
{
    sl_buf_t b = SL_BUF_INIT;
    for (size_t c = 0; c < NELEMS(schemas); c++) {
        const state_schema_t *s = schemas[c].schema;
        any_rec_t in, out;
        fill(s, &in, schemas[c].rec_size, 1);
        for (size_t i = 0; i < s->nfields; i++) {
            const state_field_t *f = &s->fields[i];
            if (f->type != STATE_F_U64_ARRAY)
                continue;
            const size_t lens[] = {0, f->size - 1, f->size + 1, f->size * 2};
            for (size_t l = 0; l < NELEMS(lens); l++) {
                array_bad_t a = {lens[l], SIZE_MAX, BAD_POS};
                sl_buf_reset(&b);
                pack_record(&b, s, &in, s->version, i, pack_bad_array, &a, 0);
                cr_expect_eq(decode(s, &b, &out), SL_ERR_CORRUPT, "%s.%s with %zu elements", s->name, f->name,
                             lens[l]);
            }
            /* right length, one bad element at each position */
            static const bad_kind_t kinds[] = {BAD_STR, BAD_NEG, BAD_FLOAT64, BAD_NIL, BAD_TRUE, BAD_ARRAY1, BAD_MAP};
            for (size_t at = 0; at < f->size; at++)
                for (size_t k = 0; k < NELEMS(kinds); k++) {
                    array_bad_t a = {f->size, at, kinds[k]};
                    sl_buf_reset(&b);
                    pack_record(&b, s, &in, s->version, i, pack_bad_array, &a, 0);
                    cr_expect_eq(decode(s, &b, &out), SL_ERR_CORRUPT, "%s.%s[%zu] = %s", s->name, f->name, at,
                                 bad_names[kinds[k]]);
                }
            /* and the right thing is accepted */
            array_bad_t a = {f->size, SIZE_MAX, BAD_POS};
            sl_buf_reset(&b);
            pack_record(&b, s, &in, s->version, i, pack_bad_array, &a, 0);
            cr_expect_eq(decode(s, &b, &out), SL_OK, "%s.%s", s->name, f->name);
            cr_expect_eq(((const uint64_t *)((const char *)&out + f->offset))[f->size - 1], f->size - 1);
        }
    }
    sl_buf_dispose(&b);
}

Test(record, integer_ranges)
{
    sl_buf_t b = SL_BUF_INIT;
    for (size_t c = 0; c < NELEMS(schemas); c++) {
        const state_schema_t *s = schemas[c].schema;
        any_rec_t in, out;
        fill(s, &in, schemas[c].rec_size, 1);
        for (size_t i = 0; i < s->nfields; i++) {
            const state_field_t *f = &s->fields[i];
            if (f->type != STATE_F_U8 && f->type != STATE_F_U32 && f->type != STATE_F_U64)
                continue;
            const struct {
                uint64_t v;
                int ok;
            } vals[] = {
                {0, 1},
                {field_max(f), 1},
                {field_max(f) + 1, f->type == STATE_F_U64 ? 1 : 0}, /* wraps to 0 for u64: fine */
                {(uint64_t)UINT8_MAX + 1, f->type != STATE_F_U8},
                {(uint64_t)UINT16_MAX + 1, f->type != STATE_F_U8},
                {(uint64_t)UINT32_MAX + 1, f->type == STATE_F_U64},
                {UINT64_MAX, f->type == STATE_F_U64},
            };
            for (size_t v = 0; v < NELEMS(vals); v++) {
                sl_buf_reset(&b);
                pack_record(&b, s, &in, s->version, i, pack_u64, &vals[v].v, 0);
                memset(&out, 0, sizeof(out));
                sl_err_t err = decode(s, &b, &out);
                cr_expect_eq(err, vals[v].ok ? SL_OK : SL_ERR_CORRUPT, "%s.%s = %llu: %s", s->name, f->name,
                             (unsigned long long)vals[v].v, sl_err_name(err));
            }
        }
    }
    sl_buf_dispose(&b);
}

typedef struct str_val {
    const char *p;
    size_t n;
} str_val_t;

static void pack_str(msgpack_packer *pk, const state_field_t *f, const void *ctx)
{
    (void)f;
    const str_val_t *v = ctx;
    msgpack_pack_str_with_body(pk, v->p, v->n);
}

Test(record, strings)
{
    sl_buf_t b = SL_BUF_INIT;
    char big[1200];
    memset(big, 's', sizeof(big));
    const state_schema_t *s = &state_event_schema;
    state_event_t in;
    fill(s, &in, sizeof(in), 1);
    size_t seen = 0;
    for (size_t i = 0; i < s->nfields; i++) {
        const state_field_t *f = &s->fields[i];
        if (f->type != STATE_F_STR)
            continue;
        seen++;
        cr_assert_lt(f->size + 300, sizeof(big));
        char nul_mid[8] = {'a', 'b', '\0', 'c'};
        const struct {
            str_val_t v;
            sl_err_t want;
            const char *why;
        } cases[] = {
            {{big, f->size - 1}, SL_OK, "longest"},
            {{big, f->size}, SL_ERR_CORRUPT, "one too long (no room for the NUL)"},
            {{big, f->size + 1}, SL_ERR_CORRUPT, "two too long"},
            {{big, f->size + 300}, SL_ERR_CORRUPT, "str16 length"},
            {{nul_mid, 4}, SL_ERR_CORRUPT, "NUL inside"},
            {{nul_mid, 3}, SL_ERR_CORRUPT, "NUL at the end"},
            {{nul_mid + 2, 1}, SL_ERR_CORRUPT, "only a NUL"},
            {{"", 0}, SL_OK, "empty"},
            {{"\xc3\xa9t\xc3\xa9", 5}, SL_OK, "UTF-8"},
        };
        for (size_t k = 0; k < NELEMS(cases); k++) {
            sl_buf_reset(&b);
            pack_record(&b, s, &in, s->version, i, pack_str, &cases[k].v, 0);
            state_event_t out;
            memset(&out, 0x55, sizeof(out));
            sl_err_t err = decode(s, &b, &out);
            cr_expect_eq(err, cases[k].want, "%s: %s: %s", f->name, cases[k].why, sl_err_name(err));
            if (err == SL_OK) {
                const char *p = (const char *)&out + f->offset;
                cr_expect_eq(strnlen(p, f->size), cases[k].v.n, "%s: %s", f->name, cases[k].why);
                cr_expect(memcmp(p, cases[k].v.p, cases[k].v.n) == 0);
            }
        }
    }
    cr_expect_eq(seen, 4); /* network, endpoint, reason; host (version 2) */
    sl_buf_dispose(&b);
}

/* ---- hostile containers ------------------------------------------------------ */

/* Counts what is asked of malloc while armed, to check that a hostile count is
 * refused before msgpack-c sizes an allocation from it. glibc's own entry
 * points do the work; not under ASan, which owns malloc there. */
#if !defined(__SANITIZE_ADDRESS__)
#define COUNT_MALLOC 1
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
static volatile int malloc_armed;
static volatile size_t malloc_largest;

static void note(size_t n)
{
    if (malloc_armed && n > malloc_largest)
        malloc_largest = n;
}

void *malloc(size_t n)
{
    note(n);
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t sz)
{
    note(n * sz);
    return __libc_calloc(n, sz);
}

void *realloc(void *p, size_t n)
{
    note(n);
    return __libc_realloc(p, n);
}

void free(void *p)
{
    __libc_free(p);
}
#endif

typedef struct hostile_case {
    const char *why;
    unsigned char bytes[16];
    size_t len;
} hostile_case_t;

static const hostile_case_t hostile_cases[] = {
    {"array32 of 2^32-1 in 10 bytes", {0xdd, 0xff, 0xff, 0xff, 0xff, 0x01, 0x01, 0x01, 0x01, 0x01}, 10},
    {"array32 of 2^31", {0xdd, 0x80, 0x00, 0x00, 0x00, 0x01, 0x01, 0x01, 0x01, 0x01}, 10},
    {"array32 of 2^24", {0xdd, 0x01, 0x00, 0x00, 0x00, 0x01, 0x01, 0x01, 0x01, 0x01}, 10},
    {"array16 of 65535", {0xdc, 0xff, 0xff, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01}, 10},
    {"nested array32", {0x92, 0x01, 0xdd, 0xff, 0xff, 0xff, 0xff, 0x01, 0x01, 0x01}, 10},
    {"map32 of 2^32-1", {0xdf, 0xff, 0xff, 0xff, 0xff, 0x01, 0x01, 0x01, 0x01, 0x01}, 10},
    {"str32 of 2^32-1", {0x92, 0x01, 0xdb, 0xff, 0xff, 0xff, 0xff, 0x61, 0x61, 0x61}, 10},
    {"bin32 of 2^32-1", {0x92, 0x01, 0xc6, 0xff, 0xff, 0xff, 0xff, 0x61, 0x61, 0x61}, 10},
    {"ext32 of 2^32-1", {0x92, 0x01, 0xc9, 0xff, 0xff, 0xff, 0xff, 0x01, 0x61, 0x61}, 10},
    {"array32 header cut short", {0xdd, 0xff, 0xff}, 3},
    {"str16 header cut short", {0x91, 0xda, 0xff}, 3},
};

Test(record, hostile_counts_refused_without_allocating)
{
    for (size_t i = 0; i < NELEMS(hostile_cases); i++) {
        const hostile_case_t *c = &hostile_cases[i];
        unsigned char *p = malloc(c->len);
        memcpy(p, c->bytes, c->len);
        for (size_t s = 0; s < NELEMS(schemas); s++) {
            any_rec_t out;
            state_counters_rec_t *cn = calloc(1, sizeof(*cn));
#ifdef COUNT_MALLOC
            malloc_largest = 0;
            malloc_armed = 1;
#endif
            sl_err_t err = state_record_decode(schemas[s].schema, p, c->len, &out);
            sl_err_t err2 = state_counters_decode(p, c->len, cn);
#ifdef COUNT_MALLOC
            malloc_armed = 0;
            cr_expect_lt(malloc_largest, 1 << 20, "%s: an allocation of %zu bytes", c->why, malloc_largest);
#endif
            cr_expect_eq(err, SL_ERR_CORRUPT, "%s (%s): %s", c->why, schemas[s].schema->name, sl_err_name(err));
            cr_expect_eq(err2, SL_ERR_CORRUPT, "%s (counters): %s", c->why, sl_err_name(err2));
            free(cn);
        }
        free(p);
    }
}

/* An array header that claims more elements than bytes remain, counted exactly
 * at the boundary: n elements need at least n bytes. */
Test(record, array_count_boundary)
{
    /* [1, 2, [x, x, x]] as counters with the inner count varied */
    for (unsigned declared = 0; declared < 8; declared++) {
        unsigned char buf[] = {0x93, 0x01, 0x03, (unsigned char)(0x90 | declared), 0x07, 0x08, 0x09};
        state_counters_rec_t *cn = calloc(1, sizeof(*cn));
        sl_err_t err = state_counters_decode(buf, sizeof(buf), cn);
        cr_expect_eq(err, declared == 3 ? SL_OK : SL_ERR_CORRUPT, "declared %u: %s", declared, sl_err_name(err));
        free(cn);
    }
}

Test(record, deep_nesting)
{
    for (size_t depth = 2; depth <= 4096; depth *= 2) {
        size_t len = depth + 1;
        unsigned char *p = malloc(len);
        memset(p, 0x91, depth); /* [[[[...1...]]]] */
        p[depth] = 0x01;
        for (size_t s = 0; s < NELEMS(schemas); s++) {
            any_rec_t out;
            cr_expect_eq(state_record_decode(schemas[s].schema, p, len, &out), SL_ERR_CORRUPT, "depth %zu", depth);
        }
        state_counters_rec_t *cn = calloc(1, sizeof(*cn));
        cr_expect_eq(state_counters_decode(p, len, cn), SL_ERR_CORRUPT, "depth %zu", depth);
        free(cn);
        free(p);
    }
    /* deep nesting inside an otherwise plausible endpoint record's array field */
    unsigned char rec[64] = {0x9b, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x93};
    size_t n = 12;
    for (int k = 0; k < 20; k++)
        rec[n++] = 0x91;
    rec[n++] = 0x00;
    rec[n++] = 0x00;
    rec[n++] = 0x00;
    state_endpoint_rec_t out;
    cr_expect_eq(state_record_decode(&state_endpoint_schema, rec, n, &out), SL_ERR_CORRUPT);
}

/* ---- counters ------------------------------------------------------------------ */

Test(record, counters_round_trip)
{
    static const uint32_t ns[] = {0, 1, 2, 100, STATE_COUNTERS_MAX - 1, STATE_COUNTERS_MAX};
    state_counters_rec_t *in = calloc(1, sizeof(*in)), *out = calloc(1, sizeof(*out));
    sl_buf_t b = SL_BUF_INIT;
    for (size_t i = 0; i < NELEMS(ns); i++) {
        in->n = ns[i];
        for (uint32_t k = 0; k < STATE_COUNTERS_MAX; k++)
            in->v[k] = k < in->n ? (k % 3 == 0 ? UINT64_MAX - k : (uint64_t)k * 1000003) : 0;
        sl_buf_reset(&b);
        cr_assert_eq(state_counters_encode(in, &b), SL_OK);
        memset(out, 0, sizeof(*out));
        cr_assert_eq(state_counters_decode(b.base, b.len, out), SL_OK, "n %u", ns[i]);
        cr_expect_eq(out->n, in->n);
        cr_expect(memcmp(out->v, in->v, sizeof(in->v[0]) * in->n) == 0, "n %u", ns[i]);
        /* every proper prefix, for the small ones */
        if (b.len < 64)
            for (size_t len = 0; len < b.len; len++) {
                unsigned char *p = malloc(len ? len : 1);
                memcpy(p, b.base, len);
                cr_expect_eq(state_counters_decode(p, len, out), SL_ERR_CORRUPT, "n %u prefix %zu", ns[i], len);
                free(p);
            }
    }
    /* and a long one, at a few cut points */
    in->n = STATE_COUNTERS_MAX;
    sl_buf_reset(&b);
    cr_assert_eq(state_counters_encode(in, &b), SL_OK);
    for (size_t len = 0; len < b.len; len += b.len / 97 + 1)
        cr_expect_eq(state_counters_decode(b.base, len, out), SL_ERR_CORRUPT, "prefix %zu", len);
    cr_expect_eq(state_counters_decode(b.base, b.len - 1, out), SL_ERR_CORRUPT);
    sl_buf_dispose(&b);
    free(in);
    free(out);
}

Test(record, counters_encode_refuses_too_many)
{
    state_counters_rec_t *in = calloc(1, sizeof(*in));
    sl_buf_t b = SL_BUF_INIT;
    static const uint32_t ns[] = {STATE_COUNTERS_MAX + 1, UINT32_MAX};
    for (size_t i = 0; i < NELEMS(ns); i++) {
        in->n = ns[i];
        cr_expect_eq(state_counters_encode(in, &b), SL_ERR_RANGE, "n %u", ns[i]);
        cr_expect_eq(b.len, 0, "n %u: wrote something", ns[i]);
    }
    sl_buf_dispose(&b);
    free(in);
}

/* The per-method record is stored: its order is part of the on-disk format. */
Test(record, per_method_layout)
{
    cr_expect_eq(STATE_MC_REQUESTS, 0);
    cr_expect_eq(STATE_MC_CREDITS, 1);
    cr_expect_eq(STATE_MC_REFUSALS, 2);
    static const size_t tables[] = {0, 1, 7};
    for (size_t t = 0; t < NELEMS(tables); t++) {
        size_t nm = tables[t];
        uint32_t len = state_mc_len(nm);
        cr_expect_eq(len, (nm + 1) * STATE_MC_COUNT, "%zu methods", nm);
        uint8_t seen[(7 + 1) * STATE_MC_COUNT] = {0};
        for (size_t m = 0; m <= nm; m++) /* the last row: any other method */
            for (int c = 0; c < STATE_MC_COUNT; c++) {
                size_t i = state_mc_index(m, (state_method_counter_t)c);
                cr_assert_lt(i, len, "%zu methods: row %zu counter %d", nm, m, c);
                cr_expect_eq(seen[i]++, 0, "%zu methods: entry %zu twice", nm, i);
            }
    }
}

Test(record, slot_rates_by_name)
{
    state_pressure_slot_rec_t *r = calloc(1, sizeof(*r));
    r->ep_calls_milli[3] = 11;
    r->ep_billed_milli[3] = 22;
    r->ep_throughput_milli[3] = 33;
    cr_expect_eq(state_slot_rate_milli(r, 3, STATE_RATE_CALLS), 11);
    cr_expect_eq(state_slot_rate_milli(r, 3, STATE_RATE_BILLED), 22);
    cr_expect_eq(state_slot_rate_milli(r, 3, STATE_RATE_THROUGHPUT), 33);
    cr_expect_eq(state_slot_rate_milli(r, 2, STATE_RATE_CALLS), 0);
    free(r);
}

typedef struct counters_case {
    const char *why;
    uint64_t version;
    uint64_t n;                   /* declared */
    size_t len;                   /* elements written */
    bad_kind_t bad;               /* element 0 written as this (BAD_POS: all fine) */
    int extra_top;                /* elements added to the top array */
    sl_err_t want;
} counters_case_t;

static const counters_case_t counters_cases[] = {
    {"fine", 1, 3, 3, BAD_POS, 0, SL_OK},
    {"n above the max", 1, STATE_COUNTERS_MAX + 1, STATE_COUNTERS_MAX + 1, BAD_POS, 0, SL_ERR_CORRUPT},
    {"n above the max, short array", 1, STATE_COUNTERS_MAX + 1, 2, BAD_POS, 0, SL_ERR_CORRUPT},
    {"n huge", 1, UINT64_MAX, 2, BAD_POS, 0, SL_ERR_CORRUPT},
    {"n < array", 1, 2, 3, BAD_POS, 0, SL_ERR_CORRUPT},
    {"n > array", 1, 4, 3, BAD_POS, 0, SL_ERR_CORRUPT},
    {"n 0, one element", 1, 0, 1, BAD_POS, 0, SL_ERR_CORRUPT},
    {"n 1, empty array", 1, 1, 0, BAD_POS, 0, SL_ERR_CORRUPT},
    {"version 2", 2, 3, 3, BAD_POS, 0, SL_ERR_VERSION},
    {"version 0", 0, 3, 3, BAD_POS, 0, SL_ERR_VERSION},
    {"string element", 1, 3, 3, BAD_STR, 0, SL_ERR_CORRUPT},
    {"negative element", 1, 3, 3, BAD_NEG, 0, SL_ERR_CORRUPT},
    {"float element", 1, 3, 3, BAD_FLOAT64, 0, SL_ERR_CORRUPT},
    {"nil element", 1, 3, 3, BAD_NIL, 0, SL_ERR_CORRUPT},
    {"array element", 1, 3, 3, BAD_ARRAY1, 0, SL_ERR_CORRUPT},
    {"four top elements", 1, 3, 3, BAD_POS, 1, SL_ERR_CORRUPT},
};

Test(record, counters_rejection)
{
    sl_buf_t b = SL_BUF_INIT;
    state_counters_rec_t *out = calloc(1, sizeof(*out));
    for (size_t i = 0; i < NELEMS(counters_cases); i++) {
        const counters_case_t *c = &counters_cases[i];
        sl_buf_reset(&b);
        msgpack_packer pk;
        msgpack_packer_init(&pk, &b, buf_write);
        msgpack_pack_array(&pk, 3 + c->extra_top);
        msgpack_pack_uint64(&pk, c->version);
        msgpack_pack_uint64(&pk, c->n);
        msgpack_pack_array(&pk, c->len);
        for (size_t k = 0; k < c->len; k++) {
            if (k == 0)
                pack_bad(&pk, c->bad);
            else
                msgpack_pack_uint64(&pk, k);
        }
        for (int k = 0; k < c->extra_top; k++)
            msgpack_pack_uint8(&pk, 0);
        sl_err_t err = state_counters_decode(b.base, b.len, out);
        cr_expect_eq(err, c->want, "%s: %s", c->why, sl_err_name(err));
    }
    /* the top-level shapes */
    static const unsigned char shapes[][6] = {
        {1, 0x90},                       /* [] */
        {2, 0x91, 0x01},                 /* [1] */
        {3, 0x92, 0x01, 0x00},           /* [1, 0] */
        {4, 0x93, 0x01, 0x00, 0xc0},     /* [1, 0, nil] */
        {4, 0x93, 0x01, 0xa0, 0x90},     /* [1, "", []] */
        {4, 0x93, 0xa0, 0x00, 0x90},     /* ["", 0, []] */
        {4, 0x93, 0x01, 0x00, 0x80},     /* [1, 0, {}] */
        {1, 0x01},                       /* 1 */
    };
    for (size_t i = 0; i < NELEMS(shapes); i++)
        cr_expect_eq(state_counters_decode(&shapes[i][1], shapes[i][0], out), SL_ERR_CORRUPT, "shape %zu", i);
    static const unsigned char empty_ok[] = {0x93, 0x01, 0x00, 0x90};
    cr_expect_eq(state_counters_decode(empty_ok, sizeof(empty_ok), out), SL_OK);
    cr_expect_eq(out->n, 0);
    sl_buf_dispose(&b);
    free(out);
}

/* An upgrade keeps what an older sluice wrote: a version-1 endpoint record
 * (before rl_backoff_ms) keeps its drain, breaker and mark; a version-1
 * stats record (fewer outcomes) keeps its counts, the new outcomes at 0. */
Test(record, older_versions_read_with_new_fields_zero)
{
    sl_buf_t b = SL_BUF_INIT;
    msgpack_packer pk;
    msgpack_packer_init(&pk, &b, buf_write);
    size_t nf = 0; /* the fields version 1 had */
    while (nf < state_endpoint_schema.nfields && state_endpoint_schema.fields[nf].since <= 1)
        nf++;
    cr_assert_eq(state_endpoint_schema.version, 8, "update this test");
    cr_assert_str_eq(state_endpoint_schema.fields[nf].name, "rl_backoff_ms");
    nf++; /* as an index bound below: version + version 1's fields */
    msgpack_pack_array(&pk, nf); /* version + version 1's fields */
    msgpack_pack_uint32(&pk, 1);
    state_endpoint_rec_t want = {.breaker = 1, .since_ms = 5, .drained = 1, .drained_at_ms = 7,
                                 .rate_limited_until_ms = 9};
    sl_buf_t full = SL_BUF_INIT;
    cr_assert_eq(state_record_encode(&state_endpoint_schema, &want, &full), SL_OK);
    /* re-pack the current encoding's fields but the last under version 1 */
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    cr_assert_eq(msgpack_unpack_next(&u, full.base, full.len, NULL), MSGPACK_UNPACK_SUCCESS);
    for (size_t i = 1; i < nf; i++)
        msgpack_pack_object(&pk, u.data.via.array.ptr[i]);
    msgpack_unpacked_destroy(&u);
    state_endpoint_rec_t out;
    memset(&out, 0xee, sizeof(out));
    cr_assert_eq(state_record_decode(&state_endpoint_schema, b.base, b.len, &out), SL_OK);
    cr_expect_eq(out.breaker, 1);
    cr_expect_eq(out.drained, 1, "the operator's drain survives the upgrade");
    cr_expect_eq(out.drained_at_ms, 7);
    cr_expect_eq(out.rate_limited_until_ms, 9);
    cr_expect_eq(out.rl_backoff_ms, 0, "a field the old version did not have reads 0");
    cr_expect_eq(out.demoted_until_ms, 0);
    cr_expect_eq(out.demotions, 0);
    cr_expect_eq(out.rl_since_ms, 0);
    cr_expect_eq(out.rl_marks, 0);
    cr_expect_eq(out.finalized, 0);
    cr_expect_eq(out.head_hash[0], '\0', "a string the old version did not have reads empty");
    sl_buf_dispose(&b);
    sl_buf_dispose(&full);
}

/* Events gained host and origin_seq in version 2 (cluster:): a log written
 * before reads on, the two fields empty; a version-2 event keeps them. */
Test(record, events_of_version_1_read_without_host)
{
    cr_assert_eq(state_event_schema.version, 2, "update this test");
    state_event_t ev, out;
    state_event_init(&ev, STATE_EVENT_BREAKER_OPENED, "eth", "a", 1234);
    snprintf(ev.host, sizeof(ev.host), "gw-1");
    ev.origin_seq = 77;
    sl_buf_t full = SL_BUF_INIT, b = SL_BUF_INIT;
    cr_assert_eq(state_record_encode(&state_event_schema, &ev, &full), SL_OK);
    memset(&out, 0, sizeof(out));
    cr_assert_eq(state_record_decode(&state_event_schema, full.base, full.len, &out), SL_OK);
    cr_expect_str_eq(out.host, "gw-1");
    cr_expect_eq(out.origin_seq, 77);
    /* the same event as version 1 wrote it: the first ten fields */
    msgpack_packer pk;
    msgpack_packer_init(&pk, &b, buf_write);
    msgpack_pack_array(&pk, 11);
    msgpack_pack_uint32(&pk, 1);
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    cr_assert_eq(msgpack_unpack_next(&u, full.base, full.len, NULL), MSGPACK_UNPACK_SUCCESS);
    for (size_t i = 1; i <= 10; i++)
        msgpack_pack_object(&pk, u.data.via.array.ptr[i]);
    msgpack_unpacked_destroy(&u);
    memset(&out, 0xee, sizeof(out));
    cr_assert_eq(state_record_decode(&state_event_schema, b.base, b.len, &out), SL_OK);
    cr_expect_str_eq(out.network, "eth");
    cr_expect_eq(out.ts_ms, 1234);
    cr_expect_str_eq(out.host, "", "no host before version 2");
    cr_expect_eq(out.origin_seq, 0);
    sl_buf_dispose(&b);
    sl_buf_dispose(&full);
}
