/* server/srv_epapi.h: the endpoints added at run time (issue 34), merged
 * into the config file's on start, on every reload and when they change.
 *
 * POST|PATCH|DELETE /admin/endpoints (admin/admin_epapi.c) validate an entry
 * with srv_epapi_check (the config file and the kept entries loaded again
 * with the change, by config/'s one decoder), keep it in the state (state/
 * state_epapi.h, which bumps a generation) and send the master
 * SRV_EPAPI_SIGNAL. The master (srv_master_reload.c) then runs its reload
 * path with the entries merged: new workers start with the new endpoint set
 * and the old ones drain, so calls in flight finish and a removed
 * endpoint's connections close after them. It also looks at the generation
 * once a second, so a change it missed (a signal lost, an entry copied from
 * another host through Redis) is applied too. */
#ifndef SRV_EPAPI_H
#define SRV_EPAPI_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "config/cfg.h"
#include "state/state.h"

/* Tells the master that the kept entries changed (never merged with another). */
#define SRV_EPAPI_SIGNAL (SIGRTMIN + 2)

/* Loads path with the entries kept in st merged (st NULL: none). *gen gets
 * the generation of the entries read (may be NULL). Skipped entries are
 * logged (the YAML names the same id: the YAML wins), and so is an entry
 * that does not load with this file (copied from a host whose file
 * differs): it is left out, the others and the file load. As cfg_load
 * otherwise. */
SL_MUST_CHECK sl_err_t srv_epapi_load(const char *path, state_t *st, cfg_t **out, cfg_errors_t *errs,
                                      uint64_t *gen);

/* The admin's check of a change to net/id: json is its fields' JSON object
 * (NULL: the entry goes). data is the running cfg_t, st the caller's handle. Returns 0 if the config
 * file and the kept entries load with the change; else 1 with why[0..cap)
 * "path: message" of the first problem, *field the endpoint key it is about
 * ("" if none), and *conflict 1 when the config file names the same id. */
int srv_epapi_check(void *data, state_t *st, const char *net, const char *id, const char *json, char *why, size_t cap,
                    char *field, size_t field_cap, int *conflict);

/* Worker side: asks the master to apply the kept entries. 0, or -1 (errno). */
int srv_epapi_notify(void *data);
/* srv_epapi_notify for state_cluster_epapi_on_change (another host changed them). */
void srv_epapi_changed(void *data);

#endif
