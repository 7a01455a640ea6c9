/* pool/pool_dns.c: a link's addresses, looked up without blocking.
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
#include "pool/pool_link_int.h"

#define DNS_RETRY_FIRST_MS 1000
#define DNS_RETRY_MAX_MS 30000
#define DNS_THREADS 4

static void dns_start(pool_link_t *link);

static const char *const state_names[] = {
    [POOL_DNS_LITERAL] = "literal", [POOL_DNS_FIRST] = "first lookup",
    [POOL_DNS_OK] = "resolved", [POOL_DNS_FAILED] = "failed",
};

/* The only writer of link->dns. */
static void dns_enter(pool_link_t *link, pool_dns_state_t to, const char *why)
{
    pool_dns_state_t from = link->dns;
    link->dns = to;
    switch (to) {
    case POOL_DNS_FAILED:
        if (from != POOL_DNS_FAILED)
            sl_log_warn("endpoint %s/%s: the host name of %s does not resolve (%s): out of the plan, retried",
                        link->timers->network, link->conf->id, link->conf->url_redacted, why);
        break;
    case POOL_DNS_OK:
        if (from == POOL_DNS_FAILED)
            sl_log_info("endpoint %s/%s: the host name resolves again after %u failed lookup(s)", link->timers->network,
                        link->conf->id, link->dns_failures);
        break;
    case POOL_DNS_LITERAL:
    case POOL_DNS_FIRST:
        break;
    }
    sl_log_debug("endpoint %s/%s: dns %s -> %s", link->timers->network, link->conf->id, state_names[from],
                 state_names[to]);
}

static size_t store_addrs(pool_link_t *link, const struct addrinfo *res)
{
    size_t n = 0;
    for (const struct addrinfo *ai = res; ai != NULL && n < POOL_MAX_ADDRS; ai = ai->ai_next) {
        if (ai->ai_addrlen > sizeof(link->addrs[0]))
            continue;
        memcpy(&link->addrs[n], ai->ai_addr, ai->ai_addrlen);
        link->addrlens[n] = ai->ai_addrlen;
        n++;
    }
    if (n > 0) {
        link->naddrs = n;
        link->next_addr = 0;
    }
    return n;
}

static void on_retry(pool_delay_t *d)
{
    pool_link_t *link = H2O_STRUCT_FROM_MEMBER(pool_link_t, dns_timer, d);
    if (link->resolving == NULL)
        dns_start(link);
}

static void schedule_retry(pool_link_t *link)
{
    uint32_t wait = link->dns_retry_ms ? link->dns_retry_ms : DNS_RETRY_FIRST_MS;
    link->dns_retry_ms = wait * 2 > DNS_RETRY_MAX_MS ? DNS_RETRY_MAX_MS : wait * 2;
    pool_delay_cancel(&link->dns_timer);
    pool_delay_add(&link->timers->t->delays, &link->dns_timer, wait, on_retry);
}

static void lookup_failed(pool_link_t *link, const char *why, int timed_out)
{
    link->dns_failures++;
    if (link->naddrs > 0) {
        /* a refresh: the last good addresses stay in use */
        if (link->dns_failures == 1)
            sl_log_warn("endpoint %s/%s: looking up %s again failed (%s); keeping its last addresses",
                        link->timers->network, link->conf->id, link->conf->url_redacted, why);
        return;
    }
    link->dns_timed_out = (uint8_t)timed_out;
    dns_enter(link, POOL_DNS_FAILED, why);
    pool_conn_dns_done(link);
}

static void on_resolved(h2o_hostinfo_getaddr_req_t *req, const char *errstr, struct addrinfo *res, void *data)
{
    (void)req;
    pool_link_t *link = data;
    link->resolving = NULL;
    pool_delay_cancel(&link->dns_timer); /* the lookup's deadline */
    link->resolved_at_ms = sl_now_ms();
    if (errstr == NULL && store_addrs(link, res) > 0) {
        link->dns_retry_ms = 0;
        dns_enter(link, POOL_DNS_OK, NULL);
        link->dns_failures = 0;
        pool_conn_dns_done(link);
        return;
    }
    if (!link->lookup_late) /* one that ran past its deadline was counted then */
        lookup_failed(link, errstr != NULL ? errstr : "no usable address", 0);
    schedule_retry(link);
}

/* connect_ms passed and the lookup has not answered: the endpoint counts as
 * failing now; the lookup still runs and its answer is used when it comes. */
static void on_deadline(pool_delay_t *d)
{
    pool_link_t *link = H2O_STRUCT_FROM_MEMBER(pool_link_t, dns_timer, d);
    char why[64];
    snprintf(why, sizeof(why), "no answer within %u ms", link->timers->connect_ms);
    link->lookup_late = 1;
    lookup_failed(link, why, 1);
}

static void dns_start(pool_link_t *link)
{
    char port[8];
    int n = snprintf(port, sizeof(port), "%u", (unsigned)link->url.port);
    link->lookup_late = 0;
    pool_delay_cancel(&link->dns_timer);
    pool_delay_add(&link->timers->t->delays, &link->dns_timer, link->timers->connect_ms, on_deadline);
    link->resolving = h2o_hostinfo_getaddr(link->timers->t->getaddr_receiver,
                                         h2o_iovec_init(link->url.host, strlen(link->url.host)),
                                         h2o_iovec_init(port, (size_t)n), AF_UNSPEC, SOCK_STREAM, IPPROTO_TCP,
                                         AI_ADDRCONFIG | AI_NUMERICSERV, on_resolved, link);
}

static int set_ip_addr(pool_link_t *link)
{
    struct sockaddr_in *v4 = (struct sockaddr_in *)&link->addrs[0];
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&link->addrs[0];
    memset(&link->addrs[0], 0, sizeof(link->addrs[0]));
    if (inet_pton(AF_INET, link->url.host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(link->url.port);
        link->addrlens[0] = sizeof(*v4);
    } else if (inet_pton(AF_INET6, link->url.host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(link->url.port);
        link->addrlens[0] = sizeof(*v6);
    } else {
        return 0;
    }
    link->naddrs = 1;
    return 1;
}

void pool_dns_init(pool_link_t *link)
{
    if (h2o_hostinfo_max_threads < DNS_THREADS)
        h2o_hostinfo_max_threads = DNS_THREADS;
    h2o_linklist_init_anchor(&link->dns_waiting);
    if (link->url.host_is_ip && set_ip_addr(link)) {
        link->dns = POOL_DNS_LITERAL;
        return;
    }
    link->dns = POOL_DNS_FIRST;
    dns_start(link);
}

void pool_dns_dispose(pool_link_t *link)
{
    pool_delay_cancel(&link->dns_timer);
    if (link->resolving != NULL)
        h2o_hostinfo_getaddr_cancel(link->resolving);
    link->resolving = NULL;
}

int pool_dns_usable(const pool_link_t *link)
{
    return link->dns != POOL_DNS_FAILED;
}

int pool_dns_pending(const pool_link_t *link)
{
    return link->dns == POOL_DNS_FIRST;
}

int pool_dns_failing(const pool_link_t *link)
{
    if (link->dns != POOL_DNS_FAILED)
        return 0;
    return link->dns_timed_out ? 2 : 1;
}

const struct sockaddr *pool_link_addr(pool_link_t *link, socklen_t *len)
{
    if (link->dns == POOL_DNS_OK && link->resolving == NULL && !h2o_linklist_is_linked(&link->dns_timer.link) &&
        sl_now_ms() - link->resolved_at_ms >= POOL_DNS_REFRESH_MS)
        dns_start(link);
    if (link->naddrs == 0)
        return NULL;
    size_t i = link->next_addr % link->naddrs;
    *len = link->addrlens[i];
    return (const struct sockaddr *)&link->addrs[i];
}

void pool_link_addr_failed(pool_link_t *link)
{
    link->next_addr++;
}
