/* sub/sub_eth.c: Ethereum's subscription kinds (rows of
 * sub_kinds.c): newHeads, the follower's headers as they are; logs,
 * eth_getLogs of each header's block by its hash (so a log is of exactly
 * the block sent: once per (blockHash, logIndex), in block order) with the
 * client's address and topics, and the logs of a replaced block sent again
 * with "removed": true. Past SUB_LOGS_SHARED_MIN distinct filters on a
 * network, a block's logs come from one unfiltered eth_getLogs shared by
 * every logs source (sub_logshare.c), each filtered here by geth's rules
 * (policy/logfilter.h). Every log once, in order, or an error naming the
 * block: a failed fetch is asked again with backoff while the block is
 * canonical, within server.ws_logs_retry_s; a reorg undoes every block kept
 * above the fork, newest first (a resumed one's blocks sent on its old
 * socket too, fetched again by the hashes held); past a bound (give_up) the subscription
 * ends with -32005 naming the first block not delivered. */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sl_log.h"
#include "base/sl_time.h"

#include "sub/sub_call.h"
#include "sub/sub_eth_filter.h"
#include "sub/sub_int.h"
#include "sub/sub_logshare.h"

#define LOGS_KEPT SUB_FOLLOW_KEPT /* blocks whose logs are kept, to undo them: as deep as the follower sees */
#define LOGS_KEPT_BYTES (2u << 20)  /* ... at most this much of them per source (a reorg below ends it) */
#define LOGS_QUEUE 256              /* headers waiting for their logs (one more ends the subscription) */
#define RETRY_MAX_MS 4000           /* a failed block's retries back off up to this; server.ws_logs_retry_s ends them */
#define SOLO_WAIT_MS 50             /* a source waiting for one of the network's SUB_LOGS_SOLO_MAX filtered fetches */

/* ---- newHeads ---- */

typedef struct eth_heads {
    sub_source_t *src;
    sub_listener_t l;
    sub_resume_pos_t pos;         /* the last header told (sub_resume.c) */
} eth_heads_t;

const char *sub_eth_heads_params(const cJSON *params, sl_buf_t *key)
{
    if (cJSON_GetArraySize(params) > 1)
        return "invalid params: newHeads takes no options";
    sl_buf_append_str(key, "");
    return NULL;
}

static void heads_on_header(sub_listener_t *l, const sub_header_t *hd)
{
    eth_heads_t *h = H2O_STRUCT_FROM_MEMBER(eth_heads_t, l, l);
    h->pos.height = hd->height;
    memcpy(h->pos.hash, hd->hash, 32);
    sub_notify(h->src, hd->json, hd->len);
}

/* Starts l on the follower: from src's resume position (its own), else the head (shared). */
static void follow_from(sub_source_t *src, sub_listener_t *l)
{
    if (src->resume.height != 0)
        sub_follow_listen_at(src->reg, src->net, l, &src->resume);
    else
        sub_follow_listen(src->reg, src->net, l);
}

int sub_eth_heads_position(const sub_source_t *src, sub_resume_pos_t *pos)
{
    const eth_heads_t *h = src->impl;
    *pos = h->pos;
    sub_follow_below(&h->l, pos);
    return h->pos.height != 0;
}

void sub_eth_heads_start(sub_source_t *src)
{
    eth_heads_t *h = sl_xcalloc(1, sizeof(*h));
    h->src = src;
    h->l.on_header = heads_on_header;
    h->pos = src->resume;
    src->impl = h;
    follow_from(src, &h->l);
}

void sub_eth_heads_stop(sub_source_t *src)
{
    eth_heads_t *h = src->impl;
    sub_follow_unlisten(&h->l);
    free(h);
}

/* ---- logs ---- */

typedef struct logs_block {
    uint64_t height;
    uint8_t hash[32];
    char *logs;                   /* the JSON array sent (NULL: none kept) */
    uint8_t tries;                /* failed fetches */
    uint8_t too_large;            /* the shared answer was over server.max_response_bytes: asked filtered */
    uint8_t undo;                 /* replaced: its logs go out again with removed: true (logs, else fetched) */
    uint64_t first_fail_ms;       /* its first failed fetch (0: none) */
} logs_block_t;

typedef struct eth_logs {
    sub_source_t *src;
    sub_listener_t l;
    char *filter;                 /* the members after blockHash: ,"address":…,"topics":… */
    logs_block_t queue[LOGS_QUEUE]; /* waiting for their logs, oldest first */
    size_t qhead, qlen;
    logs_block_t sent[LOGS_KEPT];  /* at height % LOGS_KEPT */
    size_t kept;                  /* bytes of sent[].logs */
    sub_call_t call;
    h2o_timeout_entry_t retry;
    sub_logshare_t *share;     /* the network's shared per-block fetch */
    sub_logs_wait_t wait;      /* asking it for the block at the queue's head */
    policy_logfilter_t pf;        /* the filter, as bytes (for the shared fetch) */
    uint64_t last_sent;           /* the highest height whose logs went out, on the branch followed */
    uint64_t kept_from;           /* every block sent from this height up is in sent[] (undoable) */
    uint8_t solo;                 /* holds one of the share's filtered fetches */
    uint8_t failed;               /* ended (sub_fail_block): waits to be stopped */
    sub_resume_pos_t pos;         /* the last block whose logs all went out (sub_resume.c) */
    sub_resume_pos_t held;        /* the position resumed from: its hashes undo a reorg of blocks not kept */
} eth_logs_t;

static void notify_log(void *arg, const char *text, size_t len)
{
    sub_notify(arg, text, len);
}

/* Sends each log of the array text logs, with "removed" set as given. */
static void send_logs(eth_logs_t *g, const char *logs, int removed)
{
    size_t n = sub_json_each_log(logs, strlen(logs), removed, notify_log, g->src);
    sub_count_net(g->src->reg, g->src->net->index, STATE_SRV_SUB_LOGS_SENT, (int64_t)(n * g->src->nsubs));
}

static void pump(eth_logs_t *g);

/* The logs of s are let go: a reorg reaching its height can no longer undo it. */
static void forget(eth_logs_t *g, logs_block_t *s, int evicted)
{
    if (s->logs != NULL) {
        g->kept -= strlen(s->logs);
        if (evicted && s->height + 1 > g->kept_from)
            g->kept_from = s->height + 1;
    }
    free(s->logs);
    s->logs = NULL;
}

/* Room for len more bytes of kept logs: the oldest blocks' go (a reorg
 * that deep ends the subscription: undo_from). */
static void keep_room(eth_logs_t *g, size_t len)
{
    while (g->kept > 0 && g->kept + len > LOGS_KEPT_BYTES) {
        logs_block_t *oldest = NULL;
        for (size_t i = 0; i < LOGS_KEPT; i++)
            if (g->sent[i].logs != NULL && (oldest == NULL || g->sent[i].height < oldest->height))
                oldest = &g->sent[i];
        if (oldest == NULL)
            return;
        forget(g, oldest, 1);
    }
}

/* A fetch is out for the block at the queue's head. */
static int asking(const eth_logs_t *g)
{
    return sub_call_busy(&g->call) || sub_logshare_waiting(&g->wait);
}

/* Nothing more is asked (a call in flight is left to sub_eth_logs_stop:
 * this may run inside its callback). */
static void stop_work(eth_logs_t *g)
{
    if (h2o_timeout_is_linked(&g->retry))
        h2o_timeout_unlink(&g->retry);
    sub_logshare_cancel(&g->wait);
    if (g->solo)
        sub_logshare_solo_release(g->share);
    g->solo = 0;
}

/* The subscription cannot keep its promise (every log once, in order):
 * it ends with an error naming the first block not delivered, a log line
 * and the counter. Its socket's other subscriptions go on. */
static void give_up(eth_logs_t *g, uint64_t height, const uint8_t *hash, const char *reason, const char *why)
{
    if (g->failed)
        return;
    g->failed = 1;
    stop_work(g);
    char msg[256];
    snprintf(msg, sizeof(msg), "logs subscription ended: the logs of block %" PRIu64 " could not be delivered (%s); "
             "subscribe again and read from that block with eth_getLogs", height, why);
    sl_log_warn("network %s: a logs source ended at block %" PRIu64 " (%s), %zu subscription(s) told",
                g->src->net->conf->name, height, why, g->src->nsubs);
    sub_count_net(g->src->reg, g->src->net->index, STATE_SRV_SUB_LOGS_SKIPPED,
                     (int64_t)g->src->nsubs);
    sub_fail_block(g->src, msg, reason, height, hash);
}

typedef enum { CANONICAL, REPLACED, UNKNOWN } canon_t;

/* Whether b is still on the branch the follower follows. */
static canon_t canon(const eth_logs_t *g, const logs_block_t *b)
{
    const uint8_t *now = sub_follow_hash(&g->l, b->height);
    if (now != NULL)
        return memcmp(now, b->hash, 32) == 0 ? CANONICAL : REPLACED;
    /* above the follower's last: dropped by a reorg to a shorter branch, its replacement comes */
    return b->height > sub_follow_last(&g->l) ? REPLACED : UNKNOWN;
}

static void dequeue(eth_logs_t *g)
{
    free(g->queue[g->qhead].logs); /* an undo's, moved from sent[] */
    g->queue[g->qhead].logs = NULL;
    g->qhead = (g->qhead + 1) % LOGS_QUEUE;
    g->qlen--;
}

/* The wait before asking a block again after its tries-th failure:
 * doubling from the poll interval, at most RETRY_MAX_MS. */
static uint32_t backoff_ms(const eth_logs_t *g, unsigned tries)
{
    uint32_t ms = sub_poll_ms(g->src->net);
    for (unsigned i = 1; i < tries && ms < RETRY_MAX_MS; i++)
        ms *= 2;
    return ms < RETRY_MAX_MS ? ms : RETRY_MAX_MS;
}

/* The fetch of the block at the queue's head failed: asked again with
 * backoff while it is canonical and within server.ws_logs_retry_s. */
static void fetch_failed(eth_logs_t *g, int too_large)
{
    logs_block_t *b = &g->queue[g->qhead];
    uint64_t now = sl_now_ms();
    switch (canon(g, b)) {
    case REPLACED: /* its replacement is queued */
        dequeue(g);
        pump(g);
        return;
    case UNKNOWN:
        give_up(g, b->height, b->hash, "behind", "more than 128 blocks behind the head");
        return;
    case CANONICAL:
        break;
    }
    if (b->first_fail_ms == 0)
        b->first_fail_ms = now;
    uint32_t limit_s = sub_limits(g->src->reg)->logs_retry_s;
    if (now - b->first_fail_ms >= (uint64_t)limit_s * 1000) {
        char why[96];
        snprintf(why, sizeof(why), "eth_getLogs failed for %u s, server.ws_logs_retry_s", limit_s);
        give_up(g, b->height, b->hash, "retries", why);
        return;
    }
    if (too_large)
        b->too_large = 1;
    if (b->tries < UINT8_MAX)
        b->tries++;
    h2o_timeout_link(sub_loop(g->src->reg), sub_timeout(g->src->reg, backoff_ms(g, b->tries)), &g->retry);
}

/* The lowest height of the undos queued from the head on: the first block a reorg replaced. */
static uint64_t undo_low(const eth_logs_t *g)
{
    uint64_t low = g->queue[g->qhead].height;
    for (size_t i = 1; i < g->qlen && g->queue[(g->qhead + i) % LOGS_QUEUE].undo; i++)
        low = g->queue[(g->qhead + i) % LOGS_QUEUE].height;
    return low;
}

/* The logs of the block at the queue's head (res: a JSON array's text), or ok 0: the fetch failed. */
static void got_logs(eth_logs_t *g, int ok, int too_large, const char *res, size_t len)
{
    if (g->failed || g->qlen == 0)
        return;
    logs_block_t *b = &g->queue[g->qhead];
    int got = ok && len != 0 && res[0] == '[';
    if (b->undo) {
        if (!got) { /* the upstream forgot the replaced block: its logs cannot be told removed */
            uint64_t low = undo_low(g);
            give_up(g, low, sub_follow_hash(&g->l, low), "reorg",
                    "a reorg replaced a block the upstream no longer knows");
            return;
        }
        char *logs = sl_xmalloc(len + 1);
        memcpy(logs, res, len);
        logs[len] = '\0';
        dequeue(g);
        send_logs(g, logs, 1);
        free(logs);
        pump(g);
        return;
    }
    if (!got) {
        fetch_failed(g, too_large);
        return;
    }
    if (canon(g, b) == REPLACED) { /* replaced while asked: its replacement is queued */
        dequeue(g);
        pump(g);
        return;
    }
    logs_block_t *s = &g->sent[b->height % LOGS_KEPT];
    forget(g, s, 1);
    *s = *b;
    keep_room(g, len);
    g->kept += len;
    s->logs = sl_xmalloc(len + 1);
    memcpy(s->logs, res, len);
    s->logs[len] = '\0';
    g->last_sent = b->height;
    g->pos.height = b->height;
    memcpy(g->pos.hash, b->hash, 32);
    dequeue(g);
    send_logs(g, s->logs, 0);
    pump(g);
}

static void on_logs(sub_call_t *c, void *data)
{
    eth_logs_t *g = data;
    const char *res = NULL;
    size_t len = 0;
    int ok = sub_call_result(c, 0, &res, &len);
    if (g->solo)
        sub_logshare_solo_release(g->share);
    g->solo = 0;
    got_logs(g, ok, sub_call_too_large(c, 0), res, len);
}

static void on_shared(sub_logs_wait_t *w, const char *logs, size_t len)
{
    got_logs(H2O_STRUCT_FROM_MEMBER(eth_logs_t, wait, w), logs != NULL, w->too_large, logs, len);
}

static void on_retry(h2o_timeout_entry_t *e)
{
    pump(H2O_STRUCT_FROM_MEMBER(eth_logs_t, retry, e));
}

/* Past the threshold a block's logs come from the shared fetch; asked with
 * the filter only when the shared answer was too large (or the share has
 * no room), and then at most SUB_LOGS_SOLO_MAX sources at a time: a
 * failing provider is not asked once per filter. 1: the source waits. */
static int pump_shared(eth_logs_t *g, const logs_block_t *b)
{
    if (!sub_logshare_shared(g->share))
        return 0;
    if (!b->too_large && sub_logshare_ask(g->share, b->hash, &g->wait))
        return 1;
    if (sub_logshare_solo_acquire(g->share)) {
        g->solo = 1;
        return 0;
    }
    h2o_timeout_link(sub_loop(g->src->reg), sub_timeout(g->src->reg, SOLO_WAIT_MS), &g->retry);
    return 1;
}

static void pump(eth_logs_t *g)
{
    if (g->failed || g->qlen == 0 || asking(g) || h2o_timeout_is_linked(&g->retry))
        return;
    while (g->qlen > 0 && g->queue[g->qhead].undo && g->queue[g->qhead].logs != NULL) {
        char *logs = g->queue[g->qhead].logs; /* kept: told removed now, in the queue's order */
        g->queue[g->qhead].logs = NULL;
        dequeue(g);
        send_logs(g, logs, 1);
        free(logs);
    }
    if (g->qlen == 0)
        return;
    const logs_block_t *b = &g->queue[g->qhead];
    if (!b->undo && pump_shared(g, b)) /* a replaced block's logs: asked filtered, by its hash */
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
    sub_count_cost(g->src->reg, g->src->net->index, STATE_SUB_POLLS_LOGS, 1);
    sub_call_start(&g->call, g->src->net, 1, &m, &pp, on_logs, g);
    sl_buf_dispose(&p);
}

/* The hash the resumed position held for height h (NULL: none). */
static const uint8_t *held_hash(const eth_logs_t *g, uint64_t h)
{
    static const uint8_t none[32];
    const sub_resume_pos_t *p = &g->held;
    if (p->height == 0 || h == 0 || h > p->height || p->height - h > SUB_RESUME_BELOW)
        return NULL;
    const uint8_t *x = h == p->height ? p->hash : p->below[p->height - h - 1];
    return memcmp(x, none, 32) != 0 ? x : NULL;
}

/* A reorg below the logs kept, over blocks sent on the socket a resumed
 * subscription had before: each block from last_sent down to `from` is
 * queued (newest first, ahead of the new branch's) to be told removed, its
 * logs kept or else fetched by the hash held (sub_resume.c). 0: a block
 * with neither, or no room: the subscription ends. */
static int undo_queued(eth_logs_t *g, uint64_t from, const uint8_t *hash)
{
    for (uint64_t h = g->last_sent; h >= from && h > 0; h--) {
        const logs_block_t *s = &g->sent[h % LOGS_KEPT];
        if (!(s->logs != NULL && s->height == h) && held_hash(g, h) == NULL) {
            give_up(g, from, hash, "reorg", "a reorg deeper than the blocks whose logs are kept");
            return 0;
        }
    }
    if (g->qlen + (g->last_sent - from + 1) > LOGS_QUEUE) {
        give_up(g, from, hash, "queue", "more than 256 blocks waiting for their logs");
        return 0;
    }
    for (uint64_t h = g->last_sent; h >= from && h > 0; h--) {
        logs_block_t *s = &g->sent[h % LOGS_KEPT];
        logs_block_t *b = &g->queue[(g->qhead + g->qlen++) % LOGS_QUEUE];
        memset(b, 0, sizeof(*b));
        b->height = h;
        b->undo = 1;
        if (s->logs != NULL && s->height == h) {
            memcpy(b->hash, s->hash, 32);
            g->kept -= strlen(s->logs);
            b->logs = s->logs; /* moved: told removed in the queue's order */
            s->logs = NULL;
        } else {
            memcpy(b->hash, held_hash(g, h), 32);
        }
    }
    return 1;
}

/* A reorg replaced the heights from `from` up: every block sent there is
 * undone, newest first, its logs again with removed: true; their queued
 * ones are dropped. A block sent there whose logs are no longer kept is
 * fetched by the hash a resumed position held (undo_queued); without one
 * it cannot be undone: the subscription ends (0). */
static int undo_from(eth_logs_t *g, uint64_t from, const uint8_t *hash)
{
    while (g->qlen > 0 && g->queue[(g->qhead + g->qlen - 1) % LOGS_QUEUE].height >= from &&
           !g->queue[(g->qhead + g->qlen - 1) % LOGS_QUEUE].undo && (g->qlen > 1 || !asking(g)))
        g->qlen--; /* the one being asked stays: its answer is dropped as replaced */
    if (g->last_sent >= from && from < g->kept_from) {
        if (!undo_queued(g, from, hash))
            return 0;
    } else {
        for (uint64_t h = g->last_sent; h >= from && h > 0; h--) {
            logs_block_t *s = &g->sent[h % LOGS_KEPT];
            if (s->logs != NULL && s->height == h) {
                send_logs(g, s->logs, 1);
                forget(g, s, 0);
            }
        }
    }
    if (g->last_sent >= from) {
        g->last_sent = from - 1;
        const uint8_t *below = sub_follow_hash(&g->l, from - 1);
        g->pos.height = below != NULL ? from - 1 : 0; /* unknown: not held (it starts from the head) */
        if (below != NULL)
            memcpy(g->pos.hash, below, 32);
    }
    return 1;
}

static void logs_on_header(sub_listener_t *l, const sub_header_t *hd)
{
    eth_logs_t *g = H2O_STRUCT_FROM_MEMBER(eth_logs_t, l, l);
    if (g->failed)
        return;
    if (hd->deep) {
        /* the fork is below this height, unseen: the client reads again from a final block */
        give_up(g, hd->height, hd->hash, "reorg", "a reorg deeper than the 128 blocks followed");
        return;
    }
    if (hd->gap != 0) {
        give_up(g, hd->height - hd->gap, NULL, "behind", "more than 128 heights behind the head");
        return;
    }
    if (hd->replaced && !undo_from(g, hd->height, hd->hash))
        return;
    const logs_block_t *s = &g->sent[hd->height % LOGS_KEPT];
    if (s->logs != NULL && s->height == hd->height && memcmp(s->hash, hd->hash, 32) == 0)
        return; /* this block's logs went out already */
    if (g->qlen == LOGS_QUEUE) {
        const logs_block_t *oldest = &g->queue[g->qhead];
        give_up(g, oldest->height, oldest->hash, "queue", "more than 256 blocks waiting for their logs");
        return;
    }
    logs_block_t *b = &g->queue[(g->qhead + g->qlen++) % LOGS_QUEUE];
    memset(b, 0, sizeof(*b));
    b->height = hd->height;
    memcpy(b->hash, hd->hash, 32);
    pump(g);
}

void sub_eth_logs_start(sub_source_t *src)
{
    eth_logs_t *g = sl_xcalloc(1, sizeof(*g));
    g->src = src;
    g->filter = sl_xstrdup(src->key);
    g->l.on_header = logs_on_header;
    g->retry.cb = on_retry;
    sub_call_init(&g->call);
    sub_eth_filter_bytes(&g->pf, src->key);
    g->wait.cb = on_shared;
    g->wait.filter = &g->pf;
    g->share = sub_logshare_join(src->reg, src->net);
    g->pos = src->resume;
    g->held = src->resume;
    if (src->resume.height != 0) {
        /* the held block's logs went out on the socket before, not kept: a reorg replacing it or one of
         * the 7 below fetches them again by the hashes held (undo_queued) */
        g->last_sent = src->resume.height;
        g->kept_from = src->resume.height + 1;
    }
    src->impl = g;
    follow_from(src, &g->l);
}

int sub_eth_logs_position(const sub_source_t *src, sub_resume_pos_t *pos)
{
    const eth_logs_t *g = src->impl;
    *pos = g->pos;
    sub_follow_below(&g->l, pos);
    return g->pos.height != 0 && !g->failed;
}

void sub_eth_logs_stop(sub_source_t *src)
{
    eth_logs_t *g = src->impl;
    sub_follow_unlisten(&g->l);
    stop_work(g);
    sub_call_dispose(&g->call);
    sub_logshare_leave(g->share);
    free((void *)g->pf.addr);
    for (size_t i = 0; i < POLICY_LOGFILTER_POSITIONS; i++)
        free((void *)g->pf.pos[i].v);
    for (size_t i = 0; i < LOGS_KEPT; i++)
        forget(g, &g->sent[i], 0);
    while (g->qlen > 0)
        dequeue(g); /* an undo's logs freed */
    free(g->filter);
    free(g);
}
