/* config/cfg_tls.c: server.tls, the clients' TLS.
 *
 *   server: { tls: { cert_file: /etc/sluice/cert.pem, key_file: /etc/sluice/key.pem, http2: true } }
 *
 * Both files are loaded here (gw_tls.h), so --check, a start and a reload
 * refuse a missing, unreadable or mismatched pair with the file's name and
 * line, never its content. The certificate's fingerprint is kept for the
 * reload's diff: a file replaced in place shows as a change. HTTP/2 is
 * off unless http2: true. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "config/cfg_int.h"
#include "gateway/gw_tls.h"

#define NFIELDS(t) (sizeof(t) / sizeof((t)[0]))

static const cfg_field_t tls_fields[] = {
    {"cert_file", CFG_STR, offsetof(cfg_tls_conf_t, cert_file), .required = 1},
    {"key_file", CFG_STR, offsetof(cfg_tls_conf_t, key_file), .required = 1},
    {"http2", CFG_BOOL, offsetof(cfg_tls_conf_t, http2)},
};

void cfg_server_tls(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    cfg_tls_conf_t *tls = &((cfg_server_conf_t *)target)->tls;
    cfg_tls_dispose(tls);
    tls->http2 = 0; /* opt-in: see srv_worker.c tls_setup on what an h2 connection may hold */
    size_t before = c->errs->count;
    cfg_map_decode(c, n, tls_fields, NFIELDS(tls_fields), tls);
    if (c->errs->count == before && tls->cert_file != NULL && tls->key_file != NULL) {
        char why[512];
        SSL_CTX *ctx = gw_tls_server_ctx(tls->cert_file, tls->key_file, tls->http2, why, sizeof(why));
        if (ctx == NULL) {
            const char *key = strncmp(why, "key_file", 8) == 0 ? "key_file" : "cert_file";
            size_t mark = cfg_push(c, key);
            cfg_loader_error(c, cfg_line(cfg_get(c, n, key)), "%s", why);
            cfg_pop(c, mark);
        } else {
            gw_tls_fingerprint(ctx, tls->fingerprint);
            SSL_CTX_free(ctx);
        }
    }
}

void cfg_tls_dispose(cfg_tls_conf_t *tls)
{
    free(tls->cert_file);
    free(tls->key_file);
    memset(tls, 0, sizeof(*tls));
}
