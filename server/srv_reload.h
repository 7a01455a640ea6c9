/* server/srv_reload.h: the configuration side of a reload.
 *
 * SIGHUP to the master and POST /admin/reload (the worker that serves it
 * sends the master SRV_RELOAD_SIGNAL with the request's tag) end in the
 * master's one reload path (server/srv_master.c), which calls these: load
 * and validate the file exactly as `sluice --check` does, refuse what needs
 * a restart, compare with the running configuration, and record the outcome
 * as a config_reloaded or config_reload_failed event. The event carries the
 * requester (pid and tag) so the admin request can find its answer. */
#ifndef SRV_RELOAD_H
#define SRV_RELOAD_H

#include <signal.h>
#include <stdint.h>

#include "config/cfg.h"
#include "config/cfg_diff.h"
#include "state/state.h"

/* A realtime signal: each admin request is queued with its tag, never merged. */
#define SRV_RELOAD_SIGNAL (SIGRTMIN + 1)

typedef struct srv_reload_req {
    uint32_t pid;                 /* the worker that took the admin request; the master's own for SIGHUP */
    uint8_t tag;                  /* the admin request's tag; 0 for SIGHUP */
    uint8_t epapi;                /* 1: the endpoints added at run time changed (srv_epapi.h) */
} srv_reload_req_t;

/* Loads running->file as --check does, with the endpoints added at run time
 * (kept in st: server/srv_epapi.h) merged, and compares it with running;
 * *epapi_gen gets their generation, whatever the outcome. Returns
 * the new configuration (the caller destroys it) with *diff filled (the
 * caller disposes it), or NULL: then every problem was logged (config errors
 * with their YAML lines) and recorded as one config_reload_failed event. A
 * file that changes a setting only a restart applies is refused that way. */
cfg_t *srv_reload_load(const cfg_t *running, state_t *st, const srv_reload_req_t *req,
                            cfg_diff_t *diff, uint64_t *epapi_gen);

/* Logs why and records config_reload_failed (count = nerrors). */
void srv_reload_failed(state_t *st, const srv_reload_req_t *req, size_t nerrors, const char *why);

/* 1 if a key of cfg has the name of an API key made at run time (kept in
 * st's state; issue 33: a name is one key's), why[0..cap) naming it; 0 if
 * none does or st is NULL or cannot be read. Start, reload and --check
 * refuse such a config. */
int srv_reload_key_clash(const cfg_t *cfg, state_t *st, char *why, size_t cap);

/* Logs each change and records config_reloaded (count = changes). */
void srv_reload_done(state_t *st, const srv_reload_req_t *req, const cfg_diff_t *diff, uint64_t took_ms);

/* Worker side: asks the master (the parent process) to reload on behalf of
 * the admin request tagged tag. Returns 0, or -1 (errno set). */
SL_MUST_CHECK int srv_reload_request(uint8_t tag);

#endif
