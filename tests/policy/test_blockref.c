/* tests/policy/test_blockref.c: which block a call names (policy/blockref.h). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "policy/blockref.h"
#include "policy/method.h"

#define ETH POLICY_CHAIN_ETHEREUM
#define SOL POLICY_CHAIN_SOLANA
#define HASH_HEX "0x88e96d4537bea4d9c05d12549907b32561d3bf31f45aae734cdc119f13406cb6"
#define ADDR "\"0x0000000000000000000000000000000000000001\""

static sl_err_t extract(policy_chain_t chain, const char *method, const char *params, policy_blockref_call_t *out)
{
    wire_span_t span = {0, (uint32_t)strlen(params)};
    return policy_blockref_extract(chain, method, strlen(method), params, span, out);
}

static policy_blockref_call_t ok(policy_chain_t chain, const char *method, const char *params)
{
    policy_blockref_call_t c;
    cr_assert_eq(extract(chain, method, params, &c), SL_OK, "%s %s", method, params);
    return c;
}

static void expect_number(policy_blockref_t ref, uint64_t n)
{
    const policy_blockref_t *r = &ref;
    cr_expect_eq(r->kind, POLICY_BLOCKREF_NUMBER, "kind %d", r->kind);
    cr_expect_eq(r->number, n, "number %llu, want %llu", (unsigned long long)r->number, (unsigned long long)n);
}

static void expect_tag(policy_blockref_t ref, policy_block_tag_t tag, int implicit)
{
    const policy_blockref_t *r = &ref;
    cr_expect_eq(r->kind, POLICY_BLOCKREF_TAG, "kind %d", r->kind);
    cr_expect_eq(r->tag, tag, "tag %s", policy_block_tag_name(r->tag));
    cr_expect_eq(r->implicit, implicit);
}

static void expect_parse(policy_chain_t chain, const char *method, const char *params)
{
    policy_blockref_call_t c;
    memset(&c, 0x5a, sizeof c);
    cr_expect_eq(extract(chain, method, params, &c), SL_ERR_PARSE, "%s %s", method, params);
    cr_expect_eq(c.at.kind, POLICY_BLOCKREF_NONE);
    cr_expect_eq(c.from.kind, POLICY_BLOCKREF_NONE);
    cr_expect_eq(c.has_min_context, 0);
}

Test(blockref, table_is_sorted_and_names_known_methods)
{
    policy_chain_t chain, prev_chain = 0;
    const char *prev = NULL, *name;
    size_t i = 0;
    for (; (name = policy_blockref_row(i, &chain)) != NULL; i++) {
        if (prev != NULL)
            cr_expect(chain > prev_chain || (chain == prev_chain && strcmp(prev, name) < 0), "row %zu: %s", i, name);
        const policy_method_t *m = policy_method_lookup(chain, name, strlen(name));
        cr_expect_str_eq(m->name, name, "%s is not in the method table", name);
        prev = name;
        prev_chain = chain;
    }
    cr_expect_gt(i, 20);
}

Test(blockref, block_by_number)
{
    const char *m = "eth_getBlockByNumber";
    expect_number(ok(ETH, m, "[\"0x1b4\", false]").at, 436);
    expect_number(ok(ETH, m, "[\"0x00001b4\", true]").at, 436);
    expect_number(ok(ETH, m, "[436, false]").at, 436);     /* Erigon and Nethermind take plain numbers */
    expect_number(ok(ETH, m, "[\"436\"]").at, 436);
    expect_number(ok(ETH, m, "[\"0xffffffffffffffff\"]").at, UINT64_MAX);
    expect_tag(ok(ETH, m, "[\"latest\", false]").at, POLICY_TAG_LATEST, 0);
    expect_tag(ok(ETH, m, "[\"pending\"]").at, POLICY_TAG_PENDING, 0);
    expect_tag(ok(ETH, m, "[\"safe\"]").at, POLICY_TAG_SAFE, 0);
    expect_tag(ok(ETH, m, "[\"finalized\"]").at, POLICY_TAG_FINALIZED, 0);
    expect_tag(ok(ETH, m, "[\"earliest\"]").at, POLICY_TAG_EARLIEST, 0);
    cr_expect_eq(ok(ETH, m, "[\"0x1\"]").from.kind, POLICY_BLOCKREF_NONE);
    /* a number param, not a hash: geth's rpc.BlockNumber takes none */
    expect_parse(ETH, m, "[\"" HASH_HEX "\", false]");
    expect_parse(ETH, m, "[]");
    expect_parse(ETH, m, "[null]");
    expect_parse(ETH, m, "[\"0x\"]");
    expect_parse(ETH, m, "[\"0x10000000000000000\"]"); /* 2^64 */
    expect_parse(ETH, m, "[\"18446744073709551616\"]");
    expect_parse(ETH, m, "[\"Latest\"]");
    expect_parse(ETH, m, "[\"0xzz\"]");
    expect_parse(ETH, m, "[-1]");
    expect_parse(ETH, m, "[1.5]");
    expect_parse(ETH, m, "[true]");
    expect_parse(ETH, m, "[{\"blockNumber\":\"0x1\"}]"); /* EIP-1898 objects are for state methods */
    expect_parse(ETH, m, "{\"block\":\"0x1\"}");
}

Test(blockref, state_methods_take_an_optional_block)
{
    expect_tag(ok(ETH, "eth_getBalance", "[" ADDR "]").at, POLICY_TAG_LATEST, 1);
    expect_tag(ok(ETH, "eth_getBalance", "[" ADDR ", null]").at, POLICY_TAG_LATEST, 1);
    expect_number(ok(ETH, "eth_getBalance", "[" ADDR ", \"0x10\"]").at, 16);
    expect_tag(ok(ETH, "eth_getCode", "[" ADDR ", \"safe\"]").at, POLICY_TAG_SAFE, 0);
    expect_number(ok(ETH, "eth_getTransactionCount", "[" ADDR ", \"0x2a\"]").at, 42);
    expect_number(ok(ETH, "eth_call", "[{\"to\":" ADDR ",\"data\":\"0x\"}, \"0x5\"]").at, 5);
    expect_tag(ok(ETH, "eth_call", "[{\"to\":" ADDR "}]").at, POLICY_TAG_LATEST, 1);
    expect_number(ok(ETH, "eth_getStorageAt", "[" ADDR ", \"0x0\", \"0x7\"]").at, 7);
    expect_number(ok(ETH, "eth_getProof", "[" ADDR ", [], \"0x8\"]").at, 8);
    /* a block hash, raw or as an EIP-1898 object */
    policy_blockref_call_t c = ok(ETH, "eth_getBalance", "[" ADDR ", \"" HASH_HEX "\"]");
    cr_expect_eq(c.at.kind, POLICY_BLOCKREF_HASH);
    cr_expect_eq(c.at.hash[0], 0x88);
    cr_expect_eq(c.at.hash[31], 0xb6);
    c = ok(ETH, "eth_call", "[{}, {\"blockHash\":\"" HASH_HEX "\",\"requireCanonical\":true}]");
    cr_expect_eq(c.at.kind, POLICY_BLOCKREF_HASH);
    cr_expect_eq(c.at.hash[1], 0xe9);
    expect_number(ok(ETH, "eth_getCode", "[" ADDR ", {\"blockNumber\":\"0x99\"}]").at, 0x99);
    expect_tag(ok(ETH, "eth_getCode", "[" ADDR ", {\"blockNumber\":\"finalized\"}]").at, POLICY_TAG_FINALIZED, 0);
    expect_parse(ETH, "eth_getCode", "[" ADDR ", {}]");
    expect_parse(ETH, "eth_getCode", "[" ADDR ", {\"blockHash\":\"0x5\"}]");
    expect_parse(ETH, "eth_getCode", "[" ADDR ", {\"blockNumber\":\"" HASH_HEX "\"}]");
    expect_parse(ETH, "eth_getCode", "[" ADDR ", {\"block\\u0048ash\":\"" HASH_HEX "\"}]");
    expect_parse(ETH, "eth_getBalance", "[" ADDR ", [\"0x1\"]]");
}

Test(blockref, hash_only_methods)
{
    policy_blockref_call_t c = ok(ETH, "eth_getBlockByHash", "[\"" HASH_HEX "\", false]");
    cr_expect_eq(c.at.kind, POLICY_BLOCKREF_HASH);
    c = ok(ETH, "eth_getBlockReceipts", "[\"" HASH_HEX "\"]");
    cr_expect_eq(c.at.kind, POLICY_BLOCKREF_HASH);
    expect_number(ok(ETH, "eth_getBlockReceipts", "[\"0x10\"]").at, 16);
    expect_parse(ETH, "eth_getBlockByHash", "[\"0x10\"]");
    expect_parse(ETH, "eth_getBlockByHash", "[\"latest\"]");
    expect_parse(ETH, "eth_getBlockByHash", "[\"0x88e96d4537bea4d9c05d12549907b32561d3bf31f45aae734cdc119f13406cbg\"]");
    expect_number(ok(ETH, "eth_feeHistory", "[\"0x4\", \"0x20\", [25, 75]]").at, 32);
    expect_tag(ok(ETH, "eth_feeHistory", "[4, \"latest\"]").at, POLICY_TAG_LATEST, 0);
    expect_parse(ETH, "eth_feeHistory", "[4]");
}

/* eth_getLogs' fromBlock and toBlock as tags; implicit: left out (2 = both). */
static void logs_tags(const char *params, policy_block_tag_t from, policy_block_tag_t to, int implicit_from,
                      int implicit_to)
{
    policy_blockref_call_t c = ok(ETH, "eth_getLogs", params);
    expect_tag(c.from, from, implicit_from);
    expect_tag(c.at, to, implicit_to);
}

Test(blockref, get_logs)
{
    const char *m = "eth_getLogs";
    policy_blockref_call_t c = ok(ETH, m, "[{\"fromBlock\":\"0x10\",\"toBlock\":\"0x20\",\"address\":" ADDR "}]");
    expect_number(c.from, 16);
    expect_number(c.at, 32);
    logs_tags("[{}]", POLICY_TAG_LATEST, POLICY_TAG_LATEST, 1, 1);
    logs_tags("[]", POLICY_TAG_LATEST, POLICY_TAG_LATEST, 1, 1);
    logs_tags("[{\"fromBlock\":\"earliest\",\"topics\":[null,[\"" HASH_HEX "\"]]}]", POLICY_TAG_EARLIEST,
              POLICY_TAG_LATEST, 0, 1);
    logs_tags("[{\"fromBlock\":null,\"toBlock\":\"finalized\"}]", POLICY_TAG_LATEST, POLICY_TAG_FINALIZED, 1, 0);
    c = ok(ETH, m, "[{\"blockHash\":\"" HASH_HEX "\"}]");
    cr_expect_eq(c.at.kind, POLICY_BLOCKREF_HASH);
    cr_expect_eq(c.from.kind, POLICY_BLOCKREF_NONE);
    /* Go's decoder keeps the last of two equal keys: so does this one */
    expect_number(ok(ETH, m, "[{\"toBlock\":\"0x1\",\"toBlock\":\"0x2\"}]").at, 2);
    expect_parse(ETH, m, "[{\"blockHash\":\"" HASH_HEX "\",\"fromBlock\":\"0x1\"}]");
    expect_parse(ETH, m, "[{\"toBlock\":\"" HASH_HEX "\"}]");
    expect_parse(ETH, m, "[{\"toBlock\":{\"blockNumber\":\"0x1\"}}]");
    expect_parse(ETH, m, "[{\"to\\u0042lock\":\"0x1\"}]");
    expect_parse(ETH, m, "[\"0x10\"]");
}

Test(blockref, solana)
{
    policy_blockref_call_t c = ok(SOL, "getBlock", "[430, {\"encoding\":\"json\",\"maxSupportedTransactionVersion\":0}]");
    expect_number(c.at, 430);
    cr_expect_eq(c.commitment, POLICY_COMMITMENT_DEFAULT);
    expect_number(ok(SOL, "getBlockTime", "[5]").at, 5);
    expect_parse(SOL, "getBlock", "[\"430\"]");
    expect_parse(SOL, "getBlock", "[]");
    c = ok(SOL, "getBalance", "[\"83astBRguLMdt2h5U1Tpdq5tjFoJ6noeGwaY3mDLVcri\", {\"commitment\":\"confirmed\","
                              "\"minContextSlot\":250000000}]");
    cr_expect_eq(c.at.kind, POLICY_BLOCKREF_NONE);
    cr_expect_eq(c.has_min_context, 1);
    cr_expect_eq(c.min_context_slot, 250000000);
    cr_expect_eq(c.commitment, POLICY_COMMITMENT_CONFIRMED);
    c = ok(SOL, "getSlot", "[{\"minContextSlot\":7,\"commitment\":\"processed\"}]");
    cr_expect_eq(c.min_context_slot, 7);
    cr_expect_eq(c.commitment, POLICY_COMMITMENT_PROCESSED);
    c = ok(SOL, "getBlock", "[9, {\"commitment\":\"finalized\"}]");
    expect_number(c.at, 9);
    cr_expect_eq(c.commitment, POLICY_COMMITMENT_FINALIZED);
    c = ok(SOL, "getLatestBlockhash", "[{\"commitment\":\"recent\"}]"); /* the node's to refuse */
    cr_expect_eq(c.commitment, POLICY_COMMITMENT_DEFAULT);
    c = ok(SOL, "sendTransaction", "[\"AQAB\", {\"encoding\":\"base64\",\"minContextSlot\":12}]");
    cr_expect_eq(c.min_context_slot, 12);
    expect_parse(SOL, "getBalance", "[\"x\", {\"minContextSlot\":\"12\"}]");
    expect_parse(SOL, "getBalance", "[\"x\", {\"minContextSlot\":-1}]");
    expect_parse(SOL, "getBalance", "[\"x\", {\"min\\u0043ontextSlot\":1}]");
    /* an Ethereum call's objects are not Solana config objects */
    c = ok(ETH, "eth_call", "[{\"minContextSlot\":5}]");
    cr_expect_eq(c.has_min_context, 0);
}

Test(blockref, unknown_methods_name_no_block)
{
    policy_blockref_call_t c = ok(ETH, "eth_chainId", "[]");
    cr_expect_eq(c.at.kind, POLICY_BLOCKREF_NONE);
    c = ok(ETH, "eth_blockNumber", "");
    cr_expect_eq(c.at.kind, POLICY_BLOCKREF_NONE);
    c = ok(ETH, "eth_getBlockByNumbers", "[\"0x1\"]");
    cr_expect_eq(c.at.kind, POLICY_BLOCKREF_NONE);
    /* a method name is compared whole, by length too */
    c = ok(ETH, "eth_getBlockBy", "[\"0x1\"]");
    cr_expect_eq(c.at.kind, POLICY_BLOCKREF_NONE);
    expect_parse(ETH, "eth_chainId", "{}");
    cr_expect_str_eq(policy_block_tag_name(POLICY_TAG_COUNT), "unknown");
}

/* Every prefix and every one-byte change of real params, each in a heap
 * block of exactly its size: the extractor answers OK or PARSE and never
 * reads past the span (ASan builds see a byte too far). Prefixes are not
 * valid JSON: the wire scanner must refuse them, not run past them. */
Test(blockref, never_reads_past_the_bytes)
{
    static const struct {
        policy_chain_t chain;
        const char *method, *params;
    } cases[] = {
        {ETH, "eth_getLogs", "[{\"fromBlock\":\"0x10\",\"toBlock\":\"latest\",\"blockHash\":null,\"topics\":[[]]}]"},
        {ETH, "eth_call", "[{\"to\":" ADDR "}, {\"blockHash\":\"" HASH_HEX "\"}]"},
        {ETH, "eth_getBlockByNumber", "[\"0x1b4\", false]"},
        {SOL, "getBlock", "[430, {\"commitment\":\"confirmed\",\"minContextSlot\":99}]"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        size_t n = strlen(cases[k].params);
        for (size_t len = 0; len <= n; len++) {
            for (int flip = -1; flip < (int)len; flip++) {
                char *b = malloc(len ? len : 1);
                memcpy(b, cases[k].params, len);
                if (flip >= 0)
                    b[flip] = b[flip] == '"' ? '\\' : (char)(b[flip] ^ 0x20);
                policy_blockref_call_t c;
                sl_err_t e = policy_blockref_extract(cases[k].chain, cases[k].method, strlen(cases[k].method), b,
                                                     (wire_span_t){0, (uint32_t)len}, &c);
                cr_assert(e == SL_OK || e == SL_ERR_PARSE, "case %zu len %zu flip %d: %s", k, len, flip,
                          sl_err_name(e));
                free(b);
            }
        }
    }
}

/* Deep history (archive_depth below the head) and the archive tiers. */
Test(blockref, deep_and_archive_tier)
{
    policy_blockref_call_t c;
    memset(&c, 0, sizeof(c));
    c.at.kind = POLICY_BLOCKREF_NUMBER;
    c.at.number = 1000;
    cr_expect_eq(policy_blockref_deep(&c, 1128, 128), 0, "exactly depth below: not deep");
    cr_expect_eq(policy_blockref_deep(&c, 1129, 128), 1);
    cr_expect_eq(policy_blockref_deep(&c, 0, 128), 0, "head unknown");
    cr_expect_eq(policy_blockref_deep(&c, 100, 128), 0, "a block above the head");
    c.at.kind = POLICY_BLOCKREF_TAG;
    c.at.tag = POLICY_TAG_EARLIEST;
    cr_expect_eq(policy_blockref_deep(&c, 5, 128), 1, "earliest");
    c.at.tag = POLICY_TAG_LATEST;
    cr_expect_eq(policy_blockref_deep(&c, 5000, 128), 0);
    c.from.kind = POLICY_BLOCKREF_NUMBER; /* eth_getLogs from an old block to latest */
    c.from.number = 10;
    cr_expect_eq(policy_blockref_deep(&c, 5000, 128), 1);
    cr_expect_eq(policy_blockref_archive_tier(POLICY_ARCHIVE_YES, 1), 0);
    cr_expect_eq(policy_blockref_archive_tier(POLICY_ARCHIVE_UNKNOWN, 1), 1);
    cr_expect_eq(policy_blockref_archive_tier(POLICY_ARCHIVE_NO, 1), -1);
    for (int a = 0; a <= 2; a++)
        cr_expect_eq(policy_blockref_archive_tier(a, 0), 0);
}

Test(blockref, depth_below_the_head)
{
    policy_blockref_call_t c;
    memset(&c, 0, sizeof(c));
    c.at.kind = POLICY_BLOCKREF_NUMBER;
    c.at.number = 1000;
    cr_expect_eq(policy_blockref_depth(&c, 1500), 500);
    cr_expect_eq(policy_blockref_depth(&c, 0), 0, "head unknown");
    cr_expect_eq(policy_blockref_depth(&c, 900), 0, "a block above the head");
    c.from.kind = POLICY_BLOCKREF_NUMBER; /* eth_getLogs: the deeper end counts */
    c.from.number = 100;
    cr_expect_eq(policy_blockref_depth(&c, 1500), 1400);
    memset(&c, 0, sizeof(c));
    c.at.kind = POLICY_BLOCKREF_TAG;
    c.at.tag = POLICY_TAG_EARLIEST;
    cr_expect_eq(policy_blockref_depth(&c, 7000), 7000);
    c.at.tag = POLICY_TAG_LATEST;
    cr_expect_eq(policy_blockref_depth(&c, 7000), 0);
}
