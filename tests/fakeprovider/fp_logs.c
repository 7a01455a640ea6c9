/* fp_logs.c: eth_getLogs.
 *
 * Two shapes. Without --logs-per-block (the default, what the benchmarks and
 * the answer-size tests use) every call answers the mode's `logs` logs of
 * the head block, whatever its filter. With --logs-per-block N the filter is
 * read as a node reads it: fromBlock/toBlock (tags included, "latest" when
 * left out) or blockHash, and the answer is N logs for each block of the
 * range, in block order, derived from each block's hash (a reorg changes
 * them), written compactly as geth writes them. A range past the head is
 * refused as geth refuses it; with --logs-limit, a range of more blocks is
 * refused in the --logs-vendor's own words (and HTTP status). */
#include "fp.h"

#include <stdio.h>
#include <string.h>

#define TRANSFER_TOPIC "\"0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef\""
#define TO_ADDR "\"0x2222222222222222222222222222222222222222\""

static const fp_rpc_error_t err_unknown_block = {-32000, "unknown block"};
static const fp_rpc_error_t err_invalid_range = {-32602, "invalid block range params"};
static const fp_rpc_error_t err_future = {-32602, "block range extends beyond current head block"};
static const fp_rpc_error_t err_hash_with_range = {-32602, "can't specify fromBlock/toBlock with blockHash"};

#define Q(out, key, v) (fp_buf_puts(out, ",\"" key "\":"), fp_buf_put_quantity(out, v))

#define APPROVAL_TOPIC "\"0x8c5be1e5ebec7d5bd14f71427d1e84f3dd0314c0f7b2291e5b200ac8c7c3b925\""

/* --logs-varied: log i's address and topics (lowercase hex, quoted). */
typedef struct shape {
    char addr[45];
    char topics[3][69];
    int ntopics;
} shape_t;

static void shape_of(uint64_t i, shape_t *s)
{
    snprintf(s->addr, sizeof s->addr, "\"0x22222222222222222222222222222222222222%02x\"", (unsigned)(0x20 + i % 4));
    snprintf(s->topics[0], sizeof s->topics[0], "%s", i % 2 ? APPROVAL_TOPIC : TRANSFER_TOPIC);
    snprintf(s->topics[1], sizeof s->topics[1], "\"0x%062x%02x\"", 0, (unsigned)(i % 5));
    snprintf(s->topics[2], sizeof s->topics[2], "\"0x%062x%02x\"", 0, 0xffu);
    s->ntopics = i % 3 == 0 ? 3 : 2;
}

/* v (a JSON string) is one of set: a string, an array of strings; null, []
 * or an array holding a null is anything. */
static bool in_set(fp_span_t set, const char *v)
{
    fp_span_t e;
    fp_json_iter_t it;
    if (set.n == 0 || fp_span_eq(set, "null"))
        return true;
    if (!fp_json_iter_begin(&it, set, '['))
        return fp_span_eq(set, v);
    bool any = true, hit = false;
    while (fp_json_array_next(&it, &e) == 1) {
        if (fp_span_eq(e, "null"))
            return true;
        any = false;
        hit = hit || fp_span_eq(e, v);
    }
    return any || hit;
}

/* geth's filterLogs: address one of the filter's; as many topics at least as
 * the filter has positions, each in its position's set. */
static bool shape_matches(const shape_t *s, fp_span_t address, fp_span_t topics)
{
    fp_span_t pos;
    fp_json_iter_t it;
    if (!in_set(address, s->addr))
        return false;
    if (topics.n == 0 || fp_span_eq(topics, "null") || !fp_json_iter_begin(&it, topics, '['))
        return true;
    for (int k = 0; fp_json_array_next(&it, &pos) == 1; k++)
        if (k >= s->ntopics || !in_set(pos, s->topics[k]))
            return false;
    return true;
}

static void put_varied(fp_buf_t *out, const uint8_t bh[32], uint64_t n, uint64_t i, const shape_t *s, bool first)
{
    uint8_t txh[32];
    memcpy(txh, bh, 32);
    txh[0] ^= 0x5a;
    txh[31] ^= (uint8_t)i;
    txh[30] ^= (uint8_t)(i >> 8);
    fp_buf_puts(out, first ? "{\"address\":" : ",{\"address\":");
    fp_buf_puts(out, s->addr);
    fp_buf_puts(out, ",\"topics\":[");
    for (int k = 0; k < s->ntopics; k++) {
        fp_buf_puts(out, k ? "," : "");
        fp_buf_puts(out, s->topics[k]);
    }
    fp_buf_puts(out, "],\"data\":\"0x\"");
    Q(out, "blockNumber", n);
    fp_buf_puts(out, ",\"transactionHash\":");
    fp_buf_put_hex(out, txh, 32);
    Q(out, "transactionIndex", i);
    fp_buf_puts(out, ",\"blockHash\":");
    fp_buf_put_hex(out, bh, 32);
    Q(out, "logIndex", i);
    fp_buf_puts(out, ",\"removed\":false}");
}

/* About 470 bytes per log: logs=45 gives a ~20 KB answer. */
static void put_log(fp_buf_t *out, const uint8_t bh[32], uint64_t n, uint64_t i, bool first)
{
    uint8_t txh[32];
    memcpy(txh, bh, 32);
    txh[0] ^= 0xa5;
    txh[31] ^= (uint8_t)i;
    txh[30] ^= (uint8_t)(i >> 8);
    fp_buf_puts(out, first ? "{\"address\":" TO_ADDR : ",{\"address\":" TO_ADDR);
    fp_buf_puts(out, ",\"topics\":[" TRANSFER_TOPIC "],\"data\":");
    fp_buf_put_hex(out, txh, 32);
    Q(out, "blockNumber", n);
    fp_buf_puts(out, ",\"transactionHash\":");
    fp_buf_put_hex(out, txh, 32);
    Q(out, "transactionIndex", i);
    fp_buf_puts(out, ",\"blockHash\":");
    fp_buf_put_hex(out, bh, 32);
    Q(out, "logIndex", i);
    fp_buf_puts(out, ",\"removed\":false}");
}

typedef struct filter {
    fp_span_t from, to, hash;   /* n == 0: absent (or null) */
    fp_span_t address, topics;  /* --logs-varied only */
} filter_t;

static bool read_filter(const fp_call_t *call, filter_t *f)
{
    fp_span_t obj, key, val;
    fp_json_iter_t it;
    *f = (filter_t){{0}};
    if (!fp_json_array_get(call->params, 0, &obj))
        return true; /* no filter: latest to latest */
    if (!fp_json_iter_begin(&it, obj, '{'))
        return false;
    int r;
    while ((r = fp_json_object_next(&it, &key, &val)) == 1) {
        if (fp_span_eq(val, "null"))
            continue;
        if (fp_span_eq(key, "fromBlock"))
            f->from = val;
        else if (fp_span_eq(key, "toBlock"))
            f->to = val;
        else if (fp_span_eq(key, "blockHash"))
            f->hash = val;
        else if (fp_span_eq(key, "address"))
            f->address = val;
        else if (fp_span_eq(key, "topics"))
            f->topics = val;
    }
    return r == 0;
}

/* The vendor's refusal: its code and words (the answer's error), and its
 * HTTP status for the whole request (QuickNode answers 413). */
static const fp_rpc_error_t *vendor_refusal(fp_server_t *srv, uint64_t from, uint64_t to)
{
    const fp_vendor_t *v = srv->logs_vendor;
    fp_buf_t msg = {0};
    fp_vendor_message(v, &msg, from, to, srv->logs_limit);
    snprintf(srv->call_error_msg, sizeof srv->call_error_msg, "%.*s", (int)msg.len, msg.data);
    fp_buf_dispose(&msg);
    srv->call_error = (fp_rpc_error_t){v->code, srv->call_error_msg};
    if (v->status != 200)
        srv->reply_status = v->status;
    return &srv->call_error;
}

/* Resolves the range; false with *err set when a node would refuse it. A
 * blockHash's block may be one a reorg replaced (a node keeps side
 * branches): then *by_hash is set and bh holds its hash. */
static bool resolve(const fp_server_t *srv, const fp_call_t *call, const filter_t *f, uint64_t *from, uint64_t *to,
                    uint8_t bh[32], bool *by_hash, const fp_rpc_error_t **err)
{
    fp_span_t s;
    *err = &fp_err_invalid_params;
    if (f->hash.n) {
        *err = &err_hash_with_range;
        if (f->from.n || f->to.n)
            return false;
        *err = &err_unknown_block;
        if (!fp_json_string(f->hash, &s) || !fp_block_known_hash(srv, s, from, bh) || *from > call->head)
            return false;
        *to = *from;
        *by_hash = true;
        return true;
    }
    *from = *to = call->head;
    if ((f->from.n && !fp_block_param(srv, f->from, call->head, from)) ||
        (f->to.n && !fp_block_param(srv, f->to, call->head, to)))
        return false;
    *err = *from > *to ? &err_invalid_range : &err_future;
    return *from <= *to && *to <= call->head;
}

const fp_rpc_error_t *fp_eth_get_logs(fp_server_t *srv, const fp_call_t *call, fp_buf_t *out)
{
    uint8_t bh[32];
    bool by_hash = false;
    if (srv->logs_per_block == 0) {
        fp_block_hash(srv, call->head, bh);
        fp_buf_puts(out, "[");
        for (int64_t i = 0; i < srv->mode.logs; i++)
            put_log(out, bh, call->head, (uint64_t)i, i == 0);
        fp_buf_puts(out, "]");
        return NULL;
    }
    filter_t f;
    uint64_t from, to;
    const fp_rpc_error_t *err = &fp_err_invalid_params;
    if (!read_filter(call, &f) || !resolve(srv, call, &f, &from, &to, bh, &by_hash, &err))
        return err;
    if (srv->logs_limit && srv->logs_vendor && to - from >= srv->logs_limit)
        return vendor_refusal(srv, from, to);
    bool first = true;
    fp_buf_puts(out, "[");
    for (uint64_t n = from; n <= to; n++) {
        if (!by_hash)
            fp_block_hash(srv, n, bh); /* by hash: the block asked for, on the chain now or not */
        for (uint64_t i = 0; i < srv->logs_per_block; i++) {
            shape_t sh;
            if (!srv->logs_varied) {
                put_log(out, bh, n, i, first);
            } else {
                shape_of(i, &sh);
                if (!shape_matches(&sh, f.address, f.topics))
                    continue;
                put_varied(out, bh, n, i, &sh, first);
            }
            first = false;
        }
        if (n == UINT64_MAX)
            break;
    }
    fp_buf_puts(out, "]");
    return NULL;
}
