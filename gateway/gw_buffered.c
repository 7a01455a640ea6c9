/* gateway/gw_buffered.c: the share, the reserve and the stalled-writer
 * resets before a refusal (the rule is in gw_buffered.h). */
#include "gateway/gw_buffered.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/sl_buf.h"
#include "gateway/gw_conns.h"

#define LOG_EVERY_MS 10000
#define HELD_SLOTS_MAX 4096       /* callers tracked by name; the rest share the aggregate */
#define HELD_SLOTS_MIN 64

size_t gw_buffered_reserve(const cfg_server_conf_t *srv)
{
    size_t r = srv->max_buffered_bytes / GW_BUFFERED_RESERVE_DIV;
    r = r > GW_BUFFERED_RESERVE_MIN ? r : GW_BUFFERED_RESERVE_MIN;
    return r < srv->max_buffered_bytes / 2 ? r : srv->max_buffered_bytes / 2;
}

size_t gw_buffered_share(const cfg_server_conf_t *srv)
{
    return (size_t)((double)srv->max_buffered_bytes * srv->max_buffered_share);
}

/* A scan of unknown size may answer up to max_response_bytes: half of that
 * (or of the share, if less) lets a caller have two at once. */
static size_t scan_default(const cfg_server_conf_t *srv)
{
    size_t share = gw_buffered_share(srv), most = srv->max_response_bytes;
    return (most < share ? most : share) / 2;
}

void gw_buffered_init(gw_buffered_t *b, const cfg_server_conf_t *srv, sl_budget_t *budget, gw_stats_t *stats,
                      gw_held_bytes_cb bytes, gw_held_bytes_cb real)
{
    /* a caller takes a slot only while a call of it is open, so one slot
     * per connection (HTTP/1.1: a call at a time each) is never full */
    size_t slots = srv->max_connections;
    slots = slots < HELD_SLOTS_MIN ? HELD_SLOTS_MIN : slots > HELD_SLOTS_MAX ? HELD_SLOTS_MAX : slots;
    *b = (gw_buffered_t){
        .budget = budget,
        .held = gw_held_create(slots, bytes),
        .real = real,
        .estimate = gw_estimate_create(scan_default(srv)),
        .stats = stats,
        .reserve = gw_buffered_reserve(srv),
        .share = gw_buffered_share(srv),
        .stalled_ms = srv->stalled_reset_ms,
    };
}

void gw_buffered_dispose(gw_buffered_t *b)
{
    gw_held_destroy(b->held);
    b->held = NULL;
    gw_estimate_destroy(b->estimate);
    b->estimate = NULL;
}

typedef struct candidate {
    gw_held_entry_t *e;
    size_t bytes;
} candidate_t;

typedef struct sweep {
    gw_buffered_t *b;
    uint64_t now_ms;
    candidate_t *list;
    size_t n, cap;
    size_t freeing;               /* held by connections already being reset */
} sweep_t;

static void look(gw_held_entry_t *e, void *arg)
{
    sweep_t *s = arg;
    uint64_t stalled = gw_conns_stalled_ms(e->sock, s->now_ms);
    if (stalled < s->b->stalled_ms)
        return;
    size_t bytes = gw_held_bytes(s->b->held, e);
    if (stalled == GW_CONNS_RESETTING) {
        s->freeing += bytes;
        return;
    }
    if (bytes == 0)
        return;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 16;
        s->list = sl_xrealloc(s->list, s->cap * sizeof(*s->list));
    }
    s->list[s->n++] = (candidate_t){e, bytes};
}

static int larger_first(const void *a, const void *b)
{
    size_t x = ((const candidate_t *)a)->bytes, y = ((const candidate_t *)b)->bytes;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* 1 while what stays held once gone bytes are freed is gate or more. */
static int over(size_t used, size_t gone, size_t gate)
{
    return used > gone && used - gone >= gate;
}

/* Resets stalled writers, largest first, until what stays held is under
 * gate (connections already being reset count as freed); returns 1 if it is. */
static int make_room(gw_buffered_t *b, size_t gate, uint64_t now_ms)
{
    sweep_t s = {.b = b, .now_ms = now_ms};
    gw_held_each(b->held, look, &s);
    if (s.n > 1) /* s.list is NULL when nothing was found: qsort's pointer must not be */
        qsort(s.list, s.n, sizeof(*s.list), larger_first);
    size_t used = b->budget->used, gone = s.freeing, reset = 0;
    for (size_t i = 0; i < s.n && over(used, gone, gate); i++) {
        if (gw_conns_reset_stalled(s.list[i].e->sock)) {
            gone += s.list[i].bytes;
            reset++;
        }
    }
    free(s.list);
    uint64_t held;
    char tail[SL_LOG_HELD_MAX];
    if (reset > 0 && sl_log_limit_pass(&b->log_reset, now_ms, LOG_EVERY_MS, &held))
        sl_log_warn("answer bytes held: %zu of server.max_buffered_bytes %zu; reset %zu client connection(s) "
                    "that took no answer bytes for %u ms (server.stalled_reset_ms) to make room%s",
                    used, b->budget->limit, reset, b->stalled_ms, sl_log_held_text(held, tail));
    return !over(used, gone, gate);
}

/* The share's rule: 1 if a caller holding held may have need more. */
static int within_share(const gw_buffered_t *b, size_t held, size_t need)
{
    /* a share of 1 is the budget's own rule; a caller holding nothing may
     * always have one call, whatever it is expected to hold */
    return b->share >= b->budget->limit || held == 0 || (held < b->share && need <= b->share - held);
}

gw_buffered_verdict_t gw_buffered_admit(gw_buffered_t *b, const char *ident, size_t need, uint64_t now_ms,
                                        size_t *held)
{
    *held = 0;
    if (b->budget == NULL)
        return GW_BUFFERED_ADMIT;
    *held = need <= GW_BUFFERED_SMALL ? gw_held_of_by(b->held, ident, b->real) : gw_held_of(b->held, ident);
    if (!within_share(b, *held, need)) {
        gw_stats_srv_add(b->stats, STATE_SRV_SHARE_REFUSED, 1);
        return GW_BUFFERED_SHARE;
    }
    size_t gate = b->budget->limit - b->reserve;
    if (b->budget->used < gate || (b->stalled_ms > 0 && make_room(b, gate, now_ms)))
        return GW_BUFFERED_ADMIT;
    gw_stats_srv_add(b->stats, STATE_SRV_BUFFER_REFUSED, 1);
    return GW_BUFFERED_FULL;
}

int gw_buffered_keep(gw_buffered_t *b, const gw_held_entry_t *e, size_t answer, gw_held_bytes_cb sent,
                     size_t *held)
{
    *held = 0;
    if (b->budget == NULL || b->share >= b->budget->limit || answer <= GW_BUFFERED_SMALL)
        return 1;
    *held = gw_held_others(b->held, e, sent);
    if (*held < b->share)
        return 1;
    gw_stats_srv_add(b->stats, STATE_SRV_SHARE_REFUSED, 1);
    return 0;
}

void gw_buffered_refusal(gw_buffered_t *b, gw_buffered_verdict_t v, size_t held, size_t need, uint64_t now_ms, char *msg,
                         size_t msg_cap, char *data, size_t data_cap)
{
    uint64_t logged;
    char tail[SL_LOG_HELD_MAX];
    if (v == GW_BUFFERED_SHARE) {
        snprintf(msg, msg_cap, "this caller (API key, or client address) holds %zu answer bytes (read, or reserved "
                 "for its calls in flight) and this call would need %zu more, past its share of what sluice may "
                 "hold (server.max_buffered_share: %zu bytes); read those answers or retry in 1 s", held, need,
                 b->share);
        snprintf(data, data_cap, "{\"scope\":\"gateway\",\"reason\":\"buffered_bytes_share\",\"retry_after_ms\":1000,"
                 "\"limit_bytes\":%zu,\"share_bytes\":%zu,\"held_bytes\":%zu,\"need_bytes\":%zu}", b->budget->limit,
                 b->share, held, need);
        return;
    }
    snprintf(msg, msg_cap, "sluice is holding as many answer bytes as server.max_buffered_bytes allows; retry in 1 s");
    snprintf(data, data_cap, "{\"scope\":\"gateway\",\"reason\":\"buffered_bytes\",\"retry_after_ms\":1000,"
             "\"limit_bytes\":%zu}", b->budget->limit);
    if (sl_log_limit_pass(&b->log_full, now_ms, LOG_EVERY_MS, &logged))
        sl_log_warn("answer bytes held: %zu of server.max_buffered_bytes %zu (less a reserve of %zu); new calls "
                    "get 503 until some are written%s", b->budget->used, b->budget->limit, b->reserve,
                    sl_log_held_text(logged, tail));
}
