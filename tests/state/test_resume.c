/* tests/state/test_resume.c: held subscriptions' positions
 * (state/state_resume.h) against a real LMDB environment: taken over once,
 * expired, bounded per identity, purged. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "state/state.h"
#include "state/state_int.h"
#include "state/state_resume.h"
#include "tests/lib/temp_dir.h"

static char tmpdir[256];
static char dbpath[512];
static state_t *st;

static void setup(void)
{
    temp_dir_make(tmpdir, sizeof(tmpdir), "resume");
    snprintf(dbpath, sizeof(dbpath), "%s/state", tmpdir);
    state_conf_t c = {.path = dbpath, .map_size_mb = 16, .event_max_count = 1000, .event_max_age_s = 86400};
    cr_assert_eq(state_open(&c, &st), SL_OK);
}

static void teardown(void)
{
    state_close(st);
    temp_dir_remove(tmpdir);
}

TestSuite(resume, .init = setup, .fini = teardown);

static size_t held(void)
{
    MDB_txn *txn;
    MDB_stat s;
    cr_assert_eq(mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn), MDB_SUCCESS);
    cr_assert_eq(mdb_stat(txn, st->dbi[STATE_DB_RESUME], &s), MDB_SUCCESS);
    mdb_txn_abort(txn);
    return s.ms_entries;
}

static void hold(const char *ident, uint64_t params, uint64_t height, uint64_t at_ms, uint64_t for_ms, size_t *dropped)
{
    char key[STATE_RESUME_KEY_MAX];
    state_resume_rec_t r = {.height = height, .held_ms = at_ms, .expires_ms = at_ms + for_ms};
    snprintf(r.hash, sizeof(r.hash), "0x%064x", (unsigned)height);
    cr_assert_neq(state_resume_key(key, sizeof(key), ident, "eth", "logs", params), 0);
    cr_assert_eq(state_resume_hold(st, key, ident, &r, at_ms, dropped), SL_OK);
}

/* 0 none, 1 held, 2 held but expired at now_ms */
static int take(const char *ident, uint64_t params, uint64_t now_ms, state_resume_rec_t *r)
{
    char key[STATE_RESUME_KEY_MAX];
    int found = -1;
    cr_assert_neq(state_resume_key(key, sizeof(key), ident, "eth", "logs", params), 0);
    cr_assert_eq(state_resume_take(st, key, r, &found), SL_OK);
    return found && r->expires_ms <= now_ms ? 2 : found;
}

Test(resume, taken_over_once_with_its_position)
{
    size_t dropped;
    state_resume_rec_t r;
    hold("key:app", 7, 1002, 1000, 60000, &dropped);
    cr_assert_eq(dropped, 0);
    cr_assert_eq(take("key:other", 7, 2000, &r), 0, "another identity's is not found");
    cr_assert_eq(take("key:app", 8, 2000, &r), 0, "other params' is not found");
    cr_assert_eq(take("key:app", 7, 2000, &r), 1);
    cr_assert_eq(r.height, 1002);
    cr_assert_str_eq(r.hash, "0x00000000000000000000000000000000000000000000000000000000000003ea");
    cr_assert_eq(take("key:app", 7, 2000, &r), 0, "taken once");
    cr_assert_eq(held(), 0);
}

Test(resume, expired_found_and_deleted)
{
    size_t dropped, removed;
    state_resume_rec_t r;
    hold("key:app", 1, 10, 1000, 60000, &dropped);
    cr_assert_eq(take("key:app", 1, 61000, &r), 2, "at expires_ms: expired");
    cr_assert_eq(held(), 0);
    hold("key:app", 1, 10, 1000, 60000, &dropped);
    hold("key:b", 1, 10, 1000, 90000, &dropped);
    cr_assert_eq(state_resume_purge(st, 70000, &removed), SL_OK);
    cr_assert_eq(removed, 0, "kept within the grace: a late caller is counted expired");
    cr_assert_eq(state_resume_purge(st, 61000 + STATE_RESUME_GRACE_MS, &removed), SL_OK);
    cr_assert_eq(removed, 1);
    cr_assert_eq(take("key:b", 1, 70000, &r), 1);
}

Test(resume, bounded_per_identity_oldest_dropped)
{
    size_t dropped;
    state_resume_rec_t r;
    for (uint64_t i = 0; i < STATE_RESUME_PER_IDENTITY; i++) {
        hold("key:app", i, 100 + i, 1000 + i, 60000, &dropped);
        cr_assert_eq(dropped, 0);
    }
    hold("key:app", 7, 500, 2000, 60000, &dropped);
    cr_assert_eq(dropped, 0, "replacing one held is not one more");
    hold("key:app", 999, 999, 3000, 60000, &dropped);
    cr_assert_eq(dropped, 1);
    cr_assert_eq(held(), STATE_RESUME_PER_IDENTITY);
    cr_assert_eq(take("key:app", 0, 4000, &r), 0, "the oldest was dropped");
    cr_assert_eq(take("key:app", 7, 4000, &r), 1);
    cr_assert_eq(r.height, 500);
    hold("key:other", 0, 1, 5000, 60000, &dropped);
    cr_assert_eq(dropped, 0, "another identity has its own bound");
}

Test(resume, a_record_that_does_not_fit_has_no_key)
{
    char key[32];
    cr_assert_eq(state_resume_key(key, sizeof(key), "key:a-rather-long-name", "eth", "logs", 1), 0);
}

Test(resume, record_round_trip_and_size)
{
    state_resume_rec_t r = {.height = 123456789, .held_ms = 1, .expires_ms = 2}, back;
    memset(r.hash, 'a', 66);
    r.hash[66] = '\0';
    for (size_t i = 0; i < STATE_RESUME_BELOW * 4; i++)
        r.below[i] = UINT64_MAX - i; /* the largest encoding: 9 bytes a word */
    sl_buf_t b;
    sl_buf_init(&b);
    cr_assert_eq(state_record_encode(&state_resume_schema, &r, &b), SL_OK);
    cr_assert_eq(state_record_decode(&state_resume_schema, b.base, b.len, &back), SL_OK);
    cr_assert_eq(back.height, r.height);
    cr_assert_str_eq(back.hash, r.hash);
    cr_assert_eq(memcmp(back.below, r.below, sizeof(r.below)), 0);
    cr_log_info("a held subscription's record: %zu bytes of msgpack at most", b.len);
    cr_assert_lt(b.len, 400);
    sl_buf_dispose(&b);
}
