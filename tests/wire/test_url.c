#include <criterion/criterion.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "base/sl_secret.h"
#include "wire/url.h"

typedef struct parse_case {
    const char *url;
    sl_err_t err;
    const char *why;          /* substring of wire_url_parse_error(); NULL when valid */
    int https;
    const char *host;
    int host_is_ip;
    uint16_t port;
    const char *path;
    int has_userinfo;
} parse_case_t;

static const parse_case_t parse_cases[] = {
    {"http://127.0.0.1:8545", SL_OK, NULL, 0, "127.0.0.1", 1, 8545, "/", 0},
    {"https://eth-mainnet.g.alchemy.com/v2/abc", SL_OK, NULL, 1, "eth-mainnet.g.alchemy.com", 0, 443, "/v2/abc", 0},
    {"HTTPS://Mainnet.Infura.IO/v3/x", SL_OK, NULL, 1, "mainnet.infura.io", 0, 443, "/v3/x", 0},
    {"http://example.com", SL_OK, NULL, 0, "example.com", 0, 80, "/", 0},
    {"https://host?api-key=1", SL_OK, NULL, 1, "host", 0, 443, "/?api-key=1", 0},
    {"https://host/?api-key=1&b=2", SL_OK, NULL, 1, "host", 0, 443, "/?api-key=1&b=2", 0},
    {"http://[::1]:8545/rpc", SL_OK, NULL, 0, "::1", 1, 8545, "/rpc", 0},
    {"https://[2001:DB8::1]/", SL_OK, NULL, 1, "2001:db8::1", 1, 443, "/", 0},
    {"https://user:pw@host/rpc", SL_OK, NULL, 1, "host", 0, 443, "/rpc", 1},
    {"https://u:p@ss@host", SL_OK, NULL, 1, "host", 0, 443, "/", 1},
    {"https://u:%zz@host/", SL_ERR_PARSE, "bad %-escape"},
    {"https://u:%4@host/", SL_ERR_PARSE, "bad %-escape"},
    {"https://u:%00@host/", SL_ERR_PARSE, "bad %-escape"},
    {"http://h:65535/a%20b", SL_OK, NULL, 0, "h", 0, 65535, "/a%20b", 0},
    {"http://node_1.local:1/", SL_OK, NULL, 0, "node_1.local", 0, 1, "/", 0},
    {"ftp://host/", SL_ERR_PARSE, "scheme must be http or https"},
    {"ws://host/", SL_ERR_PARSE, "scheme must be http or https"},
    {"host:8545", SL_ERR_PARSE, "must start with http:// or https://"},
    {"", SL_ERR_PARSE, "must start with http:// or https://"},
    {"https://", SL_ERR_PARSE, "no host"},
    {"https:///path", SL_ERR_PARSE, "no host"},
    {"https://:8545/", SL_ERR_PARSE, "no host"},
    {"http://host:0/", SL_ERR_PARSE, "port must be"},
    {"http://host:65536/", SL_ERR_PARSE, "port must be"},
    {"http://host:/", SL_ERR_PARSE, "port must be"},
    {"http://host:80a/", SL_ERR_PARSE, "port must be"},
    {"https://host/#frag", SL_ERR_PARSE, "fragment"},
    {"https://host/a b", SL_ERR_PARSE, "space or control"},
    {"https://host/a\tb", SL_ERR_PARSE, "space or control"},
    {"https://h\xc3\xa9st/", SL_ERR_PARSE, "non-ASCII"},
    {"http://::1:8545/", SL_ERR_PARSE, "brackets"},
    {"http://[::1/", SL_ERR_PARSE, "closing ']'"},
    {"http://[zz::1]/", SL_ERR_PARSE, "invalid IPv6"},
    {"http://[::1]x/", SL_ERR_PARSE, "after the IPv6"},
    {"http://300.1.1.1/", SL_ERR_PARSE, "invalid IPv4"},
    {"http://ho$t/", SL_ERR_PARSE, "invalid character"},
    {"http://a..b/", SL_ERR_PARSE, "empty label"},
};

Test(url, parse_table)
{
    for (size_t i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
        const parse_case_t *c = &parse_cases[i];
        wire_url_t u;
        sl_err_t err = wire_url_parse(c->url, &u);
        const char *why = wire_url_parse_error(c->url);
        cr_assert_eq(err, c->err, "case %zu (%s): %s", i, c->url, sl_err_name(err));
        if (c->err != SL_OK) {
            cr_assert_not_null(why, "case %zu", i);
            cr_assert(strstr(why, c->why) != NULL, "case %zu (%s): reason '%s'", i, c->url, why);
            continue;
        }
        cr_assert_null(why, "case %zu: %s", i, why);
        cr_assert_eq(u.https, c->https, "case %zu", i);
        cr_assert_str_eq(u.host, c->host, "case %zu", i);
        cr_assert_eq(u.host_is_ip, c->host_is_ip, "case %zu", i);
        cr_assert_eq(u.port, c->port, "case %zu", i);
        cr_assert_str_eq(u.path, c->path, "case %zu", i);
        cr_assert_eq(u.has_userinfo, c->has_userinfo, "case %zu", i);
    }
}

/* user-info is sent as HTTP Basic credentials: percent-decoded */
Test(url, userinfo_decoded)
{
    wire_url_t u;
    cr_assert_eq(wire_url_parse("https://us%65r:p%40ss:w@host/", &u), SL_OK);
    cr_assert_str_eq(u.userinfo, "user:p@ss:w");
    cr_assert_eq(wire_url_parse("https://u:p@ss@host", &u), SL_OK);
    cr_assert_str_eq(u.userinfo, "u:p@ss");
    cr_assert_eq(wire_url_parse("https://host/", &u), SL_OK);
    cr_assert_str_eq(u.userinfo, "");
    char long_url[400];
    snprintf(long_url, sizeof(long_url), "https://%0300d@host/", 7);
    cr_assert_eq(wire_url_parse(long_url, &u), SL_ERR_PARSE);
}

Test(url, too_large)
{
    wire_url_t u;
    char big[WIRE_URL_MAX_LEN + 20];
    strcpy(big, "https://h/");
    memset(big + 10, 'a', sizeof(big) - 11);
    big[sizeof(big) - 1] = '\0';
    cr_assert_eq(wire_url_parse(big, &u), SL_ERR_TOO_LARGE);

    char path[2100] = "https://h/";
    memset(path + 10, 'a', 2048);
    path[2058] = '\0';
    cr_assert_eq(wire_url_parse(path, &u), SL_ERR_TOO_LARGE);
    cr_assert(strstr(wire_url_parse_error(path), "path") != NULL);
    path[10 + 2046] = '\0';   /* "/" + 2046 = 2047 bytes: fits */
    cr_assert_eq(wire_url_parse(path, &u), SL_OK);

    char host[300] = "https://";
    memset(host + 8, 'a', 256);
    host[264] = '\0';
    cr_assert_eq(wire_url_parse(host, &u), SL_ERR_TOO_LARGE);
    cr_assert(strstr(wire_url_parse_error(host), "host") != NULL);
}

typedef struct redact_case {
    const char *url;
    const char *want;
} redact_case_t;

static const redact_case_t redact_cases[] = {
    {"https://eth-mainnet.g.alchemy.com/v2/abcDEF123456789xyz", "https://eth-mainnet.g.alchemy.com/v2/***"},
    {"https://mainnet.infura.io/v3/0123456789abcdef0123456789abcdef", "https://mainnet.infura.io/v3/***"},
    {"https://mainnet.helius-rpc.com/?api-key=XYZ123", "https://mainnet.helius-rpc.com/?api-key=***"},
    {"https://user:pw@host/rpc", "https://***@host/rpc"},
    {"http://127.0.0.1:8545", "http://127.0.0.1:8545"},
    {"https://sparkling-a.quiknode.pro/0a1b2c3d4e5f/", "https://sparkling-a.quiknode.pro/***/"},
    {"https://ethereum-rpc.publicnode.com", "https://ethereum-rpc.publicnode.com"},
    {"http://[::1]:8545/rpc", "http://[::1]:8545/rpc"},
    {"https://h/deadbeef/rpc", "https://h/***/rpc"},                /* short hex token */
    {"https://h/abc12345", "https://h/***"},                        /* letters + digits, 8 bytes */
    {"https://h/mainnet/ethereum", "https://h/mainnet/ethereum"},  /* words stay */
    {"https://h/v1/Mainnet", "https://h/v1/***"},                   /* upper case */
    {"https://h/a%2Fb", "https://h/***"},
    {"https://h/rpc?a=1&b=&c", "https://h/rpc?a=***&b=&c"},
    {"https://h?token=abc&x=y", "https://h?token=***&x=***"},
    {"https://h/?0123456789abcdef", "https://h/?***"},              /* bare key in query */
    {"https://apikey@h/", "https://***@h/"},
    {"https://h//x/", "https://h//x/"},
    {"ftp://h/secret", "<invalid url>"},
    {"not a url", "<invalid url>"},
};

Test(url, redact_table)
{
    sl_secret_clear();
    for (size_t i = 0; i < sizeof(redact_cases) / sizeof(redact_cases[0]); i++) {
        char *got = wire_url_redact(redact_cases[i].url);
        cr_assert_str_eq(got, redact_cases[i].want, "case %zu (%s)", i, redact_cases[i].url);
        free(got);
    }
}

Test(url, redact_scrubs_registered_secrets)
{
    sl_secret_clear();
    sl_secret_add("secrethost");
    char *got = wire_url_redact("https://secrethost.example.com/rpc");
    cr_assert_str_eq(got, "https://***.example.com/rpc");
    free(got);
    sl_secret_clear();
    got = wire_url_redact(NULL);
    cr_assert_str_eq(got, "<invalid url>");
    free(got);
}

static void collect(const char *s, size_t n, void *arg)
{
    sl_buf_t *b = arg;
    sl_buf_append(b, s, n);
    sl_buf_append_char(b, '|');
}

Test(url, each_secret_lists_hidden_parts)
{
    sl_buf_t b = SL_BUF_INIT;
    wire_url_each_secret("https://usr:pass@h/v2/abcDEF123456789xyz/rpc?api-key=XYZ123&n=", collect, &b);
    cr_assert_str_eq(b.base, "usr:pass|usr|pass|abcDEF123456789xyz|XYZ123|");
    sl_buf_reset(&b);
    wire_url_each_secret("ftp://h/abcDEF123456789xyz", collect, &b);
    cr_assert_eq(b.len, 0);
    sl_buf_dispose(&b);
}

/* ---- redis:// ---- */

typedef struct redis_case {
    const char *url;
    const char *why;          /* substring of the reason; NULL when valid */
    int tls;
    const char *user, *password, *host;
    uint16_t port;
    uint32_t db;
    const char *shown;
} redis_case_t;

static const redis_case_t redis_cases[] = {
    {"redis://10.0.0.5", NULL, 0, NULL, NULL, "10.0.0.5", 6379, 0, "redis://10.0.0.5:6379/0"},
    {"redis://:pw-1@redis.internal:6380/3", NULL, 0, NULL, "pw-1", "redis.internal", 6380, 3,
     "redis://***@redis.internal:6380/3"},
    {"redis://app:p%40ss%3Aw@[::1]:7000", NULL, 0, "app", "p@ss:w", "::1", 7000, 0, "redis://***@[::1]:7000/0"},
    {"redis://a:b@c@h", NULL, 0, "a", "b@c", "h", 6379, 0, "redis://***@h:6379/0"}, /* the last '@' ends it */
    {"redis://[::1]", NULL, 0, NULL, NULL, "::1", 6379, 0, "redis://[::1]:6379/0"},
    {"redis://Redis_1.Local/", NULL, 0, NULL, NULL, "Redis_1.Local", 6379, 0, "redis://Redis_1.Local:6379/0"},
    {"redis://h:1/100000", NULL, 0, NULL, NULL, "h", 1, 100000, "redis://h:1/100000"},
    {"rediss://:pw@h:6390/2", NULL, 1, NULL, "pw", "h", 6390, 2, "rediss://***@h:6390/2"},
    {"http://h:1", "expected redis://"},
    {"REDIS://h", "expected redis://"},
    {"redis://h:0", "port must be a number between 1 and 65535"},
    {"redis://h:99999", "port must be"},
    {"redis://h:", "port must be"},
    {"redis://h:6379/x", "database after '/'"},
    {"redis://h:6379/100001", "database after '/'"},
    {"redis://", "no host"},
    {"redis://:pw@", "no host"},
    {"redis://h st", "host must be a name or an address"},
    {"redis://[::1", "must end with ']'"},
    {"redis://[::1]x", "expected ':port' after the IPv6 address"},
    {"redis://[zz]", "invalid IPv6 address"},
    {"redis://[]", "invalid IPv6 address"},
    {"redis://pw@h", "':password' or 'user:password'"},
    {"redis://:@h", "password after ':' is empty"},
    {"redis://:a%zzb@h", "must start an escape"},
    {"redis://:a%00b@h", "must start an escape"},
    {"redis://u%4:pw@h", "must start an escape"},
};

Test(redis_url, parse_table)
{
    for (size_t i = 0; i < sizeof(redis_cases) / sizeof(redis_cases[0]); i++) {
        const redis_case_t *c = &redis_cases[i];
        wire_redis_url_t u;
        const char *why = wire_redis_url_parse(c->url, &u);
        if (c->why != NULL) {
            cr_expect(why != NULL && strstr(why, c->why) != NULL, "%s: got '%s', want '%s'", c->url,
                      why ? why : "(parsed)", c->why);
            wire_redis_url_dispose(&u);
            continue;
        }
        cr_assert_null(why, "%s: %s", c->url, why);
        cr_expect_eq(u.tls, c->tls, "%s", c->url);
        if (c->user)
            cr_expect_str_eq(u.user, c->user, "%s", c->url);
        else
            cr_expect_null(u.user, "%s", c->url);
        if (c->password)
            cr_expect_str_eq(u.password, c->password, "%s", c->url);
        else
            cr_expect_null(u.password, "%s", c->url);
        cr_expect_str_eq(u.host, c->host, "%s", c->url);
        cr_expect_eq(u.port, c->port, "%s", c->url);
        cr_expect_eq(u.db, c->db, "%s", c->url);
        char *shown = wire_redis_url_redact(&u);
        cr_expect_str_eq(shown, c->shown, "%s", c->url);
        free(shown);
        wire_redis_url_dispose(&u);
        cr_expect_null(u.host, "dispose clears");
    }
}

/* The reasons name the part that is wrong, never the text: no password in them. */
Test(redis_url, reasons_never_quote_the_url)
{
    static const char *const bad[] = {"redis://:Xy7-unique-pw-Q1@h:notaport", "redis://:Xy7-unique-pw-Q1@h/db",
                                      "redis://Xy7-unique-pw-Q1@h", "redis://:Xy7-unique-pw-Q1%zz@h"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        wire_redis_url_t u;
        const char *why = wire_redis_url_parse(bad[i], &u);
        cr_assert_not_null(why, "%s", bad[i]);
        cr_expect_null(strstr(why, "Xy7"), "%s: %s", bad[i], why);
        wire_redis_url_dispose(&u);
    }
}

/* What was read before a failure stays: the caller registers the password
 * whatever follows it. */
Test(redis_url, password_read_before_a_failure_stays)
{
    wire_redis_url_t u;
    const char *url = "redis://:p%41ss@h:notaport";
    cr_assert_not_null(wire_redis_url_parse(url, &u));
    cr_expect_str_eq(u.password, "pAss");
    cr_expect_eq(u.password_raw_len, 6);
    cr_expect_eq(strncmp(u.password_raw, "p%41ss", 6), 0);
    wire_redis_url_dispose(&u);

    cr_assert_not_null(wire_redis_url_parse("redis://:bad%zz@h", &u));
    cr_expect_null(u.password, "not decoded");
    cr_expect_eq(u.password_raw_len, 6, "but its written form is there");
    wire_redis_url_dispose(&u);

    cr_assert_not_null(wire_redis_url_parse("rediss://:pw@h:0", &u));
    cr_expect_eq(u.tls, 1, "the scheme is known before the rest fails");
    wire_redis_url_dispose(&u);
}

/* ws_url: ws and wss are http and https for parsing, keep their scheme
 * when shown, and anything else is no WebSocket URL. */
Test(url, websocket_urls)
{
    char *h = wire_url_ws_as_http("wss://eth.example.com/v2/Zk3f9Qb27xLmN4pR8sT1vW6y");
    cr_assert_str_eq(h, "https://eth.example.com/v2/Zk3f9Qb27xLmN4pR8sT1vW6y");
    free(h);
    h = wire_url_ws_as_http("WS://127.0.0.1:8546");
    cr_assert_str_eq(h, "http://127.0.0.1:8546");
    free(h);
    cr_expect_null(wire_url_ws_as_http("https://eth.example.com/"));
    cr_expect_null(wire_url_ws_as_http("wsx://eth.example.com/"));
    cr_expect_null(wire_url_ws_as_http(NULL));
    char *r = wire_url_redact_ws("wss://user:pw@eth.example.com/v2/Zk3f9Qb27xLmN4pR8sT1vW6y?api-key=abc123def456");
    cr_expect_str_eq(r, "wss://***@eth.example.com/v2/***?api-key=***");
    free(r);
    r = wire_url_redact_ws("ws://127.0.0.1:8546/");
    cr_expect_str_eq(r, "ws://127.0.0.1:8546/");
    free(r);
    r = wire_url_redact_ws("http://127.0.0.1/");
    cr_expect_str_eq(r, "<invalid url>");
    free(r);
}
