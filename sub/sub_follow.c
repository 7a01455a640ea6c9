/* sub/sub_follow.c: the head follower of one network in a worker
 * (sub_int.h), shared by its newHeads and logs sources: it polls the
 * latest header through the pool every poll interval, and at once when the
 * chain view's head (pool_network_head: an upstream WebSocket's heads, the
 * probes', answers flowing) moves above the one polled; it fetches the heights
 * between by number (eth_getBlockByNumber(n, false): failover applies), at
 * most SUB_MAX_BACKFILL of them, and walks back over a reorg from the
 * hashes. policy/headtrack.h decides what to fetch and what to send; this
 * file makes the calls and tells the listeners. A listener hears the blocks
 * after the head when it joined (geth's semantics): the first header a new
 * follower reads is recorded, not told. A walk back that reaches below the
 * ring is told `deep`, a skip past the backfill bound as the next header's
 * `gap`: a logs source cannot go on over either (sub_eth.c). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/sl_log.h"
#include "base/sl_parse.h"
#include "base/sl_time.h"
#include "sub/sub_call.h"
#include "sub/sub_int.h"
#include "policy/headtrack.h"
#include "wire/json_compact.h"

#define SUB_MAX_BACKFILL 128
_Static_assert(SUB_FOLLOW_KEPT == POLICY_HEADTRACK_RING, "sub_int.h names the ring's depth");
#define LOG_EVERY_MS 10000
#define MAX_FETCHES_PER_TICK (2 * SUB_MAX_BACKFILL + 16)

typedef struct sub_follow {
    sub_reg_t *r;
    sub_net_t *net;
    h2o_linklist_t link;          /* in the registry's followers */
    h2o_linklist_t listeners;     /* sub_listener_t */
    policy_headtrack_t track;
    sub_call_t call;
    h2o_timeout_t *period;
    h2o_timeout_entry_t tick;
    h2o_timeout_entry_t watch;    /* the chain view's head moved: poll now, not at the tick */
    uint64_t view_head;           /* the chain view's head last looked at */
    uint64_t head;                /* the highest head the polls saw */
    uint64_t fetching;            /* the height of the call in flight (0: the latest) */
    uint64_t back;                /* a reorg's walk back: fetch this height next (0: none) */
    uint32_t fetches;             /* since the last tick: bounded, so endpoints that disagree cannot spin it */
    sl_log_limit_t log_skip;
    char endpoint[64];            /* the endpoint its polls were last answered by ("": none yet) */
    uint64_t backfilled;          /* heights backfilled while on it */
    uint64_t gap;                 /* heights skipped below the next header told (the backfill bound) */
    uint8_t own;                  /* a resumed subscription's alone (sub_follow_listen_at): not shared */
} sub_follow_t;

/* A header read: its height, hashes and geth's newHeads form. */
typedef struct header {
    uint64_t height;
    uint8_t hash[32], parent[32];
    char *json;
} header_t;

static const char *const body_fields[] = {"transactions", "uncles", "size", "totalDifficulty", "withdrawals"};
#define NBODY (sizeof(body_fields) / sizeof(body_fields[0]))

static int hex32(const char *s, size_t n, uint8_t *out)
{
    if (s == NULL || n != 66 || strncmp(s, "0x", 2) != 0)
        return 0;
    for (size_t i = 0; i < 32; i++) {
        int hi = sl_hex_digit(s[2 + 2 * i]), lo = sl_hex_digit(s[3 + 2 * i]);
        if (hi < 0 || lo < 0)
            return 0;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 1;
}

static int hex_u64(const char *s, size_t n, uint64_t *out)
{
    if (s == NULL || n < 3 || n > 18 || strncmp(s, "0x", 2) != 0)
        return 0;
    uint64_t v = 0;
    for (size_t i = 2; i < n; i++) {
        int d = sl_hex_digit(s[i]);
        if (d < 0)
            return 0;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return 1;
}

/* A tree's string member as (s, n), or s NULL. */
static const char *tree_str(const cJSON *o, const char *key, size_t *n)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *n = cJSON_IsString(v) ? strlen(v->valuestring) : 0;
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* header_read for an answer that is not plain (wire_json_compact_plain):
 * through a tree, whose print is what clients have always been sent. */
static int header_read_tree(const char *res, size_t len, header_t *hd)
{
    size_t n1, n2, n3;
    cJSON *b = cJSON_ParseWithLength(res, len);
    const char *num = tree_str(b, "number", &n1), *hash = tree_str(b, "hash", &n2), *par = tree_str(b, "parentHash", &n3);
    int ok = cJSON_IsObject(b) && hex_u64(num, n1, &hd->height) && hd->height != 0 && hex32(hash, n2, hd->hash) &&
             hex32(par, n3, hd->parent);
    if (ok) {
        for (size_t i = 0; i < NBODY; i++)
            cJSON_DeleteItemFromObjectCaseSensitive(b, body_fields[i]);
        hd->json = cJSON_PrintUnformatted(b);
    }
    cJSON_Delete(b);
    return ok;
}

/* A plain string member of the compact object `all` as (s, n), or s NULL. */
static const char *span_str(const char *buf, wire_span_t all, const char *key, size_t *n)
{
    wire_span_t v = wire_json_member(buf, all, key);
    *n = v.len >= 2 ? v.len - 2 : 0;
    return wire_json_kind(buf, v) == WIRE_JSON_STRING ? buf + v.off + 1 : NULL;
}

/* Reads a block (eth_getBlockByNumber's result) into hd, its body fields
 * left out as geth's newHeads leaves them. 0: null or not a block. Read
 * with wire/'s scanner from the answer's compact bytes: a plain answer's
 * (every block's in practice) are what a tree's print gave. */
static int header_read(const char *res, size_t len, header_t *hd)
{
    sl_buf_t c;
    sl_buf_init(&c);
    if (len == 0 || !wire_json_compact_plain(res, (wire_span_t){0, (uint32_t)len}, &c)) {
        sl_buf_dispose(&c);
        return header_read_tree(res, len, hd);
    }
    wire_span_t all = {0, (uint32_t)c.len};
    size_t n1, n2, n3;
    const char *num = span_str(c.base, all, "number", &n1), *hash = span_str(c.base, all, "hash", &n2);
    const char *par = span_str(c.base, all, "parentHash", &n3);
    int ok = wire_json_kind(c.base, all) == WIRE_JSON_OBJECT && hex_u64(num, n1, &hd->height) && hd->height != 0 &&
             hex32(hash, n2, hd->hash) && hex32(par, n3, hd->parent);
    if (ok) {
        sl_buf_t out;
        sl_buf_init(&out);
        ok = sub_json_object_without(c.base, all, body_fields, NBODY, NULL, &out);
        sl_buf_append_char(&out, '\0');
        hd->json = ok ? sl_buf_steal(&out, NULL) : NULL;
        sl_buf_dispose(&out);
    }
    sl_buf_dispose(&c);
    return ok;
}

static void tell(sub_follow_t *f, const header_t *hd, int replaced, int deep)
{
    sub_header_t h = {hd->height, hd->hash, hd->json, strlen(hd->json), replaced, deep, replaced ? 0 : f->gap};
    if (!replaced)
        f->gap = 0;
    h2o_linklist_t *l = f->listeners.next;
    while (l != &f->listeners) {
        sub_listener_t *li = H2O_STRUCT_FROM_MEMBER(sub_listener_t, link, l);
        l = l->next;
        if (replaced && hd->height <= li->from)
            li->from = hd->height - 1; /* told the new branch from here: the heights above it on it are new */
        if (replaced || hd->height > li->from) /* a block there before it joined is not its to hear */
            li->on_header(li, &h);
    }
}

/* Judges a fetched header: sends it, walks back, or lets it be. */
static void consider(sub_follow_t *f, const header_t *hd)
{
    policy_headtrack_verdict_t v = policy_headtrack_judge(&f->track, hd->height, hd->hash, hd->parent);
    switch (v) {
    case POLICY_HEADTRACK_DUP:
        return;
    case POLICY_HEADTRACK_BACK:
        f->back = hd->height - 1;
        return;
    case POLICY_HEADTRACK_EMIT:
    case POLICY_HEADTRACK_DEEP: {
        int first = f->track.last == 0;
        int replaced = policy_headtrack_record(&f->track, hd->height, hd->hash);
        if (first)
            return; /* the head when the first subscriber came: the subscriptions start after it */
        if (replaced)
            sub_count_net(f->r, f->net->index, STATE_SRV_SUB_REORGED, 1);
        else if (f->fetching != 0 && hd->height < f->head) { /* the head itself is no backfill */
            sub_count_net(f->r, f->net->index, STATE_SRV_SUB_BACKFILLED, 1);
            f->backfilled++;
        }
        tell(f, hd, replaced, replaced && v == POLICY_HEADTRACK_DEEP);
        return;
    }
    }
}

static void on_answer(sub_call_t *c, void *data);

static void fetch(sub_follow_t *f, uint64_t height)
{
    char p[64];
    if (height == 0)
        snprintf(p, sizeof(p), "[\"latest\",false]");
    else
        snprintf(p, sizeof(p), "[\"0x%" PRIx64 "\",false]", height);
    const char *m = "eth_getBlockByNumber", *pp = p;
    if (height != 0 && f->fetches++ > MAX_FETCHES_PER_TICK)
        return; /* the next tick goes on */
    f->fetching = height;
    sub_count_cost(f->r, f->net->index, STATE_SUB_POLLS_HEADS, 1);
    sub_call_start(&f->call, f->net, 1, &m, &pp, on_answer, f);
}

/* The next fetch towards the head, if any. */
static void step(sub_follow_t *f)
{
    uint64_t skipped = 0, n;
    if (f->back != 0) {
        n = f->back;
        f->back = 0;
        fetch(f, n);
        return;
    }
    n = policy_headtrack_next(&f->track, f->head, SUB_MAX_BACKFILL, &skipped);
    if (skipped != 0) {
        uint64_t held;
        char tail[SL_LOG_HELD_MAX];
        sub_count_net(f->r, f->net->index, STATE_SRV_SUB_SKIPPED, (int64_t)skipped);
        f->gap = skipped; /* told with the head's header: a logs source cannot go on over it */
        if (sl_log_limit_pass(&f->log_skip, sl_now_ms(), LOG_EVERY_MS, &held))
            sl_log_warn("network %s: newHeads went on from the head %" PRIu64 ", %" PRIu64
                        " heights behind the last sent were skipped (more than %d to backfill)%s",
                        f->net->conf->name, f->head, skipped, SUB_MAX_BACKFILL, sl_log_held_text(held, tail));
        /* the head's header is fetched by number: the next one links to it */
    }
    if (n != 0)
        fetch(f, n);
}

/* The endpoint that answered a poll. A move away from one that failed in
 * this call (a failover) is the operator's to know; a move the ranking
 * made between healthy endpoints is not told. */
static void note_endpoint(sub_follow_t *f, const sub_call_t *c)
{
    const char *ep = sub_call_endpoint(c, 0);
    if (ep == NULL || strcmp(ep, f->endpoint) == 0)
        return;
    if (f->endpoint[0] != '\0' && sub_call_failed_at(c, f->endpoint))
        sub_source_changed(f->r, f->net, "newHeads/logs", f->endpoint, ep, f->backfilled);
    snprintf(f->endpoint, sizeof(f->endpoint), "%s", ep);
    f->backfilled = 0;
}

static void on_answer(sub_call_t *c, void *data)
{
    sub_follow_t *f = data;
    const char *res;
    size_t len;
    header_t hd = {0};
    note_endpoint(f, c);
    if (!sub_call_result(c, 0, &res, &len) || !header_read(res, len, &hd))
        return; /* no answer, or a height not there yet: the next poll tries again */
    if (f->fetching == 0) {
        if (hd.height > f->head)
            f->head = hd.height;
        /* the latest itself is judged when nothing lies between (else fetched in order) */
        if (f->track.last == 0 || hd.height <= f->track.last + 1)
            consider(f, &hd);
    } else {
        consider(f, &hd);
    }
    free(hd.json);
    step(f);
}

static void on_tick(h2o_timeout_entry_t *e)
{
    sub_follow_t *f = H2O_STRUCT_FROM_MEMBER(sub_follow_t, tick, e);
    h2o_timeout_link(sub_loop(f->r), f->period, &f->tick);
    f->fetches = 0;
    if (!sub_call_busy(&f->call))
        fetch(f, 0);
}

static void follow_free(sub_follow_t *f);

/* The network's shared follower in the worker, or NULL. */
static sub_follow_t *shared_of(sub_reg_t *r, const sub_net_t *net)
{
    h2o_linklist_t *all = sub_follows(r);
    for (h2o_linklist_t *n = all->next; n != all; n = n->next) {
        sub_follow_t *o = H2O_STRUCT_FROM_MEMBER(sub_follow_t, link, n);
        if (o->net == net && !o->own)
            return o;
    }
    return NULL;
}

/* Whether a follower of its own, caught up, is on the shared one's branch:
 * the same last height and hash, and every height both keep the same. */
static int same_branch(const sub_follow_t *own, const sub_follow_t *shared)
{
    if (own->track.last == 0 || shared->track.last != own->track.last || shared->back != 0)
        return 0;
    for (uint64_t h = own->track.last, n = 0; h > 0 && n < POLICY_HEADTRACK_RING; h--, n++) {
        const uint8_t *a = policy_headtrack_hash(&own->track, h), *b = policy_headtrack_hash(&shared->track, h);
        if (h == own->track.last ? a == NULL || b == NULL || memcmp(a, b, 32) != 0
                                 : a != NULL && b != NULL && memcmp(a, b, 32) != 0)
            return 0;
    }
    return 1;
}

/* A resumed subscription's follower, once it has backfilled to the head,
 * hands its listeners to the network's shared follower when both are at the
 * same block, and stops (so a resumed subscription costs one more poll only
 * while it backfills); with no shared follower it becomes the shared one.
 * 1 when f was freed. From the watch timer: never inside f's call. */
static int merge(sub_follow_t *f)
{
    /* the head not polled yet: not caught up (a subscriber joining it would hear the backfill) */
    if (!f->own || sub_call_busy(&f->call) || f->back != 0 || f->head == 0 || f->track.last < f->head)
        return 0;
    sub_follow_t *shared = shared_of(f->r, f->net);
    if (shared == NULL) {
        f->own = 0;
        return 0;
    }
    if (!same_branch(f, shared))
        return 0;
    while (!h2o_linklist_is_empty(&f->listeners)) {
        sub_listener_t *l = H2O_STRUCT_FROM_MEMBER(sub_listener_t, link, f->listeners.next);
        h2o_linklist_unlink(&l->link);
        l->f = shared;
        l->from = shared->track.last;
        h2o_linklist_insert(&shared->listeners, &l->link);
    }
    follow_free(f);
    return 1;
}

/* The chain view learns heads between polls (an upstream WebSocket's at
 * once, the probes', answers flowing): a head above the one polled wakes
 * the poll. */
static void on_watch(h2o_timeout_entry_t *e)
{
    sub_follow_t *f = H2O_STRUCT_FROM_MEMBER(sub_follow_t, watch, e);
    if (merge(f))
        return;
    h2o_timeout_link(sub_loop(f->r), sub_timeout(f->r, SUB_WATCH_MS), &f->watch);
    uint64_t h = pool_network_head(f->net->pool_net);
    if (h <= f->view_head)
        return;
    f->view_head = h;
    if (h > f->head && !sub_call_busy(&f->call))
        fetch(f, 0);
}

/* A new follower of net (seeded at pos, its own; else shared), polling at once. */
static sub_follow_t *follow_new(sub_reg_t *r, sub_net_t *net, const sub_resume_pos_t *pos)
{
    sub_follow_t *f = sl_xcalloc(1, sizeof(*f));
    f->r = r;
    f->net = net;
    h2o_linklist_init_anchor(&f->listeners);
    policy_headtrack_init(&f->track);
    if (pos != NULL) {
        static const uint8_t none[32];
        f->own = 1;
        /* as if sent, oldest first: the next is pos + 1, and a reorg walks back over those below */
        for (size_t i = SUB_RESUME_BELOW; i > 0; i--)
            if (pos->height > i && memcmp(pos->below[i - 1], none, 32) != 0)
                policy_headtrack_record(&f->track, pos->height - i, pos->below[i - 1]);
        policy_headtrack_record(&f->track, pos->height, pos->hash);
    }
    sub_call_init(&f->call);
    f->period = sub_timeout(r, sub_poll_ms(net));
    f->tick.cb = on_tick;
    f->watch.cb = on_watch;
    f->view_head = pool_network_head(net->pool_net);
    h2o_linklist_insert(sub_follows(r), &f->link);
    h2o_timeout_link(sub_loop(r), f->period, &f->tick);
    h2o_timeout_link(sub_loop(r), sub_timeout(r, SUB_WATCH_MS), &f->watch);
    fetch(f, 0); /* the first header now, not a period from now */
    return f;
}

void sub_follow_listen(sub_reg_t *r, sub_net_t *net, sub_listener_t *l)
{
    sub_follow_t *f = shared_of(r, net);
    if (f == NULL)
        f = follow_new(r, net, NULL);
    l->f = f;
    l->from = f->head > f->track.last ? f->head : f->track.last;
    h2o_linklist_insert(&f->listeners, &l->link);
}

/* A follower of its own: the heights between pos and the head are the
 * resumed subscription's alone to hear, which a shared follower (at the
 * head already) would not fetch again. Once at the head it joins the
 * shared one (merge). */
void sub_follow_listen_at(sub_reg_t *r, sub_net_t *net, sub_listener_t *l, const sub_resume_pos_t *pos)
{
    sub_follow_t *f = follow_new(r, net, pos);
    l->f = f;
    l->from = pos->height;
    h2o_linklist_insert(&f->listeners, &l->link);
}

static void follow_free(sub_follow_t *f)
{
    if (h2o_timeout_is_linked(&f->tick))
        h2o_timeout_unlink(&f->tick);
    if (h2o_timeout_is_linked(&f->watch))
        h2o_timeout_unlink(&f->watch);
    sub_call_dispose(&f->call);
    h2o_linklist_unlink(&f->link);
    free(f);
}

void sub_follow_unlisten(sub_listener_t *l)
{
    sub_follow_t *f = l->f;
    if (f == NULL)
        return;
    h2o_linklist_unlink(&l->link);
    l->f = NULL;
    if (h2o_linklist_is_empty(&f->listeners))
        follow_free(f);
}

void sub_follow_dispose_all(sub_reg_t *r)
{
    h2o_linklist_t *all = sub_follows(r);
    while (!h2o_linklist_is_empty(all))
        follow_free(H2O_STRUCT_FROM_MEMBER(sub_follow_t, link, all->next));
}

uint64_t sub_follow_last(const sub_listener_t *l)
{
    return l->f != NULL ? l->f->track.last : 0;
}

const uint8_t *sub_follow_hash(const sub_listener_t *l, uint64_t height)
{
    return l->f != NULL ? policy_headtrack_hash(&l->f->track, height) : NULL;
}

void sub_follow_below(const sub_listener_t *l, sub_resume_pos_t *pos)
{
    memset(pos->below, 0, sizeof(pos->below));
    for (size_t i = 1; i <= SUB_RESUME_BELOW && i < pos->height; i++) {
        const uint8_t *h = sub_follow_hash(l, pos->height - i);
        if (h != NULL)
            memcpy(pos->below[i - 1], h, 32);
    }
}
