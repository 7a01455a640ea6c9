/* tests/policy/test_cache.c: policy/cache.h: the cache column of the method
 * tables, the plan per call (from real params through policy/blockref.h),
 * and the keep rule on answers. */
#include <criterion/criterion.h>
#include <string.h>

#include "policy/cache.h"

#define ETH POLICY_CHAIN_ETHEREUM
#define SOL POLICY_CHAIN_SOLANA

static int in_blockref_table(policy_chain_t chain, const char *name)
{
    policy_chain_t c;
    const char *n;
    for (size_t i = 0; (n = policy_blockref_row(i, &c)) != NULL; i++)
        if (c == chain && strcmp(n, name) == 0)
            return 1;
    return 0;
}

Test(cache, the_column_marks_only_reads_and_every_block_row_names_its_block)
{
    policy_chain_t chains[] = {ETH, SOL};
    for (size_t c = 0; c < 2; c++) {
        size_t n;
        const policy_method_t *t = policy_method_table(chains[c], &n);
        size_t marked = 0;
        for (size_t i = 0; i < n; i++) {
            if (t[i].cache == POLICY_CACHE_NONE)
                continue;
            marked++;
            cr_expect(t[i].cls != POLICY_CLASS_WRITE && t[i].cls != POLICY_CLASS_BLOCKED &&
                          t[i].cls != POLICY_CLASS_SUBSCRIBE && t[i].retry_safe,
                      "%s is marked cacheable but is no read", t[i].name);
            if (t[i].cache == POLICY_CACHE_BLOCK)
                cr_expect(in_blockref_table(chains[c], t[i].name), "%s: blockref does not know its block",
                          t[i].name);
        }
        cr_expect_gt(marked, 3);
    }
}

static policy_cache_call_t plan_of(policy_chain_t chain, const char *method, const char *params, uint64_t latest,
                                   uint64_t finalized, int unfinalized)
{
    const policy_method_t *m = policy_method_lookup(chain, method, strlen(method));
    policy_blockref_call_t ref;
    wire_span_t p = {0, (uint32_t)strlen(params)};
    cr_assert_eq(policy_blockref_extract(chain, method, strlen(method), params, p, &ref), SL_OK, "%s %s", method,
                 params);
    policy_cache_call_t out;
    policy_cache_plan(chain, m, &ref, (policy_cache_heads_t){latest, finalized}, unfinalized, &out);
    return out;
}

typedef struct plan_case {
    policy_chain_t chain;
    const char *method, *params;
    int unfinalized;
    policy_cache_plan_t want;
    uint64_t height;
} plan_case_t;

#define HASH "\"0x" "1111111111111111111111111111111111111111111111111111111111111111\""

/* latest 120, finalized 100 */
static const plan_case_t plan_cases[] = {
    {ETH, "eth_chainId", "[]", 0, POLICY_CACHE_FINAL, 0},
    {ETH, "net_version", "[]", 0, POLICY_CACHE_FINAL, 0},
    {ETH, "eth_blockNumber", "[]", 1, POLICY_CACHE_SKIP, 0},
    {ETH, "eth_sendRawTransaction", "[\"0x01\"]", 1, POLICY_CACHE_SKIP, 0},
    {ETH, "eth_getBlockByNumber", "[\"0x64\",false]", 0, POLICY_CACHE_FINAL, 0},
    {ETH, "eth_getBlockByNumber", "[\"0x65\",false]", 0, POLICY_CACHE_SKIP, 0},
    {ETH, "eth_getBlockByNumber", "[\"0x65\",false]", 1, POLICY_CACHE_AT_HASH, 101},
    {ETH, "eth_getBlockByNumber", "[\"0x79\",false]", 1, POLICY_CACHE_SKIP, 0}, /* past the head */
    {ETH, "eth_getBlockByNumber", "[\"finalized\",false]", 1, POLICY_CACHE_SKIP, 0},
    {ETH, "eth_getBlockByNumber", "[\"pending\",false]", 1, POLICY_CACHE_SKIP, 0},
    {ETH, "eth_getBlockByNumber", "[\"earliest\",false]", 0, POLICY_CACHE_FINAL, 0},
    {ETH, "eth_getBlockByHash", "[" HASH ",false]", 0, POLICY_CACHE_FINAL, 0},
    {ETH, "eth_getBalance", "[\"0xab\",\"0x10\"]", 0, POLICY_CACHE_FINAL, 0},
    {ETH, "eth_getBalance", "[\"0xab\"]", 0, POLICY_CACHE_SKIP, 0},  /* implicit latest */
    {ETH, "eth_getBalance", "[\"0xab\"]", 1, POLICY_CACHE_AT_HASH, 120},
    {ETH, "eth_getBalance", "[\"0xab\",\"latest\"]", 1, POLICY_CACHE_AT_HASH, 120},
    {ETH, "eth_call", "[{\"to\":\"0xab\"},{\"blockHash\":" HASH "}]", 0, POLICY_CACHE_FINAL, 0},
    {ETH, "eth_getLogs", "[{\"fromBlock\":\"0x10\",\"toBlock\":\"0x64\"}]", 0, POLICY_CACHE_FINAL, 0},
    {ETH, "eth_getLogs", "[{\"fromBlock\":\"0x10\",\"toBlock\":\"0x65\"}]", 0, POLICY_CACHE_SKIP, 0},
    {ETH, "eth_getLogs", "[{\"fromBlock\":\"0x10\",\"toBlock\":\"0x65\"}]", 1, POLICY_CACHE_AT_HASH, 101},
    {ETH, "eth_getLogs", "[{\"fromBlock\":\"0x10\",\"toBlock\":\"latest\"}]", 1, POLICY_CACHE_SKIP, 0},
    {ETH, "eth_getLogs", "[{\"fromBlock\":\"0x70\",\"toBlock\":\"0x10\"}]", 0, POLICY_CACHE_SKIP, 0},
    {ETH, "eth_getLogs", "[{\"blockHash\":" HASH "}]", 0, POLICY_CACHE_FINAL, 0},
    {ETH, "eth_getTransactionReceipt", "[" HASH "]", 0, POLICY_CACHE_BY_ANSWER, 0},
    {ETH, "eth_getTransactionByHash", "[" HASH "]", 0, POLICY_CACHE_BY_ANSWER, 0},
    {SOL, "getGenesisHash", "[]", 0, POLICY_CACHE_FINAL, 0},
    {SOL, "getSlot", "[]", 1, POLICY_CACHE_SKIP, 0},
    {SOL, "getBlock", "[100]", 0, POLICY_CACHE_FINAL, 0},
    {SOL, "getBlock", "[101]", 0, POLICY_CACHE_SKIP, 0},
    {SOL, "getTransaction", "[\"5abc\"]", 0, POLICY_CACHE_BY_ANSWER, 0},
    {SOL, "getTransaction", "[\"5abc\",{\"commitment\":\"finalized\"}]", 0, POLICY_CACHE_BY_ANSWER, 0},
    {SOL, "getTransaction", "[\"5abc\",{\"commitment\":\"confirmed\"}]", 1, POLICY_CACHE_SKIP, 0},
    {SOL, "getBalance", "[\"5abc\"]", 1, POLICY_CACHE_SKIP, 0},
};

Test(cache, plans)
{
    for (size_t i = 0; i < sizeof(plan_cases) / sizeof(plan_cases[0]); i++) {
        const plan_case_t *c = &plan_cases[i];
        policy_cache_call_t got = plan_of(c->chain, c->method, c->params, 120, 100, c->unfinalized);
        cr_expect_eq(got.plan, c->want, "case %zu %s %s: %s, want %s", i, c->method, c->params,
                     policy_cache_plan_name(got.plan), policy_cache_plan_name(c->want));
        if (c->want == POLICY_CACHE_AT_HASH)
            cr_expect_eq(got.height, c->height, "case %zu", i);
    }
}

Test(cache, nothing_by_number_before_finalized_is_known)
{
    cr_expect_eq(plan_of(ETH, "eth_getBlockByNumber", "[\"0x1\",false]", 0, 0, 0).plan, POLICY_CACHE_SKIP);
    cr_expect_eq(plan_of(ETH, "eth_getBlockByNumber", "[\"0x1\",false]", 0, 0, 1).plan, POLICY_CACHE_SKIP);
    cr_expect_eq(plan_of(ETH, "eth_getBalance", "[\"0xab\"]", 0, 0, 1).plan, POLICY_CACHE_SKIP);
}

static int keep(policy_chain_t chain, policy_cache_plan_t plan, const char *result, int deterministic,
                uint64_t finalized)
{
    policy_cache_call_t c = {.plan = plan};
    policy_cache_answer_t a = {.buf = result, .result = {0, result != NULL ? (uint32_t)strlen(result) : 0},
                               .deterministic = (uint8_t)deterministic};
    if (result == NULL)
        a.buf = "";
    return policy_cache_keep(chain, &c, &a, finalized);
}

Test(cache, keep_rule)
{
    cr_expect(keep(ETH, POLICY_CACHE_FINAL, "{\"number\":\"0x64\"}", 0, 100));
    cr_expect(keep(ETH, POLICY_CACHE_FINAL, "[]", 0, 100), "no logs in a finalized range is the truth");
    cr_expect(!keep(ETH, POLICY_CACHE_FINAL, "null", 0, 100), "null is usually not yet");
    cr_expect(!keep(ETH, POLICY_CACHE_SKIP, "\"0x1\"", 0, 100));
    cr_expect(keep(ETH, POLICY_CACHE_AT_HASH, "\"0x1\"", 0, 100));
    cr_expect(!keep(ETH, POLICY_CACHE_AT_HASH, "null", 0, 100));
    /* errors */
    cr_expect(keep(ETH, POLICY_CACHE_FINAL, NULL, 1, 100), "a revert at a finalized block is for ever");
    cr_expect(!keep(ETH, POLICY_CACHE_FINAL, NULL, 0, 100));
    cr_expect(!keep(ETH, POLICY_CACHE_AT_HASH, NULL, 1, 100));
    cr_expect(!keep(ETH, POLICY_CACHE_BY_ANSWER, NULL, 1, 100));
    /* a transaction by hash: once its block is finalized */
    cr_expect(keep(ETH, POLICY_CACHE_BY_ANSWER, "{\"blockNumber\":\"0x64\",\"status\":\"0x1\"}", 0, 100));
    cr_expect(!keep(ETH, POLICY_CACHE_BY_ANSWER, "{\"blockNumber\":\"0x65\",\"status\":\"0x1\"}", 0, 100));
    cr_expect(!keep(ETH, POLICY_CACHE_BY_ANSWER, "{\"blockNumber\":null,\"hash\":\"0x1\"}", 0, 100), "pending");
    cr_expect(!keep(ETH, POLICY_CACHE_BY_ANSWER, "{\"status\":\"0x1\"}", 0, 100));
    cr_expect(!keep(ETH, POLICY_CACHE_BY_ANSWER, "{\"blockNumber\":\"0x64\"}", 0, 0), "finalized unknown");
    cr_expect(!keep(ETH, POLICY_CACHE_BY_ANSWER, "null", 0, 100));
    cr_expect(keep(SOL, POLICY_CACHE_BY_ANSWER, "{\"slot\":100,\"meta\":{}}", 0, 100));
    cr_expect(!keep(SOL, POLICY_CACHE_BY_ANSWER, "{\"slot\":101,\"meta\":{}}", 0, 100));
}

Test(cache, plan_names)
{
    cr_expect_str_eq(policy_cache_plan_name(POLICY_CACHE_SKIP), "skip");
    cr_expect_str_eq(policy_cache_plan_name(POLICY_CACHE_BY_ANSWER), "by_answer");
    cr_expect_str_eq(policy_cache_plan_name((policy_cache_plan_t)9), "unknown");
}

Test(cache, answer_numbers)
{
    uint64_t n = 0;
    const char *s = "\"0x1b4\"";
    cr_expect_eq(policy_blockref_number(s, (wire_span_t){0, 7}, &n), SL_OK);
    cr_expect_eq(n, 0x1b4);
    cr_expect_eq(policy_blockref_number("77", (wire_span_t){0, 2}, &n), SL_OK);
    cr_expect_eq(n, 77);
    cr_expect_eq(policy_blockref_number("null", (wire_span_t){0, 4}, &n), SL_ERR_PARSE);
    cr_expect_eq(policy_blockref_number("\"latest\"", (wire_span_t){0, 8}, &n), SL_ERR_PARSE);
}
