/* gateway/gw_master.h: the master process.
 *
 * Reserves the listening ports, forks the workers, waits until every worker
 * accepts, then supervises: a worker that dies is respawned with a backoff
 * (and logged); SIGTERM / SIGINT make every worker drain, then the master
 * exits 0. The master itself serves no request. */
#ifndef GW_MASTER_H
#define GW_MASTER_H

#include "gateway/gw_config.h"

/* Runs until stopped; returns the process exit code. */
int gw_master_run(const gw_config_t *cfg);

#endif
