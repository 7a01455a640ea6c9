/* pool/pool_dns.c: an endpoint's addresses, looked up without blocking.
 *
 * A host name is looked up on h2o's resolver threads (getaddrinfo), never on
 * the event loop: a worker starts serving at once, whatever DNS does.
 *
 *   FIRST  --answer--> OK          FIRST  --error or connect_ms--> FAILED
 *   FAILED --answer--> OK          OK     --refresh (any result)--> OK
 *
 * FIRST: the first lookup is under way; the endpoint is in the plan and a
 * connection to it waits for the answer (within timeouts.connect_ms).
 * FAILED: no address is known, the last lookup failed or took longer than
 * connect_ms: the endpoint is out of every plan, with the reason in
 * /admin/endpoints, and the lookup is retried after 1 s, doubling up to
 * 30 s. OK: addresses known. They are looked up again every 60 s while the
 * endpoint is used (getaddrinfo says no TTL); a failed refresh keeps the
 * last good addresses and retries on the same backoff. A lookup is never
 * started while another for the endpoint is still running (a hung one holds
 * a resolver thread; it is given up on, not duplicated), and the resolver
 * may run a few lookups at once, so one hung name does not hold up others. */
#include <arpa/inet.h>
#include <string.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "pool/pool_int.h"

#define DNS_RETRY_FIRST_MS 1000
#define DNS_RETRY_MAX_MS 30000
#define DNS_THREADS 4

static void dns_start(pool_endpoint_t *ep);

static const char *const state_names[] = {
    [POOL_DNS_LITERAL] = "literal", [POOL_DNS_FIRST] = "first lookup",
    [POOL_DNS_OK] = "resolved", [POOL_DNS_FAILED] = "failed",
};

/* The only writer of ep->dns. */
static void dns_enter(pool_endpoint_t *ep, pool_dns_state_t to, const char *why)
{
    pool_dns_state_t from = ep->dns;
    ep->dns = to;
    switch (to) {
    case POOL_DNS_FAILED:
        if (from != POOL_DNS_FAILED)
            sl_log_warn("endpoint %s/%s: the host name of %s does not resolve (%s): out of the plan, retried",
                        ep->net->conf->name, ep->conf->id, ep->conf->url_redacted, why);
        break;
    case POOL_DNS_OK:
        if (from == POOL_DNS_FAILED)
            sl_log_info("endpoint %s/%s: the host name resolves again after %u failed lookup(s)", ep->net->conf->name,
                        ep->conf->id, ep->dns_failures);
        break;
    case POOL_DNS_LITERAL:
    case POOL_DNS_FIRST:
        break;
    }
    sl_log_debug("endpoint %s/%s: dns %s -> %s", ep->net->conf->name, ep->conf->id, state_names[from],
                 state_names[to]);
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

static void on_retry(pool_delay_t *d)
{
    pool_endpoint_t *ep = H2O_STRUCT_FROM_MEMBER(pool_endpoint_t, dns_timer, d);
    if (ep->resolving == NULL)
        dns_start(ep);
}

static void schedule_retry(pool_endpoint_t *ep)
{
    uint32_t wait = ep->dns_retry_ms ? ep->dns_retry_ms : DNS_RETRY_FIRST_MS;
    ep->dns_retry_ms = wait * 2 > DNS_RETRY_MAX_MS ? DNS_RETRY_MAX_MS : wait * 2;
    pool_delay_cancel(&ep->dns_timer);
    pool_delay_add(ep->net->pool, &ep->dns_timer, wait, on_retry);
}

static void lookup_failed(pool_endpoint_t *ep, const char *why, int timed_out)
{
    ep->dns_failures++;
    if (ep->naddrs > 0) {
        /* a refresh: the last good addresses stay in use */
        if (ep->dns_failures == 1)
            sl_log_warn("endpoint %s/%s: looking up %s again failed (%s); keeping its last addresses",
                        ep->net->conf->name, ep->conf->id, ep->conf->url_redacted, why);
        return;
    }
    ep->dns_timed_out = (uint8_t)timed_out;
    dns_enter(ep, POOL_DNS_FAILED, why);
    pool_conn_dns_done(ep);
}

static void on_resolved(h2o_hostinfo_getaddr_req_t *req, const char *errstr, struct addrinfo *res, void *data)
{
    (void)req;
    pool_endpoint_t *ep = data;
    ep->resolving = NULL;
    pool_delay_cancel(&ep->dns_timer); /* the lookup's deadline */
    ep->resolved_at_ms = sl_now_ms();
    if (errstr == NULL && store_addrs(ep, res) > 0) {
        ep->dns_retry_ms = 0;
        dns_enter(ep, POOL_DNS_OK, NULL);
        ep->dns_failures = 0;
        pool_conn_dns_done(ep);
        return;
    }
    if (!ep->lookup_late) /* one that ran past its deadline was counted then */
        lookup_failed(ep, errstr != NULL ? errstr : "no usable address", 0);
    schedule_retry(ep);
}

/* connect_ms passed and the lookup has not answered: the endpoint counts as
 * failing now; the lookup still runs and its answer is used when it comes. */
static void on_deadline(pool_delay_t *d)
{
    pool_endpoint_t *ep = H2O_STRUCT_FROM_MEMBER(pool_endpoint_t, dns_timer, d);
    char why[64];
    snprintf(why, sizeof(why), "no answer within %u ms", ep->net->conf->timeouts.connect_ms);
    ep->lookup_late = 1;
    lookup_failed(ep, why, 1);
}

static void dns_start(pool_endpoint_t *ep)
{
    char port[8];
    int n = snprintf(port, sizeof(port), "%u", (unsigned)ep->url.port);
    ep->lookup_late = 0;
    pool_delay_cancel(&ep->dns_timer);
    pool_delay_add(ep->net->pool, &ep->dns_timer, ep->net->conf->timeouts.connect_ms, on_deadline);
    ep->resolving = h2o_hostinfo_getaddr(ep->net->pool->getaddr_receiver,
                                         h2o_iovec_init(ep->url.host, strlen(ep->url.host)),
                                         h2o_iovec_init(port, (size_t)n), AF_UNSPEC, SOCK_STREAM, IPPROTO_TCP,
                                         AI_ADDRCONFIG | AI_NUMERICSERV, on_resolved, ep);
}

static int set_ip_addr(pool_endpoint_t *ep)
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
        return 0;
    }
    ep->naddrs = 1;
    return 1;
}

void pool_dns_init(pool_endpoint_t *ep)
{
    if (h2o_hostinfo_max_threads < DNS_THREADS)
        h2o_hostinfo_max_threads = DNS_THREADS;
    h2o_linklist_init_anchor(&ep->dns_waiting);
    if (ep->url.host_is_ip && set_ip_addr(ep)) {
        ep->dns = POOL_DNS_LITERAL;
        return;
    }
    ep->dns = POOL_DNS_FIRST;
    dns_start(ep);
}

void pool_dns_dispose(pool_endpoint_t *ep)
{
    pool_delay_cancel(&ep->dns_timer);
    if (ep->resolving != NULL)
        h2o_hostinfo_getaddr_cancel(ep->resolving);
    ep->resolving = NULL;
}

int pool_dns_usable(const pool_endpoint_t *ep)
{
    return ep->dns != POOL_DNS_FAILED;
}

int pool_dns_pending(const pool_endpoint_t *ep)
{
    return ep->dns == POOL_DNS_FIRST;
}

uint8_t pool_dns_excluded(const pool_endpoint_t *ep)
{
    if (ep->dns != POOL_DNS_FAILED)
        return STATE_EXCLUDED_NO;
    return ep->dns_timed_out ? STATE_EXCLUDED_DNS_TIMEOUT : STATE_EXCLUDED_DNS_FAILED;
}

const struct sockaddr *pool_endpoint_addr(pool_endpoint_t *ep, socklen_t *len)
{
    if (ep->dns == POOL_DNS_OK && ep->resolving == NULL && !h2o_linklist_is_linked(&ep->dns_timer.link) &&
        sl_now_ms() - ep->resolved_at_ms >= POOL_DNS_REFRESH_MS)
        dns_start(ep);
    if (ep->naddrs == 0)
        return NULL;
    size_t i = ep->next_addr % ep->naddrs;
    *len = ep->addrlens[i];
    return (const struct sockaddr *)&ep->addrs[i];
}

void pool_endpoint_addr_failed(pool_endpoint_t *ep)
{
    ep->next_addr++;
}
