/* config/cfg_server.c: the server: section (listeners, workers, bounds
 * on connections, headers, buffers and WebSocket, CORS, trusted proxies,
 * trace header, resume) and the checks between its keys. */
#include <arpa/inet.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/cfg_int.h"

/* ---- server ---- */

uint32_t cfg_online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 256 ? 256 : (uint32_t)n;
}

static void server_listen(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    cfg_read_listen(c, n, &((cfg_server_conf_t *)target)->listen, 0);
}

/* "off", or an address ("not set" is the main port + 1, best effort). */
static void server_ws_listen(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    cfg_server_conf_t *srv = target;
    char *s = NULL;
    if (cfg_str(c, n, &s) != SL_OK)
        return;
    srv->ws_listen_off = strcmp(s, "off") == 0;
    free(s);
    if (!srv->ws_listen_off)
        cfg_read_listen(c, n, &srv->ws_listen, 0);
}

static const char *const ws_resume_modes[] = {"off", "keyed", "all"}; /* CFG_WS_RESUME_* */

static void server_ws_resume(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    int mode = 0;
    if (cfg_enum(c, n, ws_resume_modes, 3, &mode) == SL_OK)
        ((cfg_server_conf_t *)target)->ws_resume = mode;
}

static void server_workers(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    char *s = NULL;
    uint64_t v = 0;
    if (cfg_str(c, n, &s) != SL_OK)
        return;
    if (strcmp(s, "auto") == 0)
        ((cfg_server_conf_t *)target)->workers = cfg_online_cpus();
    else if (cfg_uint(c, n, 1, 256, &v) == SL_OK)
        ((cfg_server_conf_t *)target)->workers = (uint32_t)v;
    free(s);
}

/* The value is echoed into a response header. */
static const char *origin_check(const char *s)
{
    if (s[0] == '\0' || strpbrk(s, " \t\r\n,") != NULL)
        return "an origin must be '*' or one origin like https://app.example, without spaces or commas";
    return NULL;
}

/* "10.0.0.0/8", "::1", "192.168.1.7/32" */
static const char *cidr_check(const char *s)
{
    char addr[64];
    unsigned char buf[16];
    const char *slash = strchr(s, '/');
    size_t n = slash ? (size_t)(slash - s) : strlen(s);
    if (n == 0 || n >= sizeof(addr))
        return "expected an IP address or CIDR (e.g. 10.0.0.0/8)";
    memcpy(addr, s, n);
    addr[n] = '\0';
    int v6 = strchr(addr, ':') != NULL;
    if (inet_pton(v6 ? AF_INET6 : AF_INET, addr, buf) != 1)
        return "expected an IP address or CIDR (e.g. 10.0.0.0/8)";
    if (slash != NULL) {
        char *end;
        long bits = strtol(slash + 1, &end, 10);
        if (*end != '\0' || slash[1] == '\0' || bits < 0 || bits > (v6 ? 128 : 32))
            return "the prefix length after / is out of range";
    }
    return NULL;
}

static void server_proxies(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    cfg_server_conf_t *srv = target;
    char **v = NULL;
    size_t nv = 0;
    if (cfg_str_list(c, n, cidr_check, &v, &nv) != SL_OK)
        return;
    cfg_strv_free(srv->trusted_proxies, srv->ntrusted_proxies);
    srv->trusted_proxies = v;
    srv->ntrusted_proxies = nv;
}

/* server.trace_header: request | all */
static void server_trace(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    cfg_server_conf_t *srv = target;
    char *s = NULL;
    if (cfg_str(c, n, &s) != SL_OK)
        return;
    if (strcmp(s, "all") == 0 || strcmp(s, "request") == 0)
        srv->trace_all = strcmp(s, "all") == 0;
    else
        cfg_loader_error(c, cfg_line(n), "trace_header must be request or all");
    free(s);
}

static void server_cors(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    cfg_server_conf_t *srv = target;
    char **v = NULL;
    size_t nv = 0;
    if (cfg_str_list(c, n, origin_check, &v, &nv) != SL_OK)
        return;
    cfg_strv_free(srv->cors_origins, srv->ncors_origins);
    srv->cors_origins = v;
    srv->ncors_origins = nv;
}

static const cfg_field_t server_fields[] = {
    {"listen", CFG_FN, .fn = server_listen},
    {"workers", CFG_FN, .fn = server_workers},
    {"max_body_bytes", CFG_SIZE, offsetof(cfg_server_conf_t, max_body_bytes), 1, UINT64_C(1) << 30},
    {"max_batch", CFG_U32, offsetof(cfg_server_conf_t, max_batch), 1, 10000},
    {"max_response_bytes", CFG_SIZE, offsetof(cfg_server_conf_t, max_response_bytes), 1, UINT64_C(1) << 34},
    {"shutdown_grace_ms", CFG_U32, offsetof(cfg_server_conf_t, shutdown_grace_ms), 0, 3600000},
    {"access_log", CFG_BOOL, offsetof(cfg_server_conf_t, access_log)},
    {"access_log_buffer_bytes", CFG_SIZE, offsetof(cfg_server_conf_t, access_log_buffer_bytes), 8192,
     UINT64_C(1) << 26},
    {"cors_origins", CFG_FN, .fn = server_cors},
    {"trace_header", CFG_FN, .fn = server_trace},
    {"trusted_proxies", CFG_FN, .fn = server_proxies},
    {"read_multiplier", CFG_U32, offsetof(cfg_server_conf_t, read_multiplier), 1, 1000},
    {"max_connections", CFG_U32, offsetof(cfg_server_conf_t, max_connections), 1, 1000000},
    {"idle_timeout_ms", CFG_U32, offsetof(cfg_server_conf_t, idle_timeout_ms), 100, 3600000},
    {"write_timeout_ms", CFG_U32, offsetof(cfg_server_conf_t, write_timeout_ms), 100, 3600000},
    {"max_buffered_bytes", CFG_SIZE, offsetof(cfg_server_conf_t, max_buffered_bytes), 1024 * 1024,
     UINT64_C(1) << 40},
    {"max_buffered_share", CFG_DOUBLE, offsetof(cfg_server_conf_t, max_buffered_share)},
    {"stalled_reset_ms", CFG_U32, offsetof(cfg_server_conf_t, stalled_reset_ms), 0, 3600000},
    /* h2o itself answers 400 to a head over H2O_MAX_REQLEN (8 KiB + 4 KiB per
     * header, 408 KiB): limits past 256 KiB would never be reached */
    {"max_header_line_bytes", CFG_U32, offsetof(cfg_server_conf_t, max_header_line_bytes), 256, 256 * 1024},
    {"max_header_bytes", CFG_U32, offsetof(cfg_server_conf_t, max_header_bytes), 1024, 256 * 1024},
    {"ipv6_prefix", CFG_U32, offsetof(cfg_server_conf_t, ipv6_prefix), 1, 128},
    {"max_connections_per_address", CFG_U32, offsetof(cfg_server_conf_t, max_connections_per_address), 1,
     1000000},
    {"first_request_timeout_ms", CFG_U32, offsetof(cfg_server_conf_t, first_request_timeout_ms), 100, 3600000},
    {"ws_listen", CFG_FN, .fn = server_ws_listen},
    {"ws_max_connections", CFG_U32, offsetof(cfg_server_conf_t, ws_max_connections), 1, 1000000},
    {"ws_max_connections_per_identity", CFG_U32, offsetof(cfg_server_conf_t, ws_max_connections_per_identity), 1,
     1000000},
    {"ws_max_queued_bytes", CFG_SIZE, offsetof(cfg_server_conf_t, ws_max_queued_bytes), 4096, UINT64_C(1) << 32},
    {"ws_max_inflight", CFG_U32, offsetof(cfg_server_conf_t, ws_max_inflight), 1, 100000},
    {"ws_max_subscriptions_per_connection", CFG_U32, offsetof(cfg_server_conf_t, ws_max_subscriptions_per_connection),
     1, 1000000},
    {"ws_max_subscriptions_per_identity", CFG_U32, offsetof(cfg_server_conf_t, ws_max_subscriptions_per_identity), 1,
     10000000},
    {"ws_max_sources_per_identity", CFG_U32, offsetof(cfg_server_conf_t, ws_max_sources_per_identity), 1, 1000000},
    {"ws_max_polled_sources_per_identity", CFG_U32, offsetof(cfg_server_conf_t, ws_max_polled_sources_per_identity),
     0, 100000},
    {"ws_ping_interval_ms", CFG_U32, offsetof(cfg_server_conf_t, ws_ping_interval_ms), 0, 3600000},
    {"ws_idle_timeout_ms", CFG_U32, offsetof(cfg_server_conf_t, ws_idle_timeout_ms), 1000, 86400000},
    {"ws_logs_retry_s", CFG_U32, offsetof(cfg_server_conf_t, ws_logs_retry_s), 1, 3600},
    {"ws_resume", CFG_FN, .fn = server_ws_resume},
    {"ws_resume_s", CFG_U32, offsetof(cfg_server_conf_t, ws_resume_s), 1, 3600},
    {"tls", CFG_FN, .fn = cfg_server_tls},
};

#define NFIELDS(t) (sizeof(t) / sizeof((t)[0]))

static void server_error(cfg_loader_t *c, yaml_node_t *n, const char *key, const char *msg, unsigned long long a,
                         unsigned long long b)
{
    size_t mark = cfg_push(c, key);
    cfg_loader_error(c, cfg_line(cfg_get(c, n, key)), msg, a, b);
    cfg_pop(c, mark);
}

/* 1 if key was in the mapping (given: cfg_map_decode's mask over server_fields). */
static int server_given(uint64_t given, const char *key)
{
    for (size_t i = 0; i < sizeof(server_fields) / sizeof(server_fields[0]); i++)
        if (strcmp(server_fields[i].key, key) == 0)
            return (given >> i) & 1;
    return 0;
}

/* Limits that must agree with each other. An unset max_buffered_bytes grows
 * to max_response_bytes, so a large answer limit alone stays valid. */
static void check_server(cfg_loader_t *c, yaml_node_t *n, cfg_server_conf_t *srv, uint64_t given)
{
    if (srv->max_buffered_bytes < srv->max_response_bytes) {
        if (server_given(given, "max_buffered_bytes"))
            server_error(c, n, "max_buffered_bytes",
                         "%llu is below server.max_response_bytes (%llu): one answer of the largest size allowed "
                         "would not fit",
                         (unsigned long long)srv->max_buffered_bytes, (unsigned long long)srv->max_response_bytes);
        else
            srv->max_buffered_bytes = srv->max_response_bytes;
    }
    /* a share of 0 would refuse every call, over 1 would be no share */
    if (!(srv->max_buffered_share > 0 && srv->max_buffered_share <= 1))
        server_error(c, n, "max_buffered_share", "must be above 0 and at most 1 (a fraction of max_buffered_bytes)",
                     0, 0);
    if (srv->max_connections_per_address > srv->max_connections) {
        server_error(c, n, "max_connections_per_address", "%llu is above server.max_connections (%llu)",
                     srv->max_connections_per_address, srv->max_connections);
    }
    if (srv->max_header_line_bytes > srv->max_header_bytes)
        server_error(c, n, server_given(given, "max_header_line_bytes") ? "max_header_line_bytes" : "max_header_bytes",
                     "max_header_line_bytes (%llu) must not exceed max_header_bytes (%llu)",
                     srv->max_header_line_bytes, srv->max_header_bytes);
    /* a live peer answers a ping within the idle timeout: pings must come first */
    if (srv->ws_ping_interval_ms != 0 && srv->ws_idle_timeout_ms <= srv->ws_ping_interval_ms)
        server_error(c, n, server_given(given, "ws_idle_timeout_ms") ? "ws_idle_timeout_ms" : "ws_ping_interval_ms",
                     "ws_idle_timeout_ms (%llu) must be above ws_ping_interval_ms (%llu): a client answers pings "
                     "with pongs, and those keep it open", srv->ws_idle_timeout_ms, srv->ws_ping_interval_ms);
    if (srv->ws_max_connections_per_identity > srv->ws_max_connections &&
        !server_given(given, "ws_max_connections_per_identity"))
        srv->ws_max_connections_per_identity = srv->ws_max_connections; /* the default, within a lower cap */
    if (srv->ws_max_connections_per_identity > srv->ws_max_connections)
        server_error(c, n, "ws_max_connections_per_identity", "%llu is above server.ws_max_connections (%llu)",
                     srv->ws_max_connections_per_identity, srv->ws_max_connections);
    if (srv->ws_listen != NULL && srv->listen != NULL && strcmp(srv->ws_listen, srv->listen) == 0) {
        size_t mark = cfg_push(c, "ws_listen");
        cfg_loader_error(c, cfg_line(cfg_get(c, n, "ws_listen")),
                     "ws_listen is server.listen itself (%s): the main port serves WebSocket already; use another "
                     "port, or off", srv->listen);
        cfg_pop(c, mark);
    }
}

void cfg_section_server(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    cfg_server_conf_t *srv = &((cfg_t *)target)->server;
    uint64_t given = cfg_map_decode(c, n, server_fields, NFIELDS(server_fields), srv);
    check_server(c, n, srv, given);
}
