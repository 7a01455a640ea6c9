/* pool/pool_tls.c: one verifying client SSL_CTX per https endpoint.
 *
 * h2o 2.2.5 checks the certificate's name only when the handshake ends with
 * no pending output, which a TLS 1.3 client never has: under TLS 1.3 it
 * accepts any name. So the name (or IP) is put into the context's verify
 * parameters and OpenSSL enforces it during the handshake, whatever the
 * version. One context per endpoint because the parameters carry the host. */
#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "base/sl_log.h"
#include "pool/pool_link_int.h"

static void log_openssl(const char *what, const char *detail)
{
    unsigned long e = ERR_get_error();
    char buf[256] = "unknown error";
    if (e != 0)
        ERR_error_string_n(e, buf, sizeof(buf));
    sl_log_error("TLS: %s %s: %s", what, detail, buf);
    ERR_clear_error();
}

sl_err_t pool_tls_ctx_create(const wire_url_t *url, const char *ca_file, SSL_CTX **out)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL) {
        log_openssl("cannot create a context for", url->host);
        return SL_ERR_CONFIG;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    int ok = ca_file != NULL ? SSL_CTX_load_verify_locations(ctx, ca_file, NULL)
                             : SSL_CTX_set_default_verify_paths(ctx);
    if (ok != 1) {
        log_openssl("cannot load trusted certificates from", ca_file ? ca_file : "the system store");
        SSL_CTX_free(ctx);
        return SL_ERR_CONFIG;
    }
    X509_VERIFY_PARAM *param = SSL_CTX_get0_param(ctx);
    if (url->host_is_ip) {
        ok = X509_VERIFY_PARAM_set1_ip_asc(param, url->host);
    } else {
        X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        ok = X509_VERIFY_PARAM_set1_host(param, url->host, 0);
    }
    if (ok != 1) {
        log_openssl("cannot set the name to verify for", url->host);
        SSL_CTX_free(ctx);
        return SL_ERR_CONFIG;
    }
    *out = ctx;
    return SL_OK;
}
