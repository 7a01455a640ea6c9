/* config/cfg.c: sluice.yaml's top level: listen addresses, admin, state,
 * log, defaults, cross-section checks, and the load entry points. The
 * server: section is in cfg_server.c, networks and endpoints in cfg_net.c. */
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/sl_log.h"
#include "base/sl_secret.h"
#include "config/cfg_int.h"
#include "state/state_cache_redis.h"

#define CFG_MAX_FILE_BYTES (16 * 1024 * 1024)

/* ---- listen addresses ---- */

int cfg_all_chars(const char *s, size_t n, const char *set)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\0' || strchr(set, s[i]) == NULL)
            return 0;
    return 1;
}

/* Splits "host:port" / "[v6]:port"; returns why it is malformed, or NULL. */
static const char *listen_split(const char *s, char host[256], unsigned *port)
{
    const char *colon = strrchr(s, ':');
    const char *h = s, *hend;
    if (colon == NULL)
        return "expected host:port, e.g. 0.0.0.0:8545";
    if (s[0] == '[') {
        hend = strchr(s, ']');
        if (hend == NULL || hend + 1 != colon)
            return "expected [IPv6]:port, e.g. [::]:8545";
        h = s + 1;
    } else {
        hend = colon;
        if (memchr(s, ':', (size_t)(colon - s)) != NULL)
            return "IPv6 addresses must be in brackets, e.g. [::]:8545";
    }
    size_t hn = (size_t)(hend - h), pn = strlen(colon + 1);
    if (hn == 0 || hn > 255)
        return "expected host:port with a host, e.g. 0.0.0.0:8545";
    if (pn == 0 || pn > 5 || !cfg_all_chars(colon + 1, pn, "0123456789") || atoi(colon + 1) > 65535)
        return "port must be a number between 0 and 65535";
    memcpy(host, h, hn);
    host[hn] = '\0';
    *port = (unsigned)atoi(colon + 1);
    return NULL;
}

static const char *listen_check(const char *s)
{
    char host[256];
    unsigned port;
    unsigned char addr[16];
    const char *why = listen_split(s, host, &port);
    if (why != NULL)
        return why;
    if (s[0] == '[')
        return inet_pton(AF_INET6, host, addr) == 1 ? NULL : "invalid IPv6 address";
    if (cfg_all_chars(host, strlen(host), "0123456789."))
        return inet_pton(AF_INET, host, addr) == 1 ? NULL : "invalid IPv4 address";
    if (!cfg_all_chars(host, strlen(host), "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-"))
        return "host must be an IP address or a host name";
    return NULL;
}

static int listen_is_loopback(const char *s)
{
    char host[256];
    unsigned port;
    unsigned char addr[16];
    if (listen_split(s, host, &port) != NULL)
        return 0;
    if (s[0] == '[')
        return strcmp(host, "::1") == 0 ||
               (inet_pton(AF_INET6, host, addr) == 1 && memcmp(addr, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\1", 16) == 0);
    if (inet_pton(AF_INET, host, addr) == 1)
        return addr[0] == 127;
    return strcasecmp(host, "localhost") == 0;
}

void cfg_read_listen(cfg_loader_t *c, yaml_node_t *n, char **slot, int allow_off)
{
    char *s = NULL;
    if (cfg_str(c, n, &s) != SL_OK)
        return;
    const char *why = allow_off && strcmp(s, "off") == 0 ? NULL : listen_check(s);
    if (why != NULL) {
        cfg_loader_error(c, cfg_line(n), "invalid listen address '%s': %s", s, why);
        free(s);
        return;
    }
    free(*slot);
    *slot = NULL;
    if (allow_off && strcmp(s, "off") == 0)
        free(s);
    else
        *slot = s;
}



/* ---- admin, state, log ---- */

static void admin_listen(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    cfg_read_listen(c, n, &((cfg_admin_conf_t *)target)->listen, 1);
}

static const cfg_field_t admin_fields[] = {
    {"listen", CFG_FN, .fn = admin_listen},
    {"token", CFG_STR, offsetof(cfg_admin_conf_t, token)},
    {"max_connections", CFG_U32, offsetof(cfg_admin_conf_t, max_connections), 1, 65536},
    {"max_streams", CFG_U32, offsetof(cfg_admin_conf_t, max_streams), 0, 65536},
    {"heartbeat_ms", CFG_U32, offsetof(cfg_admin_conf_t, heartbeat_ms), CFG_ADMIN_HEARTBEAT_MIN_MS, 3600000},
};

static void log_level(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    char *s = NULL;
    if (cfg_str(c, n, &s) != SL_OK)
        return;
    int level = sl_log_level_parse(s);
    if (level < 0)
        cfg_loader_error(c, cfg_line(n), "unknown level '%s' (expected one of: error, warn, info, debug)", s);
    else
        ((cfg_log_conf_t *)target)->level = level;
    free(s);
}

static const char *const log_formats[] = {"text", "json"};

static void log_format(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    int json = 0;
    if (cfg_enum(c, n, log_formats, 2, &json) == SL_OK)
        ((cfg_log_conf_t *)target)->json = json;
}

static const cfg_field_t state_fields[] = {
    {"path", CFG_STR, offsetof(cfg_state_conf_t, path)},
    {"map_size_mb", CFG_U32, offsetof(cfg_state_conf_t, map_size_mb), 16, 1048576},
    {"refresh_ms", CFG_U32, offsetof(cfg_state_conf_t, refresh_ms), 10, 10000},
    {"flush_ms", CFG_U32, offsetof(cfg_state_conf_t, flush_ms), 0, 60000},
    {"event_max_count", CFG_U32, offsetof(cfg_state_conf_t, event_max_count), 10, 100000000},
    {"event_max_age_hours", CFG_U32, offsetof(cfg_state_conf_t, event_max_age_hours), 1, 87600},
    {"max_limit_cells", CFG_U32, offsetof(cfg_state_conf_t, max_limit_cells), 0, 1000000000},
};

static const cfg_field_t log_fields[] = {
    {"level", CFG_FN, .fn = log_level},
    {"format", CFG_FN, .fn = log_format},
};

#define NFIELDS(t) (sizeof(t) / sizeof((t)[0]))


static void section_admin(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    cfg_admin_conf_t *adm = &((cfg_t *)target)->admin;
    cfg_map_decode(c, n, admin_fields, NFIELDS(admin_fields), adm);
    if (adm->token != NULL) {
        sl_secret_add(adm->token);
        /* 16 bytes: out of reach of guessing even at the throttle's rate
         * (a "change-me" is not); the length is said, never the token */
        size_t len = strlen(adm->token);
        if (len < CFG_ADMIN_TOKEN_MIN) {
            size_t mark = cfg_push(c, "token");
            cfg_loader_error(c, cfg_line(cfg_get(c, n, "token")),
                         "admin.token must be at least %d bytes (it has %zu); e.g. openssl rand -hex 24",
                         CFG_ADMIN_TOKEN_MIN, len);
            cfg_pop(c, mark);
        }
    }
    if (adm->listen != NULL && adm->token == NULL && !listen_is_loopback(adm->listen)) {
        size_t mark = cfg_push(c, "listen");
        cfg_loader_error(c, cfg_line(cfg_get(c, n, "listen")),
                     "admin listener on a non-loopback address needs admin.token");
        cfg_pop(c, mark);
    }
}

static void section_state(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    cfg_state_conf_t *st = &((cfg_t *)target)->state;
    cfg_map_decode(c, n, state_fields, NFIELDS(state_fields), st);
    if (st->path != NULL && st->path[0] == '\0') {
        size_t mark = cfg_push(c, "path");
        cfg_loader_error(c, cfg_line(cfg_get(c, n, "path")), "state.path must not be empty");
        cfg_pop(c, mark);
    }
}

static void section_log(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    cfg_map_decode(c, n, log_fields, NFIELDS(log_fields), &((cfg_t *)target)->log);
}

static const cfg_field_t root_fields[] = {
    {"server", CFG_FN, .fn = cfg_section_server},
    {"admin", CFG_FN, .fn = section_admin},
    {"state", CFG_FN, .fn = section_state},
    {"cache", CFG_FN, .fn = cfg_read_cache},
    {"log", CFG_FN, .fn = section_log},
    {"networks", CFG_FN, .fn = cfg_networks, .required = 1},
    {"tiers", CFG_FN, .fn = cfg_tiers},
    {"keys", CFG_FN, .fn = cfg_read_keys},
    {"access", CFG_FN, .fn = cfg_read_access},
    {"cluster", CFG_FN, .fn = cfg_read_cluster},
};

static cfg_t *config_new(const char *name)
{
    cfg_t *cfg = sl_xcalloc(1, sizeof(*cfg));
    cfg->file = sl_xstrdup(name != NULL ? name : "<string>");
    cfg->server = (cfg_server_conf_t){
        .listen = sl_xstrdup(CFG_DEFAULT_LISTEN),
        .workers = cfg_online_cpus(),
        .max_body_bytes = CFG_DEFAULT_MAX_BODY_BYTES,
        .max_batch = CFG_DEFAULT_MAX_BATCH,
        .max_response_bytes = CFG_DEFAULT_MAX_RESPONSE_BYTES,
        .shutdown_grace_ms = CFG_DEFAULT_SHUTDOWN_GRACE_MS,
        .access_log = 1,
        .access_log_buffer_bytes = 256 * 1024,
        .cors_origins = sl_xcalloc(2, sizeof(char *)),
        .read_multiplier = 10,
        .ipv6_prefix = 64,
        .ncors_origins = 1,
        .max_connections = CFG_DEFAULT_MAX_CONNECTIONS,
        .idle_timeout_ms = CFG_DEFAULT_IDLE_TIMEOUT_MS,
        .write_timeout_ms = CFG_DEFAULT_WRITE_TIMEOUT_MS,
        .max_buffered_bytes = CFG_DEFAULT_MAX_BUFFERED_BYTES,
        .max_buffered_share = CFG_DEFAULT_MAX_BUFFERED_SHARE,
        .stalled_reset_ms = CFG_DEFAULT_STALLED_RESET_MS,
        .max_header_line_bytes = CFG_DEFAULT_MAX_HEADER_LINE_BYTES,
        .max_header_bytes = CFG_DEFAULT_MAX_HEADER_BYTES,
        .first_request_timeout_ms = CFG_DEFAULT_FIRST_REQUEST_TIMEOUT_MS,
        .ws_max_connections = CFG_DEFAULT_WS_MAX_CONNECTIONS,
        .ws_max_connections_per_identity = CFG_DEFAULT_WS_MAX_PER_IDENTITY,
        .ws_max_queued_bytes = CFG_DEFAULT_WS_MAX_QUEUED_BYTES,
        .ws_max_inflight = CFG_DEFAULT_WS_MAX_INFLIGHT,
        .ws_max_subscriptions_per_connection = CFG_DEFAULT_WS_MAX_SUBS_PER_CONNECTION,
        .ws_max_subscriptions_per_identity = CFG_DEFAULT_WS_MAX_SUBS_PER_IDENTITY,
        .ws_max_sources_per_identity = CFG_DEFAULT_WS_MAX_SOURCES_PER_IDENTITY,
        .ws_max_polled_sources_per_identity = CFG_DEFAULT_WS_MAX_POLLED_SOURCES_PER_IDENTITY,
        .ws_ping_interval_ms = CFG_DEFAULT_WS_PING_INTERVAL_MS,
        .ws_idle_timeout_ms = CFG_DEFAULT_WS_IDLE_TIMEOUT_MS,
        .ws_logs_retry_s = CFG_DEFAULT_WS_LOGS_RETRY_S,
        .ws_resume = CFG_WS_RESUME_KEYED,
        .ws_resume_s = CFG_DEFAULT_WS_RESUME_S,
    };
    cfg->server.cors_origins[0] = sl_xstrdup("*");
    cfg->admin.listen = sl_xstrdup(CFG_DEFAULT_ADMIN_LISTEN);
    cfg->admin.max_connections = CFG_DEFAULT_ADMIN_MAX_CONNECTIONS;
    cfg->admin.max_streams = CFG_DEFAULT_ADMIN_MAX_STREAMS;
    cfg->admin.heartbeat_ms = CFG_DEFAULT_ADMIN_HEARTBEAT_MS;
    cfg->state.path = sl_xstrdup(CFG_DEFAULT_STATE_PATH);
    cfg->cache.enabled = 1;
    cfg->cache.max_mb = CFG_DEFAULT_CACHE_MB;
    cfg->cache.max_entry_kb = CFG_DEFAULT_CACHE_MAX_ENTRY_KB;
    cfg->cache.caller_share_pct = CFG_DEFAULT_CACHE_CALLER_SHARE_PCT;
    cfg->cache.redis_ttl_s = STATE_CACHE_REDIS_DEFAULT_TTL_S;
    cfg->cache.redis_wait_ms = STATE_CACHE_REDIS_DEFAULT_WAIT_MS;
    cfg->state.map_size_mb = CFG_DEFAULT_MAP_SIZE_MB;
    cfg->state.refresh_ms = 50;
    cfg->state.flush_ms = 100;
    cfg->state.event_max_count = CFG_DEFAULT_EVENT_MAX_COUNT;
    cfg->state.event_max_age_hours = CFG_DEFAULT_EVENT_MAX_AGE_HOURS;
    cfg->log.level = SL_LOG_INFO;
    return cfg;
}

static sl_err_t load_string(const char *yaml, size_t len, const char *name, cfg_extra_ep_t *eps, size_t neps,
                            cfg_t **out, cfg_errors_t *errs)
{
    yaml_document_t doc;
    *out = NULL;
    errs->items = NULL;
    errs->count = 0;
    if (cfg_yaml_load(yaml, len, &doc, errs) != SL_OK)
        return SL_ERR_CONFIG;
    cfg_extra_merge(&doc, eps, neps, errs);
    cfg_loader_t c = {.doc = &doc, .errs = errs, .path = SL_BUF_INIT};
    cfg_t *cfg = config_new(name);
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    cfg_map_decode(&c, root, root_fields, NFIELDS(root_fields), cfg);
    cfg_check_keys(&c, cfg);
    cfg_cache_finish(&c, root, cfg);
    /* one address gets a share, so others still find room; at least 8 (a
     * browser opens six to a host) */
    uint32_t share = cfg->server.max_connections / 4 < 8 ? 8 : cfg->server.max_connections / 4;
    if (cfg->server.max_connections_per_address == 0)
        cfg->server.max_connections_per_address = share < cfg->server.max_connections ? share
                                                                                        : cfg->server.max_connections;
    cfg->cluster.stream_max = cfg->state.event_max_count;
    yaml_document_delete(&doc);
    sl_buf_dispose(&c.path);
    if (errs->count > 0) {
        cfg_destroy(cfg);
        return SL_ERR_CONFIG;
    }
    cfg_extra_mark(cfg, eps, neps);
    *out = cfg;
    return SL_OK;
}

sl_err_t cfg_load_string(const char *yaml, size_t len, const char *name, cfg_t **out, cfg_errors_t *errs)
{
    return load_string(yaml, len, name, NULL, 0, out, errs);
}

sl_err_t cfg_load(const char *path, cfg_t **out, cfg_errors_t *errs)
{
    return cfg_load_extra(path, NULL, 0, out, errs);
}

sl_err_t cfg_load_extra(const char *path, cfg_extra_ep_t *eps, size_t neps, cfg_t **out, cfg_errors_t *errs)
{
    sl_buf_t b = SL_BUF_INIT;
    sl_err_t err = SL_ERR_IO;
    char chunk[65536];
    size_t n;
    *out = NULL;
    errs->items = NULL;
    errs->count = 0;
    FILE *f = fopen(path, "r");
    if (f == NULL)
        goto cleanup;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0 && b.len <= CFG_MAX_FILE_BYTES)
        sl_buf_append(&b, chunk, n);
    if (ferror(f))
        goto cleanup;
    if (b.len > CFG_MAX_FILE_BYTES) {
        errno = EFBIG;
        goto cleanup;
    }
    err = load_string(b.base != NULL ? b.base : "", b.len, path, eps, neps, out, errs);
cleanup:
    if (err == SL_ERR_IO) {
        sl_buf_t msg = SL_BUF_INIT;
        sl_buf_printf(&msg, "cannot read the config file: %s", strerror(errno));
        cfg_errors_add(errs, 0, "", msg.base);
        sl_buf_dispose(&msg);
    }
    if (f != NULL)
        fclose(f);
    sl_buf_dispose(&b);
    return err;
}

void cfg_destroy(cfg_t *cfg)
{
    if (cfg == NULL)
        return;
    free(cfg->file);
    free(cfg->server.listen);
    free(cfg->server.ws_listen);
    cfg_tls_dispose(&cfg->server.tls);
    cfg_strv_free(cfg->server.cors_origins, cfg->server.ncors_origins);
    cfg_strv_free(cfg->server.trusted_proxies, cfg->server.ntrusted_proxies);
    free(cfg->admin.listen);
    free(cfg->admin.token);
    free(cfg->state.path);
    free(cfg->cache.path);
    for (size_t i = 0; i < cfg->nnetworks; i++)
        cfg_network_dispose(&cfg->networks[i]);
    free(cfg->networks);
    for (size_t i = 0; i < cfg->ntiers; i++)
        free(cfg->tiers[i].name);
    free(cfg->tiers);
    for (size_t i = 0; i < cfg->nkeys; i++) {
        free(cfg->keys[i].tier);
        free(cfg->keys[i].name);
        cfg_key_scope_dispose(&cfg->keys[i].scope);
        free(cfg->keys[i].jwt.public_key_file);
        free(cfg->keys[i].jwt.audience);
    }
    free(cfg->keys);
    cfg_cluster_dispose(&cfg->cluster);
    free(cfg);
}

const pool_network_conf_t *cfg_network(const cfg_t *cfg, const char *name, size_t len)
{
    for (size_t i = 0; cfg != NULL && i < cfg->nnetworks; i++) {
        const char *n = cfg->networks[i].name;
        if (strlen(n) == len && memcmp(n, name, len) == 0)
            return &cfg->networks[i];
    }
    return NULL;
}
