/* gw_config: the chain view's keys (gateway/gw_config_chain.c): what loads,
 * with which defaults, and every refusal with its line and path. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/gw_config.h"
#include "gateway/gw_config_diff.h"

#define GENESIS "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d"

static gw_config_t *load_ok(const char *yaml)
{
    gw_config_t *cfg = NULL;
    gw_config_errors_t errs;
    sl_err_t err = gw_config_load_string(yaml, strlen(yaml), "test.yaml", &cfg, &errs);
    for (size_t i = 0; i < errs.count; i++)
        cr_log_error("%d: %s: %s", errs.items[i].line, errs.items[i].path, errs.items[i].message);
    cr_assert_eq(err, SL_OK, "%s", sl_err_name(err));
    gw_config_errors_dispose(&errs);
    return cfg;
}

static const pool_network_conf_t *net_of(const gw_config_t *cfg, const char *name)
{
    const pool_network_conf_t *net = gw_config_network(cfg, name, strlen(name));
    cr_assert_not_null(net, "no network %s", name);
    return net;
}

#define ETH3                                                                                                          \
    "networks:\n"                                                                                                     \
    "  eth:\n"                                                                                                        \
    "    endpoints:\n"                                                                                                \
    "      - { id: a, url: \"http://127.0.0.1:1\", cost_profile: alchemy }\n"                                         \
    "      - { id: b, url: \"http://127.0.0.1:2\", cost_profile: infura }\n"                                          \
    "      - { id: c, url: \"http://127.0.0.1:3\", cost_profile: quicknode, max_logs_blocks: 2000 }\n"                 \
    "      - \"http://127.0.0.1:4\"\n"

Test(config_chain, defaults)
{
    gw_config_t *cfg = load_ok(ETH3 "  sol:\n    chain: solana\n    endpoints: [\"http://127.0.0.1:5\"]\n");
    const pool_network_conf_t *eth = net_of(cfg, "eth"), *sol = net_of(cfg, "sol");
    cr_expect_eq(eth->has_chain_id, 0);
    cr_expect_null(eth->genesis_hash);
    cr_expect_eq(eth->max_lag_blocks, 2);
    cr_expect_eq(eth->max_lag_slots, 10);
    cr_expect_eq(eth->max_logs_split, 20);
    cr_expect_eq(eth->consensus.nmethods, 0);
    cr_expect_null(eth->consensus.methods);
    /* max_logs_blocks: the cost profile's (policy/logsplit.c), unless given */
    cr_expect_eq(eth->endpoints[0].max_logs_blocks, 500);
    cr_expect_eq(eth->endpoints[1].max_logs_blocks, 10000);
    cr_expect_eq(eth->endpoints[2].max_logs_blocks, 2000);
    cr_expect_eq(eth->endpoints[3].max_logs_blocks, 0); /* flat: no limit */
    cr_expect_eq(sol->max_lag_slots, 10);
    cr_expect_eq(sol->endpoints[0].max_logs_blocks, 0);
    gw_config_destroy(cfg);
}

Test(config_chain, every_key)
{
    gw_config_t *cfg = load_ok("networks:\n"
                               "  eth:\n"
                               "    chain_id: 1\n"
                               "    max_lag_blocks: 0\n"
                               "    max_logs_split: 50\n"
                               "    consensus: { methods: [eth_getTransactionCount, eth_call], quorum: 2, of: 3 }\n"
                               "    endpoints:\n"
                               "      - { url: \"http://127.0.0.1:1\", max_logs_blocks: 0 }\n"
                               "      - \"http://127.0.0.1:2\"\n"
                               "      - \"http://127.0.0.1:3\"\n"
                               "  base:\n"
                               "    chain_id: \"0x2105\"\n"
                               "    endpoints: [\"http://127.0.0.1:4\"]\n"
                               "  op:\n"
                               "    chain_id: 0xa\n"
                               "    endpoints: [\"http://127.0.0.1:5\"]\n"
                               "  sol:\n"
                               "    chain: solana\n"
                               "    genesis_hash: " GENESIS "\n"
                               "    max_lag_slots: 25\n"
                               "    endpoints: [\"http://127.0.0.1:6\"]\n");
    const pool_network_conf_t *eth = net_of(cfg, "eth");
    cr_expect(eth->has_chain_id);
    cr_expect_eq(eth->chain_id, 1);
    cr_expect_eq(eth->max_lag_blocks, 0);
    cr_expect_eq(eth->max_logs_split, 50);
    cr_expect_eq(eth->consensus.nmethods, 2);
    cr_expect_str_eq(eth->consensus.methods[1], "eth_call");
    cr_expect_eq(eth->consensus.quorum, 2);
    cr_expect_eq(eth->consensus.of, 3);
    cr_expect_eq(eth->endpoints[0].max_logs_blocks, 0);
    cr_expect_eq(net_of(cfg, "base")->chain_id, 8453);
    cr_expect_eq(net_of(cfg, "op")->chain_id, 10);
    const pool_network_conf_t *sol = net_of(cfg, "sol");
    cr_expect_str_eq(sol->genesis_hash, GENESIS);
    cr_expect_eq(sol->max_lag_slots, 25);
    gw_config_destroy(cfg);
}

Test(config_chain, consensus_defaults_and_declared_methods)
{
    /* of: up to 3 endpoints; quorum: a majority of of */
    gw_config_t *cfg = load_ok("networks:\n"
                               "  eth:\n"
                               "    methods: { custom_balance: { class: read } }\n"
                               "    consensus: { methods: [custom_balance, eth_getTransactionReceipt] }\n"
                               "    endpoints: [\"http://127.0.0.1:1\", \"http://127.0.0.1:2\"]\n"
                               "  big:\n"
                               "    consensus: { methods: [eth_getBalance] }\n"
                               "    endpoints: [\"http://h:1\", \"http://h:2\", \"http://h:3\", \"http://h:4\"]\n");
    const pool_network_conf_t *eth = net_of(cfg, "eth"), *big = net_of(cfg, "big");
    cr_expect_eq(eth->consensus.of, 2);
    cr_expect_eq(eth->consensus.quorum, 2);
    cr_expect_eq(big->consensus.of, 3);
    cr_expect_eq(big->consensus.quorum, 2);
    gw_config_destroy(cfg);
}

typedef struct bad_case {
    const char *yaml;
    int line;
    const char *path;
    const char *msg;              /* substring */
    size_t count;                 /* errors in all */
} bad_case_t;

#define EP1 "    endpoints: [\"http://h:1\"]\n"
#define EP3 "    endpoints: [\"http://h:1\", \"http://h:2\", \"http://h:3\"]\n"
#define ETH "networks:\n  eth:\n"
#define SOL "networks:\n  sol:\n    chain: solana\n"

static const bad_case_t bad_cases[] = {
    {ETH "    chain_id: mainnet\n" EP1, 3, "networks.eth.chain_id",
     "chain_id must be a number (8453) or a hex string (\"0x2105\"), got 'mainnet'", 1},
    {ETH "    chain_id: -1\n" EP1, 3, "networks.eth.chain_id", "got '-1'", 1},
    {ETH "    chain_id: \"0x\"\n" EP1, 3, "networks.eth.chain_id", "got '0x'", 1},
    {ETH "    chain_id: 18446744073709551616\n" EP1, 3, "networks.eth.chain_id", "a number (8453)", 1},
    {ETH "    chain_id: [1]\n" EP1, 3, "networks.eth.chain_id", "expected a plain value, got a list", 1},
    {SOL "    genesis_hash: abc\n" EP1, 4, "networks.sol.genesis_hash", "base58 text of a 32-byte hash", 1},
    {ETH "    genesis_hash: " GENESIS "\n" EP1, 3, "networks.eth.genesis_hash",
     "genesis_hash is for solana networks (this one is ethereum): an ethereum network names chain_id", 1},
    {SOL "    chain_id: 1\n" EP1, 4, "networks.sol.chain_id",
     "chain_id is for ethereum networks (this one is solana): a solana network names genesis_hash", 1},
    {ETH "    max_lag_slots: 5\n" EP1, 3, "networks.eth.max_lag_slots",
     "max_lag_slots is for solana networks (this one is ethereum): use max_lag_blocks", 1},
    {SOL "    max_lag_blocks: 5\n" EP1, 4, "networks.sol.max_lag_blocks",
     "max_lag_blocks is for ethereum networks (this one is solana): use max_lag_slots", 1},
    {SOL "    max_logs_split: 5\n" EP1, 4, "networks.sol.max_logs_split", "Solana has no eth_getLogs", 1},
    {SOL "    endpoints:\n      - \"http://h:9\"\n      - { url: \"http://h:1\", max_logs_blocks: 100 }\n", 6,
     "networks.sol.endpoints[1].max_logs_blocks", "max_logs_blocks is for ethereum networks", 1},
    {ETH "    max_logs_split: 0\n" EP1, 3, "networks.eth.max_logs_split", "between 1 and 1000", 1},
    {ETH "    max_lag_blocks: -2\n" EP1, 3, "networks.eth.max_lag_blocks", "must not be negative", 1},
    {ETH "    endpoints: [ { url: \"http://h:1\", max_logs_blocks: 100000001 } ]\n", 3,
     "networks.eth.endpoints[0].max_logs_blocks", "between 0 and 100000000", 1},
    {ETH "    endpoints: [ { url: \"http://h:1\", max_log_blocks: 10 } ]\n", 3,
     "networks.eth.endpoints[0].max_log_blocks", "did you mean 'max_logs_blocks'?", 1},
    {ETH "    max_lag_block: 3\n" EP1, 3, "networks.eth.max_lag_block", "did you mean 'max_lag_blocks'?", 1},
    /* consensus */
    {ETH "    consensus: { methods: [eth_fooBar] }\n" EP3, 3, "networks.eth.consensus.methods[0]",
     "'eth_fooBar' is no method sluice knows on ethereum (declare it under methods: to compare it)", 1},
    {ETH "    consensus: { methods: [eth_sendRawTransaction] }\n" EP3, 3, "networks.eth.consensus.methods[0]",
     "'eth_sendRawTransaction' is a write: only reads are compared", 1},
    {ETH "    consensus: { methods: [eth_call, eth_getFilterChanges] }\n" EP3, 3,
     "networks.eth.consensus.methods[1]", "'eth_getFilterChanges' is not retry-safe (it answers per node)", 1},
    {ETH "    consensus: { methods: [eth_subscribe] }\n" EP3, 3, "networks.eth.consensus.methods[0]",
     "'eth_subscribe' is a subscribe", 1},
    {ETH "    consensus:\n      methods: [eth_call, eth_getBalance, eth_call]\n" EP3, 4,
     "networks.eth.consensus.methods[2]", "'eth_call' is listed twice", 1},
    {ETH "    consensus:\n      methods: [\"eth call\"]\n" EP3, 4, "networks.eth.consensus.methods[0]",
     "a method name is letters, digits", 1},
    {ETH "    consensus:\n      methods: []\n" EP3, 4, "networks.eth.consensus.methods",
     "no methods: name the methods to compare, or leave consensus out", 1},
    {ETH "    consensus: { quorum: 2 }\n" EP3, 3, "networks.eth.consensus.methods",
     "required key 'methods' is missing", 1},
    {ETH "    consensus: { methods: [eth_call], quorm: 2 }\n" EP3, 3, "networks.eth.consensus.quorm",
     "did you mean 'quorum'?", 1},
    {ETH "    consensus:\n      methods: [eth_call]\n      of: 4\n" EP3, 5, "networks.eth.consensus",
     "consensus.of (4) must be at most the network's endpoints (3)", 1},
    {ETH "    consensus:\n      methods: [eth_call]\n      quorum: 3\n      of: 2\n" EP3, 5, "networks.eth.consensus",
     "consensus.quorum (3) must be at most consensus.of (2)", 1},
    {ETH "    consensus:\n      methods: [eth_call]\n      of: 1\n" EP3, 5, "networks.eth.consensus.of",
     "between 2 and 64", 1},
    {ETH "    consensus: { methods: [eth_call] }\n" EP1, 3, "networks.eth.consensus",
     "consensus needs at least 2 endpoints (this network has 1)", 1},
    {SOL "    consensus: { methods: [sendTransaction] }\n" EP3, 4, "networks.sol.consensus.methods[0]",
     "'sendTransaction' is a write", 1},
};

static int has_error(const gw_config_errors_t *errs, const bad_case_t *c)
{
    for (size_t i = 0; i < errs->count; i++)
        if (errs->items[i].line == c->line && strcmp(errs->items[i].path, c->path) == 0 &&
            strstr(errs->items[i].message, c->msg) != NULL)
            return 1;
    return 0;
}

Test(config_chain, refusals)
{
    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        const bad_case_t *c = &bad_cases[i];
        gw_config_t *cfg = (gw_config_t *)1;
        gw_config_errors_t errs;
        sl_err_t err = gw_config_load_string(c->yaml, strlen(c->yaml), "test.yaml", &cfg, &errs);
        cr_expect_eq(err, SL_ERR_CONFIG, "case %zu loaded", i);
        cr_expect_null(cfg);
        if (!has_error(&errs, c) || errs.count != c->count) {
            for (size_t j = 0; j < errs.count; j++)
                cr_log_error("case %zu got %d: %s: %s", i, errs.items[j].line, errs.items[j].path,
                             errs.items[j].message);
            cr_expect_fail("case %zu: want %zu error(s) incl. %d: %s: %s", i, c->count, c->line, c->path, c->msg);
        }
        gw_config_errors_dispose(&errs);
    }
}

static void diff_of(const char *a, const char *b, char *out, size_t len)
{
    gw_config_t *x = load_ok(a), *y = load_ok(b);
    gw_config_diff_t d;
    gw_config_diff(x, y, &d);
    gw_config_diff_summary(&d, out, len);
    gw_config_diff_dispose(&d);
    gw_config_destroy(x);
    gw_config_destroy(y);
}

Test(config_chain, reload_diff_names_each_key)
{
    const char *base = ETH EP3;
    char s[512];
    diff_of(base, base, s, sizeof s);
    cr_expect_str_eq(s, "no changes");
    diff_of(base, ETH "    chain_id: 1\n    max_lag_blocks: 4\n    max_logs_split: 9\n" EP3, s, sizeof s);
    cr_expect_str_eq(s, "~network eth (chain_id, max_lag_blocks, max_logs_split)");
    diff_of(ETH "    chain_id: 1\n" EP3, ETH "    chain_id: 5\n" EP3, s, sizeof s);
    cr_expect_str_eq(s, "~network eth (chain_id)");
    diff_of(base, ETH "    consensus: { methods: [eth_call] }\n" EP3, s, sizeof s);
    cr_expect_str_eq(s, "~network eth (consensus)");
    diff_of(ETH "    consensus: { methods: [eth_call], quorum: 2 }\n" EP3,
            ETH "    consensus: { methods: [eth_call], quorum: 3 }\n" EP3, s, sizeof s);
    cr_expect_str_eq(s, "~network eth (consensus)");
    diff_of(base, ETH "    endpoints: [\"http://h:1\", { url: \"http://h:2\", max_logs_blocks: 7 }, \"http://h:3\"]\n", s,
            sizeof s);
    cr_expect_str_eq(s, "~endpoint eth/e1 (max_logs_blocks)");
    diff_of(SOL EP1, SOL "    genesis_hash: " GENESIS "\n    max_lag_slots: 3\n" EP1, s, sizeof s);
    cr_expect_str_eq(s, "~network sol (genesis_hash, max_lag_slots)");
}
