/* server/srv_housekeep.h: the master's chores on the shared state.
 *
 * Every second: flush LMDB pages to disk and clear reader slots of dead
 * processes. Every ten seconds: apply the event log's retention, and turn the
 * workers' failover counters into one "failover" event per endpoint that
 * failed over (aggregated, never one per request). The master is the only
 * aggregator, so no count is reported twice. */
#ifndef SRV_HOUSEKEEP_H
#define SRV_HOUSEKEEP_H

#include <stdint.h>

#include "config/cfg.h"
#include "state/state.h"

typedef struct srv_housekeep srv_housekeep_t;

/* nslots: the workers' counter slots 1..nslots are summed. */
srv_housekeep_t *srv_housekeep_create(const cfg_t *cfg, state_t *st, unsigned nslots);
/* After a reload: endpoints (network and id) that from also counted keep
 * what it had already reported, so no failover is reported twice or lost. */
void srv_housekeep_carry(srv_housekeep_t *to, const srv_housekeep_t *from);
void srv_housekeep_destroy(srv_housekeep_t *hk);
/* Runs what is due; call at least once a second. */
void srv_housekeep_tick(srv_housekeep_t *hk, uint64_t now_ms);
/* Records a worker_restarted event (and clears its reader slot at once). */
void srv_housekeep_worker_restarted(srv_housekeep_t *hk, unsigned index, int pid, const char *how);

#endif
