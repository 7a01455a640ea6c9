/* state/state_cluster_int.h: the cluster's internals, for state/ sources
 * and their tests only. */
#ifndef STATE_CLUSTER_INT_H
#define STATE_CLUSTER_INT_H

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <h2o/hostinfo.h>
#include <h2o/timeout.h>

#include "state/state_apikey.h"
#include "state/state_cluster.h"
#include "state/state_key.h"

#define STATE_REDIS_MAX_PENDING 4096   /* commands awaiting replies on one connection */

typedef struct state_redis state_redis_t;

/* Called once per command: reply NULL when the command failed (the
 * connection closed or was closed before its reply). The reply is freed
 * after the call. */
typedef void (*state_redis_fn)(void *data, redisReply *reply);
/* Called when a connection's context is gone (closed either way). */
typedef void (*state_redis_closed_fn)(state_redis_t *r);

/* One hiredis asynchronous connection on the worker's h2o event loop
 * (state_redis.c). The loop watches a dup() of hiredis' socket through an
 * h2o_socket_t (h2o reads nothing itself: H2O_SOCKET_FLAG_DONT_READ), and
 * hiredis' add/del read/write hooks start and stop that watch. */
struct state_redis {
    state_cluster_t *cl;
    const char *name;             /* "commands" or "subscriber", for logs */
    redisAsyncContext *ac;        /* NULL when closed */
    h2o_socket_t *sock;
    int reading;
    int want_write;
    int write_armed;              /* an h2o write notification is pending */
    int ready;                    /* the TCP connect completed */
    uint64_t sent_ms[STATE_REDIS_MAX_PENDING]; /* send times of commands without a reply, oldest first */
    size_t head, count;
    state_redis_closed_fn on_closed;
    char error[128];              /* why the last connection closed */
    state_redis_fn sub_fn;        /* the subscriber's message callback */
    void *sub_data;
};

/* Starts connecting to addr (a numeric address) and port; 0 if a connection
 * attempt is under way (its outcome comes through the callbacks), -1 if it
 * failed at once (logged). */
int state_redis_open(state_redis_t *r, const char *addr, uint16_t port);
/* Closes now: pending commands get their callback with NULL. Safe to call
 * from a reply callback (the free happens when it returns). */
void state_redis_close(state_redis_t *r);
/* Sends one command (argv[i] of argvlen[i] bytes); 0 if queued (fn will be
 * called exactly once), -1 if the connection cannot take it (fn is not
 * called). fn may be NULL for a command whose reply does not matter. */
int state_redis_send(state_redis_t *r, state_redis_fn fn, void *data, int argc, const char **argv,
                     const size_t *argvlen);
/* Why the connection is failing (hiredis' message), for a command that got
 * no reply: valid inside that command's callback. */
const char *state_redis_error(const state_redis_t *r);
/* The send time of the oldest command without a reply, or 0 if none. */
uint64_t state_redis_oldest_ms(const state_redis_t *r);
/* SUBSCRIBE channel(s) on a connection that will only receive: fn is called
 * with every message (and the subscription confirmations). */
int state_redis_subscribe(state_redis_t *r, state_redis_fn fn, void *data, int argc, const char **argv,
                          const size_t *argvlen);

/* The link's states (one writer: set_link in state_cluster.c). */
typedef enum state_link {
    STATE_LINK_DOWN,              /* closed; reconnects at retry_at_ms */
    STATE_LINK_RESOLVING,         /* the host name is being looked up */
    STATE_LINK_CONNECTING,        /* connections opening, handshake under way */
    STATE_LINK_JOINING,           /* connected; up once a heartbeat (a write) succeeds */
    STATE_LINK_UP,
    STATE_LINK_COUNT
} state_link_t;

/* 1 if from -> to is an edge of the link's machine. */
int state_link_edge_allowed(state_link_t from, state_link_t to);
const char *state_link_name(state_link_t l);

/* The Lua scripts, loaded with SCRIPT LOAD at each connection. */
typedef enum state_script {
    STATE_SCRIPT_HELLO,           /* heartbeat: host seen, hosts counted, time */
    STATE_SCRIPT_CAS,             /* an endpoint record's compare-and-set, published */
    STATE_SCRIPT_GET,             /* endpoint records with their versions */
    STATE_SCRIPT_SHIP,            /* events to the stream, told on the channel */
    STATE_SCRIPT_LEVEL,           /* a network's level: the first host to see a change */
    STATE_SCRIPT_GCRA,            /* a client-limit lease */
    STATE_SCRIPT_CREDITS,         /* a credit lease */
    STATE_SCRIPT_LEDGERS,         /* credit ledgers merged with the host's copies */
    STATE_SCRIPT_FLOOR,           /* a network's floor of heads served: the highest, published */
    STATE_SCRIPT_KEYPUT,          /* a run-time API key made, changed or revoked: the later wins, published */
    STATE_SCRIPT_KEYGET,          /* every run-time API key and tombstone */
    STATE_SCRIPT_JOBLEASE,        /* a leased job: taken (SET NX PX, a fencing token) or extended */
    STATE_SCRIPT_COUNT
} state_script_t;

const char *state_script_source(state_script_t s);
const char *state_script_name(state_script_t s);

struct state_cluster {
    const state_cluster_conf_t *conf;
    h2o_loop_t *loop;
    h2o_multithread_receiver_t *getaddr_receiver;
    state_t *st;
    state_link_t link;
    state_redis_t cmd;            /* commands */
    state_redis_t sub;            /* SUBSCRIBE'd: receives only */
    h2o_hostinfo_getaddr_req_t *resolving;
    char addr[64];                /* the Redis server's numeric address */
    h2o_timeout_t tick_timeout;   /* drives reconnects, heartbeats, command timeouts */
    h2o_timeout_entry_t tick;
    uint64_t retry_at_ms;         /* DOWN: when to reconnect (monotonic) */
    uint32_t backoff_ms;          /* back to 0 only once the link stayed UP for a while */
    uint64_t up_since_ms;         /* the link last went UP */
    uint64_t refused_until_ms;    /* an error reply: decisions are local until then */
    uint64_t errors;              /* error replies to this worker's commands */
    uint64_t errors_put;          /* ... as last written to its slot */
    uint64_t error_logged_ms;     /* error replies are logged at most once a minute */
    uint64_t next_mode_tick_ms;
    uint64_t connect_started_ms;
    int handshake_left;           /* replies the handshake still waits for */
    int subscribed;
    char sha[STATE_SCRIPT_COUNT][48];
    char channel[STATE_CLUSTER_PREFIX_MAX + 8];      /* "<prefix>ch": shared records */
    char hb_channel[STATE_CLUSTER_PREFIX_MAX + 96]; /* "<prefix>hb:<host>:<pid>": own heartbeat */
    char hosts_key[STATE_CLUSTER_PREFIX_MAX + 8];
    uint64_t next_hello_ms;
    int hello_pending;
    uint64_t last_hb_seen_ms;     /* the subscriber heard our own heartbeat */
    uint64_t hb_sent_ms;          /* the last heartbeat that reached Redis */
    uint32_t hosts;               /* hosts last seen (>= 1) */
    int64_t redis_offset_ms;      /* Redis TIME minus this host's wall clock, at the last heartbeat */
    uint64_t commands;            /* sent by this worker */
    uint64_t commands_put;        /* ... as last written to its slot */
    char down_why[160];           /* why the link last went down */
    int reported_down;            /* the current outage was logged */
    int destroying;
    char **watched;               /* endpoint keys ("<network>/<endpoint>") resynced on each return */
    size_t nwatched;
    int resync_pending;
    void (*on_change)(void *data); /* a shared record changed: refresh the snapshot now */
    void *on_change_data;
    int events_worker;            /* this worker ships and tails the event stream (one per host) */
    int ship_pending;
    uint64_t ship_upto;           /* the last sequence of the shipment under way */
    int tail_pending;
    int tail_again;               /* told of new entries while a read was under way */
    uint64_t next_tail_ms;
    char **ledgers;               /* credit ledger keys this host uses */
    size_t nledgers;
    int ledger_sync_pending;
    uint64_t next_ledger_sync_ms;
    int keys_sync_pending;        /* the events worker reads the run-time keys from Redis ... */
    int keys_sync_again;          /* ... and was told of a change meanwhile */
    uint64_t next_keys_sync_ms;
    state_cluster_job_result_fn on_job; /* another host's leased job result (events worker) */
    void *on_job_data;
    struct state_cache *cache;    /* the response cache whose Redis tier this link is, NULL if none */
    /* the endpoints added at run time (state_cluster_epapi.c) */
    void (*epapi_fn)(void *data); /* the host's copy changed: the master applies it */
    void *epapi_data;
    int epapi_sync_pending;
    int epapi_sync_again;         /* told of a change while a read was under way */
    uint64_t next_epapi_sync_ms;
};

/* The shared part of an endpoint record as Redis holds it (and the host's
 * copy, "cv/<network>/<endpoint>" in meta, with its version and whether it
 * changed here while Redis was away). */
typedef struct state_cluster_ep {
    uint64_t version;             /* Redis' version of the record (the copy's: as last applied) */
    uint8_t dirty;                /* the copy: changed on this host alone, not yet told to Redis */
    uint8_t breaker;
    uint64_t since_ms;
    uint32_t cooldown_ms;
    uint64_t opened_at_ms;
    char probe_host[STATE_CLUSTER_HOST_MAX + 1]; /* the half-open probe's owner: host ... */
    uint32_t probe_pid;                          /* ... and process */
    uint64_t probe_at_ms;
    uint8_t drained;
    uint64_t drained_at_ms;
    uint64_t rate_limited_until_ms;
    uint64_t transitions[3];
    uint32_t rl_backoff_ms;       /* the rate-limit backoff, doubling across every host's workers */
} state_cluster_ep_t;

extern const state_schema_t state_cluster_ep_schema;

/* The endpoint record's shared fields from c (another host's probe claim
 * reads as STATE_PROBE_ELSEWHERE); l's own fields are left as they are. */
void state_cluster_ep_to_local(const state_cluster_ep_t *c, const char *me, state_endpoint_rec_t *l);
/* The cluster's shape of l; prev says who owns a claim l calls elsewhere. */
void state_cluster_ep_from_local(const state_endpoint_rec_t *l, const state_cluster_ep_t *prev, const char *me,
                                 state_cluster_ep_t *c);
/* This host's record (changed while Redis was away; before: the copy as it
 * was then) merged into Redis' one: the later breaker change, this host's
 * drain change, the later rate-limit mark, the larger transition counts. */
void state_cluster_ep_merge(const state_cluster_ep_t *mine, const state_cluster_ep_t *before,
                            const state_cluster_ep_t *theirs, state_cluster_ep_t *out);

/* state_endpoint_transition with the link up. */
void state_cluster_ep_transition(state_cluster_t *cl, const char *key, state_update_fn fn, const void *ctx,
                                 size_t ctx_size, state_transition_done_fn done, void *data);
/* Marks the host's copy of key as changed here (a transition made alone). */
void state_cluster_ep_mark_dirty(state_cluster_t *cl, const char *key);
/* A message of the cluster's channel about an endpoint record. */
void state_cluster_ep_message(state_cluster_t *cl, const char *msg, size_t len);
/* Reads every watched record from Redis, applies the newer, pushes this
 * host's changes (the link just came up). */
void state_cluster_ep_resync(state_cluster_t *cl);
/* A network's level changed in this host's record, with events[0..n): Redis
 * decides whether this host reports it (the first to see a change does);
 * the events are appended when it answers yes (or cannot answer). 1 if
 * the question was sent (the caller must not append them), 0 if not. */
int state_cluster_level_report(state_cluster_t *cl, const char *network, uint8_t level, const state_event_t *events,
                               size_t n);

/* state_cluster_floor.c: a message "f <network> <floors>" of the channel:
 * another worker or host raised a network's floor of heads served. */
void state_cluster_floor_message(state_cluster_t *cl, const char *msg, size_t len);

/* state_cluster_keys.c: the run-time API keys (state_apikey.h) shared.
 * _put and _delete tell Redis of a change made on this host (nothing if
 * cl is NULL or its link is not up: the next sync pushes it). */
void state_cluster_keys_put(state_cluster_t *cl, const state_apikey_rec_t *rec);
void state_cluster_keys_delete(state_cluster_t *cl, const char *name, uint64_t at_ms);
/* The events worker merges the host's keys with Redis' (on each return of
 * the link, each "k" message of the channel, and every
 * STATE_CLUSTER_KEYS_SYNC_MS). */
#define STATE_CLUSTER_KEYS_SYNC_MS 5000
void state_cluster_keys_sync(state_cluster_t *cl);
void state_cluster_keys_told(state_cluster_t *cl);
/* state_cluster_jobs.c: a message "p <job> ..." of the channel: a leased
 * job's holder published its result. */
void state_cluster_job_message(state_cluster_t *cl, const char *msg, size_t len);

/* state_cache_redis.c: a message "c <network>" of the channel: a host
 * purged the network's response cache; the events worker purges this
 * host's local tier too. */
void state_cache_redis_message(state_cluster_t *cl, const char *msg, size_t len);

/* state_cluster_epapi.c: the events worker reads the endpoints added at
 * run time from Redis and merges them with the host's copy (the link came
 * up, the channel said "e", or SYNC_EVERY_MS passed: the tick). */
void state_cluster_epapi_sync(state_cluster_t *cl);
void state_cluster_epapi_tick(state_cluster_t *cl, uint64_t now_ms);

/* state_cluster_events.c: ships this host's events, tails the others'. */
void state_cluster_events_tick(state_cluster_t *cl, uint64_t now_ms);
/* The channel said the stream has new entries. */
void state_cluster_events_told(state_cluster_t *cl);

/* Redis answered a command with an error (out of memory, a read-only
 * replica, a missing script): the command failed, the connection did not.
 * The error is counted and, for REFUSED_HOLD_MS, state_cluster_up() says no
 * so that decisions are made locally as in the degraded mode; the link
 * stays (a missing script alone reconnects, which loads the scripts). */
void state_cluster_link_failed(state_cluster_t *cl, const char *why);

/* The host's mode: CAS in LMDB with its event; 1 if this call changed it. */
int state_cluster_mode_move(state_t *st, state_cluster_mode_t to, uint32_t hosts, const char *why, uint64_t now_ms);

/* state_cluster_channel.c: a message of the channel (not the heartbeat's),
 * handed to the part it is for by its first letter; unknown ones ignored. */
void state_cluster_channel_tell(state_cluster_t *cl, const char *msg, size_t len);

#endif
