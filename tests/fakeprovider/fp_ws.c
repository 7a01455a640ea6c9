/* fp_ws.c: the provider's WebSocket on its own port (a GET with Upgrade:
 * websocket), serving subscriptions as a node's does: eth_subscribe
 * (newHeads answered, never notified; newPendingTransactions), Solana's
 * slotSubscribe, logsSubscribe and programSubscribe, and their
 * unsubscribes. /_control/ws pushes a notification to every matching
 * subscription ({"push":"pending","result":"0x…"}, "logs", "program"),
 * drops every WebSocket ({"drop":true}: shut down, the HTTP side stays), and
 * reports the subscribes and unsubscribes received, the subscriptions live
 * and the last subscribe's params (newHeads' and slotSubscribe's aside);
 * eth_chainId and getGenesisHash are answered as over HTTP (sluice asks a
 * socket its chain before subscribing); any other call on the socket is
 * answered null. Frames: text, ping, close; client frames must be
 * masked; a message over FP_WS_MAX bytes closes the socket. */
#include "fp.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cjson/cJSON.h>
#include <openssl/evp.h>

#define FP_WS_MAX (1024 * 1024)
#define FP_WS_SUBS_MAX 1024

static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

static const char *const kinds[][3] = {
    /* the subscribe (eth_subscribe's first param), its unsubscribe, its notification */
    {"newHeads", "eth_unsubscribe", "eth_subscription"},
    {"newPendingTransactions", "eth_unsubscribe", "eth_subscription"},
    {"slotSubscribe", "slotUnsubscribe", "slotNotification"},
    {"logsSubscribe", "logsUnsubscribe", "logsNotification"},
    {"programSubscribe", "programUnsubscribe", "programNotification"},
};
#define NKINDS (sizeof kinds / sizeof kinds[0])

void fp_ws_accept(fp_conn_t *c, const char *key)
{
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    char text[128], accept[64];
    snprintf(text, sizeof text, "%.64s%s", key, guid);
    EVP_Digest(text, strlen(text), digest, &n, EVP_sha1(), NULL);
    EVP_EncodeBlock((unsigned char *)accept, digest, 20);
    fp_buf_printf(&c->out, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           "Sec-WebSocket-Accept: %s\r\n\r\n", accept);
    c->out_limit = c->out.len;
    c->srv->ws_upgrades++;
}

/* One unmasked frame of opcode with payload p[0..n). */
static void put_frame(fp_conn_t *c, int opcode, const char *p, size_t n)
{
    unsigned char h[10];
    size_t hl = 2;
    h[0] = (unsigned char)(0x80 | opcode);
    if (n < 126) {
        h[1] = (unsigned char)n;
    } else if (n < 65536) {
        h[1] = 126, h[2] = (unsigned char)(n >> 8), h[3] = (unsigned char)n, hl = 4;
    } else {
        h[1] = 127, hl = 10;
        for (int i = 0; i < 8; i++)
            h[2 + i] = (unsigned char)((uint64_t)n >> (56 - 8 * i));
    }
    fp_buf_put(&c->out, (const char *)h, hl);
    fp_buf_put(&c->out, p, n);
    c->out_limit = c->out.len;
}

static void put_text(fp_conn_t *c, const char *s)
{
    put_frame(c, 1, s, strlen(s));
}

static void answer(fp_conn_t *c, const cJSON *id, const char *result)
{
    char *ids = id != NULL ? cJSON_PrintUnformatted(id) : NULL;
    char buf[512];
    snprintf(buf, sizeof buf, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}", ids ? ids : "null", result);
    free(ids);
    put_text(c, buf);
}

static int kind_of(const char *method, const cJSON *params)
{
    const cJSON *first = cJSON_GetArrayItem(params, 0);
    for (size_t k = 0; k < NKINDS; k++) {
        if (strcmp(method, "eth_subscribe") == 0 ? cJSON_IsString(first) && strcmp(first->valuestring, kinds[k][0]) == 0
                                                : strcmp(method, kinds[k][0]) == 0)
            return (int)k;
    }
    return -1;
}

static void on_call(fp_conn_t *c, const cJSON *m)
{
    fp_server_t *srv = c->srv;
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(m, "method");
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(m, "params");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "id");
    char res[96];
    if (!cJSON_IsString(method)) {
        answer(c, id, "null");
        return;
    }
    int k = kind_of(method->valuestring, params);
    if (k >= 0 && c->ws_nsubs < FP_WS_SUBS_MAX) {
        uint64_t sid = ++srv->ws_next_id;
        fp_ws_sub_t *s = &c->ws_subs[c->ws_nsubs++];
        s->kind = k, s->id = sid;
        srv->ws_subscribes[k]++;
        char *pt = params != NULL && k != 0 && k != 2 ? cJSON_PrintUnformatted(params) : NULL; /* not the heads' */
        if (pt != NULL)
            snprintf(srv->ws_last_params, sizeof srv->ws_last_params, "%s", pt);
        free(pt);
        bool eth = strcmp(method->valuestring, "eth_subscribe") == 0;
        if (eth)
            snprintf(res, sizeof res, "\"0x%032" PRIx64 "\"", sid);
        else
            snprintf(res, sizeof res, "%" PRIu64, sid);
        answer(c, id, res);
        return;
    }
    const cJSON *v = cJSON_GetArrayItem(params, 0);
    if (strstr(method->valuestring, "nsubscribe") != NULL && v != NULL) {
        uint64_t want = (uint64_t)cJSON_GetNumberValue(v); /* Solana's; Ethereum's is "0x…" */
        if (cJSON_IsString(v))
            want = strncmp(v->valuestring, "0x", 2) == 0 ? strtoull(v->valuestring + 2, NULL, 16) : 0;
        for (size_t i = 0; i < c->ws_nsubs; i++)
            if (c->ws_subs[i].id == want && strcmp(kinds[c->ws_subs[i].kind][1], method->valuestring) == 0) {
                srv->ws_unsubscribes++;
                c->ws_subs[i] = c->ws_subs[--c->ws_nsubs];
                answer(c, id, "true");
                return;
            }
        answer(c, id, "false");
        return;
    }
    if (strcmp(method->valuestring, "eth_chainId") == 0)
        snprintf(res, sizeof res, "\"0x%" PRIx64 "\"", srv->chain_id);
    else if (strcmp(method->valuestring, "getGenesisHash") == 0)
        snprintf(res, sizeof res, "\"%s\"", srv->genesis_hash);
    else
        snprintf(res, sizeof res, "null");
    answer(c, id, res);
}

/* The next frame in c->in: 1 handled, 0 need more, -1 close the socket. */
int fp_ws_handle_next(fp_conn_t *c)
{
    const unsigned char *p = (const unsigned char *)c->in.data + c->in_off;
    size_t avail = c->in.len - c->in_off, hl = 2;
    if (c->ws_subs == NULL)
        c->ws_subs = calloc(FP_WS_SUBS_MAX, sizeof *c->ws_subs);
    if (avail < 2)
        return 0;
    int opcode = p[0] & 0x0f;
    uint64_t n = p[1] & 0x7f;
    if (!(p[1] & 0x80) || !(p[0] & 0x80))
        return -1; /* unmasked or fragmented: not what a client of ours sends */
    if (n == 126) {
        if (avail < 4)
            return 0;
        n = (uint64_t)p[2] << 8 | p[3], hl = 4;
    } else if (n == 127) {
        if (avail < 10)
            return 0;
        n = 0;
        for (int i = 0; i < 8; i++)
            n = n << 8 | p[2 + i];
        hl = 10;
    }
    if (n > FP_WS_MAX)
        return -1;
    if (avail < hl + 4 + n) {
        fp_buf_reserve(&c->in, hl + 4 + n - avail);
        return 0;
    }
    char *msg = malloc(n + 1);
    for (uint64_t i = 0; i < n; i++)
        msg[i] = (char)(p[hl + 4 + i] ^ p[hl + (i & 3)]);
    msg[n] = '\0';
    c->in_off += hl + 4 + n;
    int r = 1;
    if (opcode == 8) {
        put_frame(c, 8, "", 0);
        r = -1;
    } else if (opcode == 9) {
        put_frame(c, 10, msg, n);
    } else if (opcode == 1) {
        cJSON *m = cJSON_ParseWithLength(msg, n);
        if (cJSON_IsObject(m))
            on_call(c, m);
        cJSON_Delete(m);
    }
    free(msg);
    return r;
}

void fp_ws_dispose(fp_conn_t *c)
{
    free(c->ws_subs);
    c->ws_subs = NULL;
}

/* /_control/ws: {"push": kind, "result": any} notifies every subscription of
 * that kind ("pending", "logs", "program", "slot"); an empty body only reports. */
int fp_ws_route(fp_server_t *srv, const char *body, size_t n, fp_buf_t *out)
{
    static const char *const names[NKINDS] = {"heads", "pending", "slot", "logs", "program"};
    uint64_t sent = 0;
    cJSON *m = n > 0 ? cJSON_ParseWithLength(body, n) : NULL;
    const cJSON *push = cJSON_GetObjectItemCaseSensitive(m, "push");
    const cJSON *result = cJSON_GetObjectItemCaseSensitive(m, "result");
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "drop"))) {
        for (fp_conn_t *c = srv->conns; c != NULL; c = c->next)
            if (c->state == FP_CONN_WS)
                shutdown(c->fd, SHUT_RDWR); /* its own drive closes it */
        push = NULL;
    } else if (n > 0 && (!cJSON_IsString(push) || result == NULL)) {
        cJSON_Delete(m);
        fp_buf_puts(out, "{\"ok\":false,\"error\":\"expected {push, result}\"}");
        return 400;
    }
    char *res = push != NULL && result != NULL ? cJSON_PrintUnformatted(result) : NULL;
    for (size_t k = 0; res != NULL && k < NKINDS; k++) {
        if (strcmp(push->valuestring, names[k]) != 0)
            continue;
        for (fp_conn_t *c = srv->conns; c != NULL; c = c->next)
            for (size_t i = 0; i < c->ws_nsubs; i++) {
                if (c->ws_subs[i].kind != (int)k)
                    continue;
                fp_buf_t b = {0};
                if (k < 2)
                    fp_buf_printf(&b, "{\"jsonrpc\":\"2.0\",\"method\":\"%s\",\"params\":{\"subscription\":\"0x%032" PRIx64 "\",\"result\":",
                                  kinds[k][2], c->ws_subs[i].id);
                else
                    fp_buf_printf(&b, "{\"jsonrpc\":\"2.0\",\"method\":\"%s\",\"params\":{\"subscription\":%" PRIu64 ",\"result\":",
                                  kinds[k][2], c->ws_subs[i].id);
                fp_buf_puts(&b, res);
                fp_buf_puts(&b, "}}");
                put_frame(c, 1, b.data, b.len);
                fp_buf_dispose(&b);
                fp_conn_kick(c);
                sent++;
            }
    }
    free(res);
    cJSON_Delete(m);
    fp_buf_printf(out, "{\"ok\":true,\"sent\":%" PRIu64 ",\"upgrades\":%" PRIu64, sent, srv->ws_upgrades);
    fp_buf_puts(out, ",\"subscribes\":{");
    for (size_t k = 0; k < NKINDS; k++)
        fp_buf_printf(out, "%s\"%s\":%" PRIu64, k ? "," : "", names[k], srv->ws_subscribes[k]);
    uint64_t live[NKINDS] = {0};
    for (fp_conn_t *c = srv->conns; c != NULL; c = c->next)
        for (size_t i = 0; i < c->ws_nsubs; i++)
            live[c->ws_subs[i].kind]++;
    fp_buf_puts(out, "},\"live\":{");
    for (size_t k = 0; k < NKINDS; k++)
        fp_buf_printf(out, "%s\"%s\":%" PRIu64, k ? "," : "", names[k], live[k]);
    fp_buf_printf(out, "},\"unsubscribes\":%" PRIu64 ",\"last_params\":%s}", srv->ws_unsubscribes,
                  srv->ws_last_params[0] != '\0' ? srv->ws_last_params : "null");
    return 200;
}
