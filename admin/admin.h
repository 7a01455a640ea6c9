/* admin/admin.h: the operator's listener (default 127.0.0.1:8550).
 *
 *   GET  /                               the operator page (HTML; no auth, holds no data)
 *   GET  /healthz                        process up (no auth)
 *   GET  /readyz                         every network has a usable endpoint
 *   GET  /admin/endpoints                one object per endpoint, merged across workers
 *   GET  /admin/networks                 per network: pressure level, its inputs, shed order,
 *                                        merged polls, the capacity forecast per endpoint
 *   POST /admin/endpoints/{net}/{id}/drain | /undrain
 *   GET  /admin/events?since=SEQ&limit=N JSON array, oldest first
 *   GET  /admin/events/stream            Server-Sent Events, resumes from Last-Event-ID;
 *                                        at most max_streams per worker (503 past it)
 *   GET  /metrics                        Prometheus text format
 *   POST /admin/reload                   as SIGHUP; answers with the reload's event
 *   POST /admin/keys, GET /admin/keys, PATCH|DELETE /admin/keys/{name}
 *                                        API keys made at run time (admin_keys.c)
 *   POST /admin/endpoints, PATCH|DELETE /admin/endpoints/{net}/{id}
 *                                        endpoints added at run time (admin_epapi.c)
 *   GET  /admin/config                   the effective config, secrets redacted, the
 *                                        source of each endpoint (admin_config.c)
 *
 * Routes are one table (admin/admin.c). Every route but /healthz needs
 * "Authorization: Bearer <admin.token>" when a token is configured; the
 * comparison is constant-time, failed attempts are throttled per client
 * address. Without a token, every route refuses a foreign Host (DNS
 * rebinding) and every write a foreign Origin or a non-JSON body
 * (admin/admin_guard.c): the router checks, so new routes inherit it. admin/ reads state/ (what an operator sees is
 * in LMDB, merged across workers) and drives no upstream. No secret appears
 * in its output: URLs are the redacted ones; the one exception is the secret
 * of a key POST /admin/keys makes, answered to that request once. */
#ifndef ADMIN_H
#define ADMIN_H

#include <h2o.h>

#include "policy/access.h"
#include "pool/pool_conf.h"
#include "state/state.h"

/* A key of the config file, as /admin/keys lists it (never its hash). */
typedef struct admin_key_info {
    const char *name;
    const char *tier;             /* NULL: none */
    const policy_access_scope_t *scope;
    uint32_t per_address[3];      /* per_second, per_minute, per_day (0: none) */
    uint32_t credits[2];          /* per_day, per_month (0: none) */
    int jwt;                      /* has jwt: */
    const char *jwt_audience;     /* NULL: not checked */
} admin_key_info_t;

typedef struct admin_conf {
    const char *token;            /* NULL: no authentication (loopback only, enforced by config) */
    const char *listen;           /* admin.listen as configured, "127.0.0.1:8550" */
    const char *bound;            /* the address as bound, with the real port */
    const pool_network_conf_t *networks;
    size_t nnetworks;
    state_t *state;               /* this process's handle */
    unsigned nworkers;            /* stats slots 1..nworkers are merged */
    h2o_loop_t *loop;             /* for the event stream's timers */
    /* 0 when this process should not get traffic (draining); why says so */
    int (*ready)(void *data, char *why, size_t why_len);
    /* asks the master to reload for the request tagged tag (0 on success);
     * NULL: POST /admin/reload answers 503 */
    int (*reload)(void *data, uint8_t tag);
    void *data;
    const char *cluster_host;     /* this host's name in the cluster, NULL without cluster: */
    uint32_t max_streams;         /* event streams open at once in this worker; more get 503 */
    uint32_t heartbeat_ms;        /* the event stream's heartbeat, unless ?heartbeat_ms= says (>= 1000) */
    struct state_cache *cache;    /* this process's handle on the response cache; NULL: off */
    const admin_key_info_t *config_keys; /* the config file's keys (names clash with /admin/keys) */
    size_t nconfig_keys;
    char *const *tiers;           /* the tier names a key made at run time may name */
    size_t ntiers;
    /* endpoints added at run time (server/srv_epapi.h): checks net/id with json
     * (NULL: removed) against the config file and the kept entries, 0 if it
     * loads, else 1 with why, the field and *conflict (the file names the id);
     * NULL: POST /admin/endpoints answers 503 */
    int (*epapi_check)(void *data, state_t *st, const char *net, const char *id, const char *json, char *why,
                       size_t cap, char *field, size_t field_cap, int *conflict);
    /* asks the master to apply the kept entries (0 on success) */
    int (*epapi_notify)(void *data);
    void *epapi_data;             /* the running configuration, for both */
    /* the effective configuration as one JSON object, no secret in it (config/
     * renders it: server/ hands it over; it outlives the listener); NULL: GET
     * /admin/config shows only what the state holds (the kept entries) */
    const char *config_json;
} admin_conf_t;

typedef struct admin admin_t;

/* Registers the admin routes on hostconf's "/". conf is copied. */
admin_t *admin_register(h2o_hostconf_t *hostconf, const admin_conf_t *conf);

#endif
