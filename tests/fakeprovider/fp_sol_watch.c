/* fp_sol_watch.c: what Solana's logsSubscribe and programSubscribe poll in
 * sluice: transactions that mention an address (getSignaturesForAddress,
 * getTransaction with logMessages) and program accounts
 * (getProgramAccounts with dataSize and memcmp filters), both made by the
 * /_control/sol route:
 *   {"mention": address, "count": n[, "fail": true]}  n transactions at the head
 *   {"program": id, "account": pubkey, "data": base64}  an account set
 *   {"program": id, "fill": n, "size": bytes}           n accounts of that size
 * A transaction's signature is base58(SHA-512("fp-mention|" address "|" k)),
 * k counting the fake's mentions from 0: two fakes given the same commands
 * hold the same transactions (failover tests). */
#include "fp.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/sha.h>

#define SIGS_LIMIT_MAX 1000
#define MENTIONS_MAX 100000
#define ACCOUNTS_MAX 100000
#define ACCOUNT_BYTES_MAX (1u << 20)

typedef struct solw_tx {
    char addr[48];
    char sig[96];
    uint64_t slot;
    uint64_t k;
    bool fail;
} solw_tx_t;

typedef struct solw_acct {
    char program[48];
    char pubkey[48];
    uint8_t *data;
    size_t len;
} solw_acct_t;

struct fp_solw {
    solw_tx_t *txs;             /* oldest first */
    size_t ntx, captx;
    solw_acct_t *accts;
    size_t nacct, capacct;
};

static struct fp_solw *solw(fp_server_t *srv)
{
    if (!srv->solw) {
        srv->solw = fp_xmalloc(sizeof *srv->solw);
        memset(srv->solw, 0, sizeof *srv->solw);
    }
    return srv->solw;
}

void fp_solw_dispose(fp_server_t *srv)
{
    if (!srv->solw)
        return;
    for (size_t i = 0; i < srv->solw->nacct; i++)
        free(srv->solw->accts[i].data);
    free(srv->solw->accts);
    free(srv->solw->txs);
    free(srv->solw);
    srv->solw = NULL;
}

/* ---- control ---- */

static int ctl_error(fp_buf_t *out, const char *msg)
{
    fp_buf_puts(out, "{\"ok\":false,\"error\":");
    fp_buf_put_json_str(out, msg, strlen(msg));
    fp_buf_puts(out, "}");
    return 400;
}

static int add_mentions(fp_server_t *srv, const char *addr, double count, bool fail, fp_buf_t *out)
{
    struct fp_solw *w = solw(srv);
    if (count < 1 || count != floor(count) || w->ntx + count > MENTIONS_MAX || strlen(addr) >= 48)
        return ctl_error(out, "count must be 1.. (100000 in all), address base58");
    fp_buf_puts(out, "{\"ok\":true,\"signatures\":[");
    for (size_t i = 0; i < (size_t)count; i++) {
        if (w->ntx == w->captx) {
            w->captx = w->captx ? w->captx * 2 : 64;
            w->txs = fp_xrealloc(w->txs, w->captx * sizeof *w->txs);
        }
        solw_tx_t *t = &w->txs[w->ntx];
        char seed[96];
        uint8_t h[SHA512_DIGEST_LENGTH];
        int n = snprintf(seed, sizeof seed, "fp-mention|%s|%zu", addr, w->ntx);
        SHA512((const uint8_t *)seed, (size_t)n, h);
        fp_sol_base58(h, sizeof h, t->sig);
        snprintf(t->addr, sizeof t->addr, "%s", addr);
        t->slot = fp_server_head(srv);
        t->k = w->ntx++;
        t->fail = fail;
        fp_buf_printf(out, "%s\"%s\"", i ? "," : "", t->sig);
    }
    fp_buf_puts(out, "]}");
    return 200;
}

static solw_acct_t *acct_put(struct fp_solw *w, const char *program, const char *pubkey)
{
    for (size_t i = 0; i < w->nacct; i++)
        if (strcmp(w->accts[i].pubkey, pubkey) == 0)
            return &w->accts[i];
    if (w->nacct == ACCOUNTS_MAX)
        return NULL;
    if (w->nacct == w->capacct) {
        w->capacct = w->capacct ? w->capacct * 2 : 64;
        w->accts = fp_xrealloc(w->accts, w->capacct * sizeof *w->accts);
    }
    solw_acct_t *a = &w->accts[w->nacct++];
    memset(a, 0, sizeof *a);
    snprintf(a->program, sizeof a->program, "%s", program);
    snprintf(a->pubkey, sizeof a->pubkey, "%s", pubkey);
    return a;
}

static int set_account(fp_server_t *srv, const char *program, const char *pubkey, const char *b64, fp_buf_t *out)
{
    size_t n = strlen(b64);
    if (n % 4 || n / 4 * 3 > ACCOUNT_BYTES_MAX || strlen(program) >= 48 || strlen(pubkey) >= 48)
        return ctl_error(out, "data must be base64 (1 MiB at most); program and account base58");
    solw_acct_t *a = acct_put(solw(srv), program, pubkey);
    if (!a)
        return ctl_error(out, "too many accounts");
    free(a->data);
    a->data = fp_xmalloc(n / 4 * 3 + 1);
    int got = EVP_DecodeBlock(a->data, (const unsigned char *)b64, (int)n);
    a->len = got < 0 ? 0 : (size_t)got - (n && b64[n - 1] == '=') - (n > 1 && b64[n - 2] == '=');
    fp_buf_puts(out, "{\"ok\":true}");
    return 200;
}

static int fill_program(fp_server_t *srv, const char *program, double count, double size, fp_buf_t *out)
{
    if (count < 1 || count > ACCOUNTS_MAX || size < 0 || size > ACCOUNT_BYTES_MAX || strlen(program) >= 48)
        return ctl_error(out, "fill: 1..100000 accounts of at most 1 MiB");
    for (size_t i = 0; i < (size_t)count; i++) {
        char seed[96], pk[96];
        uint8_t h[SHA256_DIGEST_LENGTH];
        int n = snprintf(seed, sizeof seed, "fp-acct|%s|%zu", program, i);
        SHA256((const uint8_t *)seed, (size_t)n, h);
        fp_sol_base58(h, sizeof h, pk);
        solw_acct_t *a = acct_put(solw(srv), program, pk);
        if (!a)
            return ctl_error(out, "too many accounts");
        free(a->data);
        a->len = (size_t)size;
        a->data = fp_xmalloc(a->len + 1);
        memset(a->data, (int)(i & 0xff), a->len);
    }
    fp_buf_puts(out, "{\"ok\":true}");
    return 200;
}

int fp_solw_route(fp_server_t *srv, const char *body, size_t n, fp_buf_t *out)
{
    cJSON *r = cJSON_ParseWithLength(body, n);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(r, "mention");
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(r, "program");
    const cJSON *acc = cJSON_GetObjectItemCaseSensitive(r, "account");
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(r, "data");
    const cJSON *fill = cJSON_GetObjectItemCaseSensitive(r, "fill");
    const cJSON *count = cJSON_GetObjectItemCaseSensitive(r, "count");
    int status;
    if (cJSON_IsString(m))
        status = add_mentions(srv, m->valuestring, cJSON_IsNumber(count) ? count->valuedouble : 1,
                              cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "fail")), out);
    else if (cJSON_IsString(p) && cJSON_IsString(acc) && cJSON_IsString(data))
        status = set_account(srv, p->valuestring, acc->valuestring, data->valuestring, out);
    else if (cJSON_IsString(p) && cJSON_IsNumber(fill))
        status = fill_program(srv, p->valuestring, fill->valuedouble,
                              cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(r, "size")), out);
    else
        status = ctl_error(out, "expected {mention, count} or {program, account, data} or {program, fill, size}");
    cJSON_Delete(r);
    return status;
}

/* ---- methods ---- */

static const fp_rpc_error_t err_limit = {-32602, "Invalid limit; max 1000"};

/* The string param i, copied into dst (cap); false when absent or too long. */
static bool string_param(const fp_call_t *call, size_t i, char *dst, size_t cap)
{
    fp_span_t v, s;
    if (!fp_json_array_get(call->params, i, &v) || !fp_json_string(v, &s) || s.n == 0 || s.n >= cap)
        return false;
    memcpy(dst, s.p, s.n);
    dst[s.n] = '\0';
    return true;
}

/* The config's string member key copied into dst, or "" when absent. */
static void config_str(cJSON *cfg, const char *key, char *dst, size_t cap)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    snprintf(dst, cap, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

static cJSON *config_of(const fp_call_t *call)
{
    fp_span_t v;
    return fp_json_array_get(call->params, 1, &v) ? cJSON_ParseWithLength(v.p, v.n) : NULL;
}

const fp_rpc_error_t *fp_solw_signatures(fp_server_t *srv, const fp_call_t *call, fp_buf_t *out)
{
    char addr[64], until[100], before[100];
    struct fp_solw *w = solw(srv);
    if (!string_param(call, 0, addr, sizeof addr))
        return &fp_err_invalid_params;
    cJSON *cfg = config_of(call);
    const cJSON *lim = cJSON_GetObjectItemCaseSensitive(cfg, "limit");
    double limit = cJSON_IsNumber(lim) ? lim->valuedouble : SIGS_LIMIT_MAX;
    config_str(cfg, "until", until, sizeof until);
    config_str(cfg, "before", before, sizeof before);
    cJSON_Delete(cfg);
    if (limit < 1 || limit > SIGS_LIMIT_MAX)
        return &err_limit;
    uint64_t slot = fp_sol_call_slot(srv, call);
    size_t n = 0;
    bool started = before[0] == '\0';
    fp_buf_puts(out, "[");
    for (size_t i = w->ntx; i > 0 && n < (size_t)limit; i--) {
        const solw_tx_t *t = &w->txs[i - 1];
        if (strcmp(t->addr, addr) != 0 || t->slot > slot)
            continue;
        if (strcmp(t->sig, until) == 0)
            break;
        if (!started) {
            started = strcmp(t->sig, before) == 0;
            continue;
        }
        fp_buf_printf(out, "%s{\"blockTime\":null,\"confirmationStatus\":\"finalized\",\"err\":%s,\"memo\":null,"
                      "\"signature\":\"%s\",\"slot\":%" PRIu64 "}",
                      n++ ? "," : "", t->fail ? "{\"InstructionError\":[0,{\"Custom\":1}]}" : "null", t->sig, t->slot);
    }
    fp_buf_puts(out, "]");
    return NULL;
}

const fp_rpc_error_t *fp_solw_transaction(fp_server_t *srv, const fp_call_t *call, fp_buf_t *out)
{
    char sig[100];
    struct fp_solw *w = solw(srv);
    if (!string_param(call, 0, sig, sizeof sig))
        return &fp_err_invalid_params;
    uint64_t slot = fp_sol_call_slot(srv, call);
    const solw_tx_t *t = NULL;
    for (size_t i = 0; i < w->ntx && !t; i++)
        if (strcmp(w->txs[i].sig, sig) == 0)
            t = &w->txs[i];
    if (!t || t->slot > slot) {
        fp_buf_puts(out, "null");
        return NULL;
    }
    const char *err = t->fail ? "{\"InstructionError\":[0,{\"Custom\":1}]}" : "null";
    fp_buf_printf(out,
                  "{\"blockTime\":null,\"meta\":{\"computeUnitsConsumed\":150,\"err\":%s,\"fee\":5000,"
                  "\"innerInstructions\":[],\"loadedAddresses\":{\"readonly\":[],\"writable\":[]},"
                  "\"logMessages\":[\"Program 11111111111111111111111111111111 invoke [1]\","
                  "\"Program log: fp mention %" PRIu64 "\",\"Program 11111111111111111111111111111111 %s\"],"
                  "\"postBalances\":[],\"postTokenBalances\":[],\"preBalances\":[],\"preTokenBalances\":[],"
                  "\"rewards\":[],\"status\":%s},\"slot\":%" PRIu64 ",\"transaction\":{\"message\":{"
                  "\"accountKeys\":[\"%s\"],\"header\":{\"numReadonlySignedAccounts\":0,"
                  "\"numReadonlyUnsignedAccounts\":0,\"numRequiredSignatures\":1},\"instructions\":[],"
                  "\"recentBlockhash\":\"11111111111111111111111111111111\"},\"signatures\":[\"%s\"]},"
                  "\"version\":\"legacy\"}",
                  err, t->k, t->fail ? "failed: custom program error: 0x1" : "success",
                  t->fail ? "{\"Err\":{\"InstructionError\":[0,{\"Custom\":1}]}}" : "{\"Ok\":null}", t->slot, t->addr,
                  t->sig);
    return NULL;
}

/* Whether a matches every filter (dataSize, memcmp); false on a bad filter. */
static bool matches(const solw_acct_t *a, const cJSON *filters, bool *bad)
{
    const cJSON *f;
    cJSON_ArrayForEach(f, filters) {
        const cJSON *ds = cJSON_GetObjectItemCaseSensitive(f, "dataSize");
        const cJSON *mc = cJSON_GetObjectItemCaseSensitive(f, "memcmp");
        if (cJSON_IsNumber(ds)) {
            if ((double)a->len != ds->valuedouble)
                return false;
            continue;
        }
        const cJSON *off = cJSON_GetObjectItemCaseSensitive(mc, "offset");
        const cJSON *bytes = cJSON_GetObjectItemCaseSensitive(mc, "bytes");
        const cJSON *enc = cJSON_GetObjectItemCaseSensitive(mc, "encoding");
        uint8_t want[256];
        size_t n = 0;
        if (!cJSON_IsNumber(off) || !cJSON_IsString(bytes) || strlen(bytes->valuestring) > 128) {
            *bad = true;
            return false;
        }
        if (cJSON_IsString(enc) && strcmp(enc->valuestring, "base64") == 0) {
            size_t l = strlen(bytes->valuestring);
            int got = l % 4 ? -1 : EVP_DecodeBlock(want, (const unsigned char *)bytes->valuestring, (int)l);
            n = got < 0 ? 0 : (size_t)got - (l && bytes->valuestring[l - 1] == '=') -
                                  (l > 1 && bytes->valuestring[l - 2] == '=');
        } else if (!fp_sol_base58_decode(bytes->valuestring, want, sizeof want, &n)) {
            *bad = true;
            return false;
        }
        size_t at = (size_t)off->valuedouble;
        if (at > a->len || a->len - at < n || memcmp(a->data + at, want, n) != 0)
            return false;
    }
    return true;
}

static void put_account(fp_buf_t *out, const solw_acct_t *a, bool b58)
{
    fp_buf_puts(out, "{\"account\":{\"data\":[\"");
    if (b58) {
        char *text = fp_xmalloc(a->len * 2 + 2);
        fp_sol_base58(a->data, a->len, text);
        fp_buf_puts(out, text);
        free(text);
    } else {
        char *text = fp_xmalloc(a->len / 3 * 4 + 8);
        EVP_EncodeBlock((unsigned char *)text, a->data, (int)a->len);
        fp_buf_puts(out, text);
        free(text);
    }
    fp_buf_printf(out, "\",\"%s\"],\"executable\":false,\"lamports\":%zu,\"owner\":\"%s\","
                       "\"rentEpoch\":18446744073709551615,\"space\":%zu},\"pubkey\":\"%s\"}",
                  b58 ? "base58" : "base64", 890880 + a->len * 6960, a->program, a->len, a->pubkey);
}

const fp_rpc_error_t *fp_solw_program_accounts(fp_server_t *srv, const fp_call_t *call, fp_buf_t *out)
{
    char program[64], enc[16];
    struct fp_solw *w = solw(srv);
    if (!string_param(call, 0, program, sizeof program))
        return &fp_err_invalid_params;
    cJSON *cfg = config_of(call);
    config_str(cfg, "encoding", enc, sizeof enc);
    bool ctx = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cfg, "withContext"));
    bool b58 = strcmp(enc, "base58") == 0, bad = false;
    const cJSON *filters = cJSON_GetObjectItemCaseSensitive(cfg, "filters");
    if (ctx)
        fp_sol_put_context(out, fp_sol_call_slot(srv, call));
    fp_buf_puts(out, "[");
    size_t n = 0;
    for (size_t i = 0; i < w->nacct && !bad; i++) {
        const solw_acct_t *a = &w->accts[i];
        if (strcmp(a->program, program) != 0 || !matches(a, filters, &bad) || (b58 && a->len > 128))
            continue;
        fp_buf_puts(out, n++ ? "," : "");
        put_account(out, a, b58);
    }
    cJSON_Delete(cfg);
    if (bad)
        return &fp_err_invalid_params;
    fp_buf_puts(out, ctx ? "]}" : "]");
    return NULL;
}
