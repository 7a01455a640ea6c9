/* pool/pool_link.h: pool/'s transport layer, below the call.
 *
 * A link is the transport's part of one upstream endpoint: its URL, TLS
 * context, request prefix, addresses (pool_dns.c) and kept-alive connections
 * (pool_conn.c). An exchange is one HTTP request and its answer on one of
 * them (pool_exchange.c). The transport knows no call, no health and no
 * credit: the call layer starts and cancels exchanges through a table of
 * operations (h2o's habit: a unit test installs a scripted one, no sockets),
 * and hears of a freed slot through the hook it installs. */
#ifndef POOL_LINK_H
#define POOL_LINK_H

#include <netdb.h>
#include <openssl/ssl.h>

#include "base/sl_budget.h"
#include "base/sl_buf.h"
#include "wire/url.h"
#include "pool/pool.h"
#include "pool/pool_conf.h"
#include "pool/pool_delay.h"
#include "pool/pool_http.h"

#define POOL_MAX_ADDRS 8
#define POOL_IDLE_TIMEOUT_MS 30000     /* below common upstream keep-alive timeouts */
#define POOL_MAX_IDLE_PER_ENDPOINT 128
/* An exchange cancelled after its request was written (a client's HTTP/2
 * stream reset): its answer is read and dropped so the connection is pooled
 * again, when the answer has a Content-Length of at most this many bytes and
 * is read within POOL_DRAIN_MS; otherwise the connection is closed. */
#define POOL_DRAIN_MAX_BYTES (64 * 1024)
#define POOL_DRAIN_MS 1000
#define POOL_WRITE_REUSE_MAX_IDLE_MS 2000 /* writes avoid connections idle longer */
#define POOL_DNS_REFRESH_MS 60000

typedef struct pool_link pool_link_t;
typedef struct pool_exchange pool_exchange_t;
typedef struct pool_transport pool_transport_t;
typedef void (*pool_exchange_cb)(pool_exchange_t *ex);

/* How the call layer starts and stops exchanges. start: on failure before
 * anything happened (no address, socket error) returns the failure class and
 * never calls cb; otherwise returns POOL_FAIL_NONE and calls cb exactly once
 * (with ex's result filled in), unless cancel comes first. */
typedef struct pool_transport_ops {
    pool_fail_t (*start)(pool_exchange_t *ex, pool_link_t *link, const char *body, size_t len, int is_write,
                         pool_exchange_cb cb, void *data);
    void (*cancel)(pool_exchange_t *ex);
} pool_transport_ops_t;

/* Sockets, h2o's loop and sluice's HTTP/1.1 client (pool_exchange.c). */
extern const pool_transport_ops_t pool_transport_sockets;

/* The worker's transport: one per pool. */
struct pool_transport {
    const pool_transport_ops_t *ops;
    h2o_loop_t *loop;
    h2o_multithread_receiver_t *getaddr_receiver;
    size_t max_response_bytes;
    sl_budget_t *budget;          /* NULL: answers are not accounted (unit tests) */
    h2o_timeout_t idle_timeout;
    h2o_timeout_t drain_timeout;  /* POOL_DRAIN_MS */
    /* The hook the call layer installs: ex's body grew (ex->grow_call set). */
    void (*grew)(pool_exchange_t *ex);
    h2o_timeout_t zero_timeout;   /* a request on a kept-alive connection is written a loop turn later */
    pool_delays_t delays;
    /* The hook the call layer installs: one of link's slots freed up (an
     * exchange ended, or the answer bytes it held were let go). */
    void (*slot_freed)(pool_link_t *link);
};

/* A network's deadlines, shared by its links. */
typedef struct pool_link_timers {
    pool_transport_t *t;
    const char *network;          /* its name, for logs */
    uint32_t connect_ms;
    h2o_timeout_t connect;
    h2o_timeout_t first_byte;
    h2o_timeout_t attempt;
} pool_link_timers_t;

/* Where a link's addresses come from (pool_dns.c). */
typedef enum pool_dns_state {
    POOL_DNS_LITERAL,             /* an IP address in the URL: nothing to look up */
    POOL_DNS_FIRST,               /* the first lookup is under way: connections wait for it */
    POOL_DNS_OK,                  /* addresses known (refreshed while in use) */
    POOL_DNS_FAILED,              /* none known, the last lookup failed: out of the plan, retried */
} pool_dns_state_t;

typedef struct pool_conn pool_conn_t;

struct pool_link {
    pool_link_timers_t *timers;
    const pool_endpoint_conf_t *conf;
    int index;                    /* the endpoint's position in its network */
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
    h2o_linklist_t draining;      /* pool_conn_t reading a cancelled exchange's answer (pool_conn_drain) */
    uint32_t inflight;            /* exchanges in progress (or slots held) in this worker */
};

/* One HTTP request/response on one connection, embedded in its owner. */
struct pool_exchange {
    pool_link_t *link;
    pool_conn_t *conn;            /* NULL once finished */
    h2o_iovec_t bufs[3];          /* request prefix, Content-Length line, body */
    char clen[112];               /* the Content-Length value and the head's end (and a traceparent line) */
    int is_write;
    pool_exchange_cb cb;
    void *data;
    h2o_timeout_entry_t phase_timer;   /* connect, then first byte */
    h2o_timeout_entry_t attempt_timer;
    h2o_timeout_entry_t send_soon; /* a kept-alive connection's request, written at the next loop turn */
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
    size_t charged;               /* bytes of the body charged to the budget; the owner
                                   * takes body or in with it (pool_call_keep_exchange) */
    void *grow_call;              /* the pool_call_t it reads for (told as its body grows), or NULL */
    uint32_t latency_us;
};

/* An exchange's body, wherever it is kept. */
static inline const char *pool_exchange_bytes(const pool_exchange_t *ex)
{
    return ex->in != NULL ? ex->in->bytes : ex->body.base != NULL ? ex->body.base : "";
}

static inline size_t pool_exchange_len(const pool_exchange_t *ex)
{
    return ex->in != NULL ? ex->in->size : ex->body.len;
}

/* pool_transport.c */
void pool_transport_init(pool_transport_t *t, h2o_loop_t *loop, h2o_multithread_receiver_t *getaddr_receiver,
                         size_t max_response_bytes, sl_budget_t *budget, const pool_transport_ops_t *ops);
void pool_transport_dispose(pool_transport_t *t);
void pool_link_timers_init(pool_link_timers_t *tm, pool_transport_t *t, const char *network,
                           const pool_timeouts_t *timeouts);
void pool_link_timers_dispose(pool_link_timers_t *tm);
/* pool_askchild.c: endpoints asked in a child process of its own, on a
 * short-lived h2o loop with the workers' transport (h2o's resolver threads
 * never exist in the caller). The body runs in the child with c and writes
 * a line per answer (pool_askchild_tell, '\n' ended); it returns by its own
 * deadline. The caller gets each line in on_line until the pipe closes or
 * timeout_ms and one more second pass. SL_ERR_IO: no pipe or no fork. */
typedef struct pool_askchild {
    h2o_loop_t *loop;
    h2o_multithread_receiver_t getaddr;
    pool_transport_t t;
    int fd;
} pool_askchild_t;
typedef void (*pool_askchild_body)(pool_askchild_t *c, void *data);
typedef void (*pool_askchild_line)(char *line, void *data);
SL_MUST_CHECK sl_err_t pool_askchild_run(pool_askchild_body body, void *body_data, uint32_t timeout_ms,
                                         pool_askchild_line on_line, void *line_data);
/* Writes len bytes of line to the caller; a failed write ends the child. */
void pool_askchild_tell(const pool_askchild_t *c, const char *line, size_t len);

/* The link of an endpoint: URL, TLS context, request prefix, the first
 * lookup of a host name (never blocking). Errors: SL_ERR_CONFIG (logged).
 * A link that failed half-way is still disposable. */
SL_MUST_CHECK sl_err_t pool_link_init(pool_link_t *link, pool_link_timers_t *timers, int index,
                                      const pool_endpoint_conf_t *conf);
void pool_link_dispose(pool_link_t *link);
/* Closes the idle connections (worker shutdown). */
void pool_link_close_idle(pool_link_t *link);

/* pool_dns.c: 0 while the host name does not resolve (the plan skips the
 * endpoint). */
int pool_dns_usable(const pool_link_t *link);
/* 1 while the first lookup is under way: a new connection may wait for it. */
int pool_dns_pending(const pool_link_t *link);
/* Why the host name does not resolve: 0 (it does), 1 (lookups fail), 2
 * (the last lookup did not answer in time). */
int pool_dns_failing(const pool_link_t *link);

/* pool_exchange.c: the socket transport's start and cancel (through
 * pool_transport_sockets, or directly by pool/'s own probes). */
pool_fail_t pool_exchange_start(pool_exchange_t *ex, pool_link_t *link, const char *body, size_t len, int is_write,
                                pool_exchange_cb cb, void *data);
void pool_exchange_cancel(pool_exchange_t *ex);
/* Adds a `traceparent: tp` line (tp: WIRE_TRACEPARENT_LEN bytes, validated
 * by the caller) to the head of an exchange just started, before it is sent. */
void pool_exchange_traceparent(pool_exchange_t *ex, const char *tp);
/* A finished exchange's body is charged to the worker's budget until freed:
 * its owner frees it with this, or takes it (ex->body and ex->charged) and
 * later releases the charge with pool_budget_release. */
void pool_exchange_body_dispose(pool_exchange_t *ex);
void pool_budget_release(pool_transport_t *t, size_t bytes);

/* ---- WebSocket client connections (pool_ws.c) ---------------------------
 * A WebSocket to an upstream, beside the HTTP exchanges: one socket on
 * h2o's loop, TLS as an https link has it (pool_tls.c's verifying context),
 * an HTTP/1.1 Upgrade written here with its Sec-WebSocket-Accept checked,
 * then frames by wslay's client context (nothing is framed by hand).
 * Asked to (pool_ws_check_chain), it asks the socket its chain once the
 * Upgrade is accepted, before the owner hears it open: a ws_url on another
 * chain than its network's is refused there, whoever owns it.
 * Messages are bounded (max_message bytes: a larger one closes the socket
 * with 1009). It knows no JSON-RPC and no deadline: its owner
 * (pool_wshead.c, pool_wspass.c) says what to send, reads what arrives, and decides on its
 * tick when a socket has been quiet too long. */

/* A connection being opened (pool_sock_connect, pool_link_int.h): held by
 * its owner, read by the transport's connect and TLS callbacks only. */
typedef struct pool_sock_cbs pool_sock_cbs_t;
typedef struct pool_sock {
    pool_link_t *link;
    const pool_sock_cbs_t *cbs;
    void *owner;
} pool_sock_t;

typedef struct pool_ws pool_ws_t;

typedef enum pool_ws_state {
    POOL_WS_CLOSED,               /* no socket */
    POOL_WS_CONNECTING,           /* TCP connect, then TLS */
    POOL_WS_UPGRADING,            /* the Upgrade request sent, its answer awaited */
    POOL_WS_CHECKING,             /* the Upgrade accepted, the socket's chain asked (pool_ws_check_chain) */
    POOL_WS_OPEN,                 /* frames flow */
    POOL_WS_STATE_COUNT
} pool_ws_state_t;

/* What the owner hears. A callback may close the socket (pool_ws_close). */
typedef struct pool_ws_cbs {
    void (*open)(pool_ws_t *ws);                                   /* the Upgrade was accepted */
    void (*message)(pool_ws_t *ws, const char *msg, size_t len);   /* one text or binary message */
    void (*closed)(pool_ws_t *ws, const char *why);                /* the socket is gone (why: fixed text,
                                                                      never the URL); not after pool_ws_close */
} pool_ws_cbs_t;

struct pool_ws {
    pool_link_t *link;            /* the ws_url's link: addresses, TLS context, url (http form) */
    const pool_ws_cbs_t *cbs;
    void *data;
    size_t max_message;
    pool_ws_state_t state;
    h2o_socket_t *sock;
    pool_sock_t opening;          /* pool_sock_connect's, while CONNECTING */
    struct wslay_event_context *ctx;
    char key[32];                 /* Sec-WebSocket-Key sent (base64 of 16 random bytes) */
    sl_buf_t out;                 /* bytes wslay produced, waiting for the socket */
    sl_buf_t writing;             /* bytes h2o is writing now */
    uint64_t last_rx_ms;          /* monotonic: the last bytes received (pongs included) */
    uint64_t opened_ms;           /* monotonic: the Upgrade was accepted */
    uint8_t in_callback;          /* inside wslay_event_recv: a close waits for its end */
    uint8_t close_pending;
    uint8_t chain;                /* policy_chain_t of want */
    uint8_t wrong_chain;          /* closed because its chain is not want (why says which it is) */
    char close_why[64];
    const char *fail_why;         /* a failure inside wslay's callback: told once it returns */
    char want[48];                /* the network's chain, normal form (POLICY_CHAINID_MAX); "": not asked */
    char refused[128];            /* why a chain answer was refused */
};

/* Opens a socket to link's next address (link->url: the ws_url in its
 * http(s) form). Returns NULL, or why it could not start (no address yet,
 * socket error): then no callback runs. */
const char *pool_ws_open(pool_ws_t *ws, pool_link_t *link, size_t max_message, const pool_ws_cbs_t *cbs, void *data);
/* Once the Upgrade is accepted, asks the socket its chain (eth_chainId;
 * Solana getGenesisHash) before open is called: an answer that is not want
 * (normal form, policy/chainid.h) closes the socket with wrong_chain set and
 * why naming both; one that is no chain id closes it too. Call right after
 * pool_ws_open; want "" (the network's chain not known yet) asks nothing. */
void pool_ws_check_chain(pool_ws_t *ws, int chain, const char *want);
/* 1 if the socket is open or opening and was asked about another chain
 * than want (the network's chain was learned or re-learned since): its
 * owner closes it, to be asked again. */
int pool_ws_chain_stale(const pool_ws_t *ws, const char *want);
/* Queues one text message (OPEN only); 0 if it could not be queued. */
int pool_ws_send_text(pool_ws_t *ws, const char *msg, size_t len);
/* Queues a ping (OPEN only). */
void pool_ws_ping(pool_ws_t *ws);
/* Closes the socket now, no callback. Harmless when CLOSED. */
void pool_ws_close(pool_ws_t *ws);

/* The Sec-WebSocket-Accept a server must answer key with (RFC 6455 4.2.2):
 * base64(SHA-1(key + GUID)), NUL-terminated, into out[29]. */
void pool_ws_accept_of(const char *key, char out[29]);

#endif
