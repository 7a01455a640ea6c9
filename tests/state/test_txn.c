/* tests/state/test_txn.c: the tail of a write transaction (state/state_txn.c):
 * the record and its events are stored together or not at all. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "state/state_int.h"
#include "tests/lib/fail_commits.h"
#include "tests/lib/temp_dir.h"

static char tmpdir[256], dbpath[300];
static state_t *st;

static void setup(void)
{
    temp_dir_make(tmpdir, sizeof(tmpdir), "txn");
    snprintf(dbpath, sizeof(dbpath), "%s/state", tmpdir);
    state_conf_t c = {.path = dbpath, .map_size_mb = 16, .event_max_count = 1000, .event_max_age_s = 86400};
    cr_assert_eq(state_open(&c, &st), SL_OK);
}

static void teardown(void)
{
    fail_commits = 0;
    state_close(st);
    temp_dir_remove(tmpdir);
}

TestSuite(txn, .init = setup, .fini = teardown);

static MDB_txn *begin(void)
{
    MDB_txn *txn;
    cr_assert_eq(mdb_txn_begin(st->env, NULL, 0, &txn), MDB_SUCCESS);
    return txn;
}

static void two_events(state_event_t ev[2])
{
    state_event_init(&ev[0], STATE_EVENT_ENDPOINT_DRAINED, "eth", "a", 1000);
    state_event_init(&ev[1], STATE_EVENT_ENDPOINT_UNDRAINED, "eth", "a", 2000);
}

/* What is stored: whether eth/a is drained (-1: absent) and how many events. */
static void stored(int *drained, size_t *nevents)
{
    state_endpoint_rec_t rec;
    state_event_t out[4];
    cr_assert_eq(state_read_begin(st), SL_OK);
    *drained = state_endpoint_get(st, "eth/a", &rec) == SL_OK ? rec.drained : -1;
    cr_assert_eq(state_events_read(st, 0, out, 4, nevents), SL_OK);
    state_read_end(st);
}

Test(txn, finish_writes_the_record_and_its_events)
{
    state_endpoint_rec_t rec = {.drained = 1};
    state_event_t ev[2];
    two_events(ev);
    cr_assert_eq(state_txn_finish(st, begin(), STATE_DB_ENDPOINTS, "eth/a", &state_endpoint_schema, &rec, ev, 2,
                                  "put endpoint"),
                 SL_OK);
    int drained;
    size_t n;
    stored(&drained, &n);
    cr_expect_eq(drained, 1);
    cr_expect_eq(n, 2);
    cr_expect_eq(ev[0].seq + 1, ev[1].seq, "sequence numbers given in order");
}

Test(txn, finish_that_cannot_commit_stores_nothing)
{
    state_endpoint_rec_t rec = {.drained = 1};
    state_event_t ev[2];
    two_events(ev);
    fail_commits = 1;
    cr_expect_eq(state_txn_finish(st, begin(), STATE_DB_ENDPOINTS, "eth/a", &state_endpoint_schema, &rec, ev, 2,
                                  "put endpoint"),
                 SL_ERR_MAP_FULL);
    fail_commits = 0;
    int drained;
    size_t n;
    stored(&drained, &n);
    cr_expect_eq(drained, -1);
    cr_expect_eq(n, 0);
}

Test(txn, end_aborts_after_a_failed_step)
{
    state_endpoint_rec_t rec = {.drained = 1};
    state_event_t ev[2];
    two_events(ev);
    MDB_txn *txn = begin();
    int rc = state_rec_put(st, txn, STATE_DB_ENDPOINTS, "eth/a", &state_endpoint_schema, &rec);
    cr_assert_eq(rc, MDB_SUCCESS);
    cr_assert_eq(state_events_put(st, txn, ev, 2), MDB_SUCCESS);
    cr_expect_eq(state_txn_end(txn, MDB_NOTFOUND), MDB_NOTFOUND, "a later step failed: the code it gave");
    int drained;
    size_t n;
    stored(&drained, &n);
    cr_expect_eq(drained, -1, "aborted: not written");
    cr_expect_eq(n, 0);
    cr_expect_eq(state_txn_end(begin(), MDB_SUCCESS), MDB_SUCCESS, "nothing failed: committed");
}

Test(txn, end_commits_the_pieces)
{
    state_endpoint_rec_t rec = {.drained = 1};
    state_event_t ev[2];
    two_events(ev);
    MDB_txn *txn = begin();
    int rc = state_rec_put(st, txn, STATE_DB_ENDPOINTS, "eth/a", &state_endpoint_schema, &rec);
    if (rc == MDB_SUCCESS)
        rc = state_events_put(st, txn, ev, 1);
    cr_assert_eq(state_txn_end(txn, rc), MDB_SUCCESS);
    int drained;
    size_t n;
    stored(&drained, &n);
    cr_expect_eq(drained, 1);
    cr_expect_eq(n, 1, "only the events asked for");
}
