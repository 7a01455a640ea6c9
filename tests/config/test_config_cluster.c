/* cfg: the cluster: section (several hosts through Redis). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/sl_buf.h"
#include "base/sl_secret.h"
#include "config/cfg.h"
#include "tests/lib/config_file.h"

#define NET "networks:\n  eth:\n    endpoints: [\"http://127.0.0.1:8545\"]\n"

/* The one error a config gives: its path and message. */
static void load_bad(const char *yaml, const char *path, const char *msg)
{
    cfg_errors_t errs;
    config_load_bad(yaml, &errs);
    cr_assert_eq(errs.count, 1, "%s: %zu errors", yaml, errs.count);
    cr_expect_str_eq(errs.items[0].path, path, "%s", yaml);
    cr_expect(strstr(errs.items[0].message, msg) != NULL, "%s: got '%s', want '%s'", yaml, errs.items[0].message, msg);
    cfg_errors_dispose(&errs);
}

Test(config_cluster, absent_means_off)
{
    cfg_t *cfg = config_load_ok(NET);
    cr_expect_eq(cfg->has_cluster, 0);
    cr_expect_null(cfg->cluster.redis_host);
    cfg_destroy(cfg);
}

Test(config_cluster, defaults)
{
    cfg_t *cfg = config_load_ok(NET "cluster: { redis: \"redis://10.0.0.5\" }\n");
    char name[256] = "";
    gethostname(name, sizeof(name) - 1);
    name[STATE_CLUSTER_HOST_MAX] = '\0';
    cr_assert_eq(cfg->has_cluster, 1);
    cr_expect_str_eq(cfg->cluster.redis_host, "10.0.0.5");
    cr_expect_eq(cfg->cluster.redis_port, 6379);
    cr_expect_eq(cfg->cluster.db, 0);
    cr_expect_null(cfg->cluster.password);
    cr_expect_null(cfg->cluster.user);
    cr_expect_str_eq(cfg->cluster.prefix, "sluice:");
    cr_expect_str_eq(cfg->cluster.host, name, "the host defaults to the machine's name");
    cr_expect_eq(cfg->cluster.timeout_ms, STATE_CLUSTER_DEFAULT_TIMEOUT_MS);
    cr_expect_eq(cfg->cluster.stream_max, cfg->state.event_max_count);
    cr_expect_str_eq(cfg->cluster.url_shown, "redis://10.0.0.5:6379/0");
    cfg_destroy(cfg);
}

Test(config_cluster, every_part)
{
    setenv("CL_TEST_PW", "s3cret-Passw0rd", 1);
    cfg_t *cfg = config_load_ok(NET "cluster: { redis: \"redis://:${CL_TEST_PW}@redis.internal:6380/3\", host: gw-1,"
                                   " prefix: \"app1:\", timeout_ms: 500 }\n");
    cr_expect_str_eq(cfg->cluster.redis_host, "redis.internal");
    cr_expect_eq(cfg->cluster.redis_port, 6380);
    cr_expect_eq(cfg->cluster.db, 3);
    cr_expect_str_eq(cfg->cluster.password, "s3cret-Passw0rd");
    cr_expect_null(cfg->cluster.user);
    cr_expect_str_eq(cfg->cluster.host, "gw-1");
    cr_expect_str_eq(cfg->cluster.prefix, "app1:");
    cr_expect_eq(cfg->cluster.timeout_ms, 500);
    cr_expect_str_eq(cfg->cluster.url_shown, "redis://***@redis.internal:6380/3");
    /* the password is registered, whatever it looks like */
    cr_expect(sl_secret_contains("x s3cret-Passw0rd y", 18));
    cfg_destroy(cfg);
}

Test(config_cluster, user_escapes_and_ipv6)
{
    cfg_t *cfg = config_load_ok(NET "cluster: { redis: \"redis://app:p%40ss%3Aw@[::1]:7000\" }\n");
    cr_expect_str_eq(cfg->cluster.user, "app");
    cr_expect_str_eq(cfg->cluster.password, "p@ss:w");
    cr_expect_str_eq(cfg->cluster.redis_host, "::1");
    cr_expect_eq(cfg->cluster.redis_port, 7000);
    cr_expect_str_eq(cfg->cluster.url_shown, "redis://***@[::1]:7000/0");
    cr_expect(sl_secret_contains("p@ss:w", 6));
    cr_expect(sl_secret_contains("p%40ss%3Aw", 10), "the written form too");
    cfg_destroy(cfg);
}

Test(config_cluster, short_password_is_a_secret_too)
{
    /* ${ENV} values are registered only when they look like keys; the
     * password always is (if it is at least 4 bytes: shorter ones are not
     * scrubbed by the registry at all) */
    setenv("CL_TEST_SHORT", "hunter", 1);
    cfg_t *cfg = config_load_ok(NET "cluster: { redis: \"redis://:${CL_TEST_SHORT}@h\" }\n");
    cr_expect(sl_secret_contains("hunter", 6));
    cfg_destroy(cfg);
}

Test(config_cluster, bad_values)
{
    load_bad(NET "cluster: {}\n", "cluster.redis", "required key 'redis' is missing");
    load_bad(NET "cluster: { redis: \"http://h:1\" }\n", "cluster.redis", "expected redis://");
    load_bad(NET "cluster: { redis: \"rediss://h:1\" }\n", "cluster.redis", "TLS (rediss://) is not supported");
    load_bad(NET "cluster: { redis: \"redis://h:0\" }\n", "cluster.redis", "port must be a number between 1 and 65535");
    load_bad(NET "cluster: { redis: \"redis://h:99999\" }\n", "cluster.redis", "port must be");
    load_bad(NET "cluster: { redis: \"redis://h:6379/x\" }\n", "cluster.redis", "database after '/'");
    load_bad(NET "cluster: { redis: \"redis://\" }\n", "cluster.redis", "no host");
    load_bad(NET "cluster: { redis: \"redis://h st\" }\n", "cluster.redis", "host must be a name or an address");
    load_bad(NET "cluster: { redis: \"redis://[::1\" }\n", "cluster.redis", "must end with ']'");
    load_bad(NET "cluster: { redis: \"redis://pw@h\" }\n", "cluster.redis", "':password' or 'user:password'");
    load_bad(NET "cluster: { redis: \"redis://:@h\" }\n", "cluster.redis", "password after ':' is empty");
    load_bad(NET "cluster: { redis: \"redis://:a%zzb@h\" }\n", "cluster.redis", "must start an escape");
    load_bad(NET "cluster: { redis: \"redis://h\", host: \"a b\" }\n", "cluster.host", "1-63 of");
    load_bad(NET "cluster: { redis: \"redis://h\", prefix: \"\" }\n", "cluster.prefix", "1-64 of");
    load_bad(NET "cluster: { redis: \"redis://h\", timeout_ms: 5 }\n", "cluster.timeout_ms", "between 10 and 60000");
    load_bad(NET "cluster: { redis: \"redis://h\", hots: x }\n", "cluster.hots", "did you mean 'host'");
}

Test(config_cluster, errors_never_quote_the_password)
{
    cfg_errors_t errs;
    config_load_bad(NET "cluster: { redis: \"redis://:Xy7-unique-pw-Q1@h:notaport\" }\n", &errs);
    cr_assert_eq(errs.count, 1);
    cr_expect(strstr(errs.items[0].message, "Xy7-unique-pw-Q1") == NULL, "%s", errs.items[0].message);
    cfg_errors_dispose(&errs);
}
