/* admin/admin_guard.c: the Host names a tokenless listener answers, the
 * same-origin and JSON rules for writes, and the failed-auth throttle. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <string.h>

#include "admin/admin_int.h"

#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))

Test(guard, host_names)
{
    admin_guard_t g;
    admin_guard_init(&g, "127.0.0.1:0", "127.0.0.1:41234");
    static const struct {
        const char *host;
        int ok;
    } cases[] = {
        {"127.0.0.1:41234", 1},
        {"127.0.0.1", 1},
        {"127.0.0.1:22", 1}, /* any port: an ssh tunnel's is its own */
        {"localhost", 1},
        {"LocalHost:8546", 1},
        {"[::1]", 1},
        {"[::1]:8546", 1},
        {"", 0},
        {"evil.example", 0},
        {"evil.example:41234", 0},
        {"localhost.evil.example", 0},
        {"127.0.0.1.nip.io:41234", 0},
        {"127.0.0.2:41234", 0},
        {"127.0.0.1:", 0},
        {"127.0.0.1:99999", 0},
        {"127.0.0.1:12x", 0},
        {"127.0.0.1:41234:1", 0},
        {"::1", 0},
        {"[::1", 0},
        {"[::1]x", 0},
        {"[::2]:8546", 0},
        {":41234", 0},
        {"localhost\r\nX: y", 0},
    };
    for (size_t i = 0; i < NELEMS(cases); i++)
        cr_expect_eq(admin_guard_host_ok(&g, cases[i].host, strlen(cases[i].host)), cases[i].ok, "'%s'",
                     cases[i].host);
}

Test(guard, host_names_of_the_listener_itself)
{
    admin_guard_t g;
    admin_guard_init(&g, "[0:0:0:0:0:0:0:1]:8546", "[::1]:8546");
    cr_expect(admin_guard_host_ok(&g, "[0:0:0:0:0:0:0:1]:8546", 22), "as configured");
    cr_expect(admin_guard_host_ok(&g, "[::1]:8546", 10));
    admin_guard_init(&g, "127.5.6.7:8546", "127.5.6.7:8546");
    cr_expect(admin_guard_host_ok(&g, "127.5.6.7:8546", 14));
    cr_expect(admin_guard_host_ok(&g, "localhost:8546", 14));
    cr_expect(!admin_guard_host_ok(&g, "127.5.6.8:8546", 14));
    admin_guard_init(&g, NULL, NULL);
    cr_expect(admin_guard_host_ok(&g, "localhost", 9));
}

Test(guard, origin_is_the_listener_s_own)
{
    static const struct {
        const char *origin, *host;
        int ok;
    } cases[] = {
        {"http://127.0.0.1:8546", "127.0.0.1:8546", 1},
        {"HTTP://LOCALHOST:8546", "localhost:8546", 1},
        {"http://localhost", "localhost", 1},
        {"http://localhost:8546", "127.0.0.1:8546", 0}, /* another origin, even if the same machine */
        {"http://localhost:3000", "localhost:8546", 0}, /* another app on localhost */
        {"https://127.0.0.1:8546", "127.0.0.1:8546", 0},
        {"null", "127.0.0.1:8546", 0},
        {"", "127.0.0.1:8546", 0},
        {"http://127.0.0.1:8546/", "127.0.0.1:8546", 0},
        {"http://evil.example", "127.0.0.1:8546", 0},
    };
    for (size_t i = 0; i < NELEMS(cases); i++)
        cr_expect_eq(admin_guard_origin_ok(cases[i].origin, strlen(cases[i].origin), cases[i].host,
                                           strlen(cases[i].host)),
                     cases[i].ok, "'%s' for '%s'", cases[i].origin, cases[i].host);
}

Test(guard, json_content_types)
{
    static const struct {
        const char *ct;
        int ok;
    } cases[] = {
        {"application/json", 1},
        {"Application/JSON", 1},
        {"application/json; charset=utf-8", 1},
        {"application/json ;charset=utf-8", 1},
        {"text/plain", 0},
        {"application/x-www-form-urlencoded", 0},
        {"multipart/form-data; boundary=x", 0},
        {"application/jsonp", 0},
        {"application/json-seq", 0},
        {"", 0},
    };
    for (size_t i = 0; i < NELEMS(cases); i++)
        cr_expect_eq(admin_guard_json_type(cases[i].ct, strlen(cases[i].ct)), cases[i].ok, "'%s'", cases[i].ct);
}

static void key_of(const char *addr, uint8_t key[16])
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    if (strchr(addr, ':') != NULL) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        cr_assert_eq(inet_pton(AF_INET6, addr, &a->sin6_addr), 1, "%s", addr);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        cr_assert_eq(inet_pton(AF_INET, addr, &a->sin_addr), 1, "%s", addr);
    }
    admin_guard_addr_key((struct sockaddr *)&ss, key);
}

Test(guard, address_keys)
{
    uint8_t a[16], b[16];
    key_of("192.0.2.1", a);
    key_of("::ffff:192.0.2.1", b);
    cr_expect(memcmp(a, b, 16) == 0, "IPv4 and its v4-mapped form are one address");
    key_of("192.0.2.2", b);
    cr_expect(memcmp(a, b, 16) != 0);
    key_of("2001:db8:1:2::1", a);
    key_of("2001:db8:1:2:ffff:eeee:dddd:cccc", b);
    cr_expect(memcmp(a, b, 16) == 0, "one IPv6 /64 is one client");
    key_of("2001:db8:1:3::1", b);
    cr_expect(memcmp(a, b, 16) != 0, "another /64 is another client");
}

#define SEC 1000000ULL

Test(guard, throttle_burst_then_one_per_interval)
{
    static admin_guard_t g; /* large: not on the stack */
    admin_guard_init(&g, NULL, NULL);
    uint8_t me[16], other[16];
    key_of("192.0.2.1", me);
    key_of("192.0.2.2", other);
    uint64_t t = 1000 * SEC;
    int exhausted = 0;
    for (int i = 0; i < ADMIN_AUTH_BURST; i++) {
        cr_assert_eq(admin_guard_auth_wait_us(&g, me, t), 0, "attempt %d may be tried", i);
        exhausted += admin_guard_auth_failed(&g, me, t);
    }
    cr_expect_eq(exhausted, 1, "the failure that uses the allowance up is reported once");
    uint64_t wait = admin_guard_auth_wait_us(&g, me, t);
    uint64_t interval = ADMIN_AUTH_WINDOW_US / ADMIN_AUTH_BURST;
    cr_expect(wait > 0 && wait <= interval, "wait %llu", (unsigned long long)wait);
    /* someone else's address is not affected */
    cr_expect_eq(admin_guard_auth_wait_us(&g, other, t), 0);
    /* after the wait, one more attempt; then refused again */
    cr_expect_eq(admin_guard_auth_wait_us(&g, me, t + wait), 0);
    admin_guard_auth_failed(&g, me, t + wait);
    cr_expect_gt(admin_guard_auth_wait_us(&g, me, t + wait), 0);
    /* a quiet minute gives the whole allowance back */
    uint64_t later = t + wait + ADMIN_AUTH_WINDOW_US;
    for (int i = 0; i < ADMIN_AUTH_BURST; i++) {
        cr_assert_eq(admin_guard_auth_wait_us(&g, me, later), 0, "attempt %d after a quiet minute", i);
        admin_guard_auth_failed(&g, me, later);
    }
    cr_expect_gt(admin_guard_auth_wait_us(&g, me, later), 0);
}

Test(guard, throttle_table_is_bounded_and_never_locks_out_others)
{
    static admin_guard_t g;
    admin_guard_init(&g, NULL, NULL);
    uint64_t t = 1000 * SEC;
    uint8_t key[16];
    /* an address that failed once, long ago: its allowance is whole again */
    key_of("198.51.100.1", key);
    admin_guard_auth_failed(&g, key, t - 120 * SEC);
    /* many addresses hammer: the table stays bounded */
    for (unsigned i = 0; i < 3 * ADMIN_AUTH_SLOTS; i++) {
        char addr[32];
        snprintf(addr, sizeof(addr), "10.%u.%u.1", i / 250, i % 250);
        key_of(addr, key);
        for (int k = 0; k < ADMIN_AUTH_BURST; k++)
            admin_guard_auth_failed(&g, key, t);
        cr_assert_leq(g.nslots, ADMIN_AUTH_SLOTS);
    }
    cr_expect_eq(g.nslots, ADMIN_AUTH_SLOTS);
    /* the latest attacker is throttled ... */
    cr_expect_gt(admin_guard_auth_wait_us(&g, key, t), 0);
    /* ... and an operator's address that never failed is not */
    uint8_t op[16];
    key_of("192.0.2.77", op);
    cr_expect_eq(admin_guard_auth_wait_us(&g, op, t), 0);
}
