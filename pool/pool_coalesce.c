/* pool/pool_coalesce.c: identical reads in flight share one upstream call.
 *
 * A single read (not a write, not a broadcast's kin, not a method no table
 * knows: policy_method_coalesces) with an id, whose params do
 * not name the "pending" tag (the pending block changes from one call to
 * the next), is keyed by its method and its params with the whitespace
 * outside strings removed. While a call of the same key is in flight in
 * this worker, the new one waits on it instead of going upstream; when the
 * leader finishes, each waiter gets its answer or its failure. The answer is
 * not copied: the leader's body becomes a shared one (pool_shared_body_t)
 * that every call of the group holds until released, charged once to the
 * worker's answer budget (server.max_buffered_bytes), as it is held once. A
 * waiter whose id bytes are the leader's is answered from it as it is; for
 * any other id the gateway splices the waiter's own id back, byte for byte,
 * as for any answer whose id differs. A confirmation poll pinned to the
 * endpoint that took its transaction keys on that endpoint too: it shares
 * only another pinned there, never a read that may go elsewhere and bring
 * back that endpoint's "null" (not yet seen). Bounded: coalesce.max_waiters per group, at most
 * MAX_GROUPS groups and MAX_KEY bytes of key; beyond, a call goes on its
 * own. A waiter whose client goes away leaves its group; a leader that goes
 * away hands the group to its first waiter, which then goes upstream. */
#include <stdio.h>
#include <string.h>

#include "base/sl_hash.h"
#include "base/sl_log.h"
#include "pool/pool_call_int.h"

#define MAX_GROUPS 1024
#define MAX_KEY 8192

typedef struct pool_coalesce {
    h2o_linklist_t link;          /* in net->coalesce */
    pool_call_t *leader;          /* the call that went upstream */
    h2o_linklist_t waiters;       /* pool_call_t.coalesce_link, oldest first */
    size_t nwaiters;
    uint64_t hash;
    size_t key_len;
    char key[];                   /* method, NUL, params without whitespace */
} pool_coalesce_t;

/* Appends src[0..n) without the whitespace outside strings. */
static void append_compact(sl_buf_t *b, const char *src, size_t n)
{
    sl_buf_reserve(b, n); /* never longer than src: written in place */
    char *out = b->base + b->len;
    int in_str = 0, esc = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = src[i];
        if (in_str) {
            in_str = esc || ch != '"';
            esc = !esc && ch == '\\';
        } else if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
            continue;
        } else {
            in_str = ch == '"';
        }
        *out++ = ch;
    }
    b->len = (size_t)(out - b->base);
    b->base[b->len] = '\0';
}

/* The call's key in *key; 0 if it may not be coalesced. */
static int make_key(const pool_call_t *call, sl_buf_t *key)
{
    const pool_item_t *it = &call->items[0];
    if (call->batch || call->carrier || call->nitems != 1 || it->id.len == 0 || !policy_method_coalesces(it->method) ||
        it->name == NULL || it->name_len == 0)
        return 0;
    wire_span_t params;
    if (!pool_item_params(it, &params))
        return 0;
    sl_buf_append(key, it->name, it->name_len);
    sl_buf_append_char(key, '\0');
    append_compact(key, it->raw + params.off, params.len);
    if (call->pinned >= 0) {
        char pin[16];
        int n = snprintf(pin, sizeof(pin), "@%d", call->pinned);
        sl_buf_append_char(key, '\0');
        sl_buf_append(key, pin, (size_t)n);
    }
    if (key->len > MAX_KEY || memmem(key->base, key->len, "\"pending\"", 9) != NULL)
        return 0;
    return 1;
}

static pool_coalesce_t *find(pool_network_t *net, uint64_t hash, const sl_buf_t *key)
{
    for (h2o_linklist_t *l = net->coalesce.next; l != &net->coalesce; l = l->next) {
        pool_coalesce_t *g = H2O_STRUCT_FROM_MEMBER(pool_coalesce_t, link, l);
        if (g->hash == hash && g->key_len == key->len && memcmp(g->key, key->base, key->len) == 0)
            return g;
    }
    return NULL;
}

int pool_coalesce_offer(pool_call_t *call)
{
    pool_network_t *net = call->net;
    uint32_t max = net->conf->coalesce_max_waiters;
    sl_buf_t key = SL_BUF_INIT;
    int waiting = 0;
    if (max == 0 || !make_key(call, &key))
        goto cleanup;
    uint64_t hash = sl_fnv1a(SL_FNV1A_OFFSET, key.base, key.len);
    pool_coalesce_t *g = find(net, hash, &key);
    if (g != NULL) {
        if (g->nwaiters < max) {
            h2o_linklist_insert(&g->waiters, &call->coalesce.link);
            g->nwaiters++;
            call->coalesce.group = g;
            waiting = 1;
        }
        goto cleanup;
    }
    if (net->ncoalesce >= MAX_GROUPS)
        goto cleanup;
    g = sl_xcalloc(1, sizeof(*g) + key.len);
    g->leader = call;
    h2o_linklist_init_anchor(&g->waiters);
    g->hash = hash;
    g->key_len = key.len;
    memcpy(g->key, key.base, key.len);
    h2o_linklist_insert(&net->coalesce, &g->link);
    net->ncoalesce++;
    call->coalesce.group = g;
cleanup:
    sl_buf_dispose(&key);
    return waiting;
}

static void group_free(pool_network_t *net, pool_coalesce_t *g)
{
    h2o_linklist_unlink(&g->link);
    net->ncoalesce--;
    free(g);
}

struct pool_shared_body {
    uint32_t refs;    /* calls that point into body */
    size_t charged;   /* bytes of body charged to the budget */
    pool_body_t body;
};

/* Moves the body the leader's answer points into out of the leader's own
 * bodies into a shared one, with its charge. NULL if the answer is not in
 * one of them (then each waiter gets a copy). */
static pool_shared_body_t *share_answer(pool_call_t *leader)
{
    const pool_item_t *l = &leader->items[0];
    if (leader->coalesce.shared != NULL)
        return leader->coalesce.shared;
    for (size_t i = 0; i < leader->nbodies; i++) {
        pool_body_t *b = &leader->bodies[i];
        const char *base = pool_body_base(b);
        size_t len = pool_body_len(b);
        if (l->answer < base || l->answer + l->answer_len > base + len)
            continue;
        pool_shared_body_t *sb = sl_xcalloc(1, sizeof(*sb));
        sb->refs = 1;
        sb->body = *b;
        memset(b, 0, sizeof(*b));
        sb->charged = len < leader->charged ? len : leader->charged;
        leader->charged -= sb->charged;
        leader->coalesce.shared = sb;
        return sb;
    }
    return NULL;
}

void pool_coalesce_unshare(pool_call_t *call)
{
    pool_shared_body_t *sb = call->coalesce.shared;
    if (sb == NULL)
        return;
    call->coalesce.shared = NULL;
    if (--sb->refs > 0)
        return;
    pool_budget_release(&call->net->pool->t, sb->charged);
    pool_body_dispose(&sb->body);
    free(sb);
}

static size_t pool_coalesce_shared_bytes(const pool_call_t *call)
{
    return call->coalesce.shared != NULL ? call->coalesce.shared->charged : 0;
}

/* A waiter's own copy of the leader's answer, charged like any answer. */
static const char *copy_answer(pool_call_t *waiter, const pool_item_t *l)
{
    sl_buf_t b = SL_BUF_INIT;
    sl_buf_append(&b, l->answer, l->answer_len);
    pool_t *pool = waiter->net->pool;
    if (pool->t.budget != NULL)
        sl_budget_charge(pool->t.budget, l->answer_len);
    waiter->charged += l->answer_len;
    return pool_call_keep(waiter, &b);
}

/* The waiter's item gets the leader's result; its answer is the leader's
 * shared body, or a copy. */
static void copy_result(pool_call_t *waiter, pool_call_t *leader)
{
    const pool_item_t *l = &leader->items[0];
    const char *answer = NULL;
    if (l->state == POOL_ITEM_ANSWERED && l->answer != NULL) {
        pool_shared_body_t *sb = waiter->coalesce.shared == NULL ? share_answer(leader) : NULL;
        if (sb != NULL) {
            sb->refs++;
            waiter->coalesce.shared = sb;
            answer = l->answer;
        } else {
            answer = copy_answer(waiter, l);
        }
    }
    pool_item_answer_copy(&waiter->items[0], l, answer);
    waiter->coalesce.answered = 1;
}

void pool_coalesce_done(pool_call_t *call)
{
    pool_coalesce_t *g = call->coalesce.group;
    if (g == NULL)
        return;
    call->coalesce.group = NULL;
    if (g->leader != call) { /* a waiter finishing on its own (its deadline) */
        h2o_linklist_unlink(&call->coalesce.link);
        g->nwaiters--;
        return;
    }
    pool_network_t *net = call->net;
    h2o_linklist_unlink(&g->link); /* no newcomer joins while the waiters are answered */
    int ep = call->items[0].endpoint;
    if (ep >= 0 && (size_t)ep < net->nendpoints && g->nwaiters > 0) {
        POOL_STAT_ADD(&net->endpoints[ep], coalesced, g->nwaiters);
    }
    while (!h2o_linklist_is_empty(&g->waiters)) {
        pool_call_t *w = H2O_STRUCT_FROM_MEMBER(pool_call_t, coalesce.link, g->waiters.next);
        h2o_linklist_unlink(&w->coalesce.link);
        w->coalesce.group = NULL;
        if (w->items[0].state == POOL_ITEM_PENDING)
            copy_result(w, call);
        pool_call_finish(w);
    }
    net->ncoalesce--;
    free(g);
}

void pool_coalesce_leave(pool_call_t *call)
{
    pool_coalesce_t *g = call->coalesce.group;
    if (g == NULL)
        return;
    call->coalesce.group = NULL;
    if (g->leader != call) {
        h2o_linklist_unlink(&call->coalesce.link);
        g->nwaiters--;
        return;
    }
    if (h2o_linklist_is_empty(&g->waiters)) {
        group_free(call->net, g);
        return;
    }
    /* the leader left (its client went away, or its time ran out): its first
     * waiter goes upstream for the rest, within its own time */
    pool_call_t *next = H2O_STRUCT_FROM_MEMBER(pool_call_t, coalesce.link, g->waiters.next);
    h2o_linklist_unlink(&next->coalesce.link);
    g->nwaiters--;
    g->leader = next;
    pool_call_resume(next);
}

static void pool_coalesce_init(pool_network_t *net)
{
    h2o_linklist_init_anchor(&net->coalesce);
    net->ncoalesce = 0;
}

static void pool_coalesce_dispose(pool_network_t *net)
{
    while (!h2o_linklist_is_empty(&net->coalesce)) {
        pool_coalesce_t *g = H2O_STRUCT_FROM_MEMBER(pool_coalesce_t, link, net->coalesce.next);
        while (!h2o_linklist_is_empty(&g->waiters)) {
            pool_call_t *w = H2O_STRUCT_FROM_MEMBER(pool_call_t, coalesce.link, g->waiters.next);
            h2o_linklist_unlink(&w->coalesce.link);
            w->coalesce.group = NULL;
        }
        g->leader->coalesce.group = NULL;
        group_free(net, g);
    }
}

/* The call stops: finished, its waiters get its answer; otherwise (its
 * deadline, or its client went away) it leaves, and a leader hands the
 * group to its first waiter, whose own time has not run out. */
static void row_stop(pool_call_t *call, pool_call_stop_t why)
{
    if (why == POOL_CALL_FINISHED)
        pool_coalesce_done(call);
    else
        pool_coalesce_leave(call);
    if (why == POOL_CALL_RELEASED)
        pool_coalesce_unshare(call);
}

const pool_call_row_t pool_coalesce_row = {
    .name = "coalesce",
    .offer = pool_coalesce_offer,
    .stop = row_stop,
    .bytes = pool_coalesce_shared_bytes,
    .net_init = pool_coalesce_init,
    .net_dispose = pool_coalesce_dispose,
};
