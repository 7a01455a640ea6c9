/* wire/url.h: upstream URLs, parsed strictly and redacted for display.
 *
 * Provider URLs carry API keys (Alchemy /v2/<key>, Infura /v3/<key>,
 * QuickNode /<token>/, Helius ?api-key=<key>, user:pass@), so every URL that
 * reaches a log line, an error message or the admin API goes through
 * wire_url_redact() first. Pure functions: no I/O; redaction only reads the
 * secret registry (base/sl_secret.h). Safe to call from any process. */
#ifndef WIRE_URL_H
#define WIRE_URL_H

#include <stddef.h>
#include <stdint.h>

#include "base/sl_err.h"

#define WIRE_URL_MAX_LEN 4096   /* whole url, bytes */

typedef struct wire_url {
    int https;              /* 1 for https:// */
    char host[256];         /* lower-cased; IPv6 without brackets */
    int host_is_ip;         /* 1 if host is an IPv4 or IPv6 literal */
    uint16_t port;          /* explicit or 80/443 */
    char path[2048];        /* path + "?" + query, at least "/"; as written (no decoding) */
    int has_userinfo;
    char userinfo[256];     /* "user:password" percent-decoded (HTTP Basic credentials), "" if none */
} wire_url_t;

/* Parses an absolute http(s) URL into *out. Strict: scheme http or https
 * (any case), non-empty host, port 1..65535, no fragment, no spaces, control
 * or non-ASCII bytes, IPv6 literals in brackets.
 * Errors: SL_ERR_PARSE (malformed), SL_ERR_TOO_LARGE (url, host or path over
 * its limit). *out is unspecified on error. */
SL_MUST_CHECK sl_err_t wire_url_parse(const char *url, wire_url_t *out);

/* Why url does not parse, as a fixed human-readable string ("scheme must be
 * http or https"), or NULL if it parses. Never quotes the url. */
const char *wire_url_parse_error(const char *url);

/* Returns url with its secret-looking parts replaced by "***" (heap; caller
 * frees): user-info becomes "***@"; a path segment is kept only if it is at
 * most 10 bytes of [a-z0-9._-] and does not look like a hex/base58 token of
 * 8 or more bytes; query parameter names are kept, values hidden. Any
 * registered secret still present is scrubbed too. Never fails: an
 * unparseable url gives "<invalid url>". */
char *wire_url_redact(const char *url);

/* Calls fn once for each part of url that wire_url_redact() hides (the
 * user-info, its user and password halves, hidden path segments and query
 * values), so the caller can register them as secrets. s is not
 * NUL-terminated. Does nothing if url does not parse. */
void wire_url_each_secret(const char *url, void (*fn)(const char *s, size_t n, void *arg), void *arg);

/* ---- WebSocket URLs: ws:// and wss:// (an endpoint's ws_url) ----
 * The same grammar as http(s) URLs with another scheme: ws is http, wss is
 * https (RFC 6455 section 3). */

/* url with ws:// turned into http:// and wss:// into https:// (heap; caller
 * frees), or NULL if its scheme is neither (any case). */
char *wire_url_ws_as_http(const char *url);

/* wire_url_redact() of a ws(s) URL, its scheme kept ("wss://host/" and the hidden parts).
 * "<invalid url>" if it is not one. */
char *wire_url_redact_ws(const char *url);

/* ---- Redis server URLs: redis://[[user]:password@]host[:port][/db] ---- */

#define WIRE_REDIS_DEFAULT_PORT 6379

/* A parsed Redis URL. The strings are the struct's own (heap), freed by
 * wire_redis_url_dispose; user and password are percent-decoded (%40 for an
 * '@' inside them). */
typedef struct wire_redis_url {
    int tls;                      /* rediss:// (set as soon as the scheme is read) */
    char *user;                   /* ACL user; NULL: the default user */
    char *password;               /* NULL: none */
    const char *password_raw;     /* the password as written, escapes and all (into the url), or NULL */
    size_t password_raw_len;
    char *host;                   /* a name or an address; an IPv6 address without brackets */
    uint16_t port;                /* as written, or WIRE_REDIS_DEFAULT_PORT */
    uint32_t db;                  /* the database after '/', 0 without */
} wire_redis_url_t;

/* Parses url into *out (zeroed first). Returns NULL, or why url is malformed
 * as a fixed string naming the part that is wrong, never quoting the url:
 * the password is a secret. The parts read before a failure stay in *out
 * (password_raw as soon as the user-info is found, password once decoded),
 * so the caller can register the password whatever follows it; call
 * wire_redis_url_dispose either way. */
const char *wire_redis_url_parse(const char *url, wire_redis_url_t *out);

/* The URL for logs and --check (heap; caller frees): scheme, "***@" for a
 * password (the user is left out too), host (an IPv6 one in brackets), port
 * and database always written: redis://[***@]host:port/db. */
char *wire_redis_url_redact(const wire_redis_url_t *u);

void wire_redis_url_dispose(wire_redis_url_t *u);

#endif
