/* tests/policy/test_verdict.c: policy/verdict.h against real provider answers.
 *
 * Each payload is the HTTP status and body an upstream sent, decoded exactly
 * as pool/pool_answer.c does (wire_envelope_scan, then wire_envelope_error
 * of the "error" member, or of one batch member) before the verdict. Sources
 * are named per row; "PM" is /work/shared/reference/providers.md, "PE" its
 * peers.md, N-EVM/N-SVM/VEND/SRT the eRPC files PM names. Rows marked
 * "shape:" are not quoted from a provider: they pin a rule PM describes whose
 * exact wording no source gives (kept apart, in edge_payloads). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "policy/verdict.h"

#define ETH POLICY_CHAIN_ETHEREUM
#define SOL POLICY_CHAIN_SOLANA
#define OK_ POLICY_VERDICT_SUCCESS
#define DET POLICY_VERDICT_DETERMINISTIC
#define TRANS POLICY_VERDICT_TRANSIENT
#define RATE POLICY_VERDICT_RATE_LIMITED
#define MISS POLICY_VERDICT_MISSING_DATA
#define UNSUP POLICY_VERDICT_UNSUPPORTED
#define KNOWN POLICY_VERDICT_ALREADY_KNOWN
#define NONCE POLICY_VERDICT_NONCE_TOO_LOW

/* A JSON-RPC response carrying error object e. */
#define ERR(e) "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":" e "}"
#define NO_MEMBER -1

typedef struct payload {
    const char *name;        /* source */
    policy_chain_t chain;
    const char *method;
    int status;
    const char *body;
    int member;              /* index of the batch member judged; NO_MEMBER: one object */
    policy_verdict_t want;
    uint32_t want_ms;        /* retry hint expected from the body */
    int bare;                /* the body is not a JSON-RPC answer: policy_verdict_http decides */
} payload_t;

#define ONE .member = NO_MEMBER

static const char quicknode_batch[] =
    "[{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":\"0x0\"},"
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"0x1bc16d674ec80000\"},"
    "{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-32012,\"message\":\"credits limited to 6000/sec\"}}]";

static const char proxyd_batch[] =
    "[{\"jsonrpc\":\"2.0\",\"id\":0,\"error\":{\"code\":-32016,\"message\":\"over rate limit\"}},"
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"0x10d4f3a\"}]";

#define SOL_PREFLIGHT_LOGS                                                                                           \
    ERR("{\"code\":-32002,\"message\":\"Transaction simulation failed: Error processing Instruction 0: custom "      \
        "program error: 0x1\",\"data\":{\"accounts\":null,\"err\":{\"InstructionError\":[0,{\"Custom\":1}]},"        \
        "\"logs\":[\"Program 11111111111111111111111111111111 invoke [1]\",\"Transfer: insufficient lamports "      \
        "19900000, need 20000000\",\"Program 11111111111111111111111111111111 failed: custom program error: "       \
        "0x1\"],\"returnData\":null,\"unitsConsumed\":150}}")

#define SOL_ALREADY_PROCESSED                                                                                        \
    ERR("{\"code\":-32002,\"message\":\"Transaction simulation failed: This transaction has already been "          \
        "processed\",\"data\":{\"accounts\":null,\"err\":\"AlreadyProcessed\",\"logs\":[],\"returnData\":null,"      \
        "\"unitsConsumed\":0}}")

static const payload_t payloads[] = {
    /* ---- Ethereum, PM §A1 rate-limit shapes ---- */
    {"Infura 429 (docs.metamask.io avoid-rate-limiting)", ETH, "eth_blockNumber", 429,
     ERR("{\"code\":429,\"event\":-33200,\"message\":\"Too Many Requests\"}"), ONE, RATE},
    {"Infura 429 body inside an HTTP 200", ETH, "eth_getBalance", 200,
     ERR("{\"code\":429,\"event\":-33200,\"message\":\"Too Many Requests\"}"), ONE, RATE},
    {"Infura 402 daily quota (same page)", ETH, "eth_call", 402,
     ERR("{\"code\":402,\"event\":-33000,\"message\":\"Payment Required\"}"), ONE, RATE},
    {"Infura 402 body inside an HTTP 200", ETH, "eth_call", 200,
     ERR("{\"code\":402,\"event\":-33000,\"message\":\"Payment Required\"}"), ONE, RATE},
    {"Infura limit set on the key: 429, event -33300 (metamask-docs 545d0ff)", ETH, "eth_blockNumber", 429,
     ERR("{\"code\":429,\"event\":-33300}"), ONE, RATE},
    {"Infura legacy -32005 with data.backoff_seconds, in its 429", ETH, "eth_getLogs", 429, ERR(
     "{\"code\":-32005,\"message\":\"project ID request rate exceeded\",\"data\":{\"see\":"
     "\"https://infura.io/docs/ethereum/jsonrpc/ratelimits\",\"current_rps\":13.333,\"allowed_rps\":10.0,"
     "\"backoff_seconds\":30.0}}"), ONE, RATE, 30000},
    {"Infura legacy -32005 with backoff inside an HTTP 200", ETH, "eth_getLogs", 200, ERR(
     "{\"code\":-32005,\"message\":\"project ID request rate exceeded\",\"data\":{\"see\":"
     "\"https://infura.io/docs/ethereum/jsonrpc/ratelimits\",\"current_rps\":13.333,\"allowed_rps\":10.0,"
     "\"backoff_seconds\":30.0}}"), ONE, RATE, 30000},
    {"Infura legacy daily count (community.infura.io/t/2147)", ETH, "eth_call", 429,
     ERR("{\"code\":-32005,\"message\":\"daily request count exceeded, request rate limited\"}"), ONE, RATE},
    {"Infura legacy project limit (status-go PR #4807)", ETH, "eth_call", 200,
     ERR("{\"code\":-32005,\"message\":\"exceeded project rate limit\"}"), ONE, RATE},
    {"Alchemy CU/s capacity, code 429 in a 200 (alchemy throughput docs)", ETH, "eth_call", 200,
     ERR("{\"code\":429,\"message\":\"Your app has exceeded its compute units per second capacity. If you have "
         "retries enabled, you can safely ignore this message. If not, check out "
         "https://docs.alchemy.com/reference/throughput\"}"), ONE, RATE},
    {"QuickNode 429 RPS (quicknode error-references)", ETH, "eth_blockNumber", 429,
     ERR("{\"code\":429,\"message\":\"The requests per second (RPS) of your requests are higher than your plan "
         "allows.\"}"), ONE, RATE},
    {"QuickNode batch: per-item -32012 credits (latticexyz/mud #1522)", ETH, "eth_getBalance", 200, quicknode_batch,
     2, RATE},
    {"QuickNode batch: the valid members of the same answer", ETH, "eth_getBalance", 200, quicknode_batch, 1, OK_},
    {"QuickNode -32007 capacity (VEND quicknode.go; message not found)", ETH, "eth_call", 200,
     ERR("{\"code\":-32007}"), ONE, RATE},
    {"QuickNode -32009 capacity (VEND quicknode.go; message not found)", ETH, "eth_getLogs", 200,
     ERR("{\"code\":-32009}"), ONE, RATE},
    {"Chainstack 429, not JSON-RPC (docs.chainstack.com error-reference)", ETH, "eth_call", 429,
     "You hit an RPS or connection limit", ONE, RATE, .bare = 1},
    {"Chainstack 413 over the 1 MB body cap (same page)", ETH, "eth_call", 413,
     "<html><head><title>413 Request Entity Too Large</title></head><body>413 Request Entity Too Large</body>"
     "</html>", ONE, UNSUP, .bare = 1},
    {"TheRPC -32029 in an HTTP 200 (reown blockchain-api PR #1102; message not given)", ETH, "eth_blockNumber", 200,
     ERR("{\"code\":-32029}"), ONE, RATE},
    {"Base public node: -32016 wrapped in a 429 (base/node #368)", ETH, "eth_call", 429,
     ERR("{\"code\":-32016,\"message\":\"over rate limit\"}"), ONE, RATE},
    {"proxyd ErrOverRateLimit as a batch member in a 200 (optimism proxyd/errors)", ETH, "eth_call", 200,
     proxyd_batch, 0, RATE},
    {"Tenderly -32005 (fluencelabs/dev-rewards #20)", ETH, "eth_getBalance", 200,
     ERR("{\"code\":-32005,\"message\":\"rate limit exceeded\"}"), ONE, RATE},
    {"OP-Stack proxyd sender limit, -32017 in a 429 (PM §A3 3; proxyd tests)", ETH, "eth_sendRawTransaction", 429,
     ERR("{\"code\":-32017,\"message\":\"sender is over rate limit\"}"), ONE, DET},
    {"BSC dataseed: getLogs disabled (bnb-chain/docs-site #621)", ETH, "eth_getLogs", 200,
     ERR("{\"code\":-32005,\"message\":\"limit exceeded\"}"), ONE, UNSUP},
    {"Infura getLogs result cap, -32005 (INFURA/infura #237 quoting the docs)", ETH, "eth_getLogs", 200,
     ERR("{\"code\":-32005,\"message\":\"query returned more than 10000 results\"}"), ONE, UNSUP},
    {"Infura getLogs range cap, -32602 (INFURA/infura #237)", ETH, "eth_getLogs", 200,
     ERR("{\"code\":-32602,\"message\":\"range 1000000 exceeds limit of 10000\"}"), ONE, UNSUP},
    {"Alchemy free-tier getLogs cap, -32600 (risc0-ethereum PR #656)", ETH, "eth_getLogs", 200,
     ERR("{\"code\":-32600,\"message\":\"You can make eth_getLogs requests with up to a 500 block range. Based on "
         "your parameters, this block range should work: [0x1be4213, 0x1be4406]\"}"), ONE, UNSUP},
    {"Alchemy log size cap (bancorprotocol/webapp #523)", ETH, "eth_getLogs", 200,
     ERR("{\"code\":-32602,\"message\":\"Log response size exceeded. Please reduce query block range.\"}"), ONE,
     UNSUP},
    {"QuickNode getLogs range cap, -32614 in an HTTP 413 (eternalsafe/wallet #57)", ETH, "eth_getLogs", 413,
     ERR("{\"code\":-32614,\"message\":\"eth_getLogs is limited to a 10,000 range\"}"), ONE, UNSUP},
    {"geth toBlock above the head (execution-apis filter-error-future-block-range.io)", ETH, "eth_getLogs", 200,
     ERR("{\"code\":-32602,\"message\":\"block range extends beyond current head block\"}"), ONE, MISS},
    {"geth fromBlock after toBlock (GETH eth/filters errInvalidBlockRange)", ETH, "eth_getLogs", 200,
     ERR("{\"code\":-32602,\"message\":\"invalid block range params\"}"), ONE, UNSUP},

    /* ---- Ethereum, PM §B1 and §F ---- */
    {"geth execution reverted, code 3 with data (GETH internal/ethapi/errors.go)", ETH, "eth_call", 200,
     "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":3,\"message\":\"execution reverted: ERC20: transfer amount "
     "exceeds balance\",\"data\":\"0x08c379a000000000000000000000000000000000000000000000000000000000000000200000"
     "000000000000000000000000000000000000000000000000000000000000002645524332303a207472616e7366657220616d6f756e74"
     "20657863656564732062616c616e63650000000000000000000000000000000000000000000000000000\"}}", ONE, DET},
    {"geth revert on estimateGas, -32000 without data (N-EVM \"reverted\")", ETH, "eth_estimateGas", 200,
     ERR("{\"code\":-32000,\"message\":\"execution reverted\"}"), ONE, DET},
    {"Alchemy code 3 Unknown block near the tip (VEND alchemy.go)", ETH, "eth_call", 200,
     ERR("{\"code\":3,\"message\":\"Unknown block\"}"), ONE, MISS},
    {"geth ErrAlreadyKnown on a broadcast (GETH core/txpool)", ETH, "eth_sendRawTransaction", 200,
     ERR("{\"code\":-32000,\"message\":\"already known\"}"), ONE, KNOWN},
    {"geth already known, eth_sendRawTransactionSync (PM §D write)", ETH, "eth_sendRawTransactionSync", 200,
     ERR("{\"code\":-32000,\"message\":\"already known\"}"), ONE, KNOWN},
    {"geth already known to a read keeps DETERMINISTIC", ETH, "eth_call", 200,
     ERR("{\"code\":-32000,\"message\":\"already known\"}"), ONE, DET},
    {"older geth \"known transaction\" (SRT wordings)", ETH, "eth_sendRawTransaction", 200,
     ERR("{\"code\":-32000,\"message\":\"known transaction: "
         "0x4f2d3c5e9a0b1c7d8e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d\"}"), ONE, KNOWN},
    {"OpenEthereum duplicate, -32010 (SRT \"already imported\")", ETH, "eth_sendRawTransaction", 200,
     ERR("{\"code\":-32010,\"message\":\"Transaction with the same hash was already imported.\"}"), ONE, KNOWN},
    {"Ethermint-style \"tx already in mempool\" (PM §F)", ETH, "eth_sendRawTransaction", 200,
     ERR("{\"code\":-32000,\"message\":\"tx already in mempool\"}"), ONE, KNOWN},
    {"\"transaction already exists\" (PM §F)", ETH, "eth_sendRawTransaction", 200,
     ERR("{\"code\":-32000,\"message\":\"transaction already exists\"}"), ONE, KNOWN},
    {"already known under -32003 (N-EVM: checked before -32003)", ETH, "eth_sendRawTransaction", 200,
     ERR("{\"code\":-32003,\"message\":\"already known\"}"), ONE, KNOWN},
    {"geth nonce too low on a broadcast (GETH core ErrNonceTooLow; SRT)", ETH, "eth_sendRawTransaction", 200,
     ERR("{\"code\":-32000,\"message\":\"nonce too low: address 0x5B38Da6a701c568545dCfcB03FcB875f56beddC4, tx: 5 "
         "state: 7\"}"), ONE, NONCE},
    {"geth nonce too low to estimateGas keeps DETERMINISTIC", ETH, "eth_estimateGas", 200,
     ERR("{\"code\":-32000,\"message\":\"nonce too low: address 0x5B38Da6a701c568545dCfcB03FcB875f56beddC4, tx: 5 "
         "state: 7\"}"), ONE, DET},
    {"geth simulateV1 -38010 nonce too low (GETH internal/ethapi/errors.go)", ETH, "eth_simulateV1", 200,
     ERR("{\"code\":-38010,\"message\":\"nonce too low: address 0x5B38Da6a701c568545dCfcB03FcB875f56beddC4, tx: 0 "
         "state: 1\"}"), ONE, DET},
    {"geth simulateV1 -38014 insufficient funds (same file)", ETH, "eth_simulateV1", 200,
     ERR("{\"code\":-38014,\"message\":\"insufficient funds for gas * price + value: address "
         "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4 have 0 want 21000\"}"), ONE, DET},
    {"geth simulateV1 -38026 client limit (same file)", ETH, "eth_simulateV1", 200,
     ERR("{\"code\":-38026,\"message\":\"too many blocks\"}"), ONE, DET},
    {"geth replacement transaction underpriced (GETH ErrReplaceUnderpriced)", ETH, "eth_sendRawTransaction", 200,
     ERR("{\"code\":-32000,\"message\":\"replacement transaction underpriced\"}"), ONE, DET},
    {"insufficient funds on a broadcast (N-EVM test message)", ETH, "eth_sendRawTransaction", 200,
     ERR("{\"code\":-32000,\"message\":\"insufficient funds for gas * price + value: address 0xD9F2 have "
         "22995378262500 want 123605240381889\"}"), ONE, DET},
    {"insufficient funds replaying a trace (N-EVM test message)", ETH, "trace_replayTransaction", 200,
     ERR("{\"code\":-32000,\"message\":\"txIndex 2: insufficient funds for gas * price + value: address 0xD9F2 "
         "have 22995378262500 want 123605240381889\"}"), ONE, MISS},
    {"geth header not found (U-EVM)", ETH, "eth_getBalance", 200,
     ERR("{\"code\":-32000,\"message\":\"header not found\"}"), ONE, MISS},
    {"geth missing trie node on a pruned node (U-EVM)", ETH, "eth_getStorageAt", 200,
     ERR("{\"code\":-32000,\"message\":\"missing trie node "
         "7f5d6c4b3a29180706f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a09f (path ) state "
         "0x7f5d6c4b3a29180706f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a09f is not available\"}"), ONE, MISS},
    {"geth path scheme: historical state (U-EVM \"historical state\" + \"not available\")", ETH, "eth_getBalance",
     200, ERR("{\"code\":-32000,\"message\":\"historical state not available in path scheme yet\"}"), ONE, MISS},
    {"header not found inside an HTTP 500 is transient (brief)", ETH, "eth_getBalance", 500,
     ERR("{\"code\":-32000,\"message\":\"header not found\"}"), ONE, TRANS},
    {"geth -32601 (GETH rpc/errors.go)", ETH, "eth_getBlockReceipts", 200,
     ERR("{\"code\":-32601,\"message\":\"the method eth_getBlockReceipts does not exist/is not available\"}"), ONE,
     UNSUP},
    {"Alchemy unsupported method (alchemy error-reference)", ETH, "trace_block", 200,
     ERR("{\"code\":-32600,\"message\":\"Unsupported method: trace_block on ETH_MAINNET. See available methods at "
         "https://docs.alchemy.com/alchemy/documentation/apis\"}"), ONE, UNSUP},
    {"geth -32602 invalid argument: providers differ (PM §B1)", ETH, "eth_getBalance", 200,
     ERR("{\"code\":-32602,\"message\":\"invalid argument 0: hex string has length 38, want 40 for "
         "common.Address\"}"), ONE, UNSUP},
    {"geth -32603 internal (PM §B1)", ETH, "eth_call", 200,
     ERR("{\"code\":-32603,\"message\":\"Internal error\"}"), ONE, TRANS},
    {"geth request timed out, -32002 (GETH rpc/errors.go errcodeTimeout)", ETH, "eth_getLogs", 200,
     ERR("{\"code\":-32002,\"message\":\"request timed out\"}"), ONE, TRANS},
    {"Monad pool: Transaction fee too low, -32603 (N-EVM)", ETH, "eth_sendRawTransaction", 200,
     ERR("{\"code\":-32603,\"message\":\"Transaction fee too low\"}"), ONE, DET},
    {"Monad pool: bare rejected, -32603 (N-EVM)", ETH, "eth_sendRawTransaction", 200,
     ERR("{\"code\":-32603,\"message\":\"rejected\"}"), ONE, DET},
    {"geth malformed raw transaction (N-EVM \"rlp:\")", ETH, "eth_sendRawTransaction", 200,
     ERR("{\"code\":-32000,\"message\":\"rlp: expected input list for types.LegacyTx\"}"), ONE, DET},
    {"geth max fee below base fee: unmatched, returned as-is", ETH, "eth_sendRawTransaction", 200,
     ERR("{\"code\":-32000,\"message\":\"max fee per gas less than block base fee: address "
         "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4, maxFeePerGas: 1000000000, baseFee: 2000000000\"}"), ONE, DET},
    {"Alchemy must be authenticated, -32600 in a 200 (VEND alchemy.go)", ETH, "eth_blockNumber", 200,
     ERR("{\"code\":-32600,\"message\":\"Must be authenticated!\"}"), ONE, TRANS},
    {"Alchemy must be authenticated in its 401", ETH, "eth_blockNumber", 401,
     ERR("{\"code\":-32600,\"message\":\"Must be authenticated!\"}"), ONE, TRANS},
    {"eRPC upstream: normalized -32012 range too large (PE: wire codes)", ETH, "eth_getLogs", 200,
     ERR("{\"code\":-32012,\"message\":\"request exceeded max allowed range: block range is too wide\"}"), ONE,
     UNSUP},
    {"eRPC upstream: normalized -32016 unauthorized (PE: wire codes)", ETH, "eth_call", 200,
     ERR("{\"code\":-32016,\"message\":\"invalid api key\"}"), ONE, TRANS},
    {"eRPC upstream: normalized -32015 node timeout (PE: wire codes)", ETH, "trace_transaction", 200,
     ERR("{\"code\":-32015,\"message\":\"execution timeout\"}"), ONE, TRANS},
    {"geth errCodeVMError -32015 (PM §A2)", ETH, "eth_call", 200,
     ERR("{\"code\":-32015,\"message\":\"out of gas\"}"), ONE, DET},
    {"gateway 401 without JSON-RPC body", ETH, "eth_call", 401, "{\"message\":\"invalid project id\"}", ONE, TRANS,
     .bare = 1},
    {"404 wrong path, HTML", ETH, "eth_call", 404, "<html><body>Not Found</body></html>", ONE, TRANS, .bare = 1},
    {"405 method not allowed, empty body", ETH, "eth_call", 405, "", ONE, UNSUP, .bare = 1},
    {"502 from a CDN, HTML", ETH, "eth_call", 502, "<html><body><h1>502 Bad Gateway</h1></body></html>", ONE,
     TRANS, .bare = 1},

    /* ---- Solana, PM §A1 ---- */
    {"Solana public RPC 429 (PM §A1)", SOL, "getAccountInfo", 429,
     ERR("{\"code\":429,\"message\":\"Too many requests for a specific RPC call\"}"), ONE, RATE},
    {"Solana public RPC 429 body inside an HTTP 200", SOL, "getAccountInfo", 200,
     ERR("{\"code\":429,\"message\":\"Too many requests for a specific RPC call\"}"), ONE, RATE},
    {"Triton 429 (docs.triton.one ratelimits)", SOL, "getProgramAccounts", 429,
     ERR("{\"code\":429,\"message\":\"Connection rate limits exceeded, contact your app developer or "
         "support@rpcpool.com.\"}"), ONE, RATE},
    {"Helius 429 without JSON-RPC body (PM §A1)", SOL, "getBalance", 429, "Too Many Requests", ONE, RATE, .bare = 1},
    {"Solana public RPC 403: IP blocked (PM §A1)", SOL, "getBalance", 403,
     "<html><body>403 Forbidden</body></html>", ONE, TRANS, .bare = 1},
    {"Solana 502 without body", SOL, "getSlot", 502, "", ONE, TRANS, .bare = 1},

    /* ---- Solana, PM §B2 (messages from agave custom_error.rs) ---- */
    {"-32005 node behind, numSlotsBehind", SOL, "getBalance", 200,
     ERR("{\"code\":-32005,\"message\":\"Node is behind by 142 slots\",\"data\":{\"numSlotsBehind\":142}}"), ONE,
     MISS},
    {"-32005 node unhealthy refuses a broadcast: next endpoint", SOL, "sendTransaction", 200,
     ERR("{\"code\":-32005,\"message\":\"Node is unhealthy\",\"data\":{\"numSlotsBehind\":null}}"), ONE, MISS},
    {"-32007 slot skipped", SOL, "getBlock", 200,
     ERR("{\"code\":-32007,\"message\":\"Slot 251234567 was skipped, or missing due to ledger jump to recent "
         "snapshot\"}"), ONE, MISS},
    {"-32009 long-term storage slot skipped", SOL, "getBlock", 200,
     ERR("{\"code\":-32009,\"message\":\"Slot 12345 was skipped, or missing in long-term storage\"}"), ONE, MISS},
    {"-32012 scan error", SOL, "getProgramAccounts", 200,
     ERR("{\"code\":-32012,\"message\":\"scan aborted: The accumulated scan results exceeded the limit\"}"), ONE,
     TRANS},
    {"-32016 min context slot not reached", SOL, "getAccountInfo", 200,
     ERR("{\"code\":-32016,\"message\":\"Minimum context slot has not been reached\",\"data\":{\"contextSlot\":"
         "250000000}}"), ONE, MISS},
    {"-32015 unsupported transaction version", SOL, "getBlock", 200,
     ERR("{\"code\":-32015,\"message\":\"Transaction version (0) is not supported by the requesting client. Please "
         "try the request again with the following configuration parameter: \\\"maxSupportedTransactionVersion\\\": "
         "0\"}"), ONE, DET},
    {"-32002 preflight failure with logs (PM §B2)", SOL, "sendTransaction", 200, SOL_PREFLIGHT_LOGS, ONE, DET},
    {"-32002 already processed (PM §F)", SOL, "sendTransaction", 200, SOL_ALREADY_PROCESSED, ONE, KNOWN},
    {"-32002 blockhash not found", SOL, "sendTransaction", 200,
     ERR("{\"code\":-32002,\"message\":\"Transaction simulation failed: Blockhash not found\",\"data\":{\"accounts\":"
         "null,\"err\":\"BlockhashNotFound\",\"logs\":[],\"returnData\":null,\"unitsConsumed\":0}}"), ONE, DET},
    {"-32003 signature verification failure", SOL, "sendTransaction", 200,
     ERR("{\"code\":-32003,\"message\":\"Transaction signature verification failure\"}"), ONE, DET},
    {"-32001 block cleaned up", SOL, "getBlock", 200,
     ERR("{\"code\":-32001,\"message\":\"Block 100 cleaned up, does not exist on node. First available block: "
         "2000\"}"), ONE, MISS},
    {"-32004 block not available", SOL, "getBlock", 200,
     ERR("{\"code\":-32004,\"message\":\"Block not available for slot 251234567\"}"), ONE, MISS},
    {"-32010 key excluded from secondary index", SOL, "getProgramAccounts", 200,
     ERR("{\"code\":-32010,\"message\":\"TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA excluded from account secondary "
         "indexes; this RPC method unavailable for key\"}"), ONE, MISS},
    {"-32011 transaction history not available", SOL, "getSignaturesForAddress", 200,
     ERR("{\"code\":-32011,\"message\":\"Transaction history is not available from this node\"}"), ONE, MISS},
    {"-32014 block status not yet available", SOL, "getBlockTime", 200,
     ERR("{\"code\":-32014,\"message\":\"Block status not yet available for slot 251234567\"}"), ONE, MISS},
    {"-32017 epoch rewards period active", SOL, "getInflationReward", 200,
     ERR("{\"code\":-32017,\"message\":\"Epoch rewards period still active at slot 251234567\",\"data\":{"
         "\"currentBlockHeight\":1,\"rewardsCompleteBlockHeight\":2,\"slot\":251234567}}"), ONE, DET},
    {"-32018 slot not epoch boundary", SOL, "getInflationReward", 200,
     ERR("{\"code\":-32018,\"message\":\"Rewards cannot be found because slot 5 is not the epoch boundary. This may "
         "be due to gap in the queried node's local ledger or long-term storage\",\"data\":{\"slot\":5}}"), ONE,
     DET},
    {"-32019 long-term storage unreachable", SOL, "getBlock", 200,
     ERR("{\"code\":-32019,\"message\":\"Failed to query long-term storage; please try again\"}"), ONE, TRANS},
    {"-32008 no snapshot", SOL, "getHighestSnapshotSlot", 200,
     ERR("{\"code\":-32008,\"message\":\"No snapshot\"}"), ONE, TRANS},
    {"-32013 signature length mismatch", SOL, "sendTransaction", 200,
     ERR("{\"code\":-32013,\"message\":\"Transaction signature length mismatch\"}"), ONE, DET},
    {"-32006 precompile verification failure", SOL, "sendTransaction", 200,
     ERR("{\"code\":-32006,\"message\":\"Transaction precompile verification failure InvalidAccountIndex\"}"), ONE,
     DET},
    {"-32601 method not found (jsonrpc-core)", SOL, "getBlock", 200,
     ERR("{\"code\":-32601,\"message\":\"Method not found\"}"), ONE, UNSUP},
    {"-32602 invalid params (jsonrpc-core)", SOL, "getAccountInfo", 200,
     ERR("{\"code\":-32602,\"message\":\"Invalid param: Invalid\"}"), ONE, DET},
    {"-32600 invalid request (jsonrpc-core)", SOL, "getSlot", 200,
     ERR("{\"code\":-32600,\"message\":\"Invalid request\"}"), ONE, DET},
    {"-32603 internal error (jsonrpc-core)", SOL, "getSlot", 200,
     ERR("{\"code\":-32603,\"message\":\"Internal error\"}"), ONE, TRANS},
    {"-32700 parse error: this upstream's reply (N-SVM)", SOL, "getSlot", 200,
     ERR("{\"code\":-32700,\"message\":\"Parse error\"}"), ONE, TRANS},
    {"-32603 inside an HTTP 500", SOL, "getSlot", 500,
     ERR("{\"code\":-32603,\"message\":\"Internal error\"}"), ONE, TRANS},
};

/* Rules PM describes without a quotable payload, and adversarial shapes. */
static const payload_t edge_payloads[] = {
    {"shape: revert reason that reads like a rate limit (contract text)", ETH, "eth_call", 200,
     ERR("{\"code\":3,\"message\":\"execution reverted: rate limit exceeded\",\"data\":\"0x08c379a0\"}"), ONE, DET},
    {"shape: -32000 revert reason that reads like a rate limit", ETH, "eth_call", 200,
     ERR("{\"code\":-32000,\"message\":\"execution reverted: Too many requests\"}"), ONE, DET},
    {"shape: code 3 revert whose reason says block not found stays a revert", ETH, "eth_call", 200,
     ERR("{\"code\":3,\"message\":\"execution reverted: block not found\"}"), ONE, DET},
    {"shape: a trace whose call reverted with \"insufficient balance\" is a revert, not missing state", ETH,
     "trace_replayTransaction", 200, ERR("{\"code\":-32000,\"message\":\"execution reverted: insufficient balance\"}"),
     ONE, DET},
    {"shape: \"unknown transaction type\" is not \"known transaction\"", ETH, "eth_sendRawTransaction", 200,
     ERR("{\"code\":-32000,\"message\":\"unknown transaction type 5\"}"), ONE, DET},
    {"shape: Solana data.err AlreadyProcessed, message reworded by a proxy (PM §F)", SOL, "sendTransaction", 200,
     ERR("{\"code\":-32002,\"message\":\"Transaction simulation failed\",\"data\":{\"err\":\"AlreadyProcessed\","
         "\"logs\":[]}}"), ONE, KNOWN},
    {"shape: program log mentions AlreadyProcessed, err is an InstructionError", SOL, "sendTransaction", 200,
     ERR("{\"code\":-32002,\"message\":\"Transaction simulation failed: Error processing Instruction 0: custom "
         "program error: 0x1770\",\"data\":{\"accounts\":null,\"err\":{\"InstructionError\":[0,{\"Custom\":6000}]},"
         "\"logs\":[\"Program log: AnchorError occurred. Error Code: AlreadyProcessed. Error Number: 6000.\"],"
         "\"unitsConsumed\":4000}}"), ONE, DET},
    {"shape: -32002 already processed to a non-write stays DETERMINISTIC", SOL, "simulateTransaction", 200,
     SOL_ALREADY_PROCESSED, ONE, DET},
    {"shape: Solana -32000 rate words (N-SVM isRateLimitMessage)", SOL, "getBalance", 200,
     ERR("{\"code\":-32000,\"message\":\"Too many requests from your IP\"}"), ONE, RATE},
    {"shape: QuickNode credits limited on Solana's -32012 (PM §A1, §A2)", SOL, "getBalance", 200,
     ERR("{\"code\":-32012,\"message\":\"credits limited to 6000/sec\"}"), ONE, RATE},
    {"shape: codeless -32009 variant under -32000 (N-SVM)", SOL, "getBlock", 200,
     ERR("{\"code\":-32000,\"message\":\"Slot 12345 was skipped, or missing in long-term storage\"}"), ONE, MISS},
    {"shape: -32000 preflight wording (PM §B2)", SOL, "sendTransaction", 200,
     ERR("{\"code\":-32000,\"message\":\"Transaction simulation failed: Blockhash not found\"}"), ONE, DET},
    {"shape: -32000 anything else is retried (PM §B2)", SOL, "getSlot", 200,
     ERR("{\"code\":-32000,\"message\":\"Unexpected error\"}"), ONE, TRANS},
    {"shape: unknown newer agave code (N-SVM default)", SOL, "getSlot", 200,
     ERR("{\"code\":-32020,\"message\":\"Something new\"}"), ONE, TRANS},
    {"shape: Solana quota in a 402", SOL, "getSlot", 402, ERR("{\"code\":-32000,\"message\":\"Payment Required\"}"),
     ONE, RATE},
    {"shape: Helius 401 with a JSON-RPC body (N-SVM: status outranks body)", SOL, "getSlot", 401,
     ERR("{\"code\":-32600,\"message\":\"invalid api key provided\"}"), ONE, TRANS},
    {"shape: 403 with a JSON-RPC body outranks its -32602", SOL, "getSlot", 403,
     ERR("{\"code\":-32602,\"message\":\"Invalid params\"}"), ONE, TRANS},
    {"shape: Infura allowlist refusal in a 403 (EIP-1474 -32002)", ETH, "eth_call", 403,
     ERR("{\"code\":-32002,\"message\":\"rejected due to project ID settings\"}"), ONE, TRANS},
    {"shape: jsonrpsee -32005 batches not supported (PM §A2, unverified)", ETH, "eth_blockNumber", 200,
     ERR("{\"code\":-32005,\"message\":\"Batched requests are not supported by this server\"}"), ONE, UNSUP},
    {"shape: execution-apis simulateV1 -32005 fee cap too low", ETH, "eth_simulateV1", 200,
     ERR("{\"code\":-32005,\"message\":\"max fee per gas less than block base fee\"}"), ONE, DET},
    {"shape: Alchemy monthly capacity (N-EVM billing words)", ETH, "eth_call", 200,
     ERR("{\"code\":-32000,\"message\":\"Monthly capacity limit exceeded. Visit "
         "https://dashboard.alchemy.com/settings/billing to upgrade your scaling policy\"}"), ONE, RATE},
    {"shape: EIP-1474 -32004 method not supported", ETH, "eth_getProof", 200,
     ERR("{\"code\":-32004,\"message\":\"Method not supported\"}"), ONE, UNSUP},
    {"shape: EIP-1474 -32001 resource not found (Infura: unsupported)", ETH, "eth_getProof", 200,
     ERR("{\"code\":-32001,\"message\":\"Resource not found\"}"), ONE, UNSUP},
    {"shape: \"method ... is disabled\" under -32000 (N-EVM not found + method)", ETH, "trace_block", 200,
     ERR("{\"code\":-32000,\"message\":\"method trace_block is disabled\"}"), ONE, UNSUP},
    {"shape: geth -32600 invalid request (GETH rpc/errors.go)", ETH, "eth_call", 200,
     ERR("{\"code\":-32600,\"message\":\"invalid request\"}"), ONE, UNSUP},
    {"shape: erigon context deadline exceeded", ETH, "eth_getLogs", 200,
     ERR("{\"code\":-32000,\"message\":\"context deadline exceeded\"}"), ONE, TRANS},
    {"shape: already known with no method class (NULL method)", ETH, NULL, 200,
     ERR("{\"code\":-32000,\"message\":\"already known\"}"), ONE, DET},
    {"shape: backoff hint with a fraction", ETH, "eth_call", 429,
     ERR("{\"code\":-32005,\"message\":\"project ID request rate exceeded\",\"data\":{\"backoff_seconds\":1.5}}"),
     ONE, RATE, 1500},
    {"shape: backoff hint as an integer, data key after others", ETH, "eth_call", 200,
     ERR("{\"code\":-32005,\"message\":\"x\",\"data\":{\"a\":[1,{\"backoff_seconds\":9}],\"backoff_seconds\":2}}"),
     ONE, RATE, 2000},
    {"shape: backoff key is matched whole, not as a prefix", ETH, "eth_call", 200,
     ERR("{\"code\":-32005,\"message\":\"x\",\"data\":{\"backoff_seconds_max\":600,\"backoff_seconds\":2}}"),
     ONE, RATE, 2000},
    {"shape: JSON-RPC error inside a 503 is transient whatever its code", ETH, "eth_getBalance", 503,
     ERR("{\"code\":-32601,\"message\":\"the method eth_getBalance does not exist/is not available\"}"), ONE,
     TRANS},
    {"shape: backoff hint with an exponent gives none", ETH, "eth_call", 429,
     ERR("{\"code\":-32005,\"message\":\"x\",\"data\":{\"backoff_seconds\":3e1}}"), ONE, RATE, 0},
    {"shape: negative backoff gives none", ETH, "eth_call", 429,
     ERR("{\"code\":-32005,\"message\":\"x\",\"data\":{\"backoff_seconds\":-5}}"), ONE, RATE, 0},
    {"shape: backoff over a day gives none", ETH, "eth_call", 429,
     ERR("{\"code\":-32005,\"message\":\"x\",\"data\":{\"backoff_seconds\":100000}}"), ONE, RATE, 0},
    {"shape: backoff as a string gives none", ETH, "eth_call", 429,
     ERR("{\"code\":-32005,\"message\":\"x\",\"data\":{\"backoff_seconds\":\"30\"}}"), ONE, RATE, 0},
    {"shape: code 3 with a pruned node's words is missing data, not behind", ETH, "eth_call", 200,
     ERR("{\"code\":3,\"message\":\"missing trie node 7f5d (path ) state is not available\"}"), ONE, MISS},
    {"shape: backoff on a verdict that is not a rate limit is ignored", ETH, "eth_getBalance", 200,
     ERR("{\"code\":-32000,\"message\":\"header not found\",\"data\":{\"backoff_seconds\":30}}"), ONE, MISS, 0},
    {"shape: backoff of a batch member is read relative to the member", ETH, "eth_call", 200,
     "[{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":\"0x\"},{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32005,"
     "\"message\":\"project ID request rate exceeded\",\"data\":{\"backoff_seconds\":4}}}]", 1, RATE, 4000},
};

#define N_PAYLOADS (sizeof payloads / sizeof payloads[0])
#define N_EDGE (sizeof edge_payloads / sizeof edge_payloads[0])

/* ---- the gateway's decoding, as pool/pool_answer.c does it -------------- */

typedef struct judged {
    policy_verdict_t verdict;
    uint32_t ms;
    int via_http;            /* decided by policy_verdict_http */
    size_t rule;             /* deciding row when !via_http */
} judged_t;

static judged_t judge(const payload_t *p)
{
    judged_t j = {.verdict = POLICY_VERDICT_COUNT, .rule = (size_t)-1};
    const policy_method_t *m = p->method ? policy_method_lookup(p->chain, p->method, strlen(p->method)) : NULL;
    const char *buf = p->body;
    size_t len = strlen(p->body);
    if (p->member != NO_MEMBER) {
        wire_span_t items[16];
        size_t n = 0;
        cr_assert_eq(wire_envelope_scan_array(buf, len, items, 16, &n), SL_OK, "%s: batch does not scan", p->name);
        cr_assert_lt((size_t)p->member, n, "%s: no member %d", p->name, p->member);
        buf += items[p->member].off;
        len = items[p->member].len;
    }
    wire_envelope_t env;
    if (wire_envelope_scan(buf, len, &env) != SL_OK || (env.result.len != 0) == (env.error.len != 0)) {
        cr_assert(p->status < 200 || p->status > 299, "%s: unusable body in a 2xx", p->name);
        j.verdict = policy_verdict_http(p->chain, p->status);
        j.via_http = 1;
        return j;
    }
    if (env.error.len == 0) {
        j.via_http = p->status < 200 || p->status > 299;
        j.verdict = j.via_http ? policy_verdict_http(p->chain, p->status) : POLICY_VERDICT_SUCCESS;
        return j;
    }
    wire_rpc_error_t err;
    cr_assert_eq(wire_envelope_error(buf, env.error, &err), SL_OK, "%s: error object does not decode", p->name);
    j.ms = 12345; /* must be overwritten */
    j.verdict = policy_verdict_rpc_error_rule(p->chain, m, p->status, &err, buf, &j.ms, &j.rule);
    uint32_t ms2 = 777;
    cr_expect_eq(policy_verdict_rpc_error(p->chain, m, p->status, &err, buf, &ms2), j.verdict,
                 "%s: the two entry points disagree", p->name);
    cr_expect_eq(ms2, j.ms, "%s: the two entry points disagree on the hint", p->name);
    return j;
}

static void check_rows(const payload_t *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const payload_t *p = &rows[i];
        if (p->method != NULL) {
            const policy_method_t *m = policy_method_lookup(p->chain, p->method, strlen(p->method));
            cr_expect_str_eq(m->name, p->method, "%s: '%s' is not in the method table", p->name, p->method);
        }
        judged_t j = judge(p);
        cr_expect_eq(j.via_http, p->bare, "%s: decided by %s", p->name, j.via_http ? "HTTP status" : "error object");
        cr_expect_eq(j.verdict, p->want, "%s: got %s, want %s", p->name, policy_verdict_name(j.verdict),
                     policy_verdict_name(p->want));
        cr_expect_eq(j.ms, p->want_ms, "%s: retry hint %u ms, want %u", p->name, j.ms, p->want_ms);
    }
}

/* ---- payload tables ------------------------------------------------------ */

Test(verdict, real_provider_payloads)
{
    cr_assert_geq(N_PAYLOADS, 45);
    check_rows(payloads, N_PAYLOADS);
}

Test(verdict, edge_payloads)
{
    check_rows(edge_payloads, N_EDGE);
}

/* Every row of both tables decides at least one payload: a row that none
 * reaches is shadowed by an earlier one, or has no evidence behind it. */
Test(verdict, every_rule_row_is_exercised)
{
    for (unsigned c = 0; c < POLICY_CHAIN_COUNT; c++) {
        size_t n;
        const policy_verdict_rule_t *rules = policy_verdict_rules((policy_chain_t)c, &n);
        unsigned hits[128] = {0};
        cr_assert_leq(n, 128);
        const payload_t *tables[] = {payloads, edge_payloads};
        size_t sizes[] = {N_PAYLOADS, N_EDGE};
        for (size_t t = 0; t < 2; t++)
            for (size_t i = 0; i < sizes[t]; i++) {
                if (tables[t][i].chain != c || tables[t][i].bare)
                    continue;
                judged_t j = judge(&tables[t][i]);
                if (!j.via_http && j.rule < n)
                    hits[j.rule]++;
            }
        for (size_t r = 0; r < n; r++)
            cr_expect_gt(hits[r], 0, "%s row %zu (-> %s, code %lld, first word '%s') decides no payload",
                         policy_chain_name((policy_chain_t)c), r, policy_verdict_name(rules[r].verdict),
                         (long long)rules[r].code_lo, rules[r].words ? rules[r].words[0] : "");
    }
}

/* ---- write vs read ------------------------------------------------------- */

static policy_verdict_t verdict_of(policy_chain_t chain, const char *method, int status, const char *body)
{
    payload_t p = {"inline", chain, method, status, body, NO_MEMBER};
    return judge(&p).verdict;
}

Test(verdict, idempotency_verdicts_only_for_writes)
{
    static const char *const known[] = {
        ERR("{\"code\":-32000,\"message\":\"already known\"}"),
        ERR("{\"code\":-32000,\"message\":\"known transaction: 0xabc\"}"),
        ERR("{\"code\":-32010,\"message\":\"Transaction with the same hash was already imported.\"}"),
        ERR("{\"code\":-32000,\"message\":\"transaction already in mempool\"}"),
        ERR("{\"code\":-32000,\"message\":\"tx already in mempool\"}"),
        ERR("{\"code\":-32000,\"message\":\"transaction already exists\"}"),
        ERR("{\"code\":-32000,\"message\":\"ALREADY KNOWN\"}"),
    };
    static const char *const nonce[] = {
        ERR("{\"code\":-32000,\"message\":\"nonce too low: address 0x1, tx: 1 state: 2\"}"),
        ERR("{\"code\":-32003,\"message\":\"Nonce too low\"}"),
        ERR("{\"code\":-32000,\"message\":\"nonce has already been used\"}"),
    };
    /* one method of each class that can carry these answers */
    static const char *const others[] = {"eth_call", "eth_estimateGas", "eth_getTransactionByHash",
                                         "eth_getTransactionReceipt", "eth_getBalance", "trace_call"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        cr_expect_eq(verdict_of(ETH, "eth_sendRawTransaction", 200, known[i]), KNOWN, "write: %s", known[i]);
        for (size_t k = 0; k < sizeof others / sizeof others[0]; k++)
            cr_expect_eq(verdict_of(ETH, others[k], 200, known[i]), DET, "%s: %s", others[k], known[i]);
    }
    for (size_t i = 0; i < sizeof nonce / sizeof nonce[0]; i++) {
        cr_expect_eq(verdict_of(ETH, "eth_sendRawTransaction", 200, nonce[i]), NONCE, "write: %s", nonce[i]);
        for (size_t k = 0; k < sizeof others / sizeof others[0]; k++)
            cr_expect_eq(verdict_of(ETH, others[k], 200, nonce[i]), DET, "%s: %s", others[k], nonce[i]);
    }
    /* Solana: the same -32002 answer */
    cr_expect_eq(verdict_of(SOL, "sendTransaction", 200, SOL_ALREADY_PROCESSED), KNOWN);
    cr_expect_eq(verdict_of(SOL, "simulateTransaction", 200, SOL_ALREADY_PROCESSED), DET);
    cr_expect_eq(verdict_of(SOL, "getSignatureStatuses", 200, SOL_ALREADY_PROCESSED), DET);
    /* Ethereum wording means nothing special on Solana, and vice versa */
    cr_expect_neq(verdict_of(SOL, "sendTransaction", 200, known[0]), KNOWN);
    cr_expect_neq(verdict_of(ETH, "eth_sendRawTransaction", 200, SOL_ALREADY_PROCESSED), KNOWN);
}

/* ---- code collisions (PM §A2): the same code, one message per chain ------ */

Test(verdict, code_collisions_are_keyed_by_chain)
{
    static const struct {
        const char *eth_method, *eth_body;
        policy_verdict_t eth_want;
        const char *sol_method, *sol_body;
        policy_verdict_t sol_want;
    } cases[] = {
        {"eth_call", ERR("{\"code\":-32005,\"message\":\"exceeded project rate limit\"}"), RATE, "getBalance",
         ERR("{\"code\":-32005,\"message\":\"Node is behind by 142 slots\",\"data\":{\"numSlotsBehind\":142}}"), MISS},
        {"eth_call", ERR("{\"code\":-32007}"), RATE, "getBlock",
         ERR("{\"code\":-32007,\"message\":\"Slot 5 was skipped, or missing due to ledger jump to recent snapshot\"}"),
         MISS},
        {"eth_call", ERR("{\"code\":-32009}"), RATE, "getBlock",
         ERR("{\"code\":-32009,\"message\":\"Slot 5 was skipped, or missing in long-term storage\"}"), MISS},
        {"eth_getBalance", ERR("{\"code\":-32012,\"message\":\"credits limited to 6000/sec\"}"), RATE,
         "getProgramAccounts", ERR("{\"code\":-32012,\"message\":\"scan aborted: The accumulated scan results "
                                   "exceeded the limit\"}"), TRANS},
        {"eth_call", ERR("{\"code\":-32016,\"message\":\"over rate limit\"}"), RATE, "getAccountInfo",
         ERR("{\"code\":-32016,\"message\":\"Minimum context slot has not been reached\"}"), MISS},
        {"eth_call", ERR("{\"code\":-32015,\"message\":\"out of gas\"}"), DET, "getBlock",
         ERR("{\"code\":-32015,\"message\":\"Transaction version (0) is not supported by the requesting client\"}"),
         DET},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_expect_eq(verdict_of(ETH, cases[i].eth_method, 200, cases[i].eth_body), cases[i].eth_want, "eth: %s",
                     cases[i].eth_body);
        cr_expect_eq(verdict_of(SOL, cases[i].sol_method, 200, cases[i].sol_body), cases[i].sol_want, "sol: %s",
                     cases[i].sol_body);
    }
    /* agave's "Node is behind" message with -32005 on Ethereum is still a rate limit code */
    cr_expect_eq(verdict_of(ETH, "eth_call", 200, cases[0].sol_body), RATE);
    /* and Infura's -32005 on Solana is a node behind the tip */
    cr_expect_eq(verdict_of(SOL, "getBalance", 200, ERR("{\"code\":-32005,\"message\":\"x\"}")), MISS);
}

/* ---- HTTP-only answers ----------------------------------------------------- */

Test(verdict, http_status_without_body)
{
    static const struct {
        int status;
        policy_verdict_t want;
    } cases[] = {
        {200, OK_},    {204, OK_},    {402, RATE},   {429, RATE},   {401, TRANS}, {403, TRANS},
        {404, TRANS},  {408, TRANS},  {405, UNSUP},  {413, UNSUP},  {415, UNSUP}, {501, UNSUP},
        {500, TRANS},  {502, TRANS},  {503, TRANS},  {504, TRANS},  {599, TRANS}, {400, TRANS},
    };
    for (unsigned c = 0; c < POLICY_CHAIN_COUNT; c++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            cr_expect_eq(policy_verdict_http((policy_chain_t)c, cases[i].status), cases[i].want,
                         "%s: HTTP %d gives %s", policy_chain_name((policy_chain_t)c), cases[i].status,
                         policy_verdict_name(policy_verdict_http((policy_chain_t)c, cases[i].status)));
    for (int s = 100; s < 600; s++)
        cr_expect_lt(policy_verdict_http(ETH, s), POLICY_VERDICT_COUNT, "HTTP %d", s);
}

/* ---- table invariants ------------------------------------------------------ */

static int row_has_condition(const policy_verdict_rule_t *r)
{
    return r->coded || r->words != NULL || r->equals != NULL || r->data_key != NULL || r->status_lo != 0;
}

static int same_conditions(const policy_verdict_rule_t *a, const policy_verdict_rule_t *b)
{
    return a->coded == b->coded && a->code_lo == b->code_lo && a->code_hi == b->code_hi &&
           a->status_lo == b->status_lo && a->status_hi == b->status_hi && a->classes == b->classes &&
           a->words == b->words && a->also == b->also && a->unless == b->unless &&
           (a->equals == b->equals || (a->equals && b->equals && strcasecmp(a->equals, b->equals) == 0)) &&
           a->data_key == b->data_key && a->data_value == b->data_value;
}

static void check_words(const char *chain, size_t row, const char *what, const char *const *w)
{
    if (w == NULL)
        return;
    cr_expect_not_null(w[0], "%s row %zu: empty %s list", chain, row, what);
    for (; *w != NULL; w++)
        cr_expect_gt(strlen(*w), 0, "%s row %zu: an empty word in %s matches every message", chain, row, what);
}

Test(verdict, rule_tables_invariants)
{
    unsigned used = 0;
    for (unsigned c = 0; c < POLICY_CHAIN_COUNT; c++) {
        const char *cn = policy_chain_name((policy_chain_t)c);
        size_t n;
        const policy_verdict_rule_t *rules = policy_verdict_rules((policy_chain_t)c, &n);
        cr_assert_not_null(rules, "%s: no table", cn);
        cr_assert_gt(n, 10, "%s: table too small", cn);
        for (size_t i = 0; i < n; i++) {
            const policy_verdict_rule_t *r = &rules[i];
            cr_expect_lt(r->verdict, POLICY_VERDICT_COUNT, "%s row %zu: verdict", cn, i);
            used |= 1u << r->verdict;
            cr_expect_lt(r->classes, 1u << POLICY_CLASS_COUNT, "%s row %zu: unknown class bits", cn, i);
            if (r->coded)
                cr_expect_leq(r->code_lo, r->code_hi, "%s row %zu: empty code range", cn, i);
            else
                cr_expect(r->code_lo == 0 && r->code_hi == 0, "%s row %zu: a code range without coded", cn, i);
            if (r->status_lo != 0)
                cr_expect(r->status_lo >= 100 && r->status_lo <= r->status_hi && r->status_hi <= 599,
                          "%s row %zu: status range %u-%u", cn, i, r->status_lo, r->status_hi);
            else
                cr_expect_eq(r->status_hi, 0, "%s row %zu: status_hi without status_lo", cn, i);
            cr_expect_eq(r->data_key == NULL, r->data_value == NULL, "%s row %zu: data key and value", cn, i);
            cr_expect(r->also == NULL || r->words != NULL, "%s row %zu: also without words", cn, i);
            check_words(cn, i, "words", r->words);
            check_words(cn, i, "also", r->also);
            check_words(cn, i, "unless", r->unless);
            /* a row with no code, words, status or data matches everything: only
             * the deliberate catch-all, and only as the last row */
            if (r->catch_all) {
                cr_expect_eq(i, n - 1, "%s row %zu: a catch-all shadows every row after it", cn, i);
                cr_expect(!row_has_condition(r) && r->classes == 0 && r->unless == NULL,
                          "%s row %zu: a catch-all with conditions", cn, i);
            } else {
                cr_expect(row_has_condition(r), "%s row %zu: neither code, words, status nor data", cn, i);
            }
            /* the two idempotency verdicts exist for writes only */
            if (r->verdict == KNOWN || r->verdict == NONCE)
                cr_expect_eq(r->classes, 1u << POLICY_CLASS_WRITE, "%s row %zu: %s for non-writes", cn, i,
                             policy_verdict_name(r->verdict));
            for (size_t k = 0; k < i; k++)
                cr_expect(!same_conditions(&rules[k], r), "%s rows %zu and %zu have the same conditions", cn, k, i);
        }
        cr_expect(rules[n - 1].catch_all, "%s: the last row is not a catch-all", cn);
    }
    /* every verdict but SUCCESS is reachable from some table */
    for (unsigned v = 0; v < POLICY_VERDICT_COUNT; v++)
        if (v != OK_)
            cr_expect(used & (1u << v), "no rule gives %s", policy_verdict_name((policy_verdict_t)v));
    size_t n = 99;
    cr_expect_null(policy_verdict_rules(POLICY_CHAIN_COUNT, &n));
    cr_expect_eq(n, 0);
}

Test(verdict, names_cover_every_verdict)
{
    for (unsigned v = 0; v < POLICY_VERDICT_COUNT; v++) {
        const char *name = policy_verdict_name((policy_verdict_t)v);
        const char *str = policy_verdict_str((policy_verdict_t)v);
        cr_expect_not_null(name, "verdict %u", v);
        cr_expect_not_null(str, "verdict %u", v);
        cr_expect_str_neq(name, "UNKNOWN", "verdict %u has no name", v);
        cr_expect_str_neq(str, "unknown verdict", "verdict %u has no message", v);
        cr_expect_gt(strlen(name), 0);
        cr_expect_gt(strlen(str), 0);
        for (unsigned k = 0; k < v; k++)
            cr_expect_str_neq(policy_verdict_name((policy_verdict_t)k), name, "verdicts %u and %u share a name", k, v);
    }
    cr_expect_str_eq(policy_verdict_name(KNOWN), "ALREADY_KNOWN");
    cr_expect_str_eq(policy_verdict_name(NONCE), "NONCE_TOO_LOW");
    cr_expect_str_eq(policy_verdict_name(POLICY_VERDICT_COUNT), "UNKNOWN");
    cr_expect_str_eq(policy_verdict_str(POLICY_VERDICT_COUNT), "unknown verdict");
}

Test(verdict, chain_out_of_range_is_transient)
{
    wire_rpc_error_t err = {.has_code = 1, .code = -32000, .message = "already known"};
    uint32_t ms = 5;
    size_t rule = 1;
    cr_expect_eq(policy_verdict_rpc_error_rule(POLICY_CHAIN_COUNT, NULL, 200, &err, NULL, &ms, &rule), TRANS);
    cr_expect_eq(ms, 0);
    cr_expect_eq(rule, 0);
    /* a NULL buf (no data to read) is allowed */
    cr_expect_eq(policy_verdict_rpc_error(ETH, NULL, 200, &err, NULL, &ms), DET);
    wire_rpc_error_t rate = {.has_code = 1, .code = -32005, .message = "rate limit exceeded"};
    cr_expect_eq(policy_verdict_rpc_error(ETH, NULL, 200, &rate, NULL, &ms), RATE);
    cr_expect_eq(ms, 0);
}
