#include "policy/method.h"

#include <string.h>
#include <strings.h>

#include "base/sl_parse.h"
#include "wire/envelope.h"

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
#define STA POLICY_CACHE_STATIC
#define BLK POLICY_CACHE_BLOCK
#define TX POLICY_CACHE_TX
#define NOT_NULL POLICY_DISPATCH_NOT_NULL

/* Sorted by strcmp (a test checks it). Sources: reference/providers.md §D. */
static const policy_method_t eth_methods[] = {
    {"eth_accounts", R, NORM, 1},
    {"eth_blobBaseFee", R, NORM, 1, 1},
    {"eth_blockNumber", R, NORM, 1, 1},
    {"eth_call", S, LOW, 1, .cache = BLK},
    {"eth_chainId", R, NORM, 1, 1, .cache = STA},
    {"eth_coinbase", R, NORM, 1},
    {"eth_createAccessList", S, LOW, 1},
    {"eth_estimateGas", S, LOW, 1},
    {"eth_feeHistory", R, NORM, 1, 1},
    {"eth_gasPrice", R, NORM, 1, 1},
    {"eth_getBalance", R, NORM, 1, 1, .cache = BLK},
    {"eth_getBlockByHash", R, NORM, 1, .cache = BLK},
    {"eth_getBlockByNumber", R, NORM, 1, .cache = BLK},
    {"eth_getBlockReceipts", R, LOW, 1, .cache = BLK},
    {"eth_getBlockTransactionCountByHash", R, NORM, 1, 1, .cache = BLK},
    {"eth_getBlockTransactionCountByNumber", R, NORM, 1, 1, .cache = BLK},
    {"eth_getCode", R, NORM, 1, 1, .cache = BLK},
    /* filters live on one node: a filter id means nothing elsewhere */
    {"eth_getFilterChanges", R, NORM, 0},
    {"eth_getFilterLogs", R, NORM, 0},
    {"eth_getLogs", R, LOW, 1, .cache = BLK},
    {"eth_getProof", R, LOW, 1, .cache = BLK},
    {"eth_getStorageAt", R, NORM, 1, 1, .cache = BLK},
    {"eth_getTransactionByBlockHashAndIndex", R, NORM, 1, .cache = BLK},
    {"eth_getTransactionByBlockNumberAndIndex", R, NORM, 1, .cache = BLK},
    {"eth_getTransactionByHash", C, CRIT, 1, 1, .cache = TX, .dispatch = NOT_NULL},
    {"eth_getTransactionCount", R, HIGH, 1, 1, .cache = BLK},
    {"eth_getTransactionReceipt", C, CRIT, 1, 1, .cache = TX, .dispatch = NOT_NULL},
    {"eth_getUncleByBlockHashAndIndex", R, NORM, 1, .cache = BLK},
    {"eth_getUncleByBlockNumberAndIndex", R, NORM, 1, .cache = BLK},
    {"eth_getUncleCountByBlockHash", R, NORM, 1, .cache = BLK},
    {"eth_getUncleCountByBlockNumber", R, NORM, 1, .cache = BLK},
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
    {"net_version", R, NORM, 1, 1, .cache = STA},
    {"trace_block", R, LOW, 1, .cache = BLK},
    {"trace_call", S, LOW, 1},
    {"trace_callMany", S, LOW, 1},
    {"trace_filter", R, LOW, 1},
    {"trace_replayBlockTransactions", R, LOW, 1, .cache = BLK},
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
    {"getBlock", R, LOW, 1, .cache = BLK},
    {"getBlockCommitment", R, NORM, 1},
    {"getBlockHeight", R, NORM, 1, 1},
    {"getBlockProduction", R, NORM, 1},
    {"getBlockTime", R, NORM, 1, .cache = BLK},
    {"getBlocks", R, LOW, 1},
    {"getBlocksWithLimit", R, LOW, 1},
    {"getClusterNodes", R, NORM, 1},
    {"getEpochInfo", R, NORM, 1, 1},
    {"getEpochSchedule", R, NORM, 1, 1},
    {"getFeeForMessage", R, NORM, 1, 1},
    {"getFirstAvailableBlock", R, NORM, 1},
    {"getGenesisHash", R, NORM, 1, 1, .cache = STA},
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
    {"getTransaction", C, CRIT, 1, .cache = TX},
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
 * list per network. docs/guide/clients.md lists it (keep the two in step). */
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

/* A method no table knows: what it does is unknown, so it is never
 * coalesced with another call (that one call may change state, or answer
 * per caller). */
static const policy_method_t unknown_method = {"", R, NORM, 1, 0, 1};
/* ... and whose name says it changes state (policy_method_sounds_like_write):
 * a write, since re-sending a broadcast, a cancellation or a registration is
 * the one mistake a gateway must not make. */
static const policy_method_t unknown_write = {"", W, HIGH, 0, 0, 1};

/* Verbs that open a segment of a state-changing method's name, sorted,
 * lowercase (a test checks it). prefix: the verb need not end a word ("send"
 * keeps the prefix rule it always had: "eth_sendFoo", "sendfoo"). */
static const struct {
    const char *verb;
    uint8_t prefix;
} write_verbs[] = {
    {"cancel", 0},   /* eth_cancelBundle, eth_cancelPrivateTransaction */
    {"register", 0}, /* registerX: state on the node or a relay */
    {"request", 0},  /* requestAirdrop-like: mints or asks for a transfer */
    {"send", 1},     /* every broadcast */
    {"submit", 0},   /* mev_submitBundle, eth_submitHashrate */
    {"unregister", 0},
};

/* 1 if a write verb opens the segment at name[at..len). */
static int verb_at(const char *name, size_t at, size_t len)
{
    for (size_t i = 0; i < sizeof(write_verbs) / sizeof(write_verbs[0]); i++) {
        size_t vlen = strlen(write_verbs[i].verb);
        if (len - at < vlen || strncasecmp(name + at, write_verbs[i].verb, vlen) != 0)
            continue;
        if (write_verbs[i].prefix || at + vlen == len)
            return 1;
        char next = name[at + vlen];
        if (next == '_' || next < 'a' || next > 'z') /* the word ends: camelCase, a digit, '_' */
            return 1;
    }
    return 0;
}

int policy_method_sounds_like_write(const char *name, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if ((i == 0 || name[i - 1] == '_') && verb_at(name, i, len))
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
    return policy_method_sounds_like_write(name, len) ? &unknown_write : &unknown_method;
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

int policy_dispatch_parse(const char *s)
{
    static const char *const names[POLICY_DISPATCH_COUNT] = {"first", "not_null", "max"};
    for (int i = 0; i < POLICY_DISPATCH_COUNT; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
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
        /* runs on every call against every pattern: a first byte that
         * differs (no '*' there, a name not empty) rules one out without
         * its strlen and memcmp */
        if (p[0] != '\0' && p[0] != '*' && (len == 0 || p[0] != name[0]))
            continue;
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

int policy_method_scope_admits(const policy_method_scope_t *s, const char *name, size_t len)
{
    if (s->allow != NULL && !policy_method_match((const char *const *)s->allow, s->nallow, name, len))
        return 0;
    return s->deny == NULL || !policy_method_match((const char *const *)s->deny, s->ndeny, name, len);
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

int policy_method_coalesces(const policy_method_t *m)
{
    return m->retry_safe && !m->solo &&
           (m->cls == POLICY_CLASS_READ || m->cls == POLICY_CLASS_SIMULATE || m->cls == POLICY_CLASS_CONFIRM);
}

/* ---- params that make a cheap method heavy ------------------------------ */

/* A JSON quantity: a number of plain digits, or a string of hex ("0x..") or
 * decimal digits (geth's HexOrDecimal64). 0 if it is none of these or over
 * 2^32. */
static int read_count(const char *buf, wire_span_t v, uint64_t *out)
{
    char text[24];
    if (wire_json_kind(buf, v) == WIRE_JSON_NUMBER)
        return sl_parse_u64(buf + v.off, v.len, UINT32_MAX, out) == SL_OK;
    if (wire_json_kind(buf, v) != WIRE_JSON_STRING || wire_json_string(buf, v, text, sizeof text) != SL_OK)
        return 0;
    if (text[0] != '0' || (text[1] != 'x' && text[1] != 'X'))
        return sl_parse_u64(text, strlen(text), UINT32_MAX, out) == SL_OK;
    uint64_t n = 0;
    const char *p = text + 2;
    if (*p == '\0')
        return 0;
    for (; *p != '\0'; p++) {
        int d = sl_hex_digit((uint8_t)*p);
        if (d < 0 || (n = n * 16 + (uint64_t)d) > UINT32_MAX)
            return 0;
    }
    *out = n;
    return 1;
}

/* eth_feeHistory [blockCount, newestBlock, rewardPercentiles?]. Without
 * percentiles a node reads one header per block; with them it reads every
 * block's transactions and receipts to sort their tips, and geth takes up to
 * 1024 blocks. providers.md §C1 prices the call with eth_blockNumber (10 CU at
 * Alchemy) and says nothing of its params: that price fits the wallet's shape,
 * a few recent headers. Ten blocks is that shape with room to spare (the
 * tip estimators send 1 to 10); past it, or with percentiles, the call may be
 * slow by nature. */
static int fee_history_cheap(const char *buf, wire_span_t params)
{
    wire_span_t p[3];
    size_t n = 0;
    uint64_t count;
    if (wire_json_kind(buf, params) != WIRE_JSON_ARRAY ||
        wire_envelope_scan_array(buf + params.off, params.len, p, 3, &n) != SL_OK || n < 2)
        return 0;
    for (size_t i = 0; i < n; i++)
        p[i].off += params.off;
    if (!read_count(buf, p[0], &count) || count > POLICY_FEE_HISTORY_CHEAP_BLOCKS)
        return 0;
    if (n < 3 || wire_json_kind(buf, p[2]) == WIRE_JSON_NULL)
        return 1;
    wire_span_t none[1];
    size_t k = 0;
    return wire_json_kind(buf, p[2]) == WIRE_JSON_ARRAY &&
           wire_envelope_scan_array(buf + p[2].off, p[2].len, none, 0, &k) == SL_OK && k == 0;
}

/* Methods whose cost depends on their params. Sorted by chain, then name (a
 * test checks it); each rule may only turn a cheap row heavy. */
static const struct {
    policy_chain_t chain;
    const char *name;
    int (*cheap)(const char *buf, wire_span_t params);
} param_rules[] = {
    {POLICY_CHAIN_ETHEREUM, "eth_feeHistory", fee_history_cheap},
};

int policy_method_call_cheap(policy_chain_t chain, const policy_method_t *m, const char *buf, wire_span_t params)
{
    if (!m->cheap)
        return 0;
    for (size_t i = 0; i < sizeof(param_rules) / sizeof(param_rules[0]); i++)
        if (param_rules[i].chain == chain && strcmp(param_rules[i].name, m->name) == 0)
            return param_rules[i].cheap(buf, params);
    return 1;
}

const char *policy_method_write_verb(size_t i, int *prefix)
{
    if (i >= sizeof(write_verbs) / sizeof(write_verbs[0]))
        return NULL;
    *prefix = write_verbs[i].prefix;
    return write_verbs[i].verb;
}

const char *policy_method_param_rule(size_t i, policy_chain_t *chain)
{
    if (i >= sizeof(param_rules) / sizeof(param_rules[0]))
        return NULL;
    *chain = param_rules[i].chain;
    return param_rules[i].name;
}
