/* policy/logsplit.c: eth_getLogs split planning, sub-call params, the merge
 * rule, and the built-in block limits per provider (policy/logsplit.h). */
#include "policy/logsplit.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/sl_parse.h"
#include "wire/json_scan.h"

/* ---- the built-in limits ------------------------------------------------- */

/* max_logs_blocks when an endpoint does not set it, by cost_profile; sorted
 * by name, one row per built-in profile (tests check both). The value is the
 * number of blocks one call may span, fromBlock and toBlock included. */
static const struct {
    const char *profile;
    uint32_t blocks;
} default_blocks[] = {
    /* Alchemy: a free-tier key takes 10 blocks per eth_getLogs
     * (../shared/reference/providers.md, table B1: "10-block free-tier
     * getLogs cap", deterministic over 50,358 hits,
     * EspressoSystems/espresso-network PR #4838; Alchemy's eth_getLogs
     * page: Free 10, Pay As You Go unlimited on Ethereum, Base, Optimism,
     * Arbitrum, Polygon and 10,000 on other chains). Its refusals have named
     * other plans' caps, "up to a 500 block range" (BobTheBuidler/dank_mids
     * #772) and "up to a 2K block range" (ethers.js #4703). The lowest is
     * taken so no plan refuses the sub-calls; a paid endpoint sets its own
     * max_logs_blocks (0 on Ethereum: no limit). */
    {"alchemy", 10},
    /* a provider sluice knows nothing of (self-hosted geth: --rpc.rangelimit
     * is 0 by default, no limit): one call, and a refusal in any vendor's
     * words (POLICY_VERDICT_F_LOGS_RANGE) is what says otherwise */
    {"flat", 0},
    /* Helius serves Solana, which has no eth_getLogs */
    {"helius", 0},
    /* Infura's live API: -32602 "range 1000000 exceeds limit of 10000"
     * (INFURA/infura #237, 2026) */
    {"infura", 10000},
    /* QuickNode: -32614 "eth_getLogs is limited to a 10,000 range"
     * (eternalsafe/wallet #57, OffchainLabs/arbitrum-sdk #609) */
    {"quicknode", 10000},
};

#define NDEFAULTS (sizeof(default_blocks) / sizeof(default_blocks[0]))

uint32_t policy_logsplit_default_blocks(const char *profile)
{
    for (size_t i = 0; profile != NULL && i < NDEFAULTS; i++)
        if (strcmp(default_blocks[i].profile, profile) == 0)
            return default_blocks[i].blocks;
    return 0;
}

const char *policy_logsplit_default_row(size_t i, uint32_t *blocks)
{
    if (i >= NDEFAULTS)
        return NULL;
    *blocks = default_blocks[i].blocks;
    return default_blocks[i].profile;
}

/* ---- the plan ------------------------------------------------------------ */

policy_logsplit_plan_t policy_logsplit_plan(uint64_t from, uint64_t to, uint32_t max_blocks, uint32_t max_split,
                                            policy_logs_range_t *out, size_t cap, size_t *n)
{
    *n = 0;
    if (from > to)
        return POLICY_LOGSPLIT_BACKWARDS;
    if (max_blocks == 0 || to - from < max_blocks) {
        if (cap == 0)
            return POLICY_LOGSPLIT_TOO_WIDE;
        out[0] = (policy_logs_range_t){from, to};
        *n = 1;
        return POLICY_LOGSPLIT_ONE;
    }
    uint64_t limit = max_split == 0 ? 1 : max_split;
    if (limit > cap)
        limit = cap;
    /* the parts are q + 1: compared as q, so 0..UINT64_MAX cannot wrap to 0 */
    uint64_t q = (to - from) / max_blocks;
    if (q >= limit)
        return POLICY_LOGSPLIT_TOO_WIDE;
    uint64_t parts = q + 1;
    for (uint64_t start = from, i = 0; i < parts; i++, start += max_blocks) {
        uint64_t end = to - start < max_blocks ? to : start + max_blocks - 1;
        out[i] = (policy_logs_range_t){start, end};
    }
    *n = (size_t)parts;
    return POLICY_LOGSPLIT_SPLIT;
}

size_t policy_logsplit_too_wide_message(char *out, size_t cap, uint64_t from, uint64_t to, uint32_t max_blocks,
                                        uint32_t max_split)
{
    uint64_t q = max_blocks ? (to - from) / max_blocks : 0;
    uint64_t blocks = to - from + 1, parts = q == UINT64_MAX ? q : q + 1;
    int n = snprintf(out, cap,
                     "eth_getLogs over %" PRIu64 " blocks (0x%" PRIx64 " to 0x%" PRIx64 ") needs %" PRIu64
                     " calls of at most %" PRIu32 " blocks; this network allows %" PRIu32
                     " (max_logs_split): ask for at most %" PRIu64 " blocks at a time",
                     blocks == 0 ? UINT64_MAX : blocks, from, to, parts, max_blocks, max_split,
                     (uint64_t)max_blocks * (max_split ? max_split : 1));
    return n < 0 ? 0 : (size_t)n;
}

/* ---- sub-call params ------------------------------------------------------ */

typedef struct writer {
    char *out;
    size_t cap, len;
    int full;
} writer_t;

static void put(writer_t *w, const char *p, size_t n)
{
    if (w->len + n > w->cap) {
        w->full = 1;
        return;
    }
    memcpy(w->out + w->len, p, n);
    w->len += n;
}

static sl_err_t copy_member(const char *buf, wire_span_t key, wire_span_t val, void *arg)
{
    writer_t *w = arg;
    if (wire_json_key_escaped(buf, key) ||
        (wire_json_key_is(buf, key, "blockHash") && wire_json_kind(buf, val) != WIRE_JSON_NULL))
        return SL_ERR_PARSE; /* a blockHash query is one block: nothing to split */
    if (wire_json_key_is(buf, key, "fromBlock") || wire_json_key_is(buf, key, "toBlock") ||
        wire_json_key_is(buf, key, "blockHash"))
        return SL_OK;
    put(w, ",", 1);
    put(w, buf + key.off, key.len);
    put(w, ":", 1);
    put(w, buf + val.off, val.len);
    return SL_OK;
}

sl_err_t policy_logsplit_params(const char *buf, wire_span_t params, policy_logs_range_t r, char *out, size_t cap,
                                size_t *len)
{
    wire_span_t p[2];
    size_t n = 0;
    *len = 0;
    if (wire_json_kind(buf, params) != WIRE_JSON_ARRAY ||
        wire_envelope_scan_array(buf + params.off, params.len, p, 1, &n) != SL_OK || n != 1)
        return SL_ERR_PARSE;
    p[0].off += params.off;
    if (wire_json_kind(buf, p[0]) != WIRE_JSON_OBJECT)
        return SL_ERR_PARSE;
    char head[96];
    int h = snprintf(head, sizeof head, "[{\"fromBlock\":\"0x%" PRIx64 "\",\"toBlock\":\"0x%" PRIx64 "\"", r.from,
                     r.to);
    writer_t w = {out, cap, 0, 0};
    put(&w, head, (size_t)h);
    sl_err_t err = wire_json_each_member(buf, p[0], copy_member, &w);
    if (err != SL_OK)
        return err;
    put(&w, "}]", 2);
    if (w.full)
        return SL_ERR_TOO_LARGE;
    *len = w.len;
    return SL_OK;
}

/* ---- checking and merging answers ----------------------------------------- */

typedef struct check {
    policy_logs_range_t r;
    uint64_t last;                /* blockNumber of the log before */
    int found;                    /* this log's blockNumber was read */
} check_t;

static sl_err_t check_member(const char *buf, wire_span_t key, wire_span_t val, void *arg)
{
    check_t *c = arg;
    char text[24];
    uint64_t n = 0;
    if (!wire_json_key_is(buf, key, "blockNumber"))
        return SL_OK;
    if (wire_json_kind(buf, val) != WIRE_JSON_STRING || wire_json_string(buf, val, text, sizeof text) != SL_OK ||
        text[0] != '0' || (text[1] != 'x' && text[1] != 'X') || text[2] == '\0')
        return SL_ERR_PARSE;
    for (const char *p = text + 2; *p != '\0'; p++) {
        int d = sl_hex_digit((uint8_t)*p);
        if (d < 0 || n > (UINT64_MAX >> 4))
            return SL_ERR_PARSE;
        n = n << 4 | (uint64_t)d;
    }
    if (n < c->r.from || n > c->r.to || n < c->last)
        return SL_ERR_RANGE;
    c->last = n;
    c->found = 1;
    return SL_OK;
}

sl_err_t policy_logsplit_check(const char *buf, wire_span_t result, policy_logs_range_t r)
{
    wire_span_t one;
    if (wire_json_kind(buf, result) != WIRE_JSON_ARRAY)
        return SL_ERR_PARSE;
    wire_scan_t s;
    wire_scan_init(&s, buf, result.off, result.len);
    if (wire_scan_open(&s, '[') != SL_OK)
        return SL_ERR_PARSE;
    check_t c = {.r = r, .last = r.from};
    int first = 1, more = 1;
    while (wire_scan_next(&s, &first, &more) == SL_OK && more) {
        if (wire_scan_value(&s, &one) != SL_OK || wire_json_kind(buf, one) != WIRE_JSON_OBJECT)
            return SL_ERR_PARSE;
        c.found = 0;
        sl_err_t err = wire_json_each_member(buf, one, check_member, &c);
        if (err != SL_OK)
            return err;
        if (!c.found)
            return SL_ERR_PARSE; /* a log without its block cannot be placed */
    }
    return more ? SL_ERR_PARSE : SL_OK;
}

static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* The elements of the array at span a, without its brackets and the
 * whitespace inside them; len 0 for an empty array. */
static int inner(const char *buf, wire_span_t a, wire_span_t *in)
{
    if (wire_json_kind(buf, a) != WIRE_JSON_ARRAY || a.len < 2 || buf[a.off + a.len - 1] != ']')
        return 0;
    uint32_t lo = a.off + 1, hi = a.off + a.len - 1;
    while (lo < hi && is_ws(buf[lo]))
        lo++;
    while (hi > lo && is_ws(buf[hi - 1]))
        hi--;
    *in = (wire_span_t){lo, hi - lo};
    return 1;
}

sl_err_t policy_logsplit_merge_size(const policy_logsplit_part_t *parts, size_t n, size_t *size)
{
    size_t total = 2, used = 0;
    for (size_t i = 0; i < n; i++) {
        wire_span_t in;
        if (!inner(parts[i].buf, parts[i].result, &in))
            return SL_ERR_PARSE;
        if (in.len == 0)
            continue;
        total += in.len + (used++ ? 1 : 0);
    }
    *size = total;
    return SL_OK;
}

sl_err_t policy_logsplit_merge(const policy_logsplit_part_t *parts, size_t n, char *out, size_t cap, size_t *len)
{
    size_t need;
    *len = 0;
    sl_err_t err = policy_logsplit_merge_size(parts, n, &need);
    if (err != SL_OK)
        return err;
    if (need > cap)
        return SL_ERR_TOO_LARGE;
    writer_t w = {out, cap, 0, 0};
    int used = 0;
    put(&w, "[", 1);
    for (size_t i = 0; i < n; i++) {
        wire_span_t in;
        if (!inner(parts[i].buf, parts[i].result, &in) || in.len == 0)
            continue;
        if (used++)
            put(&w, ",", 1);
        put(&w, parts[i].buf + in.off, in.len);
    }
    put(&w, "]", 1);
    *len = w.len;
    return SL_OK;
}
