/* sub/sub_sol_logs.c: Solana's logsSubscribe {"mentions":[address]}
 * (a row of sub_kinds.c), served from polling through the pool.
 *
 * Every poll is one upstream batch: getSignaturesForAddress(address, {until:
 * the newest signature queued}) for what is new, and getTransaction for up to
 * TX_PER_POLL queued signatures, oldest first, for their logMessages and err.
 * Each transaction is told once (a bounded memory of the signatures queued),
 * in the order the node lists them (slot order), as a node's
 * logsNotification. The first poll only sets where the source starts. A
 * burst over TX_PER_POLL is caught up over the next polls; a queue full
 * leaves the rest upstream (the anchor stays behind them), so nothing is
 * skipped unless more than SIGS_LIMIT signatures arrive past the anchor
 * between two polls (counted and logged). "all" and "allWithVotes" cannot be
 * polled: refused by the normaliser.
 *
 * The same poll also follows an address for a passed-through logsSubscribe
 * (sub_pass_sol.c, sub_sol_logs_follow): from a signature on (or, with
 * none, only where the newest is), each transaction goes to the feed's
 * tell, and caught_up is called once a poll after the first queued nothing
 * new and told everything queued (from none: once the newest is known). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/sl_hash.h"
#include "base/sl_log.h"
#include "sub/sub_call.h"
#include "sub/sub_int.h"
#include "sub/sub_poll.h"
#include "wire/envelope.h"

#define TX_PER_POLL (SUB_CALL_MAX - 1) /* getTransaction calls per poll (32) */
#define SIGS_LIMIT 1000                   /* getSignaturesForAddress's limit (a node's most) */
#define QUEUE_MAX 256                     /* signatures waiting for their transaction */
#define SEEN_MAX 2048                     /* signatures queued before, remembered (hashes): over a page and a queue */
#define NULL_TRIES 30                     /* polls a listed transaction may read null before it is passed */
#define SIG_MAX 90                        /* a signature's base58 (88) and a NUL */

typedef struct logs_poll {
    sub_source_t *src;
    sub_poll_t loop;              /* polled every interval */
    char addr[48];
    const char *level;            /* the commitment polled: confirmed or finalized */
    int started;                  /* the first poll (the starting point) answered */
    char anchor[SIG_MAX];         /* the newest signature queued ("": none yet) */
    char queue[QUEUE_MAX][SIG_MAX]; /* oldest first, from qhead */
    size_t qhead, qn;
    uint32_t null_tries;          /* polls the oldest queued read null */
    uint64_t seen[SEEN_MAX];      /* a ring of hashes */
    size_t nseen;
    size_t nfetch;                /* getTransaction items in the call in flight */
    char endpoint[64];            /* the endpoint the last poll was answered by */
    sl_buf_t params[SUB_CALL_MAX];
    sub_sol_logs_feed_t feed;     /* tell NULL: a source of its own (sub_notify) */
    uint32_t polls;               /* feed: the polls answered */
    uint8_t done;                 /* feed: caught up, polls no more */
    uint8_t anchor_only;          /* feed from the newest: caught up once that is known */
} logs_poll_t;

const char *sub_sol_logs_params(const cJSON *params, sl_buf_t *key)
{
    const cJSON *f = cJSON_GetArrayItem(params, 0), *cfg = cJSON_GetArrayItem(params, 1);
    if (cJSON_IsString(f) && (strcmp(f->valuestring, "all") == 0 || strcmp(f->valuestring, "allWithVotes") == 0))
        return "logsSubscribe \"all\" and \"allWithVotes\" need an endpoint with ws_url (a node's stream passed "
               "through): from polling, sluice serves {\"mentions\":[address]} only";
    const cJSON *m = cJSON_IsObject(f) ? cJSON_GetObjectItemCaseSensitive(f, "mentions") : NULL;
    const cJSON *a = cJSON_GetArrayItem(m, 0);
    if (!cJSON_IsArray(m) || cJSON_GetArraySize(f) != 1 || cJSON_GetArraySize(params) > 2 ||
        (cfg != NULL && !cJSON_IsObject(cfg)))
        return "invalid params: expected [{\"mentions\":[address (base58)]}, {commitment}]";
    if (cJSON_GetArraySize(m) != 1 || !cJSON_IsString(a) || !sub_sol_is_b58(a->valuestring, 32, 44))
        return "invalid params: mentions takes exactly one address (base58), as a Solana node";
    int lv = sub_sol_commitment(cfg);
    if (lv < 0)
        return "invalid params: commitment must be processed, confirmed or finalized";
    for (const cJSON *k = cJSON_IsObject(cfg) ? cfg->child : NULL; k != NULL; k = k->next)
        if (strcmp(k->string, "commitment") != 0)
            return "invalid params: logsSubscribe's config takes only commitment";
    /* getSignaturesForAddress and getTransaction read confirmed at the least */
    sl_buf_printf(key, "%s|%d", a->valuestring, lv < 1 ? 1 : lv);
    return NULL;
}

/* ---- what was queued ---- */

static uint64_t sig_hash(const char *s)
{
    return sl_fnv1a_str(SL_FNV1A_OFFSET, s);
}

static int seen(const logs_poll_t *p, uint64_t h)
{
    size_t n = p->nseen < SEEN_MAX ? p->nseen : SEEN_MAX;
    for (size_t i = 0; i < n; i++)
        if (p->seen[i] == h)
            return 1;
    return 0;
}

static void queue_push(logs_poll_t *p, const char *sig)
{
    snprintf(p->queue[(p->qhead + p->qn) % QUEUE_MAX], SIG_MAX, "%s", sig);
    p->qn++;
    p->seen[p->nseen++ % SEEN_MAX] = sig_hash(sig);
    snprintf(p->anchor, sizeof(p->anchor), "%s", sig);
}

static const char *queue_at(const logs_poll_t *p, size_t i)
{
    return p->queue[(p->qhead + i) % QUEUE_MAX];
}

static void queue_pop(logs_poll_t *p)
{
    p->qhead = (p->qhead + 1) % QUEUE_MAX;
    p->qn--;
    p->null_tries = 0;
}

/* ---- answers ---- */

static void tell_logs(logs_poll_t *p, const char *sig, double slot, const char *err, const char *logs)
{
    sl_buf_t b;
    sl_buf_init(&b);
    sl_buf_printf(&b, "{\"context\":{\"slot\":%.0f},\"value\":{\"signature\":\"%s\",\"err\":%s,\"logs\":%s}}", slot,
                  sig, err != NULL ? err : "null", logs != NULL ? logs : "[]");
    if (p->feed.tell != NULL)
        p->feed.tell(p->feed.data, sig, b.base, b.len);
    else
        sub_notify(p->src, b.base, b.len);
    sl_buf_dispose(&b);
}

/* tell for an answer with escapes in it: through a tree. */
static int tell_tree(logs_poll_t *p, const char *sig, const char *res, size_t len)
{
    cJSON *tx = cJSON_ParseWithLength(res, len);
    const cJSON *slot = cJSON_GetObjectItemCaseSensitive(tx, "slot");
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(tx, "meta");
    const cJSON *logs = cJSON_GetObjectItemCaseSensitive(meta, "logMessages");
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(meta, "err");
    int ok = cJSON_IsNumber(slot) && cJSON_IsObject(meta);
    if (ok) {
        char *l = cJSON_IsArray(logs) ? cJSON_PrintUnformatted(logs) : NULL;
        char *e = err != NULL ? cJSON_PrintUnformatted(err) : NULL;
        tell_logs(p, sig, slot->valuedouble, e, l);
        free(l);
        free(e);
    }
    cJSON_Delete(tx);
    return ok;
}

/* Tells the transaction item of the call answered (sig, the queue's
 * oldest): 1, or 0 when it read null (not there yet), -1 when unanswered.
 * Read with wire/'s scanner; the logs and err printed as a tree printed them. */
static int tell(logs_poll_t *p, size_t item, const char *sig)
{
    const char *res;
    size_t len;
    if (!sub_call_result(&p->loop.call, item, &res, &len))
        return -1;
    if (!sub_json_escape_free(res, len))
        return tell_tree(p, sig, res, len);
    wire_span_t tx = sub_json_trim(res, len);
    wire_span_t slot = wire_json_member(res, tx, "slot"), meta = wire_json_member(res, tx, "meta");
    wire_span_t logs = wire_json_member(res, meta, "logMessages"), err = wire_json_member(res, meta, "err");
    if (wire_json_kind(res, slot) != WIRE_JSON_NUMBER || wire_json_kind(res, meta) != WIRE_JSON_OBJECT)
        return 0;
    sl_buf_t l, e;
    sl_buf_init(&l);
    sl_buf_init(&e);
    if (wire_json_kind(res, logs) == WIRE_JSON_ARRAY) {
        sub_json_print(res, logs, &l);
        sl_buf_append_char(&l, '\0');
    }
    if (err.len != 0) {
        sub_json_print(res, err, &e);
        sl_buf_append_char(&e, '\0');
    }
    tell_logs(p, sig, sub_json_number(res, slot), e.base, l.base);
    sl_buf_dispose(&l);
    sl_buf_dispose(&e);
    return 1;
}

static void take_transactions(logs_poll_t *p)
{
    for (size_t i = 0; i < p->nfetch && p->qn > 0; i++) {
        int told = tell(p, 1 + i, queue_at(p, 0));
        if (told < 0)
            return; /* in order: the rest waits for it */
        if (told == 0) {
            /* listed but not readable yet; one no endpoint ever has is passed, logged */
            if (++p->null_tries < NULL_TRIES)
                return;
            sl_log_warn("network %s: logsSubscribe %s: transaction %s still unreadable after %d polls: passed",
                        p->src->net->conf->name, p->addr, queue_at(p, 0), NULL_TRIES);
            sub_count_srv(p->src->reg, STATE_SRV_SUB_TX_SKIPPED, 1);
        }
        queue_pop(p);
    }
}

/* Item i's "signature" (decoded, as a tree's valuestring) into out, or "". */
static void signature_of(const char *res, const wire_span_t *items, size_t i, char *out, size_t cap)
{
    wire_span_t s = wire_json_member(res, items[i], "signature");
    out[0] = '\0';
    if (wire_json_kind(res, s) != WIRE_JSON_STRING || wire_json_string(res, s, out, cap) != SL_OK)
        out[0] = '\0'; /* too long for a signature, or not a string: not one */
}

/* getSignaturesForAddress's answer: newest first; queued oldest first.
 * Read with wire/'s scanner (a signature's escapes decoded as a tree's). */
static void take_signatures(logs_poll_t *p)
{
    const char *res;
    size_t len, n = 0;
    char s[SIG_MAX];
    wire_span_t *items = NULL;
    if (!sub_call_result(&p->loop.call, 0, &res, &len) || !sub_json_items(res, sub_json_trim(res, len), &items, &n, NULL))
        return;
    if (!p->started) {
        if (n > 0) {
            signature_of(res, items, 0, s, sizeof(s));
            if (sub_sol_is_b58(s, 64, SIG_MAX - 1)) {
                snprintf(p->anchor, sizeof(p->anchor), "%s", s);
                p->seen[p->nseen++ % SEEN_MAX] = sig_hash(s);
            }
        }
        p->started = 1;
    } else if (n >= SIGS_LIMIT) {
        sl_log_warn("network %s: logsSubscribe %s: %zu signatures or more since the last poll: older ones may be "
                    "missed", p->src->net->conf->name, p->addr, n);
        sub_count_srv(p->src->reg, STATE_SRV_SUB_TX_SKIPPED, 1);
    }
    for (size_t i = n; p->started && i-- > 0 && p->qn < QUEUE_MAX;) {
        signature_of(res, items, i, s, sizeof(s));
        /* base58 only: a signature is written into JSON (the next poll's params, the notification) as is */
        if (!sub_sol_is_b58(s, 64, SIG_MAX - 1) || seen(p, sig_hash(s)))
            continue;
        queue_push(p, s);
    }
    free(items);
}

static void on_answer(sub_call_t *c, void *data)
{
    logs_poll_t *p = data;
    if (p->feed.tell == NULL)
        sub_sol_note_endpoint(p->src, c, p->endpoint, sizeof(p->endpoint));
    take_transactions(p);
    size_t queued = p->nseen;
    take_signatures(p);
    const char *res;
    size_t len;
    if (p->feed.tell == NULL || !sub_call_result(c, 0, &res, &len))
        return;
    /* the second poll at least: its signatures asked after the upstream subscription was sent */
    ++p->polls;
    if (!p->done && (p->anchor_only ? p->started : p->polls >= 2 && p->qn == 0 && p->nseen == queued)) {
        p->done = 1;
        p->feed.caught_up(p->feed.data, p->anchor);
    }
}

static void poll_now(sub_poll_t *l)
{
    logs_poll_t *p = H2O_STRUCT_FROM_MEMBER(logs_poll_t, loop, l);
    if (p->done)
        return;
    const char *methods[SUB_CALL_MAX], *params[SUB_CALL_MAX];
    sl_buf_t *b = &p->params[0];
    sl_buf_reset(b);
    sl_buf_printf(b, "[\"%s\",{\"commitment\":\"%s\",\"limit\":%d", p->addr, p->level, p->started ? SIGS_LIMIT : 1);
    if (p->started && p->anchor[0] != '\0')
        sl_buf_printf(b, ",\"until\":\"%s\"", p->anchor);
    sl_buf_append_str(b, "}]");
    sl_buf_append_char(b, '\0');
    methods[0] = "getSignaturesForAddress";
    params[0] = b->base;
    p->nfetch = p->qn < TX_PER_POLL ? p->qn : TX_PER_POLL;
    for (size_t i = 0; i < p->nfetch; i++) {
        b = &p->params[1 + i];
        sl_buf_reset(b);
        sl_buf_printf(b, "[\"%s\",{\"commitment\":\"%s\",\"encoding\":\"json\",\"maxSupportedTransactionVersion\":0}]",
                      queue_at(p, i), p->level);
        sl_buf_append_char(b, '\0');
        methods[1 + i] = "getTransaction";
        params[1 + i] = b->base;
    }
    sub_count_cost(p->src->reg, p->src->net->index, STATE_SUB_POLLS_SOL_LOGS, (int64_t)(1 + p->nfetch));
    sub_call_start(&p->loop.call, p->src->net, 1 + p->nfetch, methods, params, on_answer, p);
}

static logs_poll_t *poll_new(sub_source_t *src, const char *key)
{
    logs_poll_t *p = sl_xcalloc(1, sizeof(*p));
    int lv = 2;
    p->src = src;
    sub_poll_init(&p->loop);
    for (size_t i = 0; i < SUB_CALL_MAX; i++)
        sl_buf_init(&p->params[i]);
    /* the key is "<address>|<level>" (the normaliser's), checked already */
    if (sscanf(key, "%47[^|]|%d", p->addr, &lv) != 2 || lv < 1 || lv > 2)
        lv = 2;
    p->level = sub_sol_levels[lv];
    return p;
}

void sub_sol_logs_start(sub_source_t *src)
{
    logs_poll_t *p = poll_new(src, src->key);
    src->impl = p;
    sub_poll_start(&p->loop, src->reg, src->net, 0, poll_now);
}

void *sub_sol_logs_follow(sub_source_t *src, const char *key, const char *from, const sub_sol_logs_feed_t *feed)
{
    logs_poll_t *p = poll_new(src, key);
    p->feed = *feed;
    if (from != NULL && sub_sol_is_b58(from, 64, SIG_MAX - 1)) {
        p->started = 1;
        snprintf(p->anchor, sizeof(p->anchor), "%s", from);
        p->seen[p->nseen++ % SEEN_MAX] = sig_hash(from);
    } else {
        p->anchor_only = 1;
    }
    sub_poll_start(&p->loop, src->reg, src->net, 0, poll_now);
    return p;
}

void sub_sol_logs_unfollow(void *follow)
{
    logs_poll_t *p = follow;
    if (p == NULL)
        return;
    sub_poll_stop(&p->loop);
    for (size_t i = 0; i < SUB_CALL_MAX; i++)
        sl_buf_dispose(&p->params[i]);
    free(p);
}

void sub_sol_logs_stop(sub_source_t *src)
{
    logs_poll_t *p = src->impl;
    sub_poll_stop(&p->loop);
    for (size_t i = 0; i < SUB_CALL_MAX; i++)
        sl_buf_dispose(&p->params[i]);
    free(p);
}
