/* tests/sub/scripted_sub.h: a subscription registry (sub/sub.h) on
 * tests/pool/scripted.h's pool, for sub/'s unit tests.
 *
 * The registry is built as a worker builds it (sub_create on the real h2o
 * loop, one network), over sc's scripted transport: every upstream call a
 * source makes is an attempt the test sees and answers. Clients are
 * sub_client_t with a capture send (every message kept, in order, with the
 * client it went to) and an admit that refuses on demand; the counters
 * callbacks add into arrays the test reads.
 *
 * Two ways to answer upstream: one attempt at a time (ss_answer, the test
 * knows the order), or a responder (ss_serve_until) that answers every held
 * attempt from a model of the chain, which keeps tests deterministic where
 * the order of polls is the loop's (a tick and the chain view's wake-up may
 * both poll). Sources poll every SS_POLL_MS: sub/'s view of the network
 * (ss.conf) has its own probe_interval_ms, while the pool's (sc.conf) keeps
 * probes off, so no probe is an attempt. Header-only and static, one
 * scaffold per test process, as scripted.h. */
#ifndef TESTS_SUB_SCRIPTED_SUB_H
#define TESTS_SUB_SCRIPTED_SUB_H

#include <inttypes.h>

#include "sub/sub_call.h"
#include "sub/sub_int.h"
#include "tests/pool/scripted.h"
#include "wire/envelope.h"

#define SS_MAX_CLIENTS 8
#define SS_MAX_MSGS 4096
#define SS_POLL_MS 15

typedef struct ss_msg {
    int client;                   /* index in ss.cl */
    char *text;
} ss_msg_t;

/* Answers one upstream call (method, params as JSON text): 1 with the
 * result's JSON text in out, 2 with an error answer's JSON text (the whole
 * "error" value) in out, 0 to leave it held. */
typedef int (*ss_responder_fn)(const char *method, const char *params, sl_buf_t *out);

static struct {
    sub_reg_t *reg;
    pool_network_conf_t conf;     /* sub/'s view of the network: sc.conf with SS_POLL_MS */
    sub_net_t net;
    sub_limits_t limits;
    sub_client_t cl[SS_MAX_CLIENTS];
    uint8_t open[SS_MAX_CLIENTS]; /* cl[i] initialised and not disposed */
    int refuse[SS_MAX_CLIENTS];   /* its admit refuses (and answers the refusal) */
    size_t nadmit;                /* admit calls */
    ss_msg_t msg[SS_MAX_MSGS];
    size_t nmsg;
    int64_t net_count[STATE_SUBS_COUNTERS]; /* net_add, summed */
    int64_t cost[STATE_SUB_COUNTER_COUNT];  /* cost_add, summed */
    int64_t cost_last[STATE_SUB_COUNTER_COUNT]; /* cost_add's last n */
    uint64_t srv_set[STATE_SRV_COUNT];      /* srv_set's last value */
    uint64_t srv_add[STATE_SRV_COUNT];
    ss_responder_fn responder;
} ss;

/* ---- the client edge and the counters ---- */

static int ss_index(const sub_client_t *c)
{
    return (int)(c - ss.cl);
}

static void ss_send(sub_client_t *c, const char *bytes, size_t len)
{
    cr_assert_lt(ss.nmsg, SS_MAX_MSGS, "more messages than the capture holds");
    ss_msg_t *m = &ss.msg[ss.nmsg++];
    m->client = ss_index(c);
    m->text = malloc(len + 1);
    memcpy(m->text, bytes, len);
    m->text[len] = '\0';
}

#define SS_REFUSAL "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32005,\"message\":\"rate\"}}"

static int ss_admit(sub_client_t *c, const char *body, size_t len, wire_span_t id)
{
    (void)body;
    (void)len;
    (void)id;
    ss.nadmit++;
    if (!ss.refuse[ss_index(c)])
        return 1;
    c->send(c, SS_REFUSAL, strlen(SS_REFUSAL));
    return 0;
}

static void ss_srv_add(void *ctx, state_srv_counter_t c, uint64_t n)
{
    (void)ctx;
    ss.srv_add[c] += n;
}

static void ss_srv_set(void *ctx, state_srv_counter_t c, uint64_t value)
{
    (void)ctx;
    ss.srv_set[c] = value;
}

static void ss_cost_add(void *ctx, size_t net, state_sub_counter_t c, int64_t n)
{
    (void)ctx;
    cr_assert_eq(net, 0);
    ss.cost[c] += n;
    ss.cost_last[c] = n;
}

static void ss_net_add(void *ctx, size_t net, size_t i, int64_t delta)
{
    (void)ctx;
    cr_assert_eq(net, 0);
    cr_assert_lt(i, (size_t)STATE_SUBS_COUNTERS);
    ss.net_count[i] += delta;
}

/* ---- open and close ---- */

static inline void ss_limits_default(void)
{
    ss.limits = (sub_limits_t){.per_connection = 1000, .per_identity = 1000, .sources_per_identity = 1000,
                               .polled_sources_per_identity = 1000, .logs_retry_s = 30};
}

/* After sc_conf (and any tweak of sc.conf): the pool, and the registry on it
 * with ss.limits (ss_limits_default unless the test set them). */
static inline void ss_open_conf(void)
{
    if (ss.limits.per_connection == 0)
        ss_limits_default();
    sc_open();
    ss.conf = sc.conf;
    ss.conf.ranking.probe_interval_ms = SS_POLL_MS;
    ss.net = (sub_net_t){.index = 0, .conf = &ss.conf, .pool_net = sc.net};
    sub_counters_t counters = {.srv_add = ss_srv_add, .srv_set = ss_srv_set, .cost_add = ss_cost_add,
                               .net_add = ss_net_add};
    ss.reg = sub_create((h2o_loop_t *)sc.loop, &ss.limits, &counters, NULL);
}

/* A network of one endpoint of chain. */
static inline void ss_open(policy_chain_t chain)
{
    sc_conf(1);
    sc.conf.chain = chain;
    ss_open_conf();
}

static inline sub_client_t *ss_client(int i, const char *ident)
{
    cr_assert_lt(i, SS_MAX_CLIENTS);
    static const sub_edge_t edge = {ss_admit, NULL, NULL};
    sub_client_init(&ss.cl[i], ss.reg, &ss.net, ident, ss_send, &edge);
    ss.open[i] = 1;
    return &ss.cl[i];
}

static inline void ss_client_close(int i)
{
    sub_client_dispose(&ss.cl[i]);
    ss.open[i] = 0;
}

static inline void ss_close(void)
{
    for (int i = 0; i < SS_MAX_CLIENTS; i++)
        if (ss.open[i])
            ss_client_close(i);
    sub_destroy(ss.reg);
    ss.reg = NULL;
    sc_close();
    for (size_t i = 0; i < ss.nmsg; i++)
        free(ss.msg[i].text);
    ss.nmsg = 0;
}

/* ---- calls from a client ---- */

static inline int ss_call(int i, const char *json)
{
    return sub_message(&ss.cl[i], json, strlen(json));
}

static inline const char *ss_last(void)
{
    cr_assert_gt(ss.nmsg, 0, "no message was sent");
    return ss.msg[ss.nmsg - 1].text;
}

/* The span of top-level member `member` ("result", "error") of message text. */
static inline wire_span_t ss_member(const char *text, const char *member)
{
    wire_envelope_t env;
    cr_assert_eq(wire_envelope_scan(text, strlen(text), &env), SL_OK, "not an object: %s", text);
    if (strcmp(member, "result") == 0)
        return env.result;
    if (strcmp(member, "error") == 0)
        return env.error;
    if (strcmp(member, "id") == 0)
        return env.id;
    return env.params;
}

/* A subscribe call of client i that must succeed: its subscription id as
 * written in JSON ("\"0x…\"" or digits) into id (SUB_ID_MAX). */
static inline void ss_subscribe(int i, const char *json, char *id)
{
    size_t before = ss.nmsg;
    cr_assert_eq(ss_call(i, json), 1, "%s is a subscription call", json);
    cr_assert_eq(ss.nmsg, before + 1, "%s answered once", json);
    const char *t = ss_last();
    wire_span_t r = ss_member(t, "result");
    cr_assert_gt(r.len, 0, "%s was answered %s", json, t);
    cr_assert_lt(r.len, SUB_ID_MAX);
    memcpy(id, t + r.off, r.len);
    id[r.len] = '\0';
}

/* The error of the last message: its code, message and data (raw, "" if none). */
static inline void ss_last_error(int64_t *code, char *msg, size_t cap, char *data, size_t dcap)
{
    const char *t = ss_last();
    wire_span_t e = ss_member(t, "error");
    cr_assert_gt(e.len, 0, "an error, not %s", t);
    wire_rpc_error_t er;
    cr_assert_eq(wire_envelope_error(t, e, &er), SL_OK);
    *code = er.code;
    snprintf(msg, cap, "%s", er.message);
    snprintf(data, dcap, "%.*s", (int)er.data.len, t + er.data.off);
}

/* Messages sent to client i from index `from` on. */
static inline size_t ss_count(int client, size_t from)
{
    size_t n = 0;
    for (size_t k = from; k < ss.nmsg; k++)
        n += ss.msg[k].client == client;
    return n;
}

/* The k-th message (from 0) to client i from index `from` on, or NULL. */
static inline const char *ss_nth(int client, size_t from, size_t k)
{
    for (size_t m = from; m < ss.nmsg; m++)
        if (ss.msg[m].client == client && k-- == 0)
            return ss.msg[m].text;
    return NULL;
}

/* The notification that a source of `method` sends subscription id with result. */
static inline char *ss_notification(const char *method, const char *id, const char *result)
{
    sl_buf_t b;
    sl_buf_init(&b);
    sl_buf_printf(&b, "{\"jsonrpc\":\"2.0\",\"method\":\"%s\",\"params\":{\"subscription\":%s,\"result\":%s}}",
                  method, id, result);
    sl_buf_append_char(&b, '\0');
    return b.base;
}

#define ss_expect_nth(client, from, k, method, id, result)                                              \
    do {                                                                                                \
        char *want_ = ss_notification((method), (id), (result));                                       \
        const char *got_ = ss_nth((client), (from), (k));                                              \
        cr_expect(got_ != NULL && strcmp(got_, want_) == 0, "message %d of client %d:\n got %s\nwant %s", \
                  (int)(k), (int)(client), got_ != NULL ? got_ : "(none)", want_);                    \
        free(want_);                                                                                    \
    } while (0)

/* ---- upstream ---- */

/* The method and params of one request object of attempt text. */
static inline void ss_request(const char *body, wire_span_t span, char *method, size_t mcap, sl_buf_t *params,
                              wire_span_t *id)
{
    wire_envelope_t env;
    cr_assert_eq(wire_envelope_scan(body + span.off, span.len, &env), SL_OK, "a request: %s", body);
    cr_assert_eq(wire_json_string(body + span.off, env.method, method, mcap), SL_OK);
    sl_buf_reset(params);
    sl_buf_append(params, body + span.off + env.params.off, env.params.len);
    sl_buf_append_char(params, '\0');
    *id = (wire_span_t){span.off + env.id.off, env.id.len};
}

/* Answers held attempt i with fn's answers to each of its calls (one, or a
 * batch); 0 if fn holds any of them (the attempt stays held). */
static inline int ss_answer_with(size_t i, ss_responder_fn fn)
{
    const char *body = sc_att(i)->body;
    wire_span_t items[SUB_CALL_MAX];
    size_t n = 1;
    int batch = body[0] == '[';
    if (batch)
        cr_assert_eq(wire_envelope_scan_array(body, strlen(body), items, SUB_CALL_MAX, &n), SL_OK);
    else
        items[0] = (wire_span_t){0, (uint32_t)strlen(body)};
    sl_buf_t ans, res, params;
    sl_buf_init(&ans);
    sl_buf_init(&res);
    sl_buf_init(&params);
    int ok = 1;
    if (batch)
        sl_buf_append_char(&ans, '[');
    for (size_t k = 0; k < n && ok; k++) {
        char method[64];
        wire_span_t id;
        ss_request(body, items[k], method, sizeof(method), &params, &id);
        sl_buf_reset(&res);
        int how = fn(method, params.base, &res);
        ok = how != 0;
        sl_buf_printf(&ans, "%s{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"%s\":%.*s}", k > 0 ? "," : "", (int)id.len,
                      body + id.off, how == 2 ? "error" : "result", (int)res.len, res.base != NULL ? res.base : "");
    }
    if (batch)
        sl_buf_append_char(&ans, ']');
    sl_buf_append_char(&ans, '\0');
    if (ok)
        sc_reply(i, 200, ans.base);
    sl_buf_dispose(&ans);
    sl_buf_dispose(&res);
    sl_buf_dispose(&params);
    return ok;
}

/* Answers held attempt i (a single call) with result (JSON text). */
static inline void ss_answer(size_t i, const char *result)
{
    const char *body = sc_att(i)->body;
    wire_envelope_t env;
    cr_assert_eq(wire_envelope_scan(body, strlen(body), &env), SL_OK, "a single call: %s", body);
    sl_buf_t b;
    sl_buf_init(&b);
    sl_buf_printf(&b, "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":%s}", (int)env.id.len, body + env.id.off,
                  result);
    sl_buf_append_char(&b, '\0');
    sc_reply(i, 200, b.base);
    sl_buf_dispose(&b);
}

/* 1 if attempt i calls method (one of its calls, for a batch). */
static inline int ss_att_is(size_t i, const char *method)
{
    char want[96];
    snprintf(want, sizeof(want), "\"method\":\"%s\"", method);
    return strstr(sc_att(i)->body, want) != NULL;
}

/* Attempts so far that call method. */
static inline size_t ss_atts(const char *method)
{
    size_t n = 0;
    for (size_t i = 0; i < sc.natt; i++)
        n += ss_att_is(i, method);
    return n;
}

/* Answers every held attempt ss.responder answers. */
static inline void ss_serve(void)
{
    for (size_t i = 0; i < sc.natt; i++)
        if (sc.att[i].state == SC_HELD)
            (void)ss_answer_with(i, ss.responder);
}

/* Runs the loop, answering upstream by ss.responder, until pred(arg) holds;
 * fails the test after limit_ms. */
static inline void ss_serve_until(int (*pred)(const void *arg), const void *arg, uint32_t limit_ms, const char *what)
{
    uint64_t end = sl_now_ms() + limit_ms;
    for (;;) {
        ss_serve();
        if (pred(arg))
            return;
        cr_assert_lt(sl_now_ms(), end, "waited %u ms for %s", limit_ms, what);
        h2o_evloop_run(sc.loop, 5);
    }
}

/* Runs the loop for about ms, answering upstream by ss.responder. */
static inline void ss_serve_for(uint32_t ms)
{
    uint64_t end = sl_now_ms() + ms;
    while (sl_now_ms() < end) {
        ss_serve();
        h2o_evloop_run(sc.loop, 5);
    }
    ss_serve();
}

static int ss_pred_msgs(const void *arg)
{
    return ss.nmsg >= *(const size_t *)arg;
}

/* Serves until n messages were sent in all. */
static inline void ss_serve_msgs(size_t n)
{
    ss_serve_until(ss_pred_msgs, &n, SC_LIMIT_MS, "messages to the clients");
}

/* Runs the loop (nothing answered) until n messages were sent in all. */
static inline void ss_wait_msgs(size_t n)
{
    sc_run_until(ss_pred_msgs, &n, SC_LIMIT_MS, "messages to the clients");
}

/* ---- an Ethereum chain to answer from ---- */

/* Heights 1..head, each on a branch (0 unless a reorg replaced it): a
 * block's hash is its height and branch in hex, its parent the hash of
 * height - 1 on its own branch, or on branch 0 below the branch's start. Every block has two logs, at
 * SS_ADDR_A (index 0) and SS_ADDR_B (index 1). */
#define SS_CHAIN_MAX 2048
#define SS_ADDR_A "0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define SS_ADDR_B "0xbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define SS_TOPIC "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"

static struct {
    uint64_t head;
    uint8_t branch[SS_CHAIN_MAX];
    uint64_t start[256];          /* the lowest height of branch b (b > 0): it forks from branch 0 below */
    int fail_logs;                /* eth_getLogs answers an error */
    int hold_logs;                /* eth_getLogs is left held */
    size_t logs_calls;            /* eth_getLogs answered */
} ss_chain;

static inline void ss_hash(char out[67], uint64_t h, uint8_t branch)
{
    snprintf(out, 67, "0x%062" PRIx64 "%02x", h, branch);
}

/* The block at height h of branch b as a node's eth_getBlockByNumber gives it. */
static inline void ss_block(sl_buf_t *out, uint64_t h, uint8_t b)
{
    char hash[67], parent[67];
    ss_hash(hash, h, b);
    ss_hash(parent, h - 1, b != 0 && h - 1 >= ss_chain.start[b] ? b : 0);
    sl_buf_printf(out, "{\"number\":\"0x%" PRIx64 "\",\"hash\":\"%s\",\"parentHash\":\"%s\",\"transactions\":[\"0x01\"],"
                  "\"size\":\"0x10\",\"miner\":\"0x00\",\"uncles\":[]}", h, hash, parent);
}

/* ... and as newHeads sends it (the body fields left out). */
static inline char *ss_head(uint64_t h, uint8_t b)
{
    char hash[67], parent[67];
    ss_hash(hash, h, b);
    ss_hash(parent, h - 1, b != 0 && h - 1 >= ss_chain.start[b] ? b : 0);
    sl_buf_t o;
    sl_buf_init(&o);
    sl_buf_printf(&o, "{\"number\":\"0x%" PRIx64 "\",\"hash\":\"%s\",\"parentHash\":\"%s\",\"miner\":\"0x00\"}", h,
                  hash, parent);
    sl_buf_append_char(&o, '\0');
    return o.base;
}

/* Log k (0: SS_ADDR_A, 1: SS_ADDR_B) of block (h, b); removed as given. */
static inline void ss_log(sl_buf_t *out, uint64_t h, uint8_t b, int k, int removed)
{
    char hash[67];
    ss_hash(hash, h, b);
    sl_buf_printf(out, "{\"address\":\"%s\",\"topics\":[\"%s\"],\"data\":\"0x\",\"blockNumber\":\"0x%" PRIx64 "\","
                  "\"blockHash\":\"%s\",\"logIndex\":\"0x%x\",\"removed\":%s}", k == 0 ? SS_ADDR_A : SS_ADDR_B,
                  SS_TOPIC, h, hash, k, removed ? "true" : "false");
}

static inline char *ss_log_text(uint64_t h, uint8_t b, int k, int removed)
{
    sl_buf_t o;
    sl_buf_init(&o);
    ss_log(&o, h, b, k, removed);
    sl_buf_append_char(&o, '\0');
    return o.base;
}

static inline int ss_chain_answer(const char *method, const char *params, sl_buf_t *out)
{
    if (strcmp(method, "eth_getBlockByNumber") == 0) {
        uint64_t h = strstr(params, "latest") != NULL ? ss_chain.head : strtoull(params + 2, NULL, 16);
        if (h == 0 || h > ss_chain.head || h >= SS_CHAIN_MAX)
            sl_buf_append_str(out, "null");
        else
            ss_block(out, h, ss_chain.branch[h]);
        return 1;
    }
    if (strcmp(method, "eth_getLogs") == 0) {
        if (ss_chain.hold_logs)
            return 0;
        ss_chain.logs_calls++;
        if (ss_chain.fail_logs) {
            sl_buf_append_str(out, "{\"code\":-32000,\"message\":\"no\"}");
            return 2;
        }
        const char *bh = strstr(params, "\"blockHash\":\"0x");
        cr_assert_not_null(bh, "eth_getLogs by blockHash: %s", params);
        char hex[63];
        memcpy(hex, bh + 15, 62);
        hex[62] = '\0';
        uint64_t h = strtoull(hex, NULL, 16);
        uint8_t b = (uint8_t)strtoul((char[3]){bh[77], bh[78], 0}, NULL, 16);
        int filtered = strstr(params, "\"address\"") != NULL;
        int first = 1;
        sl_buf_append_char(out, '[');
        for (int k = 0; k < 2; k++) {
            if (filtered && strstr(params, k == 0 ? SS_ADDR_A : SS_ADDR_B) == NULL)
                continue;
            if (!first)
                sl_buf_append_char(out, ',');
            ss_log(out, h, b, k, 0);
            first = 0;
        }
        sl_buf_append_char(out, ']');
        return 1;
    }
    cr_assert_fail("the chain model has no answer to %s", method);
    return 0;
}

/* The chain's heights from..to replaced (branch b), the head at to. */
static inline void ss_chain_reorg(uint64_t from, uint64_t to, uint8_t b)
{
    if (ss_chain.start[b] == 0)
        ss_chain.start[b] = from;
    for (uint64_t h = from; h <= to; h++)
        ss_chain.branch[h] = b;
    ss_chain.head = to;
}

#endif
