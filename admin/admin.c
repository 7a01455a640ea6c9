#include "admin/admin.h"

#include <openssl/crypto.h>
#include <string.h>

#include "base/sl_buf.h"
#include "base/sl_http.h"

struct admin {
    h2o_handler_t super;
    admin_conf_t conf;
};

typedef int (*admin_route_fn)(admin_t *a, h2o_req_t *req);

typedef struct admin_route {
    const char *method;
    const char *path;
    int needs_auth;
    admin_route_fn fn;
} admin_route_t;

static int send_json(h2o_req_t *req, int status, const char *json)
{
    h2o_iovec_t body = h2o_strdup(&req->pool, json, SIZE_MAX);
    sl_http_send(req, status, "application/json", body.base, body.len);
    return 0;
}

static int route_healthz(admin_t *a, h2o_req_t *req)
{
    (void)a;
    return send_json(req, 200, "{\"status\":\"ok\"}");
}

static int route_readyz(admin_t *a, h2o_req_t *req)
{
    char why[200] = "";
    int ready = a->conf.ready == NULL || a->conf.ready(a->conf.data, why, sizeof(why));
    sl_buf_t b = SL_BUF_INIT;
    sl_buf_printf(&b, "{\"status\":\"%s\",\"reason\":", ready ? "ready" : "not_ready");
    sl_buf_append_json_str(&b, why, strlen(why));
    sl_buf_append_char(&b, '}');
    send_json(req, ready ? 200 : 503, b.base);
    sl_buf_dispose(&b);
    return 0;
}

static const admin_route_t routes[] = {
    {"GET", "/healthz", 0, route_healthz},
    {"GET", "/readyz", 1, route_readyz},
};

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

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    admin_t *a = (admin_t *)self;
    h2o_iovec_t path = req->path_normalized;
    int path_known = 0;
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        const admin_route_t *r = &routes[i];
        if (strlen(r->path) != path.len || memcmp(r->path, path.base, path.len) != 0)
            continue;
        path_known = 1;
        if (!h2o_memis(req->method.base, req->method.len, r->method, strlen(r->method)))
            continue;
        if (r->needs_auth && !authorized(a, req)) {
            h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_WWW_AUTHENTICATE, NULL,
                           H2O_STRLIT("Bearer realm=\"sluice admin\""));
            return send_json(req, 401, "{\"error\":\"missing or wrong bearer token\"}");
        }
        return r->fn(a, req);
    }
    if (path_known)
        return send_json(req, 405, "{\"error\":\"method not allowed\"}");
    return send_json(req, 404, "{\"error\":\"no such admin route\"}");
}

admin_t *admin_register(h2o_hostconf_t *hostconf, const admin_conf_t *conf)
{
    h2o_pathconf_t *pathconf = h2o_config_register_path(hostconf, "/", 0);
    admin_t *a = (admin_t *)h2o_create_handler(pathconf, sizeof(*a));
    a->super.on_req = on_req;
    a->conf = *conf;
    return a;
}
