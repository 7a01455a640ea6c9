/* tests/lib/temp_state.h: a real LMDB environment for each test of a suite,
 * in a fresh temp_dir folder, removed again after the test.
 *
 *   TEMP_STATE_SUITE(txn);   defines `st`, the open handle, and suite txn
 *
 * Header-only: include it in the .c file of a test binary linked with
 * sl_state (a suite that opens its environment itself, with other settings,
 * uses temp_dir.h). */
#ifndef TESTS_LIB_TEMP_STATE_H
#define TESTS_LIB_TEMP_STATE_H

#include <criterion/criterion.h>
#include <stdio.h>

#include "state/state.h"
#include "tests/lib/temp_dir.h"

/* Makes dir[cap] ($TMPDIR/sluice-<name>-XXXXXX) and opens an environment in
 * dir/state: a 16 MB map, events kept up to 1,000 and a day. */
static inline state_t *temp_state_open(char *dir, size_t cap, const char *name)
{
    char path[512];
    temp_dir_make(dir, cap, name);
    snprintf(path, sizeof(path), "%s/state", dir);
    state_conf_t c = {.path = path, .map_size_mb = 16, .event_max_count = 1000, .event_max_age_s = 86400};
    state_t *st = NULL;
    cr_assert_eq(state_open(&c, &st), SL_OK);
    return st;
}

static inline void temp_state_close(state_t *st, const char *dir)
{
    state_close(st);
    temp_dir_remove(dir);
}

#define TEMP_STATE_SUITE(suite)                                                                                  \
    static char suite##_dir[256];                                                                                \
    static state_t *st;                                                                                          \
    static void suite##_setup(void) { st = temp_state_open(suite##_dir, sizeof(suite##_dir), #suite); }         \
    static void suite##_teardown(void) { temp_state_close(st, suite##_dir); }                                   \
    TestSuite(suite, .init = suite##_setup, .fini = suite##_teardown)

#endif
