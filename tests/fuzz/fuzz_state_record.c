/* tests/fuzz/fuzz_state_record.c: state_record_decode (every schema) and
 * state_counters_decode on every input.
 *
 * Oracles:
 *  - decoding never crashes, reads past the input or writes past the record
 *    (each record is a heap block of exactly its size), and answers only OK,
 *    CORRUPT or VERSION;
 *  - after any decode, success or not, every string field holds a NUL within
 *    its size;
 *  - what decodes is one complete msgpack object per msgpack-c, and no proper
 *    prefix of it decodes (msgpack is prefix-free);
 *  - encode(decode(x)) decodes to the same values, and encoding those again
 *    gives the same bytes. */
#include <msgpack.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sl_buf.h"
#include "state/state.h"
#include "state/state_apikey.h"
#include "state/state_record.h"
#include "state/state_resume.h"

#define CHECK(cond) \
    ((cond) ? (void)0 : (fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond), abort()))

typedef struct schema_case {
    const state_schema_t *schema;
    size_t rec_size;
} schema_case_t;

static const schema_case_t schemas[] = {
    {&state_endpoint_schema, sizeof(state_endpoint_rec_t)},
    {&state_event_schema, sizeof(state_event_t)},
    {&state_stats_schema, sizeof(state_stats_rec_t)},
    {&state_network_schema, sizeof(state_network_rec_t)},
    {&state_pressure_schema, sizeof(state_pressure_rec_t)},
    {&state_pressure_slot_schema, sizeof(state_pressure_slot_rec_t)},
    {&state_apikey_schema, sizeof(state_apikey_rec_t)},
    {&state_resume_schema, sizeof(state_resume_rec_t)},
};

static void check_strings(const state_schema_t *s, const void *rec)
{
    for (size_t i = 0; i < s->nfields; i++) {
        const state_field_t *f = &s->fields[i];
        if (f->type == STATE_F_STR)
            CHECK(memchr((const char *)rec + f->offset, '\0', f->size) != NULL);
    }
}

static int ok_or_known(sl_err_t err)
{
    return err == SL_OK || err == SL_ERR_CORRUPT || err == SL_ERR_VERSION;
}

/* One complete object per msgpack-c, exactly len bytes. */
static int msgpack_whole(const uint8_t *data, size_t len)
{
    msgpack_unpacked u;
    size_t off = 0;
    msgpack_unpacked_init(&u);
    int ok = msgpack_unpack_next(&u, (const char *)data, len, &off) == MSGPACK_UNPACK_SUCCESS && off == len;
    msgpack_unpacked_destroy(&u);
    return ok;
}

/* A proper prefix in a block of its own size, so ASan sees any overread. */
/* The version an accepted record says it is (its first element). */
static uint64_t record_version(const uint8_t *data, size_t len)
{
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    uint64_t v = 0;
    if (msgpack_unpack_next(&u, (const char *)data, len, NULL) == MSGPACK_UNPACK_SUCCESS &&
        u.data.type == MSGPACK_OBJECT_ARRAY && u.data.via.array.size > 0 &&
        u.data.via.array.ptr[0].type == MSGPACK_OBJECT_POSITIVE_INTEGER)
        v = u.data.via.array.ptr[0].via.u64;
    msgpack_unpacked_destroy(&u);
    return v;
}

static sl_err_t decode_prefix(const state_schema_t *s, const uint8_t *data, size_t len, size_t rec_size)
{
    uint8_t *p = malloc(len ? len : 1);
    memcpy(p, data, len);
    void *rec = calloc(1, rec_size);
    sl_err_t err = s ? state_record_decode(s, p, len, rec) : state_counters_decode(p, len, rec);
    free(rec);
    free(p);
    return err;
}

static void one_schema(const schema_case_t *c, const uint8_t *data, size_t size)
{
    const state_schema_t *s = c->schema;
    void *rec = calloc(1, c->rec_size);
    sl_err_t err = state_record_decode(s, data, size, rec);
    CHECK(ok_or_known(err));
    check_strings(s, rec);
    if (err != SL_OK) {
        free(rec);
        return;
    }
    CHECK(msgpack_whole(data, size));
    CHECK(decode_prefix(s, data, size - 1, c->rec_size) != SL_OK);

    sl_buf_t b1 = SL_BUF_INIT, b2 = SL_BUF_INIT;
    CHECK(state_record_encode(s, rec, &b1) == SL_OK);
    void *rec2 = calloc(1, c->rec_size);
    CHECK(state_record_decode(s, b1.base, b1.len, rec2) == SL_OK);
    /* both started zeroed and the decoder writes every field, so the whole
     * blocks compare (string tails included) */
    CHECK(memcmp(rec, rec2, c->rec_size) == 0);
    CHECK(state_record_encode(s, rec2, &b2) == SL_OK);
    CHECK(b1.len == b2.len && memcmp(b1.base, b2.base, b1.len) == 0);
    /* the canonical form is no longer than what came in (a record of an
     * older version grows by the fields appended since) */
    uint64_t version = record_version(data, size);
    CHECK(version >= 1 && version <= s->version);
    CHECK(version < s->version || b1.len <= size);
    sl_buf_dispose(&b1);
    sl_buf_dispose(&b2);
    free(rec2);
    free(rec);
}

static void counters(const uint8_t *data, size_t size)
{
    state_counters_rec_t *rec = calloc(1, sizeof(*rec));
    sl_err_t err = state_counters_decode(data, size, rec);
    CHECK(ok_or_known(err));
    if (err != SL_OK) {
        free(rec);
        return;
    }
    CHECK(rec->n <= STATE_COUNTERS_MAX);
    CHECK(msgpack_whole(data, size));
    CHECK(decode_prefix(NULL, data, size - 1, sizeof(*rec)) != SL_OK);
    sl_buf_t b1 = SL_BUF_INIT, b2 = SL_BUF_INIT;
    CHECK(state_counters_encode(rec, &b1) == SL_OK);
    state_counters_rec_t *rec2 = calloc(1, sizeof(*rec2));
    CHECK(state_counters_decode(b1.base, b1.len, rec2) == SL_OK);
    CHECK(rec2->n == rec->n);
    CHECK(memcmp(rec2->v, rec->v, sizeof(rec->v[0]) * rec->n) == 0);
    CHECK(state_counters_encode(rec2, &b2) == SL_OK);
    CHECK(b1.len == b2.len && memcmp(b1.base, b2.base, b1.len) == 0);
    CHECK(b1.len <= size);
    sl_buf_dispose(&b1);
    sl_buf_dispose(&b2);
    free(rec2);
    free(rec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (size_t i = 0; i < sizeof(schemas) / sizeof(schemas[0]); i++)
        one_schema(&schemas[i], data, size);
    counters(data, size);
    return 0;
}
