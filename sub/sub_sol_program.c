/* sub/sub_sol_program.c: Solana's programSubscribe (a row of
 * sub_kinds.c), served from polling through the pool.
 *
 * Each poll is getProgramAccounts(program, {commitment, encoding, filters,
 * withContext}). The first poll records where each account stands (a 64-bit
 * hash of its value per pubkey, never the data); a later poll notifies each
 * account whose value changed or that appeared, as a node's
 * programNotification. An account gone is forgotten, not told. The table is
 * rebuilt from every answer, so it holds only the accounts of the last one.
 *
 * Bound: an answer over ANSWER_MAX (or over server.max_response_bytes) is a
 * program too large to poll every interval: the source ends its
 * subscriptions with an error (sub_fail) naming filters as the way to
 * narrow it. Encodings are passed through as the upstream answers them. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/sl_hash.h"
#include "base/sl_log.h"
#include "sub/sub_call.h"
#include "sub/sub_int.h"

#define ANSWER_MAX (4u << 20)     /* getProgramAccounts answers larger end the source */
#define FILTERS_MAX 4             /* as a node */
#define MEMCMP_BYTES_MAX 128      /* a memcmp's bytes, encoded */
#define DATA_SIZE_MAX (10u << 20) /* an account's most (10 MiB) */

typedef struct acct_table {
    uint64_t *key;                /* hash of the pubkey (0: empty) */
    uint64_t *val;                /* hash of the account's value */
    size_t cap, n;
} acct_table_t;

typedef struct program_poll {
    sub_source_t *src;
    sub_call_t call;
    h2o_timeout_t *period;
    h2o_timeout_entry_t tick;
    char program[48];
    char *params;                 /* getProgramAccounts' params */
    int started;                  /* the first answer recorded */
    int over;                     /* ended (too large): no more polls */
    char endpoint[64];            /* the endpoint the last poll was answered by */
    acct_table_t accounts;
} program_poll_t;

/* ---- params ---- */

static int is_u64(const cJSON *v, double max)
{
    return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= max &&
           v->valuedouble == (double)(uint64_t)v->valuedouble;
}

/* One filter in its normal form, or NULL. */
static cJSON *filter_norm(const cJSON *f)
{
    const cJSON *ds = cJSON_GetObjectItemCaseSensitive(f, "dataSize");
    const cJSON *mc = cJSON_GetObjectItemCaseSensitive(f, "memcmp");
    if (!cJSON_IsObject(f) || cJSON_GetArraySize(f) != 1)
        return NULL;
    cJSON *out = cJSON_CreateObject();
    if (ds != NULL && is_u64(ds, DATA_SIZE_MAX)) {
        cJSON_AddNumberToObject(out, "dataSize", ds->valuedouble);
        return out;
    }
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(mc, "offset");
    const cJSON *bytes = cJSON_GetObjectItemCaseSensitive(mc, "bytes");
    const cJSON *enc = cJSON_GetObjectItemCaseSensitive(mc, "encoding");
    int b64 = cJSON_IsString(enc) && strcmp(enc->valuestring, "base64") == 0;
    int nkeys = cJSON_GetArraySize(mc);
    if (cJSON_IsObject(mc) && is_u64(off, DATA_SIZE_MAX) && cJSON_IsString(bytes) &&
        strlen(bytes->valuestring) <= MEMCMP_BYTES_MAX && nkeys == (enc != NULL ? 3 : 2) &&
        (enc == NULL || b64 || (cJSON_IsString(enc) && strcmp(enc->valuestring, "base58") == 0)) &&
        (b64 ? strspn(bytes->valuestring, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") ==
                   strlen(bytes->valuestring)
             : sub_sol_is_b58(bytes->valuestring, 0, MEMCMP_BYTES_MAX))) {
        cJSON *m = cJSON_AddObjectToObject(out, "memcmp");
        cJSON_AddNumberToObject(m, "offset", off->valuedouble);
        cJSON_AddStringToObject(m, "bytes", bytes->valuestring);
        if (b64)
            cJSON_AddStringToObject(m, "encoding", "base64");
        return out;
    }
    cJSON_Delete(out);
    return NULL;
}

/* The filters in normal form as JSON text (caller frees), "" when none, or NULL when bad. */
static char *filters_norm(const cJSON *fs)
{
    if (fs == NULL)
        return sl_xstrdup("");
    if (!cJSON_IsArray(fs) || cJSON_GetArraySize(fs) > FILTERS_MAX)
        return NULL;
    cJSON *out = cJSON_CreateArray();
    for (const cJSON *f = fs->child; f != NULL; f = f->next) {
        cJSON *n = filter_norm(f);
        if (n == NULL) {
            cJSON_Delete(out);
            return NULL;
        }
        cJSON_AddItemToArray(out, n);
    }
    char *text = cJSON_PrintUnformatted(out);
    cJSON_Delete(out);
    return text;
}

const char *sub_sol_program_params(const cJSON *params, sl_buf_t *key)
{
    static const char *const encodings[] = {"base58", "base64", "base64+zstd", "jsonParsed"};
    const cJSON *pid = cJSON_GetArrayItem(params, 0), *cfg = cJSON_GetArrayItem(params, 1);
    if (!cJSON_IsString(pid) || !sub_sol_is_b58(pid->valuestring, 32, 44) || cJSON_GetArraySize(params) > 2 ||
        (cfg != NULL && !cJSON_IsObject(cfg)))
        return "invalid params: expected [program id (base58), {commitment, encoding, filters}]";
    int lv = sub_sol_commitment(cfg);
    if (lv < 0)
        return "invalid params: commitment must be processed, confirmed or finalized";
    const char *enc = "";
    for (const cJSON *k = cJSON_IsObject(cfg) ? cfg->child : NULL; k != NULL; k = k->next) {
        if (strcmp(k->string, "encoding") == 0) {
            enc = NULL;
            for (size_t i = 0; i < 4; i++)
                if (cJSON_IsString(k) && strcmp(k->valuestring, encodings[i]) == 0)
                    enc = encodings[i];
            if (enc == NULL)
                return "invalid params: encoding must be base58, base64, base64+zstd or jsonParsed";
        } else if (strcmp(k->string, "commitment") != 0 && strcmp(k->string, "filters") != 0) {
            return "invalid params: programSubscribe's config takes commitment, encoding and filters";
        }
    }
    char *fs = filters_norm(cJSON_IsObject(cfg) ? cJSON_GetObjectItemCaseSensitive(cfg, "filters") : NULL);
    if (fs == NULL)
        return "invalid params: filters is an array of at most 4 {\"dataSize\":n} or {\"memcmp\":{\"offset\":n,"
               "\"bytes\":base58 or base64 of at most 128 characters, \"encoding\"}}";
    sl_buf_printf(key, "%s|%d|%s|%s", pid->valuestring, lv, enc, fs);
    free(fs);
    return NULL;
}

/* ---- the accounts' table ---- */

static uint64_t *slot_of(acct_table_t *t, uint64_t k)
{
    size_t i = (size_t)k & (t->cap - 1);
    while (t->key[i] != 0 && t->key[i] != k)
        i = (i + 1) & (t->cap - 1);
    return &t->key[i];
}

/* The value hash recorded for k, or NULL. */
static const uint64_t *table_get(acct_table_t *t, uint64_t k)
{
    if (t->cap == 0)
        return NULL;
    uint64_t *s = slot_of(t, k);
    return *s == k ? &t->val[s - t->key] : NULL;
}

static void table_put(acct_table_t *t, uint64_t k, uint64_t v)
{
    if ((t->n + 1) * 2 > t->cap) {
        acct_table_t g = {.cap = t->cap != 0 ? t->cap * 2 : 64};
        g.key = sl_xcalloc(g.cap, sizeof(uint64_t));
        g.val = sl_xcalloc(g.cap, sizeof(uint64_t));
        for (size_t i = 0; i < t->cap; i++)
            if (t->key[i] != 0)
                table_put(&g, t->key[i], t->val[i]);
        free(t->key);
        free(t->val);
        *t = g;
    }
    uint64_t *s = slot_of(t, k);
    t->n += *s == 0;
    *s = k;
    t->val[s - t->key] = v;
}

static void table_dispose(acct_table_t *t)
{
    free(t->key);
    free(t->val);
    memset(t, 0, sizeof(*t));
}

/* ---- answers ---- */

static void too_large(program_poll_t *p)
{
    char msg[320];
    snprintf(msg, sizeof(msg),
             "programSubscribe %s ended: the program's accounts (getProgramAccounts answer over %u bytes or "
             "server.max_response_bytes) are too many to poll; narrow it with filters (dataSize, memcmp) or use an "
             "endpoint with ws_url", p->program, ANSWER_MAX);
    sl_log_warn("network %s: %s", p->src->net->conf->name, msg);
    p->over = 1;
    sub_fail(p->src, msg);
}

/* Notifies one account of the answer if it changed or appeared; records it in t. */
static void take_account(program_poll_t *p, acct_table_t *t, const cJSON *a, double slot)
{
    const cJSON *pk = cJSON_GetObjectItemCaseSensitive(a, "pubkey");
    const cJSON *acc = cJSON_GetObjectItemCaseSensitive(a, "account");
    if (!cJSON_IsString(pk) || !cJSON_IsObject(acc))
        return;
    char *text = cJSON_PrintUnformatted(acc);
    uint64_t k = sl_fnv1a_str(SL_FNV1A_OFFSET, pk->valuestring) | 1, v = sl_fnv1a_str(SL_FNV1A_OFFSET, text);
    const uint64_t *was = table_get(&p->accounts, k);
    if (p->started && (was == NULL || *was != v)) {
        sl_buf_t b;
        sl_buf_init(&b);
        sl_buf_printf(&b, "{\"context\":{\"slot\":%.0f},\"value\":{\"pubkey\":", slot);
        sl_buf_append_json_str(&b, pk->valuestring, strlen(pk->valuestring));
        sl_buf_printf(&b, ",\"account\":%s}}", text);
        sub_notify(p->src, b.base, b.len);
        sl_buf_dispose(&b);
    }
    table_put(t, k, v);
    free(text);
}

static void on_answer(sub_call_t *c, void *data)
{
    program_poll_t *p = data;
    const char *res;
    size_t len;
    sub_sol_note_endpoint(p->src, c, p->endpoint, sizeof(p->endpoint));
    if (sub_call_too_large(c, 0) || (sub_call_result(c, 0, &res, &len) && len > ANSWER_MAX)) {
        too_large(p);
        return;
    }
    if (!sub_call_result(c, 0, &res, &len))
        return;
    cJSON *r = cJSON_ParseWithLength(res, len);
    const cJSON *slot = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "context"), "slot");
    const cJSON *list = cJSON_IsArray(r) ? r : cJSON_GetObjectItemCaseSensitive(r, "value");
    if (cJSON_IsArray(list)) {
        acct_table_t now = {0};
        for (const cJSON *a = list->child; a != NULL; a = a->next)
            take_account(p, &now, a, cJSON_IsNumber(slot) ? slot->valuedouble : 0);
        table_dispose(&p->accounts);
        p->accounts = now;
        p->started = 1;
    }
    cJSON_Delete(r);
}

static void poll_now(program_poll_t *p)
{
    const char *m = "getProgramAccounts", *pp = p->params;
    gw_stats_sub_add(sub_stats(p->src->reg), p->src->net->index, STATE_SUB_POLLS_PROGRAM, 1);
    sub_call_start(&p->call, p->src->net, 1, &m, &pp, on_answer, p);
}

static void on_tick(h2o_timeout_entry_t *e)
{
    program_poll_t *p = H2O_STRUCT_FROM_MEMBER(program_poll_t, tick, e);
    h2o_timeout_link(sub_loop(p->src->reg), p->period, &p->tick);
    if (!sub_call_busy(&p->call) && !p->over)
        poll_now(p);
}

void sub_sol_program_start(sub_source_t *src)
{
    program_poll_t *p = sl_xcalloc(1, sizeof(*p));
    char enc[16] = "";
    int lv = 2, used = 0;
    p->src = src;
    sub_call_init(&p->call);
    /* the key is "<program>|<level>|<encoding or none>|<filters or none>" (the normaliser's) */
    if (sscanf(src->key, "%47[^|]|%d|%n", p->program, &lv, &used) != 2 || lv < 0 || lv > 2)
        lv = 2;
    const char *rest = src->key + used, *bar = strchr(rest, '|');
    if (bar != NULL && (size_t)(bar - rest) < sizeof(enc))
        memcpy(enc, rest, (size_t)(bar - rest));
    const char *filters = bar != NULL ? bar + 1 : "";
    sl_buf_t b;
    sl_buf_init(&b);
    sl_buf_printf(&b, "[\"%s\",{\"commitment\":\"%s\"", p->program, sub_sol_levels[lv]);
    if (enc[0] != '\0')
        sl_buf_printf(&b, ",\"encoding\":\"%s\"", enc);
    if (filters[0] != '\0')
        sl_buf_printf(&b, ",\"filters\":%s", filters);
    sl_buf_append_str(&b, ",\"withContext\":true}]");
    sl_buf_append_char(&b, '\0');
    p->params = sl_xstrdup(b.base);
    sl_buf_dispose(&b);
    p->period = sub_timeout(src->reg, sub_poll_ms(src->net));
    p->tick.cb = on_tick;
    src->impl = p;
    h2o_timeout_link(sub_loop(src->reg), p->period, &p->tick);
    poll_now(p);
}

void sub_sol_program_stop(sub_source_t *src)
{
    program_poll_t *p = src->impl;
    if (h2o_timeout_is_linked(&p->tick))
        h2o_timeout_unlink(&p->tick);
    sub_call_dispose(&p->call);
    table_dispose(&p->accounts);
    free(p->params);
    free(p);
}
