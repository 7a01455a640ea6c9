/* tests/gateway/test_keys.c: a worker's copy of the keys made at run time
 * (gateway/gw_keys.c) against a real state: a key kept is matched by its
 * hash, a change keeps the old entry (not revoked) for who holds it, a
 * revocation marks it revoked and runs the sweep once, and a key whose tier
 * the config does not have is never matched. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include <h2o.h>

#include "config/cfg.h"
#include "gateway/gw_identity.h"
#include "gateway/gw_keys.h"
#include "state/state.h"
#include "state/state_apikey.h"
#include "tests/lib/config_file.h"
#include "tests/lib/temp_dir.h"

static char tmpdir[256], dbpath[300];
static state_t *st;
static cfg_t *cfg;
static h2o_loop_t *loop;
static gw_keys_t *keys;
static int sweeps;

static void on_revoke(void *data)
{
    (void)data;
    sweeps++;
}

static void setup(void)
{
    temp_dir_make(tmpdir, sizeof(tmpdir), "keys");
    snprintf(dbpath, sizeof(dbpath), "%s/state", tmpdir);
    cfg = config_load_ok("server: { workers: 1 }\ntiers: { pro: {} }\nnetworks:\n  eth:\n"
                         "    endpoints: [\"http://127.0.0.1:1\"]\n");
    state_conf_t sc = {.path = dbpath, .map_size_mb = 16, .event_max_count = 1000, .event_max_age_s = 86400};
    cr_assert_eq(state_open(&sc, &st), SL_OK);
    loop = h2o_evloop_create();
    sweeps = 0;
    keys = gw_keys_create(loop, cfg, st, on_revoke, NULL);
}

static void teardown(void)
{
    gw_keys_destroy(keys);
    h2o_evloop_destroy(loop);
    state_close(st);
    cfg_destroy(cfg);
    temp_dir_remove(tmpdir);
}

TestSuite(keys, .init = setup, .fini = teardown);

static void make(const char *name, const char *secret, const char *tier, const char *allow, uint64_t at)
{
    state_apikey_rec_t r;
    memset(&r, 0, sizeof(r));
    snprintf(r.name, sizeof(r.name), "%s", name);
    snprintf(r.tier, sizeof(r.tier), "%s", tier);
    snprintf(r.allow, sizeof(r.allow), "%s", allow);
    r.created_ms = 1;
    r.updated_ms = at;
    gw_identity_hash(secret, strlen(secret), r.sha256);
    cr_assert_eq(state_apikey_put(st, &r, at == 1, NULL), SL_OK);
}

static const cfg_key_conf_t *match(const char *secret)
{
    char hex[65];
    gw_identity_hash(secret, strlen(secret), hex);
    return gw_keys_match(keys, hex);
}

Test(keys, a_key_made_is_matched_after_a_refresh_with_its_tier_and_scope)
{
    cr_expect_null(match("sl_one"));
    make("one", "sl_one", "pro", "eth_chainId\neth_*", 1);
    cr_expect_null(match("sl_one"), "not before the worker looks");
    cr_expect_eq(gw_keys_refresh(keys), 1);
    cr_expect_eq(gw_keys_refresh(keys), 0, "the generation did not move");
    const cfg_key_conf_t *k = match("sl_one");
    cr_assert_not_null(k);
    cr_expect_str_eq(k->name, "one");
    cr_expect_str_eq(k->tier_conf->name, "pro");
    cr_assert_eq(k->scope.nallow, 2);
    cr_expect_str_eq(k->scope.allow[1], "eth_*");
    cr_expect_null(match("sl_other"));
}

Test(keys, a_change_keeps_the_old_entry_alive_and_not_revoked)
{
    make("one", "sl_one", "pro", "eth_*", 1);
    (void)gw_keys_refresh(keys);
    const cfg_key_conf_t *old = match("sl_one");
    make("one", "sl_one", "pro", "eth_chainId", 2);
    cr_expect_eq(gw_keys_refresh(keys), 1);
    const cfg_key_conf_t *now = match("sl_one");
    cr_assert_not_null(now);
    cr_expect_neq(now, old);
    cr_expect_str_eq(now->scope.allow[0], "eth_chainId");
    cr_expect_str_eq(old->scope.allow[0], "eth_*", "who holds the old entry keeps it");
    cr_expect_eq(gw_keys_revoked(keys, old), 0);
    cr_expect_eq(sweeps, 0);
}

Test(keys, a_revocation_marks_the_entry_and_sweeps_once)
{
    make("one", "sl_one", "pro", "", 1);
    make("two", "sl_two", "pro", "", 1);
    (void)gw_keys_refresh(keys);
    const cfg_key_conf_t *one = match("sl_one"), *two = match("sl_two");
    cr_assert_eq(state_apikey_delete(st, "one", 1000, NULL), SL_OK);
    cr_expect_eq(gw_keys_refresh(keys), 1);
    cr_expect_null(match("sl_one"));
    cr_expect_eq(match("sl_two"), two, "an unchanged key keeps its entry");
    cr_expect_eq(gw_keys_revoked(keys, one), 1);
    cr_expect_eq(gw_keys_revoked(keys, two), 0);
    cr_expect_eq(gw_keys_revoked(keys, NULL), 0);
    cr_expect_eq(sweeps, 1);
}

Test(keys, a_key_whose_tier_the_config_lacks_is_never_matched)
{
    make("one", "sl_one", "gone", "", 1);
    cr_expect_eq(gw_keys_refresh(keys), 1);
    cr_expect_null(match("sl_one"));
}
