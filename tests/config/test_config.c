#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/sl_log.h"
#include "base/sl_secret.h"
#include "config/cfg.h"
#include "tests/lib/config_file.h"

#define NET "networks:\n  eth:\n    endpoints: [\"http://127.0.0.1:8545\"]\n"
#define HASH "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static uint32_t cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : (uint32_t)n;
}

/* ---- the DESIGN.md example ---- */

static const char design_example[] =
    "server:  { listen: \"0.0.0.0:8545\", workers: auto, max_body_bytes: 1048576, max_batch: 100 }\n"
    "admin:   { listen: \"127.0.0.1:8546\", token: \"${SLUICE_ADMIN_TOKEN}\" }\n"
    "state:   { path: \"./var/sluice\", map_size_mb: 256 }\n"
    "networks:\n"
    "  eth:\n"
    "    chain: ethereum            # ethereum | solana: selects the method table\n"
    "    endpoints:\n"
    "      - id: alchemy\n"
    "        url: \"https://eth-mainnet.g.alchemy.com/v2/${ALCHEMY_KEY}\"\n"
    "        cost_profile: alchemy   # built-in profiles; or inline per-method costs\n"
    "        credits: { per_second: 330, per_month: 300000000 }\n"
    "        max_inflight: 64\n"
    "      - id: public\n"
    "        url: \"https://ethereum-rpc.publicnode.com\"\n"
    "    timeouts: { connect_ms: 2000, attempt_ms: 10000, request_ms: 30000 }   # defaults shown\n"
    "tiers:   { anonymous: { per_second: 10, per_minute: 300 }, pro: { per_second: 200 } }\n"
    "keys:    [ { sha256: \"0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789ABCDEF\", tier: pro, name: "
    "\"team-a\" } ]\n";

Test(config, design_example)
{
    setenv("SLUICE_ADMIN_TOKEN", "admintoken-12345", 1);
    setenv("ALCHEMY_KEY", "abcDEF123456789xyz", 1);
    cfg_t *cfg = config_load_ok(design_example);
    cr_assert_str_eq(cfg->file, "test.yaml");
    cr_assert_str_eq(cfg->server.listen, "0.0.0.0:8545");
    cr_assert_eq(cfg->server.workers, cpus());
    cr_assert_eq(cfg->server.max_body_bytes, 1048576);
    cr_assert_eq(cfg->server.max_batch, 100);
    cr_assert_eq(cfg->server.max_response_bytes, CFG_DEFAULT_MAX_RESPONSE_BYTES);
    cr_assert_eq(cfg->server.shutdown_grace_ms, CFG_DEFAULT_SHUTDOWN_GRACE_MS);
    cr_assert_str_eq(cfg->admin.listen, "127.0.0.1:8546");
    cr_assert_str_eq(cfg->admin.token, "admintoken-12345");
    cr_assert_str_eq(cfg->state.path, "./var/sluice");
    cr_assert_eq(cfg->state.map_size_mb, 256);
    cr_assert_eq(cfg->log.level, SL_LOG_INFO);

    cr_assert_eq(cfg->nnetworks, 1);
    const pool_network_conf_t *eth = &cfg->networks[0];
    cr_assert_str_eq(eth->name, "eth");
    cr_assert_eq(eth->yaml_line, 5);
    cr_assert_eq(eth->chain, POLICY_CHAIN_ETHEREUM);
    cr_assert_eq(eth->timeouts.connect_ms, 2000);
    cr_assert_eq(eth->timeouts.first_byte_ms, 5000);
    cr_assert_eq(eth->timeouts.attempt_ms, 10000);
    cr_assert_eq(eth->timeouts.request_ms, 30000);
    cr_assert_eq(eth->max_attempts, 0);
    cr_assert_eq(eth->resend_writes, 0);
    cr_assert_null(eth->blocked_methods);
    cr_assert_eq(eth->nendpoints, 2);

    const pool_endpoint_conf_t *a = &eth->endpoints[0];
    cr_assert_str_eq(a->id, "alchemy");
    cr_assert_str_eq(a->url, "https://eth-mainnet.g.alchemy.com/v2/abcDEF123456789xyz");
    cr_assert_str_eq(a->url_redacted, "https://eth-mainnet.g.alchemy.com/v2/***");
    cr_assert_str_eq(a->cost_profile, "alchemy");
    cr_assert_eq(a->has_credits, 1);
    cr_assert_eq(a->credits.limit[POLICY_CREDIT_SECOND], 330);
    cr_assert_eq(a->credits.limit[POLICY_CREDIT_MINUTE], 0);
    cr_assert_eq(a->credits.limit[POLICY_CREDIT_MONTH], 300000000);
    cr_assert_eq(a->credits.month_reset_day, 1);
    cr_assert_eq(a->max_inflight, 64);
    cr_assert_eq(a->tier, POOL_TIER_PRIMARY);
    cr_assert_eq(a->yaml_line, 8);

    const pool_endpoint_conf_t *p = &eth->endpoints[1];
    cr_assert_str_eq(p->id, "public");
    cr_assert_str_eq(p->url, "https://ethereum-rpc.publicnode.com");
    cr_assert_str_eq(p->url_redacted, "https://ethereum-rpc.publicnode.com");
    cr_assert_str_eq(p->cost_profile, "flat");
    cr_assert_eq(p->has_credits, 0);
    cr_assert_eq(p->max_inflight, POOL_DEFAULT_MAX_INFLIGHT);
    cr_assert_null(p->tls_ca_file);
    cr_assert_eq(p->nheaders, 0);

    cr_assert_eq(cfg->ntiers, 2);
    cr_assert_str_eq(cfg->tiers[0].name, "anonymous");
    cr_assert_eq(cfg->tiers[0].limits.per_second, 10);
    cr_assert_eq(cfg->tiers[0].limits.per_minute, 300);
    cr_assert_eq(cfg->tiers[0].limits.per_day, 0);
    cr_assert_str_eq(cfg->tiers[1].name, "pro");
    cr_assert_eq(cfg->tiers[1].limits.per_second, 200);
    cr_assert_eq(cfg->nkeys, 1);
    cr_assert_str_eq(cfg->keys[0].sha256, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
    cr_assert_str_eq(cfg->keys[0].tier, "pro");
    cr_assert_str_eq(cfg->keys[0].name, "team-a");
    cr_assert_eq(cfg->keys[0].yaml_line, 17);

    cr_assert(sl_secret_contains("admintoken-12345", 16));
    cr_assert(sl_secret_contains("abcDEF123456789xyz", 18));
    cr_assert(sl_secret_contains(cfg->keys[0].sha256, 64));
    cr_assert_eq(cfg_network(cfg, "eth/x", 3), eth);
    cr_assert_null(cfg_network(cfg, "eth", 2));
    cr_assert_null(cfg_network(cfg, "base", 4));
    cfg_destroy(cfg);
}

Test(config, minimal_gets_defaults)
{
    cfg_t *cfg = config_load_ok("networks:\n  eth:\n    endpoints:\n      - url: https://ethereum-rpc.publicnode.com\n");
    cr_assert_str_eq(cfg->server.listen, CFG_DEFAULT_LISTEN);
    cr_assert_eq(cfg->server.workers, cpus());
    cr_assert_eq(cfg->server.max_body_bytes, CFG_DEFAULT_MAX_BODY_BYTES);
    cr_assert_eq(cfg->server.max_batch, CFG_DEFAULT_MAX_BATCH);
    cr_assert_eq(cfg->server.max_response_bytes, CFG_DEFAULT_MAX_RESPONSE_BYTES);
    cr_assert_eq(cfg->server.shutdown_grace_ms, CFG_DEFAULT_SHUTDOWN_GRACE_MS);
    cr_assert_eq(cfg->server.max_connections, CFG_DEFAULT_MAX_CONNECTIONS);
    cr_assert_eq(cfg->server.idle_timeout_ms, CFG_DEFAULT_IDLE_TIMEOUT_MS);
    cr_assert_eq(cfg->server.write_timeout_ms, CFG_DEFAULT_WRITE_TIMEOUT_MS);
    cr_assert_eq(cfg->server.max_buffered_bytes, CFG_DEFAULT_MAX_BUFFERED_BYTES);
    cr_assert_float_eq(cfg->server.max_buffered_share, 0.25, 1e-9);
    cr_assert_eq(cfg->server.stalled_reset_ms, 1000);
    cr_assert_eq(cfg->server.max_header_line_bytes, CFG_DEFAULT_MAX_HEADER_LINE_BYTES);
    cr_assert_eq(cfg->server.max_header_bytes, CFG_DEFAULT_MAX_HEADER_BYTES);
    cr_assert_eq(cfg->server.access_log, 1);
    cr_assert_eq(cfg->server.access_log_buffer_bytes, 256 * 1024);
    cr_assert_eq(cfg->server.ncors_origins, 1);
    cr_assert_str_eq(cfg->server.cors_origins[0], "*");
    cr_assert_str_eq(cfg->admin.listen, CFG_DEFAULT_ADMIN_LISTEN);
    cr_assert_null(cfg->admin.token);
    cr_assert_str_eq(cfg->state.path, CFG_DEFAULT_STATE_PATH);
    cr_assert_eq(cfg->state.map_size_mb, CFG_DEFAULT_MAP_SIZE_MB);
    cr_assert_eq(cfg->cache.enabled, 1, "the cache is on by default");
    cr_assert_eq(cfg->cache.max_mb, CFG_DEFAULT_CACHE_MB);
    cr_assert_eq(cfg->cache.unfinalized, 0);
    cr_assert_str_eq(cfg->cache.path, CFG_DEFAULT_STATE_PATH "-cache");
    cr_assert_eq(cfg->log.level, SL_LOG_INFO);
    cr_assert_eq(cfg->log.json, 0);
    cr_assert_eq(cfg->ntiers, 0);
    cr_assert_eq(cfg->nkeys, 0);
    const pool_network_conf_t *n = cfg_network(cfg, "eth", 3);
    cr_assert_not_null(n);
    cr_assert_eq(n->chain, POLICY_CHAIN_ETHEREUM);
    cr_assert_eq(n->timeouts.connect_ms, POOL_DEFAULT_CONNECT_MS);
    cr_assert_eq(n->timeouts.first_byte_ms, POOL_DEFAULT_FIRST_BYTE_MS);
    cr_assert_eq(n->timeouts.attempt_ms, POOL_DEFAULT_ATTEMPT_MS);
    cr_assert_eq(n->timeouts.request_ms, POOL_DEFAULT_REQUEST_MS);
    cr_assert_eq(n->nendpoints, 1);
    cr_assert_str_eq(n->endpoints[0].id, "e0");
    cr_assert_eq(n->endpoints[0].max_inflight, POOL_DEFAULT_MAX_INFLIGHT);
    cr_assert_eq(n->endpoints[0].tier, POOL_TIER_PRIMARY);
    cr_assert_str_eq(n->endpoints[0].cost_profile, "flat");
    cr_assert_eq(n->endpoints[0].yaml_line, 4);
    cfg_destroy(cfg);
}

Test(config, cache_section)
{
    cfg_t *cfg = config_load_ok("state: { path: /tmp/s }\ncache: { max_mb: 64, unfinalized: head }\n"
                                      "networks:\n  eth:\n    endpoints: [\"http://h\"]\n");
    cr_expect_eq(cfg->cache.enabled, 1);
    cr_expect_eq(cfg->cache.max_mb, 64);
    cr_expect_eq(cfg->cache.unfinalized, 1);
    cr_expect_str_eq(cfg->cache.path, "/tmp/s-cache", "beside the state folder");
    cfg_destroy(cfg);
    cfg = config_load_ok("cache: { enabled: false, path: /var/c }\nnetworks:\n  eth:\n    endpoints: [\"http://h\"]\n");
    cr_expect_eq(cfg->cache.enabled, 0);
    cr_expect_str_eq(cfg->cache.path, "/var/c");
    cfg_destroy(cfg);
}

Test(config, pressure_defaults_and_overrides)
{
    cfg_t *cfg = config_load_ok(NET);
    const policy_pressure_conf_t *p = &cfg_network(cfg, "eth", 3)->pressure;
    cr_expect_eq(p->enabled, 1);
    cr_expect_float_eq(p->elevated, 0.6, 1e-9);
    cr_expect_float_eq(p->critical, 0.85, 1e-9);
    cr_expect_float_eq(p->hysteresis, 0.1, 1e-9);
    cr_expect_eq(p->hold_ms, 2000);
    cr_expect_eq(p->rise_ms, 100);
    cr_expect_float_eq(p->slow_factor, 3, 1e-9);
    cr_expect_float_eq(p->refusal_ratio, 0.2, 1e-9);
    cr_expect_eq(p->window_ms, 10000);
    cr_expect_eq(p->merge_window_ms, 2);
    cr_expect_eq(p->retry_after_ms, 1000);
    cr_expect_eq(p->shed[POLICY_PRIO_LOW], POLICY_PRESSURE_ELEVATED);
    cr_expect_eq(p->shed[POLICY_PRIO_NORMAL], POLICY_PRESSURE_CRITICAL);
    cr_expect_eq(p->shed[POLICY_PRIO_HIGH], POLICY_SHED_NEVER);
    cr_expect_eq(p->shed[POLICY_PRIO_CRITICAL], POLICY_SHED_NEVER);
    cfg_destroy(cfg);

    cfg = config_load_ok("networks:\n  eth:\n    endpoints: [\"http://h\"]\n    pressure:\n"
                  "      elevated: 0.5\n      critical: 0.9\n      hysteresis: 0.05\n      hold_ms: 0\n      rise_ms: 0\n"
                  "      shed: { low: critical, normal: never }\n      shed_writes_at_critical: true\n"
                  "      merge_window_ms: 0\n      retry_after_ms: 250\n      enabled: false\n");
    p = &cfg_network(cfg, "eth", 3)->pressure;
    cr_expect_eq(p->enabled, 0);
    cr_expect_float_eq(p->elevated, 0.5, 1e-9);
    cr_expect_float_eq(p->critical, 0.9, 1e-9);
    cr_expect_eq(p->hold_ms, 0);
    cr_expect_eq(p->rise_ms, 0);
    cr_expect_eq(p->shed[POLICY_PRIO_LOW], POLICY_PRESSURE_CRITICAL);
    cr_expect_eq(p->shed[POLICY_PRIO_NORMAL], POLICY_SHED_NEVER);
    cr_expect_eq(p->shed[POLICY_PRIO_HIGH], POLICY_PRESSURE_CRITICAL);
    cr_expect_eq(p->merge_window_ms, 0);
    cr_expect_eq(p->retry_after_ms, 250);
    cfg_destroy(cfg);

    /* shed.high: critical and the shorthand agree */
    cfg = config_load_ok("networks:\n  eth:\n    endpoints: [\"http://h\"]\n    pressure:\n"
                  "      shed: { high: critical }\n      shed_writes_at_critical: true\n");
    cr_expect_eq(cfg_network(cfg, "eth", 3)->pressure.shed[POLICY_PRIO_HIGH], POLICY_PRESSURE_CRITICAL);
    cfg_destroy(cfg);
}

Test(config, shorthand_endpoints)
{
    cfg_t *cfg = config_load_ok("networks:\n"
                               "  eth:\n"
                               "    endpoints:\n"
                               "      - https://ethereum-rpc.publicnode.com\n"
                               "      - { id: e0x, url: \"http://127.0.0.1:8545\" }\n"
                               "      - \"https://sparkling-a.quiknode.pro/0a1b2c3d4e5f/\"\n"
                               "  solana:\n"
                               "    chain: solana\n"
                               "    endpoints: [\"https://api.mainnet-beta.solana.com\"]\n");
    cr_assert_eq(cfg->nnetworks, 2);
    const pool_network_conf_t *eth = cfg_network(cfg, "eth", 3);
    cr_assert_eq(eth->nendpoints, 3);
    cr_assert_str_eq(eth->endpoints[0].id, "e0");
    cr_assert_str_eq(eth->endpoints[0].url, "https://ethereum-rpc.publicnode.com");
    cr_assert_eq(eth->endpoints[0].yaml_line, 4);
    cr_assert_str_eq(eth->endpoints[1].id, "e0x");
    cr_assert_str_eq(eth->endpoints[2].id, "e2");
    cr_assert_str_eq(eth->endpoints[2].url_redacted, "https://sparkling-a.quiknode.pro/***/");
    cr_assert(sl_secret_contains("0a1b2c3d4e5f", 12));
    const pool_network_conf_t *sol = cfg_network(cfg, "solana", 6);
    cr_assert_eq(sol->chain, POLICY_CHAIN_SOLANA);
    cr_assert_str_eq(sol->endpoints[0].id, "e0");
    cfg_destroy(cfg);
}

/* Every key of the schema, with non-default values. */
static const char full_example[] =
    "server:\n"
    "  listen: \"[::]:0\"\n"
    "  workers: 3\n"
    "  max_body_bytes: 2048\n"
    "  max_batch: 10000\n"
    "  max_response_bytes: 1000000\n"
    "  shutdown_grace_ms: 0\n"
    "  max_connections: 50\n"
    "  idle_timeout_ms: 2500\n"
    "  write_timeout_ms: 7000\n"
    "  max_buffered_bytes: 2097152\n"
    "  max_buffered_share: 0.5\n"
    "  stalled_reset_ms: 0\n"
    "  max_header_line_bytes: 4096\n"
    "  max_header_bytes: 16384\n"
    "  access_log: off\n"
    "  access_log_buffer_bytes: 65536\n"
    "  cors_origins: [\"https://app.example\", \"https://b.example\"]\n"
    "admin: { listen: \"[::1]:9000\" }\n"
    "state: { path: /tmp/sluice-state, map_size_mb: 16 }\n"
    "log: { level: debug, format: json }\n"
    "networks:\n"
    "  base-1:\n"
    "    chain: ethereum\n"
    "    timeouts: { connect_ms: 100, first_byte_ms: 200, attempt_ms: 300, request_ms: 400 }\n"
    "    max_attempts: 16\n"
    "    resend_writes: yes\n"
    "    blocked_methods: [\"admin_*\", debug_traceTransaction]\n"
    "    endpoints:\n"
    "      - id: Node.A_1\n"
    "        url: https://user:hunter2pw@node.example:8443/rpc?api-key=k3y-value&x=\n"
    "        tls_ca_file: CAFILE\n"
    "        headers: { X-Api-Key: \"${HDR_KEY}\", Authorization: Bearer tok-123456 }\n"
    "        max_inflight: 100000\n"
    "        tier: fallback\n"
    "        cost_profile: helius\n"
    "        credits: { per_second: 0, per_minute: 5, per_day: 6, per_month: 18446744073709551615, month_reset_day: 28 }\n"
    "  quiet:\n"
    "    blocked_methods: []\n"
    "    endpoints: [\"http://10.0.0.1\"]\n"
    "tiers: { free: { per_day: 1000 } }\n"
    "keys:\n"
    "  - sha256: " HASH "\n"
    "    tier: free\n"
    "    name: ci\n";

static char *replace(const char *s, const char *what, const char *with)
{
    const char *at = strstr(s, what);
    cr_assert_not_null(at);
    char *out = malloc(strlen(s) + strlen(with) + 1);
    sprintf(out, "%.*s%s%s", (int)(at - s), s, with, at + strlen(what));
    return out;
}

Test(config, full_schema_from_file)
{
    char ca[256], path[256];
    config_file_write(ca, sizeof(ca), "ca", "");
    setenv("HDR_KEY", "header-secret-1", 1);
    char *yaml = replace(full_example, "CAFILE", ca);
    config_file_write(path, sizeof(path), "cfg", yaml);
    free(yaml);

    cfg_t *cfg = NULL;
    cfg_errors_t errs;
    sl_err_t err = cfg_load(path, &cfg, &errs);
    cfg_errors_print(&errs, path, stderr);
    cr_assert_eq(err, SL_OK);
    cr_assert_str_eq(cfg->file, path);
    cr_assert_str_eq(cfg->server.listen, "[::]:0");
    cr_assert_eq(cfg->server.workers, 3);
    cr_assert_eq(cfg->server.max_body_bytes, 2048);
    cr_assert_eq(cfg->server.max_batch, 10000);
    cr_assert_eq(cfg->server.max_response_bytes, 1000000);
    cr_assert_eq(cfg->server.shutdown_grace_ms, 0);
    cr_assert_eq(cfg->server.max_connections, 50);
    cr_assert_eq(cfg->server.idle_timeout_ms, 2500);
    cr_assert_eq(cfg->server.write_timeout_ms, 7000);
    cr_assert_eq(cfg->server.max_buffered_bytes, 2097152);
    cr_assert_float_eq(cfg->server.max_buffered_share, 0.5, 1e-9);
    cr_assert_eq(cfg->server.stalled_reset_ms, 0);
    cr_assert_eq(cfg->server.max_header_line_bytes, 4096);
    cr_assert_eq(cfg->server.max_header_bytes, 16384);
    cr_assert_eq(cfg->server.access_log, 0);
    cr_assert_eq(cfg->server.access_log_buffer_bytes, 65536);
    cr_assert_eq(cfg->server.ncors_origins, 2);
    cr_assert_str_eq(cfg->server.cors_origins[1], "https://b.example");
    cr_assert_str_eq(cfg->admin.listen, "[::1]:9000");
    cr_assert_str_eq(cfg->state.path, "/tmp/sluice-state");
    cr_assert_eq(cfg->state.map_size_mb, 16);
    cr_assert_eq(cfg->log.level, SL_LOG_DEBUG);
    cr_assert_eq(cfg->log.json, 1);

    const pool_network_conf_t *n = cfg_network(cfg, "base-1", 6);
    cr_assert_eq(n->timeouts.connect_ms, 100);
    cr_assert_eq(n->timeouts.first_byte_ms, 200);
    cr_assert_eq(n->timeouts.attempt_ms, 300);
    cr_assert_eq(n->timeouts.request_ms, 400);
    cr_assert_eq(n->max_attempts, 16);
    cr_assert_eq(n->resend_writes, 1);
    cr_assert_eq(n->nblocked_methods, 2);
    cr_assert_str_eq(n->blocked_methods[0], "admin_*");
    cr_assert_str_eq(n->blocked_methods[1], "debug_traceTransaction");
    const pool_endpoint_conf_t *e = &n->endpoints[0];
    cr_assert_str_eq(e->id, "Node.A_1");
    cr_assert_str_eq(e->url_redacted, "https://***@node.example:8443/rpc?api-key=***&x=");
    cr_assert_str_eq(e->tls_ca_file, ca);
    cr_assert_eq(e->nheaders, 2);
    cr_assert_str_eq(e->headers[0].name, "X-Api-Key");
    cr_assert_str_eq(e->headers[0].value, "header-secret-1");
    cr_assert_str_eq(e->headers[1].value, "Bearer tok-123456");
    cr_assert_eq(e->max_inflight, 100000);
    cr_assert_eq(e->tier, POOL_TIER_FALLBACK);
    cr_assert_str_eq(e->cost_profile, "helius");
    cr_assert_eq(e->has_credits, 1);
    cr_assert_eq(e->credits.limit[POLICY_CREDIT_MINUTE], 5);
    cr_assert_eq(e->credits.limit[POLICY_CREDIT_DAY], 6);
    cr_assert_eq(e->credits.limit[POLICY_CREDIT_MONTH], UINT64_MAX);
    cr_assert_eq(e->credits.month_reset_day, 28);

    const pool_network_conf_t *q = cfg_network(cfg, "quiet", 5);
    cr_assert_not_null(q->blocked_methods);   /* [] = block nothing, not the chain default */
    cr_assert_eq(q->nblocked_methods, 0);
    cr_assert_eq(cfg->nkeys, 1);
    cr_assert_str_eq(cfg->keys[0].tier, "free");

    /* user-info, query values and header values are secrets */
    const char *secrets[] = {"hunter2pw", "user:hunter2pw", "k3y-value", "header-secret-1", "Bearer tok-123456"};
    for (size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++)
        cr_assert(sl_secret_contains(secrets[i], strlen(secrets[i])), "%s", secrets[i]);
    cfg_destroy(cfg);
    cfg_errors_dispose(&errs);
    unlink(ca);
    unlink(path);
}

Test(config, unreadable_file)
{
    cfg_t *cfg = (cfg_t *)1;
    cfg_errors_t errs;
    cr_assert_eq(cfg_load("/nonexistent/sluice.yaml", &cfg, &errs), SL_ERR_IO);
    cr_assert_null(cfg);
    cr_assert_eq(errs.count, 1);
    cr_assert_eq(errs.items[0].line, 0);
    cr_assert(strstr(errs.items[0].message, "No such file") != NULL, "%s", errs.items[0].message);
    cfg_errors_dispose(&errs);
}

Test(config, websocket_defaults_and_keys)
{
    cfg_t *cfg = config_load_ok(NET);
    cr_assert_str_eq(cfg->admin.listen, "127.0.0.1:8550"); /* 8546 is the WebSocket port now */
    cr_assert_null(cfg->server.ws_listen);                /* the main port + 1, best effort */
    cr_assert_eq(cfg->server.ws_listen_off, 0);
    cr_assert_eq(cfg->server.ws_max_connections, CFG_DEFAULT_WS_MAX_CONNECTIONS);
    cr_assert_eq(cfg->server.ws_max_connections_per_identity, CFG_DEFAULT_WS_MAX_PER_IDENTITY);
    cr_assert_eq(cfg->server.ws_max_queued_bytes, CFG_DEFAULT_WS_MAX_QUEUED_BYTES);
    cr_assert_eq(cfg->server.ws_max_inflight, CFG_DEFAULT_WS_MAX_INFLIGHT);
    cr_assert_eq(cfg->server.ws_max_subscriptions_per_connection, CFG_DEFAULT_WS_MAX_SUBS_PER_CONNECTION);
    cr_assert_eq(cfg->server.ws_max_subscriptions_per_identity, CFG_DEFAULT_WS_MAX_SUBS_PER_IDENTITY);
    cr_assert_eq(cfg->server.ws_max_sources_per_identity, CFG_DEFAULT_WS_MAX_SOURCES_PER_IDENTITY);
    cr_assert_eq(cfg->server.ws_max_polled_sources_per_identity, CFG_DEFAULT_WS_MAX_POLLED_SOURCES_PER_IDENTITY);
    cr_assert_eq(cfg->server.ws_ping_interval_ms, CFG_DEFAULT_WS_PING_INTERVAL_MS);
    cr_assert_eq(cfg->server.ws_idle_timeout_ms, CFG_DEFAULT_WS_IDLE_TIMEOUT_MS);
    cr_assert_eq(cfg->server.ws_logs_retry_s, 120, "a 60 s eth_getLogs outage at 1 s blocks loses nothing");
    cr_assert_eq(cfg->server.ws_resume, CFG_WS_RESUME_KEYED, "callers with a key are held by default");
    cr_assert_eq(cfg->server.ws_resume_s, 60);
    cfg_destroy(cfg);
    cfg = config_load_ok("server: { ws_resume: all, ws_resume_s: 5 }\n" NET);
    cr_assert_eq(cfg->server.ws_resume, CFG_WS_RESUME_ALL);
    cr_assert_eq(cfg->server.ws_resume_s, 5);
    cfg_destroy(cfg);
    cfg = config_load_ok("server: { ws_resume: off }\n" NET);
    cr_assert_eq(cfg->server.ws_resume, CFG_WS_RESUME_OFF);
    cfg_destroy(cfg);
    cfg = config_load_ok("server: { ws_listen: off }\n" NET);
    cr_assert_null(cfg->server.ws_listen);
    cr_assert_eq(cfg->server.ws_listen_off, 1);
    cfg_destroy(cfg);
    cfg = config_load_ok("server: { ws_listen: \"[::1]:9546\", ws_max_connections: 10, ws_ping_interval_ms: 0, "
                         "ws_idle_timeout_ms: 1000, ws_max_queued_bytes: 1048576, ws_logs_retry_s: 5 }\n" NET);
    cr_assert_str_eq(cfg->server.ws_listen, "[::1]:9546");
    cr_assert_eq(cfg->server.ws_logs_retry_s, 5);
    cr_assert_eq(cfg->server.ws_max_connections_per_identity, 10, "the default, within a lower cap");
    cr_assert_eq(cfg->server.ws_max_queued_bytes, 1024 * 1024);
    cfg_destroy(cfg);
}

Test(config, admin_off_and_loopback_names)
{
    cfg_t *cfg = config_load_ok("admin: { listen: off }\n" NET);
    cr_assert_null(cfg->admin.listen);
    cfg_destroy(cfg);
    cfg = config_load_ok("admin: { listen: \"localhost:8546\" }\n" NET);
    cfg_destroy(cfg);
    cfg = config_load_ok("admin: { listen: \"127.1.2.3:1\" }\n" NET);
    cfg_destroy(cfg);
    cfg = config_load_ok("admin: { listen: \"0.0.0.0:8546\", token: s3cret-token-0123 }\n" NET);
    cr_assert(sl_secret_contains("s3cret-token-0123", 17));
    cfg_destroy(cfg);
    cfg = config_load_ok("admin: { token: change-me-please }\n" NET); /* 16 bytes: the least allowed */
    cfg_destroy(cfg);
}

Test(config, timeouts_left_out_follow_the_given_ones)
{
    cfg_t *cfg = config_load_ok("networks:\n  eth:\n    timeouts: { attempt_ms: 3000 }\n"
                               "    endpoints: [\"http://127.0.0.1:8545\"]\n"
                               "  big:\n    timeouts: { attempt_ms: 60000 }\n"
                               "    endpoints: [\"http://127.0.0.1:8545\"]\n");
    cr_assert_eq(cfg->networks[0].timeouts.first_byte_ms, 3000);
    cr_assert_eq(cfg->networks[0].timeouts.request_ms, POOL_DEFAULT_REQUEST_MS);
    cr_assert_eq(cfg->networks[1].timeouts.first_byte_ms, POOL_DEFAULT_FIRST_BYTE_MS);
    cr_assert_eq(cfg->networks[1].timeouts.request_ms, 60000);
    cfg_destroy(cfg);
}

/* ---- ${ENV} ---- */

Test(config, env_expansion)
{
    setenv("SL_T_HOST", "127.0.0.1", 1);
    setenv("SL_T_EMPTY", "", 1);
    unsetenv("SL_T_UNSET");
    cfg_t *cfg = config_load_ok("server: { listen: \"${SL_T_HOST}:${SL_T_PORT:-8545}\", max_batch: \"${SL_T_UNSET:-7}\" }\n"
                               "state: { path: \"/var/$$x/${SL_T_EMPTY:-dflt}/a$b\" }\n" NET);
    cr_assert_str_eq(cfg->server.listen, "127.0.0.1:8545");
    cr_assert_eq(cfg->server.max_batch, 7);
    cr_assert_str_eq(cfg->state.path, "/var/$x/dflt/a$b");
    /* an environment value is registered if it looks like a key, not a
     * host or a word: scrubbing those would blank every log line */
    cr_assert_not(sl_secret_contains("127.0.0.1", 9));
    cr_assert_not(sl_secret_contains("dflt", 4));
    cfg_destroy(cfg);

    cfg_errors_t errs;
    config_load_bad("admin: { token: \"${SL_T_UNSET}\" }\n" NET, &errs);
    cr_assert_eq(errs.count, 1);
    cr_assert_eq(errs.items[0].line, 1);
    cr_assert_str_eq(errs.items[0].path, "admin.token");
    cr_assert_str_eq(errs.items[0].message, "environment variable SL_T_UNSET is not set");
    cfg_errors_dispose(&errs);

    config_load_bad("admin: { token: \"${1BAD}\" }\n" NET, &errs);
    cr_assert(strstr(errs.items[0].message, "invalid reference") != NULL);
    cfg_errors_dispose(&errs);
}

Test(config, keys_are_not_expanded)
{
    setenv("SL_T_NET", "eth", 1);
    cfg_errors_t errs;
    config_load_bad("networks:\n  ${SL_T_NET}:\n    endpoints: [\"http://h\"]\n", &errs);
    cr_assert_str_eq(errs.items[0].path, "networks.${SL_T_NET}");
    cfg_errors_dispose(&errs);
}

/* ---- secrets never reach a message ---- */

Test(config, secrets_stay_out_of_messages)
{
    setenv("SL_T_SECRET", "Sup3rSecretValue", 1);
    cfg_errors_t errs;
    config_load_bad("server: { workers: \"${SL_T_SECRET}\" }\n"
             "networks:\n"
             "  eth:\n"
             "    endpoints:\n"
             "      - url: \"ftp://h/v2/${SL_T_SECRET}\"\n"
             "      - url: \"https://h/v2/${SL_T_SECRET}\"\n"
             "        tier: \"${SL_T_SECRET}\"\n"
             "        tls_ca_file: \"/nonexistent/${SL_T_SECRET}\"\n",
             &errs);
    cr_assert_eq(errs.count, 4);
    cr_assert(sl_secret_contains("Sup3rSecretValue", 16));
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cfg_errors_print(&errs, "test.yaml", f);
    fclose(f);
    cr_assert_null(strstr(text, "Sup3rSecretValue"), "%s", text);
    cr_assert_not_null(strstr(text, "test.yaml:5: networks.eth.endpoints[0].url: invalid url: scheme must be"));
    cr_assert_not_null(strstr(text, "test.yaml:1: server.workers: expected a decimal whole number (got '***')"));
    free(text);
    cfg_errors_dispose(&errs);
}

Test(config, url_path_secrets_registered)
{
    cfg_t *cfg = config_load_ok("networks:\n  eth:\n    endpoints:\n"
                               "      - https://mainnet.infura.io/v3/0123456789abcdef0123456789abcdef\n"
                               "      - https://mainnet.helius-rpc.com/?api-key=1b2c3d4e-aaaa-bbbb-cccc-0123456789ab\n"
                               "      - https://lb.drpc.org/ogrpc?network=ethereum&dkey=Ak80gSCleU1Frwnafb5Ka4V\n"
                               "      - https://rpc.ankr.com/eth_sepolia/XYZ1234\n");
    cr_assert(sl_secret_contains("0123456789abcdef0123456789abcdef", 32));
    cr_assert(sl_secret_contains("1b2c3d4e-aaaa-bbbb-cccc-0123456789ab", 36));
    cr_assert(sl_secret_contains("Ak80gSCleU1Frwnafb5Ka4V", 23));
    cr_assert_str_eq(cfg->networks[0].endpoints[1].url_redacted, "https://mainnet.helius-rpc.com/?api-key=***");
    /* hidden from display, but words and short pieces are not registered:
     * scrubbing "ethereum" from every log line and answer protects nothing */
    cr_assert_str_eq(cfg->networks[0].endpoints[2].url_redacted, "https://lb.drpc.org/ogrpc?network=***&dkey=***");
    cr_assert_str_eq(cfg->networks[0].endpoints[3].url_redacted, "https://rpc.ankr.com/***/***");
    cr_assert_not(sl_secret_contains("ethereum", 8));
    cr_assert_not(sl_secret_contains("eth_sepolia", 11));
    cr_assert_not(sl_secret_contains("XYZ1234", 7));
    cfg_destroy(cfg);
}

/* ws_url: its key registered and hidden as url's is, its scheme kept;
 * ws_stall_ms read (0 when absent: the chain's default). */
Test(config, ws_url_secrets_registered)
{
    cfg_t *cfg = config_load_ok("networks:\n  eth:\n    ws_stall_ms: 3000\n    endpoints:\n"
                                      "      - url: https://eth-mainnet.g.alchemy.com/v2/Qx7mK2pLw9Rz4Tn8Vb3Hc6Jd\n"
                                      "        ws_url: wss://eth-mainnet.g.alchemy.com/v2/Ws5nB8qLe2Yt7Uk4Pz9Xa3Mf\n"
                                      "      - url: http://127.0.0.1:8545\n");
    const pool_network_conf_t *n = &cfg->networks[0];
    cr_assert_str_eq(n->endpoints[0].ws_url, "wss://eth-mainnet.g.alchemy.com/v2/Ws5nB8qLe2Yt7Uk4Pz9Xa3Mf");
    cr_assert_str_eq(n->endpoints[0].ws_url_redacted, "wss://eth-mainnet.g.alchemy.com/v2/***");
    cr_assert(sl_secret_contains("Ws5nB8qLe2Yt7Uk4Pz9Xa3Mf", 24)); /* the ws_url's own key */
    cr_assert_null(n->endpoints[1].ws_url);
    cr_assert_eq(n->ws_stall_ms, 3000);
    cfg_destroy(cfg);
}

Test(config, errors_print_format)
{
    cfg_error_t items[] = {
        {3, "server.listen", "bad"},
        {0, "", "cannot read"},
        {0, "networks", "missing"},
    };
    cfg_errors_t errs = {items, 3};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cfg_errors_print(&errs, "s.yaml", f);
    fclose(f);
    cr_assert_str_eq(text, "s.yaml:3: server.listen: bad\ns.yaml: cannot read\ns.yaml: networks: missing\n");
    free(text);
}

/* An answer limit above the default budget raises the budget with it, unless
 * the budget was given (then --check says they disagree). */
Test(config, max_buffered_bytes_follows_a_larger_max_response_bytes)
{
    cfg_t *cfg = config_load_ok("server: { max_response_bytes: 536870912 }\n"
                               "networks:\n  eth:\n    endpoints: [\"http://127.0.0.1:8545\"]\n");
    cr_assert_eq(cfg->server.max_buffered_bytes, 536870912);
    cfg_destroy(cfg);
}

/* methods: on a name no table knows replaces the guess its name gave (a
 * write for mev_submitBundle) and makes it coalescible: the operator said
 * what it is. Left alone, the guess stands. */
Test(config, method_override_of_unknown_names)
{
    cfg_t *cfg = config_load_ok("networks:\n  eth:\n    endpoints: [\"http://127.0.0.1:8545\"]\n"
                               "    methods:\n"
                               "      eth_requestQuote: { class: read }\n"
                               "      mev_submitBundle: { priority: normal }\n"
                               "      eth_customRead: { priority: low }\n"
                               "      eth_getFilterChanges: { class: read }\n");
    const pool_network_conf_t *n = cfg_network(cfg, "eth", 3);
    cr_assert_eq(n->nmethod_overrides, 4);
    const policy_method_t *m = n->method_overrides;
    cr_expect_str_eq(m[0].name, "eth_requestQuote");
    cr_expect_eq(m[0].cls, POLICY_CLASS_READ);
    cr_expect_eq(m[0].retry_safe, 1, "a read by the operator's word, not the name's write");
    cr_expect(policy_method_coalesces(&m[0]));
    cr_expect_eq(m[1].cls, POLICY_CLASS_WRITE, "no class given: the name's guess stands");
    cr_expect_eq(m[1].retry_safe, 0);
    cr_expect_eq(m[1].priority, POLICY_PRIO_NORMAL);
    cr_expect_eq(m[2].cls, POLICY_CLASS_READ);
    cr_expect_eq(m[2].retry_safe, 1);
    cr_expect(policy_method_coalesces(&m[2]), "named in methods: no longer unknown");
    /* a known row keeps its own retry_safe: filters live on one node */
    cr_expect_eq(m[3].retry_safe, 0);
    cfg_destroy(cfg);
}

/* Connection and admin limits: the per-address share follows
 * max_connections unless given, and is never above it; the heartbeat has
 * a floor. */
Test(config, connection_and_admin_limits)
{
    cfg_t *cfg = config_load_ok(NET);
    cr_expect_eq(cfg->server.max_connections_per_address, CFG_DEFAULT_MAX_CONNECTIONS / 4);
    cr_expect_eq(cfg->server.first_request_timeout_ms, CFG_DEFAULT_FIRST_REQUEST_TIMEOUT_MS);
    cr_expect_eq(cfg->admin.max_connections, CFG_DEFAULT_ADMIN_MAX_CONNECTIONS);
    cr_expect_eq(cfg->admin.max_streams, CFG_DEFAULT_ADMIN_MAX_STREAMS);
    cr_expect_eq(cfg->admin.heartbeat_ms, CFG_DEFAULT_ADMIN_HEARTBEAT_MS);
    cfg_destroy(cfg);
    cfg = config_load_ok("server: { max_connections: 20 }\n" NET);
    cr_expect_eq(cfg->server.max_connections_per_address, 8, "at least 8");
    cfg_destroy(cfg);
    cfg = config_load_ok("server: { max_connections: 3 }\n" NET);
    cr_expect_eq(cfg->server.max_connections_per_address, 3, "never above max_connections");
    cfg_destroy(cfg);
    cfg = config_load_ok("server: { max_connections: 100, max_connections_per_address: 100, first_request_timeout_ms: 500 }\n"
                  "admin: { max_connections: 4, max_streams: 0, heartbeat_ms: 1000 }\n" NET);
    cr_expect_eq(cfg->server.max_connections_per_address, 100);
    cr_expect_eq(cfg->server.first_request_timeout_ms, 500);
    cr_expect_eq(cfg->admin.max_connections, 4);
    cr_expect_eq(cfg->admin.max_streams, 0);
    cfg_destroy(cfg);

    cfg_errors_t errs;
    config_load_bad("server: { max_connections: 10, max_connections_per_address: 11 }\n" NET, &errs);
    cr_expect_str_eq(errs.items[0].path, "server.max_connections_per_address");
    cr_expect(strstr(errs.items[0].message, "above server.max_connections (10)") != NULL, "%s", errs.items[0].message);
    cfg_errors_dispose(&errs);
    config_load_bad("admin: { heartbeat_ms: 100 }\n" NET, &errs);
    cr_expect_str_eq(errs.items[0].path, "admin.heartbeat_ms");
    cfg_errors_dispose(&errs);
    config_load_bad("admin: { max_connections: 0 }\n" NET, &errs);
    cr_expect_str_eq(errs.items[0].path, "admin.max_connections");
    cfg_errors_dispose(&errs);
}

/* issue 33: access: and a key's scope */
Test(config, access_scopes)
{
    cfg_t *cfg = config_load_ok("networks:\n"
                                "  eth: { endpoints: [\"http://h:1\"] }\n"
                                "  base: { endpoints: [\"http://h:2\"] }\n"
                                "access: { anonymous: deny }\n"
                                "tiers: { pro: {} }\n"
                                "keys:\n"
                                "  - sha256: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n"
                                "    tier: pro\n"
                                "    name: web\n"
                                "    networks: [base]\n"
                                "    methods: { allow: [\"eth_*\", net_version], deny: [eth_sendRawTransaction] }\n"
                                "    contracts: [\"0xAbCdEf0123456789abcdef0123456789ABCDEF01\"]\n"
                                "    origins: [\"https://app.example\"]\n"
                                "  - sha256: 1123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n"
                                "    tier: pro\n"
                                "    name: plain\n");
    cr_assert_eq(cfg->anonymous_deny, 1);
    const policy_access_scope_t *s = &cfg->keys[0].scope;
    cr_assert_eq(s->nnetworks, 1);
    cr_assert_str_eq(s->networks[0], "base");
    cr_assert_eq(s->nallow, 2);
    cr_assert_str_eq(s->allow[1], "net_version");
    cr_assert_eq(s->ndeny, 1);
    cr_assert_eq(s->ncontracts, 1);
    cr_assert_eq(s->contracts[0][0], 0xab);
    cr_assert_eq(s->contracts[0][19], 0x01);
    cr_assert_eq(s->norigins, 1);
    cr_assert(policy_access_scoped(s));
    cr_assert_not(policy_access_scoped(&cfg->keys[1].scope));
    cfg_destroy(cfg);
    cfg = config_load_ok("networks: { eth: { endpoints: [\"http://h:1\"] } }\n");
    cr_assert_eq(cfg->anonymous_deny, 0, "allow by default");
    cfg_destroy(cfg);
}
