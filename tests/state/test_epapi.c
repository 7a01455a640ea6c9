/* tests/state/test_epapi.c: the endpoints added at run time
 * (state/state_epapi.c) against a real LMDB environment: kept across a
 * reopen, an id kept twice refused, a removal leaving a tombstone that a
 * new POST may replace, the generation moving with each change and its
 * event, the generation applied kept apart from it, and names the key
 * layout cannot hold refused. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state/state.h"
#include "state/state_epapi.h"
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
    temp_dir_make(tmpdir, sizeof(tmpdir), "epapi");
    snprintf(dbpath, sizeof(dbpath), "%s/var/state", tmpdir);
    open_state();
}

static void teardown(void)
{
    state_close(st);
    st = NULL;
    temp_dir_remove(tmpdir);
}

TestSuite(epapi, .init = setup, .fini = teardown);

static state_epapi_rec_t *entry(const char *net, const char *id, uint64_t ms)
{
    static state_epapi_rec_t r;
    memset(&r, 0, sizeof(r));
    snprintf(r.network, sizeof(r.network), "%s", net);
    snprintf(r.id, sizeof(r.id), "%s", id);
    snprintf(r.json, sizeof(r.json), "{\"id\":\"%s\",\"url\":\"http://h/%s\"}", id, id);
    r.created_ms = r.updated_ms = ms;
    return &r;
}

static uint64_t gen_now(void)
{
    uint64_t g;
    cr_assert_eq(state_epapi_generation(st, &g), SL_OK);
    return g;
}

Test(epapi, kept_across_a_reopen_and_listed_in_order)
{
    cr_assert_eq(gen_now(), 0);
    cr_assert_eq(state_epapi_put(st, entry("eth", "b", 10), 1, NULL), SL_OK);
    cr_assert_eq(state_epapi_put(st, entry("base", "z", 11), 1, NULL), SL_OK);
    cr_assert_eq(state_epapi_put(st, entry("eth", "b", 12), 1, NULL), SL_ERR_EXISTS);
    cr_assert_eq(gen_now(), 2);
    state_close(st);
    open_state();
    state_epapi_rec_t *recs;
    size_t n;
    uint64_t gen;
    cr_assert_eq(state_epapi_list(st, &recs, &n, &gen), SL_OK);
    cr_assert_eq(n, 2);
    cr_assert_eq(gen, 2);
    cr_expect_str_eq(recs[0].network, "base");
    cr_expect_str_eq(recs[1].id, "b");
    cr_expect_str_eq(recs[1].json, "{\"id\":\"b\",\"url\":\"http://h/b\"}");
    free(recs);
}

Test(epapi, a_removal_leaves_a_later_tombstone_that_a_new_post_replaces)
{
    state_event_t ev;
    cr_assert_eq(state_epapi_put(st, entry("eth", "b", 10), 1, NULL), SL_OK);
    state_event_init(&ev, STATE_EVENT_ENDPOINT_REMOVED, "eth", "b", 20);
    cr_assert_eq(state_epapi_delete(st, "eth", "b", 5, &ev), SL_OK); /* a clock behind: still later */
    state_epapi_rec_t r;
    cr_assert_eq(state_epapi_get(st, "eth", "b", &r), SL_OK);
    cr_expect_str_eq(r.json, "");
    cr_expect_eq(r.updated_ms, 11);
    cr_expect_eq(state_epapi_delete(st, "eth", "b", 30, NULL), SL_ERR_NOT_FOUND);
    cr_expect_eq(state_epapi_put(st, entry("eth", "b", 40), 0, NULL), SL_ERR_NOT_FOUND);
    cr_assert_eq(state_epapi_put(st, entry("eth", "b", 40), 1, NULL), SL_OK);
    cr_expect_eq(gen_now(), 3);
    state_event_t evs[4];
    size_t n;
    cr_assert_eq(state_events_read(st, 0, evs, 4, &n), SL_OK);
    cr_assert_eq(n, 1);
    cr_expect_eq(evs[0].kind, STATE_EVENT_ENDPOINT_REMOVED);
    cr_expect_str_eq(evs[0].endpoint, "b");
}

Test(epapi, names_the_key_layout_cannot_hold_are_refused)
{
    cr_expect_eq(state_epapi_put(st, entry("eth", "a/b", 1), 1, NULL), SL_ERR_INVALID);
    cr_expect_eq(state_epapi_put(st, entry("", "a", 1), 1, NULL), SL_ERR_INVALID);
    cr_expect_eq(state_epapi_put(st, entry("eth", "", 1), 1, NULL), SL_ERR_INVALID);
    state_epapi_rec_t r;
    cr_expect_eq(state_epapi_get(st, "eth", "nope", &r), SL_ERR_NOT_FOUND);
    cr_expect_eq(gen_now(), 0);
}

Test(epapi, the_applied_generation_is_its_own_and_kept)
{
    uint64_t g = 1;
    cr_assert_eq(state_epapi_applied(st, &g), SL_OK);
    cr_expect_eq(g, 0, "nothing applied yet");
    cr_assert_eq(state_epapi_put(st, entry("eth", "a", 10), 1, NULL), SL_OK);
    cr_assert_eq(state_epapi_applied(st, &g), SL_OK);
    cr_expect_eq(g, 0, "a change is not applied by being kept");
    cr_assert_eq(state_epapi_applied_set(st, gen_now()), SL_OK);
    state_close(st);
    open_state();
    cr_assert_eq(state_epapi_applied(st, &g), SL_OK);
    cr_expect_eq(g, gen_now());
    cr_assert_eq(state_epapi_put(st, entry("eth", "b", 11), 1, NULL), SL_OK);
    cr_expect_gt(gen_now(), g, "the generation moves on, the applied one waits for the master");
}
