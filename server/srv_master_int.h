/* server/srv_master_int.h: the master's internals, shared by srv_master.c
 * (start, supervise loop, workers' lives) and srv_master_reload.c (the
 * reload path). For gateway/ only. */
#ifndef SRV_MASTER_INT_H
#define SRV_MASTER_INT_H

#include <poll.h>
#include <stdint.h>
#include <sys/types.h>

#include "config/cfg.h"
#include "config/cfg_diff.h"
#include "server/srv_housekeep.h"
#include "server/srv_reload.h"
#include "server/srv_worker.h"
#include "state/state.h"

#define MAX_WORKERS 256
#define LISTEN_BACKLOG 1024
#define STARTUP_TIMEOUT_MS 15000
#define RESPAWN_MIN_MS 100
#define RESPAWN_MAX_MS 10000
#define STABLE_AFTER_MS 10000     /* a worker that lived this long resets the backoff */
#define REOPEN_AFTER_MS 1000      /* a worker crash-looping this slowly gives its sockets up meanwhile */
#define HOUSEKEEP_MS 1000
/* counter slots 1..SLOT_BANKS x workers: the running workers and up to two
 * generations that a reload is still draining; each process writes its own */
#define SLOT_BANKS 3
#define MAX_RETIRING ((SLOT_BANKS - 1) * MAX_WORKERS)

typedef struct worker_slot {
    pid_t pid;                    /* 0: not running */
    int ready_fd;                 /* read end of the worker's ready pipe, -1 once ready */
    unsigned stats_slot;          /* its counters' slot in the shared state (1-based) */
    uint64_t started_ms;
    uint64_t respawn_at_ms;       /* 0: no respawn scheduled */
    uint32_t backoff_ms;
    uint32_t restarts;
} worker_slot_t;

/* A worker of an earlier configuration, draining after a reload. */
typedef struct retiring {
    pid_t pid;
    unsigned stats_slot;
    uint64_t kill_at_ms;          /* SIGKILL if still running: its grace period + 2 s */
} retiring_t;

/* A reload whose new workers are coming up: the supervise loop watches
 * their ready pipes among its other duties, so the master goes on reaping,
 * respawning and housekeeping while they start. */
typedef struct reload_run {
    int active;
    cfg_t *next;            /* the new configuration (owned until installed) */
    cfg_diff_t diff;
    srv_reload_req_t req;
    uint64_t start_ms;
    uint64_t deadline_ms;         /* not all ready by then: the reload fails */
} reload_run_t;

typedef struct master {
    const cfg_t *cfg;       /* the running configuration */
    cfg_t *owned;           /* cfg once a reload loaded it (the master frees it) */
    srv_worker_args_t args;
    int reserve_fds[3];           /* bound, not listening: keeps the ports ours */
    /* listening sockets, one per worker index (main, admin, WebSocket): the master keeps
     * them, so a worker that restarts or is replaced by a reload takes over
     * the same socket and no queued connection is lost */
    int listen_fds[3][MAX_WORKERS];
    int sigfd;
    worker_slot_t slots[MAX_WORKERS];
    worker_slot_t fresh[MAX_WORKERS]; /* a reload's new workers, until all of them accept */
    reload_run_t run;             /* the reload under way, if any */
    retiring_t retiring[MAX_RETIRING];
    size_t nretiring;
    unsigned n;
    int stopping;
    state_t *state;
    srv_housekeep_t *hk;
    uint64_t epapi_gen;           /* the generation of the endpoint entries last read (srv_epapi.h) */
} master_t;

/* Closes *fd if open and sets it to -1. */
void srv_master_close_fd(int *fd);
/* Starts worker index i (0-based) with cfg into s; its pid, or -1 (logged). */
pid_t srv_master_spawn(master_t *m, worker_slot_t *s, unsigned i, const cfg_t *cfg);
/* Moves a running worker to the draining list and tells it to drain. */
void srv_master_retire(master_t *m, worker_slot_t *s, uint32_t grace_ms);

/* srv_master_reload.c. Starts a reload (SIGHUP, POST /admin/reload): loads
 * and checks the file, starts the new workers and returns; the outcome is
 * an event, recorded by whichever call ends it. */
void srv_master_reload_start(master_t *m, srv_reload_req_t req);
/* The supervise loop's part: p[0..np) are the new workers' ready pipes as
 * polled; finishes the reload once all are ready, fails it on a worker that
 * died or on the deadline. Does nothing without a reload under way. */
void srv_master_reload_poll(master_t *m, const struct pollfd *p, unsigned np, uint64_t now);
/* Fails the reload under way: its workers go, the running ones stay. */
void srv_master_reload_abort(master_t *m, const char *why);
/* Starts a reload when the endpoints added at run time moved past the
 * generation last read and no reload is under way (srv_epapi.h). */
void srv_master_epapi_poll(master_t *m);
/* On start, once the state is open: the running configuration gets the
 * endpoints added at run time merged (kept as it was if that fails: logged). */
void srv_master_epapi_start(master_t *m);

/* srv_master_cluster.c. With cluster:, one look at Redis before the workers
 * start: a wrong password or a port that is not Redis stops the start (-1);
 * Redis not answering does not (the workers start degraded). 0 without
 * cluster:. */
int srv_master_cluster_check(master_t *m);
/* Stopped cleanly with every worker gone: hands the probe leases back and
 * takes the host out of Redis' hosts (not when degraded). */
void srv_master_cluster_leave(master_t *m);

#endif
