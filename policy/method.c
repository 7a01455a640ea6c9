#include "policy/method.h"

#include <string.h>

#define R POLICY_CLASS_READ
#define W POLICY_CLASS_WRITE
#define C POLICY_CLASS_CONFIRM
#define S POLICY_CLASS_SIMULATE
#define SUB POLICY_CLASS_SUBSCRIBE
#define B POLICY_CLASS_BLOCKED
#define LOW POLICY_PRIO_LOW
#define NORM POLICY_PRIO_NORMAL
#define HIGH POLICY_PRIO_HIGH
#define CRIT POLICY_PRIO_CRITICAL

/* Sorted by strcmp (a test checks it). Sources: reference/providers.md §D. */
static const policy_method_t eth_methods[] = {
    {"eth_accounts", R, NORM, 1},
    {"eth_blobBaseFee", R, NORM, 1, 1},
    {"eth_blockNumber", R, NORM, 1, 1},
    {"eth_call", S, LOW, 1},
    {"eth_chainId", R, NORM, 1, 1},
    {"eth_coinbase", R, NORM, 1},
    {"eth_createAccessList", S, LOW, 1},
    {"eth_estimateGas", S, LOW, 1},
    {"eth_feeHistory", R, NORM, 1, 1},
    {"eth_gasPrice", R, NORM, 1, 1},
    {"eth_getBalance", R, NORM, 1, 1},
    {"eth_getBlockByHash", R, NORM, 1},
    {"eth_getBlockByNumber", R, NORM, 1},
    {"eth_getBlockReceipts", R, LOW, 1},
    {"eth_getBlockTransactionCountByHash", R, NORM, 1, 1},
    {"eth_getBlockTransactionCountByNumber", R, NORM, 1, 1},
    {"eth_getCode", R, NORM, 1, 1},
    /* filters live on one node: a filter id means nothing elsewhere */
    {"eth_getFilterChanges", R, NORM, 0},
    {"eth_getFilterLogs", R, NORM, 0},
    {"eth_getLogs", R, LOW, 1},
    {"eth_getProof", R, LOW, 1},
    {"eth_getStorageAt", R, NORM, 1, 1},
    {"eth_getTransactionByBlockHashAndIndex", R, NORM, 1},
    {"eth_getTransactionByBlockNumberAndIndex", R, NORM, 1},
    {"eth_getTransactionByHash", C, CRIT, 1, 1},
    {"eth_getTransactionCount", R, HIGH, 1, 1},
    {"eth_getTransactionReceipt", C, CRIT, 1, 1},
    {"eth_getUncleByBlockHashAndIndex", R, NORM, 1},
    {"eth_getUncleByBlockNumberAndIndex", R, NORM, 1},
    {"eth_getUncleCountByBlockHash", R, NORM, 1},
    {"eth_getUncleCountByBlockNumber", R, NORM, 1},
    {"eth_maxPriorityFeePerGas", R, NORM, 1, 1},
    {"eth_newBlockFilter", R, NORM, 0},
    {"eth_newFilter", R, NORM, 0},
    {"eth_newPendingTransactionFilter", R, NORM, 0},
    {"eth_protocolVersion", R, NORM, 1, 1},
    /* bundles, private and conditional sends, ERC-4337 user operations:
     * broadcasts too, never sent twice */
    {"eth_sendBundle", W, HIGH, 0},
    {"eth_sendPrivateRawTransaction", W, HIGH, 0},
    {"eth_sendPrivateTransaction", W, HIGH, 0},
    {"eth_sendRawTransaction", W, HIGH, 0},
    {"eth_sendRawTransactionConditional", W, HIGH, 0},
    {"eth_sendRawTransactionSync", W, HIGH, 0},
    {"eth_sendTransaction", B, HIGH, 0},
    {"eth_sendUserOperation", W, HIGH, 0},
    {"eth_sign", B, NORM, 0},
    {"eth_signTransaction", B, NORM, 0},
    {"eth_signTypedData", B, NORM, 0},
    {"eth_signTypedData_v3", B, NORM, 0},
    {"eth_signTypedData_v4", B, NORM, 0},
    {"eth_simulateV1", S, LOW, 1},
    {"eth_submitWork", W, NORM, 0},
    {"eth_subscribe", SUB, NORM, 0},
    {"eth_syncing", R, NORM, 1, 1},
    {"eth_uninstallFilter", R, NORM, 0},
    {"eth_unsubscribe", SUB, NORM, 0},
    {"net_listening", R, NORM, 1, 1},
    {"net_peerCount", R, NORM, 1},
    {"net_version", R, NORM, 1, 1},
    {"trace_block", R, LOW, 1},
    {"trace_call", S, LOW, 1},
    {"trace_callMany", S, LOW, 1},
    {"trace_filter", R, LOW, 1},
    {"trace_replayBlockTransactions", R, LOW, 1},
    {"trace_replayTransaction", R, LOW, 1},
    {"trace_transaction", R, LOW, 1},
    {"web3_clientVersion", R, NORM, 1, 1},
    {"web3_sha3", R, NORM, 1},
};

static const policy_method_t sol_methods[] = {
    {"accountSubscribe", SUB, NORM, 0},
    {"accountUnsubscribe", SUB, NORM, 0},
    {"blockSubscribe", SUB, NORM, 0},
    {"blockUnsubscribe", SUB, NORM, 0},
    {"deregisterNode", B, NORM, 0},
    {"getAccountInfo", R, NORM, 1, 1},
    {"getBalance", R, NORM, 1, 1},
    {"getBlock", R, LOW, 1},
    {"getBlockCommitment", R, NORM, 1},
    {"getBlockHeight", R, NORM, 1, 1},
    {"getBlockProduction", R, NORM, 1},
    {"getBlockTime", R, NORM, 1},
    {"getBlocks", R, LOW, 1},
    {"getBlocksWithLimit", R, LOW, 1},
    {"getClusterNodes", R, NORM, 1},
    {"getEpochInfo", R, NORM, 1, 1},
    {"getEpochSchedule", R, NORM, 1, 1},
    {"getFeeForMessage", R, NORM, 1, 1},
    {"getFirstAvailableBlock", R, NORM, 1},
    {"getGenesisHash", R, NORM, 1, 1},
    {"getHealth", R, NORM, 1, 1},
    {"getHighestSnapshotSlot", R, NORM, 1},
    {"getIdentity", R, NORM, 1, 1},
    {"getInflationGovernor", R, NORM, 1},
    {"getInflationRate", R, NORM, 1},
    {"getInflationReward", R, LOW, 1},
    {"getLargestAccounts", R, LOW, 1},
    {"getLatestBlockhash", R, HIGH, 1, 1},
    {"getLeaderSchedule", R, NORM, 1},
    {"getMaxRetransmitSlot", R, NORM, 1},
    {"getMaxShredInsertSlot", R, NORM, 1},
    {"getMinimumBalanceForRentExemption", R, NORM, 1, 1},
    {"getMultipleAccounts", R, NORM, 1},
    {"getProgramAccounts", R, LOW, 1},
    {"getRecentPerformanceSamples", R, NORM, 1},
    {"getRecentPrioritizationFees", R, NORM, 1},
    {"getSignatureStatuses", C, CRIT, 1, 1},
    {"getSignaturesForAddress", C, CRIT, 1},
    {"getSlot", R, NORM, 1, 1},
    {"getSlotLeader", R, NORM, 1},
    {"getSlotLeaders", R, NORM, 1},
    {"getStakeMinimumDelegation", R, NORM, 1},
    {"getSupply", R, LOW, 1},
    {"getTokenAccountBalance", R, NORM, 1, 1},
    {"getTokenAccountsByDelegate", R, NORM, 1},
    {"getTokenAccountsByOwner", R, NORM, 1},
    {"getTokenLargestAccounts", R, LOW, 1},
    {"getTokenSupply", R, NORM, 1},
    {"getTransaction", C, CRIT, 1},
    {"getTransactionCount", R, NORM, 1, 1},
    {"getVersion", R, NORM, 1, 1},
    {"getVoteAccounts", R, NORM, 1},
    {"isBlockhashValid", R, HIGH, 1, 1},
    {"logsSubscribe", SUB, NORM, 0},
    {"logsUnsubscribe", SUB, NORM, 0},
    {"minimumLedgerSlot", R, NORM, 1, 1},
    {"programSubscribe", SUB, NORM, 0},
    {"programUnsubscribe", SUB, NORM, 0},
    {"registerNode", B, NORM, 0},
    /* mints per call: one endpoint only, never a second */
    {"requestAirdrop", W, NORM, 0},
    {"rootSubscribe", SUB, NORM, 0},
    {"rootUnsubscribe", SUB, NORM, 0},
    {"sendBundle", W, HIGH, 0}, /* Jito */
    {"sendTransaction", W, HIGH, 0},
    {"signVote", B, NORM, 0},
    {"signatureSubscribe", SUB, NORM, 0},
    {"signatureUnsubscribe", SUB, NORM, 0},
    {"simulateBundle", S, LOW, 1},
    {"simulateTransaction", S, LOW, 1},
    {"slotSubscribe", SUB, NORM, 0},
    {"slotUnsubscribe", SUB, NORM, 0},
    {"slotsUpdatesSubscribe", SUB, NORM, 0},
    {"slotsUpdatesUnsubscribe", SUB, NORM, 0},
    {"voteSubscribe", SUB, NORM, 0},
    {"voteUnsubscribe", SUB, NORM, 0},
};

/* Node administration, keys held by the node, consensus and dev-node
 * controls: nothing a public gateway's client should reach on a provider's
 * (or the operator's own) node. Read families (trace_*, txpool_*, erigon_*,
 * ots_*, ...) are not here; debug_* is, because beside its traces it holds
 * debug_setHead, profiling and file writes. `blocked_methods` replaces the
 * list per network. The README lists it (keep the two in step). */
static const char *const eth_blocked[] = {
    "admin_*",    /* peers, node info, starting and stopping the RPC servers */
    "debug_*",    /* setHead, chaindbCompact, CPU/memory profiles written to disk */
    "miner_*",    /* start/stop, etherbase, extra data, gas price */
    "personal_*", /* accounts unlocked on the node, signing with its keys */
    "clique_*",   /* PoA signer votes (geth, Besu) */
    "engine_*",   /* the consensus-layer Engine API: forkchoice, payloads */
    "les_*",      /* light-server administration (geth) */
    "ibft_*", "qbft_*", "istanbul_*", /* validator votes (Besu, GoQuorum) */
    "raft_*",     /* cluster membership (GoQuorum) */
    "perm_*",     /* node and account permissioning (Besu) */
    "plugins_*",  /* plugin reloads (Besu) */
    "signer_*",   /* the signer's request queue (OpenEthereum, Nethermind) */
    "anvil_*", "hardhat_*", "evm_*", /* dev-node state: balances, impersonation, snapshots, time */
    "eth_sendTransaction", "eth_sign", "eth_signTransaction", "eth_signTypedData*", /* the node's keys */
    NULL,
};

static const char *const sol_blocked[] = {"registerNode", "deregisterNode", "signVote", NULL};

static const struct {
    const policy_method_t *rows;
    size_t count;
    const char *const *blocked;
} tables[POLICY_CHAIN_COUNT] = {
    [POLICY_CHAIN_ETHEREUM] = {eth_methods, sizeof(eth_methods) / sizeof(eth_methods[0]), eth_blocked},
    [POLICY_CHAIN_SOLANA] = {sol_methods, sizeof(sol_methods) / sizeof(sol_methods[0]), sol_blocked},
};

static const policy_method_t unknown_method = {"", R, NORM, 1, 0};
/* A method the table does not know whose name says it sends something
 * ("eth_sendFoo", "sendFoo", "x_sendBar"): treated as a write, since
 * re-sending a broadcast is the one mistake a gateway must not make. */
static const policy_method_t unknown_send = {"", W, HIGH, 0, 0};

static int sounds_like_send(const char *name, size_t len)
{
    if (len >= 4 && memcmp(name, "send", 4) == 0)
        return 1;
    for (size_t i = 0; i + 5 <= len; i++)
        if (name[i] == '_' && memcmp(name + i + 1, "send", 4) == 0)
            return 1;
    return 0;
}

static const char *const class_names[POLICY_CLASS_COUNT] = {
    [POLICY_CLASS_READ] = "read",
    [POLICY_CLASS_WRITE] = "write",
    [POLICY_CLASS_CONFIRM] = "confirm",
    [POLICY_CLASS_SIMULATE] = "simulate",
    [POLICY_CLASS_SUBSCRIBE] = "subscribe",
    [POLICY_CLASS_BLOCKED] = "blocked",
};

/* Byte order between a table name and name[0..len) (strcmp order for names
 * without NUL; a name with a NUL inside simply matches no row). */
static int name_cmp(const char *row, const char *name, size_t len)
{
    size_t rlen = strlen(row);
    int c = memcmp(row, name, rlen < len ? rlen : len);
    if (c != 0)
        return c;
    return rlen == len ? 0 : rlen < len ? -1 : 1;
}

const policy_method_t *policy_method_lookup(policy_chain_t chain, const char *name, size_t len)
{
    if ((unsigned)chain >= POLICY_CHAIN_COUNT || len == 0)
        return &unknown_method;
    const policy_method_t *rows = tables[chain].rows;
    size_t lo = 0, hi = tables[chain].count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = name_cmp(rows[mid].name, name, len);
        if (c == 0)
            return &rows[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return sounds_like_send(name, len) ? &unknown_send : &unknown_method;
}

const policy_method_t *policy_method_lookup_in(const policy_method_t *overrides, size_t n, policy_chain_t chain,
                                               const char *name, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (name_cmp(overrides[i].name, name, len) == 0)
            return &overrides[i];
    return policy_method_lookup(chain, name, len);
}

static const char *const priority_names[] = {
    [POLICY_PRIO_LOW] = "low",
    [POLICY_PRIO_NORMAL] = "normal",
    [POLICY_PRIO_HIGH] = "high",
    [POLICY_PRIO_CRITICAL] = "critical",
};

int policy_method_class_parse(const char *s)
{
    for (int i = 0; i < POLICY_CLASS_COUNT; i++)
        if (strcmp(s, class_names[i]) == 0)
            return i;
    return -1;
}

int policy_priority_parse(const char *s)
{
    for (size_t i = 0; i < sizeof(priority_names) / sizeof(priority_names[0]); i++)
        if (strcmp(s, priority_names[i]) == 0)
            return (int)i;
    return -1;
}

const char *policy_priority_name(policy_priority_t p)
{
    return (unsigned)p < sizeof(priority_names) / sizeof(priority_names[0]) ? priority_names[p] : "unknown";
}

const char *const *policy_method_default_blocked(policy_chain_t chain)
{
    static const char *const none[] = {NULL};
    return (unsigned)chain < POLICY_CHAIN_COUNT ? tables[chain].blocked : none;
}

int policy_method_match(const char *const *patterns, size_t n, const char *name, size_t len)
{
    for (size_t i = 0; i < n && patterns[i] != NULL; i++) {
        const char *p = patterns[i];
        size_t plen = strlen(p);
        if (plen > 0 && p[plen - 1] == '*') {
            if (len >= plen - 1 && memcmp(p, name, plen - 1) == 0)
                return 1;
        } else if (plen == len && memcmp(p, name, len) == 0) {
            return 1;
        }
    }
    return 0;
}

const char *policy_method_class_name(policy_method_class_t cls)
{
    return (unsigned)cls < POLICY_CLASS_COUNT ? class_names[cls] : "unknown";
}

const policy_method_t *policy_method_table(policy_chain_t chain, size_t *count)
{
    if ((unsigned)chain >= POLICY_CHAIN_COUNT) {
        *count = 0;
        return NULL;
    }
    *count = tables[chain].count;
    return tables[chain].rows;
}
