/* tests/state/test_apikey.c: the keys made at run time (state/state_apikey.c)
 * against a real LMDB environment: kept across a reopen, a clash refused,
 * a change and a revocation each moving the generation with their event,
 * the list in name order, and names the key layout cannot hold refused. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state/state.h"
#include "state/state_apikey.h"
#include "state/state_record.h"
#include "tests/lib/temp_dir.h"

static char tmpdir[256];
static char dbpath[512];
static state_t *st;

static void open_state(void)
{
    state_conf_t c = {.path = dbpath, .map_size_mb = 16, .event_max_count = 1000, .event_max_age_s = 86400};
    sl_err_t err = state_open(&c, &st);
    cr_assert_eq(err, SL_OK, "state_open: %s", sl_err_name(err));
}

static void setup(void)
{
    temp_dir_make(tmpdir, sizeof(tmpdir), "apikey");
    snprintf(dbpath, sizeof(dbpath), "%s/var/state", tmpdir);
    open_state();
}

static void teardown(void)
{
    state_close(st);
    st = NULL;
    temp_dir_remove(tmpdir);
}

TestSuite(apikey, .init = setup, .fini = teardown);

static state_apikey_rec_t key_named(const char *name)
{
    state_apikey_rec_t r;
    memset(&r, 0, sizeof(r));
    snprintf(r.name, sizeof(r.name), "%s", name);
    snprintf(r.tier, sizeof(r.tier), "free");
    memset(r.sha256, 'a', 64);
    snprintf(r.networks, sizeof(r.networks), "eth\nbase");
    snprintf(r.allow, sizeof(r.allow), "eth_*");
    snprintf(r.deny, sizeof(r.deny), "eth_sendRawTransaction");
    snprintf(r.origins, sizeof(r.origins), "https://app.example");
    r.created_ms = r.updated_ms = 1234;
    r.per_address[1] = 60;
    return r;
}

static uint64_t gen_now(void)
{
    uint64_t g;
    cr_assert_eq(state_apikey_generation(st, &g), SL_OK);
    return g;
}

Test(apikey, a_key_made_is_kept_across_a_reopen)
{
    cr_expect_eq(gen_now(), 0, "no key ever made: generation 0");
    state_apikey_rec_t r = key_named("ci"), got;
    cr_assert_eq(state_apikey_put(st, &r, 1, NULL), SL_OK);
    cr_expect_eq(gen_now(), 1);
    state_close(st);
    st = NULL;
    open_state();
    cr_assert_eq(state_apikey_get(st, "ci", &got), SL_OK);
    cr_expect(memcmp(&r, &got, sizeof(r)) == 0, "the record reads back as written");
    cr_expect_eq(gen_now(), 1, "the generation survives too");
}

Test(apikey, a_clash_is_refused_and_changes_nothing)
{
    state_apikey_rec_t r = key_named("ci"), other = key_named("ci"), got;
    cr_assert_eq(state_apikey_put(st, &r, 1, NULL), SL_OK);
    snprintf(other.tier, sizeof(other.tier), "paid");
    cr_expect_eq(state_apikey_put(st, &other, 1, NULL), SL_ERR_EXISTS);
    cr_assert_eq(state_apikey_get(st, "ci", &got), SL_OK);
    cr_expect_str_eq(got.tier, "free");
    cr_expect_eq(gen_now(), 1, "a refused write moves no generation");
}

Test(apikey, a_change_needs_the_key_and_moves_the_generation_with_its_event)
{
    state_apikey_rec_t r = key_named("ci"), got;
    cr_expect_eq(state_apikey_put(st, &r, 0, NULL), SL_ERR_NOT_FOUND, "no key to change");
    cr_assert_eq(state_apikey_put(st, &r, 1, NULL), SL_OK);
    snprintf(r.allow, sizeof(r.allow), "eth_chainId");
    state_event_t ev;
    state_event_init(&ev, STATE_EVENT_KEY_SCOPE_CHANGED, NULL, NULL, 5);
    snprintf(ev.reason, sizeof(ev.reason), "ci");
    uint64_t before = state_events_last_seq(st);
    cr_assert_eq(state_apikey_put(st, &r, 0, &ev), SL_OK);
    cr_assert_eq(state_apikey_get(st, "ci", &got), SL_OK);
    cr_expect_str_eq(got.allow, "eth_chainId");
    cr_expect_eq(gen_now(), 2);
    state_event_t read[4];
    size_t n = 0;
    cr_assert_eq(state_events_read(st, before, read, 4, &n), SL_OK);
    cr_assert_eq(n, 1, "one event with the change");
    cr_expect_eq(read[0].kind, STATE_EVENT_KEY_SCOPE_CHANGED);
    cr_expect_str_eq(read[0].reason, "ci");
}

Test(apikey, a_revoked_key_is_gone_and_a_second_revocation_finds_nothing)
{
    state_apikey_rec_t r = key_named("ci"), got;
    cr_assert_eq(state_apikey_put(st, &r, 1, NULL), SL_OK);
    state_event_t ev;
    state_event_init(&ev, STATE_EVENT_KEY_REVOKED, NULL, NULL, 5);
    cr_assert_eq(state_apikey_delete(st, "ci", 1000, &ev), SL_OK);
    cr_expect_eq(state_apikey_get(st, "ci", &got), SL_ERR_NOT_FOUND);
    cr_expect_eq(gen_now(), 2);
    cr_expect_eq(state_apikey_delete(st, "ci", 1001, NULL), SL_ERR_NOT_FOUND);
    cr_expect_eq(gen_now(), 2);
    state_apikey_rec_t again = key_named("ci");
    cr_expect_eq(state_apikey_put(st, &again, 1, NULL), SL_OK, "the name is free again");
}

Test(apikey, a_revocation_leaves_its_tombstone_and_the_cluster_applies_without_an_event)
{
    state_apikey_rec_t r = key_named("ci"), got;
    cr_expect_eq(state_apikey_gone_ms(st, "ci"), 0, "never revoked");
    cr_assert_eq(state_apikey_apply(st, &r), SL_OK, "applied though none was kept");
    r.updated_ms = 2000;
    cr_assert_eq(state_apikey_apply(st, &r), SL_OK, "applied over the one kept");
    cr_assert_eq(state_apikey_get(st, "ci", &got), SL_OK);
    cr_expect_eq(got.updated_ms, 2000);
    cr_expect_eq(gen_now(), 2, "each moved the generation");
    cr_assert_eq(state_apikey_delete(st, "ci", 3000, NULL), SL_OK);
    cr_expect_eq(state_apikey_gone_ms(st, "ci"), 3000);
    cr_assert_eq(state_apikey_apply(st, &r), SL_OK);
    cr_assert_eq(state_apikey_forget(st, "ci", 4000), SL_OK);
    cr_expect_eq(state_apikey_gone_ms(st, "ci"), 4000, "the later revocation's time");
    cr_expect_eq(state_apikey_forget(st, "ci", 5000), SL_ERR_NOT_FOUND);
    cr_expect_eq(state_apikey_gone_ms(st, "ci"), 4000, "nothing written when none is kept");
    state_apikey_rec_t *list;
    size_t n;
    cr_assert_eq(state_apikey_list(st, &list, &n, NULL), SL_OK);
    cr_expect_eq(n, 0, "a tombstone is no key");
    free(list);
    state_event_t read[4];
    size_t nread = 0;
    cr_assert_eq(state_events_read(st, 0, read, 4, &nread), SL_OK);
    cr_expect_eq(nread, 0, "no event: the host that made the change logged it");
}

Test(apikey, the_list_holds_every_key_by_name_and_nothing_else_of_meta)
{
    const char *names[] = {"zeta", "alpha", "mid"};
    for (size_t i = 0; i < 3; i++) {
        state_apikey_rec_t r = key_named(names[i]);
        cr_assert_eq(state_apikey_put(st, &r, 1, NULL), SL_OK);
    }
    state_apikey_rec_t *list;
    size_t n;
    uint64_t gen;
    cr_assert_eq(state_apikey_list(st, &list, &n, &gen), SL_OK);
    cr_assert_eq(n, 3);
    cr_expect_eq(gen, 3);
    cr_expect_str_eq(list[0].name, "alpha");
    cr_expect_str_eq(list[1].name, "mid");
    cr_expect_str_eq(list[2].name, "zeta");
    free(list);
}

Test(apikey, an_empty_list_is_null_and_zero)
{
    state_apikey_rec_t *list = (state_apikey_rec_t *)1;
    size_t n = 9;
    cr_assert_eq(state_apikey_list(st, &list, &n, NULL), SL_OK);
    cr_expect_null(list);
    cr_expect_eq(n, 0);
}

Test(apikey, names_the_layout_cannot_hold_are_refused)
{
    state_apikey_rec_t r = key_named("a/b");
    cr_expect_eq(state_apikey_put(st, &r, 1, NULL), SL_ERR_INVALID);
    r = key_named("");
    cr_expect_eq(state_apikey_put(st, &r, 1, NULL), SL_ERR_INVALID);
    cr_expect_eq(gen_now(), 0);
}

Test(apikey, a_version_1_record_reads_with_no_per_address_limit)
{
    /* a record written before per_address (version 2): its fields then */
    state_schema_t v1 = state_apikey_schema;
    v1.version = 1;
    while (v1.nfields > 0 && v1.fields[v1.nfields - 1].since > 1)
        v1.nfields--;
    cr_assert_lt(v1.nfields, state_apikey_schema.nfields);
    state_apikey_rec_t r = key_named("old"), got;
    sl_buf_t b;
    sl_buf_init(&b);
    cr_assert_eq(state_record_encode(&v1, &r, &b), SL_OK);
    memset(&got, 0xff, sizeof(got));
    cr_assert_eq(state_record_decode(&state_apikey_schema, b.base, b.len, &got), SL_OK);
    cr_expect_str_eq(got.name, "old");
    cr_expect_eq(got.per_address[0] | got.per_address[1] | got.per_address[2], 0, "none in an old record");
    sl_buf_dispose(&b);
}

Test(apikey, a_version_2_record_reads_with_no_credits_or_jwt)
{
    /* a record written before credits and jwt (version 3) */
    state_schema_t v2 = state_apikey_schema;
    v2.version = 2;
    while (v2.nfields > 0 && v2.fields[v2.nfields - 1].since > 2)
        v2.nfields--;
    cr_assert_lt(v2.nfields, state_apikey_schema.nfields);
    state_apikey_rec_t r = key_named("old"), got;
    r.per_address[0] = 5;
    sl_buf_t b;
    sl_buf_init(&b);
    cr_assert_eq(state_record_encode(&v2, &r, &b), SL_OK);
    memset(&got, 0xff, sizeof(got));
    cr_assert_eq(state_record_decode(&state_apikey_schema, b.base, b.len, &got), SL_OK);
    cr_expect_eq(got.per_address[0], 5);
    cr_expect_eq(got.credits[0] | got.credits[1], 0, "no budget in an old record");
    cr_expect_str_eq(got.jwt_pem, "");
    cr_expect_str_eq(got.jwt_audience, "");
    sl_buf_dispose(&b);
}

Test(apikey, credits_and_jwt_are_kept)
{
    state_apikey_rec_t r = key_named("jwt"), got;
    r.credits[0] = 2000000;
    r.credits[1] = 7;
    snprintf(r.jwt_pem, sizeof(r.jwt_pem), "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n");
    snprintf(r.jwt_audience, sizeof(r.jwt_audience), "sluice");
    cr_assert_eq(state_apikey_put(st, &r, 1, NULL), SL_OK);
    cr_assert_eq(state_apikey_get(st, "jwt", &got), SL_OK);
    cr_expect_eq(got.credits[0], 2000000);
    cr_expect_eq(got.credits[1], 7);
    cr_expect_str_eq(got.jwt_pem, r.jwt_pem);
    cr_expect_str_eq(got.jwt_audience, "sluice");
}
