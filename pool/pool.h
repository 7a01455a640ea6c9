/* pool/pool.h: a worker's upstream endpoints and the fallback transport.
 *
 * One pool_t per worker process, single-threaded, driven by the worker's h2o
 * event loop. A call (one JSON-RPC request, or the forwardable members of a
 * batch) walks the network's plan of endpoints: each attempt sends the pending
 * items, policy/ gives the verdict of every answer, and items that failed
 * transiently go on to the next endpoint while the others are done. pool/
 * knows no client: it takes items and hands back answers or failures. */
#ifndef POOL_H
#define POOL_H

#include <stddef.h>
#include <stdint.h>

#include <h2o.h>

#include "base/sl_budget.h"
#include "base/sl_err.h"
#include "wire/envelope.h"
#include "policy/chainid.h"
#include "policy/blockref.h"
#include "policy/cacheadmit.h"
#include "policy/method.h"
#include "policy/verdict.h"
#include "pool/pool_conf.h"
#include "state/state.h"

typedef struct pool pool_t;
typedef struct pool_network pool_network_t;
typedef struct pool_call pool_call_t;

#define POOL_MAX_ATTEMPT_LOG 16

/* Why an attempt failed on its way (transport, HTTP framing, size), as one
 * table (name, message, flags). An answer that came back whole is judged by
 * policy/verdict.h instead (rate limits, errors, a wrong id, a member
 * missing from a batch): those have a verdict, not a failure here. AMBIG: the
 * request may have reached the upstream. TIMEOUT: counts towards "every
 * attempt timed out". LOCAL: sluice could not make the attempt for want of
 * its own resources (socket() or connect() said EMFILE, ENFILE, ENOMEM,
 * ENOBUFS, EAGAIN or EADDRNOTAVAIL; a large answer's buffer found no temp
 * space): logged and counted, never held against the endpoint. */
#define POOL_FAIL_MAP(X)                                                                              \
    X(NONE, 0, OK, "no failure")                                                                      \
    X(DNS, 0, CONNECT, "host name did not resolve")                                                   \
    X(CONNECT, 0, CONNECT, "connection refused or unreachable")                                       \
    X(CONNECT_TIMEOUT, POOL_FAIL_F_TIMEOUT, TIMEOUT, "connect timed out")                             \
    X(TLS, 0, CONNECT, "TLS handshake failed")                                                        \
    X(RESET, POOL_FAIL_F_AMBIG, RESET, "connection closed before the answer was complete")            \
    X(FIRST_BYTE_TIMEOUT, POOL_FAIL_F_AMBIG | POOL_FAIL_F_TIMEOUT, TIMEOUT, "no answer within first_byte_ms") \
    X(ATTEMPT_TIMEOUT, POOL_FAIL_F_AMBIG | POOL_FAIL_F_TIMEOUT, TIMEOUT, "answer not complete within attempt_ms") \
    X(BAD_HTTP, POOL_FAIL_F_AMBIG, MALFORMED, "malformed HTTP answer")                                \
    X(TOO_LARGE, POOL_FAIL_F_AMBIG, MALFORMED, "answer larger than server.max_response_bytes")        \
    X(LOCAL, POOL_FAIL_F_LOCAL, LOCAL, "sluice is out of local resources (file descriptors, memory or temp space)")

#define POOL_FAIL_F_AMBIG 0x1
#define POOL_FAIL_F_TIMEOUT 0x2
#define POOL_FAIL_F_LOCAL 0x4     /* sluice's own fault, never the endpoint's */

typedef enum pool_fail {
#define POOL_FAIL_ENUM_(name, flags, outcome, msg) POOL_FAIL_##name,
    POOL_FAIL_MAP(POOL_FAIL_ENUM_)
#undef POOL_FAIL_ENUM_
    POOL_FAIL_COUNT
} pool_fail_t;

const char *pool_fail_str(pool_fail_t f);
const char *pool_fail_name(pool_fail_t f);
unsigned pool_fail_flags(pool_fail_t f);
/* The attempt outcome a failure counts as in the endpoint's statistics. */
state_outcome_t pool_fail_outcome(pool_fail_t f);

typedef enum pool_item_state {
    POOL_ITEM_PENDING,
    POOL_ITEM_ANSWERED,       /* answer holds the upstream's JSON-RPC response object */
    POOL_ITEM_FAILED,         /* fail_* says why; the gateway writes the error */
    POOL_ITEM_STATE_COUNT
} pool_item_state_t;

/* How a failed item failed, from all its attempts. */
typedef enum pool_outcome {
    POOL_OUTCOME_OK,
    POOL_OUTCOME_RATE_LIMITED,    /* every endpoint that was tried refused with a rate limit */
    POOL_OUTCOME_TIMEOUT,         /* every attempt timed out */
    POOL_OUTCOME_AMBIGUOUS_WRITE, /* a write may have been broadcast; not re-sent */
    POOL_OUTCOME_UNAVAILABLE,     /* no endpoint could be tried (all busy, unresolvable) */
    POOL_OUTCOME_UPSTREAM_ERROR,  /* anything else: every endpoint failed */
    POOL_OUTCOME_DEADLINE,        /* timeouts.request_ms ran out */
    /* request-shaped (policy/shape.h): two endpoints failed it the same way */
    POOL_OUTCOME_TOO_LARGE,       /* the answer is over server.max_response_bytes */
    POOL_OUTCOME_ID_UNANSWERABLE, /* the upstreams could not read the call: they answered at id null */
    POOL_OUTCOME_SLOW_CALL,       /* a heavy call outlived the attempt deadline twice */
    POOL_OUTCOME_LOCAL,           /* sluice's own resources ran out for every attempt */
    POOL_OUTCOME_NO_CONSENSUS,    /* a compared read (consensus:) found no quorum of equal answers */
} pool_outcome_t;

/* One JSON-RPC call as pool/ sees it. The gateway fills the first block; pool/
 * fills the second. Bytes pointed to must outlive the call. */
typedef struct pool_item {
    const char *raw;              /* the member object as the client sent it */
    uint32_t raw_len;
    wire_span_t id;             /* id value, relative to raw; len 0 = notification */
    wire_span_t params;         /* params value, relative to raw, as the gateway's scan found
                                 * it; len 0 = not given (pool_item_params scans raw then) */
    const policy_method_t *method;
    uint8_t cheap;                /* a cheap read, params considered (policy_method_call_cheap):
                                   never slow by nature, so hedged, and its timeouts are the endpoint's */
    uint8_t no_cache;             /* the client said Cache-Control: no-cache: not looked up in the cache */
    uint8_t blockref_read;        /* 0 (the gateway's zero): blockref not read yet; pool_item_blockref's memo */
    policy_blockref_call_t blockref; /* what the call names, once read (pool_item_blockref) */
    const char *name;             /* the method name (for its credit cost) */
    uint32_t name_len;

    pool_item_state_t state;
    pool_outcome_t outcome;
    policy_verdict_t verdict;     /* ANSWERED: SUCCESS, DETERMINISTIC, or the fallback's */
    const char *answer;           /* ANSWERED: the response object */
    uint32_t answer_len;
    wire_span_t answer_id;      /* id value inside answer, relative to answer */
    wire_span_t answer_result;  /* its "result" value, relative to answer, when the scan that judged
                                   the answer found one; {0, 0}: not known (scan answer again) */
    int16_t endpoint;             /* index of the endpoint that answered, -1 if none (or the cache) */
    uint8_t cached;               /* ANSWERED from the response cache (pool_cache_call.c): a POOL_CACHE_tier */
    uint8_t cache_miss;           /* looked up in the cache and not found: it went upstream (POOL_CACHE_MISSED*) */
    uint32_t retry_after_ms;      /* RATE_LIMITED: the earliest time an endpoint frees up */
    uint8_t fail_seen;            /* bit per POOL_FAIL_F_* kind of failure + private bits */
    uint8_t rate_limited;         /* attempts answered with a rate limit */
    uint8_t failures;             /* attempts that failed otherwise */
    uint8_t timeouts;             /* ...of which timed out */
    uint8_t local_failures;       /* attempts sluice could not make (POOL_FAIL_LOCAL), not in failures */
    const char *traceparent;      /* the client's W3C traceparent (wire/traceparent.h), sent with every
                                     attempt; NULL: none. The caller's, alive as long as the call */
    uint8_t verify;               /* "nonce too low": a by-hash check is due (pool_write.c) */
    int16_t verify_ep;            /* ... at this endpoint */
} pool_item_t;

/* pool_item_t.cached: the tier that answered (0: none) */
enum { POOL_CACHE_LOCAL = 1, POOL_CACHE_REDIS = 2 };
/* pool_item_t.cache_miss: missed (0: not looked up); with cache.redis, why
 * Redis did not answer it either: no entry there, or too late, or an error
 * (Redis down or refusing) */
enum { POOL_CACHE_MISSED = 1, POOL_CACHE_MISSED_TIMEOUT = 2, POOL_CACHE_MISSED_ERROR = 3 };

/* One line of the attempt log, for errors and access logs. */
enum {
    POOL_ATTEMPT_HEDGE = 1,       /* a hedge: the same call sent on while the first attempt was slow */
    POOL_ATTEMPT_CANCELLED = 2,   /* cancelled: the other attempt of the hedged call answered first */
    POOL_ATTEMPT_FANOUT = 4,      /* one of a compared read's fan-out (consensus, dispatch: max) */
    POOL_ATTEMPT_BROADCAST = 8,   /* one of a write's broadcast (methods.<m>.broadcast) */
};

typedef struct pool_attempt_rec {
    int16_t endpoint;
    pool_fail_t fail;             /* NONE if the attempt got an answer (or was cancelled) */
    uint16_t http_status;
    uint32_t latency_us;
    uint8_t flags;                /* POOL_ATTEMPT_* */
} pool_attempt_rec_t;

typedef void (*pool_call_cb)(pool_call_t *call, void *data);

/* Creates the pool of one worker: endpoints of every network, TLS contexts,
 * resolved addresses. nworkers divides each endpoint's max_inflight.
 * getaddr_receiver is the h2o context's (asynchronous DNS refresh). state
 * (may be NULL in unit tests) shares breakers, drains, rate-limit marks and
 * counters with the other workers; slot is this worker's 1-based index.
 * Errors: SL_ERR_CONFIG (a TLS CA file that does not load; logged). */
typedef struct pool_params {
    h2o_loop_t *loop;
    h2o_multithread_receiver_t *getaddr_receiver;
    const pool_network_conf_t *networks;
    size_t nnetworks;
    uint32_t nworkers;
    size_t max_response_bytes;
    state_t *state;
    uint32_t slot;
    uint32_t refresh_ms;          /* shared-state snapshot period */
    uint32_t flush_ms;            /* counter flush period; 0 = never */
    sl_budget_t *budget;          /* answer bytes held, charged while read and kept (may be NULL) */
    const struct pool_transport_ops *transport; /* NULL: sockets (unit tests script their own) */
    struct state_cache *cache;    /* the response cache (state/state_cache.h); NULL: off */
    uint8_t cache_unfinalized;    /* cache.unfinalized: head (policy/cache.h) */
    policy_cacheadmit_conf_t cache_admit; /* what one answer and one caller may put in it */
    /* Told (from inside the read, so it may only look and pool_call_cut)
     * each time an upstream answer a call reads grows: cb and cb_data are
     * the call's own (pool_call_start's). NULL: nobody. */
    void (*on_grow)(pool_call_t *call, void (*cb)(pool_call_t *, void *), void *cb_data);
} pool_params_t;

SL_MUST_CHECK sl_err_t pool_create(const pool_params_t *params, pool_t **out);
void pool_destroy(pool_t *pool);

/* pool_ask.c: the chain identity of every endpoint of the networks marked
 * in ask[0..n) (eth_chainId; Solana getGenesisHash), asked once and waited
 * for at most timeout_ms, before any worker exists (the master's start,
 * --check --connect); in a child process, so no resolver thread is left in
 * the caller. ids[network * POOL_MAX_ENDPOINTS + endpoint] gets the id in
 * normal form, or "" (no answer, or not asked). SL_ERR_IO: no child. */
typedef char pool_ask_id_t[POLICY_CHAINID_MAX];
SL_MUST_CHECK sl_err_t pool_ask_chain_ids(const pool_network_conf_t *nets, size_t n, const uint8_t *ask,
                                          uint32_t timeout_ms, pool_ask_id_t *ids);

/* pool_askws.c: every endpoint's ws_url of nets[0..n) tried once
 * (--check --connect): connect, TLS, the Upgrade and its
 * Sec-WebSocket-Accept, then one eth_chainId (Solana getGenesisHash) over
 * the socket, all within timeout_ms; in a child process, as
 * pool_ask_chain_ids. out[network * POOL_MAX_ENDPOINTS + endpoint]: tried
 * (it has a ws_url), ok, and text: the chain id in normal form, or why not
 * (which step failed; never the URL). SL_ERR_IO: no child. */
#define POOL_ASKWS_TEXT 160
typedef struct pool_askws {
    uint8_t tried, ok;
    char text[POOL_ASKWS_TEXT];
} pool_askws_t;
SL_MUST_CHECK sl_err_t pool_ask_ws(const pool_network_conf_t *nets, size_t n, uint32_t timeout_ms,
                                   pool_askws_t *out);

pool_network_t *pool_network_find(pool_t *pool, const char *name, size_t len);
const pool_network_conf_t *pool_network_conf(const pool_network_t *net);

/* Starts sending items[0..n) through the network's plan; batch says whether
 * the client sent a batch (then the upstream gets one too); owner is the
 * caller's identity as a hash (0: none), whose calls holding a slot count
 * against its share of the depth (pool_network_pressure_for). The callback
 * runs once, from the event loop, when every item is ANSWERED or FAILED;
 * never from inside pool_call_start. Returns the call handle, valid (its
 * attempt log included) until pool_call_release. */
pool_call_t *pool_call_start(pool_network_t *net, pool_item_t *items, size_t n, int batch, uint64_t owner,
                             pool_call_cb cb, void *data);
/* What item it names (policy/blockref.h) on chain, read from its params on
 * the first ask and kept in the item: the gateway's split, the chain row
 * and the cache row each ask, and a filter is read once. NULL when the
 * params do not read (routed as naming no block: the node answers the
 * call's mistake). */
const policy_blockref_call_t *pool_item_blockref(pool_item_t *it, policy_chain_t chain);

/* Ends the call at the next loop turn as its deadline would (its exchanges
 * cancelled, pending items failed with POOL_OUTCOME_DEADLINE, the callback
 * run): the gateway's cut of a call whose caller went past its share of
 * answer bytes while the answer was being read. Safe from on_grow; a no-op
 * for a call done. */
void pool_call_cut(pool_call_t *call);

/* Frees the call and the answer bytes its items point to (NULL: nothing).
 * Before its callback ran (the client went away), the call stops first:
 * open exchanges are closed and the callback never runs. */
void pool_call_release(pool_call_t *call);

/* Read-only views of a finished call. */
uint32_t pool_call_attempts(const pool_call_t *call);
const pool_attempt_rec_t *pool_call_log(const pool_call_t *call, size_t *n);
/* 1 if the call was answered by an identical call's upstream answer (coalesced). */
int pool_call_coalesced(const pool_call_t *call);
/* Answer bytes the call holds now, as charged to the budget: upstream
 * answers being read and kept, and a coalesced group's shared answer (which
 * each call of the group counts as its own). Any time before release. */
size_t pool_call_held(const pool_call_t *call);
/* Credits billed for the call's attempts at every endpoint (credits.profile units). */
uint64_t pool_call_credits(const pool_call_t *call);
/* Hedges the call sent (attempts flagged POOL_ATTEMPT_HEDGE). */
uint32_t pool_call_hedges(const pool_call_t *call);
/* A call that ended in POOL_OUTCOME_NO_CONSENSUS: its distinct answers
 * (pool_consensus.c). masks[g] has bit i set if endpoint i gave answer g,
 * groups in the order of their first answer; returns how many groups there
 * are (at most cap written), 0 for a call that was not compared. */
size_t pool_call_consensus_groups(const pool_call_t *call, uint64_t *masks, size_t cap);
const char *pool_call_endpoint_id(const pool_call_t *call, int endpoint);
const char *pool_call_endpoint_url(const pool_call_t *call, int endpoint);   /* redacted */
size_t pool_call_max_response_bytes(const pool_call_t *call);                 /* server.max_response_bytes */

/* The end of an endpoint's rate-limit episode (policy/episode.h), for the
 * master's housekeeping: when the episode in rec is over at now (shared
 * ms), closes it in rec, fills *ev with its endpoint_rate_limit_ended event
 * (marks counted, how long it lasted) and returns 1; else 0, rec untouched.
 * Workers report an over episode themselves when a new mark finds it. */
int pool_health_rate_episode_end(const char *network, const char *endpoint, state_endpoint_rec_t *rec,
                                 uint64_t now, state_event_t *ev);

/* Re-reads the shared records into the worker's snapshot now (another host
 * changed one: with cluster:, the worker need not wait for its next tick). */
void pool_refresh(pool_t *pool);
/* The network's pressure level as this worker last read it from shared
 * state (refreshed every state.refresh_ms): a read, no computation. OK when
 * pressure.enabled is off. */
policy_pressure_level_t pool_network_pressure(const pool_network_t *net);
/* The level a call of owner's is shed at (policy_pressure_level_for): the
 * network's for an identity at its share of the depth in this worker, a
 * step lower for one under it; the network's for owner 0. */
policy_pressure_level_t pool_network_pressure_for(const pool_network_t *net, uint64_t owner);
/* The network's latest head (Solana: the probes' commitment) as this
 * worker's chain view holds it now, among the endpoints on its chain: the
 * probes', the answers', an upstream WebSocket stream's; 0 if none. A read,
 * for sub/sub_follow.c to wake its poll when the head moves. */
uint64_t pool_network_head(const pool_network_t *net);

/* Worker shutdown: closes idle upstream connections. */
void pool_close_idle(pool_t *pool);

/* pool_wspass.c: subscriptions passed through to an endpoint's WebSocket
 * (its ws_url), one socket per endpoint per worker shared by all of them
 * (a second, POOL_WSPASS_SOCKETS, opened when the first is full),
 * for the gateway's passthrough sources. The owner hears each notification's
 * result (JSON text) and, once, that the subscription is lost (the socket
 * died, stalled or went over a bound, the endpoint stopped being usable, or
 * the upstream refused it): then the handle is gone. Bounds:
 * POOL_WSPASS_MAX_SUBS per socket, POOL_WSPASS_MAX_MESSAGE per message,
 * POOL_WSPASS_MAX_QUEUED bytes waiting to be written. */
#define POOL_WSPASS_MAX_SUBS 256
#define POOL_WSPASS_SOCKETS 2     /* per endpoint per worker: the second opens when the first is full */
#define POOL_WSPASS_MAX_MESSAGE (1024 * 1024)
#define POOL_WSPASS_MAX_QUEUED (1024 * 1024)
typedef struct pool_wsub pool_wsub_t;
typedef struct pool_wsub_cbs {
    void (*notify)(void *data, const char *result, size_t len);
    void (*lost)(void *data, const char *why); /* why: fixed text, never a URL */
} pool_wsub_cbs_t;
/* 1 if an endpoint of net has a ws_url. */
int pool_wsub_configured(const pool_network_t *net);
/* The first endpoint in net's plan order with a ws_url, usable, not in its
 * backoff after a loss and with room; -1 if none. */
int pool_wsub_pick(pool_network_t *net);
/* Upstream subscriptions net's ws endpoints have room for now: per
 * endpoint POOL_WSPASS_SOCKETS x POOL_WSPASS_MAX_SUBS less those its
 * sockets hold (a second socket not yet opened counts), over the endpoints with a
 * ws_url whose address is good (one in its backoff after a loss counts: its
 * room comes back); *sockets gets how many such endpoints there are. 0 with
 * sockets: every one is full (a new subscription would wait and get nothing,
 * so the gateway refuses it). */
size_t pool_wsub_room(pool_network_t *net, size_t *sockets);
/* The endpoint's id ("none" for -1). */
const char *pool_wsub_endpoint_id(const pool_network_t *net, int endpoint);
/* Sockets of this worker holding subscriptions. */
size_t pool_wsub_sockets(const pool_network_t *net);
/* Subscribes with method(params: a JSON array's text) at endpoint; unsubscribe
 * is the method that ends it. NULL and *why if it could not start (no
 * callback then). Callbacks run from the event loop, never from here. */
pool_wsub_t *pool_wsub_open(pool_network_t *net, int endpoint, const char *method, const char *params,
                            const char *unsubscribe, const pool_wsub_cbs_t *cbs, void *data, const char **why);
/* Ends it (unsubscribed upstream); no callback after. */
void pool_wsub_close(pool_wsub_t *w);


#endif
