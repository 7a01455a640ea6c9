/* tests/gateway/test_identity.c: the X-Forwarded-For walk and IPv6 grouping
 * (gateway/gw_identity.c), as pure functions. */
#include <criterion/criterion.h>
#include <string.h>

#include "gateway/gw_identity.h"

static char *trusted[] = {"127.0.0.1/32", "10.1.0.0/16", "2001:db8:ffff::/48"};

static const char *walk(const char *peer, const char *const *lines, size_t n)
{
    static char addr[64];
    h2o_iovec_t v[8];
    for (size_t i = 0; i < n; i++)
        v[i] = h2o_iovec_init(lines[i], strlen(lines[i]));
    snprintf(addr, sizeof(addr), "%s", peer);
    gw_identity_forwarded(v, n, trusted, 3, addr);
    return addr;
}

Test(identity, lines_are_walked_as_one_joined_field)
{
    const char *one[] = {"10.9.9.9, 10.0.0.1"};
    const char *two[] = {"10.9.9.9", "10.0.0.1"};
    cr_expect_str_eq(walk("127.0.0.1", one, 1), "10.0.0.1");
    cr_expect_str_eq(walk("127.0.0.1", two, 2), "10.0.0.1", "the line ahead chose the identity");
    const char *hops[] = {"192.0.2.5, 10.1.2.3", " 10.1.9.9 "};
    cr_expect_str_eq(walk("127.0.0.1", hops, 2), "192.0.2.5", "trusted hops over two lines are walked past");
}

Test(identity, empty_elements_are_skipped_and_garbage_stops_at_the_proxy)
{
    const char *empty[] = {"192.0.2.5,, ", ""};
    cr_expect_str_eq(walk("127.0.0.1", empty, 2), "192.0.2.5");
    const char *garbage[] = {"192.0.2.5, not-an-address"};
    cr_expect_str_eq(walk("127.0.0.1", garbage, 1), "127.0.0.1", "garbage keeps the proxy's address");
    const char *garbage2[] = {"192.0.2.5, 10.1.0.7", "unknown"};
    cr_expect_str_eq(walk("127.0.0.1", garbage2, 2), "127.0.0.1");
    char longer[200];
    memset(longer, '1', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    const char *toolong[] = {longer};
    cr_expect_str_eq(walk("127.0.0.1", toolong, 1), "127.0.0.1");
    const char *all_trusted[] = {"10.1.0.1, 10.1.0.2"};
    cr_expect_str_eq(walk("127.0.0.1", all_trusted, 1), "10.1.0.1", "the left-most trusted hop is the caller");
}

static const char *group(const char *addr, uint32_t prefix)
{
    static char out[64];
    gw_identity_group(addr, prefix, out);
    return out;
}

Test(identity, ipv6_callers_are_their_network)
{
    cr_expect_str_eq(group("2001:db8:1:2:3:4:5:6", 64), "2001:db8:1:2::/64");
    cr_expect_str_eq(group("2001:db8:1:2:ffff::1", 64), "2001:db8:1:2::/64");
    cr_expect_str_eq(group("2001:db8:1:2:3:4:5:6", 56), "2001:db8:1::/56");
    cr_expect_str_eq(group("2001:db8:1:2ff:3:4:5:6", 60), "2001:db8:1:2f0::/60", "a prefix inside a group");
    cr_expect_str_eq(group("2001:db8:1:2:3:4:5:6", 128), "2001:db8:1:2:3:4:5:6");
    cr_expect_str_eq(group("::1", 64), "::/64");
    cr_expect_str_eq(group("::ffff:192.0.2.1", 64), "192.0.2.1", "IPv4-mapped is IPv4");
    cr_expect_str_eq(group("192.0.2.1", 64), "192.0.2.1");
    cr_expect_str_eq(group("", 64), "");
}
