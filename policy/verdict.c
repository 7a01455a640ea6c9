#include "policy/verdict.h"

#include <cjson/cJSON.h>
#include <string.h>

#define V_OK POLICY_VERDICT_SUCCESS
#define V_DET POLICY_VERDICT_DETERMINISTIC
#define V_TRANS POLICY_VERDICT_TRANSIENT
#define V_RATE POLICY_VERDICT_RATE_LIMITED
#define V_MISS POLICY_VERDICT_MISSING_DATA
#define V_UNSUP POLICY_VERDICT_UNSUPPORTED

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

/* A rule: matches when the code matches (or any_code) and, if words is set,
 * the message contains one of them (case-insensitive) and none of `unless`. */
typedef struct rule {
    int64_t code;
    uint8_t any_code;
    const char *const *words;
    const char *const *unless;
    policy_verdict_t verdict;
} rule_t;

#define WORDS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define ANY 0, 1

/* reference/providers.md §A1: every shape a provider uses to say "slow down". */
static const char *const *const rate_words =
    WORDS("rate limit", "rate-limit", "ratelimit", "too many requests", "request limit", "limit exceeded",
          "exceeded the", "has exceeded", "exceeded project", "request rate", "daily request count",
          "compute units", "credits limited", "capacity", "throughput", "quota", "payment required",
          "monthly", "free tier");

static const rule_t eth_rules[] = {
    /* OP-Stack sequencer: shared by every provider, trying elsewhere cannot help */
    {ANY, WORDS("sender is over rate limit"), NULL, V_DET},
    {429, 0, NULL, NULL, V_RATE},
    {-32005, 0, NULL, NULL, V_RATE},
    {-32029, 0, NULL, NULL, V_RATE},
    {-32007, 0, NULL, NULL, V_RATE},   /* QuickNode capacity */
    {-32009, 0, NULL, NULL, V_RATE},
    {-32012, 0, WORDS("credit"), NULL, V_RATE},
    {ANY, rate_words, WORDS("gas", "execution reverted"), V_RATE},
    /* §A3 5: pruned or lagging node */
    {ANY, WORDS("missing trie node", "header not found", "unknown block", "block not found", "could not find block",
                "historical state", "state is not available", "pruned", "not yet indexed", "state histories"),
     NULL, V_MISS},
    {-32601, 0, NULL, NULL, V_UNSUP},
    {-32004, 0, NULL, NULL, V_UNSUP},
    {ANY, WORDS("method not found", "does not exist/is not available", "not supported", "unsupported method",
                "method not allowed", "not whitelisted", "is not available on"),
     NULL, V_UNSUP},
    {ANY, WORDS("unauthorized", "invalid api key", "be authenticated", "access key", "access denied", "forbidden"),
     NULL, V_TRANS},
    {3, 0, NULL, NULL, V_DET},                   /* execution reverted, with data */
    {-32602, 0, NULL, NULL, V_DET},
    {-32600, 0, NULL, NULL, V_DET},
    {-32603, 0, NULL, NULL, V_TRANS},
    {-32002, 0, NULL, NULL, V_TRANS},            /* EIP-1474 resource unavailable */
    {ANY, WORDS("timeout", "timed out", "internal error", "server error", "temporarily unavailable", "try again",
                "upstream", "bad gateway", "service unavailable"),
     WORDS("execution"), V_TRANS},
};

/* Solana: reference/providers.md §B2 (agave's custom_error.rs codes). */
static const rule_t sol_rules[] = {
    {429, 0, NULL, NULL, V_RATE},
    {-32005, 0, NULL, NULL, V_MISS},             /* node is behind */
    {-32001, 0, NULL, NULL, V_MISS},             /* block cleaned up */
    {-32004, 0, NULL, NULL, V_MISS},             /* block not available */
    {-32007, 0, NULL, NULL, V_MISS},             /* slot skipped */
    {-32009, 0, NULL, NULL, V_MISS},             /* missing in long-term storage */
    {-32010, 0, NULL, NULL, V_MISS},             /* key excluded from secondary index */
    {-32011, 0, NULL, NULL, V_MISS},             /* transaction history not available */
    {-32014, 0, NULL, NULL, V_MISS},             /* block status not yet available */
    {-32016, 0, NULL, NULL, V_MISS},             /* minimum context slot not reached */
    {-32008, 0, NULL, NULL, V_TRANS},            /* no snapshot */
    {-32012, 0, NULL, NULL, V_TRANS},            /* scan error */
    {-32019, 0, NULL, NULL, V_TRANS},            /* long-term storage unreachable */
    {-32002, 0, NULL, NULL, V_DET},              /* preflight failure: data has the logs */
    {-32003, 0, NULL, NULL, V_DET},
    {-32006, 0, NULL, NULL, V_DET},
    {-32013, 0, NULL, NULL, V_DET},
    {-32015, 0, NULL, NULL, V_DET},
    {-32017, 0, NULL, NULL, V_DET},
    {-32018, 0, NULL, NULL, V_DET},
    {-32000, 0, rate_words, NULL, V_RATE},
    {-32000, 0,
     WORDS("preflight", "transaction simulation failed", "blockhash not found", "invalid signature",
           "invalid transaction", "invalid instruction"),
     NULL, V_DET},
    {-32000, 0, NULL, NULL, V_TRANS},
    {-32601, 0, NULL, NULL, V_UNSUP},
    {-32602, 0, NULL, NULL, V_DET},
    {-32600, 0, NULL, NULL, V_DET},
    {-32603, 0, NULL, NULL, V_TRANS},
    {-32700, 0, NULL, NULL, V_TRANS},
    {ANY, rate_words, NULL, V_RATE},
};

static const struct {
    const rule_t *rules;
    size_t count;
} chain_rules[POLICY_CHAIN_COUNT] = {
    [POLICY_CHAIN_ETHEREUM] = {eth_rules, sizeof(eth_rules) / sizeof(eth_rules[0])},
    [POLICY_CHAIN_SOLANA] = {sol_rules, sizeof(sol_rules) / sizeof(sol_rules[0])},
};

static int has_any(const char *msg, const char *const *words)
{
    for (; *words != NULL; words++)
        if (strcasestr(msg, *words) != NULL)
            return 1;
    return 0;
}

static int rule_matches(const rule_t *r, const policy_rpc_error_t *err)
{
    if (!r->any_code && (!err->has_code || err->code != r->code))
        return 0;
    if (r->words != NULL && !has_any(err->message, r->words))
        return 0;
    if (r->unless != NULL && has_any(err->message, r->unless))
        return 0;
    return 1;
}

policy_verdict_t policy_verdict_http(policy_chain_t chain, int http_status)
{
    (void)chain;
    if (http_status >= 200 && http_status < 300)
        return V_OK;
    if (http_status == 429 || http_status == 402)
        return V_RATE;
    if (http_status == 405 || http_status == 501)
        return V_UNSUP;
    /* 5xx, 401/403 (a key problem at this provider), 404 (wrong URL), and any
     * other status without a JSON-RPC answer: this endpoint cannot serve. */
    return V_TRANS;
}

/* Infura's legacy -32005 carries data.backoff_seconds. */
static uint32_t backoff_hint_ms(const policy_rpc_error_t *err, const char *buf)
{
    if (buf == NULL || err->data.len == 0 || err->data.len > 4096 || buf[err->data.off] != '{')
        return 0;
    cJSON *data = cJSON_ParseWithLength(buf + err->data.off, err->data.len);
    uint32_t ms = 0;
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(data, "backoff_seconds");
    if (cJSON_IsNumber(b) && b->valuedouble > 0 && b->valuedouble < 86400)
        ms = (uint32_t)(b->valuedouble * 1000.0);
    cJSON_Delete(data);
    return ms;
}

policy_verdict_t policy_verdict_rpc_error(policy_chain_t chain, const policy_method_t *method, int http_status,
                                          const policy_rpc_error_t *err, const char *buf, uint32_t *retry_after_ms)
{
    (void)method;
    *retry_after_ms = 0;
    if (http_status == 429 || http_status == 402) {
        *retry_after_ms = backoff_hint_ms(err, buf);
        return V_RATE;
    }
    if (http_status >= 500)
        return V_TRANS;
    const rule_t *rules = chain_rules[chain].rules;
    for (size_t i = 0; i < chain_rules[chain].count; i++) {
        if (rule_matches(&rules[i], err)) {
            if (rules[i].verdict == V_RATE)
                *retry_after_ms = backoff_hint_ms(err, buf);
            return rules[i].verdict;
        }
    }
    /* An error we do not recognise came from a node that understood the call:
     * another node would most likely say the same. Return it as-is. */
    return V_DET;
}
