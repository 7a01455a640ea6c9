/* gateway/gw_sub_eth.c: Ethereum's subscription kinds (rows of
 * gw_sub_kinds.c): newHeads, the follower's headers as they are; logs,
 * eth_getLogs of each header's block by its hash (so a log is of exactly
 * the block sent: once per (blockHash, logIndex), in block order) with the
 * client's address and topics, and the logs of a replaced block sent again
 * with "removed": true. Past GW_SUB_LOGS_SHARED_MIN distinct filters on a
 * network, a block's logs come from one unfiltered eth_getLogs shared by
 * every logs source (gw_sub_logshare.c), each filtered here by geth's rules
 * (policy/logfilter.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/gw_sub_call.h"
#include "gateway/gw_sub_int.h"
#include "gateway/gw_sub_logshare.h"

#define LOGS_KEPT 64                /* blocks whose logs are kept, to send them again as removed */
#define LOGS_KEPT_BYTES (2u << 20)  /* ... at most this much of them per source (the oldest go first) */
#define LOGS_QUEUE 256              /* headers waiting for their logs */
#define MAX_TRIES 5                 /* a block's logs asked this often, then given up (logged) */
#define SHARED_TRIES 2              /* ... the first ones from the shared fetch, when the network has it */

/* ---- newHeads ---- */

typedef struct eth_heads {
    gw_sub_source_t *src;
    gw_sub_listener_t l;
} eth_heads_t;

const char *gw_sub_eth_heads_params(const cJSON *params, sl_buf_t *key)
{
    if (cJSON_GetArraySize(params) > 1)
        return "invalid params: newHeads takes no options";
    sl_buf_append_str(key, "");
    return NULL;
}

static void heads_on_header(gw_sub_listener_t *l, const gw_sub_header_t *hd)
{
    eth_heads_t *h = H2O_STRUCT_FROM_MEMBER(eth_heads_t, l, l);
    gw_sub_notify(h->src, hd->json, hd->len);
}

void gw_sub_eth_heads_start(gw_sub_source_t *src)
{
    eth_heads_t *h = sl_xcalloc(1, sizeof(*h));
    h->src = src;
    h->l.on_header = heads_on_header;
    src->impl = h;
    gw_sub_follow_listen(src->reg, src->net, &h->l);
}

void gw_sub_eth_heads_stop(gw_sub_source_t *src)
{
    eth_heads_t *h = src->impl;
    gw_sub_follow_unlisten(&h->l);
    free(h);
}

/* ---- logs ---- */

typedef struct logs_block {
    uint64_t height;
    uint8_t hash[32];
    char *logs;                   /* the JSON array sent (NULL: none kept) */
    uint8_t tries;
} logs_block_t;

typedef struct eth_logs {
    gw_sub_source_t *src;
    gw_sub_listener_t l;
    char *filter;                 /* the members after blockHash: ,"address":…,"topics":… */
    logs_block_t queue[LOGS_QUEUE]; /* waiting for their logs, oldest first */
    size_t qhead, qlen;
    logs_block_t sent[LOGS_KEPT];  /* at height % LOGS_KEPT */
    size_t kept;                  /* bytes of sent[].logs */
    gw_sub_call_t call;
    h2o_timeout_entry_t retry;
    gw_sub_logshare_t *share;     /* the network's shared per-block fetch */
    gw_sub_logs_wait_t wait;      /* asking it for the block at the queue's head */
    policy_logfilter_t pf;        /* the filter, as bytes (for the shared fetch) */
} eth_logs_t;

static int lower_hex(cJSON *v, size_t want_len)
{
    if (!cJSON_IsString(v) || strlen(v->valuestring) != want_len || strncmp(v->valuestring, "0x", 2) != 0)
        return 0;
    for (char *p = v->valuestring + 2; *p; p++) {
        if (!isxdigit((unsigned char)*p))
            return 0;
        *p = (char)tolower((unsigned char)*p);
    }
    return 1;
}

const char gw_sub_eth_logs_too_many_addresses[] = "invalid params: a logs filter has at most 1000 addresses";
const char gw_sub_eth_logs_too_many_topics[] = "invalid params: a logs filter has at most 100 topics at a position";

static int by_text(const void *a, const void *b)
{
    return strcmp((*(cJSON *const *)a)->valuestring, (*(cJSON *const *)b)->valuestring);
}

/* An array of lowercased hex strings sorted and without duplicates, so
 * that filters with the same members are one source (and its sets are
 * ready for policy/logfilter's binary search). One holding a null ("any")
 * is left as it is. */
static void sort_unique(cJSON *arr)
{
    size_t n = (size_t)cJSON_GetArraySize(arr), k = 0;
    cJSON *x;
    cJSON_ArrayForEach(x, arr) if (!cJSON_IsString(x)) return;
    if (n < 2)
        return;
    cJSON **v = sl_xmalloc(n * sizeof(*v));
    while (cJSON_GetArraySize(arr) > 0)
        v[k++] = cJSON_DetachItemFromArray(arr, 0);
    qsort(v, n, sizeof(*v), by_text);
    const cJSON *kept = NULL; /* the last one put back (a repeat of it is freed) */
    for (size_t i = 0; i < n; i++) {
        if (kept != NULL && strcmp(v[i]->valuestring, kept->valuestring) == 0) {
            cJSON_Delete(v[i]);
        } else {
            cJSON_AddItemToArray(arr, v[i]);
            kept = v[i];
        }
    }
    free(v);
}

/* address: one or an array of at most POLICY_LOGFILTER_MAX_ADDRESSES
 * 20-byte hex; topics: at most 4 of null, a 32-byte hex or an array of at
 * most POLICY_LOGFILTER_MAX_ALTERNATIVES. Lowercased, sorted and without
 * duplicates, in place. */
static const char *check_filter(cJSON *address, cJSON *topics)
{
    if (address != NULL && !cJSON_IsNull(address)) {
        if (cJSON_IsArray(address)) {
            cJSON *a;
            if (cJSON_GetArraySize(address) > POLICY_LOGFILTER_MAX_ADDRESSES)
                return gw_sub_eth_logs_too_many_addresses;
            cJSON_ArrayForEach(a, address) if (!lower_hex(a, 42)) return "invalid params: address must be 20-byte hex";
            sort_unique(address);
        } else if (!lower_hex(address, 42)) {
            return "invalid params: address must be 20-byte hex or an array of them";
        }
    }
    if (topics == NULL || cJSON_IsNull(topics))
        return NULL;
    if (!cJSON_IsArray(topics) || cJSON_GetArraySize(topics) > POLICY_LOGFILTER_POSITIONS)
        return "invalid params: topics must be an array of at most 4 positions";
    cJSON *t, *o;
    cJSON_ArrayForEach(t, topics)
    {
        if (cJSON_IsNull(t))
            continue;
        if (cJSON_IsArray(t)) {
            if (cJSON_GetArraySize(t) > POLICY_LOGFILTER_MAX_ALTERNATIVES)
                return gw_sub_eth_logs_too_many_topics;
            cJSON_ArrayForEach(o, t) if (!cJSON_IsNull(o) && !lower_hex(o, 66)) return "invalid params: a topic must be 32-byte hex";
            sort_unique(t);
        } else if (!lower_hex(t, 66)) {
            return "invalid params: a topic must be 32-byte hex, null or an array of them";
        }
    }
    return NULL;
}

const char *gw_sub_eth_logs_params(const cJSON *params, sl_buf_t *key)
{
    const cJSON *f = cJSON_GetArrayItem(params, 1);
    if (cJSON_GetArraySize(params) > 2 || (f != NULL && !cJSON_IsObject(f) && !cJSON_IsNull(f)))
        return "invalid params: logs takes one filter object {address, topics}";
    cJSON *address = cJSON_IsObject(f) ? cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(f, "address"), 1) : NULL;
    cJSON *topics = cJSON_IsObject(f) ? cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(f, "topics"), 1) : NULL;
    const char *bad = check_filter(address, topics);
    if (bad == NULL) {
        if (address != NULL && !cJSON_IsNull(address)) {
            char *s = cJSON_PrintUnformatted(address);
            sl_buf_printf(key, ",\"address\":%s", s);
            free(s);
        }
        if (topics != NULL && !cJSON_IsNull(topics)) {
            char *s = cJSON_PrintUnformatted(topics);
            sl_buf_printf(key, ",\"topics\":%s", s);
            free(s);
        }
    }
    cJSON_Delete(address);
    cJSON_Delete(topics);
    return bad;
}

/* The hex strings of v (one or an array; an array holding a null, or
 * none at all, is "any": n 0) as bytes of size each. */
static void *hex_set(const cJSON *v, size_t size, size_t *n)
{
    const cJSON *x;
    *n = 0;
    if (cJSON_IsString(v)) {
        uint8_t *out = sl_xmalloc(size);
        *n = policy_logfilter_hex(v->valuestring, strlen(v->valuestring), out, size);
        return out;
    }
    cJSON_ArrayForEach(x, v) if (!cJSON_IsString(x)) return NULL; /* a null in an OR: any */
    uint8_t *out = sl_xcalloc((size_t)cJSON_GetArraySize(v) + 1, size);
    cJSON_ArrayForEach(x, v) if (policy_logfilter_hex(x->valuestring, strlen(x->valuestring), out + *n * size, size))
        (*n)++;
    *n = policy_logfilter_set_sort(out, size, *n); /* the key's order is text's: sorted here for the bytes' */
    return out;
}

/* The normalised filter (the key: ,"address":…,"topics":…, checked) as bytes. */
static void filter_bytes(policy_logfilter_t *f, const char *key)
{
    memset(f, 0, sizeof(*f));
    sl_buf_t b;
    sl_buf_init(&b);
    sl_buf_append_char(&b, '{');
    sl_buf_append_str(&b, key[0] == ',' ? key + 1 : key);
    sl_buf_append_char(&b, '}');
    cJSON *o = cJSON_ParseWithLength(b.base, b.len), *t;
    sl_buf_dispose(&b);
    f->addr = hex_set(cJSON_GetObjectItemCaseSensitive(o, "address"), 20, &f->naddr);
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(o, "topics"))
    {
        if (f->npos == POLICY_LOGFILTER_POSITIONS)
            break;
        policy_logfilter_pos_t *p = &f->pos[f->npos++];
        p->v = cJSON_IsNull(t) ? NULL : hex_set(t, 32, &p->n);
    }
    cJSON_Delete(o);
}

/* Sends each log of the array text logs, with "removed" set as given. */
static void send_logs(eth_logs_t *g, const char *logs, int removed)
{
    cJSON *arr = cJSON_Parse(logs), *log;
    size_t n = 0;
    if (removed) { /* newest first: undone in the reverse of their order */
        for (int i = cJSON_GetArraySize(arr) - 1; i >= 0; i--) {
            log = cJSON_GetArrayItem(arr, i);
            cJSON_DeleteItemFromObjectCaseSensitive(log, "removed");
            cJSON_AddBoolToObject(log, "removed", 1);
            char *s = cJSON_PrintUnformatted(log);
            gw_sub_notify(g->src, s, strlen(s));
            free(s);
            n++;
        }
    } else {
        cJSON_ArrayForEach(log, arr)
        {
            char *s = cJSON_PrintUnformatted(log);
            gw_sub_notify(g->src, s, strlen(s));
            free(s);
            n++;
        }
    }
    cJSON_Delete(arr);
    gw_stats_net_add(gw_sub_stats(g->src->reg), g->src->net->index, STATE_SRV_SUB_LOGS_SENT,
                     (int64_t)(n * g->src->nsubs));
}

static void pump(eth_logs_t *g);

static void forget(eth_logs_t *g, logs_block_t *s)
{
    if (s->logs != NULL)
        g->kept -= strlen(s->logs);
    free(s->logs);
    s->logs = NULL;
}

/* Room for len more bytes of kept logs: the oldest blocks' go (a reorg
 * that deep finds them gone: their logs are not sent again as removed). */
static void keep_room(eth_logs_t *g, size_t len)
{
    while (g->kept > 0 && g->kept + len > LOGS_KEPT_BYTES) {
        logs_block_t *oldest = NULL;
        for (size_t i = 0; i < LOGS_KEPT; i++)
            if (g->sent[i].logs != NULL && (oldest == NULL || g->sent[i].height < oldest->height))
                oldest = &g->sent[i];
        if (oldest == NULL)
            return;
        forget(g, oldest);
    }
}

/* A fetch is out for the block at the queue's head. */
static int asking(const eth_logs_t *g)
{
    return gw_sub_call_busy(&g->call) || gw_sub_logshare_waiting(&g->wait);
}

/* The logs of the block at the queue's head (res: a JSON array's text), or ok 0: the fetch failed. */
static void got_logs(eth_logs_t *g, int ok, const char *res, size_t len)
{
    logs_block_t *b = &g->queue[g->qhead];
    if (!ok || len == 0 || res[0] != '[') {
        const uint8_t *now = gw_sub_follow_hash(&g->l, b->height);
        if ((now == NULL || memcmp(now, b->hash, 32) != 0 || ++b->tries >= MAX_TRIES) && g->qlen > 0) {
            g->qhead = (g->qhead + 1) % LOGS_QUEUE; /* replaced meanwhile (its replacement is queued), or given up */
            g->qlen--;
        }
        h2o_timeout_link(gw_sub_loop(g->src->reg), gw_sub_timeout(g->src->reg, gw_sub_poll_ms(g->src->net)),
                         &g->retry);
        return;
    }
    const uint8_t *now = gw_sub_follow_hash(&g->l, b->height);
    if (now == NULL || memcmp(now, b->hash, 32) != 0) { /* replaced while asked: its replacement is queued */
        g->qhead = (g->qhead + 1) % LOGS_QUEUE;
        g->qlen--;
        pump(g);
        return;
    }
    logs_block_t *s = &g->sent[b->height % LOGS_KEPT];
    forget(g, s);
    *s = *b;
    keep_room(g, len);
    g->kept += len;
    s->logs = sl_xmalloc(len + 1);
    memcpy(s->logs, res, len);
    s->logs[len] = '\0';
    g->qhead = (g->qhead + 1) % LOGS_QUEUE;
    g->qlen--;
    send_logs(g, s->logs, 0);
    pump(g);
}

static void on_logs(gw_sub_call_t *c, void *data)
{
    const char *res = NULL;
    size_t len = 0;
    int ok = gw_sub_call_result(c, 0, &res, &len);
    got_logs(data, ok, res, len);
}

static void on_shared(gw_sub_logs_wait_t *w, const char *logs, size_t len)
{
    got_logs(H2O_STRUCT_FROM_MEMBER(eth_logs_t, wait, w), logs != NULL, logs, len);
}

static void on_retry(h2o_timeout_entry_t *e)
{
    pump(H2O_STRUCT_FROM_MEMBER(eth_logs_t, retry, e));
}

static void pump(eth_logs_t *g)
{
    if (g->qlen == 0 || asking(g) || h2o_timeout_is_linked(&g->retry))
        return;
    const logs_block_t *b = &g->queue[g->qhead];
    /* a block the shared fetch failed twice (an answer over server.max_response_bytes, say) is
     * asked with the filter, as under the threshold */
    if (b->tries < SHARED_TRIES && gw_sub_logshare_shared(g->share) && gw_sub_logshare_ask(g->share, b->hash, &g->wait))
        return;
    sl_buf_t p;
    sl_buf_init(&p);
    sl_buf_append_str(&p, "[{\"blockHash\":\"0x");
    for (size_t i = 0; i < 32; i++)
        sl_buf_printf(&p, "%02x", b->hash[i]);
    sl_buf_append_char(&p, '"');
    sl_buf_append_str(&p, g->filter);
    sl_buf_append_str(&p, "}]");
    sl_buf_append_char(&p, '\0');
    const char *m = "eth_getLogs", *pp = p.base;
    gw_stats_sub_add(gw_sub_stats(g->src->reg), g->src->net->index, STATE_SUB_POLLS_LOGS, 1);
    gw_sub_call_start(&g->call, g->src->net, 1, &m, &pp, on_logs, g);
    sl_buf_dispose(&p);
}

/* A reorg replaced the heights from `from` up: their logs sent are undone
 * (newest block first), their queued ones dropped. */
static void undo_from(eth_logs_t *g, uint64_t from)
{
    for (size_t k = LOGS_KEPT; k-- > 0;) {
        logs_block_t *s = &g->sent[(from + k) % LOGS_KEPT];
        if (s->logs != NULL && s->height >= from && s->height < from + LOGS_KEPT) {
            send_logs(g, s->logs, 1);
            forget(g, s);
        }
    }
    while (g->qlen > 0 && g->queue[(g->qhead + g->qlen - 1) % LOGS_QUEUE].height >= from &&
           (g->qlen > 1 || !asking(g)))
        g->qlen--; /* the one being asked stays: its answer is dropped as replaced */
}

static void logs_on_header(gw_sub_listener_t *l, const gw_sub_header_t *hd)
{
    eth_logs_t *g = H2O_STRUCT_FROM_MEMBER(eth_logs_t, l, l);
    if (hd->replaced)
        undo_from(g, hd->height);
    const logs_block_t *s = &g->sent[hd->height % LOGS_KEPT];
    if (s->logs != NULL && s->height == hd->height && memcmp(s->hash, hd->hash, 32) == 0)
        return; /* this block's logs went out already */
    if (g->qlen == LOGS_QUEUE) { /* the oldest waiting is given up for the newest */
        g->qhead = (g->qhead + 1) % LOGS_QUEUE;
        g->qlen--;
    }
    logs_block_t *b = &g->queue[(g->qhead + g->qlen++) % LOGS_QUEUE];
    memset(b, 0, sizeof(*b));
    b->height = hd->height;
    memcpy(b->hash, hd->hash, 32);
    pump(g);
}

void gw_sub_eth_logs_start(gw_sub_source_t *src)
{
    eth_logs_t *g = sl_xcalloc(1, sizeof(*g));
    g->src = src;
    g->filter = sl_xstrdup(src->key);
    g->l.on_header = logs_on_header;
    g->retry.cb = on_retry;
    gw_sub_call_init(&g->call);
    filter_bytes(&g->pf, src->key);
    g->wait.cb = on_shared;
    g->wait.filter = &g->pf;
    g->share = gw_sub_logshare_join(src->reg, src->net);
    src->impl = g;
    gw_sub_follow_listen(src->reg, src->net, &g->l);
}

void gw_sub_eth_logs_stop(gw_sub_source_t *src)
{
    eth_logs_t *g = src->impl;
    gw_sub_follow_unlisten(&g->l);
    if (h2o_timeout_is_linked(&g->retry))
        h2o_timeout_unlink(&g->retry);
    gw_sub_call_dispose(&g->call);
    gw_sub_logshare_cancel(&g->wait);
    gw_sub_logshare_leave(g->share);
    free((void *)g->pf.addr);
    for (size_t i = 0; i < POLICY_LOGFILTER_POSITIONS; i++)
        free((void *)g->pf.pos[i].v);
    for (size_t i = 0; i < LOGS_KEPT; i++)
        forget(g, &g->sent[i]);
    free(g->filter);
    free(g);
}
