/* state/state_epapi.h: endpoints added at run time (issue 34).
 *
 * POST /admin/endpoints keeps an endpoint in meta under "epapi/<net>/<id>"
 * (state_epapi_rec_t): its network, its id and its fields as the JSON object
 * the admin route validated (the same keys as a YAML endpoint entry; its url
 * with the provider key in it, as the config file holds it). state/ decides
 * nothing: the master merges these entries into the config file's on start
 * and on every reload (server/srv_epapi.c). Every change bumps a generation
 * kept in meta under "epapis" in the same write transaction, with its event;
 * the master applies the entries again when the generation moved. */
#ifndef STATE_EPAPI_H
#define STATE_EPAPI_H

#include <stddef.h>
#include <stdint.h>

#include "state/state.h"

#define STATE_EPAPI_NET_MAX 40        /* bytes of a network name, its NUL included */
#define STATE_EPAPI_ID_MAX 65         /* bytes of an endpoint id, its NUL included */
#define STATE_EPAPI_JSON_MAX 8192     /* bytes of the fields' JSON, its NUL included */

typedef struct state_epapi_rec {
    char network[STATE_EPAPI_NET_MAX];
    char id[STATE_EPAPI_ID_MAX];
    char json[STATE_EPAPI_JSON_MAX]; /* the endpoint's fields, a JSON object (secrets in it) */
    uint64_t created_ms;             /* shared time */
    uint64_t updated_ms;             /* the last change (created_ms if none) */
} state_epapi_rec_t;

extern const state_schema_t state_epapi_schema;

/* A removed entry stays as a tombstone (json "", updated_ms the removal's
 * time), so that a copy from another host that is older does not bring it
 * back (state/state_cluster_epapi.c): readers skip those. */

/* Writes rec, bumps the generation and appends ev (NULL: none), in one write
 * transaction. create 1: SL_ERR_EXISTS if that endpoint is kept (a tombstone
 * is not); create 0: SL_ERR_NOT_FOUND if it is not; create -1: either (a
 * copy from another host, a tombstone). SL_ERR_INVALID for an empty name or
 * id, or one holding a '/'. */
SL_MUST_CHECK sl_err_t state_epapi_put(state_t *st, const state_epapi_rec_t *rec, int create, state_event_t *ev);

/* Makes net/id a tombstone of time now_ms (later than its last change),
 * bumps the generation and appends ev (NULL: none), in one write
 * transaction; SL_ERR_NOT_FOUND if it is not kept. */
SL_MUST_CHECK sl_err_t state_epapi_delete(state_t *st, const char *net, const char *id, uint64_t now_ms,
                                          state_event_t *ev);

/* net/id into rec, a tombstone too; SL_ERR_NOT_FOUND if none is kept. */
SL_MUST_CHECK sl_err_t state_epapi_get(state_t *st, const char *net, const char *id, state_epapi_rec_t *rec);

/* The generation (0: no endpoint was ever added), in a fresh snapshot. */
SL_MUST_CHECK sl_err_t state_epapi_generation(state_t *st, uint64_t *gen);

/* The generation this host's workers run: the master sets it once the
 * workers that run it are ready (at start, at the end of each reload); an
 * admin request that changed the entries waits for it to reach the
 * generation its change made. 0 until set. */
SL_MUST_CHECK sl_err_t state_epapi_applied_set(state_t *st, uint64_t gen);
SL_MUST_CHECK sl_err_t state_epapi_applied(state_t *st, uint64_t *gen);

/* Every kept entry and tombstone, by network then id, in one snapshot: *out (malloc'd, the
 * caller frees it; NULL when none) and *n; *gen their generation (may be
 * NULL). A record that does not decode is skipped (and noted corrupt). */
SL_MUST_CHECK sl_err_t state_epapi_list(state_t *st, state_epapi_rec_t **out, size_t *n, uint64_t *gen);

#endif
