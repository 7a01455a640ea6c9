/* fp_sol.c: Solana JSON-RPC answers, shaped exactly as a 1.18 validator
 * returns them (@solana/web3.js validates results against strict schemas).
 *
 * sendTransaction answers with the transaction's own first signature when
 * it can decode one, because clients (@solana/kit) confirm by the signature
 * they computed locally, not by the one the node returns. */
#include "fp.h"

#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/sha.h>

#define SOL_VERSION "1.18.22"
#define SLOTS_PER_EPOCH 432000
#define LAMPORTS 1000000000ull          /* every account holds 1 SOL */
#define MAX_TX_TEXT 4096                /* longer encodings are hashed, not decoded */

static const char b58_alphabet[] = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/* Writes base58(p) unquoted into dst (size >= 2n + 1); returns its length. */
static size_t base58_encode(const uint8_t *p, size_t n, char *dst)
{
    uint8_t digits[160] = {0};  /* enough for 64 bytes: 64 * log(256)/log(58) < 88 */
    size_t zeros = 0, len = 0;
    while (zeros < n && p[zeros] == 0)
        zeros++;
    for (size_t i = zeros; i < n; i++) {
        unsigned carry = p[i];
        for (size_t j = 0; j < len; j++) {
            carry += (unsigned)digits[j] << 8;
            digits[j] = (uint8_t)(carry % 58);
            carry /= 58;
        }
        while (carry) {
            digits[len++] = (uint8_t)(carry % 58);
            carry /= 58;
        }
    }
    size_t k = 0;
    for (size_t i = 0; i < zeros; i++)
        dst[k++] = '1';
    while (len)
        dst[k++] = b58_alphabet[digits[--len]];
    dst[k] = '\0';
    return k;
}

/* Decodes at most cap bytes of base58 (big-endian); false on a bad digit
 * or overflow. */
static bool base58_decode(fp_span_t s, uint8_t *out, size_t cap, size_t *n)
{
    size_t len = 0, zeros = 0;
    while (zeros < s.n && s.p[zeros] == '1')
        zeros++;
    for (size_t i = zeros; i < s.n; i++) {
        const char *d = memchr(b58_alphabet, s.p[i], 58);
        if (!d || s.p[i] == '\0')
            return false;
        unsigned carry = (unsigned)(d - b58_alphabet);
        for (size_t j = 0; j < len; j++) {      /* out[] is little-endian while we work */
            carry += out[j] * 58u;
            out[j] = (uint8_t)carry;
            carry >>= 8;
        }
        for (; carry; carry >>= 8) {
            if (len == cap)
                return false;
            out[len++] = (uint8_t)carry;
        }
    }
    if (len + zeros > cap)
        return false;
    for (size_t i = 0; i < len / 2; i++) {
        uint8_t t = out[i];
        out[i] = out[len - 1 - i];
        out[len - 1 - i] = t;
    }
    memmove(out + zeros, out, len);
    memset(out, 0, zeros);
    *n = len + zeros;
    return true;
}

/* First signature of a wire transaction: compact-u16 count, then 64-byte
 * signatures. False if there is none or it is all zeros (unsigned). */
static bool first_signature(const uint8_t *tx, size_t n, uint8_t sig[64])
{
    static const uint8_t zero[64];
    if (n < 65 || tx[0] == 0 || tx[0] >= 0x80)
        return false;
    memcpy(sig, tx + 1, 64);
    return memcmp(sig, zero, 64) != 0;
}

static bool decode_tx(fp_span_t text, bool base64, uint8_t sig[64])
{
    static uint8_t raw[MAX_TX_TEXT];
    size_t n = 0;
    if (text.n > MAX_TX_TEXT)
        return false;
    if (base64) {
        size_t take = text.n < 88 ? text.n & ~(size_t)3 : 88;   /* 66 bytes are enough */
        int got = EVP_DecodeBlock(raw, (const unsigned char *)text.p, (int)take);
        if (got < 0)
            return false;
        n = (size_t)got;
    } else if (!base58_decode(text, raw, sizeof raw, &n)) {
        return false;
    }
    return first_signature(raw, n, sig);
}

static void put_base58(fp_buf_t *out, const uint8_t *p, size_t n)
{
    char tmp[160];
    size_t len = base58_encode(p, n, tmp);
    fp_buf_puts(out, "\"");
    fp_buf_put(out, tmp, len);
    fp_buf_puts(out, "\"");
}

/* The call's config object: the first object among its params, or n == 0. */
static fp_span_t config_of(const fp_call_t *call)
{
    fp_json_iter_t it;
    fp_span_t v;
    if (fp_json_iter_begin(&it, call->params, '['))
        while (fp_json_array_next(&it, &v) == 1)
            if (v.n && v.p[0] == '{')
                return v;
    return (fp_span_t){NULL, 0};
}

/* The member key of the call's config object, or n == 0. */
static fp_span_t config_member(const fp_call_t *call, const char *key)
{
    fp_json_iter_t it;
    fp_span_t k, v;
    if (fp_json_iter_begin(&it, config_of(call), '{'))
        while (fp_json_object_next(&it, &k, &v) == 1)
            if (fp_span_eq(k, key))
                return v;
    return (fp_span_t){NULL, 0};
}

/* The slot the call reads: the head at its commitment (none named:
 * finalized, as a node's default), --safe-depth slots back for confirmed
 * and --finalized-depth for finalized (both 0 unless given: every
 * commitment at the head, as this fake always answered). */
static uint64_t call_slot(const fp_server_t *srv, const fp_call_t *call)
{
    fp_span_t c = config_member(call, "commitment");
    if (fp_span_eq(c, "\"processed\""))
        return call->head;
    if (fp_span_eq(c, "\"confirmed\""))
        return fp_safe_height(srv, call->head);
    return fp_finalized_height(srv, call->head);
}

static const fp_rpc_error_t err_min_context = {-32016, "Minimum context slot has not been reached"};

/* agave's MinContextSlotNotReached: a config's minContextSlot above the slot
 * this node has at the call's commitment, with data.contextSlot. */
bool fp_sol_precheck(fp_server_t *srv, const fp_call_t *call, fp_buf_t *out)
{
    uint64_t min = 0, slot = call_slot(srv, call);
    fp_span_t v = config_member(call, "minContextSlot");
    if (v.n == 0 || !fp_json_u64(v, &min) || min <= slot)
        return false;
    char data[48];
    snprintf(data, sizeof data, "{\"contextSlot\":%llu}", (unsigned long long)slot);
    fp_rpc_put_error(out, call->id, err_min_context.code, err_min_context.message, data);
    return true;
}

static void put_context(fp_buf_t *out, uint64_t slot)
{
    fp_buf_puts(out, "{\"context\":{\"apiVersion\":\"" SOL_VERSION "\",\"slot\":");
    fp_buf_put_u64(out, slot);
    fp_buf_puts(out, "},\"value\":");
}

static const fp_rpc_error_t *with_context(const fp_server_t *srv, const fp_call_t *call, fp_buf_t *out,
                                          const char *value)
{
    put_context(out, call_slot(srv, call));
    fp_buf_puts(out, value);
    fp_buf_puts(out, "}");
    return NULL;
}

static const fp_rpc_error_t *get_slot(fp_server_t *srv, const fp_call_t *call, fp_buf_t *out)
{
    fp_buf_put_u64(out, call_slot(srv, call));
    return NULL;
}

#define CLOCK_SYSVAR "\"SysvarC1ock11111111111111111111111111111111\""

/* Every account is null, except the Clock sysvar: its data is the slot
 * (8 bytes, little-endian) at the call's commitment, so it changes with
 * every slot, as a node's does (what accountSubscribe tests watch). */
/* The account pk's value at slot (Clock's data, else null). */
static void put_account(const fp_call_t *call, fp_buf_t *out, fp_span_t pk, uint64_t slot)
{
    if (!fp_span_eq(pk, CLOCK_SYSVAR)) {
        fp_buf_puts(out, "null");
        return;
    }
    uint8_t data[8];
    char text[32];
    for (int i = 0; i < 8; i++)
        data[i] = (uint8_t)(slot >> (8 * i));
    bool b64 = fp_span_eq(config_member(call, "encoding"), "\"base64\"");
    if (b64)
        EVP_EncodeBlock((unsigned char *)text, data, sizeof data);
    else
        base58_encode(data, sizeof data, text);
    fp_buf_puts(out, "{\"data\":[\"");
    fp_buf_puts(out, text);
    fp_buf_puts(out, b64 ? "\",\"base64\"]" : "\",\"base58\"]");
    fp_buf_puts(out, ",\"executable\":false,\"lamports\":1169280,"
                     "\"owner\":\"Sysvar1111111111111111111111111111111111111\",\"rentEpoch\":18446744073709551615,"
                     "\"space\":8}");
}

static const fp_rpc_error_t *get_account_info(fp_server_t *srv, const fp_call_t *call,
                                              fp_buf_t *out)
{
    fp_span_t pk = {0};
    (void)fp_json_array_get(call->params, 0, &pk); /* none: null, as before */
    uint64_t slot = call_slot(srv, call);
    put_context(out, slot);
    put_account(call, out, pk, slot);
    fp_buf_puts(out, "}");
    return NULL;
}

/* A node takes at most 100 accounts per call. */
#define MULTIPLE_ACCOUNTS_MAX 100
static const fp_rpc_error_t err_too_many_accounts = {-32602, "Too many inputs provided; max 100"};

static const fp_rpc_error_t *get_multiple_accounts(fp_server_t *srv, const fp_call_t *call,
                                                   fp_buf_t *out)
{
    fp_span_t list, pk;
    fp_json_iter_t it;
    if (!fp_json_array_get(call->params, 0, &list) || !fp_json_iter_begin(&it, list, '['))
        return &fp_err_invalid_params;
    int n = 0;
    while (fp_json_array_next(&it, &pk) == 1)
        n++;
    if (n > MULTIPLE_ACCOUNTS_MAX)
        return &err_too_many_accounts;
    uint64_t slot = call_slot(srv, call);
    put_context(out, slot);
    fp_buf_puts(out, "[");
    fp_json_iter_begin(&it, list, '[');
    for (int i = 0; fp_json_array_next(&it, &pk) == 1; i++) {
        fp_buf_puts(out, i ? "," : "");
        put_account(call, out, pk, slot);
    }
    fp_buf_puts(out, "]}");
    return NULL;
}

static const fp_rpc_error_t *get_balance(fp_server_t *srv, const fp_call_t *call, fp_buf_t *out)
{
    return with_context(srv, call, out, "1000000000");
}

static const fp_rpc_error_t *get_fee(fp_server_t *srv, const fp_call_t *call, fp_buf_t *out)
{
    return with_context(srv, call, out, "5000");
}

static const fp_rpc_error_t *blockhash_valid(fp_server_t *srv, const fp_call_t *call,
                                             fp_buf_t *out)
{
    return with_context(srv, call, out, "true");
}

static const fp_rpc_error_t *literal(fp_server_t *srv, const fp_call_t *call, fp_buf_t *out,
                                     const char *json)
{
    (void)srv, (void)call;
    fp_buf_puts(out, json);
    return NULL;
}

static const fp_rpc_error_t *get_health(fp_server_t *srv, const fp_call_t *call, fp_buf_t *out)
{
    return literal(srv, call, out, "\"ok\"");
}

static const fp_rpc_error_t *get_version(fp_server_t *srv, const fp_call_t *call, fp_buf_t *out)
{
    return literal(srv, call, out, "{\"feature-set\":3241752014,\"solana-core\":\"" SOL_VERSION "\"}");
}

static const fp_rpc_error_t *get_genesis(fp_server_t *srv, const fp_call_t *call, fp_buf_t *out)
{
    (void)call;
    fp_buf_put_json_str(out, srv->genesis_hash, strlen(srv->genesis_hash));
    return NULL;
}

static const fp_rpc_error_t *get_prio_fees(fp_server_t *srv, const fp_call_t *call,
                                           fp_buf_t *out)
{
    return literal(srv, call, out, "[]");
}

static const fp_rpc_error_t *get_epoch_info(fp_server_t *srv, const fp_call_t *call,
                                            fp_buf_t *out)
{
    uint64_t s = call->head;
    fp_buf_printf(out,
                  "{\"absoluteSlot\":%llu,\"blockHeight\":%llu,\"epoch\":%llu,\"slotIndex\":%llu,"
                  "\"slotsInEpoch\":%d,\"transactionCount\":%llu}",
                  (unsigned long long)s, (unsigned long long)s,
                  (unsigned long long)(s / SLOTS_PER_EPOCH),
                  (unsigned long long)(s % SLOTS_PER_EPOCH), SLOTS_PER_EPOCH,
                  (unsigned long long)srv->txs.count);
    return NULL;
}

static const fp_rpc_error_t *latest_blockhash(fp_server_t *srv, const fp_call_t *call,
                                              fp_buf_t *out)
{
    uint8_t seed[24] = "fp-blockhash", h[SHA256_DIGEST_LENGTH];
    memcpy(seed + 16, &call->head, 8);
    SHA256(seed, sizeof seed, h);
    put_context(out, call_slot(srv, call));
    fp_buf_puts(out, "{\"blockhash\":");
    put_base58(out, h, sizeof h);
    fp_buf_puts(out, ",\"lastValidBlockHeight\":");
    fp_buf_put_u64(out, call->head + 150);
    fp_buf_puts(out, "}}");
    return NULL;
}

static const fp_rpc_error_t *rent_exemption(fp_server_t *srv, const fp_call_t *call,
                                            fp_buf_t *out)
{
    fp_span_t v;
    uint64_t len = 0;
    (void)srv;
    if (fp_json_array_get(call->params, 0, &v) && (!fp_json_u64(v, &len) || len > (1u << 24)))
        return &fp_err_invalid_params;
    fp_buf_put_u64(out, (128 + len) * 6960);   /* 2 years of rent at 3480 lamports/byte-year */
    return NULL;
}

/* A node takes at most 256 signatures per call (sluice's merged polls must
 * stay within it). */
#define SIGNATURE_STATUSES_MAX 256
static const fp_rpc_error_t err_too_many = {-32602, "Too many inputs provided; max 256"};

static const fp_rpc_error_t *signature_statuses(fp_server_t *srv, const fp_call_t *call,
                                                fp_buf_t *out)
{
    fp_span_t list, v, s;
    fp_json_iter_t it;
    if (!fp_json_array_get(call->params, 0, &list) || !fp_json_iter_begin(&it, list, '['))
        return &fp_err_invalid_params;
    int n = 0;
    while (fp_json_array_next(&it, &v) == 1)
        n++;
    if (n > SIGNATURE_STATUSES_MAX)
        return &err_too_many;
    fp_json_iter_begin(&it, list, '[');
    put_context(out, call->head);
    fp_buf_puts(out, "[");
    for (int i = 0; fp_json_array_next(&it, &v) == 1; i++) {
        const fp_tx_t *t = fp_json_string(v, &s) ? fp_tx_find(&srv->txs, s.p, s.n) : NULL;
        fp_buf_puts(out, i ? "," : "");
        if (!t || t->block > call->head) {
            fp_buf_puts(out, "null");
            continue;
        }
        fp_buf_puts(out, "{\"slot\":");
        fp_buf_put_u64(out, t->block);
        fp_buf_puts(out, ",\"confirmations\":null,\"err\":null,\"status\":{\"Ok\":null},"
                         "\"confirmationStatus\":\"finalized\"}");
    }
    fp_buf_puts(out, "]}");
    return NULL;
}

static const fp_rpc_error_t *send_transaction(fp_server_t *srv, const fp_call_t *call,
                                              fp_buf_t *out)
{
    fp_span_t v, s, opts, key, val, enc = {NULL, 0};
    uint8_t sig[64];
    char text[100];
    if (!fp_json_array_get(call->params, 0, &v) || !fp_json_string(v, &s) || s.n == 0)
        return &fp_err_invalid_params;
    fp_json_iter_t it;
    if (fp_json_array_get(call->params, 1, &opts) && fp_json_iter_begin(&it, opts, '{'))
        while (fp_json_object_next(&it, &key, &val) == 1)
            if (fp_span_eq(key, "encoding"))
                enc = val;
    if (!decode_tx(s, fp_span_eq(enc, "\"base64\""), sig))
        SHA512((const uint8_t *)s.p, s.n, sig);    /* undecodable: still deterministic */
    base58_encode(sig, sizeof sig, text);
    fp_tx_record(srv, text, call->head);
    fp_buf_puts(out, "\"");
    fp_buf_puts(out, text);
    fp_buf_puts(out, "\"");
    return NULL;
}

/* Sorted by name: dispatch is a binary search (checked at start). */
const fp_method_t fp_sol_methods[] = {
    {"getAccountInfo", get_account_info},
    {"getBalance", get_balance},
    {"getBlockHeight", get_slot},
    {"getEpochInfo", get_epoch_info},
    {"getFeeForMessage", get_fee},
    {"getGenesisHash", get_genesis},
    {"getHealth", get_health},
    {"getLatestBlockhash", latest_blockhash},
    {"getMinimumBalanceForRentExemption", rent_exemption},
    {"getMultipleAccounts", get_multiple_accounts},
    {"getProgramAccounts", fp_solw_program_accounts},
    {"getRecentPrioritizationFees", get_prio_fees},
    {"getSignatureStatuses", signature_statuses},
    {"getSignaturesForAddress", fp_solw_signatures},
    {"getSlot", get_slot},
    {"getTransaction", fp_solw_transaction},
    {"getVersion", get_version},
    {"isBlockhashValid", blockhash_valid},
    {"sendTransaction", send_transaction},
};
const size_t fp_sol_method_count = sizeof fp_sol_methods / sizeof fp_sol_methods[0];

/* ---- for fp_sol_watch.c ---- */

size_t fp_sol_base58(const uint8_t *p, size_t n, char *dst)
{
    return base58_encode(p, n, dst);
}

bool fp_sol_base58_decode(const char *text, uint8_t *out, size_t cap, size_t *n)
{
    return base58_decode((fp_span_t){text, strlen(text)}, out, cap, n);
}

uint64_t fp_sol_call_slot(const fp_server_t *srv, const fp_call_t *call)
{
    return call_slot(srv, call);
}

void fp_sol_put_context(fp_buf_t *out, uint64_t slot)
{
    put_context(out, slot);
}
