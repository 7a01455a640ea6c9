/* pool/pool_ws.c: a WebSocket client connection on an h2o socket
 * (pool/pool_link.h): connect, TLS, the Upgrade and its Accept check, then
 * wslay's client context for every frame (masking, fragments, control
 * frames, the close handshake, the message size bound). Its users are the
 * upstream head stream (pool_wshead.c) and the passed-through subscriptions
 * (pool_wspass.c). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/rand.h>
#include <openssl/evp.h>
#include <wslay/wslay.h>

#include "base/sl_log.h"
#include "base/sl_secret.h"
#include "base/sl_time.h"
#include "policy/chainid.h"
#include "pool/pool_link_int.h"
#include "wire/envelope.h"
#include "wire/json_scan.h"

static const char ws_guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

void pool_ws_accept_of(const char *key, char out[29])
{
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    char text[64 + sizeof(ws_guid)];
    snprintf(text, sizeof(text), "%.63s%s", key, ws_guid);
    EVP_Digest(text, strlen(text), digest, &n, EVP_sha1(), NULL);
    h2o_base64_encode(out, digest, 20, 0); /* SHA-1: 20 bytes, 28 characters and a NUL */
}

/* ---- the machine ---------------------------------------------------------- */

/* edges[from][to]: connect (and TLS), the Upgrade, frames; closed from any. */
static const uint8_t ws_edges[POOL_WS_STATE_COUNT][POOL_WS_STATE_COUNT] = {
    [POOL_WS_CLOSED] = {[POOL_WS_CLOSED] = 1, [POOL_WS_CONNECTING] = 1},
    [POOL_WS_CONNECTING] = {[POOL_WS_CLOSED] = 1, [POOL_WS_UPGRADING] = 1},
    [POOL_WS_UPGRADING] = {[POOL_WS_CLOSED] = 1, [POOL_WS_CHECKING] = 1, [POOL_WS_OPEN] = 1},
    [POOL_WS_CHECKING] = {[POOL_WS_CLOSED] = 1, [POOL_WS_OPEN] = 1},
    [POOL_WS_OPEN] = {[POOL_WS_CLOSED] = 1},
};

/* The one writer of ws->state. */
static void ws_enter(pool_ws_t *ws, pool_ws_state_t to)
{
    if ((unsigned)ws->state >= POOL_WS_STATE_COUNT || (unsigned)to >= POOL_WS_STATE_COUNT ||
        !ws_edges[ws->state][to]) {
        sl_log_error("bug: upstream WebSocket moved from state %d to %d", (int)ws->state, (int)to);
        abort();
    }
    ws->state = to;
}

/* ---- closing ------------------------------------------------------------- */

static void ws_teardown(pool_ws_t *ws)
{
    if (ws->ctx != NULL)
        wslay_event_context_free(ws->ctx);
    ws->ctx = NULL;
    if (ws->sock != NULL)
        h2o_socket_close(ws->sock);
    ws->sock = NULL;
    sl_buf_dispose(&ws->out);
    sl_buf_dispose(&ws->writing);
    ws_enter(ws, POOL_WS_CLOSED);
    ws->close_pending = 0;
    ws->fail_why = NULL;
}

void pool_ws_close(pool_ws_t *ws)
{
    if (ws->in_callback) { /* inside wslay: torn down once it returns */
        ws->close_pending = 1;
        return;
    }
    ws_teardown(ws);
}

/* The socket is gone for why: the owner hears it once. */
static void ws_fail(pool_ws_t *ws, const char *why)
{
    ws_teardown(ws);
    ws->cbs->closed(ws, why);
}

/* ---- writing ------------------------------------------------------------- */

static void ws_flush(pool_ws_t *ws);

static void on_write(h2o_socket_t *sock, const char *err)
{
    pool_ws_t *ws = sock->data;
    sl_buf_reset(&ws->writing);
    if (err != NULL) {
        ws_fail(ws, "the socket failed while writing");
        return;
    }
    ws_flush(ws);
}

/* Hands what wslay produced to the socket (one write at a time), then ends
 * a conversation wslay has finished (a close sent and received, or a
 * protocol error it answered). */
static void ws_flush(pool_ws_t *ws)
{
    if (ws->ctx != NULL && wslay_event_send(ws->ctx) != 0) {
        ws_fail(ws, "the stream could not be written");
        return;
    }
    if (ws->writing.len == 0 && ws->out.len != 0) {
        sl_buf_t t = ws->writing;
        ws->writing = ws->out;
        ws->out = t;
        h2o_iovec_t buf = h2o_iovec_init(ws->writing.base, ws->writing.len);
        h2o_socket_write(ws->sock, &buf, 1, on_write);
        return;
    }
    if (ws->ctx != NULL && !wslay_event_want_read(ws->ctx) && ws->writing.len == 0) {
        uint16_t code = wslay_event_get_status_code_sent(ws->ctx);
        ws_fail(ws, code == WSLAY_CODE_MESSAGE_TOO_BIG  ? "a message over the size limit"
                    : code == WSLAY_CODE_PROTOCOL_ERROR ? "a protocol error in the stream"
                    : code == WSLAY_CODE_INVALID_FRAME_PAYLOAD_DATA ? "invalid text in the stream"
                                                                    : "the upstream closed the stream");
    }
}

static ssize_t wslay_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags, void *user)
{
    (void)ctx;
    (void)flags;
    pool_ws_t *ws = user;
    sl_buf_append(&ws->out, (const char *)data, len);
    return (ssize_t)len;
}

static int wslay_genmask(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, void *user)
{
    (void)ctx;
    (void)user;
    return RAND_bytes(buf, (int)len) == 1 ? 0 : -1;
}

int pool_ws_send_text(pool_ws_t *ws, const char *msg, size_t len)
{
    if (ws->state != POOL_WS_OPEN)
        return 0;
    struct wslay_event_msg m = {WSLAY_TEXT_FRAME, (const uint8_t *)msg, len};
    if (wslay_event_queue_msg(ws->ctx, &m) != 0)
        return 0;
    if (!ws->in_callback)
        ws_flush(ws);
    return 1;
}

void pool_ws_ping(pool_ws_t *ws)
{
    if (ws->state != POOL_WS_OPEN)
        return;
    struct wslay_event_msg m = {WSLAY_PING, NULL, 0};
    if (wslay_event_queue_msg(ws->ctx, &m) == 0)
        ws_flush(ws);
}

/* ---- the socket's chain ----------------------------------------------------- */

/* A string id no owner's numeric ids can meet. */
static const char eth_chain_ask[] = "{\"jsonrpc\":\"2.0\",\"id\":\"sluice-chain\",\"method\":\"eth_chainId\",\"params\":[]}";
static const char sol_chain_ask[] = "{\"jsonrpc\":\"2.0\",\"id\":\"sluice-chain\",\"method\":\"getGenesisHash\"}";

void pool_ws_check_chain(pool_ws_t *ws, int chain, const char *want)
{
    ws->chain = (uint8_t)chain;
    snprintf(ws->want, sizeof(ws->want), "%s", want != NULL ? want : "");
}

int pool_ws_chain_stale(const pool_ws_t *ws, const char *want)
{
    return ws->state != POOL_WS_CLOSED && strcmp(ws->want, want != NULL ? want : "") != 0;
}

/* Inside wslay's callback: the socket fails once it returns. */
static void ws_fail_later(pool_ws_t *ws, const char *why)
{
    ws->fail_why = why;
    ws->close_pending = 1;
}

static void ws_chain_ask(pool_ws_t *ws)
{
    int sol = ws->chain == POLICY_CHAIN_SOLANA;
    struct wslay_event_msg m = {WSLAY_TEXT_FRAME, (const uint8_t *)(sol ? sol_chain_ask : eth_chain_ask),
                                sol ? sizeof(sol_chain_ask) - 1 : sizeof(eth_chain_ask) - 1};
    if (wslay_event_queue_msg(ws->ctx, &m) != 0)
        ws_fail_later(ws, "the chain question could not be sent");
}

/* The answer to ws_chain_ask: open if it is the network's chain. Other
 * messages before it (none is subscribed yet) are not ours: ignored. */
static void ws_chain_answer(pool_ws_t *ws, const char *msg, size_t len)
{
    wire_envelope_t env;
    char text[128], id[POLICY_CHAINID_MAX];
    if (wire_envelope_scan(msg, len, &env) != SL_OK || env.id.len != sizeof("\"sluice-chain\"") - 1 ||
        memcmp(msg + env.id.off, "\"sluice-chain\"", env.id.len) != 0)
        return;
    if (env.error.len != 0 || env.result.len == 0 || wire_json_string(msg, env.result, text, sizeof(text)) != SL_OK ||
        policy_chainid_normalize((policy_chain_t)ws->chain, text, strlen(text), id) != SL_OK) {
        ws_fail_later(ws, "its chain was asked and the answer is not a chain id");
        return;
    }
    if (strcmp(id, ws->want) != 0) {
        policy_chainid_excluded(ws->refused, sizeof(ws->refused), id, ws->want);
        ws->wrong_chain = 1;
        ws_fail_later(ws, ws->refused);
        return;
    }
    ws_enter(ws, POOL_WS_OPEN);
    ws->cbs->open(ws);
}

/* ---- reading ------------------------------------------------------------- */

static ssize_t wslay_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *user)
{
    (void)flags;
    pool_ws_t *ws = user;
    h2o_buffer_t *in = ws->sock->input;
    size_t n = in->size < len ? in->size : len;
    if (n == 0) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    memcpy(buf, in->bytes, n);
    h2o_buffer_consume(&ws->sock->input, n);
    return (ssize_t)n;
}

static void wslay_msg(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *arg, void *user)
{
    (void)ctx;
    pool_ws_t *ws = user;
    if (ws->close_pending)
        return;
    if (arg->opcode != WSLAY_TEXT_FRAME && arg->opcode != WSLAY_BINARY_FRAME)
        return;
    if (ws->state == POOL_WS_CHECKING)
        ws_chain_answer(ws, (const char *)arg->msg, arg->msg_length);
    else
        ws->cbs->message(ws, (const char *)arg->msg, arg->msg_length);
}

/* Frames in the socket's buffer, through wslay. */
static void ws_read_frames(pool_ws_t *ws)
{
    ws->in_callback = 1;
    int r = wslay_event_recv(ws->ctx);
    ws->in_callback = 0;
    if (ws->close_pending) {
        const char *why = ws->fail_why;
        ws_teardown(ws);
        if (why != NULL)
            ws->cbs->closed(ws, why);
        return;
    }
    if (r != 0) {
        ws_fail(ws, "the stream could not be read");
        return;
    }
    ws_flush(ws);
}

static const struct wslay_event_callbacks ws_callbacks = {
    .recv_callback = wslay_recv,
    .send_callback = wslay_send,
    .genmask_callback = wslay_genmask,
    .on_msg_recv_callback = wslay_msg,
};

/* The Upgrade's answer: 101 with the Accept our key asks for, then frames. */
static void ws_read_upgrade(pool_ws_t *ws)
{
    h2o_buffer_t *in = ws->sock->input;
    int status = 0;
    size_t head_len = 0;
    char accept[64], want[29];
    sl_err_t err = pool_http_parse_upgrade(in->bytes, in->size, &status, &head_len, accept, sizeof(accept));
    if (err == SL_ERR_TRUNCATED)
        return;
    if (err != SL_OK) {
        ws_fail(ws, "the answer to the Upgrade is not HTTP");
        return;
    }
    if (status != 101) {
        ws_fail(ws, status == 401 || status == 403 ? "the Upgrade was refused (HTTP 401/403)"
                                                  : "the Upgrade was refused (not HTTP 101)");
        return;
    }
    pool_ws_accept_of(ws->key, want);
    if (strcmp(accept, want) != 0) {
        ws_fail(ws, "a wrong Sec-WebSocket-Accept");
        return;
    }
    h2o_buffer_consume(&ws->sock->input, head_len);
    if (wslay_event_context_client_init(&ws->ctx, &ws_callbacks, ws) != 0) {
        ws_fail(ws, "no memory for the stream");
        return;
    }
    wslay_event_config_set_max_recv_msg_length(ws->ctx, ws->max_message);
    ws->opened_ms = sl_now_ms();
    if (ws->want[0] != '\0') {
        ws_enter(ws, POOL_WS_CHECKING);
        ws_chain_ask(ws);
        if (ws->close_pending) {
            ws_fail(ws, ws->fail_why);
            return;
        }
        ws_flush(ws);
    } else {
        ws_enter(ws, POOL_WS_OPEN);
        ws->cbs->open(ws);
    }
    if ((ws->state == POOL_WS_OPEN || ws->state == POOL_WS_CHECKING) && ws->sock->input->size > 0)
        ws_read_frames(ws);
}

static void on_read(h2o_socket_t *sock, const char *err)
{
    pool_ws_t *ws = sock->data;
    if (err != NULL) {
        ws_fail(ws, ws->state == POOL_WS_OPEN       ? "the upstream closed the socket"
                    : ws->state == POOL_WS_CHECKING ? "the socket closed while its chain was asked"
                                                    : "the socket closed during the Upgrade");
        return;
    }
    ws->last_rx_ms = sl_now_ms();
    if (ws->state == POOL_WS_UPGRADING)
        ws_read_upgrade(ws);
    else if (ws->state == POOL_WS_OPEN || ws->state == POOL_WS_CHECKING)
        ws_read_frames(ws);
}

/* ---- opening ------------------------------------------------------------- */

static int header_configured(const pool_endpoint_conf_t *conf, const char *name)
{
    for (size_t i = 0; i < conf->nheaders; i++)
        if (strcasecmp(conf->headers[i].name, name) == 0)
            return 1;
    return 0;
}

/* GET path with the Upgrade headers, the url's Basic credentials and the
 * endpoint's configured headers (an API key in a header goes here too). */
static void ws_send_upgrade(pool_ws_t *ws)
{
    const wire_url_t *u = &ws->link->url;
    const pool_endpoint_conf_t *conf = ws->link->conf;
    unsigned char nonce[16];
    if (RAND_bytes(nonce, sizeof(nonce)) != 1) {
        ws_fail(ws, "no random bytes for the key");
        return;
    }
    h2o_base64_encode(ws->key, nonce, sizeof(nonce), 0);
    sl_buf_t *b = &ws->out;
    int v6 = strchr(u->host, ':') != NULL;
    sl_buf_printf(b, "GET %s HTTP/1.1\r\nHost: %s%s%s", u->path, v6 ? "[" : "", u->host, v6 ? "]" : "");
    if (u->port != (u->https ? 443 : 80))
        sl_buf_printf(b, ":%u", (unsigned)u->port);
    sl_buf_printf(b, "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                     "Sec-WebSocket-Key: %s\r\n", ws->key);
    if (!header_configured(conf, "user-agent"))
        sl_buf_append_str(b, "User-Agent: sluice/" SLUICE_VERSION "\r\n");
    if (u->has_userinfo && !header_configured(conf, "authorization")) {
        char b64[sizeof(u->userinfo) * 4 / 3 + 4];
        h2o_base64_encode(b64, u->userinfo, strlen(u->userinfo), 0);
        sl_secret_add(b64);
        sl_buf_printf(b, "Authorization: Basic %s\r\n", b64);
    }
    for (size_t i = 0; i < conf->nheaders; i++)
        sl_buf_printf(b, "%s: %s\r\n", conf->headers[i].name, conf->headers[i].value);
    sl_buf_append_str(b, "\r\n");
    ws_enter(ws, POOL_WS_UPGRADING);
    h2o_socket_read_start(ws->sock, on_read);
    ws_flush(ws);
}

static void ws_opened(void *owner, pool_fail_t fail)
{
    pool_ws_t *ws = owner;
    if (fail == POOL_FAIL_NONE)
        ws_send_upgrade(ws);
    else
        ws_fail(ws, fail == POOL_FAIL_TLS ? "the TLS handshake failed" : "the connection failed");
}

static const pool_sock_cbs_t ws_sock_cbs = {.done = ws_opened};

const char *pool_ws_open(pool_ws_t *ws, pool_link_t *link, size_t max_message, const pool_ws_cbs_t *cbs, void *data)
{
    memset(ws, 0, sizeof(*ws));
    ws->link = link;
    ws->cbs = cbs;
    ws->data = data;
    ws->max_message = max_message;
    pool_fail_t fail;
    ws->sock = pool_sock_connect(&ws->opening, link, &ws_sock_cbs, ws, &fail);
    if (ws->sock == NULL) {
        if (fail == POOL_FAIL_DNS)
            return pool_dns_pending(link) ? "its host name is being looked up" : "its host name does not resolve";
        return "a socket could not be opened";
    }
    ws_enter(ws, POOL_WS_CONNECTING);
    ws->last_rx_ms = sl_now_ms();
    return NULL;
}
