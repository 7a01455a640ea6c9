/* policy/blockref.c: the table of where each method keeps its block, and
 * the readers of the values found there (policy/blockref.h). */
#include "policy/blockref.h"

#include <string.h>

#include "base/sl_parse.h"
#include "wire/json_scan.h"

typedef enum shape {
    SHAPE_NUM_TAG,                /* number or tag (geth rpc.BlockNumber) */
    SHAPE_NUM_TAG_HASH,           /* number, tag, hash or EIP-1898 object (rpc.BlockNumberOrHash) */
    SHAPE_HASH,                   /* a block hash only */
    SHAPE_FILTER,                 /* eth_getLogs' filter object */
    SHAPE_SLOT,                   /* a Solana slot: a JSON number */
} shape_t;

typedef struct row {
    policy_chain_t chain;
    const char *name;
    uint8_t pos;                  /* index of the param in the params array */
    shape_t shape;
    uint8_t optional;             /* absent or null: an implicit `latest` */
} row_t;

#define ETH POLICY_CHAIN_ETHEREUM
#define SOL POLICY_CHAIN_SOLANA

/* Sorted by chain, then name (a test checks it). Positions from the
 * execution-apis spec and geth's internal/ethapi signatures; the state
 * methods take geth's optional block (latest when left out). */
static const row_t rows[] = {
    {ETH, "eth_call", 1, SHAPE_NUM_TAG_HASH, 1},
    {ETH, "eth_createAccessList", 1, SHAPE_NUM_TAG_HASH, 1},
    {ETH, "eth_estimateGas", 1, SHAPE_NUM_TAG_HASH, 1},
    {ETH, "eth_feeHistory", 1, SHAPE_NUM_TAG, 0},
    {ETH, "eth_getBalance", 1, SHAPE_NUM_TAG_HASH, 1},
    {ETH, "eth_getBlockByHash", 0, SHAPE_HASH, 0},
    {ETH, "eth_getBlockByNumber", 0, SHAPE_NUM_TAG, 0},
    {ETH, "eth_getBlockReceipts", 0, SHAPE_NUM_TAG_HASH, 0},
    {ETH, "eth_getBlockTransactionCountByHash", 0, SHAPE_HASH, 0},
    {ETH, "eth_getBlockTransactionCountByNumber", 0, SHAPE_NUM_TAG, 0},
    {ETH, "eth_getCode", 1, SHAPE_NUM_TAG_HASH, 1},
    {ETH, "eth_getLogs", 0, SHAPE_FILTER, 1},
    {ETH, "eth_getProof", 2, SHAPE_NUM_TAG_HASH, 1},
    {ETH, "eth_getStorageAt", 2, SHAPE_NUM_TAG_HASH, 1},
    {ETH, "eth_getTransactionByBlockHashAndIndex", 0, SHAPE_HASH, 0},
    {ETH, "eth_getTransactionByBlockNumberAndIndex", 0, SHAPE_NUM_TAG, 0},
    {ETH, "eth_getTransactionCount", 1, SHAPE_NUM_TAG_HASH, 1},
    {ETH, "eth_getUncleByBlockHashAndIndex", 0, SHAPE_HASH, 0},
    {ETH, "eth_getUncleByBlockNumberAndIndex", 0, SHAPE_NUM_TAG, 0},
    {ETH, "eth_getUncleCountByBlockHash", 0, SHAPE_HASH, 0},
    {ETH, "eth_getUncleCountByBlockNumber", 0, SHAPE_NUM_TAG, 0},
    {ETH, "trace_block", 0, SHAPE_NUM_TAG, 0},
    {ETH, "trace_replayBlockTransactions", 0, SHAPE_NUM_TAG, 0},
    {SOL, "getBlock", 0, SHAPE_SLOT, 0},
    {SOL, "getBlockCommitment", 0, SHAPE_SLOT, 0},
    {SOL, "getBlockTime", 0, SHAPE_SLOT, 0},
};

#define NROWS (sizeof(rows) / sizeof(rows[0]))
#define MAX_PARAMS 16             /* more is no call of these methods: unreadable */

static const char *const tag_names[POLICY_TAG_COUNT] = {
    [POLICY_TAG_LATEST] = "latest",     [POLICY_TAG_PENDING] = "pending",   [POLICY_TAG_SAFE] = "safe",
    [POLICY_TAG_FINALIZED] = "finalized", [POLICY_TAG_EARLIEST] = "earliest",
};

const char *policy_block_tag_name(policy_block_tag_t tag)
{
    return (unsigned)tag < POLICY_TAG_COUNT ? tag_names[tag] : "unknown";
}

const char *policy_blockref_row(size_t i, policy_chain_t *chain)
{
    if (i >= NROWS)
        return NULL;
    *chain = rows[i].chain;
    return rows[i].name;
}

static const row_t *find_row(policy_chain_t chain, const char *name, size_t len)
{
    for (size_t i = 0; i < NROWS; i++)
        if (rows[i].chain == chain && strlen(rows[i].name) == len && memcmp(rows[i].name, name, len) == 0)
            return &rows[i];
    return NULL;
}

/* ---- values ------------------------------------------------------------- */

static const policy_blockref_t implicit_latest = {.kind = POLICY_BLOCKREF_TAG, .implicit = 1,
                                                  .tag = POLICY_TAG_LATEST};

/* Hex digits (leading zeros allowed) into a uint64; 0 past 64 bits or on a
 * non-digit. */
static int hex_u64(const char *p, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        int d = sl_hex_digit((uint8_t)p[i]);
        if (d < 0 || v > (UINT64_MAX >> 4))
            return 0;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return 1;
}

static int hex_hash(const char *p, size_t n, uint8_t out[32])
{
    if (n != 64)
        return 0;
    for (size_t i = 0; i < 32; i++) {
        int hi = sl_hex_digit((uint8_t)p[2 * i]), lo = sl_hex_digit((uint8_t)p[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return 0;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 1;
}

/* A string value: a tag, "0x" + 64 hex (a hash, if allowed), "0x" + hex or
 * decimal digits (a number). */
static int from_string(const char *buf, wire_span_t v, int hash_ok, policy_blockref_t *ref)
{
    char text[80];
    if (wire_json_string(buf, v, text, sizeof text) != SL_OK)
        return 0;
    size_t n = strlen(text);
    for (unsigned t = 0; t < POLICY_TAG_COUNT; t++) {
        if (strcmp(text, tag_names[t]) == 0) {
            *ref = (policy_blockref_t){.kind = POLICY_BLOCKREF_TAG, .tag = (policy_block_tag_t)t};
            return 1;
        }
    }
    *ref = (policy_blockref_t){0};
    if (n > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
        if (n == 66) {
            ref->kind = POLICY_BLOCKREF_HASH;
            return hash_ok && hex_hash(text + 2, 64, ref->hash);
        }
        ref->kind = POLICY_BLOCKREF_NUMBER;
        return hex_u64(text + 2, n - 2, &ref->number);
    }
    ref->kind = POLICY_BLOCKREF_NUMBER;
    return sl_parse_u64(text, n, UINT64_MAX, &ref->number) == SL_OK;
}

static int from_number(const char *buf, wire_span_t v, policy_blockref_t *ref)
{
    *ref = (policy_blockref_t){.kind = POLICY_BLOCKREF_NUMBER};
    return sl_parse_u64(buf + v.off, v.len, UINT64_MAX, &ref->number) == SL_OK;
}

/* Each member of the object at v through fn (sl_err_t: SL_OK goes on). A
 * key written with escapes could be any name: routing would guess, so the
 * whole call reads as unreadable instead. */
static sl_err_t refuse_escaped(const char *buf, wire_span_t key)
{
    return wire_json_key_escaped(buf, key) ? SL_ERR_PARSE : SL_OK;
}

#define OK_IF(cond) ((cond) ? SL_OK : SL_ERR_PARSE)

static int each_member(const char *buf, wire_span_t v, wire_member_fn fn, void *arg)
{
    return wire_json_each_member(buf, v, fn, arg) == SL_OK;
}

/* EIP-1898: {"blockNumber": N} or {"blockHash": H, "requireCanonical": b}. */
static sl_err_t eip1898_member(const char *buf, wire_span_t key, wire_span_t val, void *arg)
{
    policy_blockref_t *ref = arg;
    if (wire_json_key_is(buf, key, "blockNumber"))
        return OK_IF(wire_json_kind(buf, val) == WIRE_JSON_STRING && from_string(buf, val, 0, ref) &&
                     ref->kind != POLICY_BLOCKREF_HASH);
    if (wire_json_key_is(buf, key, "blockHash"))
        return OK_IF(wire_json_kind(buf, val) == WIRE_JSON_STRING && from_string(buf, val, 1, ref) &&
                     ref->kind == POLICY_BLOCKREF_HASH);
    return refuse_escaped(buf, key); /* requireCanonical and whatever else */
}

static int read_value(const char *buf, wire_span_t v, shape_t shape, policy_blockref_t *ref)
{
    switch (wire_json_kind(buf, v)) {
    case WIRE_JSON_STRING:
        if (shape == SHAPE_SLOT || !from_string(buf, v, shape != SHAPE_NUM_TAG, ref))
            return 0;
        return shape != SHAPE_HASH || ref->kind == POLICY_BLOCKREF_HASH;
    case WIRE_JSON_NUMBER:
        return (shape == SHAPE_NUM_TAG || shape == SHAPE_NUM_TAG_HASH || shape == SHAPE_SLOT) &&
               from_number(buf, v, ref);
    case WIRE_JSON_OBJECT:
        *ref = (policy_blockref_t){0};
        return shape == SHAPE_NUM_TAG_HASH && each_member(buf, v, eip1898_member, ref) &&
               ref->kind != POLICY_BLOCKREF_NONE;
    case WIRE_JSON_NONE:
    case WIRE_JSON_ARRAY:
    case WIRE_JSON_TRUE:
    case WIRE_JSON_FALSE:
    case WIRE_JSON_NULL:
        return 0;
    }
    return 0;
}

sl_err_t policy_blockref_number(const char *buf, wire_span_t v, uint64_t *n)
{
    policy_blockref_t ref;
    if (!read_value(buf, v, SHAPE_NUM_TAG, &ref) || ref.kind != POLICY_BLOCKREF_NUMBER)
        return SL_ERR_PARSE;
    *n = ref.number;
    return SL_OK;
}

/* ---- eth_getLogs -------------------------------------------------------- */

typedef struct filter {
    policy_blockref_call_t *out;
    uint8_t has_from, has_to, has_hash;
} filter_t;

static sl_err_t filter_member(const char *buf, wire_span_t key, wire_span_t val, void *arg)
{
    filter_t *f = arg;
    int null = wire_json_kind(buf, val) == WIRE_JSON_NULL; /* geth: a null member is one left out */
    if (wire_json_key_is(buf, key, "fromBlock")) {
        f->has_from = !null;
        return OK_IF(null || read_value(buf, val, SHAPE_NUM_TAG, &f->out->from));
    }
    if (wire_json_key_is(buf, key, "toBlock")) {
        f->has_to = !null;
        return OK_IF(null || read_value(buf, val, SHAPE_NUM_TAG, &f->out->at));
    }
    if (wire_json_key_is(buf, key, "blockHash")) {
        f->has_hash = !null;
        return OK_IF(null || read_value(buf, val, SHAPE_HASH, &f->out->at));
    }
    return refuse_escaped(buf, key);
}

static int read_filter(const char *buf, wire_span_t v, policy_blockref_call_t *out)
{
    filter_t f = {.out = out};
    if (wire_json_kind(buf, v) != WIRE_JSON_OBJECT || !each_member(buf, v, filter_member, &f))
        return 0;
    if (f.has_hash) {
        out->from = (policy_blockref_t){0};
        return !f.has_from && !f.has_to; /* geth refuses both at once */
    }
    if (!f.has_from)
        out->from = implicit_latest;
    if (!f.has_to)
        out->at = implicit_latest;
    return 1;
}

/* ---- Solana config objects ---------------------------------------------- */

static sl_err_t sol_config_member(const char *buf, wire_span_t key, wire_span_t val, void *arg)
{
    static const struct {
        const char *name;
        policy_commitment_t level;
    } levels[] = {
        {"processed", POLICY_COMMITMENT_PROCESSED},
        {"confirmed", POLICY_COMMITMENT_CONFIRMED},
        {"finalized", POLICY_COMMITMENT_FINALIZED},
    };
    policy_blockref_call_t *out = arg;
    if (wire_json_key_is(buf, key, "minContextSlot")) {
        out->has_min_context = 1;
        return OK_IF(wire_json_kind(buf, val) == WIRE_JSON_NUMBER &&
                     sl_parse_u64(buf + val.off, val.len, UINT64_MAX, &out->min_context_slot) == SL_OK);
    }
    if (wire_json_key_is(buf, key, "commitment")) {
        char text[16];
        if (wire_json_kind(buf, val) != WIRE_JSON_STRING)
            return SL_ERR_PARSE;
        if (wire_json_string(buf, val, text, sizeof text) != SL_OK)
            return SL_OK; /* longer than any level: the node's to refuse, as an unknown one */
        for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
            if (strcmp(text, levels[i].name) == 0)
                out->commitment = levels[i].level;
        return SL_OK;
    }
    return refuse_escaped(buf, key);
}

/* ---- the call ----------------------------------------------------------- */

sl_err_t policy_blockref_extract(policy_chain_t chain, const char *method, size_t mlen, const char *buf,
                                 wire_span_t params, policy_blockref_call_t *out)
{
    memset(out, 0, sizeof(*out));
    wire_span_t p[MAX_PARAMS];
    size_t n = 0;
    if (params.len != 0) {
        if (wire_json_kind(buf, params) != WIRE_JSON_ARRAY ||
            wire_envelope_scan_array(buf + params.off, params.len, p, MAX_PARAMS, &n) != SL_OK)
            goto parse;
        for (size_t i = 0; i < n; i++)
            p[i].off += params.off;
    }
    for (size_t i = 0; chain == POLICY_CHAIN_SOLANA && i < n; i++)
        if (wire_json_kind(buf, p[i]) == WIRE_JSON_OBJECT && !each_member(buf, p[i], sol_config_member, out))
            goto parse;
    const row_t *r = find_row(chain, method, mlen);
    if (r == NULL)
        return SL_OK;
    int absent = r->pos >= n || wire_json_kind(buf, p[r->pos]) == WIRE_JSON_NULL;
    if (absent && !r->optional)
        goto parse;
    if (absent) {
        out->at = implicit_latest;
        if (r->shape == SHAPE_FILTER) /* no filter: the spec's defaults, latest to latest */
            out->from = implicit_latest;
        return SL_OK;
    }
    if (r->shape == SHAPE_FILTER) {
        if (read_filter(buf, p[r->pos], out))
            return SL_OK;
        goto parse;
    }
    if (read_value(buf, p[r->pos], r->shape, &out->at))
        return SL_OK;
parse:
    memset(out, 0, sizeof(*out));
    return SL_ERR_PARSE;
}

static int ref_deep(const policy_blockref_t *r, uint64_t head, uint32_t depth)
{
    if (r->kind == POLICY_BLOCKREF_TAG)
        return r->tag == POLICY_TAG_EARLIEST;
    return r->kind == POLICY_BLOCKREF_NUMBER && head > depth && r->number < head - depth;
}

int policy_blockref_deep(const policy_blockref_call_t *c, uint64_t head, uint32_t depth)
{
    if (head == 0)
        return 0;
    return ref_deep(&c->at, head, depth) || ref_deep(&c->from, head, depth);
}

static uint64_t ref_depth(const policy_blockref_t *r, uint64_t head)
{
    if (r->kind == POLICY_BLOCKREF_TAG && r->tag == POLICY_TAG_EARLIEST)
        return head;
    return r->kind == POLICY_BLOCKREF_NUMBER && r->number < head ? head - r->number : 0;
}

uint64_t policy_blockref_depth(const policy_blockref_call_t *c, uint64_t head)
{
    uint64_t a = ref_depth(&c->at, head), f = ref_depth(&c->from, head);
    return a > f ? a : f;
}

int policy_blockref_archive_tier(int archive, int deep)
{
    if (!deep)
        return 0;
    return archive == POLICY_ARCHIVE_YES ? 0 : archive == POLICY_ARCHIVE_NO ? -1 : 1;
}
