/* sub/sub_pass_sol.c: a passed-through Solana logsSubscribe
 * {"mentions":[address]} (sub_pass.c) backfilled across an upstream
 * failover, so it tells every transaction once, in order.
 *
 * The signature of each notification relayed is remembered (the last, and a
 * ring of hashes of the recent ones). At the start, one follow of the
 * address (the kind's row's follow, sub_sol_logs_follow:
 * getSignaturesForAddress through the pool) sets where the subscription
 * starts, in case it is lost before it told anything. When sub_pass.c
 * subscribes again at another endpoint after a loss, the address is
 * followed from the last signature told: each transaction the node lists
 * after it (getTransaction's logs and err) is told unless told already, and
 * the live notifications of the new endpoint are held meanwhile (HELD_MAX,
 * HELD_BYTES); once the follow is caught up (a second poll, after the
 * upstream subscribe was sent, found nothing new) or told the first held
 * one (an address busier than a poll: the two streams overlap from there),
 * the held ones not told yet go out in their order, then the live stream.
 * Held past the bound, the backfill is given up and what is held goes out
 * (logged, counted as skipped). "all" and "allWithVotes" name no address:
 * not backfilled (no tracker). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sl_hash.h"
#include "base/sl_log.h"
#include "sub/sub_int.h"
#include "wire/envelope.h"

#define SEEN_MAX 2048             /* signatures told, remembered (hashes) */
#define HELD_MAX 4096             /* live notifications held while a backfill runs */
#define HELD_BYTES (4u << 20)
#define REAP_MS 50
#define SIG_MAX 90

struct sub_pass_sol {
    sub_source_t *src;
    char key[64];                 /* "<address>|<level>" (sub_sol_logs_params) */
    char last[SIG_MAX];           /* the last signature told ("": none) */
    uint64_t seen[SEEN_MAX];
    size_t nseen;
    void *follow;                 /* sub_sol_logs_follow's, NULL: none */
    void *reaped;                 /* a follow caught up, stopped from the loop */
    uint8_t backfill;             /* follow is a backfill (else: the start's anchor) */
    size_t told;                  /* backfill: transactions it told */
    sl_buf_t *held;               /* live results held while a backfill runs */
    char first_held[SIG_MAX];     /* the first one's signature: the backfill telling it met the live stream */
    size_t nheld, held_cap, held_bytes;
    h2o_timeout_entry_t reap;
};

static uint64_t sig_hash(const char *s)
{
    return sl_fnv1a_str(SL_FNV1A_OFFSET, s);
}

static int seen(const sub_pass_sol_t *t, const char *sig)
{
    uint64_t h = sig_hash(sig);
    size_t n = t->nseen < SEEN_MAX ? t->nseen : SEEN_MAX;
    for (size_t i = 0; i < n; i++)
        if (t->seen[i] == h)
            return 1;
    return 0;
}

static void remember(sub_pass_sol_t *t, const char *sig)
{
    t->seen[t->nseen++ % SEEN_MAX] = sig_hash(sig);
    snprintf(t->last, sizeof(t->last), "%s", sig);
}

/* result's value.signature into sig, 1; 0 when it has none. */
static int signature_of(const char *result, size_t len, char *sig, size_t cap)
{
    wire_span_t top = sub_json_trim(result, len);
    wire_span_t s = wire_json_member(result, wire_json_member(result, top, "value"), "signature");
    return wire_json_kind(result, s) == WIRE_JSON_STRING && wire_json_string(result, s, sig, cap) == SL_OK &&
           sub_sol_is_b58(sig, 64, SIG_MAX - 1);
}

static void drop_follow(sub_pass_sol_t *t)
{
    if (t->follow == NULL)
        return;
    t->src->kind->unfollow(t->reaped); /* one dropped before (never the one calling) */
    t->reaped = t->follow; /* never freed inside its own callback */
    t->follow = NULL;
    if (!h2o_timeout_is_linked(&t->reap))
        h2o_timeout_link(sub_loop(t->src->reg), sub_timeout(t->src->reg, REAP_MS), &t->reap);
}

static void on_reap(h2o_timeout_entry_t *e)
{
    sub_pass_sol_t *t = H2O_STRUCT_FROM_MEMBER(sub_pass_sol_t, reap, e);
    t->src->kind->unfollow(t->reaped);
    t->reaped = NULL;
}

/* The held live notifications not told by the backfill go out, in order. */
static void release(sub_pass_sol_t *t, const char *why)
{
    size_t out = 0;
    char sig[SIG_MAX];
    for (size_t i = 0; i < t->nheld; i++) {
        sl_buf_t *b = &t->held[i];
        int has = signature_of(b->base, b->len, sig, sizeof(sig));
        if (!has || !seen(t, sig)) {
            if (has)
                remember(t, sig);
            sub_notify(t->src, b->base, b->len);
            out++;
        }
        sl_buf_dispose(b);
    }
    sl_log_info("network %s: the logsSubscribe passthrough %s: %zu transactions backfilled, %zu held live "
                "notifications told after them", t->src->net->conf->name, why, t->told, out);
    free(t->held);
    t->held = NULL;
    t->nheld = t->held_cap = t->held_bytes = 0;
    t->backfill = 0;
    t->told = 0;
    drop_follow(t);
}

static void on_tell(void *data, const char *sig, const char *result, size_t len)
{
    sub_pass_sol_t *t = data;
    if (!t->backfill || seen(t, sig))
        return; /* the start's follow tells nothing: the live stream does */
    remember(t, sig);
    t->told++;
    sub_notify(t->src, result, len);
    if (t->nheld > 0 && strcmp(sig, t->first_held) == 0)
        release(t, "met the live stream"); /* a busy address: the live stream goes on from here */
}

static void on_caught_up(void *data, const char *anchor)
{
    sub_pass_sol_t *t = data;
    if (t->backfill) {
        release(t, "caught up after a failover");
        return;
    }
    if (t->last[0] == '\0' && anchor[0] != '\0')
        remember(t, anchor); /* where it started: nothing told yet */
    drop_follow(t);
}

static const char *key_of(const sub_source_t *src, char *key, size_t cap)
{
    cJSON *params = cJSON_Parse(src->key);
    sl_buf_t b;
    sl_buf_init(&b);
    /* the row's own (polling's) normaliser: an address and a level, or no follow ("all") */
    const char *bad = cJSON_IsArray(params) ? src->kind->normalise(params, &b) : "not an array";
    cJSON_Delete(params);
    if (bad == NULL) {
        sl_buf_append_char(&b, '\0');
        snprintf(key, cap, "%s", b.base);
    }
    sl_buf_dispose(&b);
    return bad;
}

static void follow(sub_pass_sol_t *t, const char *from)
{
    sub_sol_logs_feed_t feed = {on_tell, on_caught_up, t};
    t->follow = t->src->kind->follow(t->src, t->key, from, &feed);
}

sub_pass_sol_t *sub_pass_sol_new(sub_source_t *src)
{
    char key[64];
    if (src->kind->follow == NULL || key_of(src, key, sizeof(key)) != NULL)
        return NULL;
    sub_pass_sol_t *t = sl_xcalloc(1, sizeof(*t));
    t->src = src;
    snprintf(t->key, sizeof(t->key), "%s", key);
    t->reap.cb = on_reap;
    follow(t, NULL);
    return t;
}

void sub_pass_sol_free(sub_pass_sol_t *t)
{
    if (t == NULL)
        return;
    if (h2o_timeout_is_linked(&t->reap))
        h2o_timeout_unlink(&t->reap);
    t->src->kind->unfollow(t->reaped);
    t->src->kind->unfollow(t->follow);
    for (size_t i = 0; i < t->nheld; i++)
        sl_buf_dispose(&t->held[i]);
    free(t->held);
    free(t);
}

int sub_pass_sol_live(sub_pass_sol_t *t, const char *result, size_t len)
{
    char sig[SIG_MAX];
    if (!signature_of(result, len, sig, sizeof(sig)))
        return 1;
    if (seen(t, sig))
        return 0;
    if (!t->backfill) {
        remember(t, sig);
        return 1;
    }
    if (t->nheld == HELD_MAX || t->held_bytes + len > HELD_BYTES) {
        sl_log_warn("network %s: the logsSubscribe passthrough held %zu live notifications while backfilling: "
                    "backfill given up", t->src->net->conf->name, t->nheld);
        sub_count_srv(t->src->reg, STATE_SRV_SUB_TX_SKIPPED, 1);
        release(t, "gave up its backfill");
        remember(t, sig);
        return 1;
    }
    if (t->nheld == t->held_cap) { /* grown by doubling: most backfills hold a few */
        t->held_cap = t->held_cap != 0 ? t->held_cap * 2 : 16;
        t->held = sl_xrealloc(t->held, t->held_cap * sizeof(*t->held));
    }
    if (t->nheld == 0)
        snprintf(t->first_held, sizeof(t->first_held), "%s", sig);
    sl_buf_init(&t->held[t->nheld]);
    sl_buf_append(&t->held[t->nheld], result, len);
    t->nheld++;
    t->held_bytes += len;
    return 0;
}

void sub_pass_sol_moved(sub_pass_sol_t *t)
{
    if (t == NULL || t->backfill)
        return; /* a backfill running goes on from where it is */
    t->src->kind->unfollow(t->follow); /* the start's, not caught up: from the loop (sub_pass.c's retry) */
    t->follow = NULL;
    if (t->last[0] == '\0')
        return; /* lost before it knew where it started: nothing to go on from */
    t->backfill = 1;
    t->told = 0;
    follow(t, t->last);
}
