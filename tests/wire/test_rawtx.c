/* tests/wire/test_rawtx.c: the recipient of signed transactions of every
 * type. The transactions were signed with ethers 6.17 (tests/node_modules,
 * one fixed key) and read back by ethers' Transaction.from, whose `to` is
 * the expected one; "eip155" is the example transaction of EIP-155 itself
 * (ethers reads its sender as 0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F,
 * as the EIP says). The 4844 network form is built here around the signed
 * 0x03 list (blobs are not read, so empty ones do). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/rawtx.h"

#define TO_11 "1111111111111111111111111111111111111111"

static const char legacy[] =
    "0xf86707843b9aca0082c3509411111111111111111111111111111111111111110184deadbeef25a061316c4e2963444ff33804d8c00"
    "5b98dd5c75a5f537b079f92aff2bd25d8aecfa0641ad9e0205bea1b4aa43e00f280e22db4cb9b750bc981a310fe751a5403e611";
static const char legacy_create[] =
    "0xf85307843b9aca0082c350800184deadbeef25a0a581abf023cd225b128ab69686144ccb49d395a8e39dab95c3f5c1910f117e67a0"
    "4f27b2192c5fae1bcdbaae8ca5330b606f1de7bb07676a881f17dafd05e37984";
static const char t1[] =
    "0x01f8a20107843b9aca0082c3509411111111111111111111111111111111111111110184deadbeeff838f79411111111111111111111"
    "11111111111111111111e1a0000000000000000000000000000000000000000000000000000000000000000180a0a60ffce98eb4980ca2"
    "b532da714fbb5984b99c56af3b00a3da8c8eda11b761c7a01a2c7d52f91f6eef64d0f15f9e83df2f24cc72a7e84088d942cbacf11424ee48";
static const char t2[] =
    "0x02f86e0107843b9aca00847735940082c3509411111111111111111111111111111111111111110184deadbeefc080a04c15696aee4a"
    "ecab0118f1e4c4f49a8abecfd2dbda7968c13e7613c916c486b3a03913ffc8f3c4b4aeff428d8302ec31410b3e213ff08049b0f9bef4b1"
    "e355e07b";
static const char t2_create[] =
    "0x02f85a0107843b9aca00847735940082c350800184deadbeefc001a0668ae4533c6ccf95a0bbe641cdaefa18ec40bf59a944361c9056"
    "a091b4d92121a00e3d8fae5f80fabb949fb88c7894bc4c3d64800948ba2e8345779dbeedf0f911";
static const char t3[] =
    "0x03f8910107843b9aca00847735940082c3509411111111111111111111111111111111111111110184deadbeefc001e1a00122222222"
    "22222222222222222222222222222222222222222222222222222280a0579f9f47f0f0f200096b51ca6f82e0b94e9f9565f3b68752c8c0"
    "13541a1e83a4a055162990fabd421cb9c0b7d9520bb77c1b45fe68c8cfcfb4cdbf8a284a41b014";
static const char t4[] =
    "0x04f8cc0107843b9aca00847735940082c3509411111111111111111111111111111111111111110184deadbeefc0f85cf85a01942222"
    "2222222222222222222222222222222222220880a0ac8aadb0674b9487a95334ef76c124895337038a5129cf6a041fd65d5de1fc3da041"
    "e51350650bcd8face9800856afcb7b8dcdc335efe224ac7cdfc432ce23868b01a0a6045afe9ad0d10d8e95ab745a5aa98ddbbbb544bc3c"
    "037680f3c3a4f9903b77a01c38a4053aa5508726e27588cf6fee99225ae4e06b74f82b1ef295a9b0221cc9";
static const char eip155[] =
    "0xf86c098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a76400008025a028ef61340bd939bc21"
    "95fe537567866003e1a15d3c71ff63e1590620aa636276a067cbe9d8997f761aecb703304b3800ccf555c9f3dc64214b297fb1966a3b6d83";

static size_t unhex(const char *h, uint8_t *out)
{
    if (h[0] == '0' && h[1] == 'x')
        h += 2;
    size_t n = strlen(h) / 2;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        cr_assert_eq(sscanf(h + 2 * i, "%2x", &v), 1);
        out[i] = (uint8_t)v;
    }
    return n;
}

static void expect_to(const char *hex, const char *want40)
{
    uint8_t to[20], want[20];
    cr_assert_eq(wire_rawtx_to_hex(hex, strlen(hex), to), WIRE_RAWTX_HAS_TO, "%.12s...", hex);
    unhex(want40, want);
    cr_assert_arr_eq(to, want, 20);
}

Test(rawtx, every_type_names_its_recipient)
{
    expect_to(legacy, TO_11);
    expect_to(t1, TO_11);
    expect_to(t2, TO_11);
    expect_to(t3, TO_11);
    expect_to(t4, TO_11);
    expect_to(eip155, "3535353535353535353535353535353535353535");
    expect_to(legacy + 2, TO_11); /* without 0x */
}

Test(rawtx, creations_have_no_recipient)
{
    uint8_t to[20];
    cr_assert_eq(wire_rawtx_to_hex(legacy_create, strlen(legacy_create), to), WIRE_RAWTX_CREATION);
    cr_assert_eq(wire_rawtx_to_hex(t2_create, strlen(t2_create), to), WIRE_RAWTX_CREATION);
}

/* 0x03 || rlp([signed list, blobs, commitments, proofs]): as eth_sendRawTransaction carries a blob transaction. */
Test(rawtx, blob_network_form)
{
    uint8_t bare[512], wrapped[600], to[20];
    size_t n = unhex(t3, bare);
    size_t inner = n - 1, payload = inner + 3;
    cr_assert(payload < 256);
    size_t w = 0;
    wrapped[w++] = 0x03;
    wrapped[w++] = 0xf8;
    wrapped[w++] = (uint8_t)payload;
    memcpy(wrapped + w, bare + 1, inner);
    w += inner;
    wrapped[w++] = 0xc0; /* blobs */
    wrapped[w++] = 0xc0; /* commitments */
    wrapped[w++] = 0xc0; /* proofs */
    cr_assert_eq(wire_rawtx_to(wrapped, w, to), WIRE_RAWTX_HAS_TO);
    cr_assert_eq(to[0], 0x11);
    cr_assert_eq(to[19], 0x11);
}

Test(rawtx, every_cut_is_malformed)
{
    static const char *const all[] = {legacy, legacy_create, t1, t2, t2_create, t3, t4, eip155};
    uint8_t buf[512], to[20];
    for (size_t k = 0; k < sizeof(all) / sizeof(all[0]); k++) {
        size_t n = unhex(all[k], buf);
        for (size_t cut = 0; cut < n; cut++)
            cr_assert_eq(wire_rawtx_to(buf, cut, to), WIRE_RAWTX_MALFORMED, "tx %zu cut at %zu", k, cut);
        /* a byte more after the list */
        buf[n] = 0x00;
        cr_assert_eq(wire_rawtx_to(buf, n + 1, to), WIRE_RAWTX_MALFORMED, "tx %zu with a byte more", k);
    }
}

Test(rawtx, refuses_what_a_node_refuses)
{
    uint8_t buf[512], to[20];
    size_t n = unhex(t2, buf);
    buf[0] = 0x05; /* a type it does not know */
    cr_assert_eq(wire_rawtx_to(buf, n, to), WIRE_RAWTX_MALFORMED);
    buf[0] = 0x7f;
    cr_assert_eq(wire_rawtx_to(buf, n, to), WIRE_RAWTX_MALFORMED);
    /* a 0x03 or 0x04 list with an empty "to": no creation there */
    n = unhex(t2_create, buf);
    buf[0] = 0x04;
    cr_assert_eq(wire_rawtx_to(buf, n, to), WIRE_RAWTX_MALFORMED);
    /* a recipient of 19 bytes: the list made one shorter around it */
    n = unhex(legacy, buf);
    cr_assert_eq(buf[11], 0x94); /* f8 67 | 07 | 84 3b9aca00 | 82 c350 | 94 <to> */
    buf[11] = 0x93;
    memmove(buf + 12 + 19, buf + 12 + 20, n - 32);
    buf[1] = (uint8_t)(buf[1] - 1);
    cr_assert_eq(wire_rawtx_to(buf, n - 1, to), WIRE_RAWTX_MALFORMED);
    /* non-canonical: the list's short length in the long form */
    uint8_t nc[] = {0xf8, 0x03, 0x80, 0x80, 0x80};
    cr_assert_eq(wire_rawtx_to(nc, sizeof(nc), to), WIRE_RAWTX_MALFORMED);
}

Test(rawtx, hex_that_is_not_hex)
{
    uint8_t to[20];
    cr_assert_eq(wire_rawtx_to_hex("", 0, to), WIRE_RAWTX_MALFORMED);
    cr_assert_eq(wire_rawtx_to_hex("0x", 2, to), WIRE_RAWTX_MALFORMED);
    cr_assert_eq(wire_rawtx_to_hex("0xf8a", 5, to), WIRE_RAWTX_MALFORMED);
    char bad[sizeof(legacy)];
    memcpy(bad, legacy, sizeof(legacy));
    bad[40] = 'g';
    cr_assert_eq(wire_rawtx_to_hex(bad, strlen(bad), to), WIRE_RAWTX_MALFORMED);
    /* upper case is hex too */
    for (size_t i = 2; bad[i]; i++)
        bad[i] = legacy[i] >= 'a' && legacy[i] <= 'f' ? (char)(legacy[i] - 32) : legacy[i];
    cr_assert_eq(wire_rawtx_to_hex(bad, strlen(bad), to), WIRE_RAWTX_HAS_TO);
}
