/* pool/pool_endpoint.c: an upstream endpoint inside one worker: its parsed
 * URL, TLS context, addresses and the request prefix sent before each body. */
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

static size_t store_addrs(pool_endpoint_t *ep, const struct addrinfo *res)
{
    size_t n = 0;
    for (const struct addrinfo *ai = res; ai != NULL && n < POOL_MAX_ADDRS; ai = ai->ai_next) {
        if (ai->ai_addrlen > sizeof(ep->addrs[0]))
            continue;
        memcpy(&ep->addrs[n], ai->ai_addr, ai->ai_addrlen);
        ep->addrlens[n] = ai->ai_addrlen;
        n++;
    }
    if (n > 0) {
        ep->naddrs = n;
        ep->next_addr = 0;
    }
    return n;
}

/* Resolves synchronously: used once at worker start, before traffic. */
static void resolve_now(pool_endpoint_t *ep)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_protocol = IPPROTO_TCP,
                             .ai_flags = AI_ADDRCONFIG | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    char port[8];
    snprintf(port, sizeof(port), "%u", (unsigned)ep->url.port);
    int rc = getaddrinfo(ep->url.host, port, &hints, &res);
    ep->resolved_at_ms = sl_now_ms();
    if (rc != 0) {
        sl_log_warn("endpoint %s/%s: cannot resolve %s: %s (will retry)", ep->net->conf->name, ep->conf->id,
                    ep->url.host, gai_strerror(rc));
        return;
    }
    store_addrs(ep, res);
    freeaddrinfo(res);
}

static void on_resolved(h2o_hostinfo_getaddr_req_t *req, const char *errstr, struct addrinfo *res, void *data)
{
    (void)req;
    pool_endpoint_t *ep = data;
    ep->resolving = NULL;
    ep->resolved_at_ms = sl_now_ms();
    if (errstr != NULL) {
        sl_log_warn("endpoint %s/%s: cannot resolve %s: %s", ep->net->conf->name, ep->conf->id, ep->url.host, errstr);
        return;
    }
    store_addrs(ep, res);
}

static void resolve_async(pool_endpoint_t *ep)
{
    char port[8];
    int n = snprintf(port, sizeof(port), "%u", (unsigned)ep->url.port);
    ep->resolving = h2o_hostinfo_getaddr(ep->net->pool->getaddr_receiver,
                                         h2o_iovec_init(ep->url.host, strlen(ep->url.host)),
                                         h2o_iovec_init(port, (size_t)n), AF_UNSPEC, SOCK_STREAM, IPPROTO_TCP,
                                         AI_ADDRCONFIG | AI_NUMERICSERV, on_resolved, ep);
}

static void set_ip_addr(pool_endpoint_t *ep)
{
    struct sockaddr_in *v4 = (struct sockaddr_in *)&ep->addrs[0];
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ep->addrs[0];
    memset(&ep->addrs[0], 0, sizeof(ep->addrs[0]));
    if (inet_pton(AF_INET, ep->url.host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(ep->url.port);
        ep->addrlens[0] = sizeof(*v4);
    } else if (inet_pton(AF_INET6, ep->url.host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(ep->url.port);
        ep->addrlens[0] = sizeof(*v6);
    } else {
        return;
    }
    ep->naddrs = 1;
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
    pool_credit_init(ep);
    build_prefix(ep);
    if (ep->url.host_is_ip)
        set_ip_addr(ep);
    else
        resolve_now(ep);
    return SL_OK;
}

void pool_endpoint_dispose(pool_endpoint_t *ep)
{
    pool_conn_close_idle(ep);
    if (ep->resolving != NULL)
        h2o_hostinfo_getaddr_cancel(ep->resolving);
    if (ep->ssl_ctx != NULL)
        SSL_CTX_free(ep->ssl_ctx);
    sl_buf_dispose(&ep->prefix);
}

const struct sockaddr *pool_endpoint_addr(pool_endpoint_t *ep, socklen_t *len)
{
    if (!ep->url.host_is_ip && ep->resolving == NULL && sl_now_ms() - ep->resolved_at_ms >= POOL_DNS_REFRESH_MS)
        resolve_async(ep);
    if (ep->naddrs == 0) {
        /* nothing known yet: try again soon rather than after the full period */
        if (!ep->url.host_is_ip && ep->resolving == NULL && sl_now_ms() - ep->resolved_at_ms >= 1000)
            resolve_async(ep);
        return NULL;
    }
    size_t i = ep->next_addr % ep->naddrs;
    *len = ep->addrlens[i];
    return (const struct sockaddr *)&ep->addrs[i];
}

void pool_endpoint_addr_failed(pool_endpoint_t *ep)
{
    ep->next_addr++;
}
