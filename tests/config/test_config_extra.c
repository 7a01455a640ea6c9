/* cfg_load_extra: endpoints added at run time merged into the config file's
 * (config/cfg_extra.c): checked by the one decoder, the YAML wins an id,
 * an entry of a network the file lacks is skipped, ${ENV} is not expanded. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/cfg.h"

#define YAML "networks:\n  eth:\n    endpoints:\n      - { id: a, url: \"http://127.0.0.1:1\" }\n      - \"http://127.0.0.1:2\"\n"

static char path[64];

static void write_yaml(void)
{
    snprintf(path, sizeof(path), "/tmp/sluice-cfgextra-%d.yaml", (int)getpid());
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(YAML, f);
    fclose(f);
}

static void remove_yaml(void)
{
    unlink(path);
}

TestSuite(extra, .init = write_yaml, .fini = remove_yaml);

static const pool_endpoint_conf_t *find(const cfg_t *cfg, const char *id)
{
    const pool_network_conf_t *n = cfg_network(cfg, "eth", 3);
    for (size_t i = 0; n != NULL && i < n->nendpoints; i++)
        if (strcmp(n->endpoints[i].id, id) == 0)
            return &n->endpoints[i];
    return NULL;
}

Test(extra, an_entry_is_merged_after_the_files_and_marked)
{
    cfg_extra_ep_t e[] = {{"eth", "b", "{\"id\":\"b\",\"url\":\"http://127.0.0.1:3/k\",\"max_inflight\":7,"
                                       "\"methods\":{\"deny\":[\"debug_*\"]}}", 0, NULL}};
    cfg_t *cfg = NULL;
    cfg_errors_t errs;
    cr_assert_eq(cfg_load_extra(path, e, 1, &cfg, &errs), SL_OK);
    cr_expect_eq(e[0].merged, 1);
    const pool_endpoint_conf_t *b = find(cfg, "b");
    cr_assert_not_null(b);
    cr_expect_eq(b->from_api, 1);
    cr_expect_eq(b->max_inflight, 7);
    cr_expect_eq(find(cfg, "a")->from_api, 0);
    cr_expect_eq(cfg_network(cfg, "eth", 3)->nendpoints, 3);
    cfg_destroy(cfg);
    cfg_errors_dispose(&errs);
}

Test(extra, the_yaml_wins_an_id_and_a_missing_network_skips)
{
    cfg_extra_ep_t e[] = {{"eth", "a", "{\"id\":\"a\",\"url\":\"http://127.0.0.1:9\"}", 0, NULL},
                          {"eth", "e1", "{\"id\":\"e1\",\"url\":\"http://127.0.0.1:9\"}", 0, NULL},
                          {"gone", "c", "{\"id\":\"c\",\"url\":\"http://127.0.0.1:9\"}", 0, NULL}};
    cfg_t *cfg = NULL;
    cfg_errors_t errs;
    cr_assert_eq(cfg_load_extra(path, e, 3, &cfg, &errs), SL_OK);
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(e[i].merged, 0);
        cr_expect_not_null(e[i].skipped);
    }
    cr_expect_str_eq(find(cfg, "a")->url, "http://127.0.0.1:1");
    cr_expect_eq(cfg_network(cfg, "eth", 3)->nendpoints, 2);
    cfg_destroy(cfg);
    cfg_errors_dispose(&errs);
}

Test(extra, a_bad_field_is_an_error_naming_it)
{
    static const struct {
        const char *json, *path, *msg;
    } cases[] = {
        {"{\"id\":\"b\",\"url\":\"ftp://x\"}", "url", "scheme"},
        {"{\"id\":\"b\",\"url\":\"http://h\",\"max_inflight\":0}", "max_inflight", "between"},
        {"{\"id\":\"b\",\"url\":\"http://h\",\"wieght\":1}", "wieght", "unknown key"},
        {"{\"id\":\"b\",\"url\":\"http://h/${HOME}\"}", "endpoints(b)", "not expanded"},
        {"[1, 2]", "endpoints(b)", "JSON object"},
        {"{\"id\":\"a\",\"url\":\"http://h\"}", "id", "duplicate endpoint id"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *id = strstr(cases[i].json, "\"a\"") ? "a2" : "b";
        cfg_extra_ep_t e = {"eth", id, cases[i].json, 0, NULL};
        cfg_t *cfg = NULL;
        cfg_errors_t errs;
        cr_expect_eq(cfg_load_extra(path, &e, 1, &cfg, &errs), SL_ERR_CONFIG, "%s", cases[i].json);
        cr_expect_null(cfg);
        int found = 0;
        for (size_t k = 0; k < errs.count; k++)
            found |= strstr(errs.items[k].path, cases[i].path) != NULL && strstr(errs.items[k].message, cases[i].msg) != NULL;
        cr_expect(found, "%s: no error at %s saying %s (%zu errors, first %s: %s)", cases[i].json, cases[i].path,
                  cases[i].msg, errs.count, errs.count ? errs.items[0].path : "", errs.count ? errs.items[0].message : "");
        cfg_errors_dispose(&errs);
    }
}
