/* What a reload changes: cfg_diff and its one-line summary. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/cfg.h"
#include "config/cfg_diff.h"
#include "tests/lib/config_file.h"

#define BASE                                                                                                   \
    "server: { listen: \"127.0.0.1:8545\", workers: 2 }\n"                                                     \
    "admin: { listen: \"127.0.0.1:8546\", token: \"tok-one-1234-abcdef\" }\n"                                         \
    "state: { path: \"/tmp/st\" }\n"

/* the diff of two YAML texts, as its summary */
static void summary_of(const char *a, const char *b, char *out, size_t len, cfg_diff_t *d)
{
    cfg_t *x = config_load_ok(a), *y = config_load_ok(b);
    cfg_diff(x, y, d);
    cfg_diff_summary(d, out, len);
    cfg_destroy(x);
    cfg_destroy(y);
}

static const char two[] = BASE "networks:\n"
                               "  eth:\n"
                               "    endpoints:\n"
                               "      - { id: a, url: \"http://127.0.0.1:9001/v2/key123abc\" }\n"
                               "      - { id: b, url: \"http://127.0.0.1:9002\" }\n"
                               "  base:\n"
                               "    endpoints: [ { id: x, url: \"http://127.0.0.1:9003\" } ]\n";

Test(config_diff, same_file_no_changes)
{
    cfg_diff_t d;
    char s[512];
    summary_of(two, two, s, sizeof(s), &d);
    cr_expect_eq(d.n, 0);
    cr_expect_str_eq(d.restart, "");
    cr_expect_str_eq(s, "no changes");
    cfg_diff_dispose(&d);
}

Test(config_diff, endpoints_and_networks_added_removed_changed)
{
    static const char next[] = BASE "networks:\n"
                                    "  eth:\n"
                                    "    endpoints:\n"
                                    "      - { id: a, url: \"http://127.0.0.1:9001/v2/other456def\", max_inflight: 9 }\n"
                                    "      - { id: c, url: \"http://127.0.0.1:9004\" }\n"
                                    "  sol:\n"
                                    "    chain: solana\n"
                                    "    endpoints: [ \"http://127.0.0.1:9005\" ]\n";
    cfg_diff_t d;
    char s[512];
    summary_of(two, next, s, sizeof(s), &d);
    cr_expect_str_eq(s, "+network sol; -network base; ~endpoint eth/a (url, max_inflight); +endpoint eth/c; "
                        "-endpoint eth/b; +endpoint sol/e0; -endpoint base/x");
    cr_expect_eq(d.n, 7);
    cr_expect_str_eq(d.restart, "");
    /* neither URL (nor its key) is in the text */
    cr_expect_null(strstr(s, "key123abc"));
    cr_expect_null(strstr(s, "other456def"));
    cfg_diff_dispose(&d);
}

Test(config_diff, endpoint_fields_each_named)
{
    static const char a[] = BASE "networks:\n  eth:\n    endpoints:\n"
                                 "      - id: a\n"
                                 "        url: \"http://127.0.0.1:9001\"\n"
                                 "        headers: { X-Key: \"v1-secret-9x\" }\n"
                                 "        credits: { per_second: 10 }\n";
    static const char b[] = BASE "networks:\n  eth:\n    endpoints:\n"
                                 "      - id: a\n"
                                 "        url: \"http://127.0.0.1:9001\"\n"
                                 "        headers: { X-Key: \"v2-secret-9y\" }\n"
                                 "        credits: { per_second: 11 }\n"
                                 "        tier: fallback\n"
                                 "        cost_profile: alchemy\n";
    cfg_diff_t d;
    char s[512];
    summary_of(a, b, s, sizeof(s), &d);
    /* flat -> alchemy also moves the eth_getLogs block limit the profile gives
     * (0 -> 500, policy/logsplit.c): the reload does change it */
    cr_expect_str_eq(s, "~endpoint eth/a (headers, tier, cost_profile, credits, max_logs_blocks)");
    cr_expect_null(strstr(s, "secret"));
    cfg_diff_dispose(&d);
}

Test(config_diff, network_fields_and_order)
{
    static const char b[] = BASE "networks:\n"
                                 "  eth:\n"
                                 "    timeouts: { attempt_ms: 2000 }\n"
                                 "    breaker: { consecutive: 3 }\n"
                                 "    blocked_methods: []\n"
                                 "    hedge: { enabled: false }\n"
                                 "    coalesce: { max_waiters: 8 }\n"
                                 "    demote_ms: 1000\n"
                                 "    endpoints:\n"
                                 "      - { id: b, url: \"http://127.0.0.1:9002\" }\n"
                                 "      - { id: a, url: \"http://127.0.0.1:9001/v2/key123abc\" }\n"
                                 "  base:\n"
                                 "    endpoints: [ { id: x, url: \"http://127.0.0.1:9003\" } ]\n";
    cfg_diff_t d;
    char s[512];
    summary_of(two, b, s, sizeof(s), &d);
    cr_expect_str_eq(s, "~network eth (timeouts, blocked_methods, breaker, hedge, coalesce, demote_ms, endpoint order)");
    cfg_diff_dispose(&d);
}

Test(config_diff, settings_by_name_token_never_shown)
{
    static const char b[] = "server: { listen: \"127.0.0.1:8545\", workers: 2, max_batch: 50 }\n"
                            "admin: { listen: \"127.0.0.1:8546\", token: \"tok-two-5678-abcdef\" }\n"
                            "state: { path: \"/tmp/st\", event_max_count: 99 }\n"
                            "log: { level: debug }\n"
                            "tiers: { anonymous: { per_second: 5 } }\n"
                            "networks:\n  eth:\n    endpoints: [ \"http://127.0.0.1:9001\" ]\n";
    static const char a[] = BASE "networks:\n  eth:\n    endpoints: [ \"http://127.0.0.1:9001\" ]\n";
    cfg_diff_t d;
    char s[512];
    summary_of(a, b, s, sizeof(s), &d);
    cr_expect_str_eq(s, "~setting server.max_batch; ~setting admin.token; ~setting state.event_max_count; "
                        "~setting log.level; ~setting tiers");
    cr_expect_null(strstr(s, "tok-"));
    cr_expect_str_eq(d.restart, "");
    cfg_diff_dispose(&d);
}

Test(config_diff, restart_only_settings)
{
    static const char a[] = BASE "networks:\n  eth:\n    endpoints: [ \"http://127.0.0.1:9001\" ]\n";
    static const char b[] = "server: { listen: \"127.0.0.1:9545\", workers: 3 }\n"
                            "admin: { listen: off }\n"
                            "state: { path: \"/tmp/other\", map_size_mb: 64 }\n"
                            "networks:\n  eth:\n    endpoints: [ \"http://127.0.0.1:9001\" ]\n";
    cfg_diff_t d;
    char s[512];
    summary_of(a, b, s, sizeof(s), &d);
    cr_expect_str_eq(d.restart, "server.listen (127.0.0.1:8545 -> 127.0.0.1:9545) needs a restart; "
                                "server.workers (2 -> 3) needs a restart; "
                                "admin.listen (127.0.0.1:8546 -> off) needs a restart; "
                                "state.path (/tmp/st -> /tmp/other) needs a restart; "
                                "state.map_size_mb (256 -> 64) needs a restart");
    /* the admin token went with the listener: an ordinary change */
    cr_expect_str_eq(s, "~setting admin.token");
    cfg_diff_dispose(&d);
}

Test(config_diff, summary_cut_says_how_many_more)
{
    cfg_diff_t d;
    char s[512];
    summary_of(two,
               BASE "networks:\n  eth:\n    endpoints:\n"
                    "      - { id: endpoint-with-a-long-name-1, url: \"http://127.0.0.1:9011\" }\n"
                    "      - { id: endpoint-with-a-long-name-2, url: \"http://127.0.0.1:9012\" }\n"
                    "      - { id: endpoint-with-a-long-name-3, url: \"http://127.0.0.1:9013\" }\n",
               s, sizeof(s), &d);
    cr_assert_eq(d.n, 7); /* -base, 3 added, -a, -b, -base/x */
    char small[80];
    cfg_diff_summary(&d, small, sizeof(small));
    cr_expect_str_eq(small, "-network base; +endpoint eth/endpoint-with-a-long-name-1; ... and 5 more");
    char tiny[8];
    cfg_diff_summary(&d, tiny, sizeof(tiny));
    cr_expect_eq(strlen(tiny), 7); /* cut, still terminated */
    cfg_diff_dispose(&d);
}

/* The cluster: section is for a restart: each worker's link and the
 * master's check of Redis are made at the start. The message names it
 * without its values (the URL holds the password). */
Test(config_diff, cluster_needs_a_restart)
{
    static const char net[] = "networks:\n  eth:\n    endpoints: [ \"http://127.0.0.1:9001\" ]\n";
    char a[512], b[512], c[512];
    snprintf(a, sizeof(a), BASE "%scluster: { redis: \"redis://:pw-one-secret@10.0.0.1:6379/0\", host: h1 }\n", net);
    snprintf(b, sizeof(b), BASE "%scluster: { redis: \"redis://:pw-two-secret@10.0.0.1:6379/0\", host: h1 }\n", net);
    snprintf(c, sizeof(c), BASE "%s", net);
    cfg_diff_t d;
    char s[512];
    summary_of(a, a, s, sizeof(s), &d);
    cr_expect_str_eq(d.restart, "", "the same section: nothing to restart for");
    cfg_diff_dispose(&d);
    summary_of(a, b, s, sizeof(s), &d);
    cr_expect_str_eq(d.restart, "cluster changed: needs a restart");
    cr_expect(strstr(d.restart, "pw-") == NULL);
    cfg_diff_dispose(&d);
    summary_of(c, a, s, sizeof(s), &d);
    cr_expect_str_eq(d.restart, "cluster changed: needs a restart", "added");
    cfg_diff_dispose(&d);
}

/* issue 33: a key's scope and access.anonymous are reloaded */
Test(config_diff, access_scopes)
{
#define KEYS(scope)                                                                                            \
    "tiers: { pro: {} }\n"                                                                                     \
    "keys:\n  - { sha256: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef, tier: pro, name: a" \
    scope " }\n"
    static const char a[] = BASE "networks:\n  eth:\n    endpoints: [ \"http://127.0.0.1:9001\" ]\n" KEYS("");
    static const char b[] = BASE "networks:\n  eth:\n    endpoints: [ \"http://127.0.0.1:9001\" ]\n"
                                 "access: { anonymous: deny }\n"
                                 KEYS(", contracts: [\"0x1111111111111111111111111111111111111111\"]");
    static const char c[] = BASE "networks:\n  eth:\n    endpoints: [ \"http://127.0.0.1:9001\" ]\n"
                                 KEYS(", methods: { deny: [eth_sign] }");
#undef KEYS
    cfg_diff_t d;
    char s[512];
    summary_of(a, b, s, sizeof(s), &d);
    cr_expect_str_eq(s, "~setting keys; ~setting access.anonymous");
    cr_expect_str_eq(d.restart, "");
    cfg_diff_dispose(&d);
    summary_of(a, c, s, sizeof(s), &d);
    cr_expect_str_eq(s, "~setting keys");
    cfg_diff_dispose(&d);
    summary_of(c, c, s, sizeof(s), &d);
    cr_expect_str_eq(s, "no changes");
    cfg_diff_dispose(&d);
}
