/* server/srv_master.h: the master process.
 *
 * Reserves the listening ports, forks the workers, waits until every worker
 * accepts, then supervises: a worker that dies is respawned with a backoff
 * (and logged); SIGTERM / SIGINT make every worker drain, then the master
 * exits 0. The master itself serves no request. */
#ifndef SRV_MASTER_H
#define SRV_MASTER_H

#include "config/cfg.h"

/* Runs until stopped; returns the process exit code. */
int srv_master_run(const cfg_t *cfg);

#endif
