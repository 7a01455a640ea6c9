/* gateway/gw_config_diff.h: what a reload would change.
 *
 * Compares the running configuration with a newly loaded one: networks (by
 * name) and endpoints (by network and id) added, removed or changed, with the
 * fields that changed, and the other settings that changed. Settings a
 * running master cannot apply (its sockets, its shared-state environment,
 * how many workers it keeps) are reported apart: a reload that touches them
 * is refused. Pure: no I/O, no secret in any text (a changed URL, header or
 * token is named, never shown). */
#ifndef GW_CONFIG_DIFF_H
#define GW_CONFIG_DIFF_H

#include <stddef.h>

#include "gateway/gw_config.h"

typedef enum gw_change_op {
    GW_CHANGE_ADDED,
    GW_CHANGE_REMOVED,
    GW_CHANGE_CHANGED,
} gw_change_op_t;

typedef enum gw_change_subject {
    GW_CHANGE_NETWORK,            /* name = the network */
    GW_CHANGE_ENDPOINT,           /* name = "network/id" */
    GW_CHANGE_SETTING,            /* name = "server.max_batch", "tiers", ... (always CHANGED) */
} gw_change_subject_t;

typedef struct gw_change {
    gw_change_op_t op;
    gw_change_subject_t subject;
    char name[112];
    char fields[128];             /* CHANGED networks and endpoints: "url, headers" */
} gw_change_t;

typedef struct gw_config_diff {
    gw_change_t *items;           /* networks first, then endpoints, then settings */
    size_t n;
    char restart[480];            /* "server.listen (a -> b) needs a restart; ...", "" if none */
} gw_config_diff_t;

/* Fills *out (caller disposes it) with what differs from old to new. */
void gw_config_diff(const gw_config_t *old, const gw_config_t *new, gw_config_diff_t *out);
void gw_config_diff_dispose(gw_config_diff_t *d);

/* One line for logs and events: "+endpoint eth/c; ~endpoint eth/a (url);
 * -network base; ~setting tiers", "no changes" when there are none. Cut
 * with "..." (and how many more) when it does not fit in len. */
void gw_config_diff_summary(const gw_config_diff_t *d, char *out, size_t len);

#endif
