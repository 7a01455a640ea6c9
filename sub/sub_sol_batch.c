/* sub/sub_sol_batch.c: merged Solana account and signature polls
 * (sub_sol_batch.h). A batch is a group of the registry (sub_int.h)
 * keyed by (network, kind, the calls' options); a round splits its members
 * into chunks of at most the node's limit, one call each; a round is
 * skipped while the last one is still out, as a single source's is. */
#include <stdio.h>
#include <string.h>

#include "sub/sub_call.h"
#include "sub/sub_int.h"
#include "sub/sub_sol_batch.h"

typedef struct sol_chunk {
    struct sol_batch *b;
    sub_call_t call;
    sub_sol_member_t **m;      /* the members asked, in order (NULL: left since) */
    size_t n;
} sol_chunk_t;

typedef struct sol_batch {
    sub_group_t g;
    sub_reg_t *reg;
    sub_sol_batch_kind_t kind;
    char config[96];
    h2o_linklist_t members;
    size_t nmembers;
    h2o_timeout_t *period;
    h2o_timeout_entry_t tick, soon;
    sol_chunk_t **chunks;
    size_t nchunks;
} sol_batch_t;

static const char *const tags[] = {"account", "signature"};

static size_t per_call(const sol_batch_t *b)
{
    return b->kind == SUB_SOL_BATCH_ACCOUNT ? SUB_SOL_ACCOUNTS_MAX : SUB_SOL_SIGNATURES_MAX;
}

static int busy(const sol_batch_t *b)
{
    for (size_t i = 0; i < b->nchunks; i++)
        if (sub_call_busy(&b->chunks[i]->call))
            return 1;
    return 0;
}

static const char *part_fmt(const sol_chunk_t *ch)
{
    return ch->b->kind == SUB_SOL_BATCH_ACCOUNT ? "{\"context\":%s,\"value\":%s}" : "{\"context\":%s,\"value\":[%s]}";
}

/* on_chunk for an answer with escapes in it: through a tree. */
static void on_chunk_tree(sol_chunk_t *ch, const char *res, size_t len)
{
    cJSON *r = cJSON_ParseWithLength(res, len);
    const cJSON *ctx = cJSON_GetObjectItemCaseSensitive(r, "context");
    const cJSON *val = cJSON_GetObjectItemCaseSensitive(r, "value");
    if (cJSON_IsObject(ctx) && cJSON_IsArray(val) && (size_t)cJSON_GetArraySize(val) == ch->n) {
        char *ctext = cJSON_PrintUnformatted(ctx);
        sl_buf_t out;
        sl_buf_init(&out);
        size_t i = 0;
        const cJSON *v;
        cJSON_ArrayForEach(v, val)
        {
            sub_sol_member_t *m = ch->m[i++];
            if (m == NULL || m->done)
                continue;
            char *vtext = cJSON_PrintUnformatted(v);
            sl_buf_reset(&out);
            sl_buf_printf(&out, part_fmt(ch), ctext, vtext);
            free(vtext);
            m->cb(m, out.base, out.len);
        }
        sl_buf_dispose(&out);
        free(ctext);
    }
    cJSON_Delete(r);
}

/* Tells each member of chunk k its part of a getMultipleAccounts /
 * getSignatureStatuses answer: {"context":…,"value":[…]}, read with wire/'s
 * scanner, each part printed as a tree would (sub_json_print). */
static void on_chunk(sub_call_t *c, void *data)
{
    sol_chunk_t *ch = data;
    const char *res;
    size_t len;
    if (!sub_call_result(c, 0, &res, &len))
        return; /* the next round asks again */
    if (!sub_json_escape_free(res, len)) {
        on_chunk_tree(ch, res, len);
        return;
    }
    wire_span_t all = sub_json_trim(res, len), *v = NULL;
    wire_span_t ctx = wire_json_member(res, all, "context"), val = wire_json_member(res, all, "value");
    size_t n = 0;
    if (wire_json_kind(res, ctx) == WIRE_JSON_OBJECT && sub_json_items(res, val, &v, &n, NULL) && n == ch->n) {
        sl_buf_t ctext, vtext, out;
        sl_buf_init(&ctext);
        sl_buf_init(&vtext);
        sl_buf_init(&out);
        sub_json_print(res, ctx, &ctext);
        sl_buf_append_char(&ctext, '\0');
        for (size_t i = 0; i < n; i++) {
            sub_sol_member_t *m = ch->m[i];
            if (m == NULL || m->done)
                continue;
            sl_buf_reset(&vtext);
            sub_json_print(res, v[i], &vtext);
            sl_buf_append_char(&vtext, '\0');
            sl_buf_reset(&out);
            sl_buf_printf(&out, part_fmt(ch), ctext.base, vtext.base);
            m->cb(m, out.base, out.len);
        }
        sl_buf_dispose(&ctext);
        sl_buf_dispose(&vtext);
        sl_buf_dispose(&out);
    }
    free(v);
}

/* Chunk k of this round: the members from *at on, at most per_call of them. */
static void start_chunk(sol_batch_t *b, size_t k, h2o_linklist_t **at)
{
    if (k == b->nchunks) {
        b->chunks = sl_xrealloc(b->chunks, (k + 1) * sizeof(*b->chunks));
        sol_chunk_t *ch = sl_xcalloc(1, sizeof(*ch));
        ch->b = b;
        ch->m = sl_xcalloc(per_call(b), sizeof(*ch->m));
        sub_call_init(&ch->call);
        b->chunks[b->nchunks++] = ch;
    }
    sol_chunk_t *ch = b->chunks[k];
    sl_buf_t p;
    sl_buf_init(&p);
    sl_buf_append_str(&p, "[[");
    ch->n = 0;
    for (; *at != &b->members && ch->n < per_call(b); *at = (*at)->next) {
        sub_sol_member_t *m = H2O_STRUCT_FROM_MEMBER(sub_sol_member_t, link, *at);
        if (m->done)
            continue;
        sl_buf_printf(&p, "%s\"%s\"", ch->n > 0 ? "," : "", m->item);
        ch->m[ch->n++] = m;
    }
    sl_buf_printf(&p, "],%s]", b->config);
    sl_buf_append_char(&p, '\0');
    if (ch->n > 0) {
        const char *method = b->kind == SUB_SOL_BATCH_ACCOUNT ? "getMultipleAccounts" : "getSignatureStatuses";
        const char *pp = p.base;
        int acc = b->kind == SUB_SOL_BATCH_ACCOUNT;
        sub_count_cost(b->reg, b->g.net->index, acc ? STATE_SUB_POLLS_ACCOUNT : STATE_SUB_POLLS_SIGNATURE, 1);
        sub_call_start(&ch->call, b->g.net, 1, &method, &pp, on_chunk, ch);
    }
    sl_buf_dispose(&p);
}

static void round_now(sol_batch_t *b)
{
    if (busy(b))
        return;
    h2o_linklist_t *at = b->members.next;
    for (size_t k = 0; at != &b->members; k++)
        start_chunk(b, k, &at);
}

static void on_tick(h2o_timeout_entry_t *e)
{
    sol_batch_t *b = H2O_STRUCT_FROM_MEMBER(sol_batch_t, tick, e);
    h2o_timeout_link(sub_loop(b->reg), b->period, &b->tick);
    round_now(b);
}

static void on_soon(h2o_timeout_entry_t *e)
{
    round_now(H2O_STRUCT_FROM_MEMBER(sol_batch_t, soon, e));
}

void sub_sol_batch_join(sub_reg_t *r, sub_net_t *net, sub_sol_batch_kind_t kind, const char *config,
                           sub_sol_member_t *m)
{
    sub_group_t *g = sub_group_find(r, tags[kind], net, config);
    sol_batch_t *b = g != NULL ? H2O_STRUCT_FROM_MEMBER(sol_batch_t, g, g) : NULL;
    if (b == NULL) {
        b = sl_xcalloc(1, sizeof(*b));
        b->g.tag = tags[kind];
        b->g.net = net;
        snprintf(b->g.key, sizeof(b->g.key), "%s", config);
        snprintf(b->config, sizeof(b->config), "%s", config);
        b->reg = r;
        b->kind = kind;
        h2o_linklist_init_anchor(&b->members);
        b->period = sub_timeout(r, sub_poll_ms(net));
        b->tick.cb = on_tick;
        b->soon.cb = on_soon;
        h2o_timeout_link(sub_loop(r), b->period, &b->tick);
        sub_group_add(r, &b->g);
    }
    m->batch = b;
    m->done = 0;
    h2o_linklist_insert(&b->members, &m->link);
    b->nmembers++;
    /* a new member is read soon (its first value, or a signature confirmed already), not a period later */
    if (!h2o_timeout_is_linked(&b->soon) && !busy(b))
        h2o_timeout_link(sub_loop(r), sub_timeout(r, 0), &b->soon);
}

void sub_sol_batch_leave(sub_sol_member_t *m)
{
    sol_batch_t *b = m->batch;
    h2o_linklist_unlink(&m->link);
    m->batch = NULL;
    for (size_t k = 0; k < b->nchunks; k++)
        for (size_t i = 0; i < b->chunks[k]->n; i++)
            if (b->chunks[k]->m[i] == m)
                b->chunks[k]->m[i] = NULL;
    if (--b->nmembers > 0)
        return;
    if (h2o_timeout_is_linked(&b->tick))
        h2o_timeout_unlink(&b->tick);
    if (h2o_timeout_is_linked(&b->soon))
        h2o_timeout_unlink(&b->soon);
    for (size_t k = 0; k < b->nchunks; k++) {
        sub_call_dispose(&b->chunks[k]->call);
        free(b->chunks[k]->m);
        free(b->chunks[k]);
    }
    free(b->chunks);
    h2o_linklist_unlink(&b->g.link);
    free(b);
}
