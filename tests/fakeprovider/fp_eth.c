/* fp_eth.c: Ethereum JSON-RPC answers.
 *
 * Values are synthetic but well formed (viem and ethers parse them) and
 * consistent: block n's hash is derived from n (and from the fork a reorg
 * put it on, fp_chain.c), its parentHash is block n-1's hash, and a hash can
 * be mapped back to its number, so clients that follow the chain (or check
 * for reorgs) see one coherent chain. eth_getLogs is fp_logs.c's. */
#include "fp.h"

#include <string.h>

#include <openssl/sha.h>

#define EMPTY_TRIE "\"0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421\""
#define EMPTY_UNCLES "\"0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347\""
#define FROM_ADDR "\"0x1111111111111111111111111111111111111111\""
#define TO_ADDR "\"0x2222222222222222222222222222222222222222\""
#define GAS_PRICE "\"0x4a817c800\""          /* 20 gwei */
#define PRIORITY_FEE "\"0x3b9aca00\""        /* 1 gwei */

static void put_zero_bloom(fp_buf_t *out)
{
    fp_buf_reserve(out, 516);
    fp_buf_puts(out, "\"0x");
    memset(out->data + out->len, '0', 512);
    out->len += 512;
    fp_buf_puts(out, "\"");
}

static uint64_t block_time(const fp_server_t *srv, uint64_t n)
{
    int64_t dt_ms = ((int64_t)n - (int64_t)srv->block0) * (int64_t)srv->block_time_ms;
    int64_t t = srv->start_wall + dt_ms / 1000;
    return t > 0 ? (uint64_t)t : 0;
}

#define Q(out, key, v) (fp_buf_puts(out, ",\"" key "\":"), fp_buf_put_quantity(out, v))

static void put_block(const fp_server_t *srv, fp_buf_t *out, uint64_t n)
{
    static const uint8_t zero8[8];
    uint8_t h[32];
    fp_buf_puts(out, "{\"number\":");
    fp_buf_put_quantity(out, n);
    fp_buf_puts(out, ",\"hash\":");
    fp_put_block_hash(srv, out, n);
    fp_buf_puts(out, ",\"parentHash\":");
    fp_put_block_hash(srv, out, n ? n - 1 : 0);
    fp_buf_puts(out, ",\"nonce\":");
    fp_buf_put_hex(out, zero8, 8);
    fp_buf_puts(out, ",\"sha3Uncles\":" EMPTY_UNCLES ",\"logsBloom\":");
    put_zero_bloom(out);
    fp_buf_puts(out, ",\"transactionsRoot\":" EMPTY_TRIE ",\"stateRoot\":");
    fp_block_digest(srv, n, 1ull << 62, h);
    fp_buf_put_hex(out, h, 32);
    fp_buf_puts(out, ",\"receiptsRoot\":" EMPTY_TRIE ",\"miner\":" FROM_ADDR);
    Q(out, "difficulty", 0);
    fp_buf_puts(out, ",\"totalDifficulty\":\"0xc70d815d562d3cfa955\",\"extraData\":\"0x\"");
    Q(out, "size", 0x220);
    Q(out, "gasLimit", 30000000);
    Q(out, "gasUsed", 0);
    Q(out, "timestamp", block_time(srv, n));
    fp_buf_puts(out, ",\"transactions\":[],\"uncles\":[]");
    Q(out, "baseFeePerGas", 1000000000);
    fp_buf_puts(out, ",\"mixHash\":");
    fp_block_digest(srv, n, 1ull << 61, h);
    fp_buf_put_hex(out, h, 32);
    fp_buf_puts(out, ",\"withdrawals\":[],\"withdrawalsRoot\":" EMPTY_TRIE "}");
}

static const fp_rpc_error_t *literal(fp_buf_t *out, const char *json)
{
    fp_buf_puts(out, json);
    return NULL;
}

static const fp_rpc_error_t *eth_chain_id(fp_server_t *srv, const fp_call_t *call, fp_buf_t *out)
{
    (void)call;
    fp_buf_put_quantity(out, srv->chain_id);
    return NULL;
}

static const fp_rpc_error_t *net_version(fp_server_t *srv, const fp_call_t *call, fp_buf_t *out)
{
    (void)call;
    fp_buf_puts(out, "\"");
    fp_buf_put_u64(out, srv->chain_id);
    fp_buf_puts(out, "\"");
    return NULL;
}

static const fp_rpc_error_t *client_version(fp_server_t *srv, const fp_call_t *call,
                                            fp_buf_t *out)
{
    (void)call;
    fp_buf_printf(out, "\"fakeprovider/v0.1/%s\"", srv->name);   /* name is [A-Za-z0-9._:-] */
    return NULL;
}

static const fp_rpc_error_t *block_number(fp_server_t *srv, const fp_call_t *call, fp_buf_t *out)
{
    (void)srv;
    fp_buf_put_quantity(out, call->head);
    return NULL;
}

static const fp_rpc_error_t *get_balance(fp_server_t *srv, const fp_call_t *call, fp_buf_t *out)
{
    (void)srv, (void)call;
    return literal(out, "\"0x1bc16d674ec80000\"");
}

static const fp_rpc_error_t *tx_count(fp_server_t *srv, const fp_call_t *call, fp_buf_t *out)
{
    (void)call;
    fp_buf_put_quantity(out, srv->txs.count);
    return NULL;
}

static const fp_rpc_error_t *gas_price(fp_server_t *srv, const fp_call_t *call, fp_buf_t *out)
{
    (void)srv, (void)call;
    return literal(out, GAS_PRICE);
}

static const fp_rpc_error_t *priority_fee(fp_server_t *srv, const fp_call_t *call, fp_buf_t *out)
{
    (void)srv, (void)call;
    return literal(out, PRIORITY_FEE);
}

static const fp_rpc_error_t *estimate_gas(fp_server_t *srv, const fp_call_t *call, fp_buf_t *out)
{
    (void)srv, (void)call;
    return literal(out, "\"0x5208\"");
}

static const fp_rpc_error_t *empty_data(fp_server_t *srv, const fp_call_t *call, fp_buf_t *out)
{
    (void)srv, (void)call;
    return literal(out, "\"0x\"");
}

static const fp_rpc_error_t *syncing(fp_server_t *srv, const fp_call_t *call, fp_buf_t *out)
{
    (void)srv, (void)call;
    return literal(out, "false");
}

static const fp_rpc_error_t *fee_history(fp_server_t *srv, const fp_call_t *call, fp_buf_t *out)
{
    fp_span_t v;
    uint64_t count = 0, newest = call->head;
    size_t pcts = 0;
    (void)srv;
    if (!fp_json_array_get(call->params, 0, &v) || !fp_json_u64(v, &count) || count == 0)
        return &fp_err_invalid_params;
    if (fp_json_array_get(call->params, 1, &v) && !fp_block_param(srv, v, call->head, &newest))
        return &fp_err_invalid_params;
    count = count > 1024 ? 1024 : count > newest + 1 ? newest + 1 : count;
    fp_json_iter_t it;
    if (fp_json_array_get(call->params, 2, &v) && fp_json_iter_begin(&it, v, '['))
        while (fp_json_array_next(&it, &v) == 1 && pcts < 100)
            pcts++;
    fp_buf_puts(out, "{\"oldestBlock\":");
    fp_buf_put_quantity(out, newest + 1 - count);
    fp_buf_puts(out, ",\"baseFeePerGas\":[");
    for (uint64_t i = 0; i <= count; i++)
        fp_buf_puts(out, i ? ",\"0x3b9aca00\"" : "\"0x3b9aca00\"");
    fp_buf_puts(out, "],\"gasUsedRatio\":[");
    for (uint64_t i = 0; i < count; i++)
        fp_buf_puts(out, i ? ",0.5" : "0.5");
    fp_buf_puts(out, "]");
    if (pcts) {
        fp_buf_puts(out, ",\"reward\":[");
        for (uint64_t i = 0; i < count; i++) {
            fp_buf_puts(out, i ? ",[" : "[");
            for (size_t j = 0; j < pcts; j++)
                fp_buf_puts(out, j ? "," PRIORITY_FEE : PRIORITY_FEE);
            fp_buf_puts(out, "]");
        }
        fp_buf_puts(out, "]");
    }
    fp_buf_puts(out, "}");
    return NULL;
}

static const fp_rpc_error_t *block_by_number(fp_server_t *srv, const fp_call_t *call,
                                             fp_buf_t *out)
{
    fp_span_t v;
    uint64_t n;
    if (!fp_json_array_get(call->params, 0, &v) || !fp_block_param(srv, v, call->head, &n))
        return &fp_err_invalid_params;
    if (n > call->head)
        return literal(out, "null");
    put_block(srv, out, n);
    return NULL;
}

static const fp_rpc_error_t *block_by_hash(fp_server_t *srv, const fp_call_t *call,
                                           fp_buf_t *out)
{
    fp_span_t v, s;
    uint64_t n;
    if (!fp_json_array_get(call->params, 0, &v) || !fp_json_string(v, &s))
        return &fp_err_invalid_params;
    if (!fp_block_from_hash(srv, s, &n) || n > call->head)
        return literal(out, "null");
    put_block(srv, out, n);
    return NULL;
}

/* The hash is SHA-256 of the raw hex text as sent, so tests can predict it. */
static const fp_rpc_error_t *send_raw(fp_server_t *srv, const fp_call_t *call, fp_buf_t *out)
{
    fp_span_t v, s;
    uint8_t h[SHA256_DIGEST_LENGTH];
    if (!fp_json_array_get(call->params, 0, &v) || !fp_json_string(v, &s) || s.n < 2)
        return &fp_err_invalid_params;
    SHA256((const uint8_t *)s.p, s.n, h);
    size_t at = out->len;
    fp_buf_put_hex(out, h, sizeof h);
    char key[67];
    memcpy(key, out->data + at + 1, 66);
    key[66] = '\0';
    fp_tx_record(srv, key, call->head);
    return NULL;
}

/* Looks the hash param up (case-insensitively); NULL if unknown. */
static const fp_tx_t *tx_param(const fp_server_t *srv, const fp_call_t *call, bool *bad)
{
    fp_span_t v, s;
    char key[67];
    *bad = !fp_json_array_get(call->params, 0, &v) || !fp_json_string(v, &s);
    if (*bad || s.n != 66)
        return NULL;
    for (size_t i = 0; i < 66; i++)
        key[i] = (char)(s.p[i] >= 'A' && s.p[i] <= 'F' ? s.p[i] + 32 : s.p[i]);
    key[1] = 'x';
    return fp_tx_find(&srv->txs, key, 66);
}

static const fp_rpc_error_t *tx_receipt(fp_server_t *srv, const fp_call_t *call, fp_buf_t *out)
{
    bool bad;
    const fp_tx_t *t = tx_param(srv, call, &bad);
    if (bad)
        return &fp_err_invalid_params;
    if (!t || t->block > call->head)
        return literal(out, "null");
    fp_buf_printf(out, "{\"transactionHash\":\"%s\",\"transactionIndex\":\"0x0\"", t->key);
    fp_buf_puts(out, ",\"blockHash\":");
    fp_put_block_hash(srv, out, t->block);
    Q(out, "blockNumber", t->block);
    fp_buf_puts(out, ",\"from\":" FROM_ADDR ",\"to\":" TO_ADDR
                     ",\"cumulativeGasUsed\":\"0x5208\",\"gasUsed\":\"0x5208\""
                     ",\"effectiveGasPrice\":" GAS_PRICE ",\"contractAddress\":null"
                     ",\"logs\":[],\"logsBloom\":");
    put_zero_bloom(out);
    fp_buf_puts(out, ",\"status\":\"0x1\",\"type\":\"0x2\"}");
    return NULL;
}

static const fp_rpc_error_t *tx_by_hash(fp_server_t *srv, const fp_call_t *call, fp_buf_t *out)
{
    bool bad;
    const fp_tx_t *t = tx_param(srv, call, &bad);
    if (bad)
        return &fp_err_invalid_params;
    if (!t)
        return literal(out, "null");
    fp_buf_printf(out, "{\"hash\":\"%s\",\"nonce\":\"0x0\",\"blockHash\":", t->key);
    fp_put_block_hash(srv, out, t->block);
    Q(out, "blockNumber", t->block);
    fp_buf_puts(out, ",\"transactionIndex\":\"0x0\",\"from\":" FROM_ADDR ",\"to\":" TO_ADDR
                     ",\"value\":\"0x0\",\"gas\":\"0x5208\",\"gasPrice\":" GAS_PRICE
                     ",\"maxFeePerGas\":" GAS_PRICE ",\"maxPriorityFeePerGas\":" PRIORITY_FEE
                     ",\"input\":\"0x\",\"type\":\"0x2\",\"accessList\":[]");
    Q(out, "chainId", srv->chain_id);
    /* r and s reuse the hash: any nonzero 32-byte values parse */
    fp_buf_printf(out, ",\"v\":\"0x0\",\"yParity\":\"0x0\",\"r\":\"%s\",\"s\":\"%s\"}", t->key,
                  t->key);
    return NULL;
}

/* Sorted by name: dispatch is a binary search (checked at start). */
const fp_method_t fp_eth_methods[] = {
    {"eth_blockNumber", block_number},
    {"eth_call", empty_data},
    {"eth_chainId", eth_chain_id},
    {"eth_estimateGas", estimate_gas},
    {"eth_feeHistory", fee_history},
    {"eth_gasPrice", gas_price},
    {"eth_getBalance", get_balance},
    {"eth_getBlockByHash", block_by_hash},
    {"eth_getBlockByNumber", block_by_number},
    {"eth_getCode", empty_data},
    {"eth_getLogs", fp_eth_get_logs},
    {"eth_getTransactionByHash", tx_by_hash},
    {"eth_getTransactionCount", tx_count},
    {"eth_getTransactionReceipt", tx_receipt},
    {"eth_maxPriorityFeePerGas", priority_fee},
    {"eth_sendRawTransaction", send_raw},
    {"eth_syncing", syncing},
    {"net_version", net_version},
    {"web3_clientVersion", client_version},
};
const size_t fp_eth_method_count = sizeof fp_eth_methods / sizeof fp_eth_methods[0];
