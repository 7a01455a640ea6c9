/* tests/lib/config_file.h: a YAML config loaded the way sluice loads it, for
 * the unit tests of gateway/: from a string, or from a file of its own.
 * Header-only: include it in the .c file of a test binary linked with
 * sl_gateway. */
#ifndef TESTS_LIB_CONFIG_FILE_H
#define TESTS_LIB_CONFIG_FILE_H

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/cfg.h"

/* Loads yaml (its errors name it "test.yaml"); the test fails, logging each
 * error, unless it loads with none. The caller destroys the config. */
static inline cfg_t *config_load_ok(const char *yaml)
{
    cfg_t *cfg = NULL;
    cfg_errors_t errs;
    sl_err_t err = cfg_load_string(yaml, strlen(yaml), "test.yaml", &cfg, &errs);
    for (size_t i = 0; i < errs.count; i++)
        cr_log_error("%d: %s: %s", errs.items[i].line, errs.items[i].path, errs.items[i].message);
    cr_assert_eq(err, SL_OK, "%s", sl_err_name(err));
    cr_assert_eq(errs.count, 0);
    cr_assert_not_null(cfg);
    cfg_errors_dispose(&errs);
    return cfg;
}

/* Loads yaml, which must not load: the test fails unless it is
 * SL_ERR_CONFIG with no config and at least one error. *errs gets the
 * errors; the caller disposes them. */
static inline void config_load_bad(const char *yaml, cfg_errors_t *errs)
{
    cfg_t *cfg = (cfg_t *)1;
    sl_err_t err = cfg_load_string(yaml, strlen(yaml), "test.yaml", &cfg, errs);
    cr_assert_eq(err, SL_ERR_CONFIG, "%s: %s", yaml, sl_err_name(err));
    cr_assert_null(cfg);
    cr_assert_gt(errs->count, 0);
}

/* path[cap] becomes a new file $TMPDIR/sluice-<name>-XXXXXX (/tmp without
 * TMPDIR) holding text (a config for cfg_load, or a file a config
 * names); the test fails if it cannot be written. The caller unlinks it. */
static inline void config_file_write(char *path, size_t cap, const char *name, const char *text)
{
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    int n = snprintf(path, cap, "%s/sluice-%s-XXXXXX", base, name);
    cr_assert(n > 0 && (size_t)n < cap, "temporary file name too long: %s", base);
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0, "mkstemp: %s", strerror(errno));
    size_t len = strlen(text);
    cr_assert_eq(write(fd, text, len), (ssize_t)len, "writing %s", path);
    close(fd);
}

#endif
