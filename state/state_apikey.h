/* state/state_apikey.h: API keys made at run time (issue 33, phase 2).
 *
 * POST /admin/keys makes a key; its record lives in meta under
 * "apikey/<name>" (state_apikey_rec_t): the name, the tier, the SHA-256 of
 * the secret (never the secret) and the scope, each scope list one string of
 * newline-separated entries, as the admin route validated them (state/
 * decides nothing). Every change (made, changed, revoked) bumps a generation
 * kept in meta under "apikeys" in the same write transaction, with its
 * event: a worker reads the generation on its refresh tick and reloads the
 * list only when it moved. Keys of the config file are not kept here. */
#ifndef STATE_APIKEY_H
#define STATE_APIKEY_H

#include <stddef.h>
#include <stdint.h>

#include "state/state.h"

#define STATE_APIKEY_NAME_MAX 64      /* bytes of a name, its NUL included */

typedef struct state_apikey_rec {
    char name[STATE_APIKEY_NAME_MAX];
    char tier[64];                /* a tier of the config ("" = none) */
    char sha256[65];              /* lower-case hex of SHA-256(secret) */
    char networks[512];           /* scope lists: one entry per line, "" = unbounded */
    char allow[1024];             /* method globs */
    char deny[1024];
    char contracts[2048];         /* "0x" + 40 hex digits */
    char origins[1024];
    uint64_t created_ms;          /* shared time */
    uint64_t updated_ms;          /* the last PATCH (created_ms if none) */
    uint32_t per_address[3];      /* per_second, per_minute, per_day of each client address (0: none);
                                     record version 2 (a version 1 record reads as none) */
    /* record version 3 (an older record reads as none of these) */
    uint32_t credits[2];          /* the key's budget in credits: per_day, per_month (0: none) */
    char jwt_pem[2048];           /* jwt: the public key as PEM text, as the admin route checked it ("" = no jwt:) */
    char jwt_audience[256];       /* the aud its tokens must name ("" = not checked) */
} state_apikey_rec_t;

extern const state_schema_t state_apikey_schema;

/* Writes rec at "apikey/<rec->name>", bumps the generation and appends
 * ev (NULL: none), in one write transaction. create 1: SL_ERR_EXISTS if a
 * key of that name is kept; create 0: SL_ERR_NOT_FOUND if none is.
 * SL_ERR_INVALID for a name that is empty, too long or holds a '/'. */
SL_MUST_CHECK sl_err_t state_apikey_put(state_t *st, const state_apikey_rec_t *rec, int create, state_event_t *ev);

/* Removes the key name, leaves its tombstone (revoked at now_ms, shared
 * time), bumps the generation and appends ev (NULL: none), in one write
 * transaction; SL_ERR_NOT_FOUND if none is kept. */
SL_MUST_CHECK sl_err_t state_apikey_delete(state_t *st, const char *name, uint64_t now_ms, state_event_t *ev);

/* With cluster: (state_cluster_keys.c), state_apikey_put and _delete also
 * tell Redis, and what other hosts did is applied with these two, which
 * tell no one and log no event (the host that made the change logged it,
 * and the cluster's event stream brings it here): rec written whether or
 * not a key of its name is kept; name removed with its tombstone at at_ms
 * (SL_ERR_NOT_FOUND if none is kept). */
SL_MUST_CHECK sl_err_t state_apikey_apply(state_t *st, const state_apikey_rec_t *rec);
SL_MUST_CHECK sl_err_t state_apikey_forget(state_t *st, const char *name, uint64_t at_ms);
/* When the key name was last revoked here (shared ms), 0 if never. */
uint64_t state_apikey_gone_ms(state_t *st, const char *name);

/* The key name into rec; SL_ERR_NOT_FOUND if none is kept. */
SL_MUST_CHECK sl_err_t state_apikey_get(state_t *st, const char *name, state_apikey_rec_t *rec);

/* The generation (0: no key was ever made), in a fresh snapshot. */
SL_MUST_CHECK sl_err_t state_apikey_generation(state_t *st, uint64_t *gen);

/* Every kept key, by name, in one snapshot: *out (malloc'd, the caller
 * frees it; NULL when none) and *n; *gen the generation they are (may be
 * NULL). A record that does not decode is skipped (and noted corrupt). */
SL_MUST_CHECK sl_err_t state_apikey_list(state_t *st, state_apikey_rec_t **out, size_t *n, uint64_t *gen);

#endif
