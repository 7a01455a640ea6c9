/* tests/admin/test_page.c: the operator page's Content-Security-Policy and
 * the rules the embedded page must keep for that policy to let it work. */
#include <criterion/criterion.h>
#include <openssl/evp.h>
#include <regex.h>
#include <string.h>

#include "admin/admin_int.h"

extern const unsigned char admin_page_html[];
extern const size_t admin_page_html_len;

static const char *page(void) { return (const char *)admin_page_html; }

static void expect_hash(const char *csp, const char *directive, const char *text, size_t len)
{
    unsigned char md[32], b64[48];
    unsigned int n = 0;
    EVP_Digest(text, len, md, &n, EVP_sha256(), NULL);
    EVP_EncodeBlock(b64, md, (int)n);
    char want[128];
    snprintf(want, sizeof(want), "%s 'sha256-%s';", directive, (const char *)b64);
    cr_expect(strstr(csp, want) != NULL, "%s not in %s", want, csp);
}

Test(page, csp_hashes_the_inline_script_and_style)
{
    const char html[] = "<html><style>a{}</style><body><script>let x = 1;</script></body></html>";
    char csp[320];
    cr_assert_eq(admin_page_csp(html, strlen(html), csp, sizeof(csp)), SL_OK);
    expect_hash(csp, "script-src", "let x = 1;", 10);
    expect_hash(csp, "style-src", "a{}", 3);
    cr_expect(strncmp(csp, "default-src 'none'; ", 20) == 0, "%s", csp);
    cr_expect(strstr(csp, "frame-ancestors 'none'") != NULL);
    cr_expect(strstr(csp, "connect-src 'self'") != NULL);
    cr_expect(strstr(csp, "unsafe") == NULL, "no unsafe-inline or unsafe-eval: %s", csp);
}

Test(page, csp_refuses_a_page_the_hash_would_not_cover)
{
    static const char *const bad[] = {
        "<style>a{}</style>",                                                  /* no script */
        "<script>1</script>",                                                  /* no style */
        "<style>a{}</style><script src=x></script><script>1</script>",         /* a second script */
        "<style>a{}</style><script>1</script><script>2</script>",              /* two inline scripts */
        "<style>a{}</style><script type=module>1</script>",                    /* attributes */
        "<style>a{}</style><style>b{}</style><script>1</script>",              /* two styles */
        "<style>a{}</style><script>1",                                         /* unterminated */
    };
    char csp[320];
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_expect_eq(admin_page_csp(bad[i], strlen(bad[i]), csp, sizeof(csp)), SL_ERR_INVALID, "%s", bad[i]);
    const char ok[] = "<style>a{}</style><script>1</script>";
    cr_expect_eq(admin_page_csp(ok, strlen(ok), csp, 40), SL_ERR_INVALID, "too small an output");
}

Test(page, the_embedded_page_gets_a_policy)
{
    cr_assert_eq(strlen(page()), admin_page_html_len, "embedded whole, NUL-terminated, no NUL inside");
    char csp[320];
    cr_assert_eq(admin_page_csp(page(), admin_page_html_len, csp, sizeof(csp)), SL_OK);
}

/* What the hash-based policy would block, so the page must not contain it. */
Test(page, the_embedded_page_keeps_to_its_policy)
{
    static const struct {
        const char *pattern, *why;
    } forbidden[] = {
        {" style=", "a style attribute (style-src allows only the inline block)"},
        {" on[a-z]+=", "an inline event handler"},
        {"(src|href|action)=[\"']?(https?:)?//", "a resource from another origin (no CDN)"},
        {"javascript:", "a javascript: URL"},
        {"eval\\(|new Function", "eval"},
        {"innerHTML|outerHTML|insertAdjacentHTML|document\\.write", "HTML built from strings (XSS)"},
        {"localStorage|sessionStorage|document\\.cookie", "the token kept anywhere but memory"},
        {"EventSource", "EventSource (it cannot send the token in a header)"},
    };
    for (size_t i = 0; i < sizeof(forbidden) / sizeof(forbidden[0]); i++) {
        regex_t re;
        cr_assert_eq(regcomp(&re, forbidden[i].pattern, REG_EXTENDED | REG_NOSUB), 0);
        cr_expect(regexec(&re, page(), 0, NULL, 0) != 0, "the page has %s", forbidden[i].why);
        regfree(&re);
    }
}
