#include "gateway/gw_identity.h"

#include <arpa/inet.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <openssl/sha.h>
#include <string.h>

#include "base/sl_buf.h"

int gw_identity_is_key(const char *seg, size_t len)
{
    return len >= 3 && memcmp(seg, GW_KEY_PREFIX, 3) == 0;
}

void gw_identity_hash(const char *key, size_t len, char hex[65])
{
    static const char digits[] = "0123456789abcdef";
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)key, len, md);
    for (size_t i = 0; i < SHA256_DIGEST_LENGTH; i++) {
        hex[2 * i] = digits[md[i] >> 4];
        hex[2 * i + 1] = digits[md[i] & 15];
    }
    hex[64] = '\0';
}

gw_identity_result_t gw_identity_resolve(const cfg_t *cfg, const char *key, size_t len,
                                         const cfg_key_conf_t **out)
{
    *out = NULL;
    if (key == NULL || len == 0)
        return GW_IDENTITY_ANONYMOUS;
    char hex[65];
    gw_identity_hash(key, len, hex);
    /* compare against every entry, so timing says nothing about which matched */
    const cfg_key_conf_t *found = NULL;
    for (size_t i = 0; i < cfg->nkeys; i++)
        if (CRYPTO_memcmp(hex, cfg->keys[i].sha256, 64) == 0)
            found = &cfg->keys[i];
    *out = found;
    return found != NULL ? GW_IDENTITY_KEY : GW_IDENTITY_UNKNOWN_KEY;
}

int gw_identity_in_cidrs(const char *addr, char *const *cidrs, size_t n)
{
    unsigned char a[16], net[16];
    int v6 = strchr(addr, ':') != NULL;
    if (inet_pton(v6 ? AF_INET6 : AF_INET, addr, a) != 1)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char buf[64];
        const char *slash = strchr(cidrs[i], '/');
        size_t len = slash ? (size_t)(slash - cidrs[i]) : strlen(cidrs[i]);
        if (len >= sizeof(buf) || (strchr(cidrs[i], ':') != NULL) != v6)
            continue;
        memcpy(buf, cidrs[i], len);
        buf[len] = '\0';
        if (inet_pton(v6 ? AF_INET6 : AF_INET, buf, net) != 1)
            continue;
        int bits = slash ? atoi(slash + 1) : (v6 ? 128 : 32);
        int full = bits / 8, rest = bits % 8;
        if (memcmp(a, net, (size_t)full) != 0)
            continue;
        if (rest == 0 || ((a[full] ^ net[full]) & (0xff << (8 - rest))) == 0)
            return 1;
    }
    return 0;
}

/* Dotted quad without inet_ntop's sprintf: this runs for every call that a
 * per-IP limit applies to. */
static void ipv4_str(const struct in_addr *a, char out[64])
{
    const unsigned char *b = (const unsigned char *)&a->s_addr;
    size_t n = 0;
    for (int i = 0; i < 4; i++) {
        if (i > 0)
            out[n++] = '.';
        n += sl_u64_str(out + n, b[i]);
    }
}

static void peer_ip(h2o_req_t *req, char out[64])
{
    struct sockaddr_storage ss;
    out[0] = '\0';
    socklen_t len = req->conn->callbacks->get_peername(req->conn, (struct sockaddr *)&ss);
    if (len != 0 && ss.ss_family == AF_INET) {
        ipv4_str(&((struct sockaddr_in *)&ss)->sin_addr, out);
    } else if (len != 0 && ss.ss_family == AF_INET6) {
        const struct in6_addr *a = &((struct sockaddr_in6 *)&ss)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a)) {
            struct in_addr v4;
            memcpy(&v4.s_addr, a->s6_addr + 12, 4);
            ipv4_str(&v4, out); /* a dual-stack listener's IPv4 peer is an IPv4 caller */
        } else {
            inet_ntop(AF_INET6, a, out, 64);
        }
    }
}

/* One X-Forwarded-For element, v[a..b) trimmed: 1 and the caller so far in
 * addr if it is an address that a trusted proxy added (walk on), 0 if the
 * walk ends here (addr is then the caller). Empty elements are skipped. */
static int forwarded_step(const char *v, size_t a, size_t b, char *const *trusted, size_t ntrusted, char addr[64])
{
    while (a < b && (v[a] == ' ' || v[a] == '\t'))
        a++;
    while (b > a && (v[b - 1] == ' ' || v[b - 1] == '\t'))
        b--;
    if (b == a)
        return 1;
    char cand[64];
    unsigned char tmp[16];
    if (b - a >= sizeof(cand))
        return 0; /* garbage: keep the proxy's own address */
    memcpy(cand, v + a, b - a);
    cand[b - a] = '\0';
    if (inet_pton(strchr(cand, ':') ? AF_INET6 : AF_INET, cand, tmp) != 1)
        return 0;
    memcpy(addr, cand, b - a + 1);
    return gw_identity_in_cidrs(cand, trusted, ntrusted);
}

void gw_identity_forwarded(const h2o_iovec_t *values, size_t n, char *const *trusted, size_t ntrusted, char addr[64])
{
    /* from the right of the last line to the left of the first: the order
     * of the lines joined with ", " */
    for (size_t line = n; line-- > 0;) {
        const char *v = values[line].base;
        size_t end = values[line].len;
        for (;;) {
            size_t start = end;
            while (start > 0 && v[start - 1] != ',')
                start--;
            if (!forwarded_step(v, start, end, trusted, ntrusted, addr))
                return;
            if (start == 0)
                break;
            end = start - 1;
        }
    }
}

/* One host's many IPv6 addresses are one caller: the bits past prefix go. */
static void mask_v6(struct in6_addr *a, uint32_t prefix)
{
    for (uint32_t bit = prefix; bit < 128; bit++)
        a->s6_addr[bit / 8] &= (unsigned char)~(0x80u >> (bit % 8));
}

int gw_identity_group_key(const struct sockaddr *sa, uint32_t prefix, uint8_t out[16])
{
    static const uint8_t v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    memset(out, 0, 16);
    if (sa->sa_family == AF_INET) {
        memcpy(out, v4_mapped, 12);
        memcpy(out + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        return 1;
    }
    if (sa->sa_family != AF_INET6)
        return 0;
    struct in6_addr a = ((const struct sockaddr_in6 *)sa)->sin6_addr;
    if (!IN6_IS_ADDR_V4MAPPED(&a))
        mask_v6(&a, prefix); /* a dual-stack listener's IPv4 peer stays itself */
    memcpy(out, a.s6_addr, 16);
    return 1;
}

void gw_identity_group(const char *addr, uint32_t prefix, char out[64])
{
    struct in6_addr a;
    size_t len = strnlen(addr, 63);
    if (strchr(addr, ':') == NULL || inet_pton(AF_INET6, addr, &a) != 1) {
        memcpy(out, addr, len);
        out[len] = '\0';
        return;
    }
    if (IN6_IS_ADDR_V4MAPPED(&a)) {
        struct in_addr v4;
        memcpy(&v4.s_addr, a.s6_addr + 12, 4);
        ipv4_str(&v4, out);
        return;
    }
    if (prefix >= 128) {
        inet_ntop(AF_INET6, &a, out, 64);
        return;
    }
    mask_v6(&a, prefix);
    inet_ntop(AF_INET6, &a, out, 48);
    size_t n = strlen(out);
    out[n++] = '/';
    n += sl_u64_str(out + n, prefix);
    out[n] = '\0';
}

#define MAX_FORWARDED_LINES 16    /* more X-Forwarded-For lines than this: the first ones are not read */

void gw_identity_client_ip(h2o_req_t *req, const cfg_t *cfg, char out[64])
{
    peer_ip(req, out);
    if (cfg->server.ntrusted_proxies != 0 && gw_identity_in_cidrs(out, cfg->server.trusted_proxies, cfg->server.ntrusted_proxies)) {
        h2o_iovec_t lines[MAX_FORWARDED_LINES];
        size_t n = 0;
        for (ssize_t i = -1; (i = h2o_find_header(&req->headers, H2O_TOKEN_X_FORWARDED_FOR, i)) >= 0;) {
            if (n == MAX_FORWARDED_LINES) /* keep the last ones: the walk starts at the right */
                memmove(lines, lines + 1, --n * sizeof(lines[0]));
            lines[n++] = req->headers.entries[i].value;
        }
        gw_identity_forwarded(lines, n, cfg->server.trusted_proxies, cfg->server.ntrusted_proxies, out);
    }
    if (strchr(out, ':') != NULL) { /* IPv4 needs no grouping: the common case costs one strchr */
        char addr[64];
        memcpy(addr, out, 64);
        gw_identity_group(addr, cfg->server.ipv6_prefix, out);
    }
}

const cfg_tier_conf_t *gw_identity_tier(const cfg_t *cfg, const cfg_key_conf_t *key)
{
    return key != NULL ? key->tier_conf : cfg->anonymous_tier;
}
