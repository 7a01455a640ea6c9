/* cfg: the chain view's keys (config/cfg_chain.c): what loads,
 * with which defaults, and what a reload says of them. Their refusals, each
 * with its line and path, are rows of test_config_errors.c's table. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/cfg.h"
#include "config/cfg_diff.h"
#include "tests/lib/config_file.h"

#define GENESIS "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d"


static const pool_network_conf_t *net_of(const cfg_t *cfg, const char *name)
{
    const pool_network_conf_t *net = cfg_network(cfg, name, strlen(name));
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
    cfg_t *cfg = config_load_ok(ETH3 "  sol:\n    chain: solana\n    endpoints: [\"http://127.0.0.1:5\"]\n");
    const pool_network_conf_t *eth = net_of(cfg, "eth"), *sol = net_of(cfg, "sol");
    cr_expect_eq(eth->has_chain_id, 0);
    cr_expect_null(eth->genesis_hash);
    cr_expect_eq(eth->max_lag_blocks, 2);
    cr_expect_eq(eth->max_lag_slots, 10);
    cr_expect_eq(eth->max_logs_split, 20);
    cr_expect_eq(eth->consensus.nmethods, 0);
    cr_expect_null(eth->consensus.methods);
    /* max_logs_blocks: the cost profile's (policy/logsplit.c), unless given */
    cr_expect_eq(eth->endpoints[0].max_logs_blocks, 10);
    cr_expect_eq(eth->endpoints[1].max_logs_blocks, 10000);
    cr_expect_eq(eth->endpoints[2].max_logs_blocks, 2000);
    cr_expect_eq(eth->endpoints[3].max_logs_blocks, 0); /* flat: no limit */
    cr_expect_eq(sol->max_lag_slots, 10);
    cr_expect_eq(sol->endpoints[0].max_logs_blocks, 0);
    cr_expect_eq(eth->chain_probe_ms, 30000);
    cr_expect_eq(sol->chain_probe_ms, 30000);
    /* max_head_lead in the chain's unit */
    cr_expect_eq(eth->max_head_lead, 128);
    cr_expect_eq(sol->max_head_lead, 500);
    cfg_destroy(cfg);
}

Test(config_chain, every_key)
{
    cfg_t *cfg = config_load_ok("networks:\n"
                               "  eth:\n"
                               "    chain_id: 1\n"
                               "    max_lag_blocks: 0\n"
                               "    max_logs_split: 50\n"
                               "    max_head_lead: 0\n"
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
                               "    chain_probe_ms: 0\n"
                               "    max_head_lead: 2000\n"
                               "    endpoints: [\"http://127.0.0.1:6\"]\n");
    const pool_network_conf_t *eth = net_of(cfg, "eth");
    cr_expect(eth->has_chain_id);
    cr_expect_eq(eth->chain_id, 1);
    cr_expect_eq(eth->max_lag_blocks, 0);
    cr_expect_eq(eth->max_logs_split, 50);
    cr_expect_eq(net_of(cfg, "sol")->chain_probe_ms, 0, "0: the chain probe is off");
    cr_expect_eq(eth->max_head_lead, 0);
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
    cr_expect_eq(sol->max_head_lead, 2000);
    cfg_destroy(cfg);
}

Test(config_chain, consensus_defaults_and_declared_methods)
{
    /* of: up to 3 endpoints; quorum: a majority of of */
    cfg_t *cfg = config_load_ok("networks:\n"
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
    cfg_destroy(cfg);
}

Test(config_chain, the_weight_of_a_disagreement)
{
    cfg_t *cfg = config_load_ok("networks:\n"
                               "  eth:\n"
                               "    consensus: { methods: [eth_getBalance] }\n"
                               "    endpoints: [\"http://h:1\", \"http://h:2\"]\n"
                               "  weighed:\n"
                               "    ranking: { w_disagree: 5.5 }\n"
                               "    endpoints: [\"http://h:1\"]\n");
    cr_expect_eq(net_of(cfg, "eth")->ranking.w_disagree, 2, "the default (policy/score.h)");
    cr_expect_eq(net_of(cfg, "weighed")->ranking.w_disagree, 5.5);
    cfg_destroy(cfg);
}

#define EP1 "    endpoints: [\"http://h:1\"]\n"
#define EP3 "    endpoints: [\"http://h:1\", \"http://h:2\", \"http://h:3\"]\n"
#define ETH "networks:\n  eth:\n"
#define SOL "networks:\n  sol:\n    chain: solana\n"

static void diff_of(const char *a, const char *b, char *out, size_t len)
{
    cfg_t *x = config_load_ok(a), *y = config_load_ok(b);
    cfg_diff_t d;
    cfg_diff(x, y, &d);
    cfg_diff_summary(&d, out, len);
    cfg_diff_dispose(&d);
    cfg_destroy(x);
    cfg_destroy(y);
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
