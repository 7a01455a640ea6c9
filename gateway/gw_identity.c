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

gw_identity_result_t gw_identity_resolve(const gw_config_t *cfg, const char *key, size_t len,
                                         const gw_key_conf_t **out)
{
    *out = NULL;
    if (key == NULL || len == 0)
        return GW_IDENTITY_ANONYMOUS;
    char hex[65];
    gw_identity_hash(key, len, hex);
    /* compare against every entry, so timing says nothing about which matched */
    const gw_key_conf_t *found = NULL;
    for (size_t i = 0; i < cfg->nkeys; i++)
        if (CRYPTO_memcmp(hex, cfg->keys[i].sha256, 64) == 0)
            found = &cfg->keys[i];
    *out = found;
    return found != NULL ? GW_IDENTITY_KEY : GW_IDENTITY_UNKNOWN_KEY;
}

/* 1 if addr (text) is inside one of the CIDRs. */
static int in_cidrs(const char *addr, char *const *cidrs, size_t n)
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
    if (len != 0 && ss.ss_family == AF_INET)
        ipv4_str(&((struct sockaddr_in *)&ss)->sin_addr, out);
    else if (len != 0 && ss.ss_family == AF_INET6)
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, out, 64);
}

void gw_identity_client_ip(h2o_req_t *req, const gw_config_t *cfg, char out[64])
{
    peer_ip(req, out);
    if (cfg->server.ntrusted_proxies == 0 || !in_cidrs(out, cfg->server.trusted_proxies, cfg->server.ntrusted_proxies))
        return;
    ssize_t i = h2o_find_header(&req->headers, H2O_TOKEN_X_FORWARDED_FOR, -1);
    if (i < 0)
        return;
    h2o_iovec_t v = req->headers.entries[i].value;
    /* walk from the right: the first address a trusted proxy did not add */
    size_t end = v.len;
    while (end > 0) {
        size_t start = end;
        while (start > 0 && v.base[start - 1] != ',')
            start--;
        size_t a = start, b = end;
        while (a < b && (v.base[a] == ' ' || v.base[a] == '\t'))
            a++;
        while (b > a && (v.base[b - 1] == ' ' || v.base[b - 1] == '\t'))
            b--;
        if (b > a && b - a < 64) {
            char cand[64];
            memcpy(cand, v.base + a, b - a);
            cand[b - a] = '\0';
            unsigned char tmp[16];
            if (inet_pton(strchr(cand, ':') ? AF_INET6 : AF_INET, cand, tmp) != 1)
                return; /* garbage: keep the proxy's own address */
            memcpy(out, cand, b - a + 1);
            if (!in_cidrs(cand, cfg->server.trusted_proxies, cfg->server.ntrusted_proxies))
                return;
        }
        end = start > 0 ? start - 1 : 0;
    }
}

const gw_tier_conf_t *gw_identity_tier(const gw_config_t *cfg, const gw_key_conf_t *key)
{
    return key != NULL ? key->tier_conf : cfg->anonymous_tier;
}
