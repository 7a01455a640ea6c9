/* cfg: configs that must not load, each problem with its line and path. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sl_buf.h"
#include "config/cfg.h"
#include "tests/lib/config_file.h"

#define NET "networks:\n  eth:\n    endpoints: [\"http://127.0.0.1:8545\"]\n"
#define HASH "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

typedef struct bad_case {
    const char *yaml;
    int line;
    const char *path;
    const char *msg;          /* substring */
    size_t count;             /* how many errors in all */
} bad_case_t;

#define PR "networks:\n  eth:\n    endpoints: [\"http://h\"]\n    pressure:\n"
#define CH_GENESIS "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d"
#define CH_EP1 "    endpoints: [\"http://h:1\"]\n"
#define CH_EP3 "    endpoints: [\"http://h:1\", \"http://h:2\", \"http://h:3\"]\n"
#define CH_ETH "networks:\n  eth:\n"
#define CH_SOL "networks:\n  sol:\n    chain: solana\n"

static const bad_case_t bad_cases[] = {
    {PR "      elevated: 0.9\n      critical: 0.8\n", 5, "networks.eth.pressure", "0 < elevated < critical", 1},
    {PR "      elevated: 0\n", 5, "networks.eth.pressure", "0 < elevated < critical", 2},
    {PR "      hysteresis: 0.7\n", 5, "networks.eth.pressure", "hysteresis (0.7) must be below", 1},
    {PR "      slow_factor: 0.5\n", 5, "networks.eth.pressure", "slow_factor (0.5) must be at least 1", 1},
    {PR "      refusal_ratio: 0\n", 5, "networks.eth.pressure", "refusal_ratio (0) must be in (0, 1]", 1},
    {PR "      window_ms: 10\n", 5, "networks.eth.pressure.window_ms", "between 1000 and 600000", 1},
    {PR "      merge_window_ms: 5000\n", 5, "networks.eth.pressure.merge_window_ms", "between 0 and 1000", 1},
    {PR "      shed: { critical: elevated }\n", 5, "networks.eth.pressure.shed.critical", "is never shed", 1},
    {PR "      shed: { lowe: elevated }\n", 5, "networks.eth.pressure.shed.lowe", "did you mean 'low'?", 1},
    {PR "      shed: { low: ok }\n", 5, "networks.eth.pressure.shed.low", "at elevated, at critical, or never", 1},
    {PR "      shed: { normal: sometimes }\n", 5, "networks.eth.pressure.shed.normal", "got 'sometimes'", 1},
    {PR "      shed: { high: never }\n      shed_writes_at_critical: true\n", 5, "networks.eth.pressure",
     "contradicts pressure.shed.high: never", 1},
    {PR "      critcal: 0.9\n", 5, "networks.eth.pressure.critcal", "did you mean 'critical'?", 1},

    {"cache: { unfinalized: maybe }\n" NET, 1, "cache.unfinalized", "off or head (got 'maybe')", 1},
    {"cache: { max_mb: 0 }\n" NET, 1, "cache.max_mb", "between 1 and 1048576", 1},
    {"cache: { path: \"\" }\n" NET, 1, "cache.path", "must not be empty", 1},
    {"state: { path: ./var/s }\ncache:\n  path: ./var/s/\n" NET, 3, "cache.path", "must not be the state folder", 1},
    {"cache: { redis: true }\n" NET, 1, "cache.redis", "needs a cluster: section", 1},
    {"cache:\n  redis_wait_ms: 0\n" NET, 2, "cache.redis_wait_ms", "between 1 and 1000", 1},
    {"cache:\n  redis_ttl_s: 0\n" NET, 2, "cache.redis_ttl_s", "between 1 and 31536000", 1},
    {"cache: { enabeld: false }\n" NET, 1, "cache.enabeld", "did you mean 'enabled'?", 1},

    {"", 0, "", "no configuration (file is empty)", 1},
    {"# nothing but a comment\n", 0, "", "no configuration (file is empty)", 1},
    {"networks: [\n", 2, "", "YAML syntax error", 1},
    {"a: 1\n---\nb: 2\n", 2, "", "more than one YAML document", 1},
    {"- networks\n", 1, "", "expected a mapping", 1},
    {"server: {}\n", 1, "networks", "required key 'networks' is missing", 1},
    {"servr: {}\n" NET, 1, "servr", "unknown key 'servr' (did you mean 'server'?)", 1},
    {"server: {}\nserver: {}\n" NET, 2, "", "duplicate key 'server' (first at line 1)", 1},
    {"server:\n  listen: 8545\n" NET, 2, "server.listen", "expected host:port", 1},
    {"server: { listen: \"::1:80\" }\n" NET, 1, "server.listen", "must be in brackets", 1},
    {"server: { listen: \"0.0.0.0:70000\" }\n" NET, 1, "server.listen", "between 0 and 65535", 1},
    {"server: { listen: [a] }\n" NET, 1, "server.listen", "expected a plain value, got a list", 1},
    {"server: { workers: 0 }\n" NET, 1, "server.workers", "between 1 and 256", 1},
    {"server: { workers: many }\n" NET, 1, "server.workers", "expected a decimal whole number", 1},
    {"server: { max_batch: -5 }\n" NET, 1, "server.max_batch", "must not be negative", 1},
    {"server: { max_batch: 1.5 }\n" NET, 1, "server.max_batch", "without a fraction", 1},
    {"server: { max_body_bytes: 99999999999999999999999 }\n" NET, 1, "server.max_body_bytes", "too large", 1},
    {"server: { max_batch: 0x10 }\n" NET, 1, "server.max_batch", "decimal", 1},
    {"server: { access_log: maybe }\n" NET, 1, "server.access_log", "expected true or false", 1},
    {"server: { access_log_buffer_bytes: 100 }\n" NET, 1, "server.access_log_buffer_bytes", "between 8192 and", 1},
    {"server: { cors_origins: [\"a b\"] }\n" NET, 1, "server.cors_origins[0]", "origin", 1},
    {"server: { max_batch: }\n" NET, 1, "server.max_batch", "a value is required", 1},
    {"server: 5\n" NET, 1, "server", "expected a mapping (key: value), got a plain value", 1},
    {"server: { max_connections: 0 }\n" NET, 1, "server.max_connections", "between 1 and 1000000", 1},
    {"server: { write_timeout_ms: 10 }\n" NET, 1, "server.write_timeout_ms", "between 100 and 3600000", 1},
    {"server: { idle_timeout_ms: 0 }\n" NET, 1, "server.idle_timeout_ms", "between 100 and 3600000", 1},
    {"server: { max_buffered_bytes: 1000 }\n" NET, 1, "server.max_buffered_bytes", "between 1048576 and", 1},
    {"server: { max_buffered_share: 0 }\n" NET, 1, "server.max_buffered_share", "must be above 0 and at most 1", 1},
    {"server:\n  workers: 1\n  max_buffered_share: 1.5\n" NET, 3, "server.max_buffered_share",
     "must be above 0 and at most 1 (a fraction of max_buffered_bytes)", 1},
    {"server: { stalled_reset_ms: 4000000 }\n" NET, 1, "server.stalled_reset_ms", "between 0 and 3600000", 1},
    {"server:\n  max_response_bytes: 8388608\n  max_buffered_bytes: 4194304\n" NET, 3, "server.max_buffered_bytes",
     "4194304 is below server.max_response_bytes (8388608): one answer of the largest size allowed would not fit", 1},
    {"server:\n  max_header_bytes: 4096\n" NET, 2, "server.max_header_bytes",
     "max_header_line_bytes (8192) must not exceed max_header_bytes (4096)", 1},
    {"server: { max_header_line_bytes: 100 }\n" NET, 1, "server.max_header_line_bytes", "between 256 and 262144", 1},
    {"server: { ws_listen: \"nowhere\" }\n" NET, 1, "server.ws_listen", "invalid listen address 'nowhere'", 1},
    {"server: { listen: \"0.0.0.0:9000\", ws_listen: \"0.0.0.0:9000\" }\n" NET, 1, "server.ws_listen",
     "ws_listen is server.listen itself (0.0.0.0:9000)", 1},
    {"server:\n  ws_ping_interval_ms: 60000\n" NET, 2, "server.ws_ping_interval_ms",
     "ws_idle_timeout_ms (60000) must be above ws_ping_interval_ms (60000)", 1},
    {"server:\n  ws_max_connections: 4\n  ws_max_connections_per_identity: 5\n" NET, 3,
     "server.ws_max_connections_per_identity", "5 is above server.ws_max_connections (4)", 1},
    {"server: { ws_max_inflight: 0 }\n" NET, 1, "server.ws_max_inflight", "between 1 and 100000", 1},
    {"server: { ws_logs_retry_s: 0 }\n" NET, 1, "server.ws_logs_retry_s", "between 1 and 3600", 1},
    {"server: { ws_resume_s: 0 }\n" NET, 1, "server.ws_resume_s", "between 1 and 3600", 1},
    {"server: { ws_resume: anonymous }\n" NET, 1, "server.ws_resume", "anonymous", 1},
    {"server: { ws_max_subscriptions_per_connection: 0 }\n" NET, 1, "server.ws_max_subscriptions_per_connection",
     "between 1 and 1000000", 1},
    {"server: { ws_max_subscriptions_per_identity: 0 }\n" NET, 1, "server.ws_max_subscriptions_per_identity",
     "between 1 and 10000000", 1},
    {"server: { ws_max_sources_per_identity: 0 }\n" NET, 1, "server.ws_max_sources_per_identity",
     "between 1 and 1000000", 1},
    {"server: { ws_max_polled_sources_per_identity: 100001 }\n" NET, 1, "server.ws_max_polled_sources_per_identity",
     "between 0 and 100000", 1},
    {"admin: { listen: \"0.0.0.0:8546\" }\n" NET, 1, "admin.listen", "non-loopback address needs admin.token", 1},
    {"admin: { token: \"\" }\n" NET, 1, "admin.token", "admin.token must be at least 16 bytes (it has 0)", 1},
    {"admin:\n  listen: \"127.0.0.1:8546\"\n  token: \"change-me\"\n" NET, 3, "admin.token",
     "admin.token must be at least 16 bytes (it has 9)", 1},
    {"state: { map_size_mb: 8 }\n" NET, 1, "state.map_size_mb", "between 16 and 1048576", 1},
    {"log: { level: loud }\n" NET, 1, "log.level", "unknown level 'loud'", 1},
    {"log: { format: jsn }\n" NET, 1, "log.format", "unknown format 'jsn' (expected one of: text, json; did you mean 'json'?)", 1},
    {"networks: {}\n", 1, "networks", "at least one network is required", 1},
    {"networks:\n  Eth:\n    endpoints: [\"http://h\"]\n", 2, "networks.Eth", "must match [a-z0-9]", 1},
    {"networks:\n  _x:\n    endpoints: [\"http://h\"]\n", 2, "networks._x", "must match", 1},
    {"networks:\n  metrics:\n    endpoints: [\"http://h\"]\n", 2, "networks.metrics", "reserved", 1},
    {"networks:\n  eth:\n    endpoint: [\"http://h\"]\n", 3, "networks.eth.endpoint",
     "unknown key 'endpoint' (did you mean 'endpoints'?)", 2},
    {"networks:\n  eth:\n    chain: ethereum\n", 3, "networks.eth.endpoints", "required key 'endpoints' is missing", 1},
    {"networks:\n  eth:\n    chain: bitcoin\n    endpoints: [\"http://h\"]\n", 3, "networks.eth.chain",
     "unknown chain 'bitcoin' (expected one of: ethereum, solana", 1},
    {"networks:\n  eth:\n    endpoints: []\n", 3, "networks.eth.endpoints", "at least one endpoint", 1},
    {"networks:\n  eth:\n    endpoints:\n", 3, "networks.eth.endpoints", "at least one endpoint", 1},
    {"networks:\n  eth:\n    endpoints: \"http://h\"\n", 3, "networks.eth.endpoints", "expected a list", 1},
    {"networks:\n  eth:\n    timeouts: { first_byte_ms: 20000, attempt_ms: 10000 }\n    endpoints: [\"http://h\"]\n",
     3, "networks.eth.timeouts", "first_byte_ms <= attempt_ms <= request_ms", 1},
    {"networks:\n  eth:\n    timeouts: { connect_ms: 0 }\n    endpoints: [\"http://h\"]\n", 3,
     "networks.eth.timeouts.connect_ms", "between 1 and 600000", 1},
    {"networks:\n  eth:\n    max_attempts: 17\n    endpoints: [\"http://h\"]\n", 3, "networks.eth.max_attempts",
     "between 0 and 16", 1},
    {"networks:\n  eth:\n    blocked_methods: [\"de*bug\"]\n    endpoints: [\"http://h\"]\n", 3,
     "networks.eth.blocked_methods[0]", "ending in '*'", 1},
    {"networks:\n  eth:\n    endpoints:\n      - ftp://h/\n", 4, "networks.eth.endpoints[0]",
     "invalid url: scheme must be http or https", 1},
    {"networks:\n  eth:\n    endpoints:\n      - url: \"http://h\"\n        ws_url: \"https://h/\"\n", 5,
     "networks.eth.endpoints[0].ws_url", "invalid ws_url: scheme must be ws or wss", 1},
    {"networks:\n  eth:\n    endpoints:\n      - url: \"http://h\"\n        ws_url: \"wss://h:99999/\"\n", 5,
     "networks.eth.endpoints[0].ws_url", "invalid ws_url: ", 1},
    {"networks:\n  eth:\n    ws_stall_ms: 50\n    endpoints: [\"http://h\"]\n", 3, "networks.eth.ws_stall_ms",
     "between 100 and 3600000", 1},
    {"networks:\n  eth:\n    endpoints:\n      - http://h/\n      - id: a\n", 5, "networks.eth.endpoints[1].url",
     "required key 'url' is missing", 1},
    {"networks:\n  eth:\n    endpoints:\n      - { id: a, url: \"http://h\" }\n      - url: \"http://i\"\n"
     "        id: a\n",
     6, "networks.eth.endpoints[1].id", "duplicate endpoint id 'a' (first at line 4)", 1},
    {"networks:\n  eth:\n    endpoints:\n      - http://h\n      - { id: e0, url: \"http://i\" }\n", 5,
     "networks.eth.endpoints[1].id", "duplicate endpoint id 'e0'", 1},
    {"networks:\n  eth:\n    endpoints:\n      - { id: \"a b\", url: \"http://h\" }\n", 4,
     "networks.eth.endpoints[0].id", "endpoint id must be 1-64 of", 1},
    {"networks:\n  eth:\n    endpoints:\n      - url: \"http://h\"\n        tier: primry\n", 5,
     "networks.eth.endpoints[0].tier", "did you mean 'primary'?", 1},
    {"networks:\n  eth:\n    endpoints:\n      - url: \"http://h\"\n        cost_profile: bogus\n", 5,
     "networks.eth.endpoints[0].cost_profile", "unknown cost_profile 'bogus'", 1},
    {"networks:\n  eth:\n    endpoints:\n      - url: \"http://h\"\n        credits: { month_reset_day: 31 }\n", 5,
     "networks.eth.endpoints[0].credits.month_reset_day", "between 1 and 28", 1},
    {"networks:\n  eth:\n    endpoints:\n      - url: \"http://h\"\n        credits:\n          per_day: -1\n", 6,
     "networks.eth.endpoints[0].credits.per_day", "must not be negative", 1},
    {"networks:\n  eth:\n    endpoints:\n      - url: \"http://h\"\n        max_inflight: 0\n", 5,
     "networks.eth.endpoints[0].max_inflight", "between 1 and 100000", 1},
    {"networks:\n  eth:\n    endpoints:\n      - url: \"http://h\"\n        tls_ca_file: /nonexistent/ca.pem\n", 5,
     "networks.eth.endpoints[0].tls_ca_file", "cannot read tls_ca_file '/nonexistent/ca.pem'", 1},
    {"networks:\n  eth:\n    endpoints:\n      - url: \"http://h\"\n        headers: { \"Bad Name\": x }\n", 5,
     "networks.eth.endpoints[0].headers.Bad Name", "HTTP token", 1},
    {"networks:\n  eth:\n    endpoints:\n      - url: \"http://h\"\n        headers:\n          X-A: \"a\\nb\"\n", 6,
     "networks.eth.endpoints[0].headers.X-A", "line break", 1},
    {"networks:\n  eth:\n    endpoints:\n      - url: \"http://h\"\n        headers: { X-A: 1, x-a: 2 }\n", 5,
     "networks.eth.endpoints[0].headers.x-a", "given twice", 1},
    {"networks:\n  eth:\n    endpoints:\n      - url: \"http://h\"\n        header: { X-A: 1 }\n", 5,
     "networks.eth.endpoints[0].header", "did you mean 'headers'?", 1},
    {"networks:\n  eth:\n    endpoints:\n      - url: \"${SLUICE_TEST_UNSET_VAR}\"\n", 4,
     "networks.eth.endpoints[0].url", "environment variable SLUICE_TEST_UNSET_VAR is not set", 1},
    {"networks:\n  eth:\n    endpoints:\n      - url: \"${SLUICE_TEST_UNSET_VAR\"\n", 4,
     "networks.eth.endpoints[0].url", "unterminated '${'", 1},
    {NET "tiers: { pro: { per_second: x } }\n", 4, "tiers.pro.per_second", "expected a decimal whole number", 1},
    {NET "tiers: { pro: { per_hour: 1 } }\n", 4, "tiers.pro.per_hour", "unknown key 'per_hour'", 1},
    {NET "tiers: { pro: {} }\nkeys: [ { sha256: " HASH ", tier: gold, name: a } ]\n", 5, "keys[0].tier",
     "unknown tier 'gold'", 1},
    {NET "tiers: { pro: {} }\nkeys: [ { sha256: " HASH ", tier: pr, name: a } ]\n", 5, "keys[0].tier",
     "did you mean 'pro'?", 1},
    {NET "keys: [ { sha256: abc, tier: pro, name: a } ]\n", 4, "keys[0].sha256", "64 hex characters", 2},
    {NET "tiers: { pro: {} }\nkeys:\n  - sha256: " HASH "\n    tier: pro\n", 6, "keys[0].name",
     "required key 'name' is missing", 1},
    {NET "tiers: { pro: {} }\nkeys:\n  - { sha256: " HASH ", tier: pro, name: a }\n"
         "  - { sha256: " HASH ", tier: pro, name: b }\n",
     7, "keys[1]", "listed twice (first at line 6)", 1},
    /* a key's scope (config/cfg_access.c, issue 33) */
#define KEY0 NET "tiers: { pro: {} }\nkeys:\n  - sha256: " HASH "\n    tier: pro\n    name: a\n"
    {KEY0 "    networks: [eth, bsae]\n", 9, "keys[0].networks[1]", "unknown network 'bsae'", 1},
    {KEY0 "    networks: []\n", 9, "keys[0].networks", "an empty list allows nothing", 1},
    {KEY0 "    methods: { allow: [\"eth_*_x\"] }\n", 9, "keys[0].methods.allow[0]", "'*' only at its end", 1},
    {KEY0 "    methods: { alow: [eth_call] }\n", 9, "keys[0].methods.alow", "did you mean 'allow'?", 1},
    {KEY0 "    contracts: [\"0x1234\"]\n", 9, "keys[0].contracts[0]", "0x and 40 hex digits", 1},
    {KEY0 "    origins: [\"*\"]\n", 9, "keys[0].origins[0]", "like https://app.example", 1},
    {KEY0 "    origins: [\"https://app.example/path\"]\n", 9, "keys[0].origins[0]", "no path", 1},
    {"access: { anonymous: maybe }\n" NET, 1, "access.anonymous", "unknown anonymous 'maybe' (expected one of: allow, deny)", 1},
    /* hedge: the delay's clamp and the budget's ratio */
    {"networks:\n  eth:\n    endpoints: [\"http://h\"]\n    hedge: { min_ms: 500, max_ms: 100 }\n", 4,
     "networks.eth.hedge", "hedge.max_ms (100) must be at least hedge.min_ms (500)", 1},
    {"networks:\n  eth:\n    endpoints: [\"http://h\"]\n    hedge: { max_ratio: 2 }\n", 4, "networks.eth.hedge",
     "hedge.max_ratio (2) must be in [0, 1]", 1},
    {"networks:\n  eth:\n    endpoints: [\"http://h\"]\n    hedge: { enable: false }\n", 4,
     "networks.eth.hedge.enable", "unknown key 'enable' (did you mean 'enabled'?)", 1},
    /* the chain view's keys (config/cfg_chain.c) */
    {CH_ETH "    chain_id: mainnet\n" CH_EP1, 3, "networks.eth.chain_id",
     "chain_id must be a number (8453) or a hex string (\"0x2105\"), got 'mainnet'", 1},
    {CH_ETH "    chain_id: -1\n" CH_EP1, 3, "networks.eth.chain_id", "got '-1'", 1},
    {CH_ETH "    chain_id: \"0x\"\n" CH_EP1, 3, "networks.eth.chain_id", "got '0x'", 1},
    {CH_ETH "    chain_id: 18446744073709551616\n" CH_EP1, 3, "networks.eth.chain_id", "a number (8453)", 1},
    {CH_ETH "    chain_id: [1]\n" CH_EP1, 3, "networks.eth.chain_id", "expected a plain value, got a list", 1},
    {CH_SOL "    genesis_hash: abc\n" CH_EP1, 4, "networks.sol.genesis_hash", "base58 text of a 32-byte hash", 1},
    {CH_ETH "    genesis_hash: " CH_GENESIS "\n" CH_EP1, 3, "networks.eth.genesis_hash",
     "genesis_hash is for solana networks (this one is ethereum): an ethereum network names chain_id", 1},
    {CH_SOL "    chain_id: 1\n" CH_EP1, 4, "networks.sol.chain_id",
     "chain_id is for ethereum networks (this one is solana): a solana network names genesis_hash", 1},
    {CH_ETH "    max_lag_slots: 5\n" CH_EP1, 3, "networks.eth.max_lag_slots",
     "max_lag_slots is for solana networks (this one is ethereum): use max_lag_blocks", 1},
    {CH_SOL "    max_lag_blocks: 5\n" CH_EP1, 4, "networks.sol.max_lag_blocks",
     "max_lag_blocks is for ethereum networks (this one is solana): use max_lag_slots", 1},
    {CH_SOL "    max_logs_split: 5\n" CH_EP1, 4, "networks.sol.max_logs_split", "Solana has no eth_getLogs", 1},
    {CH_SOL "    endpoints:\n      - \"http://h:9\"\n      - { url: \"http://h:1\", max_logs_blocks: 100 }\n", 6,
     "networks.sol.endpoints[1].max_logs_blocks", "max_logs_blocks is for ethereum networks", 1},
    {CH_ETH "    max_logs_split: 0\n" CH_EP1, 3, "networks.eth.max_logs_split", "between 1 and 1000", 1},
    {CH_ETH "    max_lag_blocks: -2\n" CH_EP1, 3, "networks.eth.max_lag_blocks", "must not be negative", 1},
    {CH_ETH "    endpoints: [ { url: \"http://h:1\", max_logs_blocks: 100000001 } ]\n", 3,
     "networks.eth.endpoints[0].max_logs_blocks", "between 0 and 100000000", 1},
    {CH_ETH "    endpoints: [ { url: \"http://h:1\", max_log_blocks: 10 } ]\n", 3,
     "networks.eth.endpoints[0].max_log_blocks", "did you mean 'max_logs_blocks'?", 1},
    {CH_ETH "    max_lag_block: 3\n" CH_EP1, 3, "networks.eth.max_lag_block", "did you mean 'max_lag_blocks'?", 1},
    /* the chain view's keys (config/cfg_chain.c): consensus */
    {CH_ETH "    consensus: { methods: [eth_fooBar] }\n" CH_EP3, 3, "networks.eth.consensus.methods[0]",
     "'eth_fooBar' is no method sluice knows on ethereum (declare it under methods: to compare it)", 1},
    {CH_ETH "    consensus: { methods: [eth_sendRawTransaction] }\n" CH_EP3, 3, "networks.eth.consensus.methods[0]",
     "'eth_sendRawTransaction' is a write: only reads are compared", 1},
    {CH_ETH "    consensus: { methods: [eth_call, eth_getFilterChanges] }\n" CH_EP3, 3,
     "networks.eth.consensus.methods[1]", "'eth_getFilterChanges' is not retry-safe (it answers per node)", 1},
    {CH_ETH "    consensus: { methods: [eth_subscribe] }\n" CH_EP3, 3, "networks.eth.consensus.methods[0]",
     "'eth_subscribe' is a subscribe", 1},
    {CH_ETH "    consensus:\n      methods: [eth_call, eth_getBalance, eth_call]\n" CH_EP3, 4,
     "networks.eth.consensus.methods[2]", "'eth_call' is listed twice", 1},
    {CH_ETH "    consensus:\n      methods: [\"eth call\"]\n" CH_EP3, 4, "networks.eth.consensus.methods[0]",
     "a method name is letters, digits", 1},
    {CH_ETH "    consensus:\n      methods: []\n" CH_EP3, 4, "networks.eth.consensus.methods",
     "no methods: name the methods to compare, or leave consensus out", 1},
    {CH_ETH "    consensus: { quorum: 2 }\n" CH_EP3, 3, "networks.eth.consensus.methods",
     "required key 'methods' is missing", 1},
    {CH_ETH "    consensus: { methods: [eth_call], quorm: 2 }\n" CH_EP3, 3, "networks.eth.consensus.quorm",
     "did you mean 'quorum'?", 1},
    {CH_ETH "    consensus:\n      methods: [eth_call]\n      of: 4\n" CH_EP3, 5, "networks.eth.consensus",
     "consensus.of (4) must be at most the network's endpoints (3)", 1},
    {CH_ETH "    consensus:\n      methods: [eth_call]\n      quorum: 3\n      of: 2\n" CH_EP3, 5, "networks.eth.consensus",
     "consensus.quorum (3) must be at most consensus.of (2)", 1},
    {CH_ETH "    consensus:\n      methods: [eth_call]\n      of: 1\n" CH_EP3, 5, "networks.eth.consensus.of",
     "between 2 and 64", 1},
    {CH_ETH "    consensus: { methods: [eth_call] }\n" CH_EP1, 3, "networks.eth.consensus",
     "consensus needs at least 2 endpoints (this network has 1)", 1},
    {CH_SOL "    consensus: { methods: [sendTransaction] }\n" CH_EP3, 4, "networks.sol.consensus.methods[0]",
     "'sendTransaction' is a write", 1},
};

static int has_error(const cfg_errors_t *errs, const bad_case_t *c)
{
    for (size_t i = 0; i < errs->count; i++)
        if (errs->items[i].line == c->line && strcmp(errs->items[i].path, c->path) == 0 &&
            strstr(errs->items[i].message, c->msg) != NULL)
            return 1;
    return 0;
}

Test(config_errors, table)
{
    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        const bad_case_t *c = &bad_cases[i];
        cfg_errors_t errs;
        config_load_bad(c->yaml, &errs);
        if (!has_error(&errs, c) || errs.count != c->count) {
            for (size_t j = 0; j < errs.count; j++)
                cr_log_error("case %zu got %d: %s: %s", i, errs.items[j].line, errs.items[j].path,
                             errs.items[j].message);
            cr_assert_fail("case %zu: want %zu error(s) incl. %d: %s: %s", i, c->count, c->line, c->path, c->msg);
        }
        cfg_errors_dispose(&errs);
    }
}

Test(config_errors, too_many_endpoints)
{
    sl_buf_t b = SL_BUF_INIT;
    sl_buf_append_str(&b, "networks:\n  eth:\n    endpoints:\n");
    for (int i = 0; i < 65; i++)
        sl_buf_printf(&b, "      - http://h%d\n", i);
    cfg_errors_t errs;
    config_load_bad(b.base, &errs);
    cr_assert_eq(errs.count, 1);
    cr_assert_eq(errs.items[0].line, 4);
    cr_assert(strstr(errs.items[0].message, "at most 64 endpoints") != NULL);
    cfg_errors_dispose(&errs);
    sl_buf_dispose(&b);
}

Test(config_errors, every_error_is_reported)
{
    cfg_errors_t errs;
    config_load_bad("server:\n"
             "  max_batch: 0\n"            /* 2 */
             "  workers: lots\n"           /* 3 */
             "networks:\n"
             "  eth:\n"
             "    endpoints:\n"
             "      - url: ftp://x\n"      /* 7 */
             "        tier: middle\n",     /* 8 */
             &errs);
    cr_assert_eq(errs.count, 4);
    int want[] = {2, 3, 7, 8};
    const char *paths[] = {"server.max_batch", "server.workers", "networks.eth.endpoints[0].url",
                           "networks.eth.endpoints[0].tier"};
    for (size_t i = 0; i < 4; i++) {
        cr_assert_eq(errs.items[i].line, want[i], "error %zu", i);
        cr_assert_str_eq(errs.items[i].path, paths[i]);
    }
    cfg_errors_dispose(&errs);
}

Test(config_errors, count_is_capped)
{
    sl_buf_t b = SL_BUF_INIT;
    sl_buf_append_str(&b, NET "tiers:\n");
    for (int i = 0; i < CFG_MAX_ERRORS + 20; i++)
        sl_buf_printf(&b, "  t%d: { per_second: -1 }\n", i);
    cfg_errors_t errs;
    config_load_bad(b.base, &errs);
    cr_assert_eq(errs.count, CFG_MAX_ERRORS + 1);
    cr_assert(strstr(errs.items[CFG_MAX_ERRORS].message, "too many errors") != NULL);
    cfg_errors_dispose(&errs);
    sl_buf_dispose(&b);
}

