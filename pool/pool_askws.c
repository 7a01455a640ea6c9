/* pool/pool_askws.c: every endpoint's ws_url tried once, for
 * `sluice --check --connect` (pool.h, pool_ask_ws).
 *
 * Each socket is pool_ws.c's client (connect, TLS, the Upgrade and its
 * Sec-WebSocket-Accept check, wslay's frames); once open it carries one
 * eth_chainId (Solana getGenesisHash) and the answer's id is the result.
 * As pool_ask.c, the sockets live in a child process of their own
 * (pool_askchild.c); the child writes one line per endpoint,
 * "<network> <endpoint> <1|0> <id or why>", and exits at the deadline,
 * writing a line for each socket still waiting then. A why is pool_ws.c's
 * fixed text or one of this file's: never a URL. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/sl_time.h"
#include "pool/pool_link.h"
#include "wire/envelope.h"
#include "wire/url.h"

#define RETRY_MS 20
#define MAX_MESSAGE (64 * 1024) /* a chain id's answer is ~100 bytes */

static const char eth_ask[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_chainId\",\"params\":[]}";
static const char sol_ask[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"getGenesisHash\"}";

typedef struct askws_one {
    pool_ws_t ws;
    pool_link_t link;
    pool_endpoint_conf_t conf;    /* the endpoint's, with the ws_url in its http form as url */
    const pool_network_conf_t *net;
    size_t inet, iep;
    const pool_askchild_t *c;
    int started, done;
    size_t *pending;
} askws_one_t;

static void tell(askws_one_t *a, int ok, const char *text)
{
    char line[POOL_ASKWS_TEXT + 48];
    if (a->done)
        return;
    a->done = 1;
    (*a->pending)--;
    int n = snprintf(line, sizeof(line), "%zu %zu %d %s\n", a->inet, a->iep, ok, text);
    if (n > 0 && (size_t)n < sizeof(line))
        pool_askchild_tell(a->c, line, (size_t)n);
}

static void on_open(pool_ws_t *ws)
{
    askws_one_t *a = ws->data;
    int solana = a->net->chain == POLICY_CHAIN_SOLANA;
    if (!pool_ws_send_text(ws, solana ? sol_ask : eth_ask, solana ? sizeof(sol_ask) - 1 : sizeof(eth_ask) - 1)) {
        tell(a, 0, "the Upgrade was accepted, but the call could not be sent");
        pool_ws_close(ws);
    }
}

static void on_message(pool_ws_t *ws, const char *msg, size_t len)
{
    askws_one_t *a = ws->data;
    wire_envelope_t env;
    char text[128], id[POLICY_CHAINID_MAX];
    if (wire_envelope_scan(msg, len, &env) != SL_OK)
        tell(a, 0, "the Upgrade was accepted, but the answer to the call is not JSON-RPC");
    else if (env.error.len != 0)
        tell(a, 0, "the Upgrade was accepted, but the call was answered with an error");
    else if (wire_json_string(msg, env.result, text, sizeof(text)) != SL_OK ||
             policy_chainid_normalize(a->net->chain, text, strlen(text), id) != SL_OK)
        tell(a, 0, "the Upgrade was accepted, but the answer to the call is not a chain id");
    else
        tell(a, 1, id);
    pool_ws_close(ws);
}

static void on_closed(pool_ws_t *ws, const char *why)
{
    tell(ws->data, 0, why);
}

static const pool_ws_cbs_t cbs = {on_open, on_message, on_closed};

/* Opens the sockets whose address is known (a host name's lookup may take
 * a moment: tried again every RETRY_MS). Returns how many still wait to open. */
static size_t open_ready(askws_one_t *all, size_t n)
{
    size_t waiting = 0;
    for (size_t i = 0; i < n; i++) {
        askws_one_t *a = &all[i];
        if (a->started || a->done)
            continue;
        if (pool_dns_pending(&a->link)) {
            waiting++;
            continue;
        }
        a->started = 1;
        const char *why = pool_ws_open(&a->ws, &a->link, MAX_MESSAGE, &cbs, a);
        if (why != NULL)
            tell(a, 0, why);
    }
    return waiting;
}

static const char *stage_of(const askws_one_t *a)
{
    if (!a->started)
        return "its host name was still being looked up";
    switch (a->ws.state) {
    case POOL_WS_CONNECTING: return "still connecting (TCP or TLS)";
    case POOL_WS_UPGRADING: return "no answer to the Upgrade";
    case POOL_WS_OPEN: return "the Upgrade was accepted, but the call had no answer";
    default: return "no answer";
    }
}

typedef struct askws_job {
    const pool_network_conf_t *nets;
    size_t n;
    uint32_t timeout_ms;
    pool_askws_t *out;
} askws_job_t;

/* The child: every socket at once until all have told or the deadline
 * passes (a line then for each still waiting). */
static void askws_child(pool_askchild_t *c, void *data)
{
    const askws_job_t *j = data;
    const pool_network_conf_t *nets = j->nets;
    size_t n = j->n;
    uint32_t timeout_ms = j->timeout_ms;
    size_t pending = 0, total = 0;
    for (size_t i = 0; i < n; i++)
        total += nets[i].nendpoints;
    askws_one_t *all = calloc(total ? total : 1, sizeof(*all));
    if (all == NULL)
        _exit(2);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        pool_link_timers_t *tm = calloc(1, sizeof(*tm));
        if (tm == NULL)
            _exit(2);
        pool_link_timers_init(tm, &c->t, nets[i].name, &nets[i].timeouts);
        for (size_t e = 0; e < nets[i].nendpoints; e++) {
            const pool_endpoint_conf_t *ep = &nets[i].endpoints[e];
            askws_one_t *a = &all[k];
            char *http = ep->ws_url != NULL ? wire_url_ws_as_http(ep->ws_url) : NULL;
            if (http == NULL)
                continue;
            *a = (askws_one_t){.net = &nets[i], .inet = i, .iep = e, .c = c, .pending = &pending, .conf = *ep};
            a->conf.url = http;
            a->conf.url_redacted = ep->ws_url_redacted;
            k++;
            pending++;
            if (pool_link_init(&a->link, tm, (int)e, &a->conf) != SL_OK) {
                a->started = 1;
                tell(a, 0, "its ws_url could not be used (TLS context or address)");
            }
        }
    }
    uint64_t deadline = sl_now_ms() + timeout_ms;
    for (uint64_t now = sl_now_ms(); pending > 0 && now < deadline; now = sl_now_ms()) {
        size_t waiting = open_ready(all, k);
        uint64_t left = deadline - now;
        h2o_evloop_run(c->loop, (int32_t)(waiting > 0 && left > RETRY_MS ? RETRY_MS : left));
    }
    for (size_t i = 0; i < k; i++) {
        char why[POOL_ASKWS_TEXT];
        snprintf(why, sizeof(why), "%s within %u ms", stage_of(&all[i]), (unsigned)timeout_ms);
        tell(&all[i], 0, why);
    }
}

/* One line of the child's: "<network> <endpoint> <1|0> <id or why>". */
static void askws_line(char *line, void *data)
{
    const askws_job_t *j = data;
    size_t inet, iep;
    int ok, at = 0;
    if (sscanf(line, "%zu %zu %d %n", &inet, &iep, &ok, &at) == 3 && at > 0 && inet < j->n &&
        iep < POOL_MAX_ENDPOINTS) {
        pool_askws_t *x = &j->out[inet * POOL_MAX_ENDPOINTS + iep];
        x->ok = ok == 1;
        snprintf(x->text, sizeof(x->text), "%s", line + at);
    }
}

sl_err_t pool_ask_ws(const pool_network_conf_t *nets, size_t n, uint32_t timeout_ms, pool_askws_t *out)
{
    size_t tried = 0;
    memset(out, 0, n * POOL_MAX_ENDPOINTS * sizeof(*out));
    for (size_t i = 0; i < n; i++)
        for (size_t e = 0; e < nets[i].nendpoints && e < POOL_MAX_ENDPOINTS; e++)
            if (nets[i].endpoints[e].ws_url != NULL) {
                out[i * POOL_MAX_ENDPOINTS + e].tried = 1;
                snprintf(out[i * POOL_MAX_ENDPOINTS + e].text, POOL_ASKWS_TEXT, "no answer (the check's process)");
                tried++;
            }
    if (tried == 0)
        return SL_OK; /* no ws_url: no process */
    askws_job_t job = {nets, n, timeout_ms, out};
    return pool_askchild_run(askws_child, &job, timeout_ms, askws_line, &job);
}
