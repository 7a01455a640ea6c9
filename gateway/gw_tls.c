/* gateway/gw_tls.c: the clients' TLS context (gw_tls.h). */
#include "gateway/gw_tls.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <h2o.h>
#include <h2o/http2.h>
#include <openssl/err.h>
#include <openssl/x509.h>

/* ALPN without h2 (server.tls.http2: false): HTTP/1.1 only. */
static const h2o_iovec_t http1_only[] = {{H2O_STRLIT("http/1.1")}, {NULL}};

/* OpenSSL's reason for the failure, the first of its queue (the cause,
 * "no start line", rather than "PEM lib"); its text names no file content. */
static const char *ssl_reason(void)
{
    unsigned long e = ERR_peek_error();
    const char *r = e != 0 ? ERR_reason_error_string(e) : NULL;
    return r != NULL ? r : "not a PEM file of the expected kind";
}

/* The file must be there and readable: fopen's reason is plainer than OpenSSL's. */
static int readable(const char *what, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        snprintf(err, errlen, "%s %s: cannot open: %s", what, path, strerror(errno));
        return 0;
    }
    fclose(f);
    return 1;
}

static int load(SSL_CTX *ctx, const char *cert_file, const char *key_file, char *err, size_t errlen)
{
    if (!readable("cert_file", cert_file, err, errlen) || !readable("key_file", key_file, err, errlen))
        return 0;
    ERR_clear_error();
    if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
        snprintf(err, errlen, "cert_file %s: not a PEM certificate (chain): %s", cert_file, ssl_reason());
        return 0;
    }
    ERR_clear_error();
    if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1) {
        if (ERR_GET_REASON(ERR_peek_error()) == X509_R_KEY_VALUES_MISMATCH) {
            snprintf(err, errlen, "key_file %s is not the key of cert_file %s", key_file, cert_file);
            return 0;
        }
        snprintf(err, errlen, "key_file %s: not a PEM private key (or encrypted): %s", key_file, ssl_reason());
        return 0;
    }
    ERR_clear_error();
    if (SSL_CTX_check_private_key(ctx) != 1) {
        snprintf(err, errlen, "key_file %s is not the key of cert_file %s", key_file, cert_file);
        return 0;
    }
    return 1;
}

SSL_CTX *gw_tls_server_ctx(const char *cert_file, const char *key_file, int http2, char *err, size_t errlen)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == NULL) {
        snprintf(err, errlen, "cannot create a TLS context: %s", ssl_reason());
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    /* a key file asking for a pass phrase must fail, not read the terminal */
    SSL_CTX_set_default_passwd_cb(ctx, NULL);
    SSL_CTX_set_default_passwd_cb_userdata(ctx, (void *)"");
    if (!load(ctx, cert_file, key_file, err, errlen)) {
        ERR_clear_error();
        SSL_CTX_free(ctx);
        return NULL;
    }
    h2o_ssl_register_alpn_protocols(ctx, http2 ? h2o_alpn_protocols : http1_only);
    return ctx;
}

void gw_tls_fingerprint(SSL_CTX *ctx, char out[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    X509 *x = SSL_CTX_get0_certificate(ctx);
    out[0] = '\0';
    if (x == NULL || X509_digest(x, EVP_sha256(), md, &len) != 1)
        return;
    for (unsigned i = 0; i < len && i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

int gw_tls_check(const char *cert_file, const char *key_file, int http2, char fingerprint[65], char *why,
                 size_t whylen)
{
    SSL_CTX *ctx = gw_tls_server_ctx(cert_file, key_file, http2, why, whylen);
    if (ctx == NULL)
        return -1;
    gw_tls_fingerprint(ctx, fingerprint);
    SSL_CTX_free(ctx);
    return 0;
}
