/* gateway/gw_jwt.h: a key's jwt: (issue 33). A call with such a key must
 * carry Authorization: Bearer <JWT>, signed ES256 (P-256) or RS256 by the
 * key's public_key_file, whose exp is to come and (with audience) whose aud
 * names it. Here: the header, base64url, the JSON and the signature (OpenSSL
 * EVP); policy/jwt.h decides the claims. The public keys are read once per
 * worker, on first use. */
#ifndef GW_JWT_H
#define GW_JWT_H

#include <stddef.h>

#include <h2o.h>

#include "config/cfg.h"

typedef struct gw_jwt_keys gw_jwt_keys_t;

/* 1 if key has no jwt: or the request's token holds; else 0 and
 * msg[0..cap) says what is wrong (missing, bad signature, expired, wrong
 * audience). *keys is the worker's cache of public keys (NULL at first). */
int gw_jwt_admit(gw_jwt_keys_t **keys, const cfg_key_conf_t *key, h2o_req_t *req, char *msg, size_t cap);

#endif
