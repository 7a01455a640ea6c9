#include "gateway/gw_cors.h"

#include <string.h>

#include "base/sl_http.h"

#define EXPOSED                                                                                     \
    "X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, X-RateLimit-Window, "             \
    "X-RateLimit-Bucket, Retry-After, X-Sluice-Endpoint, X-Sluice-Attempts, X-Sluice-Pressure, "    \
    "X-Sluice-Hedges, X-Sluice-Coalesced, X-Sluice-Trace"

/* The allowed value to echo for this request's Origin, or NULL. A key
 * with origins: (issue 33) answers for those alone, whatever
 * server.cors_origins says. */
static const char *allowed_origin(h2o_req_t *req, const cfg_t *cfg, const cfg_key_conf_t *key)
{
    ssize_t i = h2o_find_header_by_str(&req->headers, H2O_STRLIT("origin"), -1);
    if (i < 0)
        return NULL;
    h2o_iovec_t origin = req->headers.entries[i].value;
    if (key != NULL && key->scope.norigins != 0) {
        for (size_t k = 0; k < key->scope.norigins; k++)
            if (strlen(key->scope.origins[k]) == origin.len &&
                memcmp(key->scope.origins[k], origin.base, origin.len) == 0)
                return key->scope.origins[k];
        return NULL;
    }
    for (size_t k = 0; k < cfg->server.ncors_origins; k++) {
        const char *o = cfg->server.cors_origins[k];
        if (strcmp(o, "*") == 0)
            return "*";
        if (strlen(o) == origin.len && memcmp(o, origin.base, origin.len) == 0)
            return o;
    }
    return NULL;
}

int gw_cors_ws_allowed(h2o_req_t *req, const cfg_t *cfg, const cfg_key_conf_t *key)
{
    return h2o_find_header_by_str(&req->headers, H2O_STRLIT("origin"), -1) < 0 ||
           allowed_origin(req, cfg, key) != NULL;
}

void gw_cors_headers(h2o_req_t *req, const cfg_t *cfg, const cfg_key_conf_t *key)
{
    const char *origin = allowed_origin(req, cfg, key);
    if (origin == NULL)
        return;
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ACCESS_CONTROL_ALLOW_ORIGIN, NULL, origin, strlen(origin));
    if (strcmp(origin, "*") != 0)
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_VARY, NULL, H2O_STRLIT("Origin"));
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("access-control-expose-headers"), 0, NULL,
                          H2O_STRLIT(EXPOSED));
}

void gw_cors_preflight(h2o_req_t *req, const cfg_t *cfg, const cfg_key_conf_t *key)
{
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, H2O_STRLIT("POST, OPTIONS"));
    if (allowed_origin(req, cfg, key) != NULL) {
        gw_cors_headers(req, cfg, key);
        h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("access-control-allow-methods"), 0, NULL,
                              H2O_STRLIT("POST, OPTIONS"));
        h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("access-control-allow-headers"), 0, NULL,
                              H2O_STRLIT("Content-Type, X-API-Key, Authorization"));
        h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("access-control-max-age"), 0, NULL,
                              H2O_STRLIT("600"));
    }
    sl_http_send(req, 204, NULL, NULL, 0);
}
