/* tests/lib/temp_dir.h: a fresh folder per test for a real LMDB environment
 * (or anything else a unit test writes), removed again by its teardown.
 * Header-only: include it in the .c file of a test binary. */
#ifndef TESTS_LIB_TEMP_DIR_H
#define TESTS_LIB_TEMP_DIR_H

#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* dir[cap] becomes a new folder $TMPDIR/sluice-<name>-XXXXXX (/tmp without
 * TMPDIR); the test fails if it cannot be made. */
static inline void temp_dir_make(char *dir, size_t cap, const char *name)
{
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    int n = snprintf(dir, cap, "%s/sluice-%s-XXXXXX", base, name);
    cr_assert(n > 0 && (size_t)n < cap, "temporary folder name too long: %s", base);
    cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
}

static int temp_dir_rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Removes dir and everything below it (no links followed). */
static inline void temp_dir_remove(const char *dir)
{
    cr_expect_eq(nftw(dir, temp_dir_rm_one, 16, FTW_DEPTH | FTW_PHYS), 0, "removing %s: %s", dir, strerror(errno));
}

#endif
