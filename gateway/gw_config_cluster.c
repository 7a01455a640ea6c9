/* gateway/gw_config_cluster.c: the cluster: section (several hosts through
 * Redis).
 *
 *   cluster: { redis: "redis://[[user]:password@]host[:port][/db]", host: NAME,
 *              prefix: "sluice:", timeout_ms: 250 }
 *
 * The password is a secret: registered before anything could print it, and
 * never quoted by an error (which names the part of the URL that is wrong,
 * not its text). */
#include <arpa/inet.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/sl_parse.h"
#include "base/sl_secret.h"
#include "gateway/gw_config_int.h"

#define NFIELDS(t) (sizeof(t) / sizeof((t)[0]))

/* %XX in user and password (for '@', ':' and '/' inside them). */
static char *decode_part(const char *s, size_t n, const char **why)
{
    char *out = sl_xmalloc(n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            out[k++] = s[i];
            continue;
        }
        int hi = i + 1 < n ? sl_hex_digit((unsigned char)s[i + 1]) : -1;
        int lo = i + 2 < n ? sl_hex_digit((unsigned char)s[i + 2]) : -1;
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
            free(out);
            *why = "a '%' in the user or password must start an escape like %40 (not %00)";
            return NULL;
        }
        out[k++] = (char)(hi * 16 + lo);
        i += 2;
    }
    out[k] = '\0';
    return out;
}

static int all_in(const char *s, size_t n, const char *set)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\0' || strchr(set, s[i]) == NULL)
            return 0;
    return 1;
}

/* The user-info part "[user]:password" (before '@'). */
static const char *parse_userinfo(const char *s, size_t n, state_cluster_conf_t *out)
{
    const char *colon = memchr(s, ':', n);
    const char *why = NULL;
    if (colon == NULL)
        return "the part before '@' must be ':password' or 'user:password'";
    size_t ulen = (size_t)(colon - s), plen = n - ulen - 1;
    sl_secret_add_n(colon + 1, plen); /* as written, escapes and all */
    char *pw = decode_part(colon + 1, plen, &why);
    if (pw == NULL)
        return why;
    sl_secret_add(pw); /* before anything else can print it */
    if (pw[0] == '\0') {
        free(pw);
        return "the password after ':' is empty (leave out ':@' for no password)";
    }
    out->password = pw;
    if (ulen > 0 && (out->user = decode_part(s, ulen, &why)) == NULL)
        return why;
    return NULL;
}

/* "host[:port]" with an IPv6 host in brackets. */
static const char *parse_hostport(const char *s, size_t n, state_cluster_conf_t *out)
{
    const char *h = s, *hend, *port = NULL;
    if (n > 0 && s[0] == '[') {
        hend = memchr(s, ']', n);
        if (hend == NULL)
            return "an IPv6 address must end with ']'";
        h = s + 1;
        if (hend + 1 < s + n) {
            if (hend[1] != ':')
                return "expected ':port' after the IPv6 address";
            port = hend + 2;
        }
        unsigned char buf[16];
        char tmp[64];
        size_t hl = (size_t)(hend - h);
        if (hl == 0 || hl >= sizeof(tmp))
            return "invalid IPv6 address";
        memcpy(tmp, h, hl);
        tmp[hl] = '\0';
        if (inet_pton(AF_INET6, tmp, buf) != 1)
            return "invalid IPv6 address";
    } else {
        hend = memchr(s, ':', n);
        if (hend != NULL)
            port = hend + 1;
        else
            hend = s + n;
        if (!all_in(h, (size_t)(hend - h), "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_"))
            return "the host must be a name or an address";
    }
    size_t hl = (size_t)(hend - h);
    if (hl == 0 || hl > 255)
        return "the URL has no host";
    out->redis_host = sl_xstrndup(h, hl);
    out->redis_port = STATE_CLUSTER_DEFAULT_PORT;
    if (port != NULL) {
        uint64_t p;
        if (sl_parse_u64(port, (size_t)(s + n - port), 65535, &p) != SL_OK || p == 0)
            return "the port must be a number between 1 and 65535";
        out->redis_port = (uint16_t)p;
    }
    return NULL;
}

const char *gw_cluster_url_parse(const char *url, state_cluster_conf_t *out)
{
    static const char scheme[] = "redis://";
    if (strncmp(url, scheme, sizeof(scheme) - 1) != 0)
        return strncmp(url, "rediss://", 9) == 0 ? "TLS (rediss://) is not supported by this build's hiredis"
                                                  : "expected redis://[:password@]host:port[/db]";
    const char *p = url + sizeof(scheme) - 1;
    const char *end = p + strlen(p);
    const char *at = memrchr(p, '@', (size_t)(end - p));
    const char *why;
    if (at != NULL) {
        if ((why = parse_userinfo(p, (size_t)(at - p), out)) != NULL)
            return why;
        p = at + 1;
    }
    const char *slash = memchr(p, '/', (size_t)(end - p));
    if ((why = parse_hostport(p, (size_t)((slash ? slash : end) - p), out)) != NULL)
        return why;
    if (slash != NULL && slash + 1 < end) {
        uint64_t db;
        if (sl_parse_u64(slash + 1, (size_t)(end - slash - 1), 100000, &db) != SL_OK)
            return "the database after '/' must be a number (0 to 100000)";
        out->db = (uint32_t)db;
    }
    char shown[400];
    int v6 = strchr(out->redis_host, ':') != NULL;
    snprintf(shown, sizeof(shown), "redis://%s%s%s%s:%u/%u", out->password ? "***@" : "", v6 ? "[" : "",
             out->redis_host, v6 ? "]" : "", (unsigned)out->redis_port, out->db);
    out->url_shown = sl_xstrdup(shown);
    return NULL;
}

static void cluster_redis(gw_cfg_t *c, yaml_node_t *n, void *target)
{
    state_cluster_conf_t *cl = target;
    char *s = NULL;
    if (gw_cfg_str(c, n, &s) != SL_OK)
        return;
    const char *why = gw_cluster_url_parse(s, cl);
    if (why != NULL)
        gw_cfg_error(c, gw_cfg_line(n), "invalid Redis URL: %s", why);
    free(s);
}

static const char *name_check(const char *s, size_t max, const char *set)
{
    size_t n = strlen(s);
    return n == 0 || n > max || !all_in(s, n, set) ? "bad" : NULL;
}

static void cluster_host(gw_cfg_t *c, yaml_node_t *n, void *target)
{
    state_cluster_conf_t *cl = target;
    char *s = NULL;
    if (gw_cfg_str(c, n, &s) != SL_OK)
        return;
    if (name_check(s, STATE_CLUSTER_HOST_MAX, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")) {
        gw_cfg_error(c, gw_cfg_line(n), "cluster.host must be 1-%d of [A-Za-z0-9._-]", STATE_CLUSTER_HOST_MAX);
        free(s);
        return;
    }
    free(cl->host);
    cl->host = s;
}

static void cluster_prefix(gw_cfg_t *c, yaml_node_t *n, void *target)
{
    state_cluster_conf_t *cl = target;
    char *s = NULL;
    if (gw_cfg_str(c, n, &s) != SL_OK)
        return;
    if (name_check(s, STATE_CLUSTER_PREFIX_MAX,
                   "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:{}/")) {
        gw_cfg_error(c, gw_cfg_line(n), "cluster.prefix must be 1-%d of [A-Za-z0-9._:{}/-]", STATE_CLUSTER_PREFIX_MAX);
        free(s);
        return;
    }
    free(cl->prefix);
    cl->prefix = s;
}

static const gw_cfg_field_t cluster_fields[] = {
    {"redis", GW_CFG_FN, .fn = cluster_redis, .required = 1},
    {"host", GW_CFG_FN, .fn = cluster_host},
    {"prefix", GW_CFG_FN, .fn = cluster_prefix},
    {"timeout_ms", GW_CFG_U32, offsetof(state_cluster_conf_t, timeout_ms), 10, 60000},
};

/* This machine's name, cut to what a cluster host name may hold. */
static char *default_host(void)
{
    char name[256] = "";
    if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0')
        snprintf(name, sizeof(name), "sluice");
    name[STATE_CLUSTER_HOST_MAX] = '\0';
    for (char *p = name; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_", *p))
            *p = '-';
    return sl_xstrdup(name);
}

void gw_cfg_cluster(gw_cfg_t *c, yaml_node_t *n, void *target)
{
    gw_config_t *cfg = target;
    state_cluster_conf_t *cl = &cfg->cluster;
    cfg->has_cluster = 1;
    cl->timeout_ms = STATE_CLUSTER_DEFAULT_TIMEOUT_MS;
    gw_cfg_map_decode(c, n, cluster_fields, NFIELDS(cluster_fields), cl);
    if (cl->host == NULL)
        cl->host = default_host();
    if (cl->prefix == NULL)
        cl->prefix = sl_xstrdup(STATE_CLUSTER_DEFAULT_PREFIX);
}

void gw_cfg_cluster_dispose(state_cluster_conf_t *cl)
{
    free(cl->redis_host);
    free(cl->user);
    free(cl->password);
    free(cl->url_shown);
    free(cl->host);
    free(cl->prefix);
    memset(cl, 0, sizeof(*cl));
}
