/* pool/pool_net.h: pool/'s endpoint state, beside the transport and below
 * the call: each endpoint's health, breaker, credit lease and rank as this
 * worker knows them, each network's plan and pressure, and the worker's pool.
 * For pool/'s endpoint-state files (health, rank, demote, probe, tick,
 * credit, pressure) and, through pool/pool_call_int.h, the call layer. */
#ifndef POOL_NET_H
#define POOL_NET_H

#include "base/sl_buf.h"
#include "wire/url.h"
#include "pool/pool.h"
#include "pool/pool_link.h"
#include "policy/attempt.h"
#include "policy/capability.h"
#include "policy/chainid.h"
#include "policy/chainview.h"
#include "policy/cost.h"
#include "policy/demote.h"
#include "policy/hedge.h"
#include "policy/joblease.h"
#include "policy/lease.h"
#include "policy/pressure.h"
#include "policy/rolling.h"
#include "policy/score.h"
#include "policy/shape.h"
#include "policy/wsstream.h"
#include "state/state.h"
#include "state/state_key.h"
#include "state/state_lease.h"

typedef struct pool_endpoint pool_endpoint_t;

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
    policy_lease_ladder_t ladder; /* in ms: when a degraded worker tries the ledger again */
    /* cluster: the ledgers are Redis' (pool_credit_cluster.c) */
    int asking;                   /* a lease from Redis is under way */
    uint64_t quiet_until_ms;      /* Redis lacked credits for an early lease: none until then */
    state_lease_waiters_t waiters; /* pool_credit_wait_t: calls waiting for that lease */
} pool_credit_t;

/* A call waiting for credits from Redis (cluster:). */
typedef state_lease_wait_t pool_credit_wait_t;

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
    state_counters_rec_t *per_method; /* requests, credits, refusals per method (STATE_MC_*) */
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
    pool_link_t link;             /* the transport's part: addresses, connections (pool_link.h) */
    const pool_endpoint_conf_t *conf;
    pool_network_t *net;
    int index;                    /* position in the network's config */
    uint32_t max_inflight;        /* this worker's share of conf->max_inflight */
    pool_health_t health;
    pool_credit_t credit;
    policy_hedge_hist_t hedge_hist[POLICY_CLASS_COUNT]; /* answer latencies per method class (pool_hedge.c) */
    uint32_t hedges_lost_in_row;  /* hedge races lost here without a byte of answer, since its last answer */
    policy_roll_t rate_roll;      /* calls, billed and throughput credits spent here */
    uint64_t rate_v[POLICY_ROLL_SLOTS][POOL_RATE_COUNT];
    uint64_t chain_fed_ms;        /* head_at_ms of the probe head last fed to the chain view (pool_chain.c) */
    char chain_id[POLICY_CHAINID_MAX]; /* its eth_chainId / genesis hash, normal form ("" unknown) */
    uint8_t wrong_chain;          /* chain_id is not the network's: out of every plan */
    uint8_t id_probing;           /* an identity probe is under way ... */
    pool_exchange_t id_probe;     /* ... this one (pool_chainid.c) */
    uint64_t id_next_ms;          /* when the next one is due */
    uint64_t id_fed_at;           /* cluster: the lease holder's answer last judged (lease_chain_at_ms) */
    uint32_t disagreed;           /* its recent minority answers under consensus, decayed ... */
    uint64_t disagreed_at_ms;     /* ... as of then (policy_consensus_disagreed; pool_consensus.c) */
    uint64_t disagree_reported_ms; /* this worker's last endpoint_disagreed event for it */
    policy_capability_mem_t learned; /* what it said it does not serve (pool_learn.c) */
    /* the chain probe (pool_chainprobe.c) */
    uint8_t chain_probing;        /* an exchange is under way ... */
    uint8_t chain_walking;        /* ... reading the blocks below a reorg */
    pool_exchange_t chain_probe;
    sl_buf_t chain_req;           /* a walk's request, alive while its exchange is */
    uint64_t chain_fed_at;        /* chain_at_ms of the shared record last fed to the view */
    uint64_t walk_tip;            /* the walk's reorg: the new tip (height, hash) ... */
    uint8_t walk_tip_hash[32];
    uint64_t walk_low;            /* ... the lowest height seen replaced, and its old hash */
    uint8_t walk_old[32];
    state_endpoint_rec_t walk_rec; /* what the probe will share once the walk is done */
    struct pool_wshead *wshead;   /* the ws_url stream (pool_wshead.c); NULL without ws_url */
    /* the ws_url's subscriptions sockets (pool_wspass.c): the second opened when the first is full; NULL: none yet */
    struct pool_wspass *wspass[POOL_WSPASS_SOCKETS];
};

/* How the call layer counts into an endpoint's record of this worker: one
 * writer that adds n to a counter of state_stats_rec_t (or raises a peak)
 * and marks the record dirty for the next flush (pool_tick.c). */
#define POOL_STAT_ADD(ep, field, n) ((ep)->health.stats.field += (n), (ep)->health.dirty = 1)
#define POOL_STAT_PEAK(ep, field, v)                                                                \
    do {                                                                                            \
        if ((v) > (ep)->health.stats.field) {                                                       \
            (ep)->health.stats.field = (v);                                                         \
            (ep)->health.dirty = 1;                                                                 \
        }                                                                                           \
    } while (0)

/* The endpoint a link (or an exchange's link) belongs to. */
static inline pool_endpoint_t *pool_link_endpoint(pool_link_t *link)
{
    return H2O_STRUCT_FROM_MEMBER(pool_endpoint_t, link, link);
}

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
    uint64_t logs[3];             /* eth_getLogs splits, sub-calls, refusals (pool/pool_logs.h) */
    uint64_t logs_event_ms;       /* the last logs_split_refused event (pool_logs_refused) */
    uint64_t logs_held;           /* ... refusals since, not in an event yet */
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
    pool_link_timers_t timers;    /* connect, first byte and attempt deadlines (the transport's) */
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
    policy_chainview_t chain;     /* this worker's chain view (pool_chain.c): heads and the floor served */
    uint64_t chain_shared[POLICY_HEAD_KIND_COUNT]; /* the shared floor as last read or raised */
    state_chain_seen_t chain_seen; /* the shared floor's record as last read (pool_chain_sync) */
    uint64_t head_implausible;    /* endpoints whose head nobody confirms, as the tick last saw (pool_chain.c) */
    uint64_t head_loud;           /* ... of them, those past max_head_lead (the event's) */
    uint64_t tip_asked;           /* the head whose block worker 1 last asked for (pool_chainprobe_tip_tick) */
    uint64_t floor_synced_ms;     /* the floor last pushed to and pulled from the cluster (worker 1) */
    char chain_want[POLICY_CHAINID_MAX]; /* chain_id / genesis_hash configured or learned, normal form
                                            ("": not checked, or not learned yet) */
    uint8_t chain_learn;          /* no identity configured: learned (server/srv_chainid.c, pool_chainid.c) */
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

#define POOL_CACHE_FLUSH_MS 1000

struct pool {
    pool_transport_t t;           /* loop, resolver, budget, delays, the exchange operations */
    h2o_loop_t *loop;             /* t.loop */
    pool_network_t *networks;
    size_t nnetworks;
    h2o_timeout_t zero_timeout;   /* deferred callbacks */
    state_t *state;               /* NULL: no shared state (unit tests) */
    struct state_cache *cache;    /* the response cache; NULL: off */
    uint8_t cache_unfinalized;    /* cache.unfinalized: head */
    policy_cacheadmit_conf_t cache_admit; /* cache admission (policy/cacheadmit.h) ... */
    policy_cacheadmit_t *admit;   /* ... and this worker's memory of it (NULL: no cache) */
    uint32_t slot;                /* this worker's stats slot (1-based worker index) */
    uint32_t nworkers;            /* slots 1..nworkers (pressure inputs are summed over them) */
    /* The hook the call layer installs: a snapshot of net's shared records
     * was taken (waiters whose endpoints became unusable get their answer). */
    void (*refreshed)(pool_network_t *net);
    /* pool_params_t's on_grow (NULL: none) */
    void (*on_grow)(pool_call_t *call, void (*cb)(pool_call_t *, void *), void *cb_data);
    h2o_timeout_t tick_timeout;   /* snapshot refresh / flush / probes */
    h2o_timeout_entry_t tick;
    uint64_t last_flush_ms;
    uint64_t last_cache_flush_ms; /* the response cache's hits marked recent (every POOL_CACHE_FLUSH_MS) */
    uint32_t refresh_ms;
    uint32_t flush_ms;
};

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
/* Sends a health probe (a cheap read) now, to confirm a request-shaped
 * failure nobody settled (pool_held.c): its failure counts toward the
 * breaker as any probe's. Not while one is under way in this worker, nor to
 * an endpoint whose breaker is not closed, drained or rate-limited. */
void pool_probe_confirm(pool_endpoint_t *ep);

/* Per-method counters of an endpoint: the state/ layout (STATE_MC_*,
 * state_mc_index), method_index in the chain's table, its length for any
 * other method. */
void pool_method_count(pool_endpoint_t *ep, const policy_method_t *m, int what, uint64_t amount);

/* pool_credit.c */
void pool_credit_init(pool_endpoint_t *ep, uint32_t nworkers);
/* Takes cost from ep's budget, down the lease ladder: YES if it may be
 * spent, NO if the endpoint lacks credits (*retry_ms: until the earliest
 * window turns over), WAIT if a lease is being asked of Redis (cluster:):
 * the call waits in ep's waiters and takes again when woken. */
policy_lease_result_t pool_credit_take(pool_endpoint_t *ep, policy_cost_t cost, uint64_t *retry_ms);
/* The lease size of window w for a call of cost: 1% of the budget, at most
 * 100,000, at least the cost. */
uint64_t pool_credit_lease_size(const pool_endpoint_t *ep, policy_credit_window_t w, policy_cost_t cost);
/* The units of cost window w counts. */
uint64_t pool_credit_units(policy_cost_t cost, policy_credit_window_t w);
/* A budget_low / budget_exhausted event of window w. */
void pool_credit_event(const pool_endpoint_t *ep, state_event_t *ev, state_event_kind_t kind, policy_credit_window_t w,
                       uint64_t left, uint64_t budget, uint64_t now_ms);

/* pool_credit_cluster.c: the ledgers in Redis. */
/* Asks Redis for a lease of every window that does not cover cost: WAIT if
 * asked (or a lease is under way already), FALL if it cannot be (the link
 * is down: the host's ledgers decide). */
policy_lease_result_t pool_credit_cluster_ask(pool_endpoint_t *ep, policy_cost_t cost, uint64_t now_ms);
/* After a call took its credits: asks for the next lease early when a
 * window's local lease is below half of one. */
void pool_credit_cluster_prefetch(pool_endpoint_t *ep, policy_cost_t cost, uint64_t now_ms);
/* Waits for the lease under way (state_lease_wait); cb runs once it is
 * decided. */
void pool_credit_wait(pool_endpoint_t *ep, pool_credit_wait_t *w, void (*cb)(pool_credit_wait_t *w));
void pool_credit_wait_cancel(pool_credit_wait_t *w);

/* pool_pressure.c: depth, settle times, refusals and rates of this worker;
 * the shared level (one compare-and-set per change, with its event). The
 * calls' part (admitted, settled, holding a slot) is the pressure satellite
 * (pool/pool_pressure.h). */
void pool_pressure_init(pool_network_t *net);
/* Inside a snapshot at start: this worker's slot as a previous process left it. */
void pool_pressure_load(pool_network_t *net);
void pool_pressure_dispose(pool_network_t *net);
/* Credits spent at ep by an attempt of ncalls calls. */
void pool_pressure_spent(pool_endpoint_t *ep, uint32_t ncalls, policy_cost_t cost);
/* Inside the pool's snapshot: the shared level and the other workers' slots. */
void pool_pressure_read(pool_network_t *net, uint64_t now_wall_ms);
/* After it: computes the inputs, moves the shared level when due. */
void pool_pressure_tick(pool_network_t *net, uint64_t now_wall_ms);
/* Writes this worker's slots that changed (or are due again). */
void pool_pressure_flush(pool_t *pool, uint64_t now_wall_ms);

/* pool_rank.c: the plan order of each network, from scores (with stickiness). */
void pool_rank_update(pool_network_t *net, uint64_t now_ms);
/* Parses a probe answer's head (eth_blockNumber hex / getSlot number). */
int pool_rank_parse_head(const char *body, size_t len, uint64_t *head);
/* The same from a result value a scan already found (span of body): an
 * answer the call judged is not scanned a second time. */
int pool_rank_head_value(const char *body, wire_span_t result, uint64_t *head);

/* pool_chain.c: the network's chain view in this worker (policy/chainview.h).
 * Fed by the probes' heads (every worker reads them from the shared endpoint
 * records on its tick) and by eth_blockNumber / getSlot answers flowing
 * through (the chain satellite, pool_chain_call.c); read by that satellite's
 * gate and by the head it serves. The floor of served heads and the heads
 * seen in answers are shared with the other workers (state_chain_*, the
 * endpoint records) when a head is served. */
void pool_chain_init(pool_network_t *net);
/* After a snapshot: feeds each endpoint's probe head that is new since the
 * last feed; notes which heads are implausible now (head_implausible, for
 * the ranking and admin/), with an endpoint_head_implausible event of each
 * change (worker 1). */
void pool_chain_refresh(pool_network_t *net, uint64_t now_ms);
/* The head kind a probe measures: Ethereum's latest; Solana's getSlot
 * without a commitment reads the finalized slot. */
policy_head_kind_t pool_chain_probe_kind(const pool_network_t *net);
/* The one writer of an endpoint record's shared head
 * (state_endpoint_rec_t.head and head_at_ms), inside its writer's
 * state_endpoint_update: policy/chainview.c's rule for an observation.
 * is_head 1: the endpoint said this is its head (a probe's read, a pushed
 * head) and it replaces the one kept, lower or not (a reorg, a node that fell
 * back); 0: the endpoint has at least this block (a head served from it,
 * which another worker's probe may have overtaken since): it only raises.
 * Returns 1 if the record changed. */
int pool_chain_head_write(state_endpoint_rec_t *rec, uint64_t head, int is_head, uint64_t now_ms);
/* ep's head of kind is height now (a probe, an eth_blockNumber answer). */
void pool_chain_observe_head(pool_endpoint_t *ep, policy_head_kind_t kind, uint64_t height, uint64_t now_ms);
/* The mask (bit i: endpoint i) of the endpoints the plan may use now and
 * that are not demoted: one whose cheap reads just timed out or were reset
 * (a node killed before its breaker opened) vouches for no head; nor does
 * one whose head leads every other by more than max_lag_blocks (slots)
 * with three or more to compare, or by more than max_head_lead with two
 * (its bit in *implausible, which may be NULL; policy_chainview_unconfirmed,
 * policy_chainview_implausible). */
uint64_t pool_chain_usable_why(pool_network_t *net, uint64_t now_ms, uint64_t *implausible);
uint64_t pool_chain_usable(pool_network_t *net, uint64_t now_ms);
/* max_lag_blocks, or max_lag_slots on Solana. */
uint32_t pool_chain_max_lag(const pool_network_t *net);
/* The endpoints whose heads count at all: on the network's chain (usable or not). */
uint64_t pool_chain_known(const pool_network_t *net);
/* Before a head is served: the floor the other workers served, read now
 * (the endpoints' shared heads come with the tick's snapshot). No shared
 * state: nothing. */
void pool_chain_sync(pool_network_t *net, uint64_t now_ms);
/* After a head of kind was served from ep's answer: ep's head (if it is
 * above its shared record's, and of the kind probes write there), then the
 * view's floor, raised in shared state in that order, so a worker that
 * reads the floor finds an endpoint at it. */
void pool_chain_publish(pool_endpoint_t *ep, policy_head_kind_t kind, uint64_t answered, uint64_t now_ms);

/* pool_chainid.c: chain identity, configured (chain_id, genesis_hash) or
 * learned from the endpoints' majority (kept in the network's chain record
 * in state; learned here if the master could not): each worker asks every
 * endpoint for its eth_chainId (getGenesisHash) on its first tick and every POOL_CHAINID_EVERY probe
 * intervals; one that reports another chain is wrong_chain: unusable, so in
 * no plan, until it reports the right one. Worker 1 records the
 * endpoint_wrong_chain event of each change. */
#define POOL_CHAINID_EVERY 10
void pool_chainid_init(pool_network_t *net);
void pool_chainid_tick(pool_endpoint_t *ep, uint64_t now_ms);
void pool_chainid_dispose(pool_endpoint_t *ep);

/* pool_lease.c: with cluster:, an endpoint's health and chain probes are
 * one job leased to one host of the fleet (policy/joblease.h). */
/* Asks Redis for the leases due (one worker per host and endpoint at a
 * time) and, on worker 1, applies the results other hosts publish. */
void pool_lease_tick(pool_t *pool, uint64_t now_ms);
policy_joblease_role_t pool_lease_role(const pool_endpoint_t *ep, uint64_t now_ms);
/* 1 if this host probes ep now (no cluster, its lease, or Redis away). */
int pool_lease_does_job(const pool_endpoint_t *ep, uint64_t now_ms);
/* A probe was claimed: counted as a local decision while Redis is away. */
void pool_lease_claimed(pool_endpoint_t *ep, uint64_t now_ms);
/* The holder shares the probes' fields of rec (its record after a probe). */
void pool_lease_publish(pool_endpoint_t *ep, const state_endpoint_rec_t *rec, uint64_t now_ms);
/* The holder heard ep's chain (id, normal form): kept in the record and
 * shared, for the other hosts to judge as their own answer. */
void pool_lease_chain_heard(pool_endpoint_t *ep, const char *id, uint64_t now_ms);

/* pool_chainprobe.c: the chain probe. Every chain_probe_ms one worker per
 * host (claimed in the shared record, as the health probe) asks an endpoint
 * its safe and finalized heads and, on Ethereum, its latest block's hash and
 * parent; a reorg the view then shows is read deeper (the blocks below it,
 * up to POOL_CHAIN_WALK) and counted once (state_chain_reorg: one `reorg`
 * event whichever workers see it, at most one per POOL_REORG_EVENT_MS); then the answer is shared in the
 * endpoint's record, which every worker's view is fed from (feed). */
#define POOL_CHAIN_WALK 16
#define POOL_REORG_EVENT_MS 60000    /* a `reorg` event at most this often per network; the rest folded into it */
void pool_chainprobe_tick(pool_endpoint_t *ep, uint64_t now_ms);
/* With cache.unfinalized: head, worker 1 asks for the new head's block
 * (hash and parent, for the ring) once per height the head reaches. */
void pool_chainprobe_tip_tick(pool_network_t *net, uint64_t now_ms);
void pool_chainprobe_feed(pool_endpoint_t *ep, uint64_t now_ms);
void pool_chainprobe_dispose(pool_endpoint_t *ep);
/* A head another source told (pool_wshead.c's stream): its height, and its
 * hash and parent ("0x" + 64 hex digits; NULL or malformed: the height
 * alone) into the view and its ring, a reorg it shows reported as the
 * probe's are. */
void pool_chainprobe_observe_tip(pool_endpoint_t *ep, uint64_t height, const char *hash_hex, const char *parent_hex);
/* 1 if a pushed head would move the ring other than by one block on what it
 * holds (another hash at a height held, a parent that is not the hash held
 * below it, a gap, or no hash at all): pool_wshead.c confirms such a head by
 * an HTTP read before observe_tip. 0 for a head that extends the ring, or
 * an empty ring. */
int pool_chainprobe_unconfirmed(const pool_endpoint_t *ep, uint64_t height, const char *hash_hex, const char *parent_hex);

/* pool_wshead.c: heads from an endpoint's ws_url. One worker per host holds
 * the stream (claimed in the endpoint's shared record, renewed while it
 * lives, taken over when stale or its pid is gone): eth_subscribe newHeads (Solana
 * slotSubscribe), each head into the view at once and into the shared
 * record, which the other workers' views read on their tick. A stream with
 * no head for ws_stall_ms, or silent past its pings, is closed and opened
 * again with backoff (policy/wsstream.h decides when); the probes run as
 * ever. upstream_ws_connected and upstream_ws_lost events, rate-limited. */
#define POOL_WS_MAX_MESSAGE (256 * 1024) /* a newHeads header is ~1 KB; a larger message closes the stream */
#define POOL_WS_CLAIM_MS 3000        /* a holder that stopped renewing is replaced after this */
#define POOL_WS_LOST_EVENT_MS 10000  /* upstream_ws_lost at most this often per endpoint and worker */
#define POOL_WS_CONFIRM_MS 250       /* a pushed head's HTTP confirmation at most this often per stream */
void pool_wshead_init(pool_endpoint_t *ep);
void pool_wshead_tick(pool_endpoint_t *ep, uint64_t now_ms);
void pool_wshead_dispose(pool_endpoint_t *ep);
/* pool_wspass.c (API in pool.h): its sockets' deadlines, on the tick; dispose closes one. */
void pool_wspass_tick(pool_endpoint_t *ep, uint64_t now_ms);
void pool_wspass_dispose(pool_endpoint_t *ep);

/* pool_endpoint.c */
SL_MUST_CHECK sl_err_t pool_endpoint_init(pool_endpoint_t *ep, pool_network_t *net, int index,
                                          const pool_endpoint_conf_t *conf, uint32_t nworkers);
void pool_endpoint_dispose(pool_endpoint_t *ep);
/* STATE_EXCLUDED_DNS_* while the host name does not resolve,
 * STATE_EXCLUDED_WRONG_CHAIN while it is on another chain, else 0. */
uint8_t pool_endpoint_dns_excluded(const pool_endpoint_t *ep);

#endif
