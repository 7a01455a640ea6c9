/* server/srv_worker.h: one worker process (forked by the master).
 *
 * A worker owns one h2o event loop, single-threaded: its own listening
 * sockets (SO_REUSEPORT; the master made them and keeps them, so the worker
 * that replaces this one takes the same sockets over), its pool of upstream
 * connections and its handler. SIGTERM / SIGINT: stop accepting, finish the
 * requests in flight (at most server.shutdown_grace_ms; kept-alive
 * connections close after their current request), exit 0. */
#ifndef SRV_WORKER_H
#define SRV_WORKER_H

#include "config/cfg.h"
#include "server/srv_listen.h"

typedef struct srv_worker_args {
    const cfg_t *cfg;
    unsigned index;               /* 1-based, for logs */
    unsigned nworkers;
    unsigned slot;                /* its counters' slot in the shared state (1-based) */
    unsigned nslots;              /* slots 1..nslots hold every worker's counters */
    int main_fd;                  /* listening sockets, made by the master */
    int admin_fd;                 /* -1 without an admin listener */
    int ws_fd;                    /* -1 without a second (WebSocket) listener */
    srv_listen_addr_t main_addr;
    srv_listen_addr_t admin_addr;
    srv_listen_addr_t ws_addr;
    int has_admin;
    int has_ws;
    int ready_fd;                 /* written once when the worker accepts, then closed */
} srv_worker_args_t;

/* Runs the worker; returns the process exit code. Called right after fork,
 * before any h2o call in this process (h2o starts threads lazily). */
int srv_worker_main(const srv_worker_args_t *args);

#endif
