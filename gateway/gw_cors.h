/* gateway/gw_cors.h: CORS for browser callers. Only origins listed in
 * server.cors_origins (or "*") get the headers, or for a key with origins:
 * (key NULL: none) only those; the rate-limit headers are exposed, or a
 * browser would hide them from the page. */
#ifndef GW_CORS_H
#define GW_CORS_H

#include <h2o.h>

#include "config/cfg.h"

/* Adds Access-Control-Allow-Origin and -Expose-Headers if the Origin is allowed. */
void gw_cors_headers(h2o_req_t *req, const cfg_t *cfg, const cfg_key_conf_t *key);
/* 1 if a WebSocket upgrade may go on: no Origin (not a browser), or one
 * server.cors_origins allows. A browser opens a socket to any origin
 * without asking first, so the check is the server's. */
int gw_cors_ws_allowed(h2o_req_t *req, const cfg_t *cfg, const cfg_key_conf_t *key);
/* Answers an OPTIONS preflight (204). */
void gw_cors_preflight(h2o_req_t *req, const cfg_t *cfg, const cfg_key_conf_t *key);

#endif
