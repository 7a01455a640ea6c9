/* pool/pool_write.c: broadcasts, made idempotent, and the pins they leave.
 *
 * A signed transaction has a fixed id (Ethereum: keccak-256 of its bytes;
 * Solana: its first signature), so "already known" from a node means the
 * broadcast succeeded: the client gets the id as if it had been accepted now.
 * "nonce too low" may mean it was already mined: sluice asks the same node
 * for the transaction by hash before calling it a failure. A transaction
 * accepted through endpoint E leaves a pin: for pin.window_ms, confirmation
 * polls for it go to E first (another node may not have seen it yet). */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "state/state_key.h"
#include "wire/txid.h"
#include "pool/pool_call_int.h"

/* The first element of params (or, nested, the first of the first array),
 * decoded as a string into out. */
static int first_param(const pool_item_t *it, int nested, char *out, size_t cap, wire_span_t *params_out)
{
    wire_envelope_t env;
    wire_span_t items[2];
    size_t n = 0;
    if (wire_envelope_scan(it->raw, it->raw_len, &env) != SL_OK || wire_json_kind(it->raw, env.params) != WIRE_JSON_ARRAY)
        return 0;
    sl_err_t err = wire_envelope_scan_array(it->raw + env.params.off, env.params.len, items, 2, &n);
    if ((err != SL_OK && err != SL_ERR_TOO_LARGE) || n == 0)
        return 0;
    wire_span_t first = {env.params.off + items[0].off, items[0].len};
    if (params_out != NULL) {
        params_out[0] = first;
        params_out[1] = n > 1 ? (wire_span_t){env.params.off + items[1].off, items[1].len} : (wire_span_t){0, 0};
    }
    if (nested && wire_json_kind(it->raw, first) == WIRE_JSON_ARRAY) {
        wire_span_t inner[1];
        size_t m = 0;
        err = wire_envelope_scan_array(it->raw + first.off, first.len, inner, 1, &m);
        if ((err != SL_OK && err != SL_ERR_TOO_LARGE) || m == 0)
            return 0;
        first = (wire_span_t){first.off + inner[0].off, inner[0].len};
    }
    return wire_json_string(it->raw, first, out, cap) == SL_OK;
}

/* Solana's sendTransaction takes {"encoding":"base64"} as its second param. */
static wire_sol_encoding_t sol_encoding(const pool_item_t *it, wire_span_t opts)
{
    wire_sol_encoding_t enc = WIRE_SOL_BASE58;
    if (opts.len == 0 || wire_json_kind(it->raw, opts) != WIRE_JSON_OBJECT)
        return enc;
    /* the gateway's scan validated the request: its members can be looked up */
    char name[16];
    wire_span_t e = wire_json_member(it->raw, opts, "encoding");
    if (e.len != 0 && wire_json_string(it->raw, e, name, sizeof(name)) == SL_OK && strcmp(name, "base64") == 0)
        enc = WIRE_SOL_BASE64;
    return enc;
}

int pool_write_txid(const pool_call_t *call, const pool_item_t *it, char *out, size_t cap)
{
    char raw[64 * 1024];
    wire_span_t params[2];
    if (cap < 96 || !first_param(it, 0, raw, sizeof(raw), params))
        return 0;
    if (call->net->conf->chain == POLICY_CHAIN_ETHEREUM)
        return wire_eth_tx_hash(raw, strlen(raw), out) == SL_OK;
    return wire_sol_tx_signature(raw, strlen(raw), sol_encoding(it, params[1]), out) == SL_OK;
}

/* Makes {"jsonrpc":"2.0","id":0,"result":"<txid>"} the item's answer; the
 * client's id is spliced over the 0 like any upstream answer. */
void pool_write_synthesize(pool_call_t *call, pool_item_t *it, int ep, const char *txid)
{
    static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
    sl_buf_t b = SL_BUF_INIT;
    sl_buf_append_str(&b, head);
    sl_buf_append_str(&b, "0,\"result\":");
    sl_buf_append_json_str(&b, txid, strlen(txid));
    sl_buf_append_char(&b, '}');
    uint32_t len = (uint32_t)b.len;
    pool_item_answer_set(it, &(pool_item_answer_t){.verdict = POLICY_VERDICT_SUCCESS,
                                                    .answer = pool_call_keep(call, &b),
                                                    .answer_len = len,
                                                    .answer_id = {sizeof(head) - 1, 1},
                                                    .endpoint = (int16_t)ep});
}

static void pin_key(const pool_call_t *call, const char *txid, char *key, size_t cap)
{
    int eth = call->net->conf->chain == POLICY_CHAIN_ETHEREUM;
    size_t n = state_key_pin(key, cap, call->net->conf->name, txid);
    if (eth) /* hex hashes in any case are the same hash */
        for (size_t i = strlen(call->net->conf->name) + 1; i < n && i < cap; i++)
            key[i] = (char)tolower((unsigned char)key[i]);
}

void pool_write_pin(pool_call_t *call, int ep, const char *txid)
{
    pool_network_t *net = call->net;
    if (net->pool->state == NULL || net->conf->pin_ms == 0 || txid[0] == '\0')
        return;
    char key[192];
    pin_key(call, txid, key, sizeof(key));
    state_pin_rec_t pin;
    memset(&pin, 0, sizeof(pin));
    snprintf(pin.endpoint, sizeof(pin.endpoint), "%s", net->endpoints[ep].conf->id);
    pin.expires_ms = sl_shared_ms() + net->conf->pin_ms;
    if (state_pin_put(net->pool->state, key, &pin) != SL_OK)
        sl_log_warn("network %s: could not record a transaction pin", net->conf->name);
}

/* After a write answered successfully: pin its id to the endpoint. */
void pool_write_accepted(pool_call_t *call, pool_item_t *it)
{
    wire_envelope_t env;
    char txid[128];
    if (it->answer == NULL || wire_envelope_scan(it->answer, it->answer_len, &env) != SL_OK ||
        wire_json_string(it->answer, env.result, txid, sizeof(txid)) != SL_OK)
        return;
    pool_write_pin(call, it->endpoint, txid);
}

int pool_write_find_pin(pool_call_t *call)
{
    pool_network_t *net = call->net;
    if (net->pool->state == NULL || net->conf->pin_ms == 0)
        return -1;
    for (size_t i = 0; i < call->nitems; i++) {
        const pool_item_t *it = &call->items[i];
        char txid[128], key[192];
        if (it->method->cls != POLICY_CLASS_CONFIRM || !first_param(it, 1, txid, sizeof(txid), NULL))
            continue;
        pin_key(call, txid, key, sizeof(key));
        state_pin_rec_t pin;
        if (state_pin_get(net->pool->state, key, sl_shared_ms(), &pin) != SL_OK)
            continue;
        for (size_t e = 0; e < net->nendpoints; e++)
            if (strcmp(net->endpoints[e].conf->id, pin.endpoint) == 0)
                return (int)e;
    }
    return -1;
}

int pool_write_verify_body(pool_call_t *call, const pool_item_t *it, sl_buf_t *out)
{
    char txid[128];
    if (!pool_write_txid(call, it, txid, sizeof(txid)))
        return 0;
    sl_buf_reset(out);
    sl_buf_append_str(out, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_getTransactionByHash\",\"params\":[");
    sl_buf_append_json_str(out, txid, strlen(txid));
    sl_buf_append_str(out, "]}");
    return 1;
}
