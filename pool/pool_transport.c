/* pool/pool_transport.c: the transport's worker state, a network's deadlines
 * and a link's setup: its URL, TLS context and the request prefix sent before
 * each body (its addresses: pool_dns.c; its connections: pool_conn.c). */
#include <string.h>
#include <strings.h>

#include "base/sl_log.h"
#include "base/sl_secret.h"
#include "pool/pool_link_int.h"

static void slot_freed_nobody(pool_link_t *link)
{
    (void)link;
}

void pool_transport_init(pool_transport_t *t, h2o_loop_t *loop, h2o_multithread_receiver_t *getaddr_receiver,
                         size_t max_response_bytes, sl_budget_t *budget, const pool_transport_ops_t *ops)
{
    memset(t, 0, sizeof(*t));
    t->ops = ops != NULL ? ops : &pool_transport_sockets;
    t->loop = loop;
    t->getaddr_receiver = getaddr_receiver;
    t->max_response_bytes = max_response_bytes;
    t->budget = budget;
    t->slot_freed = slot_freed_nobody;
    h2o_timeout_init(loop, &t->idle_timeout, POOL_IDLE_TIMEOUT_MS);
    h2o_timeout_init(loop, &t->drain_timeout, POOL_DRAIN_MS);
    h2o_timeout_init(loop, &t->zero_timeout, 0);
    pool_delays_init(&t->delays, loop);
}

void pool_transport_dispose(pool_transport_t *t)
{
    h2o_timeout_dispose(t->loop, &t->idle_timeout);
    h2o_timeout_dispose(t->loop, &t->drain_timeout);
    h2o_timeout_dispose(t->loop, &t->zero_timeout);
    pool_delays_dispose(&t->delays);
}

void pool_link_timers_init(pool_link_timers_t *tm, pool_transport_t *t, const char *network,
                           const pool_timeouts_t *timeouts)
{
    tm->t = t;
    tm->network = network;
    tm->connect_ms = timeouts->connect_ms;
    h2o_timeout_init(t->loop, &tm->connect, timeouts->connect_ms);
    h2o_timeout_init(t->loop, &tm->first_byte, timeouts->first_byte_ms);
    h2o_timeout_init(t->loop, &tm->attempt, timeouts->attempt_ms);
}

void pool_link_timers_dispose(pool_link_timers_t *tm)
{
    if (tm->t == NULL)
        return;
    h2o_timeout_dispose(tm->t->loop, &tm->connect);
    h2o_timeout_dispose(tm->t->loop, &tm->first_byte);
    h2o_timeout_dispose(tm->t->loop, &tm->attempt);
}

static int configured(const pool_endpoint_conf_t *conf, const char *name)
{
    for (size_t i = 0; i < conf->nheaders; i++)
        if (strcasecmp(conf->headers[i].name, name) == 0)
            return 1;
    return 0;
}

/* Request line and fixed headers, ending just before the Content-Length
 * value. Built once: every request then costs one writev of three pieces.
 * A configured User-Agent, Accept or Authorization replaces sluice's own. */
static void build_prefix(pool_link_t *link)
{
    const pool_endpoint_conf_t *conf = link->conf;
    const wire_url_t *u = &link->url;
    sl_buf_t *b = &link->prefix;
    int default_port = u->port == (u->https ? 443 : 80);
    int v6 = strchr(u->host, ':') != NULL;

    sl_buf_printf(b, "POST %s HTTP/1.1\r\nHost: %s%s%s", u->path, v6 ? "[" : "", u->host, v6 ? "]" : "");
    if (!default_port)
        sl_buf_printf(b, ":%u", (unsigned)u->port);
    sl_buf_append_str(b, "\r\nContent-Type: application/json\r\n");
    if (!configured(conf, "user-agent"))
        sl_buf_append_str(b, "User-Agent: sluice/" SLUICE_VERSION "\r\n");
    if (!configured(conf, "accept"))
        sl_buf_append_str(b, "Accept: application/json\r\n");
    if (u->has_userinfo && !configured(conf, "authorization")) {
        /* https://user:password@host/: HTTP Basic, as curl and browsers do */
        size_t n = strlen(u->userinfo);
        char b64[sizeof(u->userinfo) * 4 / 3 + 4];
        h2o_base64_encode(b64, u->userinfo, n, 0);
        sl_secret_add(b64); /* an upstream that echoes its headers must not show it */
        sl_buf_printf(b, "Authorization: Basic %s\r\n", b64);
    }
    for (size_t i = 0; i < conf->nheaders; i++)
        sl_buf_printf(b, "%s: %s\r\n", conf->headers[i].name, conf->headers[i].value);
    sl_buf_append_str(b, "Content-Length: ");
}

sl_err_t pool_link_init(pool_link_t *link, pool_link_timers_t *timers, int index, const pool_endpoint_conf_t *conf)
{
    memset(link, 0, sizeof(*link));
    link->timers = timers;
    link->conf = conf;
    link->index = index;
    h2o_linklist_init_anchor(&link->idle);
    h2o_linklist_init_anchor(&link->draining);
    if (wire_url_parse(conf->url, &link->url) != SL_OK) {
        sl_log_error("endpoint %s/%s: invalid URL %s", timers->network, conf->id, conf->url_redacted);
        return SL_ERR_CONFIG;
    }
    if (link->url.https) {
        sl_err_t err = pool_tls_ctx_create(&link->url, conf->tls_ca_file, &link->ssl_ctx);
        if (err != SL_OK)
            return err;
    }
    build_prefix(link);
    pool_dns_init(link); /* never blocks: a host name is looked up on h2o's resolver threads */
    return SL_OK;
}

void pool_link_dispose(pool_link_t *link)
{
    if (link->timers == NULL)
        return; /* never initialised */
    pool_link_close_idle(link);
    pool_dns_dispose(link);
    if (link->ssl_ctx != NULL)
        SSL_CTX_free(link->ssl_ctx);
    sl_buf_dispose(&link->prefix);
}
