/* pool/pool_int.h: pool/ internal types, for the pool/ sources and their tests only. */
#ifndef POOL_INT_H
#define POOL_INT_H

#include <netdb.h>
#include <openssl/ssl.h>

#include "base/sl_buf.h"
#include "wire/url.h"
#include "pool/pool.h"
#include "policy/attempt.h"
#include "policy/cost.h"
#include "policy/demote.h"
#include "policy/hedge.h"
#include "policy/pressure.h"
#include "policy/rolling.h"
#include "policy/score.h"
#include "policy/shape.h"
#include "pool/pool_http.h"
#include "state/state.h"
#include "state/state_key.h"

#define POOL_MAX_ADDRS 8
#define POOL_IDLE_TIMEOUT_MS 30000     /* below common upstream keep-alive timeouts */
#define POOL_MAX_IDLE_PER_ENDPOINT 128
#define POOL_WRITE_REUSE_MAX_IDLE_MS 2000 /* writes avoid connections idle longer */
#define POOL_DNS_REFRESH_MS 60000

typedef struct pool_endpoint pool_endpoint_t;

/* Where an endpoint's addresses come from (pool_dns.c). */
typedef enum pool_dns_state {
    POOL_DNS_LITERAL,             /* an IP address in the URL: nothing to look up */
    POOL_DNS_FIRST,               /* the first lookup is under way: connections wait for it */
    POOL_DNS_OK,                  /* addresses known (refreshed while in use) */
    POOL_DNS_FAILED,              /* none known, the last lookup failed: out of the plan, retried */
} pool_dns_state_t;

/* A delayed callback (pool_delay.c), embedded in its owner. */
typedef struct pool_delay {
    h2o_linklist_t link;
    uint64_t due_ms;
    void (*cb)(struct pool_delay *d);
} pool_delay_t;
typedef struct pool_conn pool_conn_t;
typedef struct pool_exchange pool_exchange_t;

typedef void (*pool_exchange_cb)(pool_exchange_t *ex);

/* One HTTP request/response on one connection, embedded in its owner. */
struct pool_exchange {
    pool_endpoint_t *ep;
    pool_conn_t *conn;            /* NULL once finished */
    h2o_iovec_t bufs[3];          /* request prefix, Content-Length line, body */
    char clen[48];
    int is_write;
    pool_exchange_cb cb;
    void *data;
    h2o_timeout_entry_t phase_timer;   /* connect, then first byte */
    h2o_timeout_entry_t attempt_timer;
    uint64_t started_us;

    /* result */
    pool_fail_t fail;
    int sent;                     /* request bytes were handed to the kernel */
    int reused;                   /* ran on a kept-alive connection */
    int got_bytes;                /* some answer bytes arrived */
    int write_done;               /* the whole request left (h2o no longer holds bufs) */
    int peer_closed;              /* the upstream closed its side */
    pool_http_head_t head;
    sl_buf_t body;                /* decoded body (chunked, or delimited by EOF), or */
    h2o_buffer_t *in;             /* the socket's buffer, taken whole: the body as it arrived */
    size_t charged;               /* bytes of the body charged to pool->budget; the owner
                                   * takes body or in with it (pool_call_keep_exchange) */
    uint32_t latency_us;
};

typedef enum pool_conn_state {
    POOL_CONN_CONNECTING,
    POOL_CONN_HANDSHAKE,
    POOL_CONN_SENDING,            /* request written or being written; awaiting the head */
    POOL_CONN_BODY,               /* head parsed; reading the body */
    POOL_CONN_IDLE,
    POOL_CONN_STATE_COUNT
} pool_conn_state_t;

/* 1 if from -> to is an edge of the connection's machine (pool_conn.c's one
 * writer of ->state checks every transition against it; a connection is
 * created CONNECTING). */
int pool_conn_edge_allowed(pool_conn_state_t from, pool_conn_state_t to);

struct pool_conn {
    pool_endpoint_t *ep;
    h2o_socket_t *sock;
    pool_conn_state_t state;
    pool_exchange_t *ex;          /* the exchange in progress, NULL when idle */
    h2o_linklist_t idle_link;     /* in ep->idle while IDLE */
    h2o_timeout_entry_t idle_timer;
    uint64_t idle_since_ms;
    h2o_linklist_t wait_link;     /* in ep->dns_waiting while its address is being looked up (sock NULL) */
    uint32_t requests;            /* served on this connection */
    pool_chunked_t chunked;
};

enum { POOL_PROBE_NONE, POOL_PROBE_HEALTH, POOL_PROBE_BREAKER };

#define POOL_CREDIT_LOW_PCT 10     /* budget_low when this share of a window is left */

/* This worker's lease on an endpoint's credit budget (pool_credit.c). */
typedef struct pool_credit {
    const policy_cost_profile_t *profile;
    int active;                   /* the endpoint has a budget */
    char key[POLICY_CREDIT_WINDOW_COUNT][STATE_KEY_MAX];
    uint64_t window_start[POLICY_CREDIT_WINDOW_COUNT]; /* the window the lease belongs to ... */
    uint64_t window_end[POLICY_CREDIT_WINDOW_COUNT];   /* ... and its end (no calendar math per call) */
    uint64_t remaining[POLICY_CREDIT_WINDOW_COUNT];    /* leased, not yet spent */
    uint64_t lacking_until_ms;    /* the ledger said no: skip the endpoint until then */
    uint32_t nworkers;            /* a degraded worker spends 1/nworkers of what the ledger had left */
    uint64_t seen_start[POLICY_CREDIT_WINDOW_COUNT];   /* the ledger as this worker last saw it: its window ... */
    uint64_t seen_spent[POLICY_CREDIT_WINDOW_COUNT];   /* ... and what was spent in it */
    uint64_t local_start[POLICY_CREDIT_WINDOW_COUNT];  /* degraded: the window of the local allowance ... */
    uint64_t local_left[POLICY_CREDIT_WINDOW_COUNT];   /* ... and what is left of it */
    uint64_t retry_shared_ms;     /* degraded: when the ledger is tried again */
    /* cluster: the ledgers are Redis' (pool_credit_cluster.c) */
    int asking;                   /* a lease from Redis is under way */
    uint64_t quiet_until_ms;      /* Redis lacked credits for an early lease: none until then */
    h2o_linklist_t waiters;       /* pool_credit_wait_t: calls waiting for that lease */
} pool_credit_t;

/* A call waiting for credits from Redis (cluster:). */
typedef struct pool_credit_wait {
    h2o_linklist_t link;
    void (*cb)(struct pool_credit_wait *w);
} pool_credit_wait_t;

/* What this worker knows about an endpoint's health (pool_health.c). */
typedef struct pool_health {
    char key[STATE_KEY_MAX];      /* state_key_endpoint: its shared record */
    char stats_key[STATE_KEY_MAX]; /* state_key_stats: this worker's counters */
    state_endpoint_rec_t shared;  /* snapshot of the shared record (refreshed every ~50 ms) */
    policy_window_t window;       /* this worker's rolling window of outcomes */
    policy_window_t rl_window;    /* ... of rate-limit refusals (a "failure" here is a 429) */
    policy_score_t score;         /* last computed (pool_rank.c) */
    state_stats_rec_t stats;      /* this worker's cumulative counters */
    int dirty;                    /* stats changed since the last flush */
    uint64_t last_ok_ms;          /* wall ms of the last attempt here not refused with a rate limit */
    uint64_t rl_written_until_ms; /* last rate-limit mark this worker wrote */
    uint64_t demote_written_until_ms; /* last demotion this worker wrote */
    state_counters_rec_t *per_method; /* requests, credits, refusals per method (POOL_MC_*) */
    char per_method_key[STATE_KEY_MAX]; /* state_key_per_method */
    int per_method_dirty;
    pool_exchange_t probe;        /* a probe this worker sends (pool_probe.c) */
    int probing;                  /* POOL_PROBE_*: which, if one is under way */
    unsigned moving;              /* breaker moves being decided by Redis (bit per from x to) */
    int claiming;                 /* a half-open takeover being decided by Redis */
} pool_health_t;

/* Live call and credit rates of an endpoint with a budget (pool_pressure.c),
 * over POOL_RATE_WINDOW_MS: what the capacity forecast extrapolates. */
#define POOL_RATE_WINDOW_MS 10000
enum { POOL_RATE_CALLS, POOL_RATE_BILLED, POOL_RATE_THROUGHPUT, POOL_RATE_COUNT };

struct pool_endpoint {
    const pool_endpoint_conf_t *conf;
    pool_network_t *net;
    int index;                    /* position in the network's config */
    wire_url_t url;
    SSL_CTX *ssl_ctx;             /* NULL for http:// */
    sl_buf_t prefix;              /* request line + fixed headers, up to Content-Length */

    /* addresses (pool_dns.c) */
    struct sockaddr_storage addrs[POOL_MAX_ADDRS];
    socklen_t addrlens[POOL_MAX_ADDRS];
    size_t naddrs;
    size_t next_addr;
    pool_dns_state_t dns;
    uint64_t resolved_at_ms;      /* monotonic: the last lookup that answered */
    h2o_hostinfo_getaddr_req_t *resolving; /* the lookup under way, or NULL */
    uint8_t lookup_late;          /* it ran past its deadline (already counted as failed) */
    uint8_t dns_timed_out;        /* FAILED because the last lookup did not answer in time */
    uint32_t dns_failures;        /* lookups failed in a row */
    uint32_t dns_retry_ms;        /* the next retry's delay (doubles up to 30 s) */
    pool_delay_t dns_timer;       /* the lookup's deadline, or the retry */
    h2o_linklist_t dns_waiting;   /* pool_conn_t waiting for the first lookup */

    h2o_linklist_t idle;          /* pool_conn_t, most recently used first */
    size_t nidle;
    uint32_t inflight;            /* exchanges in progress in this worker */
    uint32_t max_inflight;        /* this worker's share of conf->max_inflight */
    pool_health_t health;
    pool_credit_t credit;
    policy_hedge_hist_t hedge_hist[POLICY_CLASS_COUNT]; /* answer latencies per method class (pool_hedge.c) */
    uint32_t hedges_lost_in_row;  /* hedge races lost here without a byte of answer, since its last answer */
    policy_roll_t rate_roll;      /* calls, billed and throughput credits spent here */
    uint64_t rate_v[POLICY_ROLL_SLOTS][POOL_RATE_COUNT];
};

/* This worker's part of a network's pressure (pool_pressure.c). */
typedef struct pool_share pool_share_t;

typedef struct pool_pressure {
    policy_pressure_t local;      /* the shared level as last seen, and this worker's calm */
    state_pressure_rec_t shared;  /* the shared record as last read */
    uint32_t depth;               /* calls admitted here and not settled */
    policy_roll_t settle_roll;    /* settle times (a histogram per slot) */
    uint64_t settle_v[POLICY_ROLL_SLOTS][POLICY_SETTLE_BUCKETS];
    policy_roll_t try_roll;       /* tries and refusals */
    uint64_t try_v[POLICY_ROLL_SLOTS][2];
    uint64_t polls_merged, calls_saved, waits;
    state_pressure_slot_rec_t *others; /* the other workers' slots summed (last snapshot) */
    state_pressure_slot_rec_t *written; /* what this worker last flushed */
    char slot_key[STATE_KEY_MAX]; /* state_key_pressure_slot: this worker's inputs */
    uint64_t flushed_ms;
    policy_pressure_inputs_t inputs; /* what the last tick computed */
} pool_pressure_t;

struct pool_network {
    pool_t *pool;
    const pool_network_conf_t *conf;
    pool_endpoint_t *endpoints;
    size_t nendpoints;
    h2o_timeout_t connect_timeout;
    h2o_timeout_t first_byte_timeout;
    h2o_timeout_t attempt_timeout;
    h2o_timeout_t request_timeout;
    uint32_t max_attempts;
    state_network_level_t level;  /* last usable-endpoint level this worker saw (pool_health.c) */
    uint8_t level_stale;          /* a drain flag changed in the last snapshot: re-check the level */
    uint8_t order[POOL_MAX_ENDPOINTS]; /* the plan: endpoint indices, best first (pool_rank.c) */
    size_t norder;                /* ranked, usable and not excluded */
    int primary;                  /* current first choice, -1 if none */
    int challenger;               /* an endpoint that has been scoring better, -1 */
    uint64_t challenger_since_ms;
    uint64_t best_head;           /* highest fresh head among the endpoints */
    pool_pressure_t pressure;
    struct pool_share *share;     /* each identity's part of the depth (pool_share.c) */
    h2o_linklist_t waiters;       /* confirmation polls waiting for a slot, oldest first */
    uint8_t waking;               /* pool_call_wake_waiters is running (no nesting) */
    h2o_timeout_t merge_timeout;  /* pressure.merge_window_ms */
    h2o_linklist_t merges;        /* pool_merge_t groups filling up (pool_merge.c) */
    policy_roll_t hedge_roll;     /* upstream requests and hedges of this worker (pool_hedge.c) */
    uint64_t hedge_v[POLICY_ROLL_SLOTS][2];
    h2o_linklist_t held_slots;    /* slots of cancelled hedge losers, until their deadline (pool_hedge.c) */
    h2o_linklist_t coalesce;      /* pool_coalesce_t: identical reads in flight (pool_coalesce.c) */
    size_t ncoalesce;
};

struct pool {
    h2o_loop_t *loop;
    h2o_multithread_receiver_t *getaddr_receiver;
    pool_network_t *networks;
    size_t nnetworks;
    size_t max_response_bytes;
    sl_budget_t *budget;          /* NULL: answers are not accounted (unit tests) */
    h2o_timeout_t idle_timeout;
    h2o_timeout_t zero_timeout;   /* deferred callbacks */
    state_t *state;               /* NULL: no shared state (unit tests) */
    uint32_t slot;                /* this worker's stats slot (1-based worker index) */
    uint32_t nworkers;            /* slots 1..nworkers (pressure inputs are summed over them) */
    h2o_linklist_t delays;        /* pool_delay_t, soonest first */
    h2o_timeout_t delay_timeout;
    h2o_timeout_entry_t delay_tick;
    h2o_timeout_t tick_timeout;   /* snapshot refresh / flush / probes */
    h2o_timeout_entry_t tick;
    uint64_t last_flush_ms;
    uint32_t refresh_ms;
    uint32_t flush_ms;
};

/* An answer's bytes, kept until the call is released (items point into
 * them): bytes of sluice's own, or the socket buffer an answer was read
 * into, taken whole so it is not copied (pool_conn.c). */
typedef struct pool_body {
    sl_buf_t own;
    h2o_buffer_t *in;             /* non-NULL: the bytes are in->bytes[0..in->size) */
} pool_body_t;

static inline const char *pool_body_base(const pool_body_t *b)
{
    return b->in != NULL ? b->in->bytes : b->own.base != NULL ? b->own.base : "";
}

static inline size_t pool_body_len(const pool_body_t *b)
{
    return b->in != NULL ? b->in->size : b->own.len;
}

void pool_body_dispose(pool_body_t *b);

/* An exchange's body, wherever it is kept. */
static inline const char *pool_exchange_bytes(const pool_exchange_t *ex)
{
    return ex->in != NULL ? ex->in->bytes : ex->body.base != NULL ? ex->body.base : "";
}

static inline size_t pool_exchange_len(const pool_exchange_t *ex)
{
    return ex->in != NULL ? ex->in->size : ex->body.len;
}

/* One client call walking the plan (pool_call.c); answers applied to its
 * items by pool_answer.c. */
typedef struct pool_shared_body pool_shared_body_t; /* pool_coalesce.c */

struct pool_call {
    pool_network_t *net;
    pool_item_t *items;
    size_t nitems;
    int batch;
    pool_call_cb cb;
    void *data;
    h2o_timeout_entry_t deadline;     /* timeouts.request_ms */
    h2o_timeout_entry_t defer;        /* finishing outside pool_call_start */
    uint64_t deadline_ms;             /* monotonic: when timeouts.request_ms runs out */
    pool_exchange_t ex;
    int ex_active;
    int finished;
    uint32_t attempts;
    uint8_t tried[POOL_MAX_ENDPOINTS];
    int retry_same;                   /* endpoint allowed once more (stale connection), or -1 */
    int stale_retry_used;
    int pinned;                       /* endpoint to try first (tx pin), or -1 */
    uint32_t round;                   /* rounds over the endpoints so far (retries) */
    uint8_t no_retry[POOL_MAX_ENDPOINTS]; /* not in later rounds (said "unsupported") */
    pool_delay_t backoff;             /* the wait before the next round */
    pool_credit_wait_t credit_wait;   /* cluster: waiting for a credit lease from Redis */
    uint64_t rate_limited_until_ms;   /* ... skipped as rate-limited: the earliest end */
    sl_buf_t req;                     /* upstream body when it is not the client's bytes */
    sl_buf_t verify_req;              /* the by-hash check of a "nonce too low" */
    uint32_t *sent;                   /* indices of the items in the current attempt */
    size_t nsent;
    pool_body_t *bodies;              /* answers kept until release (items point into them) */
    size_t nbodies;
    size_t charged;                   /* their bytes charged to pool->budget */
    pool_shared_body_t *shared;       /* a coalesced group's answer, held with the others (pool_coalesce.c) */
    pool_attempt_rec_t log[POOL_MAX_ATTEMPT_LOG];
    size_t nlog;
    uint64_t started_us;              /* admitted (pressure: settle time) */
    uint8_t counted;                  /* in the network's depth: holds an upstream slot (pool_pressure.c) */
    uint8_t timed;                    /* a client's call: its settle time and try are counted */
    uint8_t share_overflow;           /* held in pool_share.c's overflow group, not its own row */
    uint64_t owner;                   /* the caller's identity (0: none): its share of the depth */
    uint8_t carrier;                  /* sluice's own merged call, not a client's (pool_merge.c) */
    h2o_linklist_t wait_link;         /* in net->waiters while waiting for a slot */
    uint8_t waited;                   /* it waited at least once (counted once) */
    struct pool_merge *merge;         /* the merged call this poll rides in, or NULL */
    uint32_t merge_index;             /* ... as its member number */
    int renumbered;                   /* a single call sent with id 0: its id is not portable */
    const char *body;                 /* the current attempt's upstream body (a hedge sends the same) */
    size_t body_len;
    struct {
        pool_exchange_t ex;           /* the hedge: the same body at the next endpoint (pool_hedge.c) */
        uint8_t state;                /* pool_hedge_state_t; written only by pool_hedge.c's hedge_move */
        pool_delay_t timer;           /* the hedge delay after the first attempt started (ARMED) */
        int16_t primary;              /* endpoint of the attempt being hedged, -1 */
        int16_t ep;                   /* endpoint of the hedge, -1 */
    } hedge;
    struct pool_coalesce *coalesce;   /* the identical read this call leads or waits on (pool_coalesce.c) */
    h2o_linklist_t coalesce_link;     /* in the group's waiters while waiting */
    uint8_t coalesced;                /* it was answered by another call's upstream answer */
    /* a failure that may be the request's own (policy/shape.h), held until
     * the next endpoint's attempt settles it */
    struct {
        int16_t ep;                   /* -1: nothing held */
        uint8_t shape;                /* policy_shape_t */
        uint8_t outcome;              /* state_outcome_t it counts as if it was the endpoint's */
        uint32_t latency_us;
    } held;
};

/* One finished attempt of a call (pool_attempt.c, pool_answer.c, pool_held.c):
 * pool/ gathers its facts, policy_attempt_decide (policy/attempt.h) returns
 * the actions, pool/ carries them out. */
/* Judges the finished exchange ex of call (an HTTP answer, whose body is
 * bodies[nbodies-1]; a transport failure; or a start that failed, ex->fail
 * set): the items it carried, the endpoint's record, its rate-limit mark and
 * demotion. Returns 0 if the attempt does not count (a kept-alive connection
 * closed before it answered: the same endpoint is tried once more, nothing
 * was recorded; the caller logs no attempt), else 1. */
int pool_attempt_judge(pool_call_t *call, pool_exchange_t *ex);

/* Where one carried item's answer is, as pool_answer_facts found it. */
typedef struct pool_answer_obj {
    const char *ans;              /* its response object in the body, NULL if none */
    uint32_t len;
    wire_span_t id;               /* the id inside it */
    wire_span_t error;            /* a single call's error member ... */
    uint8_t foreign;              /* ... when its id is not the one sent: the error is given at id null */
    char txid[128];               /* a pending write's transaction id ("" if none could be read) */
} pool_answer_obj_t;

/* pool_answer.c: the facts of an HTTP answer (the body's shape, f->obj, each
 * carried item's member in fi[] and where it is in objs[], both in the order
 * of call->sent); then the items' actions carried out at endpoint e. */
void pool_answer_facts(pool_call_t *call, policy_attempt_facts_t *f, policy_item_facts_t *fi,
                       pool_answer_obj_t *objs);
void pool_answer_carry(pool_call_t *call, pool_endpoint_t *e, const policy_attempt_actions_t *a,
                       pool_answer_obj_t *objs);
/* An answer's Retry-After (seconds or an HTTP date), in ms capped at a day; 0 if none. */
uint32_t pool_answer_retry_after_ms(const pool_http_head_t *h);
/* Settles every pending item once no further attempt will be made. */
void pool_answer_exhaust(pool_call_t *call, pool_outcome_t forced);

/* pool_held.c: the endpoint's record of the attempt at ep (a->record), and
 * the penalty held back from an earlier endpoint (a->held): released as
 * that endpoint's, or spared when the call proved the request's shape. */
void pool_held_carry(pool_call_t *call, int ep, const policy_attempt_actions_t *a, uint32_t latency_us);
/* Records a held penalty nobody settled as the endpoint's (no other endpoint
 * was tried: without a second opinion a fault must still count). */
void pool_held_release(pool_call_t *call);

/* pool_tick.c: the worker's tick (snapshot of the shared records, counters
 * flush, probes, ranking, waiters); init loads this worker's slot. */
void pool_tick_init(pool_t *pool);
void pool_tick_dispose(pool_t *pool);
/* Re-reads the shared records now (tests, admin actions, another host). */
void pool_tick_refresh(pool_t *pool);

/* pool_health.c: outcomes, breaker and rate-limit mark transitions, the
 * network's level. */
/* 1 if the plan may send to ep now (breaker closed, not drained, not
 * rate-limited, its host name not failing to resolve). */
int pool_health_usable(pool_endpoint_t *ep, uint64_t now_ms);
/* Records one attempt's outcome; failover = the call moved on after it. */
void pool_health_record(pool_endpoint_t *ep, state_outcome_t outcome, uint32_t latency_us, int failover);
/* Marks ep rate-limited for retry_ms (0: a backoff of our own). */
void pool_health_rate_limited(pool_endpoint_t *ep, uint32_t retry_ms);
/* Re-checks the network's level (redundancy_low / network_down /
 * network_up) from shared state; one event per change (CAS). */
void pool_health_network_check(pool_network_t *net);
/* Moves ep's shared breaker from -> to if it still says from (CAS), with its
 * event; returns 1 if this call made the transition at once. With cluster:
 * the move is decided by Redis, later: then is what follows it once made
 * (at once too, when it is made at once). */
typedef enum pool_then {
    POOL_THEN_NONE,
    POOL_THEN_RESET_WINDOW,       /* the rolling window starts again (an open) */
    POOL_THEN_PROBE,              /* send the half-open probe (this worker won the claim) */
} pool_then_t;
int pool_health_breaker_move(pool_endpoint_t *ep, policy_breaker_state_t from, policy_breaker_state_t to,
                             const char *reason);
int pool_health_breaker_move_then(pool_endpoint_t *ep, policy_breaker_state_t from, policy_breaker_state_t to,
                                  const char *reason, pool_then_t then);

/* pool_credit.c: the credits the attempt in call->sent costs at endpoint ep:
 * 1 taken, 0 lacking (ep marked tried), -1 waiting for Redis (on_wait; a
 * NULL on_wait, for a hedge, gets 0 and leaves ep untried). */
int pool_credit_take_call(pool_call_t *call, int ep, void (*on_wait)(pool_credit_wait_t *w));

/* pool_call.c, for pool_hedge.c: the next endpoint of call's plan (-1:
 * none); the exchange callback of a call's attempts; an attempt that could
 * not start (fail) at ep. */
int pool_call_plan_next(pool_call_t *call);
void pool_call_on_exchange_done(pool_exchange_t *ex);
void pool_call_start_failed(pool_call_t *call, int ep, pool_exchange_t *ex, pool_fail_t fail);
/* Appends one line to the call's attempt log (counts the attempt). */
void pool_call_log_attempt(pool_call_t *call, int ep, pool_fail_t fail, int status, uint32_t latency_us,
                           uint8_t flags);

/* pool_hedge.c: hedged reads. A call's hedge is a state machine:
 *   IDLE --arm--> ARMED --timer, sent--> SENT --its exchange done or cancelled--> IDLE
 *   ARMED --disarmed (the attempt ended, no endpoint, no budget)--> IDLE
 * hedge_move is the one writer of call->hedge.state, checked against
 * pool_hedge_edge_allowed. */
typedef enum pool_hedge_state {
    POOL_HEDGE_IDLE,
    POOL_HEDGE_ARMED,             /* the delay timer runs */
    POOL_HEDGE_SENT,              /* the hedge's exchange is in flight */
    POOL_HEDGE_STATE_COUNT
} pool_hedge_state_t;
int pool_hedge_edge_allowed(pool_hedge_state_t from, pool_hedge_state_t to);
/* The hedge's exchange finished (before its outcome is applied). */
void pool_hedge_landed(pool_call_t *call);
/* An upstream request of a call was sent (the budget's denominator). */
void pool_hedge_count(pool_network_t *net, int hedge);
/* The call's attempt at ep just started: schedules a hedge if the call may
 * be hedged (policy/hedge.h). */
void pool_hedge_arm(pool_call_t *call, int ep);
/* An answered exchange's latency, for the hedge delay of its endpoint. */
void pool_hedge_sample(pool_call_t *call, const pool_exchange_t *ex);
/* One of the call's exchanges finished (hedge: it was the hedge's) and its
 * outcome was applied. Returns 1 if the call must wait for the other one
 * still in flight; otherwise cancels the other one (the call is answered)
 * or the pending hedge timer, and returns 0: the loop goes on. */
int pool_hedge_settle(pool_call_t *call, int hedge);
/* The call ends (deadline, release): the hedge and its timer stop. */
void pool_hedge_stop(pool_call_t *call);
void pool_hedge_init(pool_network_t *net);
void pool_hedge_dispose(pool_network_t *net);

/* pool_coalesce.c: identical reads in flight share one upstream call. */
/* 1 if call (just started) waits on an identical call in flight: it is
 * answered when that one is. Otherwise it may lead a new group. */
int pool_coalesce_offer(pool_call_t *call);
/* The call is finishing: its waiters get its answer (their own ids). */
void pool_coalesce_done(pool_call_t *call);
/* The call goes away before it finished (cancel, deadline): a waiter
 * leaves its group; a leader hands the group to its first waiter. */
void pool_coalesce_leave(pool_call_t *call);
/* Lets go of the group's shared answer; the last call to do so frees it. */
void pool_coalesce_unshare(pool_call_t *call);
/* Bytes of the group's shared answer the call points into (0: none). */
size_t pool_coalesce_shared_bytes(const pool_call_t *call);
void pool_coalesce_init(pool_network_t *net);
void pool_coalesce_dispose(pool_network_t *net);

/* pool_demote.c: an attempt at ep (or a probe) ended with outcome; heavy:
 * it carried a call that is not a cheap read. A timeout or reset of cheap
 * reads demotes ep behind every other endpoint for demote_ms, in every
 * worker (shared record, endpoint_demoted event); this worker re-ranks now. */
void pool_demote_note(pool_endpoint_t *ep, state_outcome_t outcome, int heavy);
/* Demotes ep for cause (POLICY_DEMOTE_NONE: nothing). */
void pool_demote(pool_endpoint_t *ep, policy_demote_cause_t cause);
/* 1 while ep is demoted (shared time). */
int pool_demoted(const pool_endpoint_t *ep, uint64_t now_ms);

/* pool_probe.c: sends a health or half-open probe when one is due. */
void pool_probe_tick(pool_endpoint_t *ep, uint64_t now_ms);
/* Sends the half-open probe this worker claimed. */
void pool_probe_send_breaker(pool_endpoint_t *ep);

/* pool_write.c: idempotent broadcasts, nonce checks, transaction pins. */
int pool_write_txid(const pool_call_t *call, const pool_item_t *it, char *out, size_t cap);
void pool_write_synthesize(pool_call_t *call, pool_item_t *it, int ep, const char *txid);
void pool_write_pin(pool_call_t *call, int ep, const char *txid);
void pool_write_accepted(pool_call_t *call, pool_item_t *it);
int pool_write_find_pin(pool_call_t *call);
int pool_write_verify_body(pool_call_t *call, const pool_item_t *it, sl_buf_t *out);

/* Per-method counters of an endpoint: entry method_index * 3 + POOL_MC_*,
 * method_index in the chain's table, its length for any other method. */
enum { POOL_MC_REQUESTS, POOL_MC_CREDITS, POOL_MC_REFUSALS, POOL_MC_COUNT };
void pool_method_count(pool_endpoint_t *ep, const policy_method_t *m, int what, uint64_t amount);

/* pool_answer.c: the one writer of pool_item_t.state. An item starts
 * PENDING (pool_call_start) and is settled once: to ANSWERED or FAILED. A
 * transition that is not an edge is a bug: logged, then abort(). */
int pool_item_edge_allowed(pool_item_state_t from, pool_item_state_t to);
void pool_item_settle(pool_item_t *it, pool_item_state_t to);
/* The params of it, relative to it->raw (len 0: none): the span the
 * gateway's parse found, else a scan of raw. 0 if raw does not scan. */
int pool_item_params(const pool_item_t *it, wire_span_t *params);

/* pool_credit.c */
void pool_credit_init(pool_endpoint_t *ep, uint32_t nworkers);
/* Takes cost from ep's budget: 1 if it may be spent, 0 if the endpoint lacks
 * credits (*retry_ms: until the earliest window turns over), POOL_CREDIT_WAIT
 * if a lease is being asked of Redis (cluster:): the call waits with
 * pool_credit_wait and takes again when woken. */
#define POOL_CREDIT_WAIT 2
int pool_credit_take(pool_endpoint_t *ep, policy_cost_t cost, uint64_t *retry_ms);
/* The lease size of window w for a call of cost: 1% of the budget, at most
 * 100,000, at least the cost. */
uint64_t pool_credit_lease_size(const pool_endpoint_t *ep, policy_credit_window_t w, policy_cost_t cost);
/* The units of cost window w counts. */
uint64_t pool_credit_units(policy_cost_t cost, policy_credit_window_t w);
/* A budget_low / budget_exhausted event of window w. */
void pool_credit_event(const pool_endpoint_t *ep, state_event_t *ev, state_event_kind_t kind, policy_credit_window_t w,
                       uint64_t left, uint64_t budget, uint64_t now_ms);

/* pool_credit_cluster.c: the ledgers in Redis. */
/* Asks Redis for a lease of every window that does not cover cost; 0 if
 * asked (or a lease is under way already), -1 if it cannot be (the link is
 * down: the caller leases from the host's ledgers). */
int pool_credit_cluster_ask(pool_endpoint_t *ep, policy_cost_t cost, uint64_t now_ms);
/* After a call took its credits: asks for the next lease early when a
 * window's local lease is below half of one. */
void pool_credit_cluster_prefetch(pool_endpoint_t *ep, policy_cost_t cost, uint64_t now_ms);
/* Waits for the lease under way; cb runs once it is decided. */
void pool_credit_wait(pool_endpoint_t *ep, pool_credit_wait_t *w, void (*cb)(pool_credit_wait_t *w));
void pool_credit_wait_cancel(pool_credit_wait_t *w);

/* pool_pressure.c: depth, settle times, refusals and rates of this worker;
 * the shared level (one compare-and-set per change, with its event). */
void pool_pressure_init(pool_network_t *net);
/* Inside a snapshot at start: this worker's slot as a previous process left it. */
void pool_pressure_load(pool_network_t *net);
void pool_pressure_dispose(pool_network_t *net);
/* A client call was admitted / settled (answered = it got an answer or a
 * failure, not a cancel: only those are settle-time samples, and each is one
 * try of the refusal ratio, refused when the client got the upstreams' rate
 * limit: a refusal another endpoint answered for cost the client nothing). */
void pool_pressure_admit(pool_call_t *call);
void pool_pressure_settle(pool_call_t *call, int answered);
/* The depth counts what holds an upstream slot: a call that waits on another
 * one's upstream call (a coalesced group's leader, a merged poll's carrier)
 * shares it and leaves the depth; it holds again when it goes upstream itself
 * (a waiter handed a group, a poll going alone), as a carrier does. */
void pool_pressure_share(pool_call_t *call);
void pool_pressure_hold(pool_call_t *call);

/* pool_share.c: the depth per identity (call->owner), bounded. */
void pool_share_init(pool_network_t *net);
void pool_share_dispose(pool_network_t *net);
void pool_share_hold(pool_call_t *call);
void pool_share_release(pool_call_t *call);
uint32_t pool_share_held(const pool_network_t *net, uint64_t owner);
/* Credits spent at ep by an attempt of ncalls calls. */
void pool_pressure_spent(pool_endpoint_t *ep, uint32_t ncalls, policy_cost_t cost);
/* Inside the pool's snapshot: the shared level and the other workers' slots. */
void pool_pressure_read(pool_network_t *net, uint64_t now_wall_ms);
/* After it: computes the inputs, moves the shared level when due. */
void pool_pressure_tick(pool_network_t *net, uint64_t now_wall_ms);
/* Writes this worker's slots that changed (or are due again). */
void pool_pressure_flush(pool_t *pool, uint64_t now_wall_ms);

/* pool_call.c: a freed slot of one of net's endpoints goes to the oldest
 * waiting confirmation poll first. */
void pool_call_wake_waiters(pool_network_t *net);
/* Keeps *own with the call until it is released (*own is left empty);
 * returns where its bytes now are. */
const char *pool_call_keep(pool_call_t *call, sl_buf_t *own);
/* The same for a finished exchange's body, wherever it was read, with its
 * charge to the budget; the last body kept is the one pool_answer_facts reads. */
void pool_call_keep_exchange(pool_call_t *call, pool_exchange_t *ex);
/* Every snapshot: waiters whose full endpoints became unusable (a breaker
 * opened, a drain) get their answer now rather than at their deadline. */
void pool_call_recheck_waiters(pool_network_t *net);
/* Starts a call of pool/'s own (a merged poll): not counted as a client's. */
pool_call_t *pool_call_start_carrier(pool_network_t *net, pool_item_t *items, size_t n, int batch, int pinned,
                                     pool_call_cb cb, void *data);
/* Settles a client call from outside its attempt loop (a merged poll's answer). */
void pool_call_finish(pool_call_t *call);
/* Sends a call that was held (a merge it left, or one that went nowhere). */
void pool_call_resume(pool_call_t *call);

/* pool_merge.c: confirmation polls of several clients as one upstream call. */
/* 1 if call (just started, pin known) was taken into a merge: it is answered
 * when the merged call is. */
int pool_merge_offer(pool_call_t *call);
/* The call leaves its merge (cancelled, or its deadline ran out). */
void pool_merge_leave(pool_call_t *call);
void pool_merge_init(pool_network_t *net);
void pool_merge_dispose(pool_network_t *net);

/* pool_delay.c */
void pool_delay_init(pool_t *pool);
void pool_delay_dispose(pool_t *pool);
void pool_delay_add(pool_t *pool, pool_delay_t *d, uint32_t ms, void (*cb)(pool_delay_t *));
void pool_delay_cancel(pool_delay_t *d);

/* pool_rank.c: the plan order of each network, from scores (with stickiness). */
void pool_rank_update(pool_network_t *net, uint64_t now_ms);
/* Parses a probe answer's head (eth_blockNumber hex / getSlot number). */
int pool_rank_parse_head(const char *body, size_t len, uint64_t *head);

/* pool_endpoint.c */
SL_MUST_CHECK sl_err_t pool_endpoint_init(pool_endpoint_t *ep, pool_network_t *net, int index,
                                          const pool_endpoint_conf_t *conf, uint32_t nworkers);
void pool_endpoint_dispose(pool_endpoint_t *ep);

/* pool_dns.c: an IP literal's address at once; a host name's first lookup
 * started (never blocking). */
void pool_dns_init(pool_endpoint_t *ep);
void pool_dns_dispose(pool_endpoint_t *ep);
/* 0 while the host name does not resolve (the plan skips the endpoint). */
int pool_dns_usable(const pool_endpoint_t *ep);
/* 1 while the first lookup is under way: a new connection may wait for it. */
int pool_dns_pending(const pool_endpoint_t *ep);
/* STATE_EXCLUDED_DNS_* while the host name does not resolve, else 0. */
uint8_t pool_dns_excluded(const pool_endpoint_t *ep);
/* The address for a new connection, or NULL when none is known; starts an
 * asynchronous refresh when the cached addresses are old. */
const struct sockaddr *pool_endpoint_addr(pool_endpoint_t *ep, socklen_t *len);
/* A connection to the next address failed: rotate. */
void pool_endpoint_addr_failed(pool_endpoint_t *ep);

/* pool_tls.c */
SL_MUST_CHECK sl_err_t pool_tls_ctx_create(const wire_url_t *url, const char *ca_file, SSL_CTX **out);

/* pool_exchange.c: starts ex on ep (an idle connection or a new one). On
 * failure before anything happened (no address, socket error) returns the
 * failure class and never calls ex->cb; otherwise returns POOL_FAIL_NONE and
 * calls ex->cb exactly once, unless pool_exchange_cancel comes first. */
pool_fail_t pool_exchange_start(pool_exchange_t *ex, pool_endpoint_t *ep, const char *body, size_t len,
                                int is_write, pool_exchange_cb cb, void *data);
void pool_exchange_cancel(pool_exchange_t *ex);
/* Ends ex with fail (POOL_FAIL_NONE: answered): its connection goes back to
 * the pool when it can be reused, then ex->cb runs. Called by the
 * connection's read, write and connect paths and by the deadlines. */
void pool_exchange_finish(pool_exchange_t *ex, pool_fail_t fail);
/* A finished exchange's body is charged to the worker's budget until freed:
 * its owner frees it with this, or takes it (ex->body and ex->charged) and
 * later releases the charge with pool_budget_release. */
void pool_exchange_body_dispose(pool_exchange_t *ex);
void pool_budget_release(pool_t *pool, size_t bytes);

/* pool_conn.c: an idle connection to ep fit for the request (is_write: not
 * one idle for long, which the upstream may be closing), or a new one being
 * opened; NULL and *fail if none could be started. */
pool_conn_t *pool_conn_take(pool_endpoint_t *ep, int is_write, pool_fail_t *fail);
/* Sends c->ex's request (the connection is open). */
void pool_conn_send(pool_conn_t *c);
/* After an exchange: keep c for the next one (reusable) or close it. */
void pool_conn_put_back(pool_conn_t *c, int reusable);
void pool_conn_close_idle(pool_endpoint_t *ep);
/* The endpoint's first lookup ended: connections waiting for it connect now,
 * or fail with POOL_FAIL_DNS if no address is known. */
void pool_conn_dns_done(pool_endpoint_t *ep);

#endif
