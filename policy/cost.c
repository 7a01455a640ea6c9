#include "policy/cost.h"

#include <stdlib.h>
#include <string.h>

/* One row: billed and throughput are the same unless the provider says otherwise. */
#define ROW(m, b) {(m), {(b), (b)}}
#define ROW2(m, b, t) {(m), {(b), (t)}}
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Every table below is sorted by strcmp (a test checks it) and comes from
 * reference/providers.md §C. A method that is not in a table costs the
 * profile's default, so rows equal to the default are kept only where the
 * doc lists them, to show the value was looked up rather than assumed. */

/* Alchemy, current docs column. Throughput CU differs from billed CU only
 * where the doc says so: sends count 250, debug_trace* count 1000. */
static const policy_cost_row_t alchemy_eth[] = {
    ROW2("debug_traceBlockByHash", 40, 1000),
    ROW2("debug_traceBlockByNumber", 40, 1000),
    ROW2("debug_traceCall", 40, 1000),
    ROW2("debug_traceTransaction", 40, 1000),
    ROW("eth_blockNumber", 10),
    ROW("eth_call", 26),
    ROW("eth_chainId", 0), /* free in the current docs (10 in the legacy ones) */
    ROW("eth_createAccessList", 10),
    ROW("eth_estimateGas", 20),
    ROW("eth_feeHistory", 10),
    ROW("eth_gasPrice", 20),
    ROW("eth_getBalance", 20),
    ROW("eth_getBlockByHash", 20),
    ROW("eth_getBlockByNumber", 20),
    ROW("eth_getBlockReceipts", 20),
    ROW("eth_getCode", 20),
    ROW("eth_getLogs", 60),
    ROW("eth_getProof", 20),
    ROW("eth_getStorageAt", 20),
    ROW("eth_getTransactionByHash", 20),
    ROW("eth_getTransactionCount", 20),
    ROW("eth_getTransactionReceipt", 20),
    ROW("eth_maxPriorityFeePerGas", 10),
    ROW2("eth_sendRawTransaction", 40, 250),
    ROW("eth_simulateV1", 40),
    ROW("eth_subscribe", 10),
    ROW("eth_unsubscribe", 10),
    ROW("trace_block", 20),
};

/* Infura credits (metamask-docs credit-cost.md, the version that matches the
 * live page: 80 for a send, not 720). Solana is 180 for every method, so it
 * has no table, only a default. */
static const policy_cost_row_t infura_eth[] = {
    ROW("debug_traceCall", 1000),
    ROW("debug_traceTransaction", 1000),
    ROW("eth_blockNumber", 80),
    ROW("eth_call", 80),
    ROW("eth_chainId", 5),
    ROW("eth_createAccessList", 80),
    ROW("eth_estimateGas", 300),
    ROW("eth_feeHistory", 80),
    ROW("eth_gasPrice", 80),
    ROW("eth_getBalance", 80),
    ROW("eth_getBlockByHash", 80),
    ROW("eth_getBlockByNumber", 80),
    ROW("eth_getBlockReceipts", 1000),
    ROW("eth_getCode", 80),
    ROW("eth_getLogs", 255),
    ROW("eth_getProof", 150),
    ROW("eth_getStorageAt", 80),
    ROW("eth_getTransactionByHash", 80),
    ROW("eth_getTransactionCount", 80),
    ROW("eth_getTransactionReceipt", 80),
    ROW("eth_maxPriorityFeePerGas", 80),
    ROW("eth_sendRawTransaction", 80),
    ROW("eth_subscribe", 5),
    ROW("eth_unsubscribe", 10),
    ROW("trace_block", 300),
};

/* QuickNode prices by family, not by method: Ethereum 20, debug/trace/txpool
 * 2x, txpool_content and trace_replay* 4x. A table cannot hold a prefix, so
 * the families are spelled out with the methods geth, Erigon and Nethermind
 * serve; a family member missing here is charged the 20 default. */
static const policy_cost_row_t quicknode_eth[] = {
    ROW("debug_getBadBlocks", 40),
    ROW("debug_getRawBlock", 40),
    ROW("debug_getRawHeader", 40),
    ROW("debug_getRawReceipts", 40),
    ROW("debug_getRawTransaction", 40),
    ROW("debug_storageRangeAt", 40),
    ROW("debug_traceBlock", 40),
    ROW("debug_traceBlockByHash", 40),
    ROW("debug_traceBlockByNumber", 40),
    ROW("debug_traceCall", 40),
    ROW("debug_traceTransaction", 40),
    ROW("trace_block", 40),
    ROW("trace_call", 40),
    ROW("trace_callMany", 40),
    ROW("trace_filter", 40),
    ROW("trace_get", 40),
    ROW("trace_rawTransaction", 40),
    ROW("trace_replayBlockTransactions", 80),
    ROW("trace_replayTransaction", 80),
    ROW("trace_transaction", 40),
    ROW("txpool_content", 80),
    ROW("txpool_contentFrom", 40),
    ROW("txpool_inspect", 40),
    ROW("txpool_status", 40),
};

/* QuickNode Solana: 30 per method; DAS (QuickNode's Metaplex add-on names) 2x. */
static const policy_cost_row_t quicknode_sol[] = {
    ROW("getAsset", 60),
    ROW("getAssetProof", 60),
    ROW("getAssetProofs", 60),
    ROW("getAssetSignatures", 60),
    ROW("getAssets", 60),
    ROW("getAssetsByAuthority", 60),
    ROW("getAssetsByCreator", 60),
    ROW("getAssetsByGroup", 60),
    ROW("getAssetsByOwner", 60),
    ROW("getLargestAccounts", 120),
    ROW("getNftEditions", 60),
    ROW("getSupply", 120),
    ROW("getTokenAccounts", 60),
    ROW("searchAssets", 60),
};

/* Helius credits: standard calls 1, history and scans 10, DAS (Helius's own
 * method names) 10. getSignatureStatuses is 10 with searchTransactionHistory,
 * but costs are per method and never look at params, so it is charged 1. */
static const policy_cost_row_t helius_sol[] = {
    ROW("getAsset", 10),
    ROW("getAssetBatch", 10),
    ROW("getAssetProof", 10),
    ROW("getAssetProofBatch", 10),
    ROW("getAssetsByAuthority", 10),
    ROW("getAssetsByCreator", 10),
    ROW("getAssetsByGroup", 10),
    ROW("getAssetsByOwner", 10),
    ROW("getBlock", 10),
    ROW("getBlockTime", 10),
    ROW("getBlocks", 10),
    ROW("getBlocksWithLimit", 10),
    ROW("getInflationReward", 10),
    ROW("getLargestAccounts", 1),
    ROW("getNftEditions", 10),
    ROW("getProgramAccounts", 10),
    ROW("getSignatureStatuses", 1),
    ROW("getSignaturesForAddress", 10),
    ROW("getSignaturesForAsset", 10),
    ROW("getSupply", 1),
    ROW("getTokenAccounts", 10),
    ROW("getTransaction", 10),
    ROW("getTransactionsForAddress", 100),
    ROW("searchAssets", 10),
    /* the doc's values for staked/unstaked/Sender sends disagree across
     * versions and the current one is unverified: a standard call */
    ROW("sendTransaction", 1),
};

#define ONE(v) {(v), (v)}

static const policy_cost_profile_t profiles[] = {
    /* Solana has no Alchemy column in §C: every call gets eRPC's 20 fallback */
    {"alchemy", alchemy_eth, COUNT(alchemy_eth), NULL, 0, ONE(20), ONE(20), 0},
    /* each batch costs 1 credit on top of its members (§E) */
    {"infura", infura_eth, COUNT(infura_eth), NULL, 0, ONE(80), ONE(180), 1},
    {"quicknode", quicknode_eth, COUNT(quicknode_eth), quicknode_sol, COUNT(quicknode_sol), ONE(20), ONE(30), 0},
    /* Helius serves Solana only and publishes no Ethereum prices: an endpoint
     * given this profile on another chain is charged 1 per call (docs/guide/budgets.md) */
    {"helius", NULL, 0, helius_sol, COUNT(helius_sol), ONE(1), ONE(1), 0},
    /* public or self-hosted nodes: count calls */
    {"flat", NULL, 0, NULL, 0, ONE(1), ONE(1), 0},
};

const policy_cost_profile_t *policy_cost_profiles(size_t *n)
{
    *n = COUNT(profiles);
    return profiles;
}

const policy_cost_profile_t *policy_cost_profile(const char *name)
{
    if (name == NULL)
        return NULL;
    for (size_t i = 0; i < COUNT(profiles); i++)
        if (strcmp(profiles[i].name, name) == 0)
            return &profiles[i];
    return NULL;
}

typedef struct name_key {
    const char *name;
    size_t len;
} name_key_t;

/* Byte order between name[0..len) and a NUL-terminated row name: strcmp
 * order, with a proper prefix first, so it agrees with how tables are sorted. */
static int name_cmp(const char *name, size_t len, const char *row)
{
    size_t rlen = strlen(row);
    int c = memcmp(name, row, len < rlen ? len : rlen);
    if (c != 0)
        return c;
    return len == rlen ? 0 : len < rlen ? -1 : 1;
}

static int key_cmp(const void *key, const void *elem)
{
    const name_key_t *k = key;
    const policy_cost_row_t *row = elem;
    return name_cmp(k->name, k->len, row->method);
}

policy_cost_t policy_cost_of(const policy_cost_profile_t *p, policy_chain_t chain, const policy_cost_row_t *overrides,
                             size_t noverrides, const char *method, size_t len)
{
    int sol = chain == POLICY_CHAIN_SOLANA;
    policy_cost_t dflt = sol ? p->sol_default : p->eth_default;
    /* an empty name matches no row; it also keeps a NULL method away from memcmp */
    if (len == 0)
        return dflt;
    for (size_t i = 0; i < noverrides; i++)
        if (name_cmp(method, len, overrides[i].method) == 0)
            return overrides[i].cost;
    const policy_cost_row_t *rows = sol ? p->solana : p->ethereum;
    size_t nrows = sol ? p->nsolana : p->nethereum;
    if (nrows == 0) /* bsearch wants a valid base even for zero rows */
        return dflt;
    name_key_t key = {method, len};
    const policy_cost_row_t *hit = bsearch(&key, rows, nrows, sizeof rows[0], key_cmp);
    return hit != NULL ? hit->cost : dflt;
}

/* Costs come from config overrides too, so a sum must not wrap to a small number. */
static uint32_t add_sat(uint32_t a, uint32_t b)
{
    return a > UINT32_MAX - b ? UINT32_MAX : a + b;
}

policy_cost_t policy_cost_of_request(const policy_cost_profile_t *p, policy_chain_t chain,
                                     const policy_cost_row_t *overrides, size_t noverrides,
                                     const char *const *methods, const size_t *lens, size_t n, int batch)
{
    policy_cost_t sum = {0, 0};
    for (size_t i = 0; i < n; i++) {
        policy_cost_t c = policy_cost_of(p, chain, overrides, noverrides, methods[i], lens[i]);
        sum.billed = add_sat(sum.billed, c.billed);
        sum.throughput = add_sat(sum.throughput, c.throughput);
    }
    /* Infura's batch credit is credits like any other, so it also counts
     * against the credits-per-second limit */
    if (batch) {
        sum.billed = add_sat(sum.billed, p->per_batch);
        sum.throughput = add_sat(sum.throughput, p->per_batch);
    }
    return sum;
}
