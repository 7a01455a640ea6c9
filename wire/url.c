#include "wire/url.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/sl_buf.h"
#include "base/sl_parse.h"
#include "base/sl_secret.h"

/* Where the parts of a parsed url sit in the original string; redaction
 * copies what it keeps as written, so an unchanged url round-trips. */
typedef struct url_raw {
    const char *authority;    /* just after "://" */
    const char *userinfo;     /* NULL if none */
    size_t userinfo_len;
    const char *hostport;     /* host[:port] as written */
    size_t hostport_len;
    const char *rest;         /* path and query as written; may be "" */
} url_raw_t;

typedef struct url_fail {
    sl_err_t err;
    const char *why;
} url_fail_t;

static const url_fail_t url_ok = {SL_OK, NULL};

#define URL_FAIL(e, msg) ((url_fail_t){(e), (msg)})

static int is_lower_alpha(char c) { return c >= 'a' && c <= 'z'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_alpha(char c) { return is_lower_alpha(c) || (c >= 'A' && c <= 'Z'); }
static int is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
static char to_lower(char c) { return (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c; }

static url_fail_t check_bytes(const char *url)
{
    size_t n = strlen(url);
    if (n > WIRE_URL_MAX_LEN)
        return URL_FAIL(SL_ERR_TOO_LARGE, "url is longer than 4096 bytes");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)url[i];
        if (c <= 0x20 || c == 0x7f)
            return URL_FAIL(SL_ERR_PARSE, "url contains a space or control character");
        if (c >= 0x80)
            return URL_FAIL(SL_ERR_PARSE, "url contains a non-ASCII byte (percent-encode it)");
        if (c == '#')
            return URL_FAIL(SL_ERR_PARSE, "url must not contain a fragment ('#')");
    }
    return url_ok;
}

static url_fail_t parse_scheme(const char *url, wire_url_t *out, const char **after)
{
    const char *sep = strstr(url, "://");
    if (sep == NULL)
        return URL_FAIL(SL_ERR_PARSE, "url must start with http:// or https://");
    size_t n = (size_t)(sep - url);
    if (n == 4 && strncasecmp(url, "http", 4) == 0)
        out->https = 0;
    else if (n == 5 && strncasecmp(url, "https", 5) == 0)
        out->https = 1;
    else
        return URL_FAIL(SL_ERR_PARSE, "scheme must be http or https");
    *after = sep + 3;
    return url_ok;
}

static url_fail_t parse_port(const char *p, size_t n, wire_url_t *out)
{
    uint64_t v;
    if (sl_parse_u64(p, n, 65535, &v) != SL_OK || v < 1)
        return URL_FAIL(SL_ERR_PARSE, "port must be a number between 1 and 65535");
    out->port = (uint16_t)v;
    return url_ok;
}

static url_fail_t parse_ipv6(const char *p, size_t n, wire_url_t *out, size_t *used)
{
    const char *close = memchr(p, ']', n);
    if (close == NULL)
        return URL_FAIL(SL_ERR_PARSE, "IPv6 address is missing its closing ']'");
    size_t len = (size_t)(close - p) - 1;
    struct in6_addr a6;
    if (len == 0 || len >= INET6_ADDRSTRLEN)
        return URL_FAIL(SL_ERR_PARSE, "invalid IPv6 address");
    memcpy(out->host, p + 1, len);
    out->host[len] = '\0';
    if (inet_pton(AF_INET6, out->host, &a6) != 1)
        return URL_FAIL(SL_ERR_PARSE, "invalid IPv6 address");
    for (size_t i = 0; i < len; i++)
        out->host[i] = to_lower(out->host[i]);
    out->host_is_ip = 1;
    *used = len + 2;
    return url_ok;
}

/* A registered name or an IPv4 literal; underscores are tolerated because
 * some providers' host names carry them. */
static url_fail_t parse_name(const char *p, size_t n, wire_url_t *out)
{
    if (n > 255)
        return URL_FAIL(SL_ERR_TOO_LARGE, "host is longer than 255 bytes");
    int numeric = 1;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (!(is_alpha(c) || is_digit(c) || c == '-' || c == '.' || c == '_'))
            return URL_FAIL(SL_ERR_PARSE, "host contains an invalid character");
        if (c == '.' && (i == 0 || p[i - 1] == '.'))
            return URL_FAIL(SL_ERR_PARSE, "host has an empty label");
        if (!is_digit(c) && c != '.')
            numeric = 0;
        out->host[i] = to_lower(c);
    }
    out->host[n] = '\0';
    if (numeric) {
        struct in_addr a4;
        if (inet_pton(AF_INET, out->host, &a4) != 1)
            return URL_FAIL(SL_ERR_PARSE, "invalid IPv4 address");
        out->host_is_ip = 1;
    }
    return url_ok;
}

static url_fail_t parse_hostport(const char *p, size_t n, wire_url_t *out)
{
    size_t used = 0;
    url_fail_t f;
    if (n == 0)
        return URL_FAIL(SL_ERR_PARSE, "url has no host");
    if (p[0] == '[') {
        f = parse_ipv6(p, n, out, &used);
        if (f.err != SL_OK)
            return f;
        if (used < n && p[used] != ':')
            return URL_FAIL(SL_ERR_PARSE, "unexpected text after the IPv6 address");
    } else {
        const char *colon = memchr(p, ':', n);
        used = colon != NULL ? (size_t)(colon - p) : n;
        if (colon != NULL && memchr(colon + 1, ':', n - used - 1) != NULL)
            return URL_FAIL(SL_ERR_PARSE, "IPv6 addresses must be in brackets");
        if (used == 0)
            return URL_FAIL(SL_ERR_PARSE, "url has no host");
        f = parse_name(p, used, out);
        if (f.err != SL_OK)
            return f;
    }
    if (used < n)
        return parse_port(p + used + 1, n - used - 1, out);
    out->port = out->https ? 443 : 80;
    return url_ok;
}


/* Decodes %XX escapes of s[0..n) into out (NUL-terminated); 0 if an escape
 * is malformed, decodes to NUL, or out is too small. */
static int percent_decode(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)s[i];
        if (c == '%') {
            if (i + 2 >= n)
                return 0;
            int h = sl_hex_digit(s[i + 1]), l = sl_hex_digit(s[i + 2]);
            if (h < 0 || l < 0 || (h | l) == 0)
                return 0;
            c = h << 4 | l;
            i += 2;
        }
        if (o + 1 >= cap)
            return 0;
        out[o++] = (char)c;
    }
    out[o] = '\0';
    return 1;
}

static url_fail_t parse_full(const char *url, wire_url_t *out, url_raw_t *raw)
{
    memset(out, 0, sizeof(*out));
    memset(raw, 0, sizeof(*raw));
    url_fail_t f = check_bytes(url);
    if (f.err == SL_OK)
        f = parse_scheme(url, out, &raw->authority);
    if (f.err != SL_OK)
        return f;
    const char *a = raw->authority;
    size_t alen = strcspn(a, "/?");
    raw->rest = a + alen;
    raw->hostport = a;
    for (size_t i = alen; i > 0; i--) {
        if (a[i - 1] == '@') {   /* the last '@': a password may hold one */
            raw->userinfo = a;
            raw->userinfo_len = i - 1;
            raw->hostport = a + i;
            out->has_userinfo = 1;
            if (!percent_decode(a, i - 1, out->userinfo, sizeof(out->userinfo)))
                return URL_FAIL(SL_ERR_PARSE, "user-info is longer than 255 bytes or has a bad %-escape");
            break;
        }
    }
    raw->hostport_len = (size_t)(raw->rest - raw->hostport);
    f = parse_hostport(raw->hostport, raw->hostport_len, out);
    if (f.err != SL_OK)
        return f;
    size_t rlen = strlen(raw->rest);
    size_t lead = raw->rest[0] == '/' ? 0 : 1;   /* "" and "?q" get a "/" */
    if (rlen + lead >= sizeof(out->path))
        return URL_FAIL(SL_ERR_TOO_LARGE, "path and query are longer than 2047 bytes");
    out->path[0] = '/';
    memcpy(out->path + lead, raw->rest, rlen + 1);
    return url_ok;
}

sl_err_t wire_url_parse(const char *url, wire_url_t *out)
{
    url_raw_t raw;
    return parse_full(url, out, &raw).err;
}

const char *wire_url_parse_error(const char *url)
{
    wire_url_t u;
    url_raw_t raw;
    return parse_full(url, &u, &raw).why;
}

/* ---- redaction ---- */

/* Hex of 8+ bytes, or letters mixed with digits (base58/base64-ish keys). */
static int looks_like_token(const char *s, size_t n)
{
    int all_hex = 1, has_digit = 0, has_alpha = 0;
    if (n < 8)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (!is_hex(s[i]))
            all_hex = 0;
        if (is_digit(s[i]))
            has_digit = 1;
        else if (is_alpha(s[i]))
            has_alpha = 1;
        else
            return 0;
    }
    return all_hex || (has_digit && has_alpha);
}

static int segment_keep(const char *s, size_t n)
{
    if (n > 10)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(is_lower_alpha(s[i]) || is_digit(s[i]) || s[i] == '.' || s[i] == '_' || s[i] == '-'))
            return 0;
    return !looks_like_token(s, n);
}

typedef void (*emit_fn)(void *arg, int hidden, const char *s, size_t n);

static void walk_query(const char *q, emit_fn emit, void *arg)
{
    while (*q != '\0') {
        size_t n = strcspn(q, "&");
        const char *eq = memchr(q, '=', n);
        if (eq != NULL) {
            size_t name = (size_t)(eq - q) + 1;
            emit(arg, 0, q, name);
            if (n > name)
                emit(arg, 1, q + name, n - name);
        } else if (n > 0) {
            /* a bare parameter may itself be the key */
            emit(arg, !segment_keep(q, n), q, n);
        }
        q += n;
        if (*q == '&')
            emit(arg, 0, q++, 1);
    }
}

/* Emits rest (path and query as written) piece by piece, each marked hidden
 * or kept. */
static void walk_rest(const char *rest, emit_fn emit, void *arg)
{
    size_t plen = strcspn(rest, "?");
    size_t i = 0;
    while (i < plen) {
        size_t j;
        if (rest[i] == '/')
            emit(arg, 0, rest + i++, 1);
        for (j = i; j < plen && rest[j] != '/'; j++)
            ;
        if (j > i)
            emit(arg, !segment_keep(rest + i, j - i), rest + i, j - i);
        i = j;
    }
    if (rest[plen] == '?') {
        emit(arg, 0, rest + plen, 1);
        walk_query(rest + plen + 1, emit, arg);
    }
}

static void emit_redacted(void *arg, int hidden, const char *s, size_t n)
{
    if (hidden)
        sl_buf_append((sl_buf_t *)arg, "***", 3);
    else
        sl_buf_append((sl_buf_t *)arg, s, n);
}

char *wire_url_redact(const char *url)
{
    wire_url_t u;
    url_raw_t raw;
    if (url == NULL || parse_full(url, &u, &raw).err != SL_OK)
        return sl_xstrdup("<invalid url>");
    sl_buf_t b = SL_BUF_INIT, scrubbed = SL_BUF_INIT;
    sl_buf_append(&b, url, (size_t)(raw.authority - url));
    if (raw.userinfo != NULL)
        sl_buf_append_str(&b, "***@");
    sl_buf_append(&b, raw.hostport, raw.hostport_len);
    walk_rest(raw.rest, emit_redacted, &b);
    sl_secret_scrub(&scrubbed, b.base, b.len);
    sl_buf_dispose(&b);
    return sl_buf_steal(&scrubbed, NULL);
}

typedef struct secret_cb {
    void (*fn)(const char *s, size_t n, void *arg);
    void *arg;
} secret_cb_t;

static void emit_secret(void *arg, int hidden, const char *s, size_t n)
{
    secret_cb_t *cb = arg;
    if (hidden && n > 0)
        cb->fn(s, n, cb->arg);
}

void wire_url_each_secret(const char *url, void (*fn)(const char *s, size_t n, void *arg), void *arg)
{
    wire_url_t u;
    url_raw_t raw;
    secret_cb_t cb = {fn, arg};
    if (url == NULL || parse_full(url, &u, &raw).err != SL_OK)
        return;
    if (raw.userinfo != NULL && raw.userinfo_len > 0) {
        const char *colon = memchr(raw.userinfo, ':', raw.userinfo_len);
        fn(raw.userinfo, raw.userinfo_len, arg);
        if (colon != NULL) {
            size_t user = (size_t)(colon - raw.userinfo);
            if (user > 0)
                fn(raw.userinfo, user, arg);
            if (raw.userinfo_len - user - 1 > 0)
                fn(colon + 1, raw.userinfo_len - user - 1, arg);
        }
    }
    walk_rest(raw.rest, emit_secret, &cb);
}

/* ---- Redis server URLs ---- */

/* Percent-decodes a user or password (heap); NULL with *why if an escape is
 * malformed or decodes to NUL. */
static char *redis_decode_part(const char *s, size_t n, const char **why)
{
    char *out = sl_xmalloc(n + 1);
    if (!percent_decode(s, n, out, n + 1)) {
        free(out);
        *why = "a '%' in the user or password must start an escape like %40 (not %00)";
        return NULL;
    }
    return out;
}

/* The user-info part "[user]:password" (before '@'). */
static const char *redis_userinfo(const char *s, size_t n, wire_redis_url_t *out)
{
    const char *colon = memchr(s, ':', n);
    const char *why = NULL;
    if (colon == NULL)
        return "the part before '@' must be ':password' or 'user:password'";
    size_t ulen = (size_t)(colon - s);
    out->password_raw = colon + 1;
    out->password_raw_len = n - ulen - 1;
    if ((out->password = redis_decode_part(out->password_raw, out->password_raw_len, &why)) == NULL)
        return why;
    if (out->password[0] == '\0')
        return "the password after ':' is empty (leave out ':@' for no password)";
    if (ulen > 0 && (out->user = redis_decode_part(s, ulen, &why)) == NULL)
        return why;
    return NULL;
}

/* The IPv6 address h[0..n) (written in brackets). */
static const char *redis_ipv6(const char *h, size_t n)
{
    unsigned char addr[16];
    char tmp[64];
    if (n == 0 || n >= sizeof(tmp))
        return "invalid IPv6 address";
    memcpy(tmp, h, n);
    tmp[n] = '\0';
    return inet_pton(AF_INET6, tmp, addr) == 1 ? NULL : "invalid IPv6 address";
}

/* "host[:port]" with an IPv6 host in brackets. */
static const char *redis_hostport(const char *s, size_t n, wire_redis_url_t *out)
{
    const char *h = s, *hend, *port = NULL, *why;
    if (n > 0 && s[0] == '[') {
        hend = memchr(s, ']', n);
        if (hend == NULL)
            return "an IPv6 address must end with ']'";
        h = s + 1;
        if (hend + 1 < s + n) {
            if (hend[1] != ':')
                return "expected ':port' after the IPv6 address";
            port = hend + 2;
        }
        if ((why = redis_ipv6(h, (size_t)(hend - h))) != NULL)
            return why;
    } else {
        hend = memchr(s, ':', n);
        if (hend != NULL)
            port = hend + 1;
        else
            hend = s + n;
        for (const char *c = h; c < hend; c++)
            if (!(is_alpha(*c) || is_digit(*c) || *c == '.' || *c == '-' || *c == '_'))
                return "the host must be a name or an address";
    }
    size_t hl = (size_t)(hend - h);
    if (hl == 0 || hl > 255)
        return "the URL has no host";
    out->host = sl_xstrndup(h, hl);
    out->port = WIRE_REDIS_DEFAULT_PORT;
    if (port != NULL) {
        uint64_t p;
        if (sl_parse_u64(port, (size_t)(s + n - port), 65535, &p) != SL_OK || p == 0)
            return "the port must be a number between 1 and 65535";
        out->port = (uint16_t)p;
    }
    return NULL;
}

const char *wire_redis_url_parse(const char *url, wire_redis_url_t *out)
{
    memset(out, 0, sizeof(*out));
    const char *p;
    if (strncmp(url, "redis://", 8) == 0) {
        p = url + 8;
    } else if (strncmp(url, "rediss://", 9) == 0) {
        out->tls = 1;
        p = url + 9;
    } else {
        return "expected redis://[:password@]host:port[/db]";
    }
    const char *end = p + strlen(p);
    const char *at = memrchr(p, '@', (size_t)(end - p)); /* the last: a password may hold one */
    const char *why;
    if (at != NULL) {
        if ((why = redis_userinfo(p, (size_t)(at - p), out)) != NULL)
            return why;
        p = at + 1;
    }
    const char *slash = memchr(p, '/', (size_t)(end - p));
    if ((why = redis_hostport(p, (size_t)((slash ? slash : end) - p), out)) != NULL)
        return why;
    if (slash != NULL && slash + 1 < end) {
        uint64_t db;
        if (sl_parse_u64(slash + 1, (size_t)(end - slash - 1), 100000, &db) != SL_OK)
            return "the database after '/' must be a number (0 to 100000)";
        out->db = (uint32_t)db;
    }
    return NULL;
}

char *wire_redis_url_redact(const wire_redis_url_t *u)
{
    sl_buf_t b = SL_BUF_INIT;
    int v6 = u->host != NULL && strchr(u->host, ':') != NULL;
    sl_buf_printf(&b, "%s://%s%s%s%s:%u/%u", u->tls ? "rediss" : "redis", u->password ? "***@" : "", v6 ? "[" : "",
                  u->host ? u->host : "", v6 ? "]" : "", (unsigned)u->port, u->db);
    return sl_buf_steal(&b, NULL);
}

void wire_redis_url_dispose(wire_redis_url_t *u)
{
    free(u->user);
    free(u->password);
    free(u->host);
    memset(u, 0, sizeof(*u));
}

/* ---- WebSocket URLs ---- */

char *wire_url_ws_as_http(const char *url)
{
    if (url == NULL)
        return NULL;
    int tls = strncasecmp(url, "wss://", 6) == 0;
    if (!tls && strncasecmp(url, "ws://", 5) != 0)
        return NULL;
    sl_buf_t b = SL_BUF_INIT;
    sl_buf_append_str(&b, tls ? "https://" : "http://");
    sl_buf_append_str(&b, url + (tls ? 6 : 5));
    return sl_buf_steal(&b, NULL);
}

char *wire_url_redact_ws(const char *url)
{
    char *http = wire_url_ws_as_http(url);
    if (http == NULL)
        return sl_xstrdup("<invalid url>");
    char *red = wire_url_redact(http);
    free(http);
    if (strncmp(red, "http", 4) != 0)
        return red;
    sl_buf_t b = SL_BUF_INIT;
    sl_buf_append_str(&b, "ws");
    sl_buf_append_str(&b, red + 4);
    free(red);
    return sl_buf_steal(&b, NULL);
}
