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
 * One poll per program: the sources of one program, commitment and encoding
 * (base58, base64 or none: data decoded here) are members of a group that
 * polls once per interval with the filters every member has (their
 * intersection), and applies each member's own filters to the answer here
 * (sub_sol_match.c). jsonParsed and base64+zstd sources poll alone.
 *
 * Bound: an answer over ANSWER_MAX (or over server.max_response_bytes) is a
 * program too large to poll every interval. A shared answer that is too
 * large splits the group: each member polls alone with its own filters from
 * then on (as before the sharing), so one loose filter never ends the
 * others; a source whose own answer is too large ends its subscriptions
 * with an error (sub_fail) naming filters as the way to narrow it.
 * Encodings are passed through as the upstream answers them. */
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

typedef struct program_group program_group_t;

typedef struct program_poll {
    sub_source_t *src;
    program_group_t *group;       /* the program's shared poll, or NULL: polled alone (own tick) */
    h2o_linklist_t link;          /* in group->members */
    sub_call_t call;           /* its own poll: alone, or its group split */
    h2o_timeout_t *period;
    h2o_timeout_entry_t tick;     /* alone only */
    char program[48];
    int level;
    char enc[16];                 /* "" when the subscribe named none */
    char *params;                 /* getProgramAccounts' params with its own filters */
    sub_sol_filter_t filters[FILTERS_MAX];
    size_t nfilters;
    int started;                  /* the first answer recorded */
    int over;                     /* ended (too large): no more polls */
    char endpoint[64];            /* the endpoint the last poll was answered by */
    acct_table_t accounts;
} program_poll_t;

/* The members of one (network, program, commitment, encoding). */
struct program_group {
    sub_group_t g;
    sub_reg_t *reg;
    h2o_linklist_t members;
    sub_call_t call;
    h2o_timeout_t *period;
    h2o_timeout_entry_t tick, soon;
    sub_sol_filter_t asked[FILTERS_MAX]; /* the filters of the poll out or last answered */
    size_t nasked;
    int split;                    /* a shared answer was too large: each member polls alone */
};

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

/* One account of an answer, read once for every member. */
typedef struct acct_seen {
    const char *pubkey;
    char *text;                   /* the account object */
    uint64_t k, v;                /* hashes of the pubkey (never 0) and of text */
    uint8_t *data;                /* decoded, or NULL */
    size_t len;
    int decoded;
} acct_seen_t;

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

/* The accounts of an answer's list (n of them, caller frees with seen_free). */
static acct_seen_t *seen_read(const cJSON *list, size_t *n)
{
    acct_seen_t *seen = sl_xcalloc((size_t)cJSON_GetArraySize(list) + 1, sizeof(*seen));
    *n = 0;
    for (const cJSON *a = list->child; a != NULL; a = a->next) {
        const cJSON *pk = cJSON_GetObjectItemCaseSensitive(a, "pubkey");
        const cJSON *acc = cJSON_GetObjectItemCaseSensitive(a, "account");
        if (!cJSON_IsString(pk) || !cJSON_IsObject(acc))
            continue;
        acct_seen_t *s = &seen[(*n)++];
        s->pubkey = pk->valuestring;
        s->text = cJSON_PrintUnformatted(acc);
        s->k = sl_fnv1a_str(SL_FNV1A_OFFSET, pk->valuestring) | 1;
        s->v = sl_fnv1a_str(SL_FNV1A_OFFSET, s->text);
        s->decoded = sub_sol_account_data(acc, &s->data, &s->len);
    }
    return seen;
}

static void seen_free(acct_seen_t *seen, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(seen[i].text);
        free(seen[i].data);
    }
    free(seen);
}

/* p's part of an answer: notifies each account of it that passes p's
 * filters and changed or appeared; rebuilds p's table from them. */
static void take_accounts(program_poll_t *p, const acct_seen_t *seen, size_t n, double slot)
{
    acct_table_t now = {0};
    for (size_t i = 0; i < n; i++) {
        const acct_seen_t *s = &seen[i];
        if (p->nfilters > 0 && (!s->decoded || !sub_sol_filters_match(p->filters, p->nfilters, s->data, s->len)))
            continue;
        const uint64_t *was = table_get(&p->accounts, s->k);
        if (p->started && (was == NULL || *was != s->v)) {
            sl_buf_t b;
            sl_buf_init(&b);
            sl_buf_printf(&b, "{\"context\":{\"slot\":%.0f},\"value\":{\"pubkey\":", slot);
            sl_buf_append_json_str(&b, s->pubkey, strlen(s->pubkey));
            sl_buf_printf(&b, ",\"account\":%s}}", s->text);
            sub_notify(p->src, b.base, b.len);
            sl_buf_dispose(&b);
        }
        table_put(&now, s->k, s->v);
    }
    table_dispose(&p->accounts);
    p->accounts = now;
    p->started = 1;
}

/* The answer of c as accounts (NULL when it has none); *over when too large. */
static cJSON *answer_of(sub_call_t *c, const cJSON **list, double *slot, int *over)
{
    const char *res;
    size_t len;
    *over = sub_call_too_large(c, 0) || (sub_call_result(c, 0, &res, &len) && len > ANSWER_MAX);
    if (*over || !sub_call_result(c, 0, &res, &len))
        return NULL;
    cJSON *r = cJSON_ParseWithLength(res, len);
    const cJSON *sl = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "context"), "slot");
    *list = cJSON_IsArray(r) ? r : cJSON_GetObjectItemCaseSensitive(r, "value");
    *slot = cJSON_IsNumber(sl) ? sl->valuedouble : 0;
    if (!cJSON_IsArray(*list)) {
        cJSON_Delete(r);
        return NULL;
    }
    return r;
}

/* An answer to p's own poll. */
static void on_answer(sub_call_t *c, void *data)
{
    program_poll_t *p = data;
    const cJSON *list;
    double slot;
    int over;
    sub_sol_note_endpoint(p->src, c, p->endpoint, sizeof(p->endpoint));
    cJSON *r = answer_of(c, &list, &slot, &over);
    if (over)
        too_large(p);
    if (r == NULL)
        return;
    size_t n;
    acct_seen_t *seen = seen_read(list, &n);
    take_accounts(p, seen, n, slot);
    seen_free(seen, n);
    cJSON_Delete(r);
}

static void poll_alone(program_poll_t *p)
{
    const char *m = "getProgramAccounts", *pp = p->params;
    sub_count_cost(p->src->reg, p->src->net->index, STATE_SUB_POLLS_PROGRAM, 1);
    sub_call_start(&p->call, p->src->net, 1, &m, &pp, on_answer, p);
}

static void on_tick(h2o_timeout_entry_t *e)
{
    program_poll_t *p = H2O_STRUCT_FROM_MEMBER(program_poll_t, tick, e);
    h2o_timeout_link(sub_loop(p->src->reg), p->period, &p->tick);
    if (!sub_call_busy(&p->call) && !p->over)
        poll_alone(p);
}

/* ---- the shared poll ---- */

/* 1 if filter f is one of p's. */
static int has_filter(const program_poll_t *p, const sub_sol_filter_t *f)
{
    for (size_t i = 0; i < p->nfilters; i++)
        if (strcmp(p->filters[i].text, f->text) == 0)
            return 1;
    return 0;
}

/* 1 if every filter the shared poll asked with is one of p's: the answer holds all of p's accounts. */
static int covers(const program_group_t *g, const program_poll_t *p)
{
    for (size_t i = 0; i < g->nasked; i++)
        if (!has_filter(p, &g->asked[i]))
            return 0;
    return 1;
}

static void params_write(sl_buf_t *b, const char *program, int level, const char *enc,
                         const sub_sol_filter_t *f, size_t nf)
{
    sl_buf_printf(b, "[\"%s\",{\"commitment\":\"%s\"", program, sub_sol_levels[level]);
    if (enc[0] != '\0')
        sl_buf_printf(b, ",\"encoding\":\"%s\"", enc);
    if (nf > 0) {
        sl_buf_append_str(b, ",\"filters\":[");
        for (size_t i = 0; i < nf; i++)
            sl_buf_printf(b, "%s%s", i > 0 ? "," : "", f[i].text);
        sl_buf_append_char(b, ']');
    }
    sl_buf_append_str(b, ",\"withContext\":true}]");
    sl_buf_append_char(b, '\0');
}

static void on_group_answer(sub_call_t *c, void *data)
{
    program_group_t *g = data;
    const cJSON *list;
    double slot;
    int over, looser = 0;
    for (h2o_linklist_t *l = g->members.next; l != &g->members; l = l->next) {
        program_poll_t *p = H2O_STRUCT_FROM_MEMBER(program_poll_t, link, l);
        sub_sol_note_endpoint(p->src, c, p->endpoint, sizeof(p->endpoint));
    }
    cJSON *r = answer_of(c, &list, &slot, &over);
    if (over) {
        /* the members asking no more than was asked are too large themselves; the others poll alone */
        for (h2o_linklist_t *l = g->members.next; l != &g->members; l = l->next) {
            program_poll_t *p = H2O_STRUCT_FROM_MEMBER(program_poll_t, link, l);
            if (p->over)
                continue;
            if (covers(g, p) && p->nfilters == g->nasked)
                too_large(p);
            else
                looser = 1;
        }
        if (looser) {
            sl_log_info("network %s: programSubscribe %.47s: the shared getProgramAccounts answer is over %u bytes; "
                        "its filters are polled one by one", g->g.net->conf->name, g->g.key, ANSWER_MAX);
            g->split = 1;
            if (!h2o_timeout_is_linked(&g->soon))
                h2o_timeout_link(sub_loop(g->reg), sub_timeout(g->reg, 0), &g->soon);
        }
    }
    if (r == NULL)
        return;
    size_t n;
    acct_seen_t *seen = seen_read(list, &n);
    for (h2o_linklist_t *l = g->members.next; l != &g->members; l = l->next) {
        program_poll_t *p = H2O_STRUCT_FROM_MEMBER(program_poll_t, link, l);
        if (!p->over && covers(g, p)) /* a member that joined after the ask waits for the next */
            take_accounts(p, seen, n, slot);
    }
    seen_free(seen, n);
    cJSON_Delete(r);
}

/* One round: the shared poll with the members' common filters, or each member alone once split. */
static void group_poll(program_group_t *g)
{
    if (g->split) {
        for (h2o_linklist_t *l = g->members.next; l != &g->members; l = l->next) {
            program_poll_t *p = H2O_STRUCT_FROM_MEMBER(program_poll_t, link, l);
            if (!sub_call_busy(&p->call) && !p->over)
                poll_alone(p);
        }
        return;
    }
    if (sub_call_busy(&g->call) || h2o_linklist_is_empty(&g->members))
        return;
    program_poll_t *first = H2O_STRUCT_FROM_MEMBER(program_poll_t, link, g->members.next);
    g->nasked = 0;
    for (size_t i = 0; i < first->nfilters; i++) {
        int all = 1;
        for (h2o_linklist_t *l = g->members.next; l != &g->members && all; l = l->next)
            all = has_filter(H2O_STRUCT_FROM_MEMBER(program_poll_t, link, l), &first->filters[i]);
        if (all)
            g->asked[g->nasked++] = first->filters[i];
    }
    sl_buf_t b;
    sl_buf_init(&b);
    params_write(&b, first->program, first->level, first->enc, g->asked, g->nasked);
    const char *m = "getProgramAccounts", *pp = b.base;
    sub_count_cost(g->reg, g->g.net->index, STATE_SUB_POLLS_PROGRAM, 1);
    sub_call_start(&g->call, g->g.net, 1, &m, &pp, on_group_answer, g);
    sl_buf_dispose(&b);
}

static void on_group_tick(h2o_timeout_entry_t *e)
{
    program_group_t *g = H2O_STRUCT_FROM_MEMBER(program_group_t, tick, e);
    h2o_timeout_link(sub_loop(g->reg), g->period, &g->tick);
    group_poll(g);
}

static void on_group_soon(h2o_timeout_entry_t *e)
{
    group_poll(H2O_STRUCT_FROM_MEMBER(program_group_t, soon, e));
}

static void group_join(program_poll_t *p)
{
    sub_reg_t *r = p->src->reg;
    char key[64]; /* a program is at most 44 characters, a shared poll's encoding 6 */
    snprintf(key, sizeof(key), "%.44s|%d|%.6s", p->program, p->level, p->enc);
    sub_group_t *gg = sub_group_find(r, "program", p->src->net, key);
    program_group_t *g = gg != NULL ? H2O_STRUCT_FROM_MEMBER(program_group_t, g, gg) : NULL;
    if (g == NULL) {
        g = sl_xcalloc(1, sizeof(*g));
        g->g.tag = "program";
        g->g.net = p->src->net;
        snprintf(g->g.key, sizeof(g->g.key), "%s", key);
        g->reg = r;
        h2o_linklist_init_anchor(&g->members);
        sub_call_init(&g->call);
        g->period = sub_timeout(r, sub_poll_ms(p->src->net));
        g->tick.cb = on_group_tick;
        g->soon.cb = on_group_soon;
        h2o_timeout_link(sub_loop(r), g->period, &g->tick);
        sub_group_add(r, &g->g);
    }
    p->group = g;
    h2o_linklist_insert(&g->members, &p->link);
    /* a new member is read soon (its first table), not a period later */
    if (!h2o_timeout_is_linked(&g->soon) && (g->split || !sub_call_busy(&g->call)))
        h2o_timeout_link(sub_loop(r), sub_timeout(r, 0), &g->soon);
}

static void group_leave(program_poll_t *p)
{
    program_group_t *g = p->group;
    h2o_linklist_unlink(&p->link);
    p->group = NULL;
    if (!h2o_linklist_is_empty(&g->members))
        return;
    if (h2o_timeout_is_linked(&g->tick))
        h2o_timeout_unlink(&g->tick);
    if (h2o_timeout_is_linked(&g->soon))
        h2o_timeout_unlink(&g->soon);
    sub_call_dispose(&g->call);
    h2o_linklist_unlink(&g->g.link);
    free(g);
}

/* ---- the source ---- */

void sub_sol_program_start(sub_source_t *src)
{
    program_poll_t *p = sl_xcalloc(1, sizeof(*p));
    int used = 0;
    p->src = src;
    p->level = 2;
    sub_call_init(&p->call);
    /* the key is "<program>|<level>|<encoding or none>|<filters or none>" (the normaliser's) */
    if (sscanf(src->key, "%47[^|]|%d|%n", p->program, &p->level, &used) != 2 || p->level < 0 || p->level > 2)
        p->level = 2;
    const char *rest = src->key + used, *bar = strchr(rest, '|');
    if (bar != NULL && (size_t)(bar - rest) < sizeof(p->enc))
        memcpy(p->enc, rest, (size_t)(bar - rest));
    int decodable = sub_sol_filters_parse(bar != NULL ? bar + 1 : "", p->filters, FILTERS_MAX, &p->nfilters);
    sl_buf_t b;
    sl_buf_init(&b);
    params_write(&b, p->program, p->level, p->enc, p->filters, p->nfilters);
    p->params = sl_xstrdup(b.base);
    sl_buf_dispose(&b);
    src->impl = p;
    /* data in these encodings is decoded here, so one poll serves every filter */
    if (decodable && (p->enc[0] == '\0' || strcmp(p->enc, "base58") == 0 || strcmp(p->enc, "base64") == 0)) {
        group_join(p);
        return;
    }
    p->period = sub_timeout(src->reg, sub_poll_ms(src->net));
    p->tick.cb = on_tick;
    h2o_timeout_link(sub_loop(src->reg), p->period, &p->tick);
    poll_alone(p);
}

void sub_sol_program_stop(sub_source_t *src)
{
    program_poll_t *p = src->impl;
    if (p->group != NULL)
        group_leave(p);
    if (h2o_timeout_is_linked(&p->tick))
        h2o_timeout_unlink(&p->tick);
    sub_call_dispose(&p->call);
    table_dispose(&p->accounts);
    free(p->params);
    free(p);
}
