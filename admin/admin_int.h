/* admin/admin_int.h: admin/ internal, for the admin/ sources and their tests. */
#ifndef ADMIN_INT_H
#define ADMIN_INT_H

#include <cjson/cJSON.h>

#include "admin/admin.h"
#include "base/sl_buf.h"
#include "pool/pool_conf.h"
#include "state/state.h"
#include "state/state_counters.h"
#include "state/state_record.h"

/* ---- the router's gate (admin_guard.c) ---- */
#define ADMIN_GUARD_NAMES 5                 /* localhost, 127.0.0.1, [::1], the listener as configured and as bound */
#define ADMIN_AUTH_SLOTS 256                /* client addresses with failed attempts, per worker */
#define ADMIN_AUTH_BURST 10                 /* failed attempts at once per address ... */
#define ADMIN_AUTH_WINDOW_US 60000000ULL    /* ... per minute (then one per 6 s) */

typedef struct admin_auth_slot {
    uint8_t key[16];              /* IPv6, IPv4-mapped, or an IPv6 /64 */
    uint64_t tat_us;              /* GCRA's theoretical arrival time of failures */
} admin_auth_slot_t;

typedef struct admin_guard {
    char names[ADMIN_GUARD_NAMES][64]; /* Host names answered without a token ("" ends) */
    admin_auth_slot_t slots[ADMIN_AUTH_SLOTS];
    size_t nslots;
} admin_guard_t;

/* listen: admin.listen as configured; bound: the address as bound ("[::1]:8550"). */
void admin_guard_init(admin_guard_t *g, const char *listen, const char *bound);
/* 1 if a Host value names this listener (any port, or none). */
int admin_guard_host_ok(const admin_guard_t *g, const char *host, size_t len);
/* 1 if Origin is this listener's own origin, "http://" + host. */
int admin_guard_origin_ok(const char *origin, size_t olen, const char *host, size_t hlen);
/* 1 if a Content-Type value is application/json (parameters allowed). */
int admin_guard_json_type(const char *ct, size_t len);
/* The throttle's key of a client address: IPv4 as v4-mapped, IPv6 per /64. */
void admin_guard_addr_key(const struct sockaddr *sa, uint8_t key[16]);
/* 0 if the address may try a token now, else the µs until it may. */
uint64_t admin_guard_auth_wait_us(admin_guard_t *g, const uint8_t key[16], uint64_t now_us);
/* Records a failed attempt; 1 if it used up the address's allowance. */
int admin_guard_auth_failed(admin_guard_t *g, const uint8_t key[16], uint64_t now_us);
/* Without a token: answers a request the listener refuses (foreign Host,
 * cross-origin or non-JSON write) and returns 1; 0 to go on routing. */
int admin_guard_request(admin_t *a, h2o_req_t *req);
/* Runs authorized() unless the client's address is throttled; on a refusal
 * (401, 429) answers and returns 1; 0 when authorized. */
int admin_guard_auth(admin_t *a, h2o_req_t *req, int (*authorized)(admin_t *a, h2o_req_t *req));

struct admin {
    h2o_handler_t super;          /* first: h2o calls on_req with this pointer */
    admin_conf_t conf;
    h2o_timeout_t sse_timeout;    /* the event streams' polling tick */
    uint32_t nstreams;            /* event streams open in this worker (conf.max_streams) */
    h2o_timeout_t reload_timeout; /* reload and endpoint requests' polling tick (set up on first use) */
    int reload_timeout_ready;
    uint8_t reload_tag;           /* the last tag given to a reload request */
    unsigned reload_waiting;      /* reload requests waiting for their event */
    unsigned epapi_waiting;       /* endpoint changes waiting to be applied (admin_epapi_wait.c) */
    admin_guard_t guard;          /* this worker's Host names and failed-auth table */
    char page_csp[320];           /* the operator page's Content-Security-Policy */
};

/* One endpoint as the operator sees it: config + shared record + every
 * worker's counters merged. */
typedef struct admin_ep_view {
    const pool_network_conf_t *net;
    const pool_endpoint_conf_t *ep;
    state_endpoint_rec_t rec;     /* zeroed when absent (never failed: closed) */
    state_stats_rec_t stats;      /* summed over worker slots */
    uint32_t inflight;            /* summed over workers that flushed recently */
    uint32_t concurrency_reached; /* each worker's peak in flight since it started, summed */
    double ewma_ms;               /* attempts-weighted mean of the workers' EWMAs */
    double p90_ms;                /* from the merged histogram */
    int usable;
    int demoted;                  /* last in the plan until rec.demoted_until_ms */
    const char *excluded;         /* why not usable, or NULL */
    char wrong_chain[96];         /* "wrong chain (want 0x1)", excluded's text for a wrong-chain endpoint */
    char ahead[96];               /* "head ahead of every other endpoint by N", excluded's text then */
    int position;                 /* 1-based place in the plan, 0 if excluded */
    state_stats_rec_t ranked;     /* the freshest worker's ranking fields */
    int has_ranked;
    state_ledger_rec_t ledger[POLICY_CREDIT_WINDOW_COUNT];
    uint64_t *per_method;         /* state_mc_len(nmethods) counters at state_mc_index(), merged */
    size_t nmethods;
    size_t index;                 /* in its network's endpoint list */
    /* live rates over the last ~10 s, every fresh worker summed, per second
     * x 1000, by STATE_RATE_* (throughput credits: budgets only) */
    uint64_t rate_milli[STATE_RATE_COUNT];
} admin_ep_view_t;

/* A network's pressure as the operator sees it: the shared level record,
 * the workers' slots summed, and the inputs computed from them now. */
typedef struct admin_net_view {
    const pool_network_conf_t *net;
    state_pressure_rec_t rec;
    state_pressure_slot_rec_t sum;
    state_chain_rec_t chain;      /* the heads served on the network */
    policy_pressure_inputs_t in;
    uint32_t slots[POOL_MAX_ENDPOINTS]; /* what each endpoint adds to the ceiling (0: not usable) */
} admin_net_view_t;
/* Why an endpoint whose host name does not resolve is unusable. */
#define ADMIN_DNS_FAILED "host name does not resolve"
#define ADMIN_DNS_TIMEOUT "host name lookup timed out (timeouts.connect_ms)"

/* Collects every endpoint of every network (in config order) into a new
 * array; *n gets its length. The caller frees it with admin_view_free. */
admin_ep_view_t *admin_view_collect(admin_t *a, size_t *n);
void admin_view_free(admin_ep_view_t *v, size_t n);
/* 1 if every network has at least one usable endpoint; else why names one. */
int admin_view_ready(const admin_ep_view_t *v, size_t n, const admin_conf_t *conf, char *why, size_t why_len);

/* Sends a cJSON document (and frees it). */
int admin_send_json(h2o_req_t *req, int status, cJSON *doc);
int admin_send_text(h2o_req_t *req, int status, const char *content_type, const char *body, size_t len);
/* "2026-11-29T14:00:00.123Z" from shared-time ms (which reads as wall time); 0 gives NULL in JSON. */
void admin_iso_time(uint64_t ms, char out[32]);
/* A query parameter's value as an unsigned number, or dflt. */
uint64_t admin_query_u64(h2o_req_t *req, const char *name, uint64_t dflt);
/* A query parameter's raw value (*len bytes, not decoded), or NULL. */
const char *admin_query_value(h2o_req_t *req, const char *name, size_t *len);
/* p[0..n) as a decimal u64; dflt if empty, not all digits or too large. */
uint64_t admin_parse_u64(const char *p, size_t n, uint64_t dflt);

/* The route table (admin/admin.c). A route's flags say how it is matched
 * and guarded, so a row reads as what it is instead of as a row of 0s and 1s. */
typedef enum admin_route_flag {
    ADMIN_ROUTE_PREFIX = 1u << 0, /* path is a prefix: the rest are parameters (drain) */
    ADMIN_ROUTE_AUTH = 1u << 1,   /* needs the token when one is set */
} admin_route_flag_t;
#define ADMIN_ROUTE_FLAGS (ADMIN_ROUTE_PREFIX | ADMIN_ROUTE_AUTH) /* every flag there is */

typedef int (*admin_route_fn)(admin_t *a, h2o_req_t *req);
typedef struct admin_route {
    const char *method;
    const char *path;
    unsigned flags; /* admin_route_flag_t bits */
    admin_route_fn fn;
} admin_route_t;

/* The rows, in match order (static storage). */
const admin_route_t *admin_routes(size_t *n);
/* The route for method and path, or NULL; *path_known says whether some
 * route has the path (NULL then means 405, else 404). */
const admin_route_t *admin_route_match(h2o_iovec_t method, h2o_iovec_t path, int *path_known);

/* Route handlers. */
int admin_route_endpoints(admin_t *a, h2o_req_t *req);
int admin_route_drain(admin_t *a, h2o_req_t *req);
int admin_route_events(admin_t *a, h2o_req_t *req);
int admin_route_stream(admin_t *a, h2o_req_t *req);
int admin_route_metrics(admin_t *a, h2o_req_t *req);
int admin_route_reload(admin_t *a, h2o_req_t *req);
int admin_route_epapi_add(admin_t *a, h2o_req_t *req);
int admin_route_epapi_change(admin_t *a, h2o_req_t *req);
int admin_route_epapi_remove(admin_t *a, h2o_req_t *req);
/* Answers an endpoint change (o taken; "status" added) with status once this
 * host's workers run the entries' generation the change made, "applied"; 202
 * "applying" past a bounded wait (admin_epapi_wait.c). */
int admin_epapi_answer(admin_t *a, h2o_req_t *req, cJSON *o, int status);
int admin_route_config(admin_t *a, h2o_req_t *req);
int admin_route_page(admin_t *a, h2o_req_t *req);
/* Computes a->page_csp from the embedded page (admin_page.c). */
void admin_page_init(admin_t *a);
/* The page's Content-Security-Policy into out: its only inline <script> and
 * <style> allowed by SHA-256, nothing else. SL_ERR_INVALID if either block is
 * missing, has attributes or appears twice, or out is too small. */
SL_MUST_CHECK sl_err_t admin_page_csp(const char *html, size_t len, char *out, size_t cap);
/* The endpoint's credit budget: profile, units spent in total, and per
 * window spent / remaining / resets_at / forecast (admin_credits.c). */
cJSON *admin_credits_json(const admin_ep_view_t *v, uint64_t now_ms);
/* Window w of v's budget: budget, spent, remaining, resets_at, and the
 * forecast from the live rates (admin_credits.c). NULL if w has no budget. */
cJSON *admin_credit_window_json(const admin_ep_view_t *v, policy_credit_window_t w, uint64_t now_ms);
/* Prometheus series of the credit budgets. */
void admin_credits_metrics(admin_t *a, sl_buf_t *b, const admin_ep_view_t *v, size_t n);

/* admin_cluster.c: this host's cluster mode, for /metrics and /readyz
 * (nothing without cluster:). */
void admin_cluster_metrics(admin_t *a, sl_buf_t *b);
cJSON *admin_cluster_json(admin_t *a);
/* Per endpoint in /admin/endpoints: whose counters these are, and whether
 * the breaker and credits shown are the cluster's. */
struct state_cluster_mode_rec;
cJSON *admin_cluster_scope_json(admin_t *a, const struct state_cluster_mode_rec *m);
/* admin_lease.c: cluster's "probes": which host probes the endpoint (its
 * lease), and this host's part in it. */
void admin_lease_add(admin_t *a, cJSON *cluster, const state_endpoint_rec_t *rec,
                     const struct state_cluster_mode_rec *mode, uint64_t now_ms);
/* GET /admin/networks and the pressure series of /metrics (admin_networks.c). */
int admin_route_networks(admin_t *a, h2o_req_t *req);

/* admin_cache.c: the response cache's lookups, credits saved, store
 * figures, and its purge. */
cJSON *admin_cache_network_json(admin_t *a, const pool_network_conf_t *net);
void admin_cache_metrics(admin_t *a, sl_buf_t *b);

/* admin_key_metrics.c: each API key's counters by name (STATE_KEYC_*). */
/* The key name's counters summed over the workers (the last use: the
 * latest), inside a snapshot. */
void admin_key_counts(admin_t *a, const char *name, uint64_t out[STATE_KEYC_COUNT]);
/* sluice_key_calls_total, sluice_key_refusals_total, sluice_key_credits_spent_total. */
void admin_keys_metrics(admin_t *a, sl_buf_t *b);
int admin_route_cache_purge(admin_t *a, h2o_req_t *req);
/* /admin/keys: API keys made at run time (admin_keys.c) */
int admin_route_keys_list(admin_t *a, h2o_req_t *req);
int admin_route_keys_create(admin_t *a, h2o_req_t *req);
int admin_route_keys_change(admin_t *a, h2o_req_t *req);
int admin_route_keys_revoke(admin_t *a, h2o_req_t *req);
void admin_networks_metrics(admin_t *a, sl_buf_t *b, const admin_ep_view_t *v, size_t n);
/* admin_learned.c: the newest capability events (a heap array, *n of them:
 * the caller frees it), and from them an endpoint's "learned": {"methods":
 * [...], "depth": N or null} (pool/pool_learn.c's memory, any worker's). */
state_event_t *admin_learned_events(admin_t *a, size_t *n);
cJSON *admin_learned_json(const admin_ep_view_t *v, const state_event_t *evs, size_t n, uint64_t now);
/* admin_subs.c: client WebSockets and subscriptions per network. The
 * newest events (a heap array, *n of them: the caller frees it), where
 * admin_subs_network_json looks for the network's last
 * subscription_source_changed. */
state_event_t *admin_subs_recent_events(admin_t *a, size_t *n);
cJSON *admin_subs_network_json(admin_t *a, const pool_network_conf_t *net, const state_event_t *evs, size_t nevs);
void admin_subs_metrics(admin_t *a, sl_buf_t *b);
/* admin_chain_metrics.c: the floor of heads served, heads nobody confirms. */
void admin_chain_metrics(admin_t *a, sl_buf_t *b, const admin_ep_view_t *v, size_t n);

/* The JSON object of one event (shared by the feed and the stream). */
cJSON *admin_event_json(const state_event_t *ev);

#endif
