/* admin/admin.c: the admin router, authentication and small helpers. */
#include "admin/admin.h"

#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "admin/admin_int.h"
#include "base/sl_buf.h"
#include "base/sl_http.h"
#include "base/sl_parse.h"

#define SSE_TICK_MS 100

int admin_send_text(h2o_req_t *req, int status, const char *content_type, const char *body, size_t len)
{
    h2o_iovec_t copy = h2o_strdup(&req->pool, body, len);
    sl_http_send(req, status, content_type, copy.base, copy.len);
    return 0;
}

int admin_send_json(h2o_req_t *req, int status, cJSON *doc)
{
    char *json = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    admin_send_text(req, status, "application/json", json, strlen(json));
    cJSON_free(json);
    return 0;
}

uint64_t admin_parse_u64(const char *p, size_t n, uint64_t dflt)
{
    uint64_t v;
    return sl_parse_u64(p, n, UINT64_MAX, &v) == SL_OK ? v : dflt;
}

const char *admin_query_value(h2o_req_t *req, const char *name, size_t *len)
{
    if (req->query_at == SIZE_MAX)
        return NULL;
    const char *q = req->path.base + req->query_at + 1, *end = req->path.base + req->path.len;
    size_t nlen = strlen(name);
    while (q < end) {
        const char *amp = memchr(q, '&', (size_t)(end - q));
        const char *stop = amp ? amp : end;
        if ((size_t)(stop - q) > nlen && memcmp(q, name, nlen) == 0 && q[nlen] == '=') {
            *len = (size_t)(stop - q - nlen - 1);
            return q + nlen + 1;
        }
        q = stop + 1;
    }
    return NULL;
}

uint64_t admin_query_u64(h2o_req_t *req, const char *name, uint64_t dflt)
{
    size_t len;
    const char *v = admin_query_value(req, name, &len);
    return v != NULL ? admin_parse_u64(v, len, dflt) : dflt;
}

static int route_healthz(admin_t *a, h2o_req_t *req)
{
    (void)a;
    return admin_send_text(req, 200, "application/json", H2O_STRLIT("{\"status\":\"ok\"}"));
}

static int route_readyz(admin_t *a, h2o_req_t *req)
{
    char why[200] = "";
    int ready = a->conf.ready == NULL || a->conf.ready(a->conf.data, why, sizeof(why));
    if (ready) {
        size_t n;
        admin_ep_view_t *v = admin_view_collect(a, &n);
        ready = admin_view_ready(v, n, &a->conf, why, sizeof(why));
        admin_view_free(v, n);
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "status", ready ? "ready" : "not_ready");
    if (!ready)
        cJSON_AddStringToObject(o, "reason", why);
    cJSON *cl = admin_cluster_json(a); /* degraded is still ready: the host serves alone */
    if (cl != NULL)
        cJSON_AddItemToObject(o, "cluster", cl);
    return admin_send_json(req, ready ? 200 : 503, o);
}

static const admin_route_t routes[] = {
    {"GET", "/", 0, admin_route_page}, /* holds no data: it asks for the token */
    {"GET", "/healthz", 0, route_healthz},
    {"GET", "/readyz", ADMIN_ROUTE_AUTH, route_readyz},
    {"GET", "/metrics", ADMIN_ROUTE_AUTH, admin_route_metrics},
    {"GET", "/admin/endpoints", ADMIN_ROUTE_AUTH, admin_route_endpoints},
    {"GET", "/admin/networks", ADMIN_ROUTE_AUTH, admin_route_networks},
    {"POST", "/admin/endpoints", ADMIN_ROUTE_AUTH, admin_route_epapi_add},
    {"POST", "/admin/endpoints/", ADMIN_ROUTE_AUTH | ADMIN_ROUTE_PREFIX, admin_route_drain},
    {"PATCH", "/admin/endpoints/", ADMIN_ROUTE_AUTH | ADMIN_ROUTE_PREFIX, admin_route_epapi_change},
    {"DELETE", "/admin/endpoints/", ADMIN_ROUTE_AUTH | ADMIN_ROUTE_PREFIX, admin_route_epapi_remove},
    {"GET", "/admin/config", ADMIN_ROUTE_AUTH, admin_route_config},
    {"GET", "/admin/events", ADMIN_ROUTE_AUTH, admin_route_events},
    {"GET", "/admin/events/stream", ADMIN_ROUTE_AUTH, admin_route_stream},
    {"POST", "/admin/reload", ADMIN_ROUTE_AUTH, admin_route_reload},
    {"POST", "/admin/cache/purge", ADMIN_ROUTE_AUTH, admin_route_cache_purge},
    {"GET", "/admin/keys", ADMIN_ROUTE_AUTH, admin_route_keys_list},
    {"POST", "/admin/keys", ADMIN_ROUTE_AUTH, admin_route_keys_create},
    {"PATCH", "/admin/keys/", ADMIN_ROUTE_AUTH | ADMIN_ROUTE_PREFIX, admin_route_keys_change},
    {"DELETE", "/admin/keys/", ADMIN_ROUTE_AUTH | ADMIN_ROUTE_PREFIX, admin_route_keys_revoke},
};

const admin_route_t *admin_routes(size_t *n)
{
    *n = sizeof(routes) / sizeof(routes[0]);
    return routes;
}

static int authorized(admin_t *a, h2o_req_t *req)
{
    if (a->conf.token == NULL)
        return 1;
    ssize_t i = h2o_find_header(&req->headers, H2O_TOKEN_AUTHORIZATION, -1);
    if (i < 0)
        return 0;
    h2o_iovec_t v = req->headers.entries[i].value;
    size_t tlen = strlen(a->conf.token);
    if (v.len != 7 + tlen || strncasecmp(v.base, "Bearer ", 7) != 0)
        return 0;
    return CRYPTO_memcmp(v.base + 7, a->conf.token, tlen) == 0;
}

static int path_matches(const admin_route_t *r, h2o_iovec_t path)
{
    size_t n = strlen(r->path);
    if (r->flags & ADMIN_ROUTE_PREFIX)
        return path.len > n && memcmp(path.base, r->path, n) == 0;
    return path.len == n && memcmp(path.base, r->path, n) == 0;
}

const admin_route_t *admin_route_match(h2o_iovec_t method, h2o_iovec_t path, int *path_known)
{
    *path_known = 0;
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        const admin_route_t *r = &routes[i];
        if (!path_matches(r, path))
            continue;
        *path_known = 1;
        if (h2o_memis(method.base, method.len, r->method, strlen(r->method)))
            return r;
    }
    return NULL;
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    admin_t *a = (admin_t *)self;
    int path_known;
    if (admin_guard_request(a, req)) /* before routing: every route, present and future */
        return 0;
    const admin_route_t *r = admin_route_match(req->method, req->path_normalized, &path_known);
    if (r != NULL) {
        if ((r->flags & ADMIN_ROUTE_AUTH) && a->conf.token != NULL && admin_guard_auth(a, req, authorized))
            return 0;
        return r->fn(a, req);
    }
    if (path_known)
        return admin_send_text(req, 405, "application/json", H2O_STRLIT("{\"error\":\"method not allowed\"}"));
    return admin_send_text(req, 404, "application/json", H2O_STRLIT("{\"error\":\"no such admin route\"}"));
}

admin_t *admin_register(h2o_hostconf_t *hostconf, const admin_conf_t *conf)
{
    h2o_pathconf_t *pathconf = h2o_config_register_path(hostconf, "/", 0);
    admin_t *a = (admin_t *)h2o_create_handler(pathconf, sizeof(*a));
    a->super.on_req = on_req;
    a->conf = *conf;
    admin_guard_init(&a->guard, conf->listen, conf->bound);
    h2o_timeout_init(conf->loop, &a->sse_timeout, SSE_TICK_MS);
    admin_page_init(a);
    return a;
}
