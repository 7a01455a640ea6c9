/* state/state.h: one LMDB environment shared by every sluice process.
 *
 * The master opens it first (creating the folder and the schema record);
 * each worker opens its own handle after fork (MDB_NOTLS). Named databases:
 *   meta       schema version, next event sequence, "level/<network>" ->
 *              state_network_rec_t (redundancy level), "pressure/<network>" ->
 *              state_pressure_rec_t (pressure level), "chain/<network>" ->
 *              state_chain_rec_t (the floor of heads served)
 *   endpoints  "<network>/<endpoint>" -> state_endpoint_rec_t (breaker, drain, rate limit)
 *   stats      "<network>/<endpoint>/<slot>" -> state_stats_rec_t (one slot per worker);
 *              "pm/<network>/<endpoint>/<slot>" and "req/<network>/<slot>" ->
 *              state_counters_rec_t (per-method and per-request counters);
 *              "pr/<network>/<slot>" -> state_pressure_slot_rec_t (pressure inputs)
 *   events     big-endian u64 sequence -> state_event_t
 *   pins       transaction id -> state_pin_rec_t (the endpoint that accepted it)
 *   limits     client rate-limit cells (GCRA) -> state_cell_rec_t
 *   ledgers    "<network>/<endpoint>/<window>" -> state_ledger_rec_t (credit budgets)
 *   resume     "<identity>/<network>/<kind>/<params hash>" -> state_resume_rec_t
 *              (subscriptions held after their socket closed, state_resume.h)
 * Write patterns (DESIGN.md §3): rare transitions go through
 * state_endpoint_update() (compare-and-set inside one write transaction, with
 * their events); hot counters are flushed per worker slot every ~100 ms;
 * readers take a snapshot. No write transaction per request.
 *
 * Writes use MDB_NOSYNC: a killed process loses nothing (the kernel has the
 * pages); the master calls state_sync() every second to bound what a power
 * loss could take. state/ decides nothing and knows no HTTP. */
#ifndef STATE_H
#define STATE_H

#include <stddef.h>
#include <stdint.h>

#include "base/sl_err.h"
#include "state/state_record.h"

#define STATE_SCHEMA_VERSION 1

typedef struct state state_t;

typedef struct state_conf {
    const char *path;             /* folder; created if missing */
    size_t map_size_mb;
    uint32_t event_max_count;     /* retention: keep at most this many events */
    uint32_t event_max_age_s;     /* ... and none older than this */
    uint32_t max_cells;           /* client-limit cells kept at most; 0 = STATE_CELLS_PER_MB per MB */
} state_conf_t;

/* Limit cells are bounded so that callers cannot fill the map with them
 * (a cell is about 130 bytes in LMDB's pages: this keeps them within about a
 * quarter of the map). */
#define STATE_CELLS_PER_MB 2048

/* Opens (creating as needed) the environment. Errors: SL_ERR_IO (folder,
 * permissions), SL_ERR_VERSION (written by another schema version),
 * SL_ERR_STATE (anything else LMDB reports); the detail is logged. */
SL_MUST_CHECK sl_err_t state_open(const state_conf_t *conf, state_t **out);
void state_close(state_t *st);

/* ---- shared time (base/sl_time.h) ---- */
/* Sets this process's shared-time offset from the anchor kept in meta (the
 * same for every process of a boot), writing one if there is none for this
 * boot; state_open does it. See state_clock.c for the rule across reboots. */
SL_MUST_CHECK sl_err_t state_clock_anchor(state_t *st);
/* Records the latest shared time (and an offset that followed a forward
 * step of the wall clock); the master calls it every second. */
SL_MUST_CHECK sl_err_t state_clock_note(state_t *st);

/* ---- master housekeeping ---- */
/* Clears reader slots left by dead processes; *cleared gets how many. */
SL_MUST_CHECK sl_err_t state_check_readers(state_t *st, int *cleared);
/* Flushes written pages to disk. */
SL_MUST_CHECK sl_err_t state_sync(state_t *st);
/* Changes the event retention state_trim_events applies (a reload). */
void state_retention_set(state_t *st, uint32_t event_max_count, uint32_t event_max_age_s);
/* Applies event retention (count and age); *removed gets how many. */
SL_MUST_CHECK sl_err_t state_trim_events(state_t *st, uint64_t now_ms, size_t *removed);
/* Bytes live data takes in the map, and the map's size. */
void state_usage(state_t *st, size_t *used, size_t *size);
/* Past STATE_FULL_PCT of the map (or at once, with force: an append met
 * MDB_MAP_FULL), drops the oldest quarter of the events, if events are at
 * least a tenth of what is stored. SL_ERR_MAP_FULL if nothing was dropped
 * though the map is that full. The master calls it on its housekeeping tick,
 * and state_event_append every 32 appends; the workers' event writes inside
 * other transactions (state_event_put) rely on those. */
#define STATE_FULL_PCT 80
SL_MUST_CHECK sl_err_t state_make_room(state_t *st, int force);

/* ---- snapshots: one reused read transaction per process ---- */
SL_MUST_CHECK sl_err_t state_read_begin(state_t *st);
void state_read_end(state_t *st);
/* Inside a snapshot. SL_ERR_NOT_FOUND if absent; SL_ERR_CORRUPT or
 * SL_ERR_VERSION if the stored bytes do not decode (logged once per key).
 * A breaker value that is no state (>= STATE_BREAKER_STATES) reads as
 * closed: left as it is, it would keep the endpoint out of every plan with
 * no probe ever due (a permanent outage). The next write of the record, or
 * state_endpoints_repair, stores the repair. */
SL_MUST_CHECK sl_err_t state_endpoint_get(state_t *st, const char *key, state_endpoint_rec_t *rec);
SL_MUST_CHECK sl_err_t state_stats_get(state_t *st, const char *key, state_stats_rec_t *rec);

/* ---- transitions: compare-and-set ---- */
/* Called inside the write transaction with the current record (zeroed and
 * exists = 0 if absent or undecodable). Returns 1 to write *rec back and
 * append events[0..*nevents) (at most STATE_MAX_TXN_EVENTS), 0 to change
 * nothing. Exactly one of several racing processes sees the old state.
 * A record whose breaker value is no state is handed to fn repaired
 * (closed) and written back even if fn returns 0, with a state_error event
 * naming the endpoint; *changed then stays 0 (fn's own change was not
 * made). */
#define STATE_MAX_TXN_EVENTS 4
typedef int (*state_update_fn)(void *ctx, state_endpoint_rec_t *rec, int exists, state_event_t *events,
                               size_t *nevents);
SL_MUST_CHECK sl_err_t state_endpoint_update(state_t *st, const char *key, state_update_fn fn, void *ctx,
                                             int *changed);

/* A transition of the shared part of an endpoint record (breaker, drain,
 * rate-limit mark, half-open probe claim) as one compare-and-set, with the
 * same fn as state_endpoint_update (ctx is copied: ctx_size bytes; fn may be
 * called more than once, each time with a fresh copy's state as fn left it,
 * so it must decide from the record alone). done is called exactly once
 * with whether fn's change was made and the record after it:
 *  - without a cluster (or while this worker's link to Redis is down), at
 *    once, from LMDB (state_endpoint_update: one winner among this host's
 *    workers; with a cluster the change is told to Redis when it returns);
 *  - with the link up, when Redis has answered: the compare-and-set runs in
 *    Redis (one winner across every host and worker), the host's copy in
 *    LMDB is updated and the other hosts are told on the cluster's channel.
 *    A conflict re-runs fn on the newer record (a few times); Redis failing
 *    meanwhile makes it an LMDB transition as above.
 * The events fn fills are appended to this host's log only when its change
 * is made. Callers must outlive a pending done (the pool and the admin
 * listener do: a worker destroys its cluster link before them). */
typedef void (*state_transition_done_fn)(void *data, sl_err_t err, int changed, const state_endpoint_rec_t *rec);
void state_endpoint_transition(state_t *st, const char *key, state_update_fn fn, const void *ctx, size_t ctx_size,
                               state_transition_done_fn done, void *data);
/* state_endpoint_update that also hands back the record after the call. */
SL_MUST_CHECK sl_err_t state_endpoint_update_local(state_t *st, const char *key, state_update_fn fn, void *ctx,
                                                   int *changed, state_endpoint_rec_t *out);

/* Writes the repair of every record of keys[0..n) ("<network>/<endpoint>")
 * whose breaker value is no state (see state_endpoint_get), one state_error
 * event each; *repaired gets how many this call wrote. One read transaction
 * when nothing is wrong. The master runs it on its housekeeping tick, so a
 * record no worker writes is repaired too. */
SL_MUST_CHECK sl_err_t state_endpoints_repair(state_t *st, const char *const *keys, size_t n, size_t *repaired);

/* ---- network level: how many endpoints of a network are usable ---- */
typedef enum state_network_level {
    STATE_NETWORK_DOWN = 0,       /* no usable endpoint */
    STATE_NETWORK_LOW = 1,        /* one usable endpoint left (of several) */
    STATE_NETWORK_REDUNDANT = 2,  /* more than one, or the only one configured */
} state_network_level_t;

typedef struct state_network_rec {
    uint8_t level;                /* a state_network_level_t (one byte in the record) */
    uint64_t since_ms;
} state_network_rec_t;

extern const state_schema_t state_network_schema;

/* Reads the records of keys[0..n) (zeroed when absent) and the network's
 * level record, inside one write transaction, and calls fn; if fn returns 1
 * the level record and events are written. Serialised by LMDB's write lock,
 * so racing workers never report the same change twice. */
typedef int (*state_network_fn)(void *ctx, const state_endpoint_rec_t *recs, size_t n, state_network_rec_t *level,
                                int exists, state_event_t *events, size_t *nevents);
SL_MUST_CHECK sl_err_t state_network_update(state_t *st, const char *network, const char *const *keys, size_t n,
                                            state_network_fn fn, void *ctx);

/* ---- chain: the heads served on a network (state_chain.c) ---- */
/* The network's record, inside a snapshot (state_read_begin). Zeroed and
 * SL_ERR_NOT_FOUND when no worker raised it yet. */
SL_MUST_CHECK sl_err_t state_chain_get(state_t *st, const char *network, state_chain_rec_t *rec);
/* A reader's last look at one network's record: its key, and the record's
 * bytes with what they decoded to. Zeroed before the first read. */
typedef struct state_chain_seen {
    char key[96];                 /* "chain/<network>", built at the first read */
    uint8_t raw[64];              /* the bytes last decoded ... */
    uint32_t len;                 /* ... this many (0: none) */
    state_chain_rec_t rec;        /* ... and the record they are */
} state_chain_seen_t;
/* state_chain_get for a reader that asks often (each head served): the
 * record is decoded only when its bytes differ from those *seen holds
 * (the floor moves once per new head; most reads find it as it was). */
SL_MUST_CHECK sl_err_t state_chain_get_seen(state_t *st, const char *network, state_chain_seen_t *seen,
                                            state_chain_rec_t *rec);
/* Raises the record's floors to at least floor[] (merged by max, one write
 * transaction, nothing written when nothing rises); *merged gets the record
 * as it stands after. */
SL_MUST_CHECK sl_err_t state_chain_raise(state_t *st, const char *network, const uint64_t floor[STATE_CHAIN_KINDS],
                                         uint64_t now_ms, state_chain_rec_t *merged);
/* Keeps id (a normal form) as the network's learned identity unless one is
 * kept already; kept gets the one kept, which every worker then uses. */
SL_MUST_CHECK sl_err_t state_chain_learn(state_t *st, const char *network, const char *id, uint64_t now_ms,
                                         char kept[STATE_CHAIN_ID_MAX]);
/* Replaces the learned identity from (a normal form) by id: every endpoint
 * that answers now agrees on id (server/srv_chainid.c at start,
 * pool/pool_chainid.c from the probes). *swapped is 1 for the one caller
 * that changed it (it reports the change), 0 if the identity kept was not
 * from any more (another worker swapped it first); kept gets the one kept. */
SL_MUST_CHECK sl_err_t state_chain_relearn(state_t *st, const char *network, const char *from, const char *id,
                                           uint64_t now_ms, int *swapped, char kept[STATE_CHAIN_ID_MAX]);

/* What a reorg's claim decided (state_chain_reorg). */
typedef struct state_chain_reorg_claim {
    int first;                    /* this caller claimed that tip first: the reorg is counted */
    int report;                   /* ... and a `reorg` event is due (none in the last fold_ms) */
    uint64_t folded;              /* reorgs counted since the last event, this one included when it reports */
} state_chain_reorg_claim_t;

/* Claims the report of a reorg of depth heights that led to the tip at
 * tip_height with hash tip_hash ("0x..."): claim->first is 1 for the first
 * worker to claim that tip (reorgs and the depth are counted in the record),
 * 0 for every other. Events are bounded per network: report is 1 when no
 * event was reported within fold_ms before now_ms (shared time); a reorg
 * within it is folded into the next report's count. One write transaction;
 * a reorg is rare. */
SL_MUST_CHECK sl_err_t state_chain_reorg(state_t *st, const char *network, uint64_t tip_height, const char *tip_hash,
                                         uint32_t depth, uint64_t now_ms, uint32_t fold_ms,
                                         state_chain_reorg_claim_t *claim);

/* ---- pressure: the level of a network and the workers' slots ---- */
/* Inside a snapshot: the level record of network (zeroed, SL_ERR_NOT_FOUND,
 * when absent: ok, never changed). */
SL_MUST_CHECK sl_err_t state_pressure_get(state_t *st, const char *network, state_pressure_rec_t *rec);
/* Compare-and-set of the level record, as state_endpoint_update: fn gets the
 * current record (zeroed, exists = 0, if absent or undecodable) inside one
 * write transaction and returns 1 to write it and events[0..*nevents). */
typedef int (*state_pressure_fn)(void *ctx, state_pressure_rec_t *rec, int exists, state_event_t *events,
                                 size_t *nevents);
SL_MUST_CHECK sl_err_t state_pressure_update(state_t *st, const char *network, state_pressure_fn fn, void *ctx,
                                             int *changed);
/* Writes n worker slots ("pr/<network>/<slot>") in one write transaction. */
SL_MUST_CHECK sl_err_t state_pressure_slots_put(state_t *st, const char *const *keys,
                                                const state_pressure_slot_rec_t *const *recs, size_t n);
/* Inside a snapshot; errors as state_endpoint_get. */
SL_MUST_CHECK sl_err_t state_pressure_slot_get(state_t *st, const char *key, state_pressure_slot_rec_t *rec);
/* Inside a snapshot: slots 1..nworkers of network, but skip_slot (0: none),
 * summed into *sum. The growing counters come from every slot; depth, the
 * window fields and the rates only from slots written within fresh_ms of
 * now_ms (a worker that died or stopped flushing is not in flight).
 * sum->updated_ms is the freshest slot's. */
void state_pressure_slots_sum(state_t *st, const char *network, unsigned nworkers, unsigned skip_slot, uint64_t now_ms,
                              uint64_t fresh_ms, state_pressure_slot_rec_t *sum);

/* ---- events ---- */
/* Zeroes ev and sets its time, kind, names (NULL: none; cut to fit) and the
 * calling process as its observer. */
void state_event_init(state_event_t *ev, state_event_kind_t kind, const char *network, const char *endpoint,
                      uint64_t now_ms);

/* With cluster: this host's name, which every event this process appends
 * carries (unless it names another host: one that came from Redis). */
void state_set_host(state_t *st, const char *host);

/* Appends ev with the next sequence number (set in ev->seq). On a full map it
 * trims the oldest events and tries once more. */
SL_MUST_CHECK sl_err_t state_event_append(state_t *st, state_event_t *ev);
/* Events with seq > since, oldest first, at most max; *n gets the count. */
SL_MUST_CHECK sl_err_t state_events_read(state_t *st, uint64_t since, state_event_t *out, size_t max, size_t *n);
/* The sequence of the newest event (0 if none). */
uint64_t state_events_last_seq(state_t *st);

/* ---- hot counters ---- */
/* Writes n stats records (keys[i] -> recs[i]) in one write transaction. */
SL_MUST_CHECK sl_err_t state_stats_put(state_t *st, const char *const *keys, const state_stats_rec_t *recs, size_t n);

/* Counter lists (client requests by method and outcome), one per key. */
SL_MUST_CHECK sl_err_t state_counters_put(state_t *st, const char *const *keys, const state_counters_rec_t *const *recs,
                                          size_t n);
/* Inside a snapshot; errors as state_endpoint_get. */
SL_MUST_CHECK sl_err_t state_counters_get(state_t *st, const char *key, state_counters_rec_t *rec);

/* ---- transaction pins ---- */
/* Records (or refreshes) a pin under key ("<network>/<txid>"). */
SL_MUST_CHECK sl_err_t state_pin_put(state_t *st, const char *key, const state_pin_rec_t *rec);
/* Looks a pin up in its own short read transaction: SL_ERR_NOT_FOUND if
 * absent or expired at now_ms. */
SL_MUST_CHECK sl_err_t state_pin_get(state_t *st, const char *key, uint64_t now_ms, state_pin_rec_t *rec);
/* Deletes pins that expired before now_ms; *removed gets how many. */
SL_MUST_CHECK sl_err_t state_pins_purge(state_t *st, uint64_t now_ms, size_t *removed);

/* ---- budgets: client limit cells and provider credit ledgers ---- */
typedef enum state_budget_db {
    STATE_BUDGET_LIMITS,          /* state_cell_rec_t records */
    STATE_BUDGET_LEDGERS,         /* state_ledger_rec_t records */
} state_budget_db_t;

/* Reads the records of keys[0..n) (zeroed when absent or undecodable) into
 * recs (an array of records of the db's type, recsize bytes each) inside one
 * write transaction and calls fn; if fn returns 1, every record is written
 * back and events[0..*nevents) are appended. The lease step of a budget:
 * serialised by LMDB's write lock, so two workers never spend the same
 * capacity. */
typedef int (*state_budget_fn)(void *ctx, void *recs, size_t n, state_event_t *events, size_t *nevents);
SL_MUST_CHECK sl_err_t state_budget_update(state_t *st, state_budget_db_t db, const char *const *keys, size_t n,
                                           state_budget_fn fn, void *ctx);
/* state_budget_update for client-limit cells, which are bounded: when the
 * keys[] absent from the database would take it past max_cells, as many
 * other cells go first, in the same transaction, chosen by a clock hand
 * that walks the key space: cells idle at now_us (TAT not ahead) are taken
 * first, else the one owing the fewest calls among the next few ((TAT - now)
 * / the interval fn stores in state_cell_rec_t.interval_us), never one of
 * keys[]. A write that meets a full map evicts a batch of cells the same way
 * in its own transaction and is tried once more. So a flood of identities
 * costs the oldest idle cells, never the ability to keep limits. */
SL_MUST_CHECK sl_err_t state_cells_update(state_t *st, const char *const *keys, size_t n, uint64_t now_us,
                                          state_budget_fn fn, void *ctx);
/* How many limit cells are stored. */
size_t state_cells_count(state_t *st);
/* Reads one record of db inside a snapshot (state_read_begin). */
SL_MUST_CHECK sl_err_t state_budget_get(state_t *st, state_budget_db_t db, const char *key, void *rec);
/* Deletes limit cells idle since before now_us (their TAT is in the past),
 * in transactions of at most STATE_PURGE_BATCH deletions (fewer when the map
 * is too full for that many page copies), so it works on a full map too. */
#define STATE_PURGE_BATCH 256
SL_MUST_CHECK sl_err_t state_cells_purge(state_t *st, uint64_t now_us, size_t *removed);

/* ---- degraded: a part of this process enforcing locally ---- */
/* Client limits and credit budgets fall back to per-worker enforcement when
 * their shared records cannot be read or written (fail-safe, never open).
 * state_degraded_note() tells which way the last try went; on a change it
 * logs and appends a state_degraded or state_restored event (reason: which
 * part, and why). The event is appended in a transaction of its own, after
 * the one that failed, so it needs no room that the failure took; if it
 * cannot be written either, it stays pending and is tried again with the
 * next note (at most once a second), and the log line has said it already. */
typedef enum state_part {
    STATE_PART_LIMITS,            /* client-limit cells */
    STATE_PART_CREDITS,           /* provider credit ledgers */
    STATE_PART_LEASES,            /* leased probes (cluster:): each host probes for itself */
    STATE_PART_COUNT
} state_part_t;

void state_degraded_note(state_t *st, state_part_t part, sl_err_t result, uint64_t now_ms);
/* 1 while part is degraded in this process. */
int state_degraded(const state_t *st, state_part_t part);
/* Counts n decisions taken locally for part (for the exit line and metrics). */
void state_degraded_count(state_t *st, state_part_t part, uint64_t n);
uint64_t state_degraded_decisions(const state_t *st, state_part_t part);
/* "limits", "credits", "leases" (a label value); "unknown" out of range. */
const char *state_part_name(state_part_t part);
/* Per worker slot, the counters record "deg/<slot>" (written with the
 * request counters): for each part, [degraded now (0/1), local decisions]. */
#define STATE_DEGRADED_COUNTERS (2 * STATE_PART_COUNT)
/* The most limit cells kept (state.max_limit_cells or its default). */
size_t state_cells_max(const state_t *st);

/* For tests and tools: raw put of arbitrary bytes into a named database. */
SL_MUST_CHECK sl_err_t state_raw_put(state_t *st, const char *db, const void *key, size_t klen, const void *val,
                                     size_t vlen);

#endif
