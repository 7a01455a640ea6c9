/* state/state_cluster.h: several sluice hosts sharing their records through
 * Redis (the config's cluster: section).
 *
 * Without cluster: nothing here runs and state/ is LMDB only. With it, each
 * worker process owns one state_cluster_t: two connections to Redis (one for
 * commands, one subscribed to the cluster's channel), driven by the worker's
 * h2o event loop, never blocking it. What Redis holds is the cluster's truth
 * for the shared records (breakers, drains, rate-limit marks, client limit
 * cells, credit ledgers, the event stream); LMDB keeps each host's copy, which
 * its workers read as before and fall back to when Redis is down or slow.
 *
 * The link of a worker to Redis is a state machine (state_cluster.c): DOWN
 * (waiting to reconnect, with a backoff of 100 ms doubling to 5 s),
 * CONNECTING (both connections opening, AUTH, SELECT, scripts loaded,
 * subscribed), UP. A command unanswered for conf->timeout_ms, a lost
 * connection, or a subscription that stopped hearing its own heartbeat takes
 * the link DOWN. The host's mode (shared or degraded) is one LMDB record that
 * the workers move by compare-and-set, so the host logs one cluster_degraded
 * and one cluster_restored event however many workers noticed. */
#ifndef STATE_CLUSTER_H
#define STATE_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include <h2o/multithread.h>
#include <h2o/socket.h>

#include "base/sl_err.h"
#include "state/state.h"
#include "state/state_key.h"

#define STATE_CLUSTER_DEFAULT_PREFIX "sluice:"
#define STATE_CLUSTER_DEFAULT_TIMEOUT_MS 250
#define STATE_CLUSTER_HOST_MAX STATE_HOST_MAX 
#define STATE_CLUSTER_PREFIX_MAX 64

/* The cluster: section, parsed (gateway/ fills it; state/ reads it). */
typedef struct state_cluster_conf {
    char *redis_host;             /* host name or address of the Redis server */
    uint16_t redis_port;
    char *user;                   /* ACL user, NULL for the default user */
    char *password;               /* NULL: no AUTH; a registered secret */
    uint32_t db;                  /* SELECT'ed database */
    char *url_shown;              /* the URL with the password as ***, for logs and --check */
    char *host;                   /* this host's name in the cluster */
    char *prefix;                 /* prefix of every key and channel */
    uint32_t timeout_ms;          /* a command unanswered this long: Redis is slow */
    uint32_t stream_max;          /* the event stream keeps about this many entries */
} state_cluster_conf_t;

/* Connects once, blocking, within timeout_ms: AUTH (when a password is set),
 * SELECT db, PING and INFO server. For --check --connect and the master's
 * start. Errors, with why[] saying what happened (never the password):
 * SL_ERR_IO nothing answered (refused, unreachable, timed out: the caller
 * may carry on degraded); SL_ERR_DENIED the server refused the password or
 * asks for one; SL_ERR_PARSE the server does not speak Redis; SL_ERR_INVALID
 * the database number is refused; SL_ERR_VERSION a Redis older than 5. */
SL_MUST_CHECK sl_err_t state_cluster_probe(const state_cluster_conf_t *conf, uint32_t timeout_ms, char *why,
                                           size_t why_len);

/* For cache.redis: whether Redis bounds its memory so that only keys with
 * an expiry (the response cache's entries, the client-limit cells) are
 * evicted. Blocking, within timeout_ms, like state_cluster_probe. SL_OK
 * with why[] saying the bound and policy; SL_ERR_INVALID with why[] saying
 * what to set (no maxmemory; a policy that never evicts or evicts any
 * key); SL_ERR_IO or SL_ERR_PARSE when Redis could not be asked. */
SL_MUST_CHECK sl_err_t state_cluster_probe_memory(const state_cluster_conf_t *conf, uint32_t timeout_ms, char *why,
                                                  size_t why_len);

/* The master, once its workers are gone after SIGTERM: takes this host out
 * of the hosts set, blocking within timeout_ms, so that the others stop
 * holding its share of the limits back at once (a host that vanishes
 * without saying so may be cut off and spending alone). SL_ERR_IO with
 * why[] if Redis could not be told. */
SL_MUST_CHECK sl_err_t state_cluster_leave(const state_cluster_conf_t *conf, uint32_t timeout_ms, char *why,
                                           size_t why_len);

/* The master, once its workers are gone after SIGTERM: hands back the leases
 * of jobs[0..njobs) ("<network>/<endpoint>") this host holds, each with a
 * compare-and-delete (a lease another host took meanwhile is left alone),
 * and says "r <job> <host>" on the channel so the others ask for it at once
 * rather than when its TTL would lapse. Blocking, within timeout_ms per
 * command; *released counts the leases handed back. SL_ERR_IO with why[]. */
SL_MUST_CHECK sl_err_t state_cluster_leases_release(const state_cluster_conf_t *conf, const char *const *jobs,
                                                    size_t njobs, uint32_t timeout_ms, size_t *released, char *why,
                                                    size_t why_len);

/* ---- the host's mode, in LMDB (read by admin/, moved by the workers) ---- */
typedef enum state_cluster_mode {
    STATE_CLUSTER_OFF = 0,        /* no cluster: section */
    STATE_CLUSTER_STARTING = 1,   /* no worker has reached Redis since the master started */
    STATE_CLUSTER_SHARED = 2,     /* Redis answers: records are shared */
    STATE_CLUSTER_DEGRADED = 3,   /* Redis down or slow: each host on its own */
} state_cluster_mode_t;

typedef struct state_cluster_mode_rec {
    uint8_t mode;                 /* a state_cluster_mode_t */
    uint64_t since_ms;            /* wall clock */
    uint32_t hosts;               /* hosts seen in the last heartbeats (>= 1) */
    /* version 2: the events are held to one degraded/restored pair per
     * STATE_CLUSTER_EVENT_EVERY_MS, the falls in between are counted */
    uint8_t reported;             /* this degraded spell has its cluster_degraded event */
    uint64_t event_ms;            /* when the last cluster_degraded event was logged */
    uint32_t flaps;               /* falls since then without an event of their own */
    uint64_t flap_ms;             /* ... and how long they lasted in all (the ones over) */
} state_cluster_mode_rec_t;

/* At most one cluster_degraded (and its cluster_restored) per host in this
 * long: a Redis that comes and goes must not push breaker history out of
 * the event log. The falls in between are folded into the next event. */
#define STATE_CLUSTER_EVENT_EVERY_MS 60000

extern const state_schema_t state_cluster_mode_schema;

/* The master, at start: the mode becomes STARTING (whatever a previous run
 * left), without an event; the hosts last seen are kept. */
SL_MUST_CHECK sl_err_t state_cluster_mode_reset(state_t *st, uint64_t now_ms);
/* Logs the cluster_degraded event held back by the one-pair-a-minute rule
 * when the host is still degraded once the minute is over (any worker, at
 * its tick: the record's compare-and-set makes it one event). */
void state_cluster_mode_tick(state_t *st, uint64_t now_ms);
/* Reads the host's mode record in its own read transaction; OFF if absent. */
state_cluster_mode_rec_t state_cluster_mode_get(state_t *st);
/* "off", "starting", "shared", "degraded" */
const char *state_cluster_mode_name(state_cluster_mode_t m);

/* ---- a worker's link ---- */
typedef struct state_cluster state_cluster_t;

/* Creates the worker's link and starts connecting (asynchronously: the call
 * returns at once). A Redis host name is resolved on h2o's resolver threads
 * through getaddr_receiver (NULL: resolved by hiredis, blocking). st is the
 * worker's LMDB handle: the cluster attaches to it (state_cluster_of) and
 * keeps the host's copies there. conf, loop and st must outlive it. */
state_cluster_t *state_cluster_create(const state_cluster_conf_t *conf, h2o_loop_t *loop,
                                      h2o_multithread_receiver_t *getaddr_receiver, state_t *st);
/* Closes both connections; pending operations are dropped without their
 * callbacks. NULL is allowed. */
void state_cluster_destroy(state_cluster_t *cl);
/* The cluster attached to st, NULL if none. */
state_cluster_t *state_cluster_of(const state_t *st);
/* 1 while this worker's link is UP. */
int state_cluster_up(const state_cluster_t *cl);
/* Hosts that sent a heartbeat within the last STATE_CLUSTER_HOST_TTL_MS, as
 * last seen (at least 1). Local enforcement divides limits by it. */
#define STATE_CLUSTER_HOST_TTL_MS 10000
/* A host whose heartbeat (every second) is older than this is taken to be
 * cut off: the others hold its share of each limit back (gcra script). */
#define STATE_CLUSTER_ALIVE_MS 3000
uint32_t state_cluster_hosts(const state_cluster_t *cl);
/* This host's name. */
const char *state_cluster_host(const state_cluster_t *cl);
/* The endpoint records ("<network>/<endpoint>") this host uses: read from
 * Redis each time the link comes up (keys are copied). */
void state_cluster_watch(state_cluster_t *cl, const char *const *keys, size_t n);
/* fn(data) runs when a shared record changed on this host's copy because
 * another worker or host changed it (a message on the channel), so that the
 * worker's snapshot can be refreshed at once. */
void state_cluster_on_change(state_cluster_t *cl, void (*fn)(void *data), void *data);
/* Makes this worker the host's events worker (on: 1): it ships the host's
 * events to the Redis stream and appends the other hosts' to the log. One
 * worker per host does it (the gateway picks worker 1). */
void state_cluster_events_worker(state_cluster_t *cl, int on);
/* ---- leases from Redis (state_cluster_budget.c) ---- */
/* Client-limit cells: one per window of a caller's limit. */
#define STATE_CLUSTER_MAX_CELLS 3
typedef struct state_cluster_cell {
    const char *key;              /* "<identity>/<bucket>/<window>" */
    uint64_t interval_us;         /* GCRA's emission interval I ... */
    uint64_t capacity_us;         /* ... and capacity C (policy/limiter.c's shape) */
    uint64_t window_us;           /* a refusal's wait is at most this */
} state_cluster_cell_t;

typedef struct state_cluster_lease {
    int ok;                       /* 0: Redis did not answer (the caller decides alone) */
    uint32_t granted;             /* calls leased (0: refused) */
    uint64_t retry_us;            /* refused: until `need` calls fit */
    uint64_t redis_now_us;        /* Redis' clock when it decided */
    uint64_t tat_us[STATE_CLUSTER_MAX_CELLS]; /* each cell as the lease left it (Redis' clock) */
} state_cluster_lease_t;

typedef void (*state_cluster_lease_fn)(void *data, const state_cluster_lease_t *r);
/* Leases up to want calls (at least need, or none) from the cells, in one
 * script run by Redis with its own clock; fn runs once with the answer (ok
 * 0 when Redis failed meanwhile). 0 if asked, -1 if the link is not up (fn
 * is not called). */
int state_cluster_limit_lease(state_cluster_t *cl, const state_cluster_cell_t *cells, size_t n, uint32_t need,
                              uint32_t want, state_cluster_lease_fn fn, void *data);

/* Credit ledgers: one per window of an endpoint's budget. */
#define STATE_CLUSTER_MAX_LEDGERS 4
typedef struct state_cluster_ask {
    const char *key;              /* "<network>/<endpoint>/<window>" */
    uint64_t start_ms, end_ms;    /* the window, by Redis' clock as this host knows it */
    uint64_t budget;
    uint64_t need;                /* the call's cost in the window's units */
    uint64_t size;                /* the lease wanted (at least need) */
} state_cluster_ask_t;

typedef struct state_cluster_credit {
    int ok;                       /* 0: Redis did not answer */
    int granted;                  /* every window granted (else none spent) */
    size_t n;
    struct {
        uint64_t grant;
        uint64_t start_ms;        /* the window Redis counted in (a caller behind gets the newer one) */
        uint64_t spent;           /* after this lease */
        int event;                /* 0, 1: budget_low now, 2: budget_exhausted now (once per window) */
        uint8_t low, exhausted;
    } windows[STATE_CLUSTER_MAX_LEDGERS];
} state_cluster_credit_t;

typedef void (*state_cluster_credit_fn)(void *data, const state_cluster_credit_t *r);
/* Leases credits from every window of asks[0..n) or none; low_pct: the
 * share of a budget left at which budget_low is due. The host's copies of
 * the ledgers are updated before fn runs. 0 if asked, -1 if the link is not
 * up (fn is not called). */
int state_cluster_credit_lease(state_cluster_t *cl, const state_cluster_ask_t *asks, size_t n, uint32_t low_pct,
                               state_cluster_credit_fn fn, void *data);
/* The ledgers this host uses: the events worker merges them with Redis each
 * time the link comes up (what the host spent alone goes in; a Redis that
 * lost them gets the host's copy back) and refreshes the host's copies
 * every 2 s (so admin/ shows the cluster's spending). */
void state_cluster_watch_ledgers(state_cluster_t *cl, const char *const *keys, size_t n);
void state_cluster_ledgers_sync(state_cluster_t *cl);
/* Keys, in the ledgers database, of the host's copy of Redis' ledger
 * ("cl/<key>") and of what it spent alone ("cu/<key>"). */
void state_cluster_ledger_mirror_key(char *out, size_t cap, const char *key);
void state_cluster_ledger_unsynced_key(char *out, size_t cap, const char *key);
/* Wall-clock ms by Redis' clock as last measured (this host's own without a
 * cluster): the credit windows are bounded with it. */
uint64_t state_cluster_now_ms(const state_cluster_t *cl);

/* ---- the floor of heads served (state_cluster_floor.c) ---- */
/* Raises the network's floor of heads served (state_chain_rec_t) in Redis
 * to at least floor[] (per head kind) and publishes it when it rose: every
 * host's workers raise their host's copy in LMDB on hearing it, within one
 * Redis round trip. The cluster's floor, when the script answers, raises
 * this host's copy too (floor[] all 0 only reads it). Asynchronous; 0 if
 * sent, -1 if the link is not up (the host's floor stands alone then). */
int state_cluster_floor_raise(state_cluster_t *cl, const char *network, const uint64_t floor[STATE_CHAIN_KINDS]);

/* ---- endpoints added at run time (state_cluster_epapi.c) ---- */
struct state_epapi_rec;
/* Writes rec (removed 1: its tombstone, rec->updated_ms the removal's
 * time) to Redis and tells every host; 0 if sent, -1 if the link is not up
 * (the events worker pushes the host's copy when it returns). */
int state_cluster_epapi_publish(state_cluster_t *cl, const struct state_epapi_rec *rec, int removed);
/* fn(data) runs in the events worker when the host's copy of the entries
 * changed because another host changed them (the master must apply them). */
void state_cluster_epapi_on_change(state_cluster_t *cl, void (*fn)(void *data), void *data);

/* ---- leased jobs, once per fleet (state_cluster_jobs.c) ---- */
/* Redis' answer to a lease ask. */
typedef struct state_cluster_job_answer {
    int ok;                       /* 0: Redis did not answer (nothing below is known) */
    int held;                     /* this host holds the lease (taken now or extended) */
    int acquired;                 /* ... taken now, with a new token (not an extension) */
    char holder[STATE_CLUSTER_HOST_MAX + 1]; /* the host holding it */
    uint64_t token;               /* its fencing token */
    uint64_t ttl_left_ms;         /* it runs this much longer from Redis' answer */
    char prev[STATE_CLUSTER_HOST_MAX + 1];   /* acquired: the host that held it last ("" none) */
} state_cluster_job_answer_t;

typedef void (*state_cluster_job_fn)(void *data, const char *job, const state_cluster_job_answer_t *a);
/* Takes the job's lease for this host for ttl_ms if nobody holds it (a new
 * token), extends it if this host holds it, else says who does. fn runs
 * once with the answer (a->ok 0 when Redis failed meanwhile), never after
 * state_cluster_destroy. 0 if asked, -1 if the link is not up (fn is not
 * called). */
int state_cluster_job_ask(state_cluster_t *cl, const char *job, uint32_t ttl_ms, state_cluster_job_fn fn, void *data);

/* What a job's holder found, for the other hosts to apply as their own. */
typedef struct state_cluster_job_result {
    char job[STATE_KEY_MAX];      /* "<network>/<endpoint>" */
    char host[STATE_CLUSTER_HOST_MAX + 1]; /* the holder (filled on receipt) */
    uint64_t token;               /* the holder's fencing token */
    uint64_t head, head_at_ms;    /* the health probe's head */
    uint32_t ewma_us;             /* its latency EWMA */
    uint32_t failures;            /* probes failed in a row */
    uint64_t safe, finalized, chain_at_ms, hash_height; /* the chain probe's */
    char head_hash[67], head_parent[67];
    char chain_id[48];            /* the endpoint's chain as the holder last heard it, "" unknown */
    uint64_t chain_id_at_ms;      /* when (0: never) */
    int released;                 /* 1: host handed the lease back (it stopped): ask for it now; the
                                     result fields are empty */
} state_cluster_job_result_t;

/* Publishes r on the cluster's channel (one PUBLISH). 0 if sent, -1 if the
 * link is not up. */
int state_cluster_job_publish(state_cluster_t *cl, const state_cluster_job_result_t *r);
typedef void (*state_cluster_job_result_fn)(void *data, const state_cluster_job_result_t *r);
/* fn runs, on the events worker only, with each result another host
 * published. */
void state_cluster_on_job(state_cluster_t *cl, state_cluster_job_result_fn fn, void *data);

/* Commands this worker has sent to Redis (for the benchmark's count). */
uint64_t state_cluster_commands(const state_cluster_t *cl);
/* Writes this worker's count of Redis commands to its slot ("cluster/<slot>"
 * in the stats database) for /metrics; the worker calls it every second. */
SL_MUST_CHECK sl_err_t state_cluster_counters_put(state_cluster_t *cl, unsigned slot);
/* The commands every worker of this host sent (slots 1..nworkers), inside a
 * snapshot (state_read_begin). */
uint64_t state_cluster_commands_sum(state_t *st, unsigned nworkers);
/* The error replies they got from Redis (each one decided locally). */
uint64_t state_cluster_errors_sum(state_t *st, unsigned nworkers);

#endif
