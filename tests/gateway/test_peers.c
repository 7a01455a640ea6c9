/* tests/gateway/test_peers.c: the per-address connection counts
 * (gateway/gw_peers.c) and the socket-address grouping they are keyed by
 * (gw_identity_group_key). */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <string.h>

#include "gateway/gw_identity.h"
#include "gateway/gw_peers.h"

static void key_n(uint32_t n, uint8_t key[16])
{
    memset(key, 0, 16);
    memcpy(key, &n, sizeof(n));
}

Test(peers, counts_add_and_remove_per_key)
{
    gw_peers_t *p = gw_peers_create();
    uint8_t a[16], b[16];
    key_n(1, a);
    key_n(2, b);
    cr_expect_eq(gw_peers_add(p, a), 1);
    cr_expect_eq(gw_peers_add(p, a), 2);
    cr_expect_eq(gw_peers_add(p, b), 1);
    cr_expect_eq(gw_peers_size(p), 2);
    gw_peers_remove(p, a);
    cr_expect_eq(gw_peers_get(p, a), 1);
    gw_peers_remove(p, a);
    gw_peers_remove(p, a); /* not counted: left alone */
    cr_expect_eq(gw_peers_get(p, a), 0);
    cr_expect_eq(gw_peers_get(p, b), 1);
    cr_expect_eq(gw_peers_size(p), 1);
    gw_peers_destroy(p);
}

/* Many keys through growth and removals in another order: every count
 * stays findable (the backward shift keeps probe runs whole). */
Test(peers, growth_and_removal_keep_every_key_findable)
{
    enum { N = 5000 };
    gw_peers_t *p = gw_peers_create();
    uint8_t k[16];
    for (uint32_t i = 0; i < N; i++) {
        key_n(i, k);
        for (uint32_t j = 0; j <= i % 3; j++)
            gw_peers_add(p, k);
    }
    cr_assert_eq(gw_peers_size(p), N);
    for (uint32_t i = 0; i < N; i += 2) {
        key_n(i, k);
        for (uint32_t j = 0; j <= i % 3; j++)
            gw_peers_remove(p, k);
    }
    cr_expect_eq(gw_peers_size(p), N / 2);
    for (uint32_t i = 0; i < N; i++) {
        key_n(i, k);
        cr_expect_eq(gw_peers_get(p, k), i % 2 ? i % 3 + 1 : 0, "key %u", i);
    }
    gw_peers_destroy(p);
}

Test(peers, group_key_is_the_identity_grouping)
{
    struct sockaddr_in v4 = {.sin_family = AF_INET};
    struct sockaddr_in6 a = {.sin6_family = AF_INET6}, b = a, m = a;
    uint8_t k1[16], k2[16];
    inet_pton(AF_INET, "192.0.2.7", &v4.sin_addr);
    inet_pton(AF_INET6, "::ffff:192.0.2.7", &m.sin6_addr);
    cr_assert(gw_identity_group_key((struct sockaddr *)&v4, 64, k1));
    cr_assert(gw_identity_group_key((struct sockaddr *)&m, 64, k2));
    cr_expect_eq(memcmp(k1, k2, 16), 0, "an IPv4-mapped peer is its IPv4 address");
    inet_pton(AF_INET6, "2001:db8:1:2::1", &a.sin6_addr);
    inet_pton(AF_INET6, "2001:db8:1:2:ffff::9", &b.sin6_addr);
    gw_identity_group_key((struct sockaddr *)&a, 64, k1);
    gw_identity_group_key((struct sockaddr *)&b, 64, k2);
    cr_expect_eq(memcmp(k1, k2, 16), 0, "one /64 is one address");
    inet_pton(AF_INET6, "2001:db8:1:3::1", &b.sin6_addr);
    gw_identity_group_key((struct sockaddr *)&b, 64, k2);
    cr_expect_neq(memcmp(k1, k2, 16), 0, "another /64 is another");
    gw_identity_group_key((struct sockaddr *)&b, 48, k2);
    gw_identity_group_key((struct sockaddr *)&a, 48, k1);
    cr_expect_eq(memcmp(k1, k2, 16), 0, "server.ipv6_prefix 48 groups them");
    struct sockaddr un = {.sa_family = AF_UNIX};
    cr_expect_eq(gw_identity_group_key(&un, 64, k1), 0);
}
