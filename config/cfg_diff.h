/* config/cfg_diff.h: what a reload would change.
 *
 * Compares the running configuration with a newly loaded one: networks (by
 * name) and endpoints (by network and id) added, removed or changed, with the
 * fields that changed, and the other settings that changed. Settings a
 * running master cannot apply (its sockets, its shared-state environment,
 * how many workers it keeps) are reported apart: a reload that touches them
 * is refused. Pure: no I/O, no secret in any text (a changed URL, header or
 * token is named, never shown). */
#ifndef CFG_DIFF_H
#define CFG_DIFF_H

#include <stddef.h>

#include "config/cfg.h"

typedef enum cfg_change_op {
    CFG_CHANGE_ADDED,
    CFG_CHANGE_REMOVED,
    CFG_CHANGE_CHANGED,
} cfg_change_op_t;

typedef enum cfg_change_subject {
    CFG_CHANGE_NETWORK,            /* name = the network */
    CFG_CHANGE_ENDPOINT,           /* name = "network/id" */
    CFG_CHANGE_SETTING,            /* name = "server.max_batch", "tiers", ... (always CHANGED) */
} cfg_change_subject_t;

typedef struct cfg_change {
    cfg_change_op_t op;
    cfg_change_subject_t subject;
    char name[112];
    char fields[128];             /* CHANGED networks and endpoints: "url, headers" */
} cfg_change_t;

typedef struct cfg_diff {
    cfg_change_t *items;           /* networks first, then endpoints, then settings */
    size_t n;
    char restart[480];            /* "server.listen (a -> b) needs a restart; ...", "" if none */
} cfg_diff_t;

/* Fills *out (caller disposes it) with what differs from old to new. */
void cfg_diff(const cfg_t *old, const cfg_t *new, cfg_diff_t *out);
void cfg_diff_dispose(cfg_diff_t *d);

/* One line for logs and events: "+endpoint eth/c; ~endpoint eth/a (url);
 * -network base; ~setting tiers", "no changes" when there are none. Cut
 * with "..." (and how many more) when it does not fit in len. */
void cfg_diff_summary(const cfg_diff_t *d, char *out, size_t len);

#endif
