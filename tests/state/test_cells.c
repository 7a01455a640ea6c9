/* tests/state/test_cells.c: client-limit cells are bounded (eviction) and
 * purged in bounded transactions, against a real LMDB environment. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state/state.h"
#include "state/state_int.h"
#include "tests/lib/temp_dir.h"

static char tmpdir[256];
static char dbpath[512];
static state_t *st;

static void setup(void)
{
    temp_dir_make(tmpdir, sizeof(tmpdir), "cells");
    snprintf(dbpath, sizeof(dbpath), "%s/state", tmpdir);
    st = NULL;
}

static void teardown(void)
{
    state_close(st);
    temp_dir_remove(tmpdir);
}

TestSuite(cells, .init = setup, .fini = teardown);

static void open_with(size_t map_mb, uint32_t max_cells)
{
    state_conf_t c = {.path = dbpath, .map_size_mb = map_mb, .event_max_count = 1000, .event_max_age_s = 86400,
                      .max_cells = max_cells};
    cr_assert_eq(state_open(&c, &st), SL_OK);
}

static size_t cells(void)
{
    MDB_txn *txn;
    MDB_stat s;
    cr_assert_eq(mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn), MDB_SUCCESS);
    cr_assert_eq(mdb_stat(txn, st->dbi[STATE_DB_LIMITS], &s), MDB_SUCCESS);
    mdb_txn_abort(txn);
    return s.ms_entries;
}

static int has_cell(const char *key)
{
    state_cell_rec_t rec;
    cr_assert_eq(state_read_begin(st), SL_OK);
    sl_err_t err = state_budget_get(st, STATE_BUDGET_LIMITS, key, &rec);
    state_read_end(st);
    return err == SL_OK;
}

/* The lease callback: every cell gets the TAT in ctx. */
static int set_tat(void *ctx, void *recs, size_t n, state_event_t *events, size_t *nevents)
{
    (void)events;
    (void)nevents;
    state_cell_rec_t *c = recs;
    for (size_t i = 0; i < n; i++)
        c[i].tat_us = *(uint64_t *)ctx;
    return 1;
}

static void put_cell(const char *key, uint64_t tat, uint64_t now)
{
    const char *keys[1] = {key};
    cr_assert_eq(state_cells_update(st, keys, 1, now, set_tat, &tat), SL_OK, "%s", key);
}

Test(cells, never_more_than_max_cells)
{
    open_with(16, 100);
    char key[64];
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof(key), "ip:10.0.%d.%d/standard/1", i / 256, i % 256);
        put_cell(key, 2000000 + (uint64_t)i, 1000000); /* each in debt at now */
        cr_assert_leq(cells(), 100, "after %d cells: %zu stored", i + 1, cells());
    }
    cr_expect_eq(cells(), 100);
    cr_expect(has_cell(key), "the newest cell is kept");
}

Test(cells, idle_cells_go_before_cells_in_debt)
{
    open_with(16, 200);
    char key[64];
    uint64_t now = 5000000;
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof(key), "ip:a/%03d", i);
        /* odd cells owe time at now, even ones are idle (TAT in the past) */
        put_cell(key, i % 2 ? now + 1000000 : now - 1000, now - 2000);
    }
    cr_assert_eq(cells(), 200);
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof(key), "ip:b/%03d", i);
        put_cell(key, now + 1000000, now);
    }
    cr_expect_eq(cells(), 200);
    for (int i = 1; i < 200; i += 2) {
        snprintf(key, sizeof(key), "ip:a/%03d", i);
        cr_expect(has_cell(key), "%s (in debt) was evicted while idle cells were left", key);
    }
}

Test(cells, with_only_cells_in_debt_the_least_indebted_of_a_sample_goes)
{
    open_with(16, 32);
    char key[64];
    uint64_t now = 1000000;
    /* one cell owes a day, the others a second */
    put_cell("ip:big/standard/86400", now + 86400000000ull, now);
    for (int i = 0; i < 31; i++) {
        snprintf(key, sizeof(key), "ip:small/%02d", i);
        put_cell(key, now + 1000000, now);
    }
    for (int i = 0; i < 16; i++) {
        snprintf(key, sizeof(key), "ip:new/%02d", i);
        put_cell(key, now + 1000000, now);
    }
    cr_expect_eq(cells(), 32);
    cr_expect(has_cell("ip:big/standard/86400"), "the most indebted cell was evicted");
}

/* A cell as gw_limit writes it: TAT and the window's emission interval. */
typedef struct cell_val {
    uint64_t tat_us, interval_us;
} cell_val_t;

static int set_cell(void *ctx, void *recs, size_t n, state_event_t *events, size_t *nevents)
{
    (void)events;
    (void)nevents;
    state_cell_rec_t *c = recs;
    for (size_t i = 0; i < n; i++) {
        c[i].tat_us = ((const cell_val_t *)ctx)->tat_us;
        c[i].interval_us = ((const cell_val_t *)ctx)->interval_us;
    }
    return 1;
}

static void put_cell_iv(const char *key, uint64_t tat, uint64_t interval, uint64_t now)
{
    const char *keys[1] = {key};
    cell_val_t v = {tat, interval};
    cr_assert_eq(state_cells_update(st, keys, 1, now, set_cell, &v), SL_OK, "%s", key);
}

#define SEC 1000000ull
#define NOW 1700000000000000ull   /* a realistic shared time */
#define DAY_I (86400 * SEC / 1000) /* 1000 calls a day: 86.4 s a call */
#define SEC_I (SEC / 5)            /* 5 calls a second: 200 ms a call */

/* The flood case: at the cap, every other cell is a made-up identity's day
 * cell owing its one call (86.4 s), and an active client's per-second cell
 * owes 5 calls (1 s). Evicting that one would give its client 5 calls more
 * at once; a flood cell only one: the active cell owes more calls, though
 * less time, and stays. */
Test(cells, the_cell_owing_most_calls_stays_though_it_owes_least_time)
{
    open_with(16, 16);
    char key[64];
    put_cell_iv("ip:192.0.2.7/standard/1", NOW + 5 * SEC_I, SEC_I, NOW);
    for (int i = 0; i < 15; i++) {
        snprintf(key, sizeof(key), "ip:2001:db8:%x::/64/standard/86400", i);
        put_cell_iv(key, NOW + DAY_I, DAY_I, NOW);
    }
    cr_assert_eq(cells(), 16);
    for (int i = 0; i < 8; i++) {
        snprintf(key, sizeof(key), "ip:2001:db8:1:%x::/64/standard/86400", i);
        put_cell_iv(key, NOW + 1000 + DAY_I, DAY_I, NOW + 1000);
        cr_expect_eq(cells(), 16);
        cr_assert(has_cell("ip:192.0.2.7/standard/1"),
                  "after %d flood cells, the active client's per-second cell (5 calls owed) was evicted "
                  "before a day cell owing one call", i + 1);
    }
}

/* A cell written before the interval was stored (record version 1) reads
 * with interval 0 and counts as owing one call, whatever its TAT: here it
 * goes before cells owing two calls, though it owes more time than they do. */
Test(cells, a_version_1_cell_counts_as_one_call_owed)
{
    open_with(16, 16);
    static const state_field_t v1_fields[] = {{"tat_us", STATE_F_U64, offsetof(state_cell_rec_t, tat_us), 1, 0}};
    const state_schema_t v1 = {"cell", 1, v1_fields, 1};
    state_cell_rec_t old = {.tat_us = NOW + 10 * SEC};
    sl_buf_t buf = SL_BUF_INIT;
    cr_assert_eq(state_record_encode(&v1, &old, &buf), SL_OK);
    const char *okey = "ip:198.51.100.1/standard/60";
    cr_assert_eq(state_raw_put(st, "limits", okey, strlen(okey), buf.base, buf.len), SL_OK);
    sl_buf_dispose(&buf);
    state_cell_rec_t rec;
    memset(&rec, 0xee, sizeof(rec));
    cr_assert_eq(state_read_begin(st), SL_OK);
    cr_assert_eq(state_budget_get(st, STATE_BUDGET_LIMITS, okey, &rec), SL_OK);
    state_read_end(st);
    cr_expect_eq(rec.tat_us, NOW + 10 * SEC);
    cr_expect_eq(rec.interval_us, 0, "a version 1 cell reads with interval 0");
    char key[64];
    for (int i = 0; i < 15; i++) {
        snprintf(key, sizeof(key), "ip:203.0.113.%d/standard/1", i);
        put_cell_iv(key, NOW + 2 * SEC_I, SEC_I, NOW);
    }
    cr_assert_eq(cells(), 16);
    put_cell_iv("ip:203.0.113.99/standard/1", NOW + 2 * SEC_I, SEC_I, NOW);
    cr_expect_eq(cells(), 16);
    cr_expect(!has_cell(okey), "the version 1 cell (one call) stayed while a cell owing two calls went");
    for (int i = 0; i < 15; i++) {
        snprintf(key, sizeof(key), "ip:203.0.113.%d/standard/1", i);
        cr_expect(has_cell(key), "%s (two calls owed) was evicted", key);
    }
}

/* Fills the limits database with idle cells until LMDB refuses one more. */
static size_t fill_with_idle_cells(void)
{
    sl_buf_t buf = SL_BUF_INIT;
    state_cell_rec_t rec = {.tat_us = 1};
    cr_assert_eq(state_record_encode(&state_cell_schema, &rec, &buf), SL_OK);
    char key[96];
    size_t n = 0;
    sl_err_t err = SL_OK;
    for (; n < 10000000 && err == SL_OK; n++) {
        snprintf(key, sizeof(key), "ip:2001:db8:%zx:%zx::/64/standard/86400", n >> 16, n & 0xffff);
        err = state_raw_put(st, "limits", key, strlen(key), buf.base, buf.len);
    }
    sl_buf_dispose(&buf);
    cr_assert_eq(err, SL_ERR_MAP_FULL, "%s", sl_err_name(err));
    return n - 1;
}

Test(cells, the_purge_works_on_a_map_that_is_full)
{
    open_with(4, 0);
    size_t n = fill_with_idle_cells();
    cr_assert_gt(n, 10000);
    size_t removed = 0;
    sl_err_t err = state_cells_purge(st, 1000, &removed);
    cr_expect_eq(err, SL_OK, "purge on a full map: %s", sl_err_name(err));
    cr_expect_eq(removed, n);
    cr_expect_eq(cells(), 0);
    /* and the map takes new records again */
    cr_expect_eq(state_raw_put(st, "limits", "k", 1, "v", 1), SL_OK);
}
