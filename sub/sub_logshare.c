/* sub/sub_logshare.c: the logs of a block fetched once for every
 * logs source of a network (sub_eth.c), in the worker.
 *
 * Each logs source asks eth_getLogs({blockHash, its filter}) for each new
 * block: n distinct filters would cost n calls a block. Past
 * SUB_LOGS_SHARED_MIN distinct filters on a network, a source asks here
 * instead: one eth_getLogs({blockHash}) without a filter per block, kept
 * for the last SHARE_BLOCKS blocks asked, and each source's filter applied
 * locally (policy/logfilter.h, geth's rules). Under the threshold the
 * filtered call stays (fewer bytes). The source keeps its own queue, its
 * reorg undo and its exactly-once: only where the logs come from changes. */
#include <string.h>

#include "base/sl_buf.h"
#include "sub/sub_call.h"
#include "sub/sub_int.h"
#include "sub/sub_logshare.h"
#include "wire/json_scan.h"

#define SHARE_BLOCKS 8            /* blocks whose unfiltered logs are kept or asked at once */

typedef struct share_log {
    uint8_t addr[20];
    uint8_t topics[POLICY_LOGFILTER_POSITIONS][32];
    size_t ntopics;
    int ok;                       /* address and topics well formed (else only the empty filter takes it) */
    char *text;
} share_log_t;

typedef enum { B_EMPTY, B_ASKING, B_READY } block_state_t;

typedef struct share_block {
    sub_logshare_t *s;
    uint8_t hash[32];
    block_state_t state;
    int delivering;               /* inside its waiters' callbacks: not replaced */
    share_log_t *logs;
    size_t nlogs;
    sub_call_t call;
    int too_large;                /* the failed answer was over server.max_response_bytes */
    h2o_linklist_t waiting;       /* sub_logs_wait_t */
    uint64_t used;                /* the least recently used is replaced */
} share_block_t;

struct sub_logshare {
    sub_group_t g;
    sub_reg_t *reg;
    size_t nsources;
    size_t solo;                  /* sources asking with their own filter now (SUB_LOGS_SOLO_MAX) */
    uint64_t clock;
    share_block_t blocks[SHARE_BLOCKS];
};

static void block_clear(share_block_t *b)
{
    for (size_t i = 0; i < b->nlogs; i++)
        free(b->logs[i].text);
    free(b->logs);
    b->logs = NULL;
    b->nlogs = 0;
    b->state = B_EMPTY;
}

sub_logshare_t *sub_logshare_join(sub_reg_t *r, sub_net_t *net)
{
    sub_group_t *g = sub_group_find(r, "logs", net, "");
    sub_logshare_t *s = g != NULL ? H2O_STRUCT_FROM_MEMBER(sub_logshare_t, g, g) : NULL;
    if (s == NULL) {
        s = sl_xcalloc(1, sizeof(*s));
        s->g.tag = "logs";
        s->g.net = net;
        s->reg = r;
        for (size_t i = 0; i < SHARE_BLOCKS; i++) {
            s->blocks[i].s = s;
            sub_call_init(&s->blocks[i].call);
            h2o_linklist_init_anchor(&s->blocks[i].waiting);
        }
        sub_group_add(r, &s->g);
    }
    if (++s->nsources == SUB_LOGS_SHARED_MIN + 1)
        sub_count_cost(r, net->index, STATE_SUB_LOGS_SHARED, 1);
    return s;
}

void sub_logshare_leave(sub_logshare_t *s)
{
    if (s->nsources-- == SUB_LOGS_SHARED_MIN + 1)
        sub_count_cost(s->reg, s->g.net->index, STATE_SUB_LOGS_SHARED, 0);
    if (s->nsources > 0)
        return;
    for (size_t i = 0; i < SHARE_BLOCKS; i++) { /* no waiter left: each source cancelled its own */
        sub_call_dispose(&s->blocks[i].call);
        block_clear(&s->blocks[i]);
    }
    h2o_linklist_unlink(&s->g.link);
    free(s);
}

int sub_logshare_shared(const sub_logshare_t *s)
{
    return s->nsources > SUB_LOGS_SHARED_MIN;
}

/* One log of the unfiltered answer: its address and topics as bytes. */
static void read_log(share_log_t *out, const cJSON *log)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(log, "address");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(log, "topics"), *x;
    out->text = cJSON_PrintUnformatted(log);
    out->ok = cJSON_IsString(a) && policy_logfilter_hex(a->valuestring, strlen(a->valuestring), out->addr, 20) &&
              cJSON_IsArray(t);
    cJSON_ArrayForEach(x, t)
    {
        if (!out->ok)
            break;
        if (out->ntopics < POLICY_LOGFILTER_POSITIONS)
            out->ok = cJSON_IsString(x) &&
                      policy_logfilter_hex(x->valuestring, strlen(x->valuestring), out->topics[out->ntopics], 32);
        out->ntopics++;
    }
}

static sl_err_t topic_item(const char *buf, wire_span_t x, void *arg)
{
    share_log_t *out = arg;
    if (!out->ok)
        return SL_OK;
    if (out->ntopics < POLICY_LOGFILTER_POSITIONS)
        out->ok = wire_json_kind(buf, x) == WIRE_JSON_STRING &&
                  policy_logfilter_hex(buf + x.off + 1, x.len - 2, out->topics[out->ntopics], 32);
    out->ntopics++;
    return SL_OK;
}

/* read_log from the compact bytes of a plain answer (sub_json_plain_items):
 * its strings have no escapes, so their bytes are their values. */
static void read_log_span(share_log_t *out, const char *buf, wire_span_t log)
{
    wire_span_t a = wire_json_member(buf, log, "address"), t = wire_json_member(buf, log, "topics");
    out->text = sl_xmalloc(log.len + 1);
    memcpy(out->text, buf + log.off, log.len);
    out->text[log.len] = '\0';
    out->ok = wire_json_kind(buf, a) == WIRE_JSON_STRING &&
              policy_logfilter_hex(buf + a.off + 1, a.len - 2, out->addr, 20) &&
              wire_json_kind(buf, t) == WIRE_JSON_ARRAY;
    if (out->ok && wire_json_each_item(buf, t, topic_item, out) != SL_OK)
        out->ok = 0;
}

/* The logs of b matching w's filter, as a JSON array's text in out. */
static void filtered(const share_block_t *b, const policy_logfilter_t *f, sl_buf_t *out)
{
    int first = 1;
    sl_buf_append_char(out, '[');
    for (size_t i = 0; i < b->nlogs; i++) {
        const share_log_t *l = &b->logs[i];
        int any = f->naddr == 0 && f->npos == 0;
        if (l->text == NULL || !(l->ok ? policy_logfilter_match(f, l->addr, l->topics, l->ntopics) : any))
            continue;
        if (!first)
            sl_buf_append_char(out, ',');
        sl_buf_append_str(out, l->text);
        first = 0;
    }
    sl_buf_append_char(out, ']');
}

static void deliver(share_block_t *b, sub_logs_wait_t *w)
{
    sl_buf_t out;
    sl_buf_init(&out);
    if (b->state == B_READY)
        filtered(b, w->filter, &out);
    w->b = NULL;
    w->too_large = (uint8_t)(b->state != B_READY && b->too_large);
    w->cb(w, b->state == B_READY ? out.base : NULL, out.len);
    sl_buf_dispose(&out);
}

/* The answer's logs into b: scanned when plain (every answer in practice),
 * else through a tree. 0: not an array. */
static int read_logs(share_block_t *b, const char *res, size_t len)
{
    sl_buf_t c;
    sl_buf_init(&c);
    wire_span_t *v = NULL;
    size_t n = 0;
    if (sub_json_plain_items(res, len, &c, &v, &n, NULL)) {
        b->nlogs = n;
        b->logs = sl_xcalloc(n + 1, sizeof(*b->logs));
        for (size_t i = 0; i < n; i++)
            read_log_span(&b->logs[i], c.base, v[i]);
        free(v);
        sl_buf_dispose(&c);
        return 1;
    }
    sl_buf_dispose(&c);
    cJSON *arr = cJSON_ParseWithLength(res, len);
    int ok = cJSON_IsArray(arr);
    if (ok) {
        b->nlogs = (size_t)cJSON_GetArraySize(arr);
        b->logs = sl_xcalloc(b->nlogs + 1, sizeof(*b->logs));
        size_t i = 0;
        const cJSON *log;
        cJSON_ArrayForEach(log, arr) read_log(&b->logs[i++], log);
    }
    cJSON_Delete(arr);
    return ok;
}

static void on_block(sub_call_t *c, void *data)
{
    share_block_t *b = data;
    const char *res;
    size_t len;
    if (sub_call_result(c, 0, &res, &len) && read_logs(b, res, len)) {
        b->state = B_READY;
    } else {
        b->state = B_EMPTY; /* each waiter retries as it does after a failed call of its own */
        b->too_large = sub_call_too_large(c, 0);
    }
    b->delivering = 1;
    while (!h2o_linklist_is_empty(&b->waiting)) {
        sub_logs_wait_t *w = H2O_STRUCT_FROM_MEMBER(sub_logs_wait_t, link, b->waiting.next);
        h2o_linklist_unlink(&w->link);
        deliver(b, w);
    }
    b->delivering = 0;
}

static void on_soon(h2o_timeout_entry_t *e)
{
    sub_logs_wait_t *w = H2O_STRUCT_FROM_MEMBER(sub_logs_wait_t, soon, e);
    share_block_t *b = w->b;
    if (b == NULL)
        return;
    if (b->state == B_READY && memcmp(b->hash, w->hash, 32) == 0) {
        deliver(b, w);
        return;
    }
    w->b = NULL; /* its block was replaced meanwhile: asked again */
    w->too_large = 0;
    if (!sub_logshare_ask(b->s, w->hash, w))
        w->cb(w, NULL, 0);
}

/* The block kept or asked for hash, else a slot to ask it in (NULL: every
 * slot is being asked or delivered). */
static share_block_t *slot_for(sub_logshare_t *s, const uint8_t hash[32])
{
    share_block_t *lru = NULL;
    for (size_t i = 0; i < SHARE_BLOCKS; i++) {
        share_block_t *b = &s->blocks[i];
        if (b->state != B_EMPTY && memcmp(b->hash, hash, 32) == 0)
            return b;
        if (b->state != B_ASKING && !b->delivering && (lru == NULL || b->used < lru->used))
            lru = b;
    }
    if (lru != NULL) {
        block_clear(lru);
        lru->too_large = 0;
    }
    return lru;
}

int sub_logshare_ask(sub_logshare_t *s, const uint8_t hash[32], sub_logs_wait_t *w)
{
    share_block_t *b = slot_for(s, hash);
    if (b == NULL)
        return 0;
    b->used = ++s->clock;
    w->b = b;
    memcpy(w->hash, hash, 32);
    w->soon.cb = on_soon;
    if (b->state == B_READY) { /* kept: told from the loop, as an answer would be */
        h2o_timeout_link(sub_loop(s->reg), sub_timeout(s->reg, 0), &w->soon);
        return 1;
    }
    h2o_linklist_insert(&b->waiting, &w->link);
    if (b->state == B_ASKING)
        return 1;
    memcpy(b->hash, hash, 32);
    b->state = B_ASKING;
    sl_buf_t p;
    sl_buf_init(&p);
    sl_buf_append_str(&p, "[{\"blockHash\":\"0x");
    for (size_t i = 0; i < 32; i++)
        sl_buf_printf(&p, "%02x", hash[i]);
    sl_buf_append_str(&p, "\"}]");
    sl_buf_append_char(&p, '\0');
    const char *m = "eth_getLogs", *pp = p.base;
    sub_count_cost(s->reg, s->g.net->index, STATE_SUB_POLLS_LOGS, 1);
    sub_call_start(&b->call, s->g.net, 1, &m, &pp, on_block, b);
    sl_buf_dispose(&p);
    return 1;
}

int sub_logshare_solo_acquire(sub_logshare_t *s)
{
    if (s->solo >= SUB_LOGS_SOLO_MAX)
        return 0;
    s->solo++;
    return 1;
}

void sub_logshare_solo_release(sub_logshare_t *s)
{
    s->solo--;
}

int sub_logshare_waiting(const sub_logs_wait_t *w)
{
    return w->b != NULL;
}

void sub_logshare_cancel(sub_logs_wait_t *w)
{
    if (h2o_linklist_is_linked(&w->link))
        h2o_linklist_unlink(&w->link);
    if (h2o_timeout_is_linked(&w->soon))
        h2o_timeout_unlink(&w->soon);
    w->b = NULL;
}
