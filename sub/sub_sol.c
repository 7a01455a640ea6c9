/* sub/sub_sol.c: Solana's subscription kinds (rows of
 * sub_kinds.c), each a poll through the pool every poll interval:
 * slotSubscribe (getSlot at processed and finalized: every slot between
 * two polls, never backwards, as {"parent","root","slot"}), rootSubscribe
 * (getSlot finalized), signatureSubscribe (getSignatureStatuses until the
 * status reaches the commitment asked: one notification, then the
 * subscription ends, as Solana ends it) and accountSubscribe (the account's
 * value: a notification when it changes). Signatures and accounts are not
 * polled one by one: every source of a network (with the same commitment
 * and encoding, for accounts) is a member of one merged poll
 * (sub_sol_batch.c: getSignatureStatuses, getMultipleAccounts). The
 * slot and root polls are also woken when the chain view's head moves (an
 * upstream WebSocket's slotSubscribe), so a ws_url gives slots at once.
 * slotSubscribe has a position (the last slot told): held when its socket
 * closes and resumed from it (sub_resume.c), every slot after it told. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "sub/sub_call.h"
#include "sub/sub_int.h"
#include "sub/sub_poll.h"
#include "sub/sub_sol_batch.h"

#define MAX_SLOTS_PER_POLL 64      /* slots told one by one after a gap; past it, only the newest */

typedef enum sol_kind { SOL_SLOT, SOL_ROOT, SOL_SIGNATURE, SOL_ACCOUNT } sol_kind_t;

typedef struct sol_poll {
    sub_source_t *src;
    sol_kind_t kind;
    sub_poll_t loop;              /* slot, root: polled every interval and when the chain view's head moves */
    uint64_t last;                /* slot / root last told (0: none); slot: the position held (sub_resume.c) */
    uint8_t resumed;              /* slot: goes on from a held position (its first answer tells up to
                                     SUB_RESUME_MAX_BEHIND slots one by one) */
    char *value;                  /* account: its value last read (NULL: not read yet) */
    char params[256];             /* signature, account: the merged call's options */
    int level;                    /* signature: the commitment's rank (processed 0 .. finalized 2) */
    sub_sol_member_t member;   /* signature, account: in the network's merged poll */
} sol_poll_t;

const char *sub_sol_slot_params(const cJSON *params, sl_buf_t *key)
{
    (void)key;
    return cJSON_GetArraySize(params) == 0 ? NULL : "invalid params: this subscription takes none";
}

const char *sub_sol_signature_params(const cJSON *params, sl_buf_t *key)
{
    const cJSON *sig = cJSON_GetArrayItem(params, 0), *cfg = cJSON_GetArrayItem(params, 1);
    if (!cJSON_IsString(sig) || !sub_sol_is_b58(sig->valuestring, 64, 88) || cJSON_GetArraySize(params) > 2 ||
        (cfg != NULL && !cJSON_IsObject(cfg)))
        return "invalid params: expected [signature (base58), {commitment}]";
    int lv = sub_sol_commitment(cfg);
    if (lv < 0)
        return "invalid params: commitment must be processed, confirmed or finalized";
    sl_buf_printf(key, "%s|%d", sig->valuestring, lv);
    return NULL;
}

const char *sub_sol_account_params(const cJSON *params, sl_buf_t *key)
{
    static const char *const encodings[] = {"base58", "base64", "base64+zstd", "jsonParsed"};
    const cJSON *pk = cJSON_GetArrayItem(params, 0), *cfg = cJSON_GetArrayItem(params, 1);
    if (!cJSON_IsString(pk) || !sub_sol_is_b58(pk->valuestring, 32, 44) || cJSON_GetArraySize(params) > 2 ||
        (cfg != NULL && !cJSON_IsObject(cfg)))
        return "invalid params: expected [account (base58), {commitment, encoding}]";
    int lv = sub_sol_commitment(cfg);
    if (lv < 0)
        return "invalid params: commitment must be processed, confirmed or finalized";
    const cJSON *e = cJSON_IsObject(cfg) ? cJSON_GetObjectItemCaseSensitive(cfg, "encoding") : NULL;
    const char *enc = "base58";
    if (e != NULL) {
        enc = NULL;
        for (size_t i = 0; i < 4; i++)
            if (cJSON_IsString(e) && strcmp(e->valuestring, encodings[i]) == 0)
                enc = encodings[i];
        if (enc == NULL)
            return "invalid params: encoding must be base58, base64, base64+zstd or jsonParsed";
    }
    sl_buf_printf(key, "%s|%d|%s", pk->valuestring, lv, enc);
    return NULL;
}

/* ---- answers ---- */

static int read_u64(sub_call_t *c, size_t i, uint64_t *out)
{
    const char *res;
    size_t len;
    char buf[32];
    if (!sub_call_result(c, i, &res, &len) || len == 0 || len >= sizeof(buf))
        return 0;
    memcpy(buf, res, len);
    buf[len] = '\0';
    char *end;
    unsigned long long v = strtoull(buf, &end, 10);
    if (*end != '\0' || buf[0] < '0' || buf[0] > '9')
        return 0;
    *out = v;
    return 1;
}

static void slot_answer(sol_poll_t *p)
{
    uint64_t slot, root = 0;
    char out[128];
    if (!read_u64(&p->loop.call, 0, &slot) || slot <= p->last)
        return; /* never backwards */
    (void)read_u64(&p->loop.call, 1, &root);
    uint64_t span = p->resumed ? SUB_RESUME_MAX_BEHIND : MAX_SLOTS_PER_POLL;
    uint64_t from = p->last == 0 || slot - p->last > span ? slot : p->last + 1;
    p->resumed = 0;
    for (uint64_t s = from; s <= slot; s++) {
        int n = snprintf(out, sizeof(out), "{\"parent\":%" PRIu64 ",\"root\":%" PRIu64 ",\"slot\":%" PRIu64 "}",
                         s - 1, root < s ? root : s, s);
        sub_notify(p->src, out, (size_t)n);
    }
    p->last = slot;
}

static void root_answer(sol_poll_t *p)
{
    uint64_t root;
    char out[32];
    if (!read_u64(&p->loop.call, 0, &root) || root <= p->last)
        return;
    p->last = root;
    int n = snprintf(out, sizeof(out), "%" PRIu64, root);
    sub_notify(p->src, out, (size_t)n);
}

/* A signature told: one notification, then the subscription ends. */
static void signature_told(sol_poll_t *p, sub_sol_member_t *m, double slot, const char *err)
{
    char out[512];
    int n = snprintf(out, sizeof(out), "{\"context\":{\"slot\":%.0f},\"value\":{\"err\":%s}}", slot,
                     err != NULL && strlen(err) < 400 ? err : "null");
    sub_notify(p->src, out, (size_t)n);
    m->done = 1;
    sub_finish(p->src); /* one notification, then the subscription ends */
}

/* signature_answer for a part with escapes in it: through a tree. */
static void signature_answer_tree(sol_poll_t *p, sub_sol_member_t *m, const char *res, size_t len)
{
    cJSON *r = cJSON_ParseWithLength(res, len);
    const cJSON *ctx = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "context"), "slot");
    const cJSON *st = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r, "value"), 0);
    if (cJSON_IsObject(st) && cJSON_IsNumber(ctx)) {
        const cJSON *cs = cJSON_GetObjectItemCaseSensitive(st, "confirmationStatus");
        int lv = cJSON_IsString(cs) ? sub_sol_level(cs->valuestring) : 2; /* none: rooted (older nodes) */
        if (lv >= p->level) {
            const cJSON *err = cJSON_GetObjectItemCaseSensitive(st, "err");
            char *e = err != NULL ? cJSON_PrintUnformatted(err) : NULL;
            signature_told(p, m, ctx->valuedouble, e);
            free(e);
        }
    }
    cJSON_Delete(r);
}

/* The signature's status ({"context","value":[status]}, as getSignatureStatuses of it alone). */
static void signature_answer(sub_sol_member_t *m, const char *res, size_t len)
{
    sol_poll_t *p = H2O_STRUCT_FROM_MEMBER(sol_poll_t, member, m);
    if (!sub_json_escape_free(res, len)) {
        signature_answer_tree(p, m, res, len);
        return;
    }
    wire_span_t all = sub_json_trim(res, len);
    wire_span_t slot = wire_json_member(res, wire_json_member(res, all, "context"), "slot");
    wire_span_t st = sub_json_item0(res, wire_json_member(res, all, "value"));
    if (wire_json_kind(res, st) != WIRE_JSON_OBJECT || wire_json_kind(res, slot) != WIRE_JSON_NUMBER)
        return;
    wire_span_t cs = wire_json_member(res, st, "confirmationStatus"), err = wire_json_member(res, st, "err");
    char level[16];
    int lv = 2; /* none: rooted (older nodes) */
    if (wire_json_kind(res, cs) == WIRE_JSON_STRING)
        lv = wire_json_string(res, cs, level, sizeof(level)) == SL_OK ? sub_sol_level(level) : -1;
    if (lv < p->level)
        return;
    sl_buf_t e;
    sl_buf_init(&e);
    if (err.len != 0) {
        sub_json_print(res, err, &e);
        sl_buf_append_char(&e, '\0');
    }
    signature_told(p, m, sub_json_number(res, slot), err.len != 0 ? e.base : NULL);
    sl_buf_dispose(&e);
}

/* The account's value ({"context","value"}, as getAccountInfo's): a change
 * after the first read is told (not an account gone: value null). text: the
 * value as a tree prints it; all: the whole part, ditto. */
static void account_value(sol_poll_t *p, char *text, int null, const char *all, size_t len)
{
    if (p->value != NULL && strcmp(p->value, text) != 0 && !null)
        sub_notify(p->src, all, len);
    free(p->value);
    p->value = text;
}

static void account_answer(sub_sol_member_t *m, const char *res, size_t len)
{
    sol_poll_t *p = H2O_STRUCT_FROM_MEMBER(sol_poll_t, member, m);
    if (sub_json_escape_free(res, len)) {
        wire_span_t all = sub_json_trim(res, len), v = wire_json_member(res, all, "value");
        if (v.len == 0)
            return;
        sl_buf_t t, a;
        sl_buf_init(&t);
        sl_buf_init(&a);
        sub_json_print(res, v, &t);
        sl_buf_append_char(&t, '\0');
        sub_json_print(res, all, &a);
        account_value(p, sl_buf_steal(&t, NULL), wire_json_kind(res, v) == WIRE_JSON_NULL, a.base, a.len);
        sl_buf_dispose(&a);
        return;
    }
    cJSON *r = cJSON_ParseWithLength(res, len);
    cJSON *v = cJSON_GetObjectItemCaseSensitive(r, "value");
    if (v != NULL) {
        char *all = cJSON_PrintUnformatted(r);
        account_value(p, cJSON_PrintUnformatted(v), cJSON_IsNull(v), all, strlen(all));
        free(all);
    }
    cJSON_Delete(r);
}

static void on_answer(sub_call_t *c, void *data)
{
    sol_poll_t *p = data;
    (void)c;
    switch (p->kind) {
    case SOL_SLOT:
        slot_answer(p);
        return;
    case SOL_ROOT:
        root_answer(p);
        return;
    case SOL_SIGNATURE:
    case SOL_ACCOUNT:
        return; /* merged polls (sub_sol_batch.c) */
    }
}

/* The slot and root polls (sub_poll.c's loop, watching the chain view's
 * head: an upstream WebSocket's slotSubscribe gives slots at once). */
static void poll_now(sub_poll_t *l)
{
    static const char *const get_slot[] = {"getSlot", "getSlot"};
    static const char *const slot_params[] = {"[{\"commitment\":\"processed\"}]", "[{\"commitment\":\"finalized\"}]"};
    sol_poll_t *p = H2O_STRUCT_FROM_MEMBER(sol_poll_t, loop, l);
    sub_count_cost(p->src->reg, p->src->net->index, STATE_SUB_POLLS_SLOT, 1);
    if (p->kind == SOL_SLOT)
        sub_call_start(&l->call, p->src->net, 2, get_slot, slot_params, on_answer, p);
    else
        sub_call_start(&l->call, p->src->net, 1, get_slot, &slot_params[1], on_answer, p);
}

static void start(sub_source_t *src, sol_kind_t kind)
{
    sol_poll_t *p = sl_xcalloc(1, sizeof(*p));
    p->src = src;
    p->kind = kind;
    sub_poll_init(&p->loop);
    src->impl = p;
    /* the key is "<address>|<level>[|<encoding>]" (the normalisers'), checked already */
    char addr[96] = "", enc[16] = "";
    int lv = 2;
    if (sscanf(src->key, "%95[^|]|%d|%15s", addr, &lv, enc) >= 2)
        p->level = lv;
    if (kind == SOL_SIGNATURE || kind == SOL_ACCOUNT) {
        snprintf(p->member.item, sizeof(p->member.item), "%s", addr);
        p->member.cb = kind == SOL_SIGNATURE ? signature_answer : account_answer;
        if (kind == SOL_ACCOUNT)
            snprintf(p->params, sizeof(p->params), "{\"commitment\":\"%s\",\"encoding\":\"%s\"}",
                     sub_sol_levels[lv >= 0 && lv < 3 ? lv : 2], enc);
        else
            snprintf(p->params, sizeof(p->params), "{\"searchTransactionHistory\":false}");
        sub_sol_batch_join(src->reg, src->net,
                              kind == SOL_ACCOUNT ? SUB_SOL_BATCH_ACCOUNT : SUB_SOL_BATCH_SIGNATURE, p->params,
                              &p->member);
        return;
    }
    if (kind == SOL_SLOT && src->resume.height != 0) {
        p->last = src->resume.height; /* the slots after it first, one by one */
        p->resumed = 1;
    }
    sub_poll_start(&p->loop, src->reg, src->net, SUB_POLL_WATCH, poll_now);
}

int sub_sol_slot_position(const sub_source_t *src, sub_resume_pos_t *pos)
{
    const sol_poll_t *p = src->impl;
    if (p == NULL || p->last == 0)
        return 0;
    memset(pos, 0, sizeof(*pos));
    pos->height = p->last; /* a slot has no hash kept here: held by number alone */
    return 1;
}

void sub_sol_slot_start(sub_source_t *src)
{
    start(src, SOL_SLOT);
}

void sub_sol_root_start(sub_source_t *src)
{
    start(src, SOL_ROOT);
}

void sub_sol_signature_start(sub_source_t *src)
{
    start(src, SOL_SIGNATURE);
}

void sub_sol_account_start(sub_source_t *src)
{
    start(src, SOL_ACCOUNT);
}

void sub_sol_stop(sub_source_t *src)
{
    sol_poll_t *p = src->impl;
    sub_poll_stop(&p->loop);
    if (p->member.batch != NULL)
        sub_sol_batch_leave(&p->member);
    free(p->value);
    free(p);
}
