/* gateway/gw_buffered.h: whether a new call may have answer bytes, in one
 * worker (server.max_buffered_bytes, max_buffered_share, stalled_reset_ms).
 *
 * The answer size is unknown when a call is admitted: answers are charged
 * to the worker's budget (base/sl_budget.h) as they are read, so a rule at
 * admission can only look at what is held now. The rule:
 *
 * - share, reserved at admission: each admitted call holds the larger of
 *   its estimate (gw_estimate.h: the caller's recent answers of the method)
 *   and what it has read, until its answer is complete; then what it really
 *   holds. A caller that holds something and whose new call's estimate
 *   would take it past max_buffered_share of the budget gets
 *   GW_BUFFERED_SHARE, whatever the others hold, so a burst of calls is
 *   refused up front, before its answers are read together; a caller that
 *   holds nothing is always admitted by this rule (a share of 1 leaves only
 *   the budget's rule). A small call (expected to hold GW_BUFFERED_SMALL or
 *   less) is judged by the bytes the caller really holds, reservations
 *   aside: its cost is small, and a caller's slow scans must not keep its
 *   cheap reads out;
 * - reserve: the others are admitted while the worker holds less than the
 *   budget minus a reserve (a sixteenth of it or 4 MiB, whichever is larger,
 *   at most half of it). The reserve is room for the answers of calls
 *   already admitted that are still being read: small answers (a read's
 *   few KB) land in it, so the bytes of one more small answer are always
 *   there once a call is admitted; a large answer may pass the budget by
 *   what it reads, as before;
 * - stalled writers: before a call is refused for want of bytes, client
 *   connections that hold answer bytes and have acknowledged none for
 *   stalled_reset_ms are reset (gw_conns_reset_stalled), the largest
 *   holders first, until what stays held is under budget minus reserve;
 *   then the call is admitted (the reset answers are freed as h2o sees
 *   their writes fail, within a loop turn). Only then GW_BUFFERED_FULL.
 *
 * - the share again, when an answer is complete: an estimate may be short,
 *   so an answer over GW_BUFFERED_SMALL is kept only while the caller's
 *   other answers waiting for its connections hold less than its share;
 *   else the caller gets GW_BUFFERED_SHARE for it instead (the bytes read
 *   are freed). What a caller keeps is then its share plus one answer.
 *
 * One per worker, single-threaded; the caller passes the time. */
#ifndef GW_BUFFERED_H
#define GW_BUFFERED_H

#include <stddef.h>
#include <stdint.h>

#include "base/sl_budget.h"
#include "base/sl_log.h"
#include "config/cfg.h"
#include "gateway/gw_estimate.h"
#include "gateway/gw_held.h"
#include "gateway/gw_stats.h"

#define GW_BUFFERED_RESERVE_MIN (4u * 1024 * 1024)
#define GW_BUFFERED_RESERVE_DIV 16
#define GW_BUFFERED_SMALL (64u * 1024) /* an answer this size or less is never refused once admitted */

typedef enum gw_buffered_verdict {
    GW_BUFFERED_ADMIT,
    GW_BUFFERED_FULL,             /* the worker's budget (minus the reserve) */
    GW_BUFFERED_SHARE,            /* this caller's share of it */
} gw_buffered_verdict_t;

typedef struct gw_buffered {
    sl_budget_t *budget;          /* the worker's; NULL: no limit */
    gw_held_t *held;              /* callers' entries (owned) */
    gw_held_bytes_cb real;        /* what an entry holds, its reservation aside */
    gw_estimate_t *estimate;      /* callers' recent answer sizes (owned) */
    gw_stats_t *stats;            /* may be NULL */
    size_t reserve;               /* kept for calls already admitted */
    size_t share;                 /* bytes a caller may hold before it is refused */
    uint32_t stalled_ms;          /* server.stalled_reset_ms; 0: no resets */
    sl_log_limit_t log_reset, log_full;
} gw_buffered_t;

/* Sizes of the reserve and the share for srv (tests and docs/operate/limits.md's figures). */
size_t gw_buffered_reserve(const cfg_server_conf_t *srv);
size_t gw_buffered_share(const cfg_server_conf_t *srv);

/* b's storage is the caller's; budget and stats must outlive it. The table
 * takes bytes to read what an entry holds (its reservation included) and
 * the socket it is written to; real reads what it holds in answers alone. */
void gw_buffered_init(gw_buffered_t *b, const cfg_server_conf_t *srv, sl_budget_t *budget, gw_stats_t *stats,
                      gw_held_bytes_cb bytes, gw_held_bytes_cb real);
void gw_buffered_dispose(gw_buffered_t *b);

/* The verdict for a new call of ident expected to hold need bytes (its
 * reservation); *held gets what ident holds or has reserved now. May reset
 * stalled client connections (counted, logged at most every 10 s). */
gw_buffered_verdict_t gw_buffered_admit(gw_buffered_t *b, const char *ident, size_t need, uint64_t now_ms,
                                        size_t *held);

/* 1 if an admitted call's complete answer of answer bytes may be kept
 * (written to its client); 0 if it is refused as over the caller's share
 * (counted): *held gets what the caller's other answers being written hold,
 * by the measure sent. e is the call's entry. */
int gw_buffered_keep(gw_buffered_t *b, const gw_held_entry_t *e, size_t answer, gw_held_bytes_cb sent,
                     size_t *held);

/* The message and data (a JSON object) of the 503 for verdict v (not
 * GW_BUFFERED_ADMIT) of a caller holding held, for a call that needed
 * need; logs a refusal at the
 * budget at most every 10 s. */
void gw_buffered_refusal(gw_buffered_t *b, gw_buffered_verdict_t v, size_t held, size_t need, uint64_t now_ms, char *msg,
                         size_t msg_cap, char *data, size_t data_cap);

#endif
