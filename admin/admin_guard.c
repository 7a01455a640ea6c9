/* admin/admin_guard.c: what the admin listener refuses before any route runs.
 *
 * Without a token the listener is loopback-only (the config enforces it), so
 * what is left to fear is a browser on the same machine:
 *  - DNS rebinding: a page on evil.example whose name now resolves to
 *    127.0.0.1 reaches the listener with "Host: evil.example:8550". Only the
 *    listener's own host, localhost, 127.0.0.1 and [::1] are answered (with
 *    any port or none: an ssh tunnel's local port is not the listener's);
 *    any other Host, or none, gets 421 Misdirected Request.
 *  - cross-site writes: any page may send a "simple" POST (no preflight) to
 *    http://127.0.0.1:8550, but a browser always says where it comes from.
 *    A request other than GET or HEAD whose Origin is not this listener's
 *    own (http://<Host>, which the operator page's same-origin fetches send)
 *    gets 403, and one whose content type is not application/json gets 415
 *    (the form types are the only ones a page can send without a
 *    preflight). No Origin and no content type is curl, and is served.
 * With a token neither applies: a browser never attaches a bearer token on
 * its own, and the listener may then be reached under any name.
 *
 * Failed authentication is throttled per client address (IPv6 per /64, what
 * one host usually gets): ADMIN_AUTH_BURST failures at once, then one per
 * ADMIN_AUTH_WINDOW_US / ADMIN_AUTH_BURST, as GCRA. The token is always
 * compared and the correct one always passes: one address is every operator
 * behind a proxy or a bastion, and refusing the right token there would let
 * anyone who reaches the listener through it lock them all out with ten
 * wrong guesses. An address over its allowance gets 429 with Retry-After for
 * a wrong token instead of 401. That does not slow a guesser (a wrong guess
 * is told apart from the right one either way): a token of 16+ bytes is what
 * keeps guessing out of reach; the throttle keeps the answers, the log (one
 * line per address going over) and the work per failure bounded. The table
 * is per worker and bounded: when it is full the entry closest to its full
 * allowance again is reused. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <strings.h>

#include "admin/admin_int.h"
#include "base/sl_log.h"
#include "base/sl_time.h"
#include "policy/limiter.h"

static const policy_gcra_t auth_gcra = {ADMIN_AUTH_WINDOW_US, ADMIN_AUTH_BURST};

/* ---- Host, Origin, Content-Type ---- */

/* Splits a Host value into its name (brackets kept for IPv6) and checks the
 * port, if any, is a port. */
static int host_name(const char *s, size_t n, size_t *name_len)
{
    size_t end;
    if (n > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (close == NULL)
            return 0;
        end = (size_t)(close - s) + 1;
    } else {
        const char *colon = memchr(s, ':', n);
        end = colon != NULL ? (size_t)(colon - s) : n;
        if (colon != NULL && memchr(colon + 1, ':', n - end - 1) != NULL)
            return 0; /* a bare IPv6 address is not a Host */
    }
    if (end == 0)
        return 0;
    if (end < n) {
        size_t plen = n - end - 1;
        if (s[end] != ':' || plen == 0 || plen > 5)
            return 0;
        unsigned port = 0;
        for (size_t i = end + 1; i < n; i++) {
            if (s[i] < '0' || s[i] > '9')
                return 0;
            port = port * 10 + (unsigned)(s[i] - '0');
        }
        if (port > 65535)
            return 0;
    }
    *name_len = end;
    return 1;
}

int admin_guard_host_ok(const admin_guard_t *g, const char *host, size_t len)
{
    size_t n;
    if (!host_name(host, len, &n))
        return 0;
    for (size_t i = 0; i < ADMIN_GUARD_NAMES && g->names[i][0] != '\0'; i++)
        if (strlen(g->names[i]) == n && strncasecmp(g->names[i], host, n) == 0)
            return 1;
    return 0;
}

int admin_guard_origin_ok(const char *origin, size_t olen, const char *host, size_t hlen)
{
    static const char scheme[] = "http://";
    size_t slen = sizeof(scheme) - 1;
    return olen == slen + hlen && strncasecmp(origin, scheme, slen) == 0 &&
           strncasecmp(origin + slen, host, hlen) == 0;
}

int admin_guard_json_type(const char *ct, size_t len)
{
    static const char json[] = "application/json";
    size_t n = 0;
    while (n < len && ct[n] != ';')
        n++;
    while (n > 0 && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
        n--;
    return n == sizeof(json) - 1 && strncasecmp(ct, json, n) == 0;
}

/* Adds the host part of "host:port" (as configured, or as bound) to names. */
static void add_name(admin_guard_t *g, const char *hostport)
{
    size_t n;
    if (hostport == NULL || !host_name(hostport, strlen(hostport), &n) || n >= sizeof(g->names[0]))
        return;
    for (size_t i = 0; i < ADMIN_GUARD_NAMES; i++) {
        if (g->names[i][0] == '\0') {
            memcpy(g->names[i], hostport, n);
            g->names[i][n] = '\0';
            return;
        }
        if (strlen(g->names[i]) == n && strncasecmp(g->names[i], hostport, n) == 0)
            return;
    }
}

void admin_guard_init(admin_guard_t *g, const char *listen, const char *bound)
{
    memset(g, 0, sizeof(*g));
    add_name(g, "localhost");
    add_name(g, "127.0.0.1");
    add_name(g, "[::1]");
    add_name(g, listen);
    add_name(g, bound);
}

/* ---- failed authentication, per client address ---- */

void admin_guard_addr_key(const struct sockaddr *sa, uint8_t key[16])
{
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    memset(key, 0, 16);
    if (sa->sa_family == AF_INET) {
        memcpy(key, mapped, sizeof(mapped));
        memcpy(key + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    } else if (sa->sa_family == AF_INET6) {
        const uint8_t *a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
        memcpy(key, a, memcmp(a, mapped, sizeof(mapped)) == 0 ? 16 : 8); /* v4-mapped whole, else the /64 */
    }
}

static admin_auth_slot_t *find_slot(admin_guard_t *g, const uint8_t key[16])
{
    for (size_t i = 0; i < g->nslots; i++)
        if (memcmp(g->slots[i].key, key, 16) == 0)
            return &g->slots[i];
    return NULL;
}

uint64_t admin_guard_auth_wait_us(admin_guard_t *g, const uint8_t key[16], uint64_t now_us)
{
    admin_auth_slot_t *s = find_slot(g, key);
    if (s == NULL)
        return 0;
    policy_gcra_result_t r;
    policy_gcra_check(&auth_gcra, s->tat_us, now_us, 1, &r);
    return r.allowed ? 0 : r.retry_after_us;
}

int admin_guard_auth_failed(admin_guard_t *g, const uint8_t key[16], uint64_t now_us)
{
    admin_auth_slot_t *s = find_slot(g, key);
    if (s == NULL) {
        if (g->nslots < ADMIN_AUTH_SLOTS) {
            s = &g->slots[g->nslots++];
        } else {
            /* the entry closest to a full allowance loses least */
            s = &g->slots[0];
            for (size_t i = 1; i < g->nslots; i++)
                if (g->slots[i].tat_us < s->tat_us)
                    s = &g->slots[i];
        }
        memcpy(s->key, key, 16);
        s->tat_us = 0;
    }
    policy_gcra_result_t r;
    policy_gcra_check(&auth_gcra, s->tat_us, now_us, 1, &r);
    if (r.allowed)
        s->tat_us = r.new_tat_us;
    /* 1 when this failure used up the allowance: the caller logs it once */
    return r.allowed && r.remaining == 0;
}

/* ---- the router's gate ---- */

static int refuse(h2o_req_t *req, int status, const char *body, size_t len)
{
    admin_send_text(req, status, "application/json", body, len);
    return 1;
}

int admin_guard_request(admin_t *a, h2o_req_t *req)
{
    if (a->conf.token != NULL)
        return 0;
    if (!admin_guard_host_ok(&a->guard, req->authority.base, req->authority.len))
        return refuse(req, 421, H2O_STRLIT("{\"error\":\"this listener answers only to its own address or localhost "
                                           "(Host header refused)\"}"));
    if (h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")) ||
        h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD")))
        return 0;
    ssize_t i = h2o_find_header_by_str(&req->headers, H2O_STRLIT("origin"), -1); /* not one of h2o 2.2.5's tokens */
    if (i >= 0) {
        h2o_iovec_t o = req->headers.entries[i].value;
        if (!admin_guard_origin_ok(o.base, o.len, req->authority.base, req->authority.len))
            return refuse(req, 403, H2O_STRLIT("{\"error\":\"cross-origin request refused\"}"));
    }
    if ((i = h2o_find_header(&req->headers, H2O_TOKEN_CONTENT_TYPE, -1)) >= 0) {
        h2o_iovec_t ct = req->headers.entries[i].value;
        if (!admin_guard_json_type(ct.base, ct.len))
            return refuse(req, 415, H2O_STRLIT("{\"error\":\"a request body must be application/json\"}"));
    }
    return 0;
}

static void client_key(h2o_req_t *req, uint8_t key[16], char *text, size_t text_len)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    socklen_t len = req->conn->callbacks->get_peername(req->conn, (struct sockaddr *)&ss);
    admin_guard_addr_key((struct sockaddr *)&ss, key);
    snprintf(text, text_len, "?");
    if (len != 0 && ss.ss_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, text, (socklen_t)text_len);
    else if (len != 0 && ss.ss_family == AF_INET6)
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, text, (socklen_t)text_len);
}

int admin_guard_auth(admin_t *a, h2o_req_t *req, int (*authorized)(admin_t *a, h2o_req_t *req))
{
    uint8_t key[16];
    char who[INET6_ADDRSTRLEN];
    client_key(req, key, who, sizeof(who));
    if (authorized(a, req))
        return 0; /* before the throttle: the right token is never refused */
    uint64_t now = sl_now_us();
    uint64_t wait_us = admin_guard_auth_wait_us(&a->guard, key, now);
    if (wait_us != 0) {
        char secs[24];
        snprintf(secs, sizeof(secs), "%llu", (unsigned long long)((wait_us + 999999) / 1000000));
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL, secs, strlen(secs));
        return refuse(req, 429, H2O_STRLIT("{\"error\":\"too many failed authentications from this address; retry "
                                           "after the Retry-After delay\"}"));
    }
    /* never the presented credential: a near miss of the real token would
     * give most of it away, and the scrub only knows the exact one */
    if (admin_guard_auth_failed(&a->guard, key, now))
        sl_log_warn("admin: %u failed authentications from %s; wrong tokens from it get 429 for a while",
                    ADMIN_AUTH_BURST, who);
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_WWW_AUTHENTICATE, NULL,
                   H2O_STRLIT("Bearer realm=\"sluice admin\""));
    return refuse(req, 401, H2O_STRLIT("{\"error\":\"missing or wrong bearer token\"}"));
}
