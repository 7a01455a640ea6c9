/* config/cfg.h: sluice.yaml, parsed and validated.
 *
 * cfg_load() reads the file, expands ${ENV} references, fills the
 * defaults, validates every value and reports every problem with its line.
 * The result is immutable: modules get pointers into it (pool/ its
 * pool_network_conf_t) and never write. Every value that came from an
 * ${ENV} expansion, every URL user-info/query value, header value, admin
 * token and client key hash is registered with sl_secret_add(). */
#ifndef CFG_H
#define CFG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/sl_buf.h"
#include "base/sl_err.h"
#include "policy/access.h"
#include "policy/cacheadmit.h"
#include "pool/pool_conf.h"
#include "state/state_cluster.h"

#define CFG_DEFAULT_LISTEN "0.0.0.0:8545"
#define CFG_DEFAULT_ADMIN_LISTEN "127.0.0.1:8550"
#define CFG_DEFAULT_WS_MAX_CONNECTIONS 1024
#define CFG_DEFAULT_WS_MAX_PER_IDENTITY 64
#define CFG_DEFAULT_WS_MAX_QUEUED_BYTES (8 * 1024 * 1024)
#define CFG_DEFAULT_WS_MAX_INFLIGHT 64
#define CFG_DEFAULT_WS_MAX_SUBS_PER_CONNECTION 1024
#define CFG_DEFAULT_WS_MAX_SUBS_PER_IDENTITY 4096
#define CFG_DEFAULT_WS_MAX_SOURCES_PER_IDENTITY 1024
#define CFG_DEFAULT_WS_MAX_POLLED_SOURCES_PER_IDENTITY 16
#define CFG_DEFAULT_WS_PING_INTERVAL_MS 20000
#define CFG_DEFAULT_WS_IDLE_TIMEOUT_MS 60000
#define CFG_DEFAULT_WS_LOGS_RETRY_S 120
#define CFG_DEFAULT_WS_RESUME_S 60
/* server.ws_resume, in the order of its names */
enum { CFG_WS_RESUME_OFF, CFG_WS_RESUME_KEYED, CFG_WS_RESUME_ALL };
#define CFG_DEFAULT_STATE_PATH "./var/sluice"
#define CFG_DEFAULT_MAX_BODY_BYTES (1024 * 1024)
#define CFG_DEFAULT_MAX_BATCH 100
#define CFG_DEFAULT_MAX_RESPONSE_BYTES (64 * 1024 * 1024)
#define CFG_DEFAULT_SHUTDOWN_GRACE_MS 10000
#define CFG_DEFAULT_MAX_CONNECTIONS 1024
#define CFG_DEFAULT_IDLE_TIMEOUT_MS 10000
#define CFG_DEFAULT_WRITE_TIMEOUT_MS 30000
#define CFG_DEFAULT_FIRST_REQUEST_TIMEOUT_MS 1000
#define CFG_DEFAULT_ADMIN_MAX_CONNECTIONS 256
#define CFG_DEFAULT_ADMIN_MAX_STREAMS 64
#define CFG_DEFAULT_ADMIN_HEARTBEAT_MS 15000
#define CFG_DEFAULT_MAX_BUFFERED_BYTES (256 * 1024 * 1024)
#define CFG_DEFAULT_MAX_BUFFERED_SHARE 0.25
#define CFG_DEFAULT_STALLED_RESET_MS 1000
#define CFG_DEFAULT_MAX_HEADER_LINE_BYTES 8192
#define CFG_DEFAULT_MAX_HEADER_BYTES 32768
#define CFG_DEFAULT_MAP_SIZE_MB 256
#define CFG_DEFAULT_CACHE_MB 256
/* One answer is at most 1 MiB of the cache (and never more than a 64th of
 * its map): three 56 MB eth_getLogs answers used to evict every other
 * caller's entries and hold the worker 730 ms while written. A caller's
 * insertions per minute, per worker: an eighth of the map. */
#define CFG_DEFAULT_CACHE_MAX_ENTRY_KB 1024
#define CFG_DEFAULT_CACHE_CALLER_SHARE_PCT 12
#define CFG_DEFAULT_EVENT_MAX_COUNT 10000
#define CFG_DEFAULT_EVENT_MAX_AGE_HOURS (24 * 7)

typedef struct cfg_limit_conf {
    uint32_t per_second;      /* 0 = no limit in that window */
    uint32_t per_minute;
    uint32_t per_day;
    uint32_t per_month;       /* 30 days; a key's credits: only (tiers have no such window) */
} cfg_limit_conf_t;

typedef struct cfg_tier_conf {
    char *name;
    cfg_limit_conf_t limits;
    int yaml_line;
    int exact;                /* charged exactly, never leased ahead (gateway/gw_limit.h): a key's
                                 credits, whose unspent leases would be lost from a day's budget */
} cfg_tier_conf_t;

/* A key's jwt: (issue 33): its calls must carry a JWT this key signed. */
typedef struct cfg_jwt_conf {
    char *public_key_file;    /* PEM (EC P-256 for ES256, RSA for RS256); NULL: no jwt: (unless public_key_pem) */
    char *audience;           /* the aud the token must name; NULL: not checked */
    char *public_key_pem;     /* instead of the file, the PEM text (a key made at run time); NULL: none */
} cfg_jwt_conf_t;

typedef struct cfg_key_conf {
    char sha256[65];          /* lower-case hex of SHA-256(key) */
    char *tier;               /* name of a tier in cfg_t.tiers */
    const cfg_tier_conf_t *tier_conf; /* that tier, resolved when the config is loaded */
    char *name;               /* shown in logs instead of the key */
    int yaml_line;
    policy_access_scope_t scope; /* networks, methods, contracts, origins (issue 33); empty: unbounded */
    int networks_line;        /* the networks: list's line, for cfg_check_keys */
    cfg_tier_conf_t per_address; /* each client address under the key held to these (name NULL); 0s: none */
    cfg_jwt_conf_t jwt;
    cfg_tier_conf_t credits;  /* the key's own budget in credits: per_day, per_month (name NULL); 0s: none */
} cfg_key_conf_t;

/* server.tls (cfg_tls.c; the pair checked by gw_tls_check, wired in by server/). */
typedef struct cfg_tls_conf {
    char *cert_file;          /* PEM, the leaf then its chain; NULL: plain TCP */
    char *key_file;           /* PEM, unencrypted */
    int http2;                /* offer h2 by ALPN (0: HTTP/1.1 only) */
    char fingerprint[65];     /* SHA-256 of the certificate as loaded by the check (hex) */
} cfg_tls_conf_t;

typedef struct cfg_server_conf {
    char *listen;             /* "host:port"; host may be "0.0.0.0", "[::]", a name */
    uint32_t workers;         /* "auto" = number of online CPUs */
    size_t max_body_bytes;
    uint32_t max_batch;
    size_t max_response_bytes; /* upstream answers larger than this are refused */
    uint32_t shutdown_grace_ms;
    int access_log;           /* 1: one JSON line per request on stderr */
    int trace_all;            /* server.trace_header: all (1): every answer carries X-Sluice-Trace;
                                 request (0): only those asking with X-Sluice-Trace: 1 */
    size_t access_log_buffer_bytes; /* per worker: queued access lines never exceed it */
    char **cors_origins;      /* allowed Origin values; "*" allowed; NULL = none */
    size_t ncors_origins;
    char **trusted_proxies;   /* CIDRs whose X-Forwarded-For is believed */
    size_t ntrusted_proxies;
    uint32_t read_multiplier; /* cheap reads get the tier's limits x this (10) */
    uint32_t max_connections; /* client connections open at once, per worker */
    uint32_t idle_timeout_ms; /* a connection idle, or this slow to send its request, is closed */
    uint32_t write_timeout_ms; /* a client that takes no answer bytes for this long is closed */
    size_t max_buffered_bytes; /* answer bytes held in memory per worker before new calls get 503 */
    double max_buffered_share; /* of max_buffered_bytes one caller may hold before its new calls get 503 (0.25) */
    uint32_t stalled_reset_ms; /* near the budget, clients stalled this long are reset first (1000; 0: never) */
    uint32_t max_header_line_bytes; /* longest request line or header line (431 / 414) */
    uint32_t max_header_bytes; /* all of the request head together (431) */
    uint32_t ipv6_prefix;     /* IPv6 callers are limited per /ipv6_prefix network (64) */
    uint32_t max_connections_per_address; /* per worker; default: a quarter of max_connections, >= 8 */
    uint32_t first_request_timeout_ms; /* over 3/4 of max_connections: a new connection's first request */
    /* WebSocket (gw_ws.h): the second listener and the bounds of each socket */
    char *ws_listen;          /* NULL: listen's port + 1 when it is free (else the main port only) */
    int ws_listen_off;        /* ws_listen: off (no second listener; the main port still upgrades) */
    uint32_t ws_max_connections; /* WebSocket connections open at once, per worker */
    uint32_t ws_max_connections_per_identity; /* per worker, per key or client address */
    size_t ws_max_queued_bytes; /* answers waiting for a client that does not read them: past it, close 1008 */
    uint32_t ws_max_inflight; /* calls in flight per connection; more get -32005 at once */
    uint32_t ws_max_subscriptions_per_connection; /* subscriptions open on one socket; more get -32005 */
    uint32_t ws_max_subscriptions_per_identity; /* per worker, per key or client address */
    uint32_t ws_max_sources_per_identity; /* distinct subscription sources one identity started (per worker) */
    uint32_t ws_max_polled_sources_per_identity; /* of them, sources each polling upstream on its own */
    uint32_t ws_ping_interval_ms; /* a ping this often (0: none) */
    uint32_t ws_logs_retry_s;     /* a logs subscription retries a block's eth_getLogs this long, then ends */
    uint32_t ws_idle_timeout_ms; /* nothing received, pongs included, for this long: close */
    int ws_resume;            /* CFG_WS_RESUME_*: whose subscriptions are held when their socket closes */
    uint32_t ws_resume_s;     /* ... and how long (sub/sub_resume.c) */
    cfg_tls_conf_t tls;        /* server.tls: both client listeners speak TLS when cert_file is set */
} cfg_server_conf_t;

typedef struct cfg_admin_conf {
    char *listen;             /* NULL or "off" disables the admin listener */
    char *token;              /* NULL = no auth (refused unless loopback); else CFG_ADMIN_TOKEN_MIN+ bytes */
    uint32_t max_connections; /* admin connections open at once, per worker */
    uint32_t max_streams;     /* event streams open at once, per worker (503 over it) */
    uint32_t heartbeat_ms;    /* the event stream's idle heartbeat; a stream's ?heartbeat_ms may differ */
} cfg_admin_conf_t;

#define CFG_ADMIN_HEARTBEAT_MIN_MS 1000 /* each heartbeat wakes every stream: a floor on that work */

#define CFG_ADMIN_TOKEN_MIN 16

typedef struct cfg_state_conf {
    char *path;
    uint32_t map_size_mb;
    uint32_t refresh_ms;          /* workers re-read shared state this often (50) */
    uint32_t flush_ms;            /* workers write their counters this often (100); 0 = never (benchmarks) */
    uint32_t event_max_count;     /* event log retention: count ... */
    uint32_t event_max_age_hours; /* ... and age */
    uint32_t max_limit_cells;     /* client-limit cells kept at most (0: 2,048 per MB of the map) */
} cfg_state_conf_t;

typedef struct cfg_cache_conf {
    int enabled;              /* 1 (the default): answers that cannot change are kept */
    char *path;               /* the cache's LMDB folder (default: state.path + "-cache") */
    uint32_t max_mb;          /* its map's size (256) */
    int unfinalized;          /* cache.unfinalized: head */
    int redis;                /* cache.redis: the cluster's Redis as a second tier (cluster: only) */
    uint32_t redis_ttl_s;     /* an entry's expiry there (a day) */
    uint32_t redis_wait_ms;   /* a lookup there unanswered this long is a miss (10) */
    uint32_t max_entry_kb;    /* an answer larger than this is never kept (1024; at most a 64th of the map) */
    uint32_t caller_share_pct; /* a caller inserts at most this % of the map a minute, per worker (12) */
} cfg_cache_conf_t;

/* What one answer and one caller may put in the cache (policy/cacheadmit.h),
 * from the cache: section. */
policy_cacheadmit_conf_t cfg_cache_admit_conf(const cfg_cache_conf_t *cc);

typedef struct cfg_log_conf {
    int level;                /* sl_log_level_t */
    int json;                 /* 1: JSON lines, 0: text */
} cfg_log_conf_t;

typedef struct cfg {
    char *file;               /* path it was loaded from */
    cfg_server_conf_t server;
    cfg_admin_conf_t admin;
    cfg_state_conf_t state;
    cfg_cache_conf_t cache;
    cfg_log_conf_t log;
    pool_network_conf_t *networks;
    size_t nnetworks;
    cfg_tier_conf_t *tiers;
    size_t ntiers;
    const cfg_tier_conf_t *anonymous_tier; /* the tier named "anonymous", or NULL */
    int anonymous_deny;       /* access.anonymous: deny: a call without a key is 401 (default allow) */
    cfg_key_conf_t *keys;
    size_t nkeys;
    int has_cluster;          /* a cluster: section: records shared through Redis */
    state_cluster_conf_t cluster;
} cfg_t;

/* One problem found while loading: "file:line: path: message". */
typedef struct cfg_error {
    int line;                 /* 1-based YAML line, 0 if none applies */
    char *path;               /* "networks.eth.endpoints[1].url" */
    char *message;
} cfg_error_t;

typedef struct cfg_errors {
    cfg_error_t *items;
    size_t count;
} cfg_errors_t;

#define CFG_MAX_ERRORS 100         /* errors collected before giving up */

/* Loads and validates path. On SL_OK *out is a complete config (caller calls
 * cfg_destroy). On failure *out is NULL and errs lists every problem
 * found (not just the first); the caller calls cfg_errors_dispose.
 * errs is (re)initialised by the call, so it need not be, and must not hold
 * earlier errors. No message quotes a registered secret.
 * Errors: SL_ERR_IO (unreadable file, errs says why), SL_ERR_CONFIG. */
SL_MUST_CHECK sl_err_t cfg_load(const char *path, cfg_t **out, cfg_errors_t *errs);

/* An endpoint added at run time (POST /admin/endpoints), to merge into the
 * file's: server/srv_epapi.c reads them from the state. */
typedef struct cfg_extra_ep {
    const char *network;
    const char *id;
    const char *json;         /* its fields, a JSON object with the keys of a YAML endpoint entry */
    int merged;               /* out: 1 if it is in the config */
    const char *skipped;      /* out: why it is not (static text), or NULL */
} cfg_extra_ep_t;

/* As cfg_load, with eps[0..n) merged into their networks' endpoints (config/
 * cfg_extra.c): checked as the file's entries are, after them. An entry whose
 * network the file lacks, or whose id the file names, is skipped (eps[i].
 * skipped says why; the caller logs it); a bad entry is an error with its
 * path "networks.NET.endpoints(ID)..." and no line. */
SL_MUST_CHECK sl_err_t cfg_load_extra(const char *path, cfg_extra_ep_t *eps, size_t n, cfg_t **out,
                                      cfg_errors_t *errs);

/* As cfg_load, from a string; name is used in messages. For tests. */
SL_MUST_CHECK sl_err_t cfg_load_string(const char *yaml, size_t len, const char *name, cfg_t **out,
                                             cfg_errors_t *errs);

void cfg_destroy(cfg_t *cfg);
void cfg_errors_dispose(cfg_errors_t *errs);

/* Prints each error as "file:line: path: message" ("file: path: message"
 * when line is 0; the path part is left out when empty). For --check. */
void cfg_errors_print(const cfg_errors_t *errs, const char *file, FILE *out);

/* The certificate check config/ cannot make itself (it loads no TLS): the
 * server wires its loader in before the first load. It returns 0 and writes
 * the certificate's SHA-256 (hex) into fingerprint, or -1 with why (naming
 * "cert_file" or "key_file" first, never a byte of the files). Unset: the
 * pair is not checked (unit tests). */
typedef int (*cfg_tls_check_fn)(const char *cert_file, const char *key_file, int http2,
                                char fingerprint[65], char *why, size_t whylen);
void cfg_set_tls_check(cfg_tls_check_fn fn);

/* Appends the effective configuration to out as one JSON object (config/
 * cfg_json.c): every section and key with its value after defaults, each
 * endpoint with "source": "yaml" or "api". No secret: URLs are redacted,
 * header values, the admin token, the Redis password and key hashes are left
 * out, and the text passes through sl_secret_scrub. For GET /admin/config. */
void cfg_json(const cfg_t *cfg, sl_buf_t *out);

/* Finds a network by name; NULL if none. */
const pool_network_conf_t *cfg_network(const cfg_t *cfg, const char *name, size_t len);

#endif
