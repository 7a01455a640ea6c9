/* pool/pool_conf.h: the configuration pool/ is handed (immutable after load).
 *
 * gateway/ fills these from YAML (cfg); pool/ only reads them. Every
 * string is heap memory owned by the enclosing cfg_t. */
#ifndef POOL_CONF_H
#define POOL_CONF_H

#include <stddef.h>
#include <stdint.h>

#include "policy/breaker.h"
#include "policy/chain.h"
#include "policy/consensus.h"
#include "policy/credit.h"
#include "policy/hedge.h"
#include "policy/method.h"
#include "policy/pressure.h"
#include "policy/score.h"

typedef struct pool_header {
    char *name;
    char *value;          /* may carry an API key: secret */
} pool_header_t;

typedef enum pool_tier {
    POOL_TIER_PRIMARY,
    POOL_TIER_FALLBACK,
} pool_tier_t;

/* A provider plan's credit budget, in its own units (pool/pool_credit.c
 * accounts for it, shared by the workers in LMDB). */
typedef policy_credits_t pool_credits_conf_t;

typedef struct pool_endpoint_conf {
    char *id;             /* unique within its network; [A-Za-z0-9_.-]{1,64} */
    char *url;            /* http:// or https://, expanded; secret: never logged */
    char *url_redacted;   /* what logs, errors and the admin API show */
    char *ws_url;         /* ws:// or wss://, a source of heads (pool/pool_wshead.c); NULL = none;
                             secret as url is */
    char *ws_url_redacted;
    char *tls_ca_file;    /* PEM bundle for a private CA; NULL = system store */
    pool_header_t *headers;
    size_t nheaders;
    uint32_t max_inflight;    /* concurrent requests across all workers */
    pool_tier_t tier;
    char *cost_profile;       /* name, for credit accounting; NULL = "flat" */
    int has_credits;          /* 1 if the endpoint has a credits: section */
    pool_credits_conf_t credits;
    int yaml_line;            /* where the endpoint was declared */
    uint32_t max_logs_blocks; /* blocks one eth_getLogs may span here: max_logs_blocks:, else the
                                 cost profile's (policy/logsplit.c); 0 = no limit */
    policy_method_scope_t methods; /* methods: { allow, deny }: the calls it may be sent
                                      (policy_method_scope_admits); empty: every method */
    uint8_t archive;          /* archive: a policy_archive_t (0: unset, unknown): where deep-history
                                 reads go (policy_blockref_archive_tier) */
    uint8_t from_api;         /* 1: added at run time (POST /admin/endpoints), not in the config file */
} pool_endpoint_conf_t;

typedef struct pool_timeouts {
    uint32_t connect_ms;      /* TCP connect + TLS handshake */
    uint32_t first_byte_ms;   /* request fully written -> first response byte */
    uint32_t attempt_ms;      /* one attempt, start to last byte */
    uint32_t request_ms;      /* the whole client request, all attempts */
} pool_timeouts_t;

typedef struct pool_network_conf {
    char *name;               /* the path segment: /{name} */
    policy_chain_t chain;
    pool_endpoint_conf_t *endpoints;
    size_t nendpoints;
    pool_timeouts_t timeouts;
    uint32_t max_attempts;    /* attempts per call across endpoints; 0 = nendpoints + 1 */
    int resend_writes;        /* 1: re-send a write after an ambiguous failure (opt-in) */
    policy_method_t *method_overrides; /* methods:, from the config: rows before the chain's table */
    size_t nmethod_overrides;
    char **blocked_methods;   /* patterns ("debug_*", exact names); NULL = chain default;
                               * non-NULL with 0 entries: the config said [] (block nothing) */
    size_t nblocked_methods;
    policy_breaker_conf_t breaker;
    policy_score_conf_t ranking;
    uint32_t backoff_base_ms;     /* between rounds over the endpoints: full jitter up to base * 2^round ... */
    uint32_t backoff_max_ms;      /* ... capped here */
    uint32_t pin_ms;              /* confirmation polls go to the accepting endpoint first, this long */
    policy_pressure_conf_t pressure; /* levels, shed order, merged polls */
    policy_hedge_conf_t hedge;    /* hedged reads (pool/pool_hedge.c) */
    uint32_t demote_ms;           /* a cheap read timed out or reset: its endpoint goes behind every
                                     other this long (30000, policy/demote.h); 0 = off */
    uint32_t coalesce_max_waiters; /* identical reads riding one upstream call, at most (64); 0 = off */
    int yaml_line;
    /* the chain view (policy/chainview.h); config/cfg_chain.c fills these */
    int has_chain_id;             /* chain_id: given (Ethereum); else learned from the endpoints' majority */
    uint64_t chain_id;
    char *genesis_hash;           /* genesis_hash: (Solana, base58); NULL = learned the same way */
    uint32_t max_lag_blocks;      /* latest reads only to endpoints this close to the head (2) */
    uint32_t max_lag_slots;       /* Solana's, in slots (10) */
    uint32_t max_logs_split;      /* eth_getLogs sub-calls at most (20); a wider call gets -32005 */
    uint32_t chain_probe_ms;      /* safe, finalized and the latest block's hashes, asked this often
                                     (30000; pool_chainprobe.c); 0 = never */
    uint32_t ws_stall_ms;         /* a ws_url stream with no head this long is closed and reopened
                                     (pool_wshead.c; 0 = the chain's default: 60000, Solana 5000) */
    uint32_t max_head_lead;       /* a head further ahead of every other endpoint's is not trusted
                                     (blocks: 128, slots: 500; 0 = off) */
    policy_consensus_conf_t consensus; /* consensus:; nmethods 0 = off */
    uint32_t archive_depth;       /* a read naming a block more than this below the head goes to archive
                                     endpoints first, never to archive: false ones (128) */
    uint32_t capability_ttl_ms;   /* what an endpoint said it does not serve (a method, deep state) is
                                     remembered this long (pool_learn.c; 600000; 0 = not learned) */
} pool_network_conf_t;

#define POOL_DEFAULT_CONNECT_MS 2000
#define POOL_DEFAULT_FIRST_BYTE_MS 5000
#define POOL_DEFAULT_ATTEMPT_MS 10000
#define POOL_DEFAULT_REQUEST_MS 30000
#define POOL_DEFAULT_MAX_INFLIGHT 256
#define POOL_DEFAULT_BACKOFF_BASE_MS 50
#define POOL_DEFAULT_BACKOFF_MAX_MS 1000
#define POOL_DEFAULT_PIN_MS 30000
#define POOL_DEFAULT_SOLANA_MAX_LAG 150
#define POOL_DEFAULT_MONTH_RESET_DAY 1
#define POOL_MAX_ENDPOINTS 64
#define POOL_DEFAULT_COALESCE_MAX_WAITERS 64
#define POOL_DEFAULT_DEMOTE_MS 30000
#define POOL_DEFAULT_ARCHIVE_DEPTH 128
#define POOL_DEFAULT_CAPABILITY_TTL_MS 600000

#endif
