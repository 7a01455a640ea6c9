/* config/cfg_cluster.c: the cluster: section (several hosts through
 * Redis).
 *
 *   cluster: { redis: "redis://[[user]:password@]host[:port][/db]", host: NAME,
 *              prefix: "sluice:", timeout_ms: 250 }
 *
 * The password is a secret: registered before anything could print it, and
 * never quoted by an error (which names the part of the URL that is wrong,
 * not its text). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/sl_secret.h"
#include "config/cfg_int.h"
#include "wire/url.h"

#define NFIELDS(t) (sizeof(t) / sizeof((t)[0]))

static int all_in(const char *s, size_t n, const char *set)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\0' || strchr(set, s[i]) == NULL)
            return 0;
    return 1;
}

/* Registers the password of u (as written and decoded) as a secret: before
 * anything could print it, and whether or not the rest of the URL parsed. */
static void register_password(const wire_redis_url_t *u)
{
    if (u->password_raw != NULL)
        sl_secret_add_n(u->password_raw, u->password_raw_len);
    if (u->password != NULL)
        sl_secret_add(u->password);
}

const char *cfg_cluster_url_parse(const char *url, state_cluster_conf_t *out)
{
    wire_redis_url_t u;
    const char *why = wire_redis_url_parse(url, &u);
    register_password(&u);
    if (u.tls)
        why = "TLS (rediss://) is not supported by this build's hiredis";
    if (why == NULL) {
        out->redis_host = u.host;
        out->redis_port = u.port;
        out->user = u.user;
        out->password = u.password;
        out->db = u.db;
        out->url_shown = wire_redis_url_redact(&u);
        u.host = u.user = u.password = NULL; /* now the config's */
    }
    wire_redis_url_dispose(&u);
    return why;
}

static void cluster_redis(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    state_cluster_conf_t *cl = target;
    char *s = NULL;
    if (cfg_str(c, n, &s) != SL_OK)
        return;
    const char *why = cfg_cluster_url_parse(s, cl);
    if (why != NULL)
        cfg_loader_error(c, cfg_line(n), "invalid Redis URL: %s", why);
    free(s);
}

static const char *name_check(const char *s, size_t max, const char *set)
{
    size_t n = strlen(s);
    return n == 0 || n > max || !all_in(s, n, set) ? "bad" : NULL;
}

static void cluster_host(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    state_cluster_conf_t *cl = target;
    char *s = NULL;
    if (cfg_str(c, n, &s) != SL_OK)
        return;
    if (name_check(s, STATE_CLUSTER_HOST_MAX, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")) {
        cfg_loader_error(c, cfg_line(n), "cluster.host must be 1-%d of [A-Za-z0-9._-]", STATE_CLUSTER_HOST_MAX);
        free(s);
        return;
    }
    free(cl->host);
    cl->host = s;
}

static void cluster_prefix(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    state_cluster_conf_t *cl = target;
    char *s = NULL;
    if (cfg_str(c, n, &s) != SL_OK)
        return;
    if (name_check(s, STATE_CLUSTER_PREFIX_MAX,
                   "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:{}/")) {
        cfg_loader_error(c, cfg_line(n), "cluster.prefix must be 1-%d of [A-Za-z0-9._:{}/-]", STATE_CLUSTER_PREFIX_MAX);
        free(s);
        return;
    }
    free(cl->prefix);
    cl->prefix = s;
}

static const cfg_field_t cluster_fields[] = {
    {"redis", CFG_FN, .fn = cluster_redis, .required = 1},
    {"host", CFG_FN, .fn = cluster_host},
    {"prefix", CFG_FN, .fn = cluster_prefix},
    {"timeout_ms", CFG_U32, offsetof(state_cluster_conf_t, timeout_ms), 10, 60000},
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

void cfg_read_cluster(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    cfg_t *cfg = target;
    state_cluster_conf_t *cl = &cfg->cluster;
    cfg->has_cluster = 1;
    cl->timeout_ms = STATE_CLUSTER_DEFAULT_TIMEOUT_MS;
    cfg_map_decode(c, n, cluster_fields, NFIELDS(cluster_fields), cl);
    if (cl->host == NULL)
        cl->host = default_host();
    if (cl->prefix == NULL)
        cl->prefix = sl_xstrdup(STATE_CLUSTER_DEFAULT_PREFIX);
}

void cfg_cluster_dispose(state_cluster_conf_t *cl)
{
    free(cl->redis_host);
    free(cl->user);
    free(cl->password);
    free(cl->url_shown);
    free(cl->host);
    free(cl->prefix);
    memset(cl, 0, sizeof(*cl));
}
