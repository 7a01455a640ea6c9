/* sub/sub_int.h: inside the subscription registry (sub/sub.c):
 * the kinds' table and the source a kind's file runs. Each kind is one row
 * of sub_kinds.c; a family of kinds is one file (sub_eth.c,
 * sub_sol.c). For sub/sub*.c and tests/sub/ only.
 *
 * Where sub/ still builds a tree, and why. Upstream answers are read with
 * wire/'s scanner (sub_json.c): a block header (sub_follow.c), eth_getLogs
 * results (sub_eth.c's sends, sub_logshare.c), the merged Solana polls
 * (sub_sol_batch.c, sub_sol.c's parts) and logsSubscribe's polls
 * (sub_sol_logs.c). What remains of cJSON:
 *  - the client's subscribe params (small, bounded by the message size):
 *    sub.c (params, kind_of, unsubscribe's id), the normalisers of
 *    sub_eth.c (the logs filter sorted and printed as the source's key),
 *    sub_sol.c, sub_sol_logs.c, sub_sol_conf.c (commitment), sub_pass.c
 *    (params printed canonically: members sorted) and the normaliser type
 *    below (cJSON params);
 *  - sub_eth_filter.c's sub_eth_filter_bytes: the key sub/ wrote itself, read back once at
 *    a source's start;
 *  - the fallbacks of the scanner paths, for an answer a tree would respell
 *    and clients have always been sent respelled: one with a backslash
 *    anywhere (escapes are decoded and re-encoded by a tree; raw key compares
 *    could miss an escaped key), or a value with a number other than a plain
 *    integer of at most 15 digits (1.0 -> 1, a u64 rentEpoch ->
 *    1.8446744073709552e+19): sub_follow.c header_read_tree, sub_json.c
 *    (each_log_tree; sub_json_print for such a value alone), sub_logshare.c
 *    (read_logs' tree), sub_sol_batch.c on_chunk_tree, sub_sol.c
 *    signature_answer_tree and account_answer's, sub_sol_logs.c tell_tree.
 *    Real answers take them rarely: hex strings and small integers are plain
 *    (Solana's u64 rentEpoch is the common exception, a tree of that value
 *    alone);
 *  - sub_sol_program.c: getProgramAccounts answers still go through a tree
 *    (another change owns that file now; it folds into the same helpers). */
#ifndef SUB_INT_H
#define SUB_INT_H

#include <cjson/cJSON.h>

#include "sub/sub.h"

typedef struct sub_source sub_source_t;

/* A position a subscription reached (sub_resume.c): the last block it
 * delivered in full. */
#define SUB_RESUME_BELOW 7
typedef struct sub_resume_pos {
    uint64_t height;              /* 0: none */
    uint8_t hash[32];
    uint8_t below[SUB_RESUME_BELOW][32]; /* the hashes of height - 1 .. height - 7 on the branch sent (zero:
                                            unknown): a reorg across the gap walks back over them */
} sub_resume_pos_t;

/* A kind's follow (sub_sol_logs.c's poll) of an address for another
 * (sub_pass_sol.c): each transaction after `from` told to tell(data,
 * signature, a logsNotification's result), in order, from the loop;
 * caught_up(data, newest signature queued or "") once a poll, the second at
 * the earliest, found nothing new and everything queued was told (from
 * NULL: once the newest now is known, nothing told); it polls no more then
 * (unfollow it from the loop, not from there). key: sub_sol_logs_params's
 * ("<address>|<level>"). */
typedef struct sub_sol_logs_feed {
    void (*tell)(void *data, const char *sig, const char *result, size_t len);
    void (*caught_up)(void *data, const char *anchor);
    void *data;
} sub_sol_logs_feed_t;

typedef enum sub_id_form {
    SUB_ID_HEX,                /* "0x" and 32 hex digits, a string (geth's) */
    SUB_ID_INT,                /* an integer (Solana's) */
} sub_id_form_t;

typedef struct sub_kind {
    const char *name;             /* eth_subscribe's first param ("newHeads"), or the Solana method */
    policy_chain_t chain;
    const char *method;           /* "eth_subscribe", "slotSubscribe" */
    const char *unsubscribe;      /* "eth_unsubscribe", "slotUnsubscribe" */
    const char *notification;     /* "eth_subscription", "slotNotification" */
    sub_id_form_t id_form;
    state_srv_counter_t gauge;    /* subscriptions of this kind open */
    /* Checks the params after the kind's name (Ethereum) or all of them
     * (Solana), and writes their normal form to key (equal keys share a
     * source). Returns NULL, or the -32602 message. NULL function: the kind
     * is refused with `refusal`. */
    const char *(*normalise)(const cJSON *params, sl_buf_t *key);
    const char *refusal;          /* -32601 message of a kind not served */
    /* Starts the source (src->impl); stop frees it, any call in flight released. */
    void (*start)(sub_source_t *src);
    void (*stop)(sub_source_t *src);
    /* Passed through to an endpoint's WebSocket (sub_pass.c) where the
     * network has a ws_url; else start (polling), else refusal. */
    uint8_t pass;
    /* The position a source of this kind reached (the last block it
     * delivered in full: *height and hash; slotSubscribe: the last slot
     * told, no hash), 1; 0 when it has none yet. NULL:
     * the kind is not held when its socket closes (sub_resume.c). A source
     * started with src->resume set goes on from that position. */
    int (*position)(const sub_source_t *src, sub_resume_pos_t *pos);
    /* Polled, each source makes its own upstream calls every interval
     * (nothing merges them): counted against ws_max_polled_sources_per_identity. */
    uint8_t own_poll;
    /* Passed through, the kind is backfilled across an upstream failover
     * (sub_pass_sol.c) by following it from the last item told: the
     * follow above (sub_sol_logs_follow) and its end. NULL: not backfilled. */
    void *(*follow)(sub_source_t *src, const char *key, const char *from, const sub_sol_logs_feed_t *feed);
    void (*unfollow)(void *follow);
} sub_kind_t;

struct sub_source {
    sub_reg_t *reg;
    const sub_kind_t *kind;
    sub_net_t *net;
    char *key;                    /* the normalised params */
    h2o_linklist_t subs;          /* sub_t of its subscribers */
    h2o_linklist_t link;          /* in the registry's sources; unlinked once finished */
    size_t nsubs;
    void *impl;                   /* the kind's state */
    uint8_t pass;                 /* served by sub_pass.c, not the row's start */
    uint64_t mark;                /* sub.c's counting of a caller's distinct sources */
    h2o_timeout_entry_t reap;     /* a finished source stops from the loop, not its own callback */
    char creator[SUB_IDENT_MAX]; /* the identity whose subscribe started it (ws_max_sources_per_identity) */
    sub_resume_pos_t resume;      /* a held subscription's position it goes on from (height 0: none); such
                                     a source is its subscriber's alone (source_find passes it by) */
};

/* Work a network's sources share in the worker (sub_logshare.c's
 * per-block logs, sub_sol_batch.c's merged polls): the first member of
 * each such struct, found by (tag, net, key); freed by its owner when its
 * last source leaves. */
typedef struct sub_group {
    h2o_linklist_t link;          /* in the registry's groups */
    const char *tag;              /* the owner's static name ("logs", "account", "signature") */
    sub_net_t *net;
    char key[64];                 /* the owner's (an account poll's options object) */
} sub_group_t;

/* The group of (tag, net, key), or NULL. */
sub_group_t *sub_group_find(sub_reg_t *r, const char *tag, const sub_net_t *net, const char *key);
/* Links a new group g (its tag, net and key set) into r's groups. */
void sub_group_add(sub_reg_t *r, sub_group_t *g);

extern const sub_kind_t sub_kinds[];
extern const size_t sub_nkinds;

/* Sends result (JSON text) to every subscriber of src as a notification. */
void sub_notify(sub_source_t *src, const char *result, size_t len);
/* Ends every subscription of src with a JSON-RPC error (id null, code
 * -32005, msg, data {subscription, method}) to each subscriber, then as
 * sub_finish. For a source that cannot go on (an answer over a bound). */
void sub_fail(sub_source_t *src, const char *msg);
/* As sub_fail, for a source that could not deliver block height (its
 * hash, may be NULL): data also names the block ("block", hex) and why
 * ("reason", a short word). */
void sub_fail_block(sub_source_t *src, const char *msg, const char *reason, uint64_t height,
                       const uint8_t *hash);
/* After a notify-once kind's notification (signatureSubscribe): every
 * subscription of src ends, and src stops from the loop. */
void sub_finish(sub_source_t *src);

h2o_loop_t *sub_loop(const sub_reg_t *r);
/* The registry of one worker: sub.c keeps its clients and sources,
 * sub_reg.c its services to the kinds (loop, bounds, counters, events,
 * shared groups, poll timers). */
#define SUB_MAX_TIMEOUTS 8
struct sub_reg {
    h2o_loop_t *loop;
    sub_limits_t limits;
    sub_counters_t counters;
    state_t *st;                  /* events (NULL: none) */
    h2o_linklist_t clients;       /* sub_client_t with subscriptions or not */
    h2o_linklist_t sources;       /* sub_source_t running */
    h2o_linklist_t follows;       /* sub_follow.c's followers */
    h2o_linklist_t finished;      /* sources finished, waiting to be reaped */
    h2o_linklist_t groups;        /* sub_group_t: work shared by a network's sources */
    h2o_timeout_t zero;           /* reaps finished sources */
    h2o_timeout_t timeouts[SUB_MAX_TIMEOUTS];
    uint32_t timeout_ms[SUB_MAX_TIMEOUTS];
    size_t ntimeouts;
    uint64_t open[STATE_SRV_COUNT]; /* gauges of the kinds */
    uint64_t mark;                /* count_ident_pass's last generation */
};

const sub_limits_t *sub_limits(const sub_reg_t *r);
/* Counting through the registry's sub_counters_t (sub.h), where it has one. */
void sub_count_srv(const sub_reg_t *r, state_srv_counter_t c, uint64_t n);
void sub_count_srv_set(const sub_reg_t *r, state_srv_counter_t c, uint64_t value);
void sub_count_cost(const sub_reg_t *r, size_t net, state_sub_counter_t c, int64_t n);
void sub_count_net(const sub_reg_t *r, size_t net, size_t i, int64_t delta);
/* The endpoint a source's polls are answered by changed (failover): logged
 * and a subscription_source_changed event (network, kind, from, to, the
 * heights backfilled while on the one before). */
void sub_source_changed(sub_reg_t *r, const sub_net_t *net, const char *kind, const char *from,
                           const char *to, uint64_t backfilled);
/* Events go to it (NULL: none). */
state_t *sub_state(const sub_reg_t *r);
/* Adds delta to the worker's gauge g. */
void sub_gauge(sub_reg_t *r, state_srv_counter_t g, int delta);
/* The poll interval of net's sources: its ranking.probe_interval_ms, else 1 s. */
uint32_t sub_poll_ms(const sub_net_t *net);
/* The chain view's head is looked at this often by the sources it wakes (a read). */
#define SUB_WATCH_MS 20

/* A timeout list of the registry for period ms (created on first use). */
h2o_timeout_t *sub_timeout(sub_reg_t *r, uint32_t ms);

/* sub_follow.c: the head follower of a network, shared by its newHeads
 * and logs sources. A listener hears every header once, in order, and a
 * reorg as a new header for a height heard (replaced set). */
typedef struct sub_header {
    uint64_t height;
    const uint8_t *hash;          /* 32 bytes */
    const char *json;             /* the header as geth's newHeads gives it */
    size_t len;
    int replaced;                 /* a height heard before, on the branch replaced */
    int deep;                     /* replaced, and the fork is below what the follower keeps: heights
                                     under this one may have been replaced unheard */
    uint64_t gap;                 /* heights skipped just below this one (over the backfill bound) */
} sub_header_t;

/* A listener hears the headers after the head when it joined (geth's
 * semantics: the first notification is the first block after the
 * subscription), and any replacement. */
typedef struct sub_listener sub_listener_t;
struct sub_listener {
    void (*on_header)(sub_listener_t *l, const sub_header_t *hd);
    h2o_linklist_t link;
    struct sub_follow *f;
    uint64_t from;                /* heights up to this one were there before it joined: not told */
};

void sub_follow_listen(sub_reg_t *r, sub_net_t *net, sub_listener_t *l);
/* A listener of its own follower, seeded at pos (a held subscription's):
 * it hears the heights after pos.height, backfilled by number up to the
 * head (a reorg across them walked back as the shared follower does: pos's
 * height replaced is told `replaced`), then the head as it moves. */
void sub_follow_listen_at(sub_reg_t *r, sub_net_t *net, sub_listener_t *l, const sub_resume_pos_t *pos);
void sub_follow_unlisten(sub_listener_t *l);
/* The hash the follower sent at height, or NULL (not sent, replaced, or too old). */
const uint8_t *sub_follow_hash(const sub_listener_t *l, uint64_t height);
/* The highest height sent on the branch the follower is on (0: none). */
uint64_t sub_follow_last(const sub_listener_t *l);
/* pos->below from the hashes the follower of l keeps under pos->height. */
void sub_follow_below(const sub_listener_t *l, sub_resume_pos_t *pos);
/* Heights the follower keeps the hashes of (POLICY_HEADTRACK_RING): a reorg deeper is told deep. */
#define SUB_FOLLOW_KEPT 128
/* Registry teardown: followers left (none when every client went). */
void sub_follow_dispose_all(sub_reg_t *r);
h2o_linklist_t *sub_follows(sub_reg_t *r);

/* sub_json.c: upstream answers re-sent, read with wire/'s scanner where
 * their compact bytes are plain (wire/json_compact.h), else through a tree,
 * byte-identical either way. */
typedef void (*sub_json_text_fn)(void *arg, const char *text, size_t len);
/* Appends the compact object at span obj of buf without the first member
 * of each of keys[0..nkeys) (a tree's delete), extra (members' text, or
 * NULL) added last. 0 (out as it was) if obj is not an object. */
int sub_json_object_without(const char *buf, wire_span_t obj, const char *const *keys, size_t nkeys,
                            const char *extra, sl_buf_t *out);
/* The spans of the elements of the array at span arr of buf (validated
 * JSON) in *items (malloc'd, the caller frees it), *n of them, *objects
 * (may be NULL) 1 if every one is an object; 0 when arr is not an array. */
int sub_json_items(const char *buf, wire_span_t arr, wire_span_t **items, size_t *n, int *objects);
/* text[0..len) without the whitespace around it, as a span. */
wire_span_t sub_json_trim(const char *text, size_t len);
/* 1 if text[0..len) holds no backslash: no string or key in it is written
 * with escapes, so wire/'s raw key compares find what a tree's would. An
 * answer with one is read through a tree. */
int sub_json_escape_free(const char *text, size_t len);
/* Appends the value at span v of buf (validated) as a tree's print gives
 * it: its compact bytes when plain, else through a tree of it alone. */
void sub_json_print(const char *buf, wire_span_t v, sl_buf_t *out);
/* The first element of the array at span arr, or {0, 0}. */
wire_span_t sub_json_item0(const char *buf, wire_span_t arr);
/* The number token at span v as a tree reads it (strtod). */
double sub_json_number(const char *buf, wire_span_t v);
/* When text[0..len) is a plain JSON array: 1, its compact bytes appended to
 * c, the spans of its elements (in c) in *items (malloc'd, the caller frees
 * it), *n of them, *objects (may be NULL) 1 if every one is an object.
 * 0 (c as it was) when it is not plain or not an array: the caller's tree. */
int sub_json_plain_items(const char *text, size_t len, sl_buf_t *c, wire_span_t **items, size_t *n, int *objects);
/* Calls fn with each log of the JSON array logs[0..len) as it is re-sent:
 * compact; removed: newest first, with "removed":true last. The count. */
size_t sub_json_each_log(const char *logs, size_t len, int removed, sub_json_text_fn fn, void *arg);

/* sub_resume.c: subscriptions held after their socket closed
 * (server.ws_resume, state/state_resume.h). sub_resume_hold keeps src's
 * position for the client's identity (its socket is closing); sub_resume_take
 * finds the one held for the same identity, kind and params (key), takes it
 * over, and 1 with *pos to go on from; 0 to start from the head (none held,
 * expired, too far behind: counted and logged). */
void sub_resume_hold(const sub_client_t *c, const sub_source_t *src);
int sub_resume_take(const sub_client_t *c, const sub_kind_t *k, const char *key, sub_resume_pos_t *pos);
/* The backfill bound: a held position further behind the head starts from the head. */
#define SUB_RESUME_MAX_BEHIND 128

/* The kinds' normalisers and sources (sub_eth.c, sub_sol.c). */
const char *sub_eth_heads_params(const cJSON *params, sl_buf_t *key);
void sub_eth_heads_start(sub_source_t *src);
void sub_eth_heads_stop(sub_source_t *src);
int sub_eth_heads_position(const sub_source_t *src, sub_resume_pos_t *pos);
int sub_eth_logs_position(const sub_source_t *src, sub_resume_pos_t *pos);
const char *sub_eth_logs_params(const cJSON *params, sl_buf_t *key);
void sub_eth_logs_start(sub_source_t *src);
void sub_eth_logs_stop(sub_source_t *src);
/* The logs normaliser's refusals past a filter's caps (policy/logfilter.h):
 * the message; the subscribe's error adds data.reason for them. */
extern const char sub_eth_logs_too_many_addresses[];
extern const char sub_eth_logs_too_many_topics[];

/* sub_reply.c: a call's answer (result: JSON text) and its error (a
 * refusal below, or one of the logs normaliser's, gets its data.reason);
 * a call without an id (a notification) gets neither. */
#define SUB_ID_MAX 40          /* a subscription id as written in JSON, with its NUL */
void sub_reply(sub_client_t *c, const char *body, wire_span_t id, const char *result);
void sub_reply_error(sub_client_t *c, const char *body, wire_span_t id, int code, const char *msg);
/* A new id of that form into out (SUB_ID_MAX bytes), from getrandom(). */
void sub_new_id(sub_id_form_t form, char *out);
/* The bounds' refusals that carry a data.reason (-32005). */
extern const char sub_pass_room_msg[];
extern const char sub_pass_share_msg[];
extern const char sub_polled_sources_msg[];
/* A subscription's filter (its normalised params) is charged to the held
 * bytes from this size on (smaller: newHeads' "", an account's key) */
#define SUB_FILTER_FREE 256
extern const char sub_filter_share_msg[];
extern const char sub_filter_budget_msg[];
const char *sub_sol_slot_params(const cJSON *params, sl_buf_t *key);
void sub_sol_slot_start(sub_source_t *src);
int sub_sol_slot_position(const sub_source_t *src, sub_resume_pos_t *pos);
void sub_sol_root_start(sub_source_t *src);
const char *sub_sol_signature_params(const cJSON *params, sl_buf_t *key);
void sub_sol_signature_start(sub_source_t *src);
const char *sub_sol_account_params(const cJSON *params, sl_buf_t *key);
void sub_sol_account_start(sub_source_t *src);
void sub_sol_stop(sub_source_t *src);
const char *sub_sol_logs_params(const cJSON *params, sl_buf_t *key);
void sub_sol_logs_start(sub_source_t *src);
void sub_sol_logs_stop(sub_source_t *src);
void *sub_sol_logs_follow(sub_source_t *src, const char *key, const char *from, const sub_sol_logs_feed_t *feed);
void sub_sol_logs_unfollow(void *follow);
/* sub_pass_sol.c: a passed-through logsSubscribe {"mentions":[address]}
 * backfilled across an upstream failover (sub_pass.c): the signatures told
 * are remembered; when the source moved to another endpoint, what the
 * address had since the last one told is polled and told first, the live
 * notifications held meanwhile, then the live stream; nothing twice. */
typedef struct sub_pass_sol sub_pass_sol_t;
/* NULL: src is not such a subscription (another kind, "all"). */
sub_pass_sol_t *sub_pass_sol_new(sub_source_t *src);
void sub_pass_sol_free(sub_pass_sol_t *t);
/* A live notification's result: 1 to relay it now, 0 not (told already,
 * or held until the backfill is told). */
int sub_pass_sol_live(sub_pass_sol_t *t, const char *result, size_t len);
/* The source was subscribed at another endpoint after a loss. */
void sub_pass_sol_moved(sub_pass_sol_t *t);
const char *sub_sol_program_params(const cJSON *params, sl_buf_t *key);
void sub_sol_program_start(sub_source_t *src);
void sub_sol_program_stop(sub_source_t *src);

/* sub_sol_conf.c: Solana's shared checks. Commitments by rank
 * (processed 0, confirmed 1, finalized 2); a level's name, or -1. */
extern const char *const sub_sol_levels[3];
int sub_sol_level(const char *s);
/* 1 if s is base58 of min..max characters. */
int sub_sol_is_b58(const char *s, size_t min, size_t max);
/* The config object's commitment (finalized when absent); -1 when bad. */
int sub_sol_commitment(const cJSON *cfg);
struct sub_call;
/* After a poll's call c: endpoint (cap bytes) becomes the one that answered
 * it; a failover away from the one before is told (sub_source_changed). */
void sub_sol_note_endpoint(sub_source_t *src, const struct sub_call *c, char *endpoint, size_t cap);

/* sub_sol_match.c: a programSubscribe's filters applied to the accounts
 * of a shared getProgramAccounts answer (sub_sol_program.c). */
typedef struct sub_sol_filter {
    int data_size;                /* 1: {"dataSize": n}; 0: {"memcmp": {offset n, bytes}} */
    uint64_t n;
    uint8_t bytes[128];           /* memcmp's bytes, decoded */
    size_t len;
    char text[200];               /* the filter in normal form (the key's), to compare filters */
} sub_sol_filter_t;
/* The normalised filters' JSON text ("" or NULL: none) into out (at most
 * cap); 0 when one cannot be decoded. */
int sub_sol_filters_parse(const char *json, sub_sol_filter_t *out, size_t cap, size_t *n);
/* 1 if data (len bytes) passes every filter of f. */
int sub_sol_filters_match(const sub_sol_filter_t *f, size_t n, const uint8_t *data, size_t len);
/* An answer's account object's data decoded (base64, base58 or a plain
 * base58 string) into *data (caller frees) and 1, or 0 (another encoding). */
int sub_sol_account_data(const cJSON *acc, uint8_t **data, size_t *len);

/* sub_pass.c: the passthrough source. sub_pass_params is the generic
 * normaliser of a passthrough kind without its own (Solana: an array whose
 * first member is a string or an object, printed canonically, at most 4 KB);
 * sub_pass_upstream writes the params the upstream is sent (the key of
 * a passthrough source: equal params share it), or returns the -32602 message. */
const char *sub_pass_params(const cJSON *params, sl_buf_t *key);
const char *sub_pass_pending_params(const cJSON *params, sl_buf_t *key);
const char *sub_pass_upstream(const sub_kind_t *k, const cJSON *params, const char *key, sl_buf_t *out);
/* 1 if net has an endpoint with a ws_url usable now / configured at all. */
int sub_pass_usable(sub_net_t *net);
int sub_pass_configured(const sub_net_t *net);
/* How a subscribe of kind k on net is served: 1 passed through, 0 the row's
 * start, -1 refused (the row's refusal). */
int sub_pass_served_by(const sub_kind_t *k, sub_net_t *net);
/* The params checked into key (NUL-terminated): a passthrough's is the
 * params the upstream is sent. NULL or the -32602 message. */
const char *sub_pass_key(const sub_kind_t *k, const cJSON *params, int pass, sl_buf_t *key);
void sub_pass_start(sub_source_t *src);
void sub_pass_stop(sub_source_t *src);

#endif
