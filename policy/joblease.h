/* policy/joblease.h: leased work, once per fleet (with cluster:).
 *
 * Each periodic upstream job of an endpoint (its health probe and its chain
 * probe) is done by the one host that holds the job's lease in Redis; the
 * other hosts apply the holder's results as if they had probed. Given what
 * this host last heard of the lease (its holder, and until when it runs by
 * this host's clock), its own name, the time and whether Redis answers, this
 * decides who does the job now and when to ask Redis again:
 *
 *   ALONE     no cluster: this host does it (as on one host)
 *   HOLDER    this host holds the lease: it does it and shares the results
 *   FOLLOWER  another host holds it: its results are applied here
 *   PENDING   Redis answers but the lease is unknown or lapsed: nobody here
 *             does it until Redis has been asked (a few ms)
 *   LOCAL     Redis is away: this host does it for itself (degraded)
 *
 * A lease lives ttl (three job intervals); the holder renews it at a third
 * of that, a follower asks again when the lease it heard of would lapse, so
 * a holder that stops renewing is replaced within one ttl of its last
 * renewal. Pure: no clock, no I/O; the caller passes the time. */
#ifndef POLICY_JOBLEASE_H
#define POLICY_JOBLEASE_H

#include <stdint.h>

typedef enum policy_joblease_role {
    POLICY_JOBLEASE_ALONE,
    POLICY_JOBLEASE_HOLDER,
    POLICY_JOBLEASE_FOLLOWER,
    POLICY_JOBLEASE_PENDING,
    POLICY_JOBLEASE_LOCAL,
    POLICY_JOBLEASE_ROLE_COUNT
} policy_joblease_role_t;

/* A lease lives this many job intervals. */
#define POLICY_JOBLEASE_INTERVALS 3
/* ... and at least this long (a job every 100 ms must not lease for 300). */
#define POLICY_JOBLEASE_MIN_TTL_MS 3000

/* What the caller knows when it decides. */
typedef struct policy_joblease_view {
    uint8_t cluster;              /* cluster: is configured */
    uint8_t redis_up;             /* this worker's link to Redis answers */
    const char *me;               /* this host's name */
    const char *holder;           /* the holder as last heard ("" or NULL: none) */
    uint64_t until_ms;            /* the lease as last heard runs until then */
} policy_joblease_view_t;

policy_joblease_role_t policy_joblease_role(const policy_joblease_view_t *v, uint64_t now_ms);

/* 1 if a host in role does the job itself (ALONE, HOLDER, LOCAL). */
int policy_joblease_does_job(policy_joblease_role_t role);

/* The lease's ttl for an endpoint whose jobs run every probe_ms and
 * chain_ms (0: that job is off): POLICY_JOBLEASE_INTERVALS of the shorter
 * one that runs, at least POLICY_JOBLEASE_MIN_TTL_MS; 0 when neither runs
 * (nothing to lease). */
uint32_t policy_joblease_ttl_ms(uint32_t probe_ms, uint32_t chain_ms);

/* When to ask Redis again after its answer at now_ms put this host in role
 * (HOLDER: renew at a third of ttl; FOLLOWER: when the lease heard of
 * lapses, or at a third of ttl if sooner; PENDING, LOCAL: a third of ttl);
 * UINT64_MAX for ALONE (never). */
uint64_t policy_joblease_next_ask_ms(policy_joblease_role_t role, uint64_t until_ms, uint32_t ttl_ms,
                                     uint64_t now_ms);

/* "alone", "holder", "follower", "pending", "local" */
const char *policy_joblease_role_name(policy_joblease_role_t role);

#endif
