/* tests/policy/test_cost.c: policy/cost.h: the built-in profiles' tables
 * (invariants and the values of reference/providers.md §C), overrides,
 * defaults and batch charges. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "policy/cost.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define ETH POLICY_CHAIN_ETHEREUM
#define SOL POLICY_CHAIN_SOLANA

/* Looks method up from a private copy of exactly len bytes, so a lookup that
 * reads past the length (or wants a NUL) is caught by ASan. */
static policy_cost_t cost_n(const policy_cost_profile_t *p, policy_chain_t chain, const policy_cost_row_t *ov,
                            size_t nov, const char *method, size_t len)
{
    char *copy = malloc(len ? len : 1);
    memcpy(copy, method, len);
    policy_cost_t c = policy_cost_of(p, chain, ov, nov, copy, len);
    free(copy);
    return c;
}

static policy_cost_t cost(const char *profile, policy_chain_t chain, const char *method)
{
    const policy_cost_profile_t *p = policy_cost_profile(profile);
    cr_assert_not_null(p, "profile %s", profile);
    return cost_n(p, chain, NULL, 0, method, strlen(method));
}

/* ---- table invariants -------------------------------------------------- */

/* The only zero a doc gives: eth_chainId on Alchemy's current table. */
static int zero_allowed(const char *profile, const char *method)
{
    return strcmp(profile, "alchemy") == 0 && strcmp(method, "eth_chainId") == 0;
}

static void check_table(const policy_cost_profile_t *p, policy_chain_t chain, const policy_cost_row_t *rows, size_t n)
{
    const char *chain_name = chain == ETH ? "ethereum" : "solana";
    if (n > 0)
        cr_assert_not_null(rows, "%s/%s: %zu rows at NULL", p->name, chain_name, n);
    for (size_t i = 0; i < n; i++) {
        const policy_cost_row_t *r = &rows[i];
        cr_assert_not_null(r->method, "%s/%s row %zu", p->name, chain_name, i);
        cr_expect_gt(strlen(r->method), 0, "%s/%s row %zu: empty name", p->name, chain_name, i);
        if (i > 0)
            cr_expect_lt(strcmp(rows[i - 1].method, r->method), 0, "%s/%s: '%s' then '%s' is not sorted or repeats",
                         p->name, chain_name, rows[i - 1].method, r->method);
        if (!zero_allowed(p->name, r->method)) {
            cr_expect_gt(r->cost.billed, 0, "%s/%s '%s': billed 0", p->name, chain_name, r->method);
            cr_expect_gt(r->cost.throughput, 0, "%s/%s '%s': throughput 0", p->name, chain_name, r->method);
        }
        /* no provider meters a call lighter against its rate limit than on the bill */
        cr_expect_geq(r->cost.throughput, r->cost.billed, "%s/%s '%s'", p->name, chain_name, r->method);
        /* Ethereum methods are namespace_name; Solana's have no underscore.
         * A row in the wrong chain's table would never be looked up. */
        int underscore = strchr(r->method, '_') != NULL;
        cr_expect_eq(underscore, chain == ETH, "%s/%s '%s': in the wrong chain's table", p->name, chain_name,
                     r->method);
        /* bsearch agrees with the order (a sorting slip hides rows from it) */
        policy_cost_t got = cost_n(p, chain, NULL, 0, r->method, strlen(r->method));
        cr_expect(got.billed == r->cost.billed && got.throughput == r->cost.throughput,
                  "%s/%s '%s': lookup gives %u/%u, row says %u/%u", p->name, chain_name, r->method, got.billed,
                  got.throughput, r->cost.billed, r->cost.throughput);
    }
}

Test(cost, tables_sorted_unique_nonzero)
{
    size_t n;
    const policy_cost_profile_t *ps = policy_cost_profiles(&n);
    cr_assert_eq(n, 5, "profiles: %zu", n);
    size_t rows = 0;
    for (size_t i = 0; i < n; i++) {
        const policy_cost_profile_t *p = &ps[i];
        cr_assert_not_null(p->name);
        for (size_t j = 0; j < i; j++)
            cr_expect_str_neq(ps[j].name, p->name, "profile name repeats");
        cr_expect_eq(policy_cost_profile(p->name), p, "%s is not found by name", p->name);
        check_table(p, ETH, p->ethereum, p->nethereum);
        check_table(p, SOL, p->solana, p->nsolana);
        cr_expect_gt(p->eth_default.billed, 0, "%s: eth default", p->name);
        cr_expect_gt(p->sol_default.billed, 0, "%s: sol default", p->name);
        cr_expect_eq(p->eth_default.billed, p->eth_default.throughput, "%s", p->name);
        cr_expect_eq(p->sol_default.billed, p->sol_default.throughput, "%s", p->name);
        rows += p->nethereum + p->nsolana;
    }
    cr_expect_gt(rows, 80, "tables look truncated: %zu rows", rows);
}

Test(cost, profile_names)
{
    static const char *const names[] = {"alchemy", "infura", "quicknode", "helius", "flat"};
    for (size_t i = 0; i < COUNT(names); i++) {
        const policy_cost_profile_t *p = policy_cost_profile(names[i]);
        cr_assert_not_null(p, "%s", names[i]);
        cr_expect_str_eq(p->name, names[i]);
    }
    cr_expect_null(policy_cost_profile("nope"));
    cr_expect_null(policy_cost_profile(""));
    cr_expect_null(policy_cost_profile("Alchemy"));
    cr_expect_null(policy_cost_profile("alchemy "));
    cr_expect_null(policy_cost_profile(NULL));
}

/* ---- the documented values --------------------------------------------- */

typedef struct doc_case {
    const char *profile;
    policy_chain_t chain;
    const char *method;
    uint32_t billed, throughput;
} doc_case_t;

/* Copied from reference/providers.md §C (Alchemy: the current-docs column). */
static const doc_case_t doc_cases[] = {
    {"alchemy", ETH, "eth_blockNumber", 10, 10},
    {"alchemy", ETH, "eth_chainId", 0, 0},
    {"alchemy", ETH, "eth_call", 26, 26},
    {"alchemy", ETH, "eth_estimateGas", 20, 20},
    {"alchemy", ETH, "eth_sendRawTransaction", 40, 250},
    {"alchemy", ETH, "eth_getLogs", 60, 60},
    {"alchemy", ETH, "eth_getTransactionReceipt", 20, 20},
    {"alchemy", ETH, "eth_getBlockReceipts", 20, 20},
    {"alchemy", ETH, "eth_feeHistory", 10, 10},
    {"alchemy", ETH, "eth_maxPriorityFeePerGas", 10, 10},
    {"alchemy", ETH, "eth_createAccessList", 10, 10},
    {"alchemy", ETH, "eth_subscribe", 10, 10},
    {"alchemy", ETH, "eth_unsubscribe", 10, 10},
    {"alchemy", ETH, "eth_simulateV1", 40, 40},
    {"alchemy", ETH, "debug_traceTransaction", 40, 1000},
    {"alchemy", ETH, "debug_traceCall", 40, 1000},
    {"alchemy", ETH, "trace_block", 20, 20},
    {"alchemy", ETH, "trace_replayTransaction", 20, 20}, /* "—" in current docs: the default */
    {"alchemy", SOL, "getBalance", 20, 20},
    {"infura", ETH, "eth_blockNumber", 80, 80},
    {"infura", ETH, "eth_chainId", 5, 5},
    {"infura", ETH, "eth_call", 80, 80},
    {"infura", ETH, "eth_estimateGas", 300, 300},
    {"infura", ETH, "eth_sendRawTransaction", 80, 80},
    {"infura", ETH, "eth_getLogs", 255, 255},
    {"infura", ETH, "eth_getBlockReceipts", 1000, 1000},
    {"infura", ETH, "eth_getProof", 150, 150},
    {"infura", ETH, "eth_subscribe", 5, 5},
    {"infura", ETH, "eth_unsubscribe", 10, 10},
    {"infura", ETH, "debug_traceTransaction", 1000, 1000},
    {"infura", ETH, "debug_traceCall", 1000, 1000},
    {"infura", ETH, "trace_block", 300, 300},
    {"infura", ETH, "eth_simulateV1", 80, 80}, /* "—": the default */
    {"infura", SOL, "getBalance", 180, 180},
    {"infura", SOL, "sendTransaction", 180, 180},
    {"infura", SOL, "getProgramAccounts", 180, 180},
    {"quicknode", ETH, "eth_blockNumber", 20, 20},
    {"quicknode", ETH, "eth_getLogs", 20, 20},
    {"quicknode", ETH, "eth_sendRawTransaction", 20, 20},
    {"quicknode", ETH, "debug_traceTransaction", 40, 40},
    {"quicknode", ETH, "debug_traceCall", 40, 40},
    {"quicknode", ETH, "trace_block", 40, 40},
    {"quicknode", ETH, "trace_replayTransaction", 80, 80},
    {"quicknode", ETH, "trace_replayBlockTransactions", 80, 80},
    {"quicknode", ETH, "txpool_content", 80, 80},
    {"quicknode", ETH, "txpool_status", 40, 40},
    {"quicknode", SOL, "getAccountInfo", 30, 30},
    {"quicknode", SOL, "getProgramAccounts", 30, 30},
    {"quicknode", SOL, "getSignatureStatuses", 30, 30},
    {"quicknode", SOL, "getTransaction", 30, 30},
    {"quicknode", SOL, "sendTransaction", 30, 30},
    {"quicknode", SOL, "getLargestAccounts", 120, 120},
    {"quicknode", SOL, "getSupply", 120, 120},
    {"quicknode", SOL, "getAsset", 60, 60},
    {"quicknode", SOL, "getAssetsByOwner", 60, 60},
    {"helius", SOL, "getAccountInfo", 1, 1},
    {"helius", SOL, "getBalance", 1, 1},
    {"helius", SOL, "getMultipleAccounts", 1, 1},
    {"helius", SOL, "getLatestBlockhash", 1, 1},
    {"helius", SOL, "getSlot", 1, 1},
    /* no table for the chain: the profile's default for every call (docs/guide/budgets.md) */
    {"helius", ETH, "eth_getLogs", 1, 1},
    {"helius", ETH, "eth_call", 1, 1},
    {"alchemy", SOL, "getProgramAccounts", 20, 20},
    {"alchemy", SOL, "getSlot", 20, 20},
    {"helius", SOL, "simulateTransaction", 1, 1},
    {"helius", SOL, "getProgramAccounts", 10, 10},
    {"helius", SOL, "getSignatureStatuses", 1, 1},
    {"helius", SOL, "getTransaction", 10, 10},
    {"helius", SOL, "getBlock", 10, 10},
    {"helius", SOL, "getBlocks", 10, 10},
    {"helius", SOL, "getBlocksWithLimit", 10, 10},
    {"helius", SOL, "getBlockTime", 10, 10},
    {"helius", SOL, "getSignaturesForAddress", 10, 10},
    {"helius", SOL, "getInflationReward", 10, 10},
    {"helius", SOL, "getTransactionsForAddress", 100, 100},
    {"helius", SOL, "sendTransaction", 1, 1},
    {"helius", SOL, "getLargestAccounts", 1, 1},
    {"helius", SOL, "getSupply", 1, 1},
    {"helius", SOL, "getAsset", 10, 10},
    {"helius", SOL, "getAssetBatch", 10, 10},
    {"helius", SOL, "searchAssets", 10, 10},
    {"helius", ETH, "eth_getLogs", 1, 1},
    {"flat", ETH, "eth_getLogs", 1, 1},
    {"flat", ETH, "debug_traceTransaction", 1, 1},
    {"flat", SOL, "getProgramAccounts", 1, 1},
};

Test(cost, documented_values)
{
    cr_assert_geq(COUNT(doc_cases), 30);
    for (size_t i = 0; i < COUNT(doc_cases); i++) {
        const doc_case_t *c = &doc_cases[i];
        policy_cost_t got = cost(c->profile, c->chain, c->method);
        cr_expect_eq(got.billed, c->billed, "%s %s: billed %u, doc says %u", c->profile, c->method, got.billed,
                     c->billed);
        cr_expect_eq(got.throughput, c->throughput, "%s %s: throughput %u, doc says %u", c->profile, c->method,
                     got.throughput, c->throughput);
    }
}

/* ---- defaults and names ------------------------------------------------ */

Test(cost, unknown_methods_get_the_default)
{
    static const struct {
        const char *profile;
        policy_chain_t chain;
        uint32_t dflt;
    } cases[] = {
        {"alchemy", ETH, 20}, {"alchemy", SOL, 20}, {"infura", ETH, 80},   {"infura", SOL, 180},
        {"quicknode", ETH, 20}, {"quicknode", SOL, 30}, {"helius", ETH, 1}, {"helius", SOL, 1},
        {"flat", ETH, 1},     {"flat", SOL, 1},
    };
    /* unknown, case variants, a trailing space, an empty name */
    static const char *const names[] = {"eth_nope", "ETH_GETLOGS", "GETTRANSACTION", "eth_getLogs ", "zzz", "", "a"};
    for (size_t i = 0; i < COUNT(cases); i++) {
        const policy_cost_profile_t *p = policy_cost_profile(cases[i].profile);
        for (size_t j = 0; j <= COUNT(names); j++) {
            /* the last name is one of the other chain's: tables are per chain */
            const char *name = j < COUNT(names) ? names[j] : cases[i].chain == ETH ? "getTransaction" : "eth_getLogs";
            policy_cost_t got = cost_n(p, cases[i].chain, NULL, 0, name, strlen(name));
            cr_expect_eq(got.billed, cases[i].dflt, "%s/%d '%s': %u", cases[i].profile, cases[i].chain, name,
                         got.billed);
            cr_expect_eq(got.throughput, cases[i].dflt, "%s/%d '%s'", cases[i].profile, cases[i].chain, name);
        }
    }
}

/* The name is name[0..len): a longer buffer is cut at len, never read on. */
Test(cost, explicit_lengths)
{
    static const struct {
        const char *profile;
        policy_chain_t chain;
        const char *buf;
        size_t len;
        uint32_t billed;
    } cases[] = {
        {"alchemy", ETH, "eth_getLogsXYZ", 11, 60},         /* eth_getLogs */
        {"alchemy", ETH, "eth_getLogs", 10, 20},            /* eth_getLog: default */
        {"alchemy", ETH, "eth_call\"}", 8, 26},             /* cut inside JSON */
        {"alchemy", ETH, "eth_callMany", 8, 26},
        {"alchemy", ETH, "eth_chainIdentity", 11, 0},
        {"helius", SOL, "getBlocksWithLimit", 9, 10},       /* getBlocks */
        {"helius", SOL, "getBlocksWithLimit", 8, 10},       /* getBlock */
        {"helius", SOL, "getBlocksWithLimit", 7, 1},        /* getBloc */
        {"helius", SOL, "getTransactionsForAddress", 14, 10}, /* getTransaction */
        {"quicknode", ETH, "trace_replayTransaction", 12, 20}, /* trace_replay: no prefix rows */
        {"infura", ETH, "eth_call\0", 9, 80},               /* a NUL inside is part of the name */
        {"alchemy", ETH, "eth_call\0", 9, 20},
    };
    for (size_t i = 0; i < COUNT(cases); i++) {
        const policy_cost_profile_t *p = policy_cost_profile(cases[i].profile);
        policy_cost_t got = cost_n(p, cases[i].chain, NULL, 0, cases[i].buf, cases[i].len);
        cr_expect_eq(got.billed, cases[i].billed, "case %zu '%.*s': %u", i, (int)cases[i].len, cases[i].buf,
                     got.billed);
    }
}

/* ---- overrides --------------------------------------------------------- */

Test(cost, overrides_win)
{
    /* unsorted on purpose: overrides are scanned, not searched */
    static const policy_cost_row_t ov[] = {
        {"trace_block", {500, 700}},
        {"eth_getLogs", {1, 2}},
        {"eth_call", {0, 0}},          /* an operator may make a call free */
        {"eth_customThing", {7, 9}},   /* a method no profile knows */
        {"getProgramAccounts", {33, 33}},
        {"eth_getLogs", {99, 99}},     /* a repeat: the first row wins */
    };
    static const struct {
        const char *profile;
        policy_chain_t chain;
        const char *method;
        uint32_t billed, throughput;
    } cases[] = {
        {"alchemy", ETH, "eth_getLogs", 1, 2},
        {"alchemy", ETH, "eth_call", 0, 0},
        {"alchemy", ETH, "trace_block", 500, 700},
        {"alchemy", ETH, "eth_customThing", 7, 9},
        {"alchemy", ETH, "eth_blockNumber", 10, 10},  /* not overridden: the table */
        {"alchemy", ETH, "eth_nope", 20, 20},         /* neither: the default */
        {"infura", ETH, "eth_getLogs", 1, 2},
        {"helius", ETH, "eth_customThing", 7, 9},     /* a profile without an Ethereum table */
        {"helius", SOL, "getProgramAccounts", 33, 33},
        {"flat", SOL, "getProgramAccounts", 33, 33},
        {"quicknode", SOL, "getSupply", 120, 120},
    };
    for (size_t i = 0; i < COUNT(cases); i++) {
        const policy_cost_profile_t *p = policy_cost_profile(cases[i].profile);
        policy_cost_t got = cost_n(p, cases[i].chain, ov, COUNT(ov), cases[i].method, strlen(cases[i].method));
        cr_expect_eq(got.billed, cases[i].billed, "%s %s: billed %u", cases[i].profile, cases[i].method, got.billed);
        cr_expect_eq(got.throughput, cases[i].throughput, "%s %s: throughput %u", cases[i].profile,
                     cases[i].method, got.throughput);
    }
    /* an override matches the whole name only */
    const policy_cost_profile_t *a = policy_cost_profile("alchemy");
    cr_expect_eq(cost_n(a, ETH, ov, COUNT(ov), "eth_getLogsX", 12).billed, 20);
    cr_expect_eq(cost_n(a, ETH, ov, COUNT(ov), "eth_getLogsX", 11).billed, 1);
    cr_expect_eq(cost_n(a, ETH, ov, COUNT(ov), "eth_getLog", 10).billed, 20);
    /* no overrides at all: the table */
    cr_expect_eq(cost_n(a, ETH, ov, 0, "eth_getLogs", 11).billed, 60);
}

/* ---- whole requests ---------------------------------------------------- */

static policy_cost_t request(const char *profile, policy_chain_t chain, const policy_cost_row_t *ov, size_t nov,
                             const char *const *methods, size_t n, int batch)
{
    size_t lens[128];
    cr_assert_leq(n, COUNT(lens));
    for (size_t i = 0; i < n; i++)
        lens[i] = strlen(methods[i]);
    return policy_cost_of_request(policy_cost_profile(profile), chain, ov, nov, methods, lens, n, batch);
}

Test(cost, batch_charging)
{
    static const char *const mix[] = {"eth_blockNumber", "eth_getLogs", "eth_chainId"};
    static const char *const one[] = {"eth_call"};
    static const char *const heavy[] = {"eth_sendRawTransaction", "debug_traceCall", "eth_call"};
    static const char *const sol[] = {"getTransaction", "getBalance", "getTransactionsForAddress"};
    static const char *hundred[100];
    for (size_t i = 0; i < COUNT(hundred); i++)
        hundred[i] = "eth_call";
    static const struct {
        const char *profile;
        policy_chain_t chain;
        const char *const *methods;
        size_t n;
        int batch;
        uint32_t billed, throughput;
    } cases[] = {
        {"infura", ETH, mix, 3, 0, 80 + 255 + 5, 80 + 255 + 5},
        {"infura", ETH, mix, 3, 1, 80 + 255 + 5 + 1, 80 + 255 + 5 + 1},
        {"infura", ETH, one, 1, 0, 80, 80},
        {"infura", ETH, one, 1, 1, 81, 81},              /* a batch of one is still a batch */
        {"infura", ETH, hundred, 100, 1, 8001, 8001},    /* +1 once, not once per member */
        {"infura", ETH, hundred, 100, 0, 8000, 8000},
        {"infura", SOL, sol, 3, 1, 541, 541},
        {"infura", ETH, NULL, 0, 1, 1, 1},
        {"infura", ETH, NULL, 0, 0, 0, 0},
        {"alchemy", ETH, mix, 3, 1, 10 + 60 + 0, 10 + 60 + 0},     /* no batch charge */
        {"alchemy", ETH, heavy, 3, 1, 40 + 40 + 26, 250 + 1000 + 26},
        {"alchemy", ETH, heavy, 3, 0, 40 + 40 + 26, 250 + 1000 + 26},
        {"helius", SOL, sol, 3, 1, 10 + 1 + 100, 10 + 1 + 100},
        {"quicknode", SOL, sol, 3, 1, 90, 90},
        {"flat", ETH, hundred, 100, 1, 100, 100},
    };
    for (size_t i = 0; i < COUNT(cases); i++) {
        policy_cost_t got =
            request(cases[i].profile, cases[i].chain, NULL, 0, cases[i].methods, cases[i].n, cases[i].batch);
        cr_expect_eq(got.billed, cases[i].billed, "case %zu (%s): billed %u", i, cases[i].profile, got.billed);
        cr_expect_eq(got.throughput, cases[i].throughput, "case %zu (%s): throughput %u", i, cases[i].profile,
                     got.throughput);
    }
}

Test(cost, request_uses_overrides_and_saturates)
{
    static const policy_cost_row_t ov[] = {{"eth_getLogs", {1, 1}}, {"eth_huge", {UINT32_MAX - 5, UINT32_MAX}}};
    static const char *const mix[] = {"eth_blockNumber", "eth_getLogs", "eth_chainId"};
    policy_cost_t got = request("infura", ETH, ov, COUNT(ov), mix, 3, 1);
    cr_expect_eq(got.billed, 80 + 1 + 5 + 1);
    static const char *const huge[] = {"eth_huge", "eth_call", "eth_huge"};
    got = request("infura", ETH, ov, COUNT(ov), huge, 3, 1);
    cr_expect_eq(got.billed, UINT32_MAX, "a sum must not wrap: %u", got.billed);
    cr_expect_eq(got.throughput, UINT32_MAX, "a sum must not wrap: %u", got.throughput);
    static const char *const almost[] = {"eth_huge", "eth_chainId"};
    got = request("infura", ETH, ov, COUNT(ov), almost, 1, 1);
    cr_expect_eq(got.billed, UINT32_MAX - 4);
    got = request("infura", ETH, ov, COUNT(ov), almost, 2, 1);
    cr_expect_eq(got.billed, UINT32_MAX, "%u", got.billed);
}
