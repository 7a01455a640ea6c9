/* tests/state/test_txn.c: the tail of a write transaction (state/state_txn.c):
 * the record and its events are stored together or not at all. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "state/state_int.h"
#include "tests/lib/fail_commits.h"
#include "tests/lib/temp_state.h"

TEMP_STATE_SUITE(txn);

static const state_endpoint_rec_t drained = {.drained = 1};

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

/* The tail in pieces: eth/a drained and the first n of ev, in a transaction
 * not yet ended. */
static MDB_txn *pieces(state_event_t ev[2], size_t n)
{
    MDB_txn *txn = begin();
    two_events(ev);
    cr_assert_eq(state_rec_put(st, txn, STATE_DB_ENDPOINTS, "eth/a", &state_endpoint_schema, &drained), MDB_SUCCESS);
    cr_assert_eq(state_events_put(st, txn, ev, n), MDB_SUCCESS);
    return txn;
}

/* What is stored: whether eth/a is drained (-1: absent) and how many events. */
typedef struct stored {
    int drained;
    size_t events;
} stored_t;

static stored_t stored(void)
{
    stored_t s;
    state_endpoint_rec_t rec;
    state_event_t out[4];
    cr_assert_eq(state_read_begin(st), SL_OK);
    s.drained = state_endpoint_get(st, "eth/a", &rec) == SL_OK ? rec.drained : -1;
    cr_assert_eq(state_events_read(st, 0, out, 4, &s.events), SL_OK);
    state_read_end(st);
    return s;
}

Test(txn, finish_writes_the_record_and_its_events)
{
    state_event_t ev[2];
    two_events(ev);
    sl_err_t err = state_txn_finish(st, begin(), STATE_DB_ENDPOINTS, "eth/a", &state_endpoint_schema, &drained, ev, 2,
                                    "put endpoint");
    cr_assert_eq(err, SL_OK);
    stored_t s = stored();
    cr_expect_eq(s.drained, 1);
    cr_expect_eq(s.events, 2);
    cr_expect_eq(ev[0].seq + 1, ev[1].seq, "sequence numbers given in order");
}

Test(txn, finish_that_cannot_commit_stores_nothing)
{
    state_event_t ev[2];
    two_events(ev);
    fail_commits = 1;
    sl_err_t err = state_txn_finish(st, begin(), STATE_DB_ENDPOINTS, "eth/a", &state_endpoint_schema, &drained, ev, 2,
                                    "put endpoint");
    fail_commits = 0;
    cr_expect_eq(err, SL_ERR_MAP_FULL);
    stored_t s = stored();
    cr_expect_eq(s.drained, -1);
    cr_expect_eq(s.events, 0);
}

Test(txn, end_aborts_after_a_failed_step)
{
    state_event_t ev[2];
    cr_expect_eq(state_txn_end(pieces(ev, 2), MDB_NOTFOUND), MDB_NOTFOUND, "a later step failed: the code it gave");
    stored_t s = stored();
    cr_expect_eq(s.drained, -1, "aborted: not written");
    cr_expect_eq(s.events, 0);
}

Test(txn, end_commits_the_pieces)
{
    state_event_t ev[2];
    cr_assert_eq(state_txn_end(pieces(ev, 1), MDB_SUCCESS), MDB_SUCCESS);
    stored_t s = stored();
    cr_expect_eq(s.drained, 1);
    cr_expect_eq(s.events, 1, "only the events asked for");
}
