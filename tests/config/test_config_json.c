/* cfg_json (config/cfg_json.c): the effective configuration as JSON is
 * valid, holds every section with its defaults, marks each endpoint's source
 * and holds no secret the file gave. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "base/sl_secret.h"
#include "config/cfg.h"

static const char yaml[] =
    "admin: { listen: \"127.0.0.1:8546\", token: \"adm1n-T0ken-0123456789\" }\n"
    "cluster: { redis: \"redis://:Redis-Pw-4242@redis.internal:6380/3\", host: gw-1 }\n"
    "networks:\n"
    "  eth:\n"
    "    endpoints:\n"
    "      - id: a\n"
    "        url: \"https://user:hunter2pw@node.example/v2/AbCdEf0123456789xyz?api-key=k3y-value99\"\n"
    "        headers: { X-Api-Key: \"Hdr-Secret-777abc\" }\n"
    "      - \"http://10.0.0.1\"\n"
    "tiers: { pro: { per_second: 200 } }\n"
    "keys:\n"
    "  - { sha256: \"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\", tier: pro, name: team-a }\n";

static char *render(cJSON **out)
{
    cfg_t *cfg = NULL;
    cfg_errors_t errs;
    cr_assert_eq(cfg_load_string(yaml, strlen(yaml), "t.yaml", &cfg, &errs), SL_OK);
    sl_buf_t b = SL_BUF_INIT;
    cfg_json(cfg, &b);
    cfg_destroy(cfg);
    cfg_errors_dispose(&errs);
    *out = cJSON_Parse(b.base);
    cr_assert_not_null(*out, "not JSON: %s", b.base);
    return sl_buf_steal(&b, NULL);
}

static const cJSON *at(const cJSON *o, const char *path)
{
    char buf[128];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *save = NULL, *k = strtok_r(buf, ".", &save); k != NULL; k = strtok_r(NULL, ".", &save))
        o = (*k >= '0' && *k <= '9') ? cJSON_GetArrayItem(o, atoi(k)) : cJSON_GetObjectItemCaseSensitive(o, k);
    cr_assert_not_null(o, "%s missing", path);
    return o;
}

Test(cfg_json, every_section_with_its_defaults)
{
    cJSON *o = NULL;
    free(render(&o));
    cr_expect_eq(at(o, "server.max_batch")->valueint, CFG_DEFAULT_MAX_BATCH);
    cr_expect_str_eq(at(o, "server.listen")->valuestring, CFG_DEFAULT_LISTEN);
    cr_expect(cJSON_IsTrue(at(o, "cache.enabled")));
    cr_expect_eq(at(o, "cache.max_mb")->valueint, CFG_DEFAULT_CACHE_MB);
    cr_expect_eq(at(o, "state.map_size_mb")->valueint, CFG_DEFAULT_MAP_SIZE_MB);
    cr_expect_str_eq(at(o, "log.level")->valuestring, "info");
    cr_expect(cJSON_IsTrue(at(o, "admin.token")));
    cr_expect(cJSON_IsTrue(at(o, "cluster.enabled")));
    cr_expect_str_eq(at(o, "cluster.host")->valuestring, "gw-1");
    cr_expect_str_eq(at(o, "access.anonymous")->valuestring, "allow");
    cr_expect_eq(at(o, "tiers.pro.per_second")->valueint, 200);
    cr_expect_str_eq(at(o, "keys.0.name")->valuestring, "team-a");
    cr_expect_null(cJSON_GetObjectItemCaseSensitive(at(o, "keys.0"), "sha256"));
    cr_expect_str_eq(at(o, "networks.0.name")->valuestring, "eth");
    cr_expect_eq(at(o, "networks.0.timeouts.request_ms")->valueint, POOL_DEFAULT_REQUEST_MS);
    cr_expect_eq(at(o, "networks.0.ranking.probe_interval_ms")->valueint, 2000);
    cr_expect_eq(at(o, "networks.0.breaker.consecutive")->valueint, 5);
    cr_expect_eq(at(o, "networks.0.chain_probe_ms")->valueint, 30000);
    cr_expect_eq(cJSON_GetArraySize(at(o, "networks.0.endpoints")), 2);
    cr_expect_str_eq(at(o, "networks.0.endpoints.0.source")->valuestring, "yaml");
    cr_expect_eq(at(o, "networks.0.endpoints.1.max_inflight")->valueint, POOL_DEFAULT_MAX_INFLIGHT);
    cr_expect_str_eq(at(o, "networks.0.endpoints.0.headers.0")->valuestring, "X-Api-Key");
    cJSON_Delete(o);
}

Test(cfg_json, no_secret_of_the_file)
{
    static const char *const secrets[] = {"adm1n-T0ken", "Redis-Pw-4242", "hunter2pw", "AbCdEf0123456789xyz",
                                          "k3y-value99", "Hdr-Secret-777abc", "0123456789abcdef0123"};
    cJSON *o = NULL;
    char *text = render(&o);
    for (size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++)
        cr_expect_null(strstr(text, secrets[i]), "%s in %s", secrets[i], text);
    cr_expect_not_null(strstr(at(o, "cluster.redis")->valuestring, "redis.internal:6380"));
    cJSON_Delete(o);
    free(text);
    sl_secret_clear();
}
