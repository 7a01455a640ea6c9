/* gateway/gw_sub_int.h: inside the subscription registry (gateway/gw_sub.c):
 * the kinds' table and the source a kind's file runs. Each kind is one row
 * of gw_sub_kinds.c; a family of kinds is one file (gw_sub_eth.c,
 * gw_sub_sol.c). For gateway/gw_sub*.c only. */
#ifndef GW_SUB_INT_H
#define GW_SUB_INT_H

#include <cjson/cJSON.h>

#include "gateway/gw_sub.h"

typedef struct gw_sub_source gw_sub_source_t;

typedef enum gw_sub_id_form {
    GW_SUB_ID_HEX,                /* "0x" and 32 hex digits, a string (geth's) */
    GW_SUB_ID_INT,                /* an integer (Solana's) */
} gw_sub_id_form_t;

typedef struct gw_sub_kind {
    const char *name;             /* eth_subscribe's first param ("newHeads"), or the Solana method */
    policy_chain_t chain;
    const char *method;           /* "eth_subscribe", "slotSubscribe" */
    const char *unsubscribe;      /* "eth_unsubscribe", "slotUnsubscribe" */
    const char *notification;     /* "eth_subscription", "slotNotification" */
    gw_sub_id_form_t id_form;
    state_srv_counter_t gauge;    /* subscriptions of this kind open */
    /* Checks the params after the kind's name (Ethereum) or all of them
     * (Solana), and writes their normal form to key (equal keys share a
     * source). Returns NULL, or the -32602 message. NULL function: the kind
     * is refused with `refusal`. */
    const char *(*normalise)(const cJSON *params, sl_buf_t *key);
    const char *refusal;          /* -32601 message of a kind not served */
    /* Starts the source (src->impl); stop frees it, any call in flight released. */
    void (*start)(gw_sub_source_t *src);
    void (*stop)(gw_sub_source_t *src);
    /* Passed through to an endpoint's WebSocket (gw_sub_pass.c) where the
     * network has a ws_url; else start (polling), else refusal. */
    uint8_t pass;
    /* Polled, each source makes its own upstream calls every interval
     * (nothing merges them): counted against ws_max_polled_sources_per_identity. */
    uint8_t own_poll;
} gw_sub_kind_t;

struct gw_sub_source {
    gw_sub_reg_t *reg;
    const gw_sub_kind_t *kind;
    gw_net_t *net;
    char *key;                    /* the normalised params */
    h2o_linklist_t subs;          /* gw_sub_t of its subscribers */
    h2o_linklist_t link;          /* in the registry's sources; unlinked once finished */
    size_t nsubs;
    void *impl;                   /* the kind's state */
    uint8_t pass;                 /* served by gw_sub_pass.c, not the row's start */
    uint64_t mark;                /* gw_sub.c's counting of a caller's distinct sources */
    h2o_timeout_entry_t reap;     /* a finished source stops from the loop, not its own callback */
    char creator[GW_EXEC_IDENT_MAX]; /* the identity whose subscribe started it (ws_max_sources_per_identity) */
};

/* Work a network's sources share in the worker (gw_sub_logshare.c's
 * per-block logs, gw_sub_sol_batch.c's merged polls): the first member of
 * each such struct, found by (tag, net, key); freed by its owner when its
 * last source leaves. */
typedef struct gw_sub_group {
    h2o_linklist_t link;          /* in the registry's groups */
    const char *tag;              /* the owner's static name ("logs", "account", "signature") */
    gw_net_t *net;
    char key[64];                 /* the owner's (an account poll's options object) */
} gw_sub_group_t;

/* The group of (tag, net, key), or NULL. */
gw_sub_group_t *gw_sub_group_find(gw_sub_reg_t *r, const char *tag, const gw_net_t *net, const char *key);
/* Links a new group g (its tag, net and key set) into r's groups. */
void gw_sub_group_add(gw_sub_reg_t *r, gw_sub_group_t *g);

extern const gw_sub_kind_t gw_sub_kinds[];
extern const size_t gw_sub_nkinds;

/* Sends result (JSON text) to every subscriber of src as a notification. */
void gw_sub_notify(gw_sub_source_t *src, const char *result, size_t len);
/* Ends every subscription of src with a JSON-RPC error (id null, code
 * -32005, msg, data {subscription, method}) to each subscriber, then as
 * gw_sub_finish. For a source that cannot go on (an answer over a bound). */
void gw_sub_fail(gw_sub_source_t *src, const char *msg);
/* As gw_sub_fail, for a source that could not deliver block height (its
 * hash, may be NULL): data also names the block ("block", hex) and why
 * ("reason", a short word). */
void gw_sub_fail_block(gw_sub_source_t *src, const char *msg, const char *reason, uint64_t height,
                       const uint8_t *hash);
/* After a notify-once kind's notification (signatureSubscribe): every
 * subscription of src ends, and src stops from the loop. */
void gw_sub_finish(gw_sub_source_t *src);

h2o_loop_t *gw_sub_loop(const gw_sub_reg_t *r);
const gw_server_conf_t *gw_sub_srv(const gw_sub_reg_t *r);
gw_stats_t *gw_sub_stats(const gw_sub_reg_t *r);
/* The endpoint a source's polls are answered by changed (failover): logged
 * and a subscription_source_changed event (network, kind, from, to, the
 * heights backfilled while on the one before). */
void gw_sub_source_changed(gw_sub_reg_t *r, const gw_net_t *net, const char *kind, const char *from,
                           const char *to, uint64_t backfilled);
/* Events go to it (NULL: none). */
state_t *gw_sub_state(const gw_sub_reg_t *r);
/* Adds delta to the worker's gauge g. */
void gw_sub_gauge(gw_sub_reg_t *r, state_srv_counter_t g, int delta);
/* The poll interval of net's sources: its ranking.probe_interval_ms, else 1 s. */
uint32_t gw_sub_poll_ms(const gw_net_t *net);
/* The chain view's head is looked at this often by the sources it wakes (a read). */
#define GW_SUB_WATCH_MS 20

/* A timeout list of the registry for period ms (created on first use). */
h2o_timeout_t *gw_sub_timeout(gw_sub_reg_t *r, uint32_t ms);

/* gw_sub_follow.c: the head follower of a network, shared by its newHeads
 * and logs sources. A listener hears every header once, in order, and a
 * reorg as a new header for a height heard (replaced set). */
typedef struct gw_sub_header {
    uint64_t height;
    const uint8_t *hash;          /* 32 bytes */
    const char *json;             /* the header as geth's newHeads gives it */
    size_t len;
    int replaced;                 /* a height heard before, on the branch replaced */
    int deep;                     /* replaced, and the fork is below what the follower keeps: heights
                                     under this one may have been replaced unheard */
    uint64_t gap;                 /* heights skipped just below this one (over the backfill bound) */
} gw_sub_header_t;

/* A listener hears the headers after the head when it joined (geth's
 * semantics: the first notification is the first block after the
 * subscription), and any replacement. */
typedef struct gw_sub_listener gw_sub_listener_t;
struct gw_sub_listener {
    void (*on_header)(gw_sub_listener_t *l, const gw_sub_header_t *hd);
    h2o_linklist_t link;
    struct gw_sub_follow *f;
    uint64_t from;                /* heights up to this one were there before it joined: not told */
};

void gw_sub_follow_listen(gw_sub_reg_t *r, gw_net_t *net, gw_sub_listener_t *l);
void gw_sub_follow_unlisten(gw_sub_listener_t *l);
/* The hash the follower sent at height, or NULL (not sent, replaced, or too old). */
const uint8_t *gw_sub_follow_hash(const gw_sub_listener_t *l, uint64_t height);
/* The highest height sent on the branch the follower is on (0: none). */
uint64_t gw_sub_follow_last(const gw_sub_listener_t *l);
/* Heights the follower keeps the hashes of (POLICY_HEADTRACK_RING): a reorg deeper is told deep. */
#define GW_SUB_FOLLOW_KEPT 128
/* Registry teardown: followers left (none when every client went). */
void gw_sub_follow_dispose_all(gw_sub_reg_t *r);
h2o_linklist_t *gw_sub_follows(gw_sub_reg_t *r);

/* The kinds' normalisers and sources (gw_sub_eth.c, gw_sub_sol.c). */
const char *gw_sub_eth_heads_params(const cJSON *params, sl_buf_t *key);
void gw_sub_eth_heads_start(gw_sub_source_t *src);
void gw_sub_eth_heads_stop(gw_sub_source_t *src);
const char *gw_sub_eth_logs_params(const cJSON *params, sl_buf_t *key);
void gw_sub_eth_logs_start(gw_sub_source_t *src);
void gw_sub_eth_logs_stop(gw_sub_source_t *src);
/* The logs normaliser's refusals past a filter's caps (policy/logfilter.h):
 * the message; the subscribe's error adds data.reason for them. */
extern const char gw_sub_eth_logs_too_many_addresses[];
extern const char gw_sub_eth_logs_too_many_topics[];

/* gw_sub_reply.c: a call's answer (result: JSON text) and its error (a
 * refusal below, or one of the logs normaliser's, gets its data.reason);
 * a call without an id (a notification) gets neither. */
#define GW_SUB_ID_MAX 40          /* a subscription id as written in JSON, with its NUL */
void gw_sub_reply(gw_sub_client_t *c, const char *body, wire_span_t id, const char *result);
void gw_sub_reply_error(gw_sub_client_t *c, const char *body, wire_span_t id, int code, const char *msg);
/* A new id of that form into out (GW_SUB_ID_MAX bytes), from getrandom(). */
void gw_sub_new_id(gw_sub_id_form_t form, char *out);
/* The bounds' refusals that carry a data.reason (-32005). */
extern const char gw_sub_pass_room_msg[];
extern const char gw_sub_pass_share_msg[];
extern const char gw_sub_polled_sources_msg[];
/* A subscription's filter (its normalised params) is charged to the held
 * bytes from this size on (smaller: newHeads' "", an account's key) */
#define GW_SUB_FILTER_FREE 256
extern const char gw_sub_filter_share_msg[];
extern const char gw_sub_filter_budget_msg[];
const char *gw_sub_sol_slot_params(const cJSON *params, sl_buf_t *key);
void gw_sub_sol_slot_start(gw_sub_source_t *src);
void gw_sub_sol_root_start(gw_sub_source_t *src);
const char *gw_sub_sol_signature_params(const cJSON *params, sl_buf_t *key);
void gw_sub_sol_signature_start(gw_sub_source_t *src);
const char *gw_sub_sol_account_params(const cJSON *params, sl_buf_t *key);
void gw_sub_sol_account_start(gw_sub_source_t *src);
void gw_sub_sol_stop(gw_sub_source_t *src);
const char *gw_sub_sol_logs_params(const cJSON *params, sl_buf_t *key);
void gw_sub_sol_logs_start(gw_sub_source_t *src);
void gw_sub_sol_logs_stop(gw_sub_source_t *src);
const char *gw_sub_sol_program_params(const cJSON *params, sl_buf_t *key);
void gw_sub_sol_program_start(gw_sub_source_t *src);
void gw_sub_sol_program_stop(gw_sub_source_t *src);

/* gw_sub_sol_conf.c: Solana's shared checks. Commitments by rank
 * (processed 0, confirmed 1, finalized 2); a level's name, or -1. */
extern const char *const gw_sub_sol_levels[3];
int gw_sub_sol_level(const char *s);
/* 1 if s is base58 of min..max characters. */
int gw_sub_sol_is_b58(const char *s, size_t min, size_t max);
/* The config object's commitment (finalized when absent); -1 when bad. */
int gw_sub_sol_commitment(const cJSON *cfg);
struct gw_sub_call;
/* After a poll's call c: endpoint (cap bytes) becomes the one that answered
 * it; a failover away from the one before is told (gw_sub_source_changed). */
void gw_sub_sol_note_endpoint(gw_sub_source_t *src, const struct gw_sub_call *c, char *endpoint, size_t cap);

/* gw_sub_sol_match.c: a programSubscribe's filters applied to the accounts
 * of a shared getProgramAccounts answer (gw_sub_sol_program.c). */
typedef struct gw_sub_sol_filter {
    int data_size;                /* 1: {"dataSize": n}; 0: {"memcmp": {offset n, bytes}} */
    uint64_t n;
    uint8_t bytes[128];           /* memcmp's bytes, decoded */
    size_t len;
    char text[200];               /* the filter in normal form (the key's), to compare filters */
} gw_sub_sol_filter_t;
/* The normalised filters' JSON text ("" or NULL: none) into out (at most
 * cap); 0 when one cannot be decoded. */
int gw_sub_sol_filters_parse(const char *json, gw_sub_sol_filter_t *out, size_t cap, size_t *n);
/* 1 if data (len bytes) passes every filter of f. */
int gw_sub_sol_filters_match(const gw_sub_sol_filter_t *f, size_t n, const uint8_t *data, size_t len);
/* An answer's account object's data decoded (base64, base58 or a plain
 * base58 string) into *data (caller frees) and 1, or 0 (another encoding). */
int gw_sub_sol_account_data(const cJSON *acc, uint8_t **data, size_t *len);

/* gw_sub_pass.c: the passthrough source. gw_sub_pass_params is the generic
 * normaliser of a passthrough kind without its own (Solana: an array whose
 * first member is a string or an object, printed canonically, at most 4 KB);
 * gw_sub_pass_upstream writes the params the upstream is sent (the key of
 * a passthrough source: equal params share it), or returns the -32602 message. */
const char *gw_sub_pass_params(const cJSON *params, sl_buf_t *key);
const char *gw_sub_pass_pending_params(const cJSON *params, sl_buf_t *key);
const char *gw_sub_pass_upstream(const gw_sub_kind_t *k, const cJSON *params, const char *key, sl_buf_t *out);
/* 1 if net has an endpoint with a ws_url usable now / configured at all. */
int gw_sub_pass_usable(gw_net_t *net);
int gw_sub_pass_configured(const gw_net_t *net);
/* How a subscribe of kind k on net is served: 1 passed through, 0 the row's
 * start, -1 refused (the row's refusal). */
int gw_sub_pass_served_by(const gw_sub_kind_t *k, gw_net_t *net);
/* The params checked into key (NUL-terminated): a passthrough's is the
 * params the upstream is sent. NULL or the -32602 message. */
const char *gw_sub_pass_key(const gw_sub_kind_t *k, const cJSON *params, int pass, sl_buf_t *key);
void gw_sub_pass_start(gw_sub_source_t *src);
void gw_sub_pass_stop(gw_sub_source_t *src);

#endif
