/* pool/pool_endpoint.c: an upstream endpoint inside one worker: its parsed
 * URL, TLS context and the request prefix sent before each body (its
 * addresses: pool_dns.c). */
#include <arpa/inet.h>
#include <string.h>
#include <strings.h>

#include "base/sl_log.h"
#include "base/sl_secret.h"
#include "base/sl_time.h"
#include "pool/pool_int.h"

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
static void build_prefix(pool_endpoint_t *ep)
{
    const pool_endpoint_conf_t *conf = ep->conf;
    sl_buf_t *b = &ep->prefix;
    int default_port = ep->url.port == (ep->url.https ? 443 : 80);
    int v6 = strchr(ep->url.host, ':') != NULL;

    sl_buf_printf(b, "POST %s HTTP/1.1\r\nHost: %s%s%s", ep->url.path, v6 ? "[" : "", ep->url.host, v6 ? "]" : "");
    if (!default_port)
        sl_buf_printf(b, ":%u", (unsigned)ep->url.port);
    sl_buf_append_str(b, "\r\nContent-Type: application/json\r\n");
    if (!configured(conf, "user-agent"))
        sl_buf_append_str(b, "User-Agent: sluice/" SLUICE_VERSION "\r\n");
    if (!configured(conf, "accept"))
        sl_buf_append_str(b, "Accept: application/json\r\n");
    if (ep->url.has_userinfo && !configured(conf, "authorization")) {
        /* https://user:password@host/: HTTP Basic, as curl and browsers do */
        size_t n = strlen(ep->url.userinfo);
        char b64[sizeof(ep->url.userinfo) * 4 / 3 + 4];
        h2o_base64_encode(b64, ep->url.userinfo, n, 0);
        sl_secret_add(b64); /* an upstream that echoes its headers must not show it */
        sl_buf_printf(b, "Authorization: Basic %s\r\n", b64);
    }
    for (size_t i = 0; i < conf->nheaders; i++)
        sl_buf_printf(b, "%s: %s\r\n", conf->headers[i].name, conf->headers[i].value);
    sl_buf_append_str(b, "Content-Length: ");
}

sl_err_t pool_endpoint_init(pool_endpoint_t *ep, pool_network_t *net, int index, const pool_endpoint_conf_t *conf,
                            uint32_t nworkers)
{
    memset(ep, 0, sizeof(*ep));
    ep->conf = conf;
    ep->net = net;
    ep->index = index;
    h2o_linklist_init_anchor(&ep->idle);
    if (wire_url_parse(conf->url, &ep->url) != SL_OK) {
        sl_log_error("endpoint %s/%s: invalid URL %s", net->conf->name, conf->id, conf->url_redacted);
        return SL_ERR_CONFIG;
    }
    if (ep->url.https) {
        sl_err_t err = pool_tls_ctx_create(&ep->url, conf->tls_ca_file, &ep->ssl_ctx);
        if (err != SL_OK)
            return err;
    }
    /* this worker's share; the shares add up to max exactly (a worker may
     * get 0 when max < workers), so max_inflight is never exceeded */
    uint32_t max = conf->max_inflight ? conf->max_inflight : POOL_DEFAULT_MAX_INFLIGHT;
    uint32_t slot = net->pool->slot ? net->pool->slot - 1 : 0;
    ep->max_inflight = max / nworkers + (slot % nworkers < max % nworkers ? 1 : 0);
    pool_credit_init(ep, nworkers);
    build_prefix(ep);
    pool_dns_init(ep); /* never blocks: a host name is looked up on h2o's resolver threads */
    return SL_OK;
}

void pool_endpoint_dispose(pool_endpoint_t *ep)
{
    pool_conn_close_idle(ep);
    pool_dns_dispose(ep);
    if (ep->ssl_ctx != NULL)
        SSL_CTX_free(ep->ssl_ctx);
    sl_buf_dispose(&ep->prefix);
}
