/* tests/policy/test_verdict_flags.c: the facts an error carries beside its
 * verdict (policy_verdict_rpc_error_flags): every vendor's way of saying an
 * eth_getLogs range or result is too large (LOGS_RANGE), and every way of
 * saying the block is not there yet (BEHIND). One test per wording, each
 * quoting its source; the verdicts themselves are test_verdict.c's. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <string.h>

#include "policy/verdict.h"

#define ETH POLICY_CHAIN_ETHEREUM
#define SOL POLICY_CHAIN_SOLANA
#define UNSUP POLICY_VERDICT_UNSUPPORTED
#define MISS POLICY_VERDICT_MISSING_DATA
#define LOGS POLICY_VERDICT_F_LOGS_RANGE
#define BEHIND POLICY_VERDICT_F_BEHIND

#define ERR(e) "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":" e "}"

/* Judges one upstream answer as pool/pool_answer.c decodes it. */
static void expect_flags(policy_chain_t chain, const char *method, int status, const char *body,
                         policy_verdict_t want, unsigned want_flags)
{
    wire_envelope_t env;
    wire_rpc_error_t err;
    cr_assert_eq(wire_envelope_scan(body, strlen(body), &env), SL_OK, "%s", body);
    cr_assert_eq(wire_envelope_error(body, env.error, &err), SL_OK, "%s", body);
    const policy_method_t *m = policy_method_lookup(chain, method, strlen(method));
    uint32_t ms = 1;
    unsigned flags = 0xff;
    policy_verdict_t v = policy_verdict_rpc_error_flags(chain, m, status, &err, body, &ms, &flags);
    cr_expect_eq(v, want, "%s: got %s, want %s", err.message, policy_verdict_name(v), policy_verdict_name(want));
    cr_expect_eq(flags, want_flags, "%s: flags %#x, want %#x", err.message, flags, want_flags);
    /* the flags change nothing of the verdict the older entry point gives */
    cr_expect_eq(policy_verdict_rpc_error(chain, m, status, &err, body, &ms), v);
}

/* One row per wording: Criterion runs each as its own test. The test is
 * handed the row's index, not the row: it runs in a process of its own
 * where the parent's pointers mean nothing. */
typedef struct wording {
    const char *name;
    const char *source;
    int status;                   /* LOGS_RANGE rows; BEHIND rows are all 200 */
    const char *body;
    policy_chain_t chain;         /* BEHIND rows */
    const char *method;
} wording_t;

static wording_t logs_wordings[] = {
    {"alchemy_response_size_2k", "ethers-io/ethers.js #4703, go-ethereum #25343", 200,
     ERR("{\"code\":-32602,\"message\":\"Log response size exceeded. You can make eth_getLogs "
     "requests with up to a 2K block range and no limit on the response size, or you can request "
     "any block range with a cap of 10K logs in the response. Based on your parameters and the "
     "response size limit, this block range should work: [0x0, 0xd043b8]\"}")},
    {"alchemy_500_block_range", "BobTheBuidler/dank_mids #772", 200,
     ERR("{\"code\":-32600,\"message\":\"You can make eth_getLogs requests with up to a 500 block "
     "range. Based on your parameters, this block range should work: [0x123c9b2, 0x123cba5]\"}")},
    /* "free tier" is also a billing word: the range words come first */
    {"alchemy_free_tier", "the free tier's wording, quoted in a range classifier's tests", 200,
     ERR("{\"code\":-32600,\"message\":\"Under the Free tier plan, you can make eth_getLogs requests "
     "with up to a 10 block range. Based on your parameters, this block range should work: "
     "[0x1, 0xa]. Upgrade to PAYG for expanded block range.\"}")},
    /* -32005 is Infura's rate-limit code too: the words must win */
    {"infura_result_cap", "ethers-io/ethers.js #4703: -32005 with data {from, limit, to}", 200,
     ERR("{\"code\":-32005,\"data\":{\"from\":\"0xBDE5F8\",\"limit\":10000,\"to\":\"0x102DBCC\"},"
     "\"message\":\"query returned more than 10000 results. Try with this block range "
     "[0xBDE5F8, 0x102DBCC].\"}")},
    {"infura_range_cap", "INFURA/infura #237, the live API", 200,
     ERR("{\"code\":-32602,\"message\":\"range 1000000 exceeds limit of 10000\"}")},
    {"quicknode", "eternalsafe/wallet #57, OffchainLabs/arbitrum-sdk #609: -32614 in an HTTP 413", 413,
     ERR("{\"code\":-32614,\"message\":\"eth_getLogs is limited to a 10,000 range\"}")},
    {"ankr_too_wide", "ponder-sh/ponder getLogsRetryHelper.ts (\"ankr\", code -32600)", 200,
     ERR("{\"code\":-32600,\"message\":\"block range is too wide\"}")},
    {"ankr_blocks_distance", "ponder-sh/ponder #1940", 200,
     ERR("{\"code\":-32602,\"message\":\"maximum [from, to] blocks distance: 10000\"}")},
    {"ankr_and_reth_max_results", "ponder-sh/ponder _test/ankr.test.ts and _test/llamarpc.test.ts", 200,
     ERR("{\"code\":-32602,\"message\":\"query exceeds max results 20000, retry with the range "
     "24383424-24383524\"}")},
    {"publicnode", "ponder-sh/ponder _test/publicnode.test.ts", 200,
     ERR("{\"code\":-32000,\"message\":\"exceed maximum block range: 50000\"}")},
    {"geth_rangelimit", "go-ethereum eth/filters/filter.go (--rpc.rangelimit)", 200,
     ERR("{\"code\":-32602,\"message\":\"exceed maximum block range 5000\"}")},
    {"erigon_range_limit", "erigontech/erigon PR #20424 (--rpc.blockrange.limit)", 200,
     ERR("{\"code\":-32602,\"message\":\"query block range exceeds server limit, narrow your "
     "filter: 1000\"}")},
    {"erigon_too_many_logs", "erigontech/erigon PR #19721 (--rpc.logs.maxresults)", 200,
     ERR("{\"code\":-32000,\"message\":\"query returns too many logs, narrow your filter: 20000\"}")},
    {"reth_max_block_range", "paradigmxyz/reth PR #8558", 200,
     ERR("{\"code\":-32602,\"message\":\"query exceeds max block range 5000\"}")},
    {"chainstack", "ponder-sh/ponder getLogsRetryHelper.ts (\"chainstack\")", 200,
     ERR("{\"code\":-32000,\"message\":\"Block range limit exceeded.\"}")},
    {"cloudflare", "ponder-sh/ponder getLogsRetryHelper.ts (\"Cloudflare\": \"Max range: N\")", 200,
     ERR("{\"code\":-32047,\"message\":\"Invalid eth_getLogs request. 'fromBlock'-'toBlock' range "
     "too large. Max range: 800\"}")},
    {"arbitrum", "ponder-sh/ponder getLogsRetryHelper.ts (\"arbitrum\")", 200,
     ERR("{\"code\":-32000,\"message\":\"logs matched by query exceeds limit of 10000\"}")},
    {"blast_and_1rpc_limited_to", "ponder-sh/ponder getLogsRetryHelper.ts (quicknode, 1rpc, blast)", 200,
     ERR("{\"code\":-32000,\"message\":\"eth_getLogs is limited to a 1,000 range\"}")},
    {"erpc_normalized", "an eRPC in front: its -32012 (PE: wire codes)", 200,
     ERR("{\"code\":-32012,\"message\":\"request exceeded max allowed range: block range is too "
     "wide\"}")},
};

#define NROWS(t) (sizeof(t) / sizeof((t)[0]))
static size_t row_index[64];

static struct criterion_test_params rows_of(size_t n)
{
    cr_assert_leq(n, NROWS(row_index));
    for (size_t i = 0; i < n; i++)
        row_index[i] = i;
    return cr_make_param_array(size_t, row_index, n);
}

Test(logs_range, not_for_rates_or_disabled_logs)
{
    /* a rate worded "limited to a" without a range is a rate limit */
    expect_flags(ETH, "eth_getLogs", 200,
                 ERR("{\"code\":-32000,\"message\":\"requests limited to a rate of 10 per second\"}"),
                 POLICY_VERDICT_RATE_LIMITED, 0);
    /* BSC dataseed: getLogs disabled there (bnb-chain/docs-site #621): no range helps */
    expect_flags(ETH, "eth_getLogs", 200, ERR("{\"code\":-32005,\"message\":\"limit exceeded\"}"), UNSUP, 0);
    /* geth: fromBlock after toBlock: the client's mistake, no narrower range helps */
    expect_flags(ETH, "eth_getLogs", 200, ERR("{\"code\":-32602,\"message\":\"invalid block range params\"}"),
                 UNSUP, 0);
}

/* ---- BEHIND ------------------------------------------------------------- */

static wording_t behind_wordings[] = {
    {"geth_header_not_found", "U-EVM; geth eth/api_backend.go", 200,
     ERR("{\"code\":-32000,\"message\":\"header not found\"}"), ETH, "eth_getBalance"},
    {"geth_unknown_block", "geth eth/filters errUnknownBlock", 200,
     ERR("{\"code\":-32000,\"message\":\"unknown block\"}"), ETH, "eth_getLogs"},
    /* it also holds "block range", and must not read as a range too wide */
    {"geth_range_into_future", "execution-apis tests/eth_getLogs/filter-error-future-block-range.io", 200,
     ERR("{\"code\":-32602,\"message\":\"block range extends beyond current head block\"}"), ETH, "eth_getLogs"},
    {"erigon_block_not_found", "erigon rpc/jsonrpc/eth_receipts.go: a blockHash this node lacks", 200,
     ERR("{\"code\":-32000,\"message\":\"block not found: 0x5d9e1a\"}"), ETH, "eth_getLogs"},
    {"avalanche_after_last_accepted", "U-EVM IsMissingDataError", 200,
     ERR("{\"code\":-32000,\"message\":\"requested block is after last accepted block\"}"), ETH, "eth_getBalance"},
    {"alchemy_code_3_unknown_block", "VEND alchemy.go: code 3 near the tip", 200,
     ERR("{\"code\":3,\"message\":\"Unknown block\"}"), ETH, "eth_call"},
    {"block_not_available", "the issue's wording", 200,
     ERR("{\"code\":-32000,\"message\":\"block not available\"}"), ETH, "eth_getBlockReceipts"},
    {"solana_min_context_slot", "agave custom_error.rs -32016", 200,
     ERR("{\"code\":-32016,\"message\":\"Minimum context slot has not been reached\",\"data\":"
         "{\"contextSlot\":250000000}}"), SOL, "getAccountInfo"},
    {"solana_block_not_available", "agave custom_error.rs -32004", 200,
     ERR("{\"code\":-32004,\"message\":\"Block not available for slot 251234567\"}"), SOL, "getBlock"},
    {"solana_block_status", "agave custom_error.rs -32014", 200,
     ERR("{\"code\":-32014,\"message\":\"Block status not yet available for slot 251234567\"}"), SOL, "getBlock"},
    {"solana_node_behind", "agave custom_error.rs -32005 (PM §B2)", 200,
     ERR("{\"code\":-32005,\"message\":\"Node is behind by 142 slots\",\"data\":{\"numSlotsBehind\":142}}"), SOL, "getSlot"},
};

/* Row i of both tables: the LOGS_RANGE wordings first, then the BEHIND ones. */
ParameterizedTestParameters(verdict_flags, wording)
{
    return rows_of(NROWS(logs_wordings) + NROWS(behind_wordings));
}

ParameterizedTest(size_t *i, verdict_flags, wording)
{
    int logs = *i < NROWS(logs_wordings);
    const wording_t *w = logs ? &logs_wordings[*i] : &behind_wordings[*i - NROWS(logs_wordings)];
    cr_log_info("%s (%s)", w->name, w->source);
    if (logs)
        expect_flags(ETH, "eth_getLogs", w->status, w->body, UNSUP, LOGS);
    else
        expect_flags(w->chain, w->method, w->status, w->body, MISS, BEHIND);
}

Test(behind, not_for_pruned_data_or_unserved_tags)
{
    /* a pruned node says nothing of its head */
    expect_flags(ETH, "eth_getStorageAt", 200,
                 ERR("{\"code\":-32000,\"message\":\"missing trie node 7f5d (path ) state is not available\"}"), MISS,
                 0);
    expect_flags(ETH, "eth_getBalance", 200,
                 ERR("{\"code\":-32000,\"message\":\"historical state not available in path scheme yet\"}"), MISS, 0);
    expect_flags(ETH, "eth_call", 200, ERR("{\"code\":3,\"message\":\"missing trie node 7f5d\"}"), MISS, 0);
    /* a tag this node does not serve (§A3 4) */
    expect_flags(ETH, "eth_getBlockByNumber", 200, ERR("{\"code\":-32000,\"message\":\"safe block not found\"}"), MISS,
                 0);
    /* Solana: cleaned up and skipped slots are not "behind" */
    expect_flags(SOL, "getBlock", 200,
                 ERR("{\"code\":-32001,\"message\":\"Block 5 cleaned up, does not exist on node. First available "
                     "block: 2000\"}"),
                 MISS, 0);
    expect_flags(SOL, "getBlock", 200,
                 ERR("{\"code\":-32007,\"message\":\"Slot 5 was skipped, or missing due to ledger jump to recent "
                     "snapshot\"}"),
                 MISS, 0);
    /* inside a 5xx the status decides, and no row's flag is given */
    expect_flags(ETH, "eth_getBalance", 500, ERR("{\"code\":-32000,\"message\":\"header not found\"}"),
                 POLICY_VERDICT_TRANSIENT, 0);
}

/* ---- the flag table ------------------------------------------------------ */

Test(verdict_flags, names_and_rows)
{
    cr_expect_str_eq(policy_verdict_flag_name(POLICY_VERDICT_FLAG_BIT_LOGS_RANGE), "LOGS_RANGE");
    cr_expect_str_eq(policy_verdict_flag_name(POLICY_VERDICT_FLAG_BIT_BEHIND), "BEHIND");
    cr_expect_str_eq(policy_verdict_flag_name(POLICY_VERDICT_FLAG_COUNT), "UNKNOWN");
    /* each flag only where its verdict makes sense: LOGS_RANGE on UNSUPPORTED,
     * BEHIND on MISSING_DATA, so a caller ignoring flags keeps today's behaviour */
    for (unsigned c = 0; c < POLICY_CHAIN_COUNT; c++) {
        size_t n;
        const policy_verdict_rule_t *rules = policy_verdict_rules((policy_chain_t)c, &n);
        unsigned seen = 0;
        for (size_t i = 0; i < n; i++) {
            seen |= rules[i].flags;
            cr_expect_eq(rules[i].flags & ~((1u << POLICY_VERDICT_FLAG_COUNT) - 1), 0, "row %zu: unknown flag", i);
            if (rules[i].flags & LOGS)
                cr_expect_eq(rules[i].verdict, UNSUP, "row %zu", i);
            if (rules[i].flags & BEHIND)
                cr_expect_eq(rules[i].verdict, MISS, "row %zu", i);
        }
        cr_expect(seen & BEHIND, "%s: no BEHIND row", policy_chain_name((policy_chain_t)c));
        if (c == ETH)
            cr_expect(seen & LOGS, "ethereum: no LOGS_RANGE row");
    }
}
