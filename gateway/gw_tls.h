/* gateway/gw_tls.h: the clients' TLS (server.tls): the server SSL_CTX of a
 * certificate chain and its key, HTTP/2 offered by ALPN beside HTTP/1.1.
 *
 * Loaded by the configuration check (cfg_tls.c: --check, start,
 * every reload) to prove the files load, and by each worker for its
 * listeners (srv_worker.c). A reload starts new workers, so a certificate
 * replaced on disk is served after SIGHUP even when no key changed. */
#ifndef GW_TLS_H
#define GW_TLS_H

#include <stddef.h>

#include <openssl/ssl.h>

/* The server context of cert_file (PEM, the leaf then its chain) and
 * key_file (PEM), TLS 1.2 and up, with ALPN h2 (when http2) and http/1.1.
 * NULL on failure, with why in err: the file named and OpenSSL's reason,
 * never a byte of the files. */
SSL_CTX *gw_tls_server_ctx(const char *cert_file, const char *key_file, int http2, char *err, size_t errlen);

/* The SHA-256 fingerprint of ctx's certificate, as 64 hex digits, into out
 * (65 bytes); "" if it has none. */
void gw_tls_fingerprint(SSL_CTX *ctx, char out[65]);

#endif
