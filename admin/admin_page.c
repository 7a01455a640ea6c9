/* admin/admin_page.c: GET /, the operator page.
 *
 * The page is admin/page/index.html, compiled in by admin/page/embed.cmake:
 * no CDN, no build step, nothing read from disk at run time. Its one inline
 * <style> and one inline <script> are allowed by their SHA-256 in a strict
 * Content-Security-Policy computed once from the embedded bytes, so an edit
 * of the page can never be served with a stale hash and nothing else (no
 * injected script, no inline handler, no other origin) may run or load. The
 * page itself holds no data and needs no token: everything it shows comes
 * from the authenticated JSON routes, which it calls with the token the
 * operator types in (kept in a JS variable, never in a URL). */
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#include "admin/admin_int.h"
#include "base/sl_http.h"

extern const unsigned char admin_page_html[];
extern const size_t admin_page_html_len;

/* what the page may do besides running its own script and style: talk to
 * this listener, show data: images (the empty favicon), nothing else */
#define CSP_REST                                                                                           \
    "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

/* The bytes between the only <tag> and its </tag>; 0 if the tag is missing,
 * has attributes or appears twice (the hash would then not cover it all). */
static int inline_block(const char *html, size_t len, const char *tag, const char **body, size_t *body_len)
{
    char open[16], close[16], any[16];
    snprintf(open, sizeof(open), "<%s>", tag);
    snprintf(close, sizeof(close), "</%s>", tag);
    snprintf(any, sizeof(any), "<%s", tag);
    const char *o = memmem(html, len, open, strlen(open));
    if (o == NULL)
        return 0;
    const char *start = o + strlen(open), *end = html + len;
    const char *c = memmem(start, (size_t)(end - start), close, strlen(close));
    if (c == NULL || memmem(c, (size_t)(end - c), any, strlen(any)) != NULL ||
        memmem(html, (size_t)(o - html), any, strlen(any)) != NULL)
        return 0;
    *body = start;
    *body_len = (size_t)(c - start);
    return 1;
}

/* 'sha256-<base64>' of p[0..n) */
static void csp_hash(const char *p, size_t n, char out[64])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_Digest(p, n, md, &mdlen, EVP_sha256(), NULL);
    unsigned char b64[48]; /* 32 bytes -> 44 characters + NUL */
    EVP_EncodeBlock(b64, md, (int)mdlen);
    snprintf(out, 64, "'sha256-%s'", (const char *)b64);
}

sl_err_t admin_page_csp(const char *html, size_t len, char *out, size_t cap)
{
    const char *script, *style;
    size_t script_len, style_len;
    if (!inline_block(html, len, "script", &script, &script_len) || !inline_block(html, len, "style", &style, &style_len))
        return SL_ERR_INVALID;
    char hs[64], hc[64];
    csp_hash(script, script_len, hs);
    csp_hash(style, style_len, hc);
    int n = snprintf(out, cap, "default-src 'none'; script-src %s; style-src %s; " CSP_REST, hs, hc);
    return n > 0 && (size_t)n < cap ? SL_OK : SL_ERR_INVALID;
}

void admin_page_init(admin_t *a)
{
    if (admin_page_csp((const char *)admin_page_html, admin_page_html_len, a->page_csp, sizeof(a->page_csp)) != SL_OK)
        /* a page the unit test would have refused: serve it inert */
        snprintf(a->page_csp, sizeof(a->page_csp), "default-src 'none'; frame-ancestors 'none'");
}

int admin_route_page(admin_t *a, h2o_req_t *req)
{
    static h2o_iovec_t csp = {H2O_STRLIT("content-security-policy")};
    static h2o_iovec_t xfo = {H2O_STRLIT("x-frame-options")};
    static h2o_iovec_t xcto = {H2O_STRLIT("x-content-type-options")};
    static h2o_iovec_t referrer = {H2O_STRLIT("referrer-policy")};
    sl_http_header_iov(req, &csp, a->page_csp, strlen(a->page_csp));
    sl_http_header_iov(req, &xfo, H2O_STRLIT("DENY"));
    sl_http_header_iov(req, &xcto, H2O_STRLIT("nosniff"));
    sl_http_header_iov(req, &referrer, H2O_STRLIT("no-referrer"));
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CACHE_CONTROL, NULL, H2O_STRLIT("no-store"));
    /* static storage: lives longer than any request */
    sl_http_send(req, 200, "text/html; charset=utf-8", (const char *)admin_page_html, admin_page_html_len);
    return 0;
}
