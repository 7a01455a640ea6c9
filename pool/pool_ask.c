/* pool/pool_ask.c: every endpoint's chain identity, asked once and waited
 * for, before any worker exists (pool.h, pool_ask_chain_ids).
 *
 * The master's start (server/srv_chainid.c) and `sluice --check --connect`
 * need the answers before going on. The ask runs in a child process of its
 * own (pool_askchild.c: no resolver threads in the master that forks the
 * workers); it writes one line per answer, "<network> <endpoint> <id>". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/sl_time.h"
#include "pool/pool_link.h"
#include "wire/envelope.h"

static const char eth_ask[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_chainId\",\"params\":[]}";
static const char sol_ask[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"getGenesisHash\"}";

typedef struct ask_one {
    pool_link_t link;
    pool_exchange_t ex;
    const pool_network_conf_t *net;
    size_t inet, iep;
    const pool_askchild_t *c;
    size_t *pending;
} ask_one_t;

static void on_answer(pool_exchange_t *ex)
{
    ask_one_t *a = ex->data;
    (*a->pending)--;
    const char *body = pool_exchange_bytes(ex);
    size_t len = pool_exchange_len(ex);
    wire_envelope_t env;
    char text[128], id[POLICY_CHAINID_MAX], line[POLICY_CHAINID_MAX + 48];
    if (ex->fail == POOL_FAIL_NONE && ex->head.status >= 200 && ex->head.status < 300 &&
        wire_envelope_scan(body, len, &env) == SL_OK && env.error.len == 0 &&
        wire_json_string(body, env.result, text, sizeof(text)) == SL_OK &&
        policy_chainid_normalize(a->net->chain, text, strlen(text), id) == SL_OK) {
        int n = snprintf(line, sizeof(line), "%zu %zu %s\n", a->inet, a->iep, id);
        if (n > 0 && (size_t)n < sizeof(line))
            pool_askchild_tell(a->c, line, (size_t)n);
    }
    pool_exchange_body_dispose(ex);
}

typedef struct ask_job {
    const pool_network_conf_t *nets;
    size_t n;
    const uint8_t *ask;
    uint32_t timeout_ms;
    pool_ask_id_t *ids;
} ask_job_t;

/* The child: every question at once, answers as they come, until all are
 * in or the deadline passes. */
static void ask_child(pool_askchild_t *c, void *data)
{
    const ask_job_t *j = data;
    size_t pending = 0;
    for (size_t i = 0; i < j->n; i++) {
        if (!j->ask[i])
            continue;
        const pool_network_conf_t *net = &j->nets[i];
        pool_link_timers_t *tm = calloc(1, sizeof(*tm));
        ask_one_t *all = calloc(net->nendpoints, sizeof(*all));
        if (tm == NULL || all == NULL)
            _exit(2);
        pool_link_timers_init(tm, &c->t, net->name, &net->timeouts);
        int solana = net->chain == POLICY_CHAIN_SOLANA;
        for (size_t e = 0; e < net->nendpoints; e++) {
            ask_one_t *a = &all[e];
            *a = (ask_one_t){.net = net, .inet = i, .iep = e, .c = c, .pending = &pending};
            if (pool_link_init(&a->link, tm, (int)e, &net->endpoints[e]) != SL_OK)
                continue;
            if (pool_exchange_start(&a->ex, &a->link, solana ? sol_ask : eth_ask,
                                    solana ? sizeof(sol_ask) - 1 : sizeof(eth_ask) - 1, 0, on_answer,
                                    a) == POOL_FAIL_NONE)
                pending++;
        }
    }
    uint64_t deadline = sl_now_ms() + j->timeout_ms;
    for (uint64_t now = sl_now_ms(); pending > 0 && now < deadline; now = sl_now_ms())
        h2o_evloop_run(c->loop, (int32_t)(deadline - now));
}

/* One line of the child's: "<network> <endpoint> <id>". */
static void ask_line(char *line, void *data)
{
    const ask_job_t *j = data;
    size_t inet, iep;
    char id[POLICY_CHAINID_MAX];
    if (sscanf(line, "%zu %zu %47s", &inet, &iep, id) == 3 && inet < j->n && iep < POOL_MAX_ENDPOINTS)
        snprintf(j->ids[inet * POOL_MAX_ENDPOINTS + iep], sizeof(pool_ask_id_t), "%s", id);
}

sl_err_t pool_ask_chain_ids(const pool_network_conf_t *nets, size_t n, const uint8_t *ask, uint32_t timeout_ms,
                            pool_ask_id_t *ids)
{
    memset(ids, 0, n * POOL_MAX_ENDPOINTS * sizeof(pool_ask_id_t));
    ask_job_t job = {nets, n, ask, timeout_ms, ids};
    return pool_askchild_run(ask_child, &job, timeout_ms, ask_line, &job);
}
