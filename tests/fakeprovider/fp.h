/* tests/fakeprovider/fp.h: internals shared by the fakeprovider files.
 *
 * fakeprovider is a test tool, not part of the gateway: an upstream JSON-RPC
 * node that misbehaves on request. One process, one thread, one epoll loop;
 * every wait (slow answers, dripped bodies, lingering closes) is a timer on
 * the loop, never a sleep, so a hung connection never stalls the others.
 *
 * Ownership: the server (fp_server_t) owns every connection, buffer and
 * string reachable from it; nothing here is shared across threads. Allocation
 * failure aborts (fp_xmalloc and friends). */
#ifndef FP_H
#define FP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#define FP_MAX_HEAD      (64 * 1024)          /* request line + headers */
#define FP_MAX_HEADERS   128
#define FP_MAX_BODY      (16 * 1024 * 1024)
#define FP_METHOD_MAX    128                  /* longer method names are not counted apart */
#define FP_LINGER_MS     1000                 /* how long an error close drains input */
#define FP_ARRIVALS_MAX  1024                 /* request arrival times kept for /_control/stats */

/* ---- memory and buffers (fp_buf.c) ---- */

typedef struct fp_buf {
    char *data;     /* owned; not NUL-terminated */
    size_t len;
    size_t cap;
} fp_buf_t;

void *fp_xmalloc(size_t n);
void *fp_xrealloc(void *p, size_t n);
char *fp_xstrndup(const char *s, size_t n);

void fp_buf_dispose(fp_buf_t *b);
void fp_buf_reserve(fp_buf_t *b, size_t extra);
void fp_buf_put(fp_buf_t *b, const void *p, size_t n);
void fp_buf_puts(fp_buf_t *b, const char *s);
void fp_buf_printf(fp_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fp_buf_put_u64(fp_buf_t *b, uint64_t v);
void fp_buf_put_quantity(fp_buf_t *b, uint64_t v);            /* "0x1f", quoted */
void fp_buf_put_hex(fp_buf_t *b, const uint8_t *p, size_t n); /* "0xab..", quoted */
void fp_buf_put_json_str(fp_buf_t *b, const char *s, size_t n);
/* Frees memory above keep bytes once a big answer has gone out, so one huge
 * answer does not pin megabytes per connection for its lifetime. */
void fp_buf_shrink(fp_buf_t *b, size_t keep);

/* ---- JSON scanning (fp_json.c) ----
 * A validating scanner that reports raw spans, so ids are echoed byte for
 * byte (cJSON would reformat 1e3 or big integers). */

typedef struct fp_span {
    const char *p;
    size_t n;       /* n == 0: absent */
} fp_span_t;

typedef struct fp_json_iter {
    const char *p;
    const char *end;
    bool first;
} fp_json_iter_t;

/* Whole text is exactly one JSON value (with optional whitespace). */
bool fp_json_valid(const char *p, size_t n);
/* Skips one value at p (leading whitespace allowed); NULL if malformed. */
const char *fp_json_skip(const char *p, const char *end);
fp_span_t fp_json_trim(const char *p, size_t n);
bool fp_json_iter_begin(fp_json_iter_t *it, fp_span_t v, char open);
/* 1: got an element/member, 0: end, -1: malformed. */
int fp_json_array_next(fp_json_iter_t *it, fp_span_t *elem);
int fp_json_object_next(fp_json_iter_t *it, fp_span_t *key, fp_span_t *val);
bool fp_json_array_get(fp_span_t arr, size_t idx, fp_span_t *out);
/* Contents of a string value without the quotes, escapes left raw. */
bool fp_json_string(fp_span_t v, fp_span_t *inner);
bool fp_span_eq(fp_span_t s, const char *lit);
/* A JSON number or a "0x.." quantity string; false if neither or too big. */
bool fp_json_u64(fp_span_t v, uint64_t *out);

/* ---- fault modes (fp_fault.c) ---- */

typedef struct fp_mode_def fp_mode_def_t;

typedef struct fp_mode {
    const fp_mode_def_t *def;
    int64_t count;          /* requests left; -1 = forever */
    char *method;           /* owned; NULL = every method */
    int64_t retry_after;    /* -1 = no Retry-After header */
    int64_t backoff;
    int64_t delay_ms;
    int64_t jitter_ms;      /* slow, slow_body: each answer waits delay_ms plus a random extra of this
                               mean (exponential, capped at 20 x), as a real provider's latency has a tail */
    int64_t size;
    int64_t code;
    char *message;          /* owned */
    char *data;             /* owned raw JSON; NULL = no "data" member */
    char *id;               /* owned raw JSON: rpc_error's id instead of the call's; NULL = the call's */
    int64_t behind;
    int64_t logs;
} fp_mode_t;

/* ---- JSON-RPC calls (fp_rpc.c) ---- */

typedef struct fp_call {
    fp_span_t id;           /* raw JSON; n == 0: notification */
    fp_span_t method;       /* string contents, raw */
    fp_span_t params;       /* raw JSON; n == 0: absent */
    bool valid;             /* an object with a string "method" */
    uint64_t head;          /* head block/slot this call sees (lag lowers it) */
} fp_call_t;

typedef struct fp_batch {
    fp_call_t *calls;       /* owned, reused across requests */
    size_t count;
    size_t cap;
    bool is_array;
    bool parse_error;
} fp_batch_t;

typedef struct fp_rpc_error {
    int64_t code;
    const char *message;
} fp_rpc_error_t;

typedef struct fp_server fp_server_t;

/* Writes the call's result value to out; returns NULL, or a static error
 * (then whatever was written is discarded). */
typedef const fp_rpc_error_t *(*fp_method_fn)(fp_server_t *srv, const fp_call_t *call,
                                              fp_buf_t *out);
typedef struct fp_method {
    const char *name;
    fp_method_fn fn;
} fp_method_t;

/* A chain's check of a call before its method runs (Solana's minContextSlot):
 * true if it wrote the call's whole answer (an error) to out. */
typedef bool (*fp_precheck_fn)(fp_server_t *srv, const fp_call_t *call, fp_buf_t *out);

typedef struct fp_chain {
    const char *name;
    const fp_method_t *methods;   /* sorted by name (checked at start) */
    const size_t *count;
    fp_precheck_fn precheck;      /* NULL: none */
} fp_chain_t;

extern const fp_rpc_error_t fp_err_invalid_params;
extern const fp_method_t fp_eth_methods[];
extern const size_t fp_eth_method_count;
extern const fp_method_t fp_sol_methods[];
extern const size_t fp_sol_method_count;
bool fp_sol_precheck(fp_server_t *srv, const fp_call_t *call, fp_buf_t *out);
/* fp_sol.c's pieces for fp_sol_watch.c: base58 of p into dst (size >= 2n + 1);
 * base58 text decoded (at most cap bytes); the slot a call reads at its
 * commitment; {"context":{..,"slot":slot},"value": opened. */
size_t fp_sol_base58(const uint8_t *p, size_t n, char *dst);
bool fp_sol_base58_decode(const char *text, uint8_t *out, size_t cap, size_t *n);
uint64_t fp_sol_call_slot(const fp_server_t *srv, const fp_call_t *call);
void fp_sol_put_context(fp_buf_t *out, uint64_t slot);
/* fp_sol_watch.c: transactions mentioning an address, program accounts. */
const fp_rpc_error_t *fp_solw_signatures(fp_server_t *srv, const fp_call_t *call, fp_buf_t *out);
const fp_rpc_error_t *fp_solw_transaction(fp_server_t *srv, const fp_call_t *call, fp_buf_t *out);
const fp_rpc_error_t *fp_solw_program_accounts(fp_server_t *srv, const fp_call_t *call, fp_buf_t *out);
int fp_solw_route(fp_server_t *srv, const char *body, size_t n, fp_buf_t *out);
void fp_solw_dispose(fp_server_t *srv);

/* ---- shared state: stats and the transaction store (fp_stats.c) ---- */

typedef struct fp_counter {
    char *name;             /* owned, decoded method name */
    uint64_t n;
} fp_counter_t;

typedef struct fp_tx {
    char *key;              /* owned: "0x.." hash or base58 signature */
    uint64_t block;         /* block/slot it "landed" in */
} fp_tx_t;

typedef struct fp_stats {
    uint64_t requests, calls, faults, connections_total, max_concurrent;
    fp_counter_t *methods;  /* insertion order */
    size_t method_count, method_cap;
    uint32_t *method_index; /* open addressing into methods, 0 = empty, else i + 1 */
    size_t index_cap;
    char **sent_raw;        /* owned strings, arrival order */
    size_t sent_count, sent_cap;
    uint64_t arrivals[FP_ARRIVALS_MAX]; /* ms since start each JSON-RPC request arrived: a ring */
    uint64_t arrival_total; /* arrivals recorded since the last reset (the ring keeps the newest) */
    char last_traceparent[64]; /* the last JSON-RPC request's traceparent header ("": none) */
} fp_stats_t;

typedef struct fp_txstore {
    fp_tx_t *slots;         /* open addressing; key NULL = empty */
    size_t cap, count;
} fp_txstore_t;

void fp_stats_count_method(fp_stats_t *st, fp_span_t raw_name);
void fp_stats_reset(fp_stats_t *st);
void fp_stats_dispose(fp_stats_t *st);
/* Records a tx as received (sent_raw) and landed at block (receipts). */
void fp_tx_record(fp_server_t *srv, const char *key, uint64_t block);
const fp_tx_t *fp_tx_find(const fp_txstore_t *ts, const char *key, size_t n);
void fp_txstore_dispose(fp_txstore_t *ts);

/* ---- connections (fp_conn.c, fp_http.c) ---- */

typedef enum fp_conn_state {
    FP_CONN_READING,        /* waiting for (the rest of) a request */
    FP_CONN_ANSWERING,      /* a request is in flight; its answer may be held back */
    FP_CONN_HUNG,           /* "hang": in flight until the peer goes away */
    FP_CONN_MUTE,           /* "accept_hang": never read */
    FP_CONN_LINGERING,      /* error answer sent; draining input before closing */
    FP_CONN_WS,             /* upgraded: WebSocket frames (fp_ws.c) */
    FP_CONN_STATE_COUNT
} fp_conn_state_t;

typedef enum fp_delivery {
    FP_DELIVER_NOW,
    FP_DELIVER_DELAY,       /* whole answer after delay_ms */
    FP_DELIVER_DRIP,        /* head + 10 body bytes now, the rest over delay_ms */
    FP_DELIVER_TRUNCATE,    /* half the body, then close */
    FP_DELIVER_RESET,       /* no answer, TCP RST */
    FP_DELIVER_HANG,        /* no answer, connection held */
} fp_delivery_t;

/* A close decided deep inside request handling, carried out by the drive
 * loop so that nothing below it ever frees the connection it works on. */
typedef enum fp_doom {
    FP_DOOM_NONE,
    FP_DOOM_CLOSE,
    FP_DOOM_RESET,
} fp_doom_t;

typedef struct fp_http_req {
    size_t head_len;        /* request line + headers + blank line */
    size_t body_len;
    size_t path_off, path_len;  /* relative to the request start */
    bool is_get;
    bool keep_alive;
    bool expect_continue;
    char ws_key[64];        /* Sec-WebSocket-Key ("": none) */
    char traceparent[64];   /* traceparent ("": none), kept in the stats */
} fp_http_req_t;

typedef struct fp_ws_sub {
    int kind;               /* fp_ws.c's row */
    uint64_t id;
} fp_ws_sub_t;

typedef struct fp_conn {
    fp_server_t *srv;
    int fd;
    SSL *ssl;                   /* NULL for plain HTTP */
    fp_conn_state_t state;      /* written only by conn_set_state (fp_conn.c) */
    fp_buf_t in;
    size_t in_off;              /* start of the unconsumed input */
    size_t scan;                /* header terminator search resumes here */
    bool head_done;             /* req holds the parsed head of the pending request */
    bool continue_sent;
    fp_http_req_t req;
    fp_buf_t out;
    size_t out_off;             /* bytes written */
    size_t out_limit;           /* bytes that may be written now (slow/drip hold the rest) */
    size_t drip_step;
    uint32_t drip_every_ms;
    bool eof;                   /* peer sent FIN */
    bool drained;               /* socket read to EAGAIN since the last EPOLLIN */
    bool want_write;            /* last write hit EAGAIN */
    bool close_after;           /* close once out is flushed */
    bool in_flight;             /* counted in srv->inflight */
    bool fin_sent;              /* lingering: our side is shut down */
    fp_doom_t doom;
    uint32_t events;            /* current epoll interest */
    uint64_t timer_at;
    size_t timer_idx;           /* index in srv->timers, SIZE_MAX = none */
    fp_ws_sub_t *ws_subs;       /* upgraded: its subscriptions (fp_ws.c) */
    size_t ws_nsubs;
    struct fp_conn *prev, *next;
} fp_conn_t;

typedef struct fp_reply {
    int status;
    const char *content_type;
    int64_t retry_after;        /* < 0: no header */
    const char *body;
    size_t body_len;
    fp_delivery_t delivery;
    int64_t delay_ms;
    bool close;
} fp_reply_t;

void fp_conn_accept(fp_server_t *srv, int fd, bool mute);
void fp_conn_on_event(fp_conn_t *c, uint32_t events);
void fp_conn_on_timer(fp_conn_t *c);
void fp_conn_close(fp_conn_t *c, bool reset);
void fp_conn_reply(fp_conn_t *c, const fp_reply_t *r);
/* Protocol error: answer status with a short body, drain input, close. */
void fp_conn_fail(fp_conn_t *c, int status);
/* Writes what is queued and waits for the socket if it must (a push from another connection's request). */
void fp_conn_kick(fp_conn_t *c);
/* The Upgrade was answered: frames from now on. */
void fp_conn_to_ws(fp_conn_t *c);

/* fp_ws.c: the WebSocket (subscriptions); /_control/ws pushes to them. */
void fp_ws_accept(fp_conn_t *c, const char *key);
int fp_ws_handle_next(fp_conn_t *c);
void fp_ws_dispose(fp_conn_t *c);
int fp_ws_route(fp_server_t *srv, const char *body, size_t n, fp_buf_t *out);

/* fp_http.c: 1 = a complete request was handled, 0 = need more input,
 * -1 = the connection was failed (an error answer is queued). */
int fp_http_handle_next(fp_conn_t *c);
void fp_http_write_head(fp_buf_t *out, const fp_reply_t *r);
const char *fp_http_reason(int status);

/* ---- timers (fp_timer.c): at most one per connection ---- */

void fp_timer_set(fp_server_t *srv, fp_conn_t *c, uint64_t at_ms);
void fp_timer_cancel(fp_server_t *srv, fp_conn_t *c);
int fp_timer_timeout(const fp_server_t *srv);  /* epoll_wait timeout, -1 = none */
void fp_timer_run(fp_server_t *srv);

/* ---- the chain (fp_chain.c): heads, forks, hashes, getLogs limits ---- */

#define FP_MAX_FORKS 256            /* reorgs on command, at most */
#define FP_DEPTH_UNSET UINT64_MAX   /* --safe-depth / --finalized-depth not given: the chain's default */

typedef struct fp_fork {
    uint64_t from;                  /* heights >= from belong to this fork (a later one may take some back) */
} fp_fork_t;

/* How a vendor refuses an eth_getLogs over more blocks than it takes. */
typedef struct fp_vendor {
    const char *name;
    int status;                     /* HTTP status of the answer */
    int64_t code;
    /* writes the message (unquoted, JSON-safe) for [from, to] over limit ... */
    void (*message)(fp_buf_t *out, uint64_t from, uint64_t to, uint64_t limit);
    const char *limit_format;       /* ... or, when NULL, this format of the limit alone */
} fp_vendor_t;

const fp_vendor_t *fp_vendor_find(const char *name);
void fp_vendor_message(const fp_vendor_t *v, fp_buf_t *out, uint64_t from, uint64_t to, uint64_t limit);
/* "alchemy|infura|..." for the usage text. */
const char *fp_vendor_names(void);
/* Block n's hash on this chain as it is now (the fork n belongs to included). */
void fp_block_hash(const fp_server_t *srv, uint64_t n, uint8_t out[32]);
/* Another 32 bytes of block n (its stateRoot, mixHash): salt tells them apart. */
void fp_block_digest(const fp_server_t *srv, uint64_t n, uint64_t salt, uint8_t out[32]);
void fp_put_block_hash(const fp_server_t *srv, fp_buf_t *out, uint64_t n);
/* The number of the block whose hash is hex ("0x" + 64 digits) on this chain now. */
bool fp_block_from_hash(const fp_server_t *srv, fp_span_t hex, uint64_t *n);
bool fp_block_known_hash(const fp_server_t *srv, fp_span_t hex, uint64_t *n, uint8_t out[32]);
/* A tag or quantity against the head a call sees (safe/finalized: the depths). */
bool fp_block_param(const fp_server_t *srv, fp_span_t v, uint64_t head, uint64_t *n);
/* The safe (Solana: confirmed) and finalized heights under head. */
uint64_t fp_safe_height(const fp_server_t *srv, uint64_t head);
uint64_t fp_finalized_height(const fp_server_t *srv, uint64_t head);
/* The /_control/chain route (fp_control.c's table). */
int fp_chain_route(fp_server_t *srv, const char *body, size_t n, fp_buf_t *out);
/* The lie mode's rewrite of one call's answer at out[from..): another value
 * of the same shape (a digit of the result changed). */
void fp_chain_lie(fp_buf_t *out, size_t from);

/* fp_logs.c */
const fp_rpc_error_t *fp_eth_get_logs(fp_server_t *srv, const fp_call_t *call, fp_buf_t *out);

/* ---- the server ---- */

struct fp_server {
    int epfd;
    int listen_fd;
    int signal_fd;
    int spare_fd;               /* given up on EMFILE to shed one connection */
    SSL_CTX *tls;
    const fp_chain_t *chain;
    const char *name;           /* [A-Za-z0-9._:-]{1,63}, so it needs no escaping */
    uint64_t chain_id;
    uint64_t block0;
    uint64_t block_time_ms;
    int64_t head_offset;        /* /_control/chain advance and head: added to the timer's head */
    uint64_t safe_depth;        /* safe (Solana confirmed) = head - this; FP_DEPTH_UNSET until set */
    uint64_t finalized_depth;   /* finalized = head - this */
    fp_fork_t forks[FP_MAX_FORKS];  /* reorgs on command, oldest first */
    size_t nforks;
    bool side_forgotten;        /* /_control/chain forget: a reorged-out block's hash is unknown (eth_getLogs) */
    uint64_t logs_per_block;    /* > 0: eth_getLogs answers this many logs per block of its range */
    bool logs_varied;           /* ... of varied addresses and topics, filtered by address and topics */
    uint64_t logs_limit;        /* > 0: an eth_getLogs over more blocks is refused ... */
    const fp_vendor_t *logs_vendor; /* ... in this vendor's words */
    const char *genesis_hash;   /* Solana getGenesisHash */
    int reply_status;           /* set while answering: the HTTP status a call asks for (QuickNode's 413) */
    fp_rpc_error_t call_error;  /* a method's error worded at run time (a vendor's getLogs refusal) ... */
    char call_error_msg[256];   /* ... and its message */
    uint64_t start_ms;
    int64_t start_wall;         /* unix seconds at start, for block timestamps */
    bool quiet;
    bool stop;
    uint64_t now_ms;            /* loop time, updated once per epoll_wait */
    fp_mode_t mode;
    fp_stats_t stats;
    fp_txstore_t txs;
    struct fp_solw *solw;       /* Solana mentions and program accounts (fp_sol_watch.c); NULL until used */
    uint64_t conns_open;
    uint64_t inflight;
    fp_conn_t **timers;         /* binary min-heap on timer_at */
    size_t timer_count, timer_cap;
    fp_conn_t *conns;           /* every open connection, to free them at exit */
    fp_buf_t body;              /* scratch: the answer body being built */
    fp_buf_t idbuf;             /* scratch: rewritten ids (wrong_id) */
    fp_batch_t batch;
    uint64_t ws_upgrades, ws_next_id, ws_unsubscribes;
    uint64_t ws_subscribes[5];  /* per fp_ws.c row */
    char ws_last_params[8192];   /* the last subscribe's params (JSON) */
};

uint64_t fp_server_head(const fp_server_t *srv);
void fp_log(const fp_server_t *srv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fp_inflight_begin(fp_conn_t *c);
void fp_inflight_end(fp_conn_t *c);

/* fp_rpc.c */
void fp_batch_parse(fp_batch_t *b, const char *body, size_t n, uint64_t head);
/* Appends the answer for the batch to out; per_call (may be NULL) rewrites
 * the calls it matches. Returns false if nothing is to be answered
 * (notifications only). */
typedef void (*fp_call_fault_fn)(fp_server_t *srv, const fp_mode_t *m, fp_call_t *call,
                                 fp_buf_t *out);
bool fp_rpc_answer(fp_server_t *srv, fp_batch_t *b, const fp_mode_t *m, fp_buf_t *out);
void fp_rpc_answer_call(fp_server_t *srv, fp_call_t *call, fp_buf_t *out);
void fp_rpc_put_error(fp_buf_t *out, fp_span_t id, int64_t code, const char *msg,
                      const char *data_raw);
bool fp_call_method_is(const fp_call_t *call, const char *name);
bool fp_chain_check(const fp_chain_t *chain);
const fp_chain_t *fp_chain_find(const char *name);

/* fp_fault.c */
void fp_mode_init(fp_mode_t *m);
void fp_mode_dispose(fp_mode_t *m);
bool fp_mode_set_kind(fp_mode_t *m, const char *name);
/* Sets option key from text (CLI); false with *err set on bad key/value. */
bool fp_mode_set_text(fp_mode_t *m, const char *key, const char *value, const char **err);
/* Replaces m with the mode described by a control body; false (m untouched)
 * with a message in err on a bad body. */
bool fp_mode_from_json(fp_mode_t *m, const char *body, size_t n, char *err, size_t errlen);
void fp_mode_to_json(const fp_mode_t *m, fp_buf_t *out);
bool fp_mode_is_accept_hang(const fp_mode_t *m);
const char *fp_mode_name(const fp_mode_t *m);
void fp_mode_consume(fp_server_t *srv);
void fp_fault_answer(fp_conn_t *c, const char *body, size_t n);
/* Per-call fault hook used by fp_rpc_answer. */
fp_call_fault_fn fp_mode_call_fn(const fp_mode_t *m);
bool fp_mode_matches_call(const fp_mode_t *m, const fp_call_t *call);

/* fp_control.c */
void fp_control_handle(fp_conn_t *c, const char *path, size_t path_len, const char *body,
                       size_t n);

#endif
