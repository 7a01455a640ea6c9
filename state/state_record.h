/* state/state_record.h: the records sluice keeps in LMDB, as msgpack.
 *
 * Every record is a msgpack array [version, field...] described by a static
 * schema table; one generic codec encodes and decodes all of them. Decoding
 * checks everything (type, version, field count, ranges, string sizes) and
 * rejects what it does not know: SL_ERR_VERSION for a newer version (an
 * older one reads: versions only append fields and array elements, which an
 * old record leaves zero), SL_ERR_CORRUPT for anything malformed. Never a crash: fuzzed by
 * tests/fuzz/fuzz_state_record.c. Pure: no LMDB here. */
#ifndef STATE_RECORD_H
#define STATE_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "base/sl_buf.h"
#include "base/sl_err.h"
#include "base/sl_outcome.h"

typedef enum state_field_type {
    STATE_F_U8,
    STATE_F_U32,
    STATE_F_U64,
    STATE_F_STR,          /* char[size], NUL-terminated, at most size-1 bytes */
    STATE_F_U64_ARRAY,    /* uint64_t[size] */
} state_field_type_t;

typedef struct state_field {
    const char *name;
    state_field_type_t type;
    size_t offset;
    size_t size;
    uint32_t since;       /* the record version that added the field (0: the first) */
} state_field_t;

typedef struct state_schema {
    const char *name;
    uint32_t version;
    const state_field_t *fields;
    size_t nfields;
} state_schema_t;

SL_MUST_CHECK sl_err_t state_record_encode(const state_schema_t *schema, const void *rec, sl_buf_t *out);
SL_MUST_CHECK sl_err_t state_record_decode(const state_schema_t *schema, const void *buf, size_t len, void *rec);

/* Bytes of a cluster host's name (cluster.host). */
#define STATE_HOST_MAX 63

/* ---- endpoint state: one per (network, endpoint); rare, write-through ---- */
/* How many values `breaker` may hold (policy_breaker_state_t: closed, open,
 * half-open; admin/ checks the two agree). Any other value is a corrupt or
 * foreign record: it reads as closed and is repaired (state/state.h). */
#define STATE_BREAKER_STATES 3
/* probe_pid of a half-open probe claimed by another host: no pid is it. */
#define STATE_PROBE_ELSEWHERE UINT32_MAX

typedef struct state_endpoint_rec {
    uint8_t breaker;              /* policy_breaker_state_t, < STATE_BREAKER_STATES */
    uint64_t since_ms;            /* shared time (base/sl_time.h): state entered */
    uint32_t cooldown_ms;
    uint64_t opened_at_ms;        /* the current outage began */
    uint32_t probe_pid;           /* HALF_OPEN: the worker that claimed the probe (STATE_PROBE_ELSEWHERE:
                                     a process of another host, with cluster:) */
    uint64_t probe_at_ms;
    uint8_t drained;              /* operator's drain: no traffic */
    uint64_t drained_at_ms;
    uint64_t rate_limited_until_ms;
    uint64_t transitions[3];      /* times the breaker entered closed, open, half_open */
    uint64_t head;                /* newest block (slot) the probes saw, 0 = none */
    uint64_t head_at_ms;          /* when */
    uint32_t probe_ewma_us;       /* probe latency EWMA, 0 = never measured */
    uint32_t probe_failures;      /* probes failed in a row */
    uint64_t probe_next_ms;       /* the next probe is due (claimed by moving it forward) */
    uint32_t rl_backoff_ms;       /* length of the last rate-limit mark sluice chose itself (no
                                     Retry-After or hint): the next doubles it; 0 after a hinted one */
    uint64_t demoted_until_ms;    /* a cheap read timed out or was reset: behind every other endpoint
                                     in every worker's plan until then (policy/demote.h) */
    uint8_t demoted_cause;        /* policy_demote_cause_t of the last demotion */
    uint64_t demotions;           /* times it was demoted (a new demotion, not an extension) */
    /* the rate-limit episode under way (policy/episode.h): marks close together are one,
       with one event when it begins and one when it ends; this host's own */
    uint64_t rl_since_ms;
    uint64_t rl_last_until_ms;
    uint32_t rl_marks;
    /* version 5: the chain probe (pool/pool_chainprobe.c), this host's */
    uint64_t safe;                /* its safe block (Solana: confirmed slot), 0 = unknown */
    uint64_t finalized;           /* its finalized block (slot), 0 = unknown */
    uint64_t chain_at_ms;         /* when the chain probe last answered */
    uint64_t chain_next_ms;       /* the next chain probe is due (claimed by moving it forward) */
    uint64_t hash_height;         /* the block whose hashes follow (its latest when probed) */
    char head_hash[67];           /* "0x" + 64 hex digits, "" unknown */
    char head_parent[67];         /* its parentHash */
    /* version 6: the upstream WebSocket (pool/pool_wshead.c), this host's */
    uint32_t ws_pid;              /* the worker holding the stream ... */
    uint64_t ws_renew_ms;         /* ... claimed until then (renewed while it lives) */
    uint8_t ws_state;             /* STATE_WS_*: the stream as its holder last said */
    uint64_t ws_heads;            /* heads it received, all holders together */
    uint64_t ws_head_at_ms;       /* the last one, shared time; 0 = none */
    /* version 7 */
    uint64_t ws_unconfirmed;      /* pushed heads its url's HTTP read did not confirm (dropped) */
    /* version 8: the lease of its probes with cluster: (pool/pool_lease.c), as this host last heard */
    char lease_holder[STATE_HOST_MAX + 1]; /* the host holding it, "" unknown */
    uint64_t lease_token;         /* its fencing token (Redis' counter when it was taken) */
    uint64_t lease_until_ms;      /* it runs until then (shared time), as last heard */
    uint64_t lease_ask_ms;        /* Redis is asked again then (claimed by moving it forward) */
    char lease_chain_id[48];      /* its chain (eth_chainId / genesis hash, normal form) as the
                                     holder last heard it, "" unknown (STATE_CHAIN_ID_MAX) */
    uint64_t lease_chain_at_ms;   /* when the holder heard it (0: never) */
} state_endpoint_rec_t;

/* ws_state of an endpoint record: no ws_url (or nobody holds it yet), the
 * stream being opened, open and subscribed, closed until the next try,
 * refused (closed until the next try) because its socket is on another chain. */
enum { STATE_WS_NONE, STATE_WS_CONNECTING, STATE_WS_CONNECTED, STATE_WS_DOWN, STATE_WS_WRONG_CHAIN, STATE_WS_COUNT };

extern const state_schema_t state_endpoint_schema;

/* ---- events: the operator's feed ---- */
#define STATE_EVENT_KINDS(X)                                                              \
    X(BREAKER_OPENED, "breaker_opened")                                                   \
    X(BREAKER_HALF_OPEN, "breaker_half_open")                                             \
    X(BREAKER_CLOSED, "breaker_closed")                                                   \
    X(ENDPOINT_RATE_LIMITED, "endpoint_rate_limited")                                     \
    X(FAILOVER, "failover")                                                               \
    X(REDUNDANCY_LOW, "redundancy_low")                                                   \
    X(NETWORK_DOWN, "network_down")                                                       \
    X(NETWORK_UP, "network_up")                                                           \
    X(ENDPOINT_DRAINED, "endpoint_drained")                                               \
    X(ENDPOINT_UNDRAINED, "endpoint_undrained")                                           \
    X(WORKER_RESTARTED, "worker_restarted")                                               \
    X(PRESSURE_CHANGED, "pressure_changed")                                               \
    X(CONFIG_RELOADED, "config_reloaded")                                                 \
    X(BUDGET_LOW, "budget_low")                                                           \
    X(BUDGET_EXHAUSTED, "budget_exhausted")                                               \
    X(STATE_ERROR, "state_error")                                                         \
    X(CONFIG_RELOAD_FAILED, "config_reload_failed")                                       \
    X(STATE_DEGRADED, "state_degraded")                                                   \
    X(STATE_RESTORED, "state_restored")                                                   \
    X(CLUSTER_DEGRADED, "cluster_degraded")                                               \
    X(CLUSTER_RESTORED, "cluster_restored")                                               \
    X(ENDPOINT_DEMOTED, "endpoint_demoted")                                               \
    X(ENDPOINT_RATE_LIMIT_ENDED, "endpoint_rate_limit_ended")                             \
    X(ENDPOINT_WRONG_CHAIN, "endpoint_wrong_chain")                                       \
    X(CACHE_PURGED, "cache_purged")                                                       \
    X(LOGS_SPLIT_REFUSED, "logs_split_refused")                                           \
    X(ENDPOINT_DISAGREED, "endpoint_disagreed")                                           \
    X(REORG, "reorg")                                                                     \
    X(ENDPOINT_HEAD_IMPLAUSIBLE, "endpoint_head_implausible")                             \
    X(UPSTREAM_WS_CONNECTED, "upstream_ws_connected")                                     \
    X(UPSTREAM_WS_LOST, "upstream_ws_lost")                                               \
    X(SUBSCRIPTION_SOURCE_CHANGED, "subscription_source_changed")                         \
    X(UPSTREAM_WS_WRONG_CHAIN, "upstream_ws_wrong_chain")                                 \
    X(CHAIN_RELEARNED, "chain_relearned")                                                 \
    X(KEY_CREATED, "key_created")                                                         \
    X(KEY_REVOKED, "key_revoked")                                                         \
    X(KEY_SCOPE_CHANGED, "key_scope_changed")                                             \
    X(ENDPOINT_ADDED, "endpoint_added")                                                   \
    X(ENDPOINT_CHANGED, "endpoint_changed")                                               \
    X(ENDPOINT_REMOVED, "endpoint_removed")                                               \
    X(LEASE_MOVED, "lease_moved")                                                         \
    X(ENDPOINT_CAPABILITY_LEARNED, "endpoint_capability_learned")                         \
    X(ENDPOINT_CAPABILITY_FORGOTTEN, "endpoint_capability_forgotten")

typedef enum state_event_kind {
#define STATE_EVENT_ENUM_(name, str) STATE_EVENT_##name,
    STATE_EVENT_KINDS(STATE_EVENT_ENUM_)
#undef STATE_EVENT_ENUM_
    STATE_EVENT_KIND_COUNT
} state_event_kind_t;

const char *state_event_kind_name(state_event_kind_t k);

typedef struct state_event {
    uint64_t seq;                 /* the key, not part of the encoded value */
    uint64_t ts_ms;               /* shared time (reads as wall time) */
    uint8_t kind;
    char network[40];
    char endpoint[72];
    uint8_t from;                 /* breaker states, for breaker events; config events: the
                                     tag of the admin request that asked (0: SIGHUP) */
    uint8_t to;
    char reason[512];             /* config events list every change or error in it */
    uint64_t duration_ms;         /* breaker_closed: how long it was open; failover: the interval;
                                     reorg: the reorgs it tells (those folded into it included) */
    uint64_t count;               /* failover: how many; redundancy_low: usable endpoints */
    uint32_t pid;                 /* the process that observed it */
    /* version 2, for cluster: */
    char host[STATE_HOST_MAX + 1]; /* the host that observed it ("" without cluster:) */
    uint64_t origin_seq;          /* its sequence on that host, if another host's (else 0) */
} state_event_t;

extern const state_schema_t state_event_schema;

/* ---- per-worker counters, flushed every ~100 ms, merged by readers ---- */
/* the list is base/'s: policy/ decides with the same outcomes */
#define STATE_OUTCOMES(X) SL_OUTCOMES(X)

typedef enum state_outcome {
#define STATE_OUTCOME_ENUM_(name, str) STATE_OUTCOME_##name,
    STATE_OUTCOMES(STATE_OUTCOME_ENUM_)
#undef STATE_OUTCOME_ENUM_
    STATE_OUTCOME_COUNT
} state_outcome_t;

const char *state_outcome_name(state_outcome_t o);

/* Upper bounds (µs) of the latency histogram buckets; the last is +Inf. */
#define STATE_LAT_BUCKETS 17
extern const uint64_t state_lat_bounds_us[STATE_LAT_BUCKETS];

/* Why a worker keeps an endpoint out of its plan (state_stats_rec_t.excluded). */
enum {
    STATE_EXCLUDED_NO,
    STATE_EXCLUDED_BEHIND,        /* far behind the best head */
    STATE_EXCLUDED_ERRORS,        /* error ratio too high */
    STATE_EXCLUDED_DNS_FAILED,    /* its host name does not resolve */
    STATE_EXCLUDED_DNS_TIMEOUT,   /* its host name's lookup did not answer in time */
    STATE_EXCLUDED_WRONG_CHAIN,   /* its eth_chainId (genesis hash) is not the network's */
    STATE_EXCLUDED_HEAD_AHEAD,    /* its head leads every other by more than max_head_lead */
    STATE_EXCLUDED_COUNT
};

typedef struct state_stats_rec {
    uint32_t pid;
    uint64_t updated_ms;
    uint64_t attempts;                            /* upstream attempts */
    uint64_t outcomes[STATE_OUTCOME_COUNT];       /* attempts by outcome */
    uint64_t failovers;                           /* attempts after which the call moved on */
    uint64_t lat_hist[STATE_LAT_BUCKETS];         /* attempts by latency bucket */
    uint64_t lat_sum_us;
    uint64_t ewma_us;                             /* this worker's latency EWMA */
    uint32_t inflight;                            /* at flush time */
    uint32_t max_inflight_seen;
    /* this worker's ranking at flush time (policy/score.h) */
    uint32_t rank;                                /* 1-based place in its plan, 0 = not in it */
    uint64_t score_milli;                         /* cost x 1000 */
    uint64_t latency_us;                          /* the latency the score used */
    uint32_t error_ppm;                           /* error ratio x 1e6 */
    uint32_t rate_limit_ppm;                      /* rate-limit ratio x 1e6 */
    uint64_t lag_plus1;                           /* blocks behind + 1; 0 = unknown */
    uint8_t excluded;                             /* STATE_EXCLUDED_*: why it is out of the plan */
    uint64_t credits_spent;                       /* billed units this worker spent here, ever */
    uint64_t hedges_sent;                         /* hedges (a read's second attempt) sent here */
    uint64_t hedges_won;                          /* ... whose answer was the one used */
    uint64_t hedges_cancelled;                    /* exchanges here cancelled: the other one answered first */
    uint64_t coalesced;                           /* client calls answered by riding another's call here */
    /* consensus (pool_consensus.c): per network, the sums over its endpoints count calls */
    uint64_t consensus_agreed;                    /* compared calls answered with this endpoint's answer */
    uint64_t consensus_none;                      /* compared calls with no quorum whose first answer was here */
    uint64_t consensus_disagreed;                 /* answers here outvoted by the quorum */
} state_stats_rec_t;

extern const state_schema_t state_stats_schema;

/* ---- client rate-limit cells (GCRA) ---- */
typedef struct state_cell_rec {
    uint64_t tat_us;              /* theoretical arrival time, shared-time µs */
    uint64_t interval_us;         /* the window's emission interval I (policy/limiter.h), so
                                     eviction can tell calls owed, (tat - now) / I; 0 = unknown
                                     (a version 1 record) */
} state_cell_rec_t;

extern const state_schema_t state_cell_schema;

/* ---- provider credit ledgers: one per (endpoint, window) ---- */
typedef struct state_ledger_rec {
    uint64_t window_start_ms;     /* the window this record counts (shared time); never moves back */
    uint64_t spent;               /* credits leased out in it (used or held by a worker) */
    uint8_t low_reported;         /* budget_low already announced for this window */
    uint8_t exhausted_reported;   /* budget_exhausted already announced */
} state_ledger_rec_t;

extern const state_schema_t state_ledger_schema;

/* ---- the anchor of shared time (base/sl_time.h), in meta under "clock" ---- */
typedef struct state_clock_rec {
    char boot_id[40];             /* the kernel's boot id the offset belongs to */
    uint64_t offset_us;           /* shared time = CLOCK_MONOTONIC + offset, during that boot */
    uint64_t high_us;             /* the latest shared time recorded (the next boot starts past it) */
} state_clock_rec_t;

extern const state_schema_t state_clock_schema;

/* ---- transaction pins: confirmation polls go to the endpoint that accepted ---- */
typedef struct state_pin_rec {
    char endpoint[72];            /* the endpoint id that accepted the transaction */
    uint64_t expires_ms;          /* shared time */
} state_pin_rec_t;

extern const state_schema_t state_pin_schema;

/* ---- client requests by method and outcome ----
 * One counter list per (network, worker slot): entry
 * method_index * STATE_REQ_OUTCOME_COUNT + outcome, where method_index is the
 * row in the chain's method table (policy_method_table) and the table's
 * length stands for every other method. */
#define STATE_REQ_OUTCOMES(X)                                                             \
    X(OK, "ok")                                                                           \
    X(RPC_ERROR, "rpc_error")                                                             \
    X(INVALID, "invalid")                                                                 \
    X(BLOCKED, "blocked")                                                                 \
    X(RATE_LIMITED, "rate_limited")                                                       \
    X(TIMEOUT, "timeout")                                                                 \
    X(UPSTREAM_ERROR, "upstream_error")                                                   \
    X(UNAVAILABLE, "unavailable")                                                         \
    X(AMBIGUOUS_WRITE, "ambiguous_write")                                                 \
    X(TOO_LARGE, "too_large")                                                             \
    X(ID_UNANSWERABLE, "id_unanswerable")                                                 \
    X(SLOW_CALL, "slow_call")                                                             \
    X(LOCAL, "local_error")                                                               \
    X(SHED, "shed")

typedef enum state_req_outcome {
#define STATE_REQ_ENUM_(name, str) STATE_REQ_##name,
    STATE_REQ_OUTCOMES(STATE_REQ_ENUM_)
#undef STATE_REQ_ENUM_
    STATE_REQ_OUTCOME_COUNT
} state_req_outcome_t;

const char *state_req_outcome_name(state_req_outcome_t o);

/* ---- pressure: one level per network, shared; one slot per worker ---- */
/* "pressure/<network>" in meta: the level every worker serves, changed only by
 * compare-and-set (state_pressure_update), and what it was computed from. */
typedef struct state_pressure_rec {
    uint8_t level;                /* a policy_pressure_level_t */
    uint64_t since_ms;            /* shared time: the level was entered */
    uint64_t changes;             /* level changes so far */
    uint32_t baseline_us;         /* slow-moving baseline of the p90 settle time, 0 = none yet */
    uint64_t baseline_at_ms;      /* when it was last moved */
    uint32_t depth;               /* inputs at the last change */
    uint32_t ceiling;
    uint32_t settle_p90_us;
    uint32_t refusal_ppm;
} state_pressure_rec_t;

extern const state_schema_t state_pressure_schema;

/* "chain/<network>" in meta: the floor of heads served to clients, per head
 * kind (policy_head_kind_t: latest, safe, finalized), shared by every worker's
 * chain view (pool/pool_chain.c); only ever raised (state_chain_raise).
 * Version 2: the identity learned from the endpoints' majority when the
 * network configures none (state_chain_learn), and the last reorg reported,
 * so that the workers that all see it raise one event (state_chain_reorg). */
#define STATE_CHAIN_KINDS 3
#define STATE_CHAIN_ID_MAX 48         /* POLICY_CHAINID_MAX */
#define STATE_CHAIN_HASH_MAX 67       /* "0x" + 64 hex digits + NUL */
typedef struct state_chain_rec {
    uint64_t floor[STATE_CHAIN_KINDS];
    uint64_t updated_ms;          /* shared time of the last raise */
    char identity[STATE_CHAIN_ID_MAX]; /* learned chain id / genesis hash, normal form ("" none) */
    uint64_t identity_at_ms;      /* when it was learned */
    /* the last reorg reported, known by the new tip it led to (every worker
       that sees the reorg sees that tip: the first to claim it reports it) */
    uint64_t reorg_tip;           /* the tip's height */
    char reorg_hash[STATE_CHAIN_HASH_MAX]; /* its hash, "0x..." */
    uint32_t reorg_depth;         /* heights replaced */
    uint64_t reorgs;              /* reorgs reported on the network, ever */
    /* version 3: reorg events bounded (state_chain_reorg's fold_ms) */
    uint64_t reorg_event_ms;      /* shared time of the last reorg event */
    uint64_t reorgs_folded;       /* reorgs counted since it, in no event yet */
} state_chain_rec_t;

extern const state_schema_t state_chain_schema;

#define STATE_SETTLE_BUCKETS 16       /* policy_settle_bounds_us */
#define STATE_PRESSURE_MAX_EP 64      /* POOL_MAX_ENDPOINTS */

/* "pr/<network>/<slot>" in stats: one worker's part, flushed with its
 * counters. Window fields cover the last pressure.window_ms; rates are per
 * second x 1000 over the last ~10 s; the rest only grows. */
typedef struct state_pressure_slot_rec {
    uint32_t pid;
    uint64_t updated_ms;
    uint32_t depth;                               /* calls admitted, not settled, at flush */
    uint64_t settle_hist[STATE_SETTLE_BUCKETS];   /* window: settle times */
    uint64_t tries;                               /* window: attempts + credit skips */
    uint64_t refusals;                            /* window: rate-limit answers + credit skips */
    uint64_t polls_merged;                        /* confirmation polls that went in a merged call */
    uint64_t calls_saved;                         /* upstream calls merging saved */
    uint64_t waits;                               /* confirmation polls that waited for a slot */
    uint64_t ep_calls_milli[STATE_PRESSURE_MAX_EP];      /* per endpoint (config order): calls/s */
    uint64_t ep_billed_milli[STATE_PRESSURE_MAX_EP];     /* billed credits/s */
    uint64_t ep_throughput_milli[STATE_PRESSURE_MAX_EP]; /* throughput credits/s */
    /* version 2: eth_getLogs splitting (pool/pool_logs.h) */
    uint64_t logs_splits;                         /* client calls served by sub-calls */
    uint64_t logs_subcalls;                       /* sub-calls sent */
    uint64_t logs_refused;                        /* calls refused with -32005 past max_logs_split */
} state_pressure_slot_rec_t;

extern const state_schema_t state_pressure_slot_schema;

/* The three live rates of an endpoint, per second x 1000, in this order
 * wherever they travel together (admin's view of an endpoint). */
typedef enum state_rate {
    STATE_RATE_CALLS,             /* upstream calls */
    STATE_RATE_BILLED,            /* billed credits */
    STATE_RATE_THROUGHPUT,        /* throughput credits (what per-second budgets count) */
    STATE_RATE_COUNT
} state_rate_t;

/* Rate k of endpoint ep (config order, below STATE_PRESSURE_MAX_EP) in r. */
static inline uint64_t state_slot_rate_milli(const state_pressure_slot_rec_t *r, size_t ep, state_rate_t k)
{
    const uint64_t *const by[STATE_RATE_COUNT] = {r->ep_calls_milli, r->ep_billed_milli, r->ep_throughput_milli};
    return by[k][ep];
}

/* ---- a worker's own limits: one counter list per worker slot ("srv/<slot>") ----
 * Entry STATE_SRV_<name>. GAUGE entries are the worker's current value (reset
 * when it starts); the others count up and survive restarts. */
#define STATE_SRV_COUNTERS(X)                                                                                \
    X(CONNECTIONS, "connections", 1)                         /* client connections open */                   \
    X(ACCEPTED, "accepted", 0)                               /* client connections accepted */               \
    X(MAX_CONN_PAUSES, "max_conn_pauses", 0)                 /* accepting paused at max_connections */       \
    X(ACCEPT_ERRORS, "accept_errors", 0)                     /* accept failed (EMFILE...): paused */         \
    X(ADMIN_CONN_PAUSES, "admin_conn_pauses", 0)             /* admin accepting paused at its cap */         \
    X(WRITE_TIMEOUTS, "write_timeouts", 0)                   /* clients closed for taking no bytes */        \
    X(BUFFERED_BYTES, "buffered_bytes", 1)                   /* answer bytes held in memory */               \
    X(BUFFERED_PEAK, "buffered_peak", 1)                     /* the most held at once */                     \
    X(BUFFER_REFUSED, "buffer_refused", 0)                   /* calls refused with 503 at the budget */      \
    X(SHARE_REFUSED, "share_refused", 0)                     /* ... at a caller's share of it */             \
    X(HEAD_REFUSED, "head_refused", 0)                       /* requests refused with 431 / 414 */           \
    X(ACCESS_DROPPED, "access_dropped", 0)                   /* access lines dropped: stderr blocked */      \
    X(STALLED_RESETS, "stalled_resets", 0)                   /* stalled clients reset to make room */        \
    X(PER_ADDRESS, "per_address", 0)                         /* closed at accept: address at its cap */      \
    X(EVICTED, "evicted", 0)                                 /* waiting on the client, closed for another */ \
    X(FIRST_REQUEST_TIMEOUTS, "first_request_timeouts", 0)   /* closed: no request in time */                \
    X(ADMIN_CONNECTIONS, "admin_connections", 1)             /* admin connections open */                    \
    X(ADMIN_RESERVE, "admin_reserve", 0)                     /* admin accepts on the spare descriptor */ \
    X(WS_CONNECTIONS, "ws_connections", 1)                   /* WebSocket connections open */                \
    X(WS_MESSAGES_IN, "ws_messages_in", 0)                   /* client messages (calls, batches) */          \
    X(WS_MESSAGES_OUT, "ws_messages_out", 0)                 /* answers sent over WebSocket */               \
    X(WS_SLOW_CLOSES, "ws_slow_closes", 0)                   /* closed 1008: did not read its answers */     \
    X(WS_IDLE_CLOSES, "ws_idle_closes", 0)                   /* closed: nothing received, pongs included */  \
    X(WS_REFUSED, "ws_refused", 0)                           /* upgrades refused at a connection cap */      \
    X(SUBS_NEWHEADS, "subs_newheads", 1)                     /* subscriptions open: eth newHeads */          \
    X(SUBS_LOGS, "subs_logs", 1)                             /* ... eth logs */                              \
    X(SUBS_SLOT, "subs_slot", 1)                             /* ... Solana slot */                           \
    X(SUBS_ROOT, "subs_root", 1)                             /* ... Solana root */                           \
    X(SUBS_SIGNATURE, "subs_signature", 1)                   /* ... Solana signature */                      \
    X(SUBS_ACCOUNT, "subs_account", 1)                       /* ... Solana account */                        \
    X(SUBS_SOL_LOGS, "subs_sol_logs", 1)                     /* ... Solana logs (mentions) */                \
    X(SUBS_PROGRAM, "subs_program", 1)                       /* ... Solana program */                        \
    X(SUBS_PENDING, "subs_pending", 1)                       /* ... eth newPendingTransactions (passed) */   \
    X(SUB_NOTIFICATIONS, "sub_notifications", 0)             /* subscription notifications sent */           \
    X(SUB_BACKFILLED, "sub_backfilled", 0)                   /* heights fetched by number to fill a gap */   \
    X(SUB_SKIPPED, "sub_skipped", 0)                         /* heights past the backfill bound, skipped */  \
    X(SUB_REORGED, "sub_reorged", 0)                         /* heights sent again: a reorg replaced them */ \
    X(SUB_LOGS_SENT, "sub_logs_sent", 0)                     /* logs notified (removed ones included) */     \
    X(SUB_LOGS_SKIPPED, "sub_logs_skipped", 0)               /* logs subscriptions ended: a block undelivered */ \
    X(SUB_REFUSED, "sub_refused", 0)                         /* subscribes refused at a bound */             \
    X(SUB_RESUMED, "sub_resumed", 0)                         /* subscribes that took a held one over */      \
    X(SUB_RESUME_EXPIRED, "sub_resume_expired", 0)           /* held ones found or swept past ws_resume_s */ \
    X(SUB_RESUME_TOO_FAR, "sub_resume_too_far", 0)           /* ... more than 128 heights behind: from the head */ \
    X(SUB_RESUME_DROPPED, "sub_resume_dropped", 0)           /* ... dropped past the bounds (the oldest) */  \
    X(SUB_TX_SKIPPED, "sub_tx_skipped", 0)                   /* Solana logs: transactions passed, not told */ \
    X(SUB_PASS_SOURCES, "sub_pass_sources", 1)               /* passthrough sources running */               \
    X(SUB_PASS_SOCKETS, "sub_pass_sockets", 1)               /* upstream sockets holding subscriptions */    \
    X(SUB_PASS_WAITING, "sub_pass_waiting", 1)               /* passthrough sources with no upstream now */  \
    X(SUB_PASS_RELAYED, "sub_pass_relayed", 0)               /* upstream notifications relayed */            \
    X(SUB_PASS_FAILOVERS, "sub_pass_failovers", 0)           /* passthroughs moved to another endpoint */    \
    X(SUB_PASS_UNSOURCED_MS, "sub_pass_unsourced_ms", 0)     /* ms passthrough sources had no upstream */    \
    X(REQ_HTTP1, "req_http1", 0)                             /* client requests over HTTP/1.x, plain */      \
    X(REQ_HTTP1_TLS, "req_http1_tls", 0)                     /* ... over HTTP/1.x on TLS */                  \
    X(REQ_H2, "req_h2", 0)                                   /* ... over HTTP/2 (TLS, by ALPN) */            \
    X(RAPID_RESETS, "rapid_resets", 0)                       /* h2 connections closed: streams mostly reset */ \
    X(ACCESS_KEY_REQUIRED, "access_key_required", 0)         /* keyless calls refused: anonymous deny */     \
    X(ACCESS_NETWORK, "access_network", 0)                   /* refused outside a key's networks */          \
    X(ACCESS_METHOD, "access_method", 0)                     /* ... outside its methods */                   \
    X(ACCESS_CONTRACT, "access_contract", 0)                 /* ... outside its contracts */                 \
    X(ACCESS_ORIGIN, "access_origin", 0)                     /* ... from an Origin it does not list */      \
    X(ACCESS_JWT, "access_jwt", 0)                           /* ... without the JWT its key asks for */      \
    X(ACCESS_PER_ADDRESS, "access_per_address", 0)           /* ... past its key's per_address limit */      \
    X(ACCESS_KEY_CREDITS, "access_key_credits", 0)           /* ... its key's credits spent */

typedef enum state_srv_counter {
#define STATE_SRV_ENUM_(name, str, gauge) STATE_SRV_##name,
    STATE_SRV_COUNTERS(STATE_SRV_ENUM_)
#undef STATE_SRV_ENUM_
    STATE_SRV_COUNT
} state_srv_counter_t;

const char *state_srv_counter_name(state_srv_counter_t c);
/* 1 for a gauge (the worker's current value), 0 for a counter. */
int state_srv_counter_is_gauge(state_srv_counter_t c);

/* ---- a variable-length list of counters ---- */
#define STATE_COUNTERS_MAX 2048
typedef struct state_counters_rec {
    uint32_t n;
    uint64_t v[STATE_COUNTERS_MAX];
} state_counters_rec_t;

/* Encodes v[0..n) as [1, n, [v...]]; decoding checks n <= STATE_COUNTERS_MAX. */
SL_MUST_CHECK sl_err_t state_counters_encode(const state_counters_rec_t *rec, sl_buf_t *out);
SL_MUST_CHECK sl_err_t state_counters_decode(const void *buf, size_t len, state_counters_rec_t *rec);

/* The layout of a per-method counters record ("pm/<network>/<endpoint>/<slot>",
 * and the sum of the slots): for each row of the chain's policy_method_table()
 * and one more for any other method, STATE_MC_COUNT counters. A table of
 * another length makes the stored records the wrong length, and they are
 * dropped (state_counters_sum, the worker's load). */
typedef enum state_method_counter {
    STATE_MC_REQUESTS,            /* upstream calls */
    STATE_MC_CREDITS,             /* billed credits (the provider's units) */
    STATE_MC_REFUSALS,            /* calls refused with a rate limit */
    STATE_MC_COUNT
} state_method_counter_t;

/* Where counter c of method row m sits (m = nmethods for any other method). */
static inline size_t state_mc_index(size_t m, state_method_counter_t c)
{
    return m * STATE_MC_COUNT + (size_t)c;
}

/* How many counters the record of a table of nmethods rows holds. */
static inline uint32_t state_mc_len(size_t nmethods)
{
    return (uint32_t)((nmethods + 1) * STATE_MC_COUNT);
}

#endif
