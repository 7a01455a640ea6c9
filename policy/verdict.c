/* policy/verdict.c: the rule tables behind policy/verdict.h.
 *
 * Every row cites the fact it encodes (reference/providers.md section, or the
 * provider source). Order matters: first match wins, so specific rows
 * (a provider quirk, a code collision) come before the generic word lists. */
#include "policy/verdict.h"

#include <string.h>
#include <strings.h>

#include "wire/envelope.h"

static const char *const verdict_names[POLICY_VERDICT_COUNT] = {
#define POLICY_VERDICT_NAME_(name, msg) [POLICY_VERDICT_##name] = #name,
    POLICY_VERDICT_MAP(POLICY_VERDICT_NAME_)
#undef POLICY_VERDICT_NAME_
};

static const char *const verdict_msgs[POLICY_VERDICT_COUNT] = {
#define POLICY_VERDICT_MSG_(name, msg) [POLICY_VERDICT_##name] = msg,
    POLICY_VERDICT_MAP(POLICY_VERDICT_MSG_)
#undef POLICY_VERDICT_MSG_
};

const char *policy_verdict_name(policy_verdict_t v)
{
    return (unsigned)v < POLICY_VERDICT_COUNT ? verdict_names[v] : "UNKNOWN";
}

const char *policy_verdict_str(policy_verdict_t v)
{
    return (unsigned)v < POLICY_VERDICT_COUNT ? verdict_msgs[v] : "unknown verdict";
}

static const char *const flag_names[POLICY_VERDICT_FLAG_COUNT] = {
#define POLICY_VERDICT_FLAG_NAME_(name, msg) [POLICY_VERDICT_FLAG_BIT_##name] = #name,
    POLICY_VERDICT_FLAG_MAP(POLICY_VERDICT_FLAG_NAME_)
#undef POLICY_VERDICT_FLAG_NAME_
};

const char *policy_verdict_flag_name(unsigned b)
{
    return b < POLICY_VERDICT_FLAG_COUNT ? flag_names[b] : "UNKNOWN";
}

/* ---- row vocabulary ---------------------------------------------------- */

#define WORDS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define CODE(c) .coded = 1, .code_lo = (c), .code_hi = (c)
#define CODES(lo, hi) .coded = 1, .code_lo = (lo), .code_hi = (hi)
#define STATUS(lo, hi) .status_lo = (lo), .status_hi = (hi)
#define WRITES .classes = 1u << POLICY_CLASS_WRITE
#define READS .classes = 1u << POLICY_CLASS_READ
#define V(x) .verdict = POLICY_VERDICT_##x
#define F(x) .flags = POLICY_VERDICT_F_##x

/* §F, SRT: a node that already holds this exact transaction. "known
 * transaction" is a substring of "unknown transaction", hence the unless. */
static const char *const *const known_words =
    WORDS("already known", "known transaction", "already imported", "already in mempool", "already in the mempool",
          "transaction already exists", "already have transaction", "already exists in mempool");
static const char *const *const known_unless = WORDS("unknown transaction");

/* §F, SRT: the nonce is used: maybe by this very transaction, mined. */
static const char *const *const nonce_low_words =
    WORDS("nonce too low", "nonce is too low", "nonce has already been used");

/* §A3 2 (N-EVM): the request is too big for this endpoint's caps, which
 * differ per provider. Before the rate words: "range limit exceeded", and
 * Infura's -32005 "query returned more than 10000 results". The eth_getLogs
 * wordings each vendor uses (tests/policy/test_verdict_flags.c quotes one
 * per vendor, with its source) all land here: Alchemy "Log response size
 * exceeded ... up to a 2K block range" and "... up to a 500 block range",
 * Infura "query returned more than 10000 results" and "range 1000000
 * exceeds limit of 10000", Ankr "block range is too wide" and "maximum
 * [from, to] blocks distance", publicnode "exceed maximum block range:
 * 50000", geth "exceed maximum block range 5000", Erigon "query block range
 * exceeds server limit" and "query returns too many logs", reth and
 * llamarpc "query exceeds max results 20000". */
static const char *const *const too_large_words =
    WORDS("block range", "range too large", "range is too large", "too wide", "exceeds the range", "max range",
          "max allowed range", "maximum block range", "range limit", "returned more than", "exceeds max results",
          "too many results", "response too large", "response size", "is too big", "query exceeds limit",
          "exceeds limit of", "logs over more", "blocks distance", "too many logs");

/* §A1 and §A3 3: every shape a provider uses to say "slow down" or "pay"
 * (QuickNode's per-item -32012 "credits limited to 6000/sec" included). */
static const char *const *const rate_words =
    WORDS("rate limit", "rate-limit", "ratelimit", "too many requests", "request limit", "requests limited to",
          "limit exceeded", "has exceeded", "exceeded the quota", "reached the quota", "request rate",
          "daily request count", "requests per second", "compute units", "credits limited", "capacity",
          "throughput", "quota", "payment required", "monthly", "free tier", "/billing", "upgrade your tier",
          "under too much load", "no server available", "connection limit", "throttled");

/* N-SVM isRateLimitMessage, plus QuickNode's per-item "credits limited". Narrow
 * on purpose: agave's own messages must never match (-32012 "exceeded the limit"). */
static const char *const *const sol_rate_words =
    WORDS("too many requests", "rate limit", "rate-limit", "requests per second", "request limit reached",
          "throttled", "credits limited");

/* The part of the missing-data words that says "not there yet": a block
 * above this node's head (geth "header not found" and "unknown block",
 * Avalanche's "after last accepted block", Cosmos EVMs' "height must be less
 * than or equal"). Pruned state says nothing of the head and stays without
 * the flag, and so does a tag the node does not serve ("safe block not
 * found": §A3 4). */
static const char *const *const behind_words =
    WORDS("header not found", "unknown block", "block not found", "could not find block",
          "height must be less than or equal", "greater than latest", "after last accepted block",
          "block not available", "block is not available");
static const char *const *const tag_words = WORDS("pending block", "safe block", "finalized block");

/* §A3 5 (U-EVM IsMissingDataError) and §A3 4 (block tags another node may have). */
static const char *const *const missing_words =
    WORDS("missing trie node", "header not found", "could not find block", "unknown block", "block not found",
          "height must be less than or equal", "block height passed is invalid", "cannot query unfinalized",
          "height is not available", "genesis is not traceable", "no historical rpc", "transaction not found",
          "cannot find transaction", "after last accepted block", "no state available", "state is not available",
          "trie does not", "greater than latest", "not currently canonical", "requested data is not available",
          "pending block is not available", "not a supported commitment", "pruned", "not yet indexed",
          "state histories");

static const char *const *const unsupported_words =
    WORDS("method not found", "does not exist/is not available", "not supported", "unsupported method",
          "method not allowed", "not whitelisted", "not allowed to access method", "is not available on",
          "not included in your current plan");

/* §A3 11, and B1 "App is inactive": a problem with our key at this provider. */
static const char *const *const auth_words =
    WORDS("unauthorized", "invalid api key", "be authenticated", "access key", "access denied", "forbidden",
          "key is inactive", "app is inactive");

/* §A3 6, N-EVM: the EVM ran and reverted or halted; any node agrees. */
static const char *const *const revert_words =
    WORDS("reverted", "vm exception", "vm execution error", "transaction: revert", "evm error:");

static const char *const *const transient_words =
    WORDS("timeout", "timed out", "deadline exceeded", "internal error", "server error", "temporarily unavailable",
          "try again", "bad gateway", "service unavailable", "not healthy", "upstream");

/* Rows shared by both chains' HTTP-status block (brief: a JSON-RPC error in a
 * 429 is a rate limit whatever its code; in a 5xx, transient). 401/403 judge
 * our credential at this endpoint, never the call (N-SVM: they outrank the body). */
#define STATUS_ROWS                                                                                                 \
    {STATUS(429, 429), V(RATE_LIMITED)}, {STATUS(402, 402), V(RATE_LIMITED)}, {STATUS(500, 599), V(TRANSIENT)},   \
        {STATUS(401, 401), V(TRANSIENT)}, {STATUS(403, 403), V(TRANSIENT)}

static const policy_verdict_rule_t eth_rules[] = {
    /* OP-Stack sequencer (proxyd ErrOverSenderRateLimit, -32017 in a 429): every
     * provider forwards to the same sequencer, trying elsewhere cannot help (§A3 3) */
    {.words = WORDS("sender is over rate limit"), V(DETERMINISTIC)},
    /* §F: broadcast idempotency; facts about the transaction, whatever the status */
    {WRITES, .words = known_words, .unless = known_unless, V(ALREADY_KNOWN)},
    {WRITES, .words = nonce_low_words, V(NONCE_TOO_LOW)},
    STATUS_ROWS,
    /* the same answers to a non-write keep their meaning: another node agrees */
    {.words = known_words, .unless = known_unless, V(DETERMINISTIC)},
    {.words = nonce_low_words, V(DETERMINISTIC)},
    /* B1: not special-cased by eRPC; the conflicting transaction is gossiped, so
     * another node says the same, and the client must see it to bump the fee */
    {.words = WORDS("replacement transaction underpriced"), V(DETERMINISTIC)},
    /* B1, N-EVM: replaying a mined transaction on a node without its pre-state */
    {READS, .words = WORDS("insufficient funds", "insufficient balance"), .unless = WORDS("reverted"),
     V(MISSING_DATA)},
    {.words = WORDS("insufficient funds", "insufficient balance"), V(DETERMINISTIC)},
    /* §A1: Infura (429/-33200, 402/-33000), Alchemy WS, QuickNode put it in the body */
    {CODE(429), V(RATE_LIMITED)},
    {CODE(402), V(RATE_LIMITED)},
    /* B1: geth eth_simulateV1 validation (-38010 nonce low ... -38026 client limit) */
    {CODES(-38999, -38000), V(DETERMINISTIC)},
    /* B1, VEND alchemy.go: Alchemy's code 3 "Unknown block" near the tip */
    {CODE(3), .words = behind_words, .unless = WORDS("reverted"), V(MISSING_DATA), F(BEHIND)},
    {CODE(3), .words = missing_words, .unless = WORDS("reverted"), V(MISSING_DATA)},
    {CODE(3), V(DETERMINISTIC)},          /* execution reverted, data = revert bytes */
    /* before any word list: a revert reason is contract text ("...: rate limit") */
    {.words = revert_words, V(DETERMINISTIC)},
    /* geth errBlockRangeIntoFuture (-32602): a toBlock above this node's head;
     * before the range words it also holds */
    {.words = WORDS("beyond current head"), V(MISSING_DATA), F(BEHIND)},
    /* geth errInvalidBlockRange (fromBlock > toBlock): no narrower range helps,
     * so no flag; the verdict stays the one the range words gave it */
    {.words = WORDS("invalid block range"), V(UNSUPPORTED)},
    {.words = too_large_words, V(UNSUPPORTED), F(LOGS_RANGE)},
    /* QuickNode -32614 (in an HTTP 413) "eth_getLogs is limited to a 10,000
     * range", the same words at Blast and 1rpc; "range" is required: "limited
     * to a" alone is how some providers word a rate */
    {.words = WORDS("limited to a"), .also = WORDS("range"), V(UNSUPPORTED), F(LOGS_RANGE)},
    /* §A2: BSC dataseed's bare "limit exceeded" means eth_getLogs is disabled there */
    {CODE(-32005), .equals = "limit exceeded", V(UNSUPPORTED)},
    {CODE(-32005), .words = WORDS("not supported"), V(UNSUPPORTED)},  /* jsonrpsee: no batches */
    /* execution-apis eth_simulateV1: -32005 "fee cap too low" */
    {CODE(-32005), .words = WORDS("fee", "gas"), V(DETERMINISTIC)},
    {CODE(-32005), V(RATE_LIMITED)},      /* EIP-1474, Infura (backoff_seconds), Tenderly */
    {CODE(-32007), V(RATE_LIMITED)},      /* QuickNode capacity (VEND quicknode.go) */
    {CODE(-32009), V(RATE_LIMITED)},      /* QuickNode capacity; jsonrpsee "Server is busy" */
    /* §A2: Base "over rate limit"; else eRPC's "unauthorized" or simulateV1 timeout */
    {CODE(-32016), .words = WORDS("rate limit"), V(RATE_LIMITED)},
    {CODE(-32016), V(TRANSIENT)},
    {CODE(-32029), V(RATE_LIMITED)},      /* TheRPC, in an HTTP 200 */
    /* §A2: geth errCodeVMError; eRPC's normalized -32015 is a node timeout */
    {CODE(-32015), .words = WORDS("timeout", "timed out"), V(TRANSIENT)},
    {CODE(-32015), V(DETERMINISTIC)},
    {.words = rate_words, .unless = WORDS("gas", "fee"), V(RATE_LIMITED)},
    {.words = behind_words, .unless = tag_words, V(MISSING_DATA), F(BEHIND)},
    {.words = missing_words, V(MISSING_DATA)},
    {.words = WORDS("historical state"), .also = WORDS("not available", "unavailable"), V(MISSING_DATA)},
    {CODE(-32601), V(UNSUPPORTED)},
    {CODE(-32004), V(UNSUPPORTED)},       /* EIP-1474 not supported; Infura */
    {CODE(-32001), V(UNSUPPORTED)},       /* EIP-1474 resource not found; Infura */
    {.words = WORDS("not found", "does not exist", "not available", "is disabled"),
     .also = WORDS("method", "module"), V(UNSUPPORTED)},
    {.words = unsupported_words, V(UNSUPPORTED)},
    {.words = auth_words, V(TRANSIENT)},
    /* §A3 8: Monad's pool verdicts (-32603): the node is healthy, it said no */
    {.words = WORDS("existing transaction had higher priority", "newer transaction had higher priority",
                    "transaction fee too low"),
     V(DETERMINISTIC)},
    {.equals = "rejected", V(DETERMINISTIC)},
    /* §A3 10: malformed transaction bytes, whatever the code */
    {.words = WORDS("rlp:", "invalid transaction", "transaction too short", "invalid sender"), V(DETERMINISTIC)},
    /* B1: invalid params/request are retried elsewhere: providers differ */
    {CODE(-32602), V(UNSUPPORTED)},
    {CODE(-32600), V(UNSUPPORTED)},
    {CODE(-32603), V(TRANSIENT)},
    {CODE(-32002), V(TRANSIENT)},         /* EIP-1474 resource unavailable */
    {.words = transient_words, V(TRANSIENT)},
    /* An unrecognised error came from a node that understood the call: another
     * node would most likely say the same (and TRANSIENT would count against a
     * healthy endpoint's breaker and make every unknown write ambiguous). */
    {.catch_all = 1, V(DETERMINISTIC)},
};

/* Solana: codes from agave custom_error.rs, verdicts from §B2 (N-SVM). */
static const policy_verdict_rule_t sol_rules[] = {
    /* §F: a duplicate broadcast; the message is agave's, data.err the TransactionError */
    {WRITES, CODE(-32002), .words = WORDS("already been processed"), V(ALREADY_KNOWN)},
    {WRITES, CODE(-32002), .data_key = "err", .data_value = "AlreadyProcessed", V(ALREADY_KNOWN)},
    STATUS_ROWS,
    {CODE(429), V(RATE_LIMITED)},         /* Solana public RPC, Triton: in the body */
    {.words = sol_rate_words, V(RATE_LIMITED)},  /* -32000 bucket, QuickNode -32012 */
    {CODE(-32005), V(MISSING_DATA), F(BEHIND)}, /* node is behind (data.numSlotsBehind) */
    {CODE(-32001), V(MISSING_DATA)},      /* block cleaned up */
    {CODE(-32004), V(MISSING_DATA), F(BEHIND)}, /* block not available (yet) for the slot */
    {CODE(-32007), V(MISSING_DATA)},      /* slot skipped, or lost to a ledger jump */
    {CODE(-32009), V(MISSING_DATA)},      /* skipped, or missing in long-term storage */
    {CODE(-32010), V(MISSING_DATA)},      /* key excluded from this node's secondary index */
    {CODE(-32011), V(MISSING_DATA)},      /* transaction history not available */
    {CODE(-32014), V(MISSING_DATA), F(BEHIND)}, /* block status not yet available */
    {CODE(-32016), V(MISSING_DATA), F(BEHIND)}, /* minimum context slot not reached */
    {CODE(-32008), V(TRANSIENT)},         /* no snapshot */
    {CODE(-32012), V(TRANSIENT)},         /* scan error */
    {CODE(-32019), V(TRANSIENT)},         /* long-term storage unreachable */
    {CODE(-32002), V(DETERMINISTIC)},     /* preflight failure: data has the logs */
    {CODE(-32003), V(DETERMINISTIC)},     /* signature verification failure */
    {CODE(-32006), V(DETERMINISTIC)},     /* precompile verification failure */
    {CODE(-32013), V(DETERMINISTIC)},     /* signature length mismatch */
    {CODE(-32015), V(DETERMINISTIC)},     /* unsupported transaction version */
    {CODE(-32017), V(DETERMINISTIC)},     /* epoch rewards period active, cluster-wide */
    {CODE(-32018), V(DETERMINISTIC)},     /* slot not epoch boundary */
    /* N-SVM: codeless variants of -32009 / -32007 from proxies that rewrite codes */
    {CODE(-32000), .words = WORDS("missing in long-term storage", "ledger jump"), V(MISSING_DATA)},
    {CODE(-32000),
     .words = WORDS("preflight", "transaction simulation failed", "blockhash not found", "invalid signature",
                    "invalid transaction", "invalid instruction"),
     V(DETERMINISTIC)},
    {CODE(-32000), V(TRANSIENT)},
    {CODE(-32601), V(UNSUPPORTED)},
    {CODE(-32602), V(DETERMINISTIC)},
    {CODE(-32600), V(DETERMINISTIC)},
    {CODE(-32603), V(TRANSIENT)},
    {CODE(-32700), V(TRANSIENT)},         /* this upstream's reply did not parse */
    /* N-SVM: an unknown (newer agave) or missing code is retried elsewhere */
    {.catch_all = 1, V(TRANSIENT)},
};

static const struct {
    const policy_verdict_rule_t *rules;
    size_t count;
} chain_rules[POLICY_CHAIN_COUNT] = {
    [POLICY_CHAIN_ETHEREUM] = {eth_rules, sizeof(eth_rules) / sizeof(eth_rules[0])},
    [POLICY_CHAIN_SOLANA] = {sol_rules, sizeof(sol_rules) / sizeof(sol_rules[0])},
};

const policy_verdict_rule_t *policy_verdict_rules(policy_chain_t chain, size_t *count)
{
    if ((unsigned)chain >= POLICY_CHAIN_COUNT) {
        *count = 0;
        return NULL;
    }
    *count = chain_rules[chain].count;
    return chain_rules[chain].rules;
}

/* ---- HTTP answers without a JSON-RPC body ------------------------------- */

static const struct {
    uint16_t lo, hi;
    policy_verdict_t verdict;
} status_rules[] = {
    {200, 299, V(SUCCESS)},
    {402, 402, V(RATE_LIMITED)},   /* Infura daily quota (§A1) */
    {429, 429, V(RATE_LIMITED)},   /* includes a CDN's non-JSON 429 (N-SVM) */
    {405, 405, V(UNSUPPORTED)},
    {413, 413, V(UNSUPPORTED)},    /* Chainstack's 1 MB body cap (§A1): others may take it */
    {415, 415, V(UNSUPPORTED)},    /* N-EVM */
    {501, 501, V(UNSUPPORTED)},
};

policy_verdict_t policy_verdict_http(policy_chain_t chain, int http_status)
{
    (void)chain;
    for (size_t i = 0; i < sizeof status_rules / sizeof status_rules[0]; i++)
        if (http_status >= status_rules[i].lo && http_status <= status_rules[i].hi)
            return status_rules[i].verdict;
    /* 5xx, 401/403 (a key problem at this provider, or Solana's IP block),
     * 404 (wrong URL), and any other status: this endpoint cannot serve. */
    return POLICY_VERDICT_TRANSIENT;
}

/* ---- matching ------------------------------------------------------------ */

static int has_any(const char *msg, const char *const *words)
{
    for (; *words != NULL; words++)
        if (strcasestr(msg, *words) != NULL)
            return 1;
    return 0;
}

static int equals_trimmed(const char *msg, const char *want)
{
    while (*msg == ' ' || *msg == '\t' || *msg == '\n')
        msg++;
    size_t n = strlen(msg), w = strlen(want);
    while (n > 0 && (msg[n - 1] == ' ' || msg[n - 1] == '\t' || msg[n - 1] == '\n'))
        n--;
    return n == w && strncasecmp(msg, want, n) == 0;
}

/* err->data came from wire_envelope_error: already validated. */
static int data_member_is(const char *buf, const wire_rpc_error_t *err, const char *key, const char *want)
{
    wire_span_t v = wire_json_member(buf, err->data, key);
    char text[64];
    return wire_json_kind(buf, v) == WIRE_JSON_STRING && wire_json_string(buf, v, text, sizeof text) == SL_OK &&
           strcmp(text, want) == 0;
}

static int rule_matches(const policy_verdict_rule_t *r, const policy_method_t *method, int http_status,
                        const wire_rpc_error_t *err, const char *buf)
{
    if (r->coded && (!err->has_code || err->code < r->code_lo || err->code > r->code_hi))
        return 0;
    if (r->status_lo != 0 && (http_status < r->status_lo || http_status > r->status_hi))
        return 0;
    if (r->classes != 0 && (method == NULL || !(r->classes & (1u << method->cls))))
        return 0;
    if (r->words != NULL && !has_any(err->message, r->words))
        return 0;
    if (r->also != NULL && !has_any(err->message, r->also))
        return 0;
    if (r->unless != NULL && has_any(err->message, r->unless))
        return 0;
    if (r->equals != NULL && !equals_trimmed(err->message, r->equals))
        return 0;
    if (r->data_key != NULL && !data_member_is(buf, err, r->data_key, r->data_value))
        return 0;
    return 1;
}

/* Infura's legacy -32005 carries data.backoff_seconds (a JSON number, e.g.
 * 30.0). Read as decimal digits: a sign or an exponent gives no hint, nor
 * does anything over a day. */
static uint32_t backoff_hint_ms(const wire_rpc_error_t *err, const char *buf)
{
    wire_span_t v = wire_json_member(buf, err->data, "backoff_seconds");
    if (wire_json_kind(buf, v) != WIRE_JSON_NUMBER)
        return 0;
    const char *p = buf + v.off, *end = p + v.len;
    uint32_t whole = 0, frac_ms = 0;
    if (*p < '0' || *p > '9')
        return 0;
    for (; p < end && *p >= '0' && *p <= '9'; p++)
        if ((whole = whole * 10 + (uint32_t)(*p - '0')) > 86400)
            return 0;
    if (p < end && *p == '.')
        for (uint32_t scale = 100; ++p < end && *p >= '0' && *p <= '9'; scale /= 10)
            frac_ms += (uint32_t)(*p - '0') * scale;
    return p == end ? whole * 1000 + frac_ms : 0;
}

policy_verdict_t policy_verdict_rpc_error_rule(policy_chain_t chain, const policy_method_t *method, int http_status,
                                               const wire_rpc_error_t *err, const char *buf, uint32_t *retry_after_ms,
                                               size_t *rule)
{
    *retry_after_ms = 0;
    size_t n;
    const policy_verdict_rule_t *rules = policy_verdict_rules(chain, &n);
    policy_verdict_t v = POLICY_VERDICT_TRANSIENT; /* only for a chain out of range */
    *rule = n;
    for (size_t i = 0; i < n; i++) {
        if (rule_matches(&rules[i], method, http_status, err, buf)) {
            v = rules[i].verdict;
            *rule = i;
            break;
        }
    }
    if (v == POLICY_VERDICT_RATE_LIMITED)
        *retry_after_ms = backoff_hint_ms(err, buf);
    return v;
}

policy_verdict_t policy_verdict_rpc_error_flags(policy_chain_t chain, const policy_method_t *method, int http_status,
                                                const wire_rpc_error_t *err, const char *buf, uint32_t *retry_after_ms,
                                                unsigned *flags)
{
    size_t rule, n;
    policy_verdict_t v = policy_verdict_rpc_error_rule(chain, method, http_status, err, buf, retry_after_ms, &rule);
    const policy_verdict_rule_t *rules = policy_verdict_rules(chain, &n);
    *flags = rule < n ? rules[rule].flags : 0;
    return v;
}

policy_verdict_t policy_verdict_rpc_error(policy_chain_t chain, const policy_method_t *method, int http_status,
                                          const wire_rpc_error_t *err, const char *buf, uint32_t *retry_after_ms)
{
    size_t rule;
    return policy_verdict_rpc_error_rule(chain, method, http_status, err, buf, retry_after_ms, &rule);
}
