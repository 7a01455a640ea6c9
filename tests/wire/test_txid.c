/* tests/wire/test_txid.c: transaction ids against values computed by other
 * implementations. Keccak-256 hashes come from @noble/hashes (through viem and
 * ethers) and agree with anvil's web3_sha3 (Rust); Ethereum transactions were
 * signed with viem and their hashes are the ones anvil returned from
 * eth_sendRawTransaction; Solana transactions were signed with
 * @solana/web3.js 1.99, and Python's own base58 plus an ed25519 check
 * (cryptography) confirmed the first signature is the fee payer's. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/txid.h"

#define COUNTOF(a) (sizeof(a) / sizeof((a)[0]))

static void to_hex(const uint8_t *p, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", p[i]);
    out[2 * n] = '\0';
}

/* ---- Keccak-256 ------------------------------------------------------------ */

typedef enum input_kind { IN_TEXT, IN_A3, IN_PATTERN } input_kind_t;

typedef struct keccak_case {
    const char *name;
    input_kind_t kind;
    size_t len;           /* for IN_A3 and IN_PATTERN */
    const char *text;     /* for IN_TEXT */
    const char *hash;
} keccak_case_t;

/* Lengths around the 136-byte rate: one byte short of a block (the padding
 * bytes 0x01 and 0x80 share a byte), a whole block (padding takes a block of
 * its own), and so on. IN_PATTERN byte i is (i * 7 + 3) & 0xff. */
static const keccak_case_t keccak_cases[] = {
    {"empty", IN_TEXT, 0, "", "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"},
    {"abc", IN_TEXT, 0, "abc", "4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45"},
    {"200 x 0xa3", IN_A3, 200, NULL, "3a57666b048777f2c953dc4456f45a2588e1cb6f2da760122d530ac2ce607d4a"},
    {"pattern 1", IN_PATTERN, 1, NULL, "69c322e3248a5dfc29d73c5b0553b0185a35cd5bb6386747517ef7e53b15e287"},
    {"pattern 135", IN_PATTERN, 135, NULL, "00ef96af9cf4b24c7f269d922294444a197d0a33638c2e56634c57e892103a8f"},
    {"pattern 136", IN_PATTERN, 136, NULL, "742061bcad767ed4c4f5883b1dcb1aad11afdcc140dc469d953759b127b9f9ed"},
    {"pattern 137", IN_PATTERN, 137, NULL, "e3371f61e770abf254c34239c3b0099ad90594507415bc81dd0a10b9692bbf2a"},
    {"pattern 271", IN_PATTERN, 271, NULL, "4401c4afbe16ff911bdbf2d38e556e5b861f3fdf0f9d4306b1c46f6ae4f73584"},
    {"pattern 272", IN_PATTERN, 272, NULL, "ac141fd7b0a0ffcd2e967254d508da3ec616596493c36fa304425647d90e6de5"},
    {"pattern 273", IN_PATTERN, 273, NULL, "16192ea86793083e47731cb3c970600f04768414d92bc0540e54ce8607a0fce0"},
    {"pattern 1000", IN_PATTERN, 1000, NULL, "80cdc8dd52cbb3dbaea8f383209893fa2bb52efbd5aedbb4b26dcfe307fcdc9b"},
};

/* Writes the case's input to buf (room for 1000 bytes) and returns its length. */
static size_t keccak_input(const keccak_case_t *c, uint8_t *buf)
{
    switch (c->kind) {
    case IN_TEXT:
        memcpy(buf, c->text, strlen(c->text));
        return strlen(c->text);
    case IN_A3:
        memset(buf, 0xa3, c->len);
        return c->len;
    case IN_PATTERN:
        for (size_t i = 0; i < c->len; i++)
            buf[i] = (uint8_t)(i * 7 + 3);
        return c->len;
    }
    return 0;
}

Test(txid, keccak256_vectors)
{
    for (size_t i = 0; i < COUNTOF(keccak_cases); i++) {
        const keccak_case_t *c = &keccak_cases[i];
        uint8_t in[1000], hash[32];
        char hex[65];
        size_t n = keccak_input(c, in);
        wire_keccak256(in, n, hash);
        to_hex(hash, 32, hex);
        cr_assert_str_eq(hex, c->hash, "%s", c->name);
    }
}

/* The same bytes at every offset from an 8-byte boundary hash the same. */
Test(txid, keccak256_any_alignment)
{
    for (size_t i = 0; i < COUNTOF(keccak_cases); i++) {
        const keccak_case_t *c = &keccak_cases[i];
        _Alignas(8) uint8_t in[1000], buf[1008];
        size_t n = keccak_input(c, in);
        for (size_t off = 1; off < 8; off++) {
            uint8_t hash[32];
            char hex[65];
            memset(buf, 0xee, sizeof buf);
            memcpy(buf + off, in, n);
            wire_keccak256(buf + off, n, hash);
            to_hex(hash, 32, hex);
            cr_assert_str_eq(hex, c->hash, "%s at offset %zu", c->name, off);
        }
    }
}

/* wire_eth_tx_hash decodes in rate-sized chunks: it must agree with the
 * one-shot hash of the same bytes at every length in the table. */
Test(txid, eth_hash_streams_like_keccak)
{
    for (size_t i = 0; i < COUNTOF(keccak_cases); i++) {
        const keccak_case_t *c = &keccak_cases[i];
        uint8_t in[1000];
        char text[2 + 2000 + 1] = "0x", out[67];
        size_t n = keccak_input(c, in);
        if (n == 0)
            continue;
        to_hex(in, n, text + 2);
        cr_assert_eq(wire_eth_tx_hash(text, strlen(text), out), SL_OK, "%s", c->name);
        cr_assert_eq(strncmp(out, "0x", 2), 0, "%s", c->name);
        cr_assert_str_eq(out + 2, c->hash, "%s", c->name);
    }
}

/* ---- Ethereum transactions ------------------------------------------------- */

typedef struct eth_case {
    const char *name;
    const char *raw;
    const char *hash;
} eth_case_t;

/* Signed by viem with anvil's first dev key on chain 31337; hashes are what
 * anvil answered to eth_sendRawTransaction. */
static const eth_case_t eth_cases[] = {
    {"legacy (EIP-155)",
     "0xf86d8084773594008252089470997970c51812dc3a010c7d01b50e0d17dc79c8880de0b6b3a76400008082f4f5a0a0"
     "65f25625ee92f418f720274bdf633c4ef86074e18c48de2fc2d6a490ea1b5aa01363c2791edd58031b02bd65e949c4dd"
     "6485ea7efa26a241ae02944e121406a7",
     "0xfd7368dc672482eee7adfd0e8d2bdad7d92592ede85248663298d33d832d3abf"},
    {"EIP-2930",
     "0x01f8a0827a690184773594008275309470997970c51812dc3a010c7d01b50e0d17dc79c80180f838f79470997970c5"
     "1812dc3a010c7d01b50e0d17dc79c8e1a000000000000000000000000000000000000000000000000000000000000000"
     "0180a041b55b486eb0d7761f8829bd03d92686bbcc614043b4a18a19de1a4d5fa5098ba02e524ccb9cb8aae5ad985066"
     "f2730f8876fe1672acc26c2e9d6f472c1870230d",
     "0x8db965e3daa640c93ff137345c32f20ebee53e7bdd5fb2297b2bcab3bf4ebfeb"},
    {"EIP-1559",
     "0x02f86e827a6902843b9aca0084b2d05e008252089470997970c51812dc3a010c7d01b50e0d17dc79c882303980c001"
     "a0ced439bd7f647dc0022642e6dddd1a1909f72c3868d52b6b711776b6508eb02ea0215bf27644dc8eb72c711a2f9814"
     "8430beb6c753fbf51f93fa97b560c0e989cc",
     "0x22b4913ebb21f9088a4b902fbd327c2cf47011e2b030efa1f4a854e6102cecfd"},
    {"EIP-1559, 300 bytes of calldata",
     "0x02f9019b827a6903843b9aca0084b2d05e00830186a09470997970c51812dc3a010c7d01b50e0d17dc79c880b9012c"
     "05121f2c394653606d7a8794a1aebbc8d5e2effc091623303d4a5764717e8b98a5b2bfccd9e6f3000d1a2734414e5b68"
     "75828f9ca9b6c3d0ddeaf704111e2b3845525f6c798693a0adbac7d4e1eefb0815222f3c495663707d8a97a4b1becbd8"
     "e5f2ff0c192633404d5a6774818e9ba8b5c2cfdce9f603101d2a3744515e6b7885929facb9c6d3e0edfa0714212e3b48"
     "55626f7c8996a3b0bdcad7e4f1fe0b1825323f4c596673808d9aa7b4c1cedbe8f5020f1c293643505d6a7784919eabb8"
     "c5d2dfecf90613202d3a4754616e7b8895a2afbcc9d6e3f0fd0a1724313e4b5865727f8c99a6b3c0cddae7f4010e1b28"
     "35424f5c697683909daab7c4d1deebf805121f2c394653606d7a8794a1aebbc8d5e2effc091623303d4a5764717e8b98"
     "a5b2bfccd9e6f3000d1a2734c080a0ee5f2a637b919e48f9cf02f1d4d0af78654009e82659fd9857734ad554265b5da0"
     "6b9c20b466d7932102a805934b83c0548d0d119dcfdde2b3727afdc226bfc3d0",
     "0x09afa9183712dc2c8c4e7b32936d7c4bc71809a43310ae34b808d7c039d25ddd"},
    {"EIP-7702",
     "0x04f8cd827a6904843b9aca0084b2d05e00830186a09470997970c51812dc3a010c7d01b50e0d17dc79c88080c0f85e"
     "f85c827a69945fbdb2315678afecb367f032d93f642f64180aa30580a04f749cffee1e938174c7f3600a02933a4b7d52"
     "b096ccc43e5979bddfd2d59bb2a054c217dc3a0ffd80c9c94375a58bb971ef01fb5d49dee48cbc8819e57a237b7e80a0"
     "04e25423a37b38ba0f55a66a469085b6bc4074ec2ca632d681b21559b3dd14a2a042e28f903629c1c31f5a36ff5caf4e"
     "fb83ae8bcb2fbe5c9e2525b6c91c4cdec4",
     "0x37ba763e53b107fa2511bf2e9e2ff104049386c51eb731a7fea8cda19f3c425b"},
};

static void check_eth(const char *name, const char *text, const char *want)
{
    char out[67];
    memset(out, 'x', sizeof out);
    cr_assert_eq(wire_eth_tx_hash(text, strlen(text), out), SL_OK, "%s: %.20s", name, text);
    cr_assert_str_eq(out, want, "%s: %.20s", name, text);
}

Test(txid, eth_transactions)
{
    for (size_t i = 0; i < COUNTOF(eth_cases); i++) {
        const eth_case_t *c = &eth_cases[i];
        size_t n = strlen(c->raw);
        char *v = malloc(n + 1);
        check_eth(c->name, c->raw, c->hash);
        check_eth(c->name, c->raw + 2, c->hash);             /* no prefix */
        for (size_t j = 0; j <= n; j++)
            v[j] = (char)toupper((unsigned char)c->raw[j]);  /* "0X" and upper-case digits */
        check_eth(c->name, v, c->hash);
        v[1] = 'x';
        check_eth(c->name, v, c->hash);
        free(v);
    }
}

typedef struct bad_hex {
    const char *text;
    size_t len;
    sl_err_t err;
} bad_hex_t;

static const bad_hex_t bad_hex[] = {
    {"", 0, SL_ERR_PARSE},
    {"0x", 2, SL_ERR_PARSE},
    {"0X", 2, SL_ERR_PARSE},
    {"0", 1, SL_ERR_PARSE},
    {"0x0", 3, SL_ERR_PARSE},
    {"0xabc", 5, SL_ERR_PARSE},
    {"0xzz", 4, SL_ERR_PARSE},
    {"0x0g", 4, SL_ERR_PARSE},
    {"0x 01", 5, SL_ERR_PARSE},
    {"0x01 ", 5, SL_ERR_PARSE},
    {"0x0x01", 6, SL_ERR_PARSE},
    {"x001", 4, SL_ERR_PARSE},
    {"0x\0\0", 4, SL_ERR_PARSE},
    {"0x01\0" "0", 6, SL_ERR_PARSE},
    {"\"0x01\"", 6, SL_ERR_PARSE},
};

Test(txid, eth_invalid)
{
    for (size_t i = 0; i < COUNTOF(bad_hex); i++) {
        char out[67];
        memset(out, 'x', sizeof out);
        cr_assert_eq(wire_eth_tx_hash(bad_hex[i].text, bad_hex[i].len, out), bad_hex[i].err, "case %zu", i);
        cr_assert_eq(out[0], '\0', "case %zu", i);
    }
}

/* 1 MiB of decoded bytes is the last size taken. */
Test(txid, eth_size_limit)
{
    size_t max = (size_t)1 << 20;
    char *text = malloc(2 + 2 * max + 2 + 1), out[67], want[67] = "0x";
    uint8_t *zeros = calloc(max, 1), hash[32];
    memcpy(text, "0x", 2);
    memset(text + 2, '0', 2 * max + 2);
    wire_keccak256(zeros, max, hash);
    to_hex(hash, 32, want + 2);
    cr_assert_eq(wire_eth_tx_hash(text, 2 + 2 * max, out), SL_OK);
    cr_assert_str_eq(out, want);
    cr_assert_eq(wire_eth_tx_hash(text, 2 + 2 * max + 2, out), SL_ERR_TOO_LARGE);
    cr_assert_eq(out[0], '\0');
    free(text);
    free(zeros);
}

/* ---- base58 ---------------------------------------------------------------- */

typedef struct b58_case {
    const char *hex;      /* the bytes */
    const char *text;
} b58_case_t;

/* Bitcoin Core's base58_encode_decode.json plus leading-zero and 0xff cases. */
static const b58_case_t b58_cases[] = {
    {"", ""},
    {"00", "1"},
    {"0000", "11"},
    {"68656c6c6f20776f726c64", "StV1DL6CwTryKyV"},
    {"61", "2g"},
    {"626262", "a3gV"},
    {"636363", "aPEr"},
    {"73696d706c792061206c6f6e6720737472696e67", "2cFupjhnEsSn59qHXstmK2ffpLv2"},
    {"00eb15231dfceb60925886b67d065299925915aeb172c06647", "1NS17iag9jJgTHD1VXjvLCEnZuQ3rJDE9L"},
    {"516b6fcd0f", "ABnLTmg"},
    {"bf4f89001e670274dd", "3SEo3LWLoPntC"},
    {"572e4794", "3EFU7m"},
    {"ecac89cad93923c02321", "EJDM8drfXA6uyA"},
    {"10c8511e", "Rt5zm"},
    {"00000000000000000000", "1111111111"},
    {"ff", "5Q"},
    {"0000ff", "115Q"},
    {"000102", "15T"},
    {"00000102", "115T"},
};

static size_t from_hex(const char *hex, uint8_t *out)
{
    size_t n = strlen(hex) / 2;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        sscanf(hex + 2 * i, "%2x", &v);
        out[i] = (uint8_t)v;
    }
    return n;
}

Test(txid, base58_vectors)
{
    for (size_t i = 0; i < COUNTOF(b58_cases); i++) {
        const b58_case_t *c = &b58_cases[i];
        uint8_t bytes[64], got[64];
        char text[2 * 64 + 1];
        size_t n = from_hex(c->hex, bytes), m = 99;
        wire_base58_encode(bytes, n, text);
        cr_assert_str_eq(text, c->text, "encode %s", c->hex);
        cr_assert_eq(wire_base58_decode(c->text, strlen(c->text), got, n, &m), SL_OK, "decode %s", c->text);
        cr_assert_eq(m, n, "decode %s", c->text);
        cr_assert_eq(memcmp(got, bytes, n), 0, "decode %s", c->text);
        if (n > 0) {
            cr_assert_eq(wire_base58_decode(c->text, strlen(c->text), got, n - 1, &m), SL_ERR_TOO_LARGE,
                         "decode %s into %zu bytes", c->text, n - 1);
            cr_assert_eq(m, 0);
        }
    }
}

/* Every byte as a one-character text: the alphabet's 58 decode to their
 * index ('1' to a zero byte), every other byte is refused. */
Test(txid, base58_alphabet)
{
    static const char alphabet[] = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
    for (int c = 0; c < 256; c++) {
        char s[1] = {(char)c};
        uint8_t out[4];
        size_t n;
        const char *at = c == 0 ? NULL : memchr(alphabet, c, 58);
        sl_err_t err = wire_base58_decode(s, 1, out, sizeof out, &n);
        if (at == NULL) {
            cr_assert_eq(err, SL_ERR_PARSE, "byte 0x%02x", c);
            continue;
        }
        cr_assert_eq(err, SL_OK, "byte 0x%02x", c);
        cr_assert_eq(n, 1, "byte 0x%02x", c);
        cr_assert_eq(out[0], at - alphabet, "byte 0x%02x", c);
    }
}

static const char *const b58_bad[] = {"0", "O", "I", "l", "10", "1O", "zI", "2l", "1 1", "+", "abc=", "\xff", "3-"};

Test(txid, base58_invalid)
{
    for (size_t i = 0; i < COUNTOF(b58_bad); i++) {
        uint8_t out[16];
        size_t n = 99;
        cr_assert_eq(wire_base58_decode(b58_bad[i], strlen(b58_bad[i]), out, sizeof out, &n), SL_ERR_PARSE,
                     "%s", b58_bad[i]);
        cr_assert_eq(n, 0, "%s", b58_bad[i]);
    }
    uint8_t out[4];
    size_t n;
    cr_assert_eq(wire_base58_decode("2\0" "2", 3, out, sizeof out, &n), SL_ERR_PARSE);
}

/* Leading '1's count against cap; a long text is refused before any work. */
Test(txid, base58_too_large)
{
    uint8_t out[1232];
    size_t n;
    char z[2000];
    cr_assert_eq(wire_base58_decode("1111", 4, out, 3, &n), SL_ERR_TOO_LARGE);
    cr_assert_eq(wire_base58_decode("1111", 4, out, 4, &n), SL_OK);
    cr_assert_eq(n, 4);
    cr_assert_eq(wire_base58_decode("zzzz", 4, out, 2, &n), SL_ERR_TOO_LARGE); /* 58^4 - 1 needs 3 */
    cr_assert_eq(wire_base58_decode("zzzz", 4, out, 3, &n), SL_OK);
    cr_assert_eq(n, 3);
    memset(z, 'z', sizeof z);
    cr_assert_eq(wire_base58_decode(z, sizeof z, out, sizeof out, &n), SL_ERR_TOO_LARGE);
    cr_assert_eq(wire_base58_decode(z, sizeof z, NULL, 0, &n), SL_ERR_TOO_LARGE);
    n = 99;
    cr_assert_eq(wire_base58_decode("", 0, NULL, 0, &n), SL_OK);
    cr_assert_eq(n, 0);
    n = 99;
    cr_assert_eq(wire_base64_decode("", 0, NULL, 0, &n), SL_OK);
    cr_assert_eq(n, 0);
}

/* Pseudo-random bytes of every length to 200, with 0-3 leading zeros:
 * encode then decode gives them back, into a buffer of exactly their size. */
Test(txid, base58_round_trip)
{
    uint32_t x = 12345;
    for (size_t len = 0; len <= 200; len++) {
        uint8_t in[200], back[200];
        char text[2 * 200 + 1];
        size_t n;
        for (size_t i = 0; i < len; i++) {
            x = x * 1103515245u + 12345u;
            in[i] = i < len % 4 ? 0 : (uint8_t)(x >> 16);
        }
        wire_base58_encode(in, len, text);
        cr_assert_leq(strlen(text), 2 * len, "len %zu", len);
        cr_assert_eq(wire_base58_decode(text, strlen(text), back, len, &n), SL_OK, "len %zu", len);
        cr_assert_eq(n, len);
        cr_assert_eq(memcmp(back, in, len), 0, "len %zu", len);
    }
}

/* ---- base64 ---------------------------------------------------------------- */

typedef struct b64_case {
    const char *bytes;
    size_t len;
    const char *padded;
    const char *bare;     /* the same without '=' */
} b64_case_t;

/* RFC 4648 section 10, and the two characters outside letters and digits. */
static const b64_case_t b64_cases[] = {
    {"", 0, "", ""},
    {"f", 1, "Zg==", "Zg"},
    {"fo", 2, "Zm8=", "Zm8"},
    {"foo", 3, "Zm9v", "Zm9v"},
    {"foob", 4, "Zm9vYg==", "Zm9vYg"},
    {"fooba", 5, "Zm9vYmE=", "Zm9vYmE"},
    {"foobar", 6, "Zm9vYmFy", "Zm9vYmFy"},
    {"\xfb\xff", 2, "+/8=", "+/8"},
    {"\x00\x00\x00", 3, "AAAA", "AAAA"},
};

Test(txid, base64_vectors)
{
    for (size_t i = 0; i < COUNTOF(b64_cases); i++) {
        const b64_case_t *c = &b64_cases[i];
        size_t want = c->len;
        const char *texts[] = {c->padded, c->bare};
        for (size_t t = 0; t < 2; t++) {
            uint8_t out[16];
            size_t n = 99;
            cr_assert_eq(wire_base64_decode(texts[t], strlen(texts[t]), out, want, &n), SL_OK, "%s", texts[t]);
            cr_assert_eq(n, want, "%s", texts[t]);
            cr_assert_eq(memcmp(out, c->bytes, want), 0, "%s", texts[t]);
            if (want > 0)
                cr_assert_eq(wire_base64_decode(texts[t], strlen(texts[t]), out, want - 1, &n), SL_ERR_TOO_LARGE,
                             "%s", texts[t]);
        }
    }
}

static const char *const b64_bad[] = {
    "Z",          /* one character carries 6 bits: no byte */
    "Zm9vY",
    "Zg=",        /* padding is taken only on a whole quantum */
    "Zg===",
    "Z===",
    "====",
    "=",
    "Zg==Zg==",   /* padding inside */
    "=Zg=",
    "Zh==",       /* unused bits set */
    "Zm9=",
    "Zh",
    "Zm9",
    "Zm9v\n",
    "Zm 9v",
    "Zm9v-_8=",   /* URL-safe alphabet */
    "Zm9v.A==",
};

Test(txid, base64_invalid)
{
    for (size_t i = 0; i < COUNTOF(b64_bad); i++) {
        uint8_t out[16];
        size_t n = 99;
        cr_assert_eq(wire_base64_decode(b64_bad[i], strlen(b64_bad[i]), out, sizeof out, &n), SL_ERR_PARSE,
                     "%s", b64_bad[i]);
        cr_assert_eq(n, 0, "%s", b64_bad[i]);
    }
    uint8_t out[4];
    size_t n;
    cr_assert_eq(wire_base64_decode("Zg\0=", 4, out, sizeof out, &n), SL_ERR_PARSE);
}

/* An invalid text is PARSE whatever the room, in both codecs: the fuzzer
 * compares a small and a large buffer on that. */
Test(txid, parse_before_too_large)
{
    static const char *const b64[] = {"Zm9vYmFyZh==", "Zm9vYmFy!A==", "Zm9vYmFyZm9=", "Zm9vYmFyZ"};
    static const char *const b58[] = {"zzzzzzzz0", "Izzzzzzzz", "111111111l"};
    uint8_t out[4];
    size_t n;
    for (size_t i = 0; i < COUNTOF(b64); i++)
        cr_assert_eq(wire_base64_decode(b64[i], strlen(b64[i]), out, 2, &n), SL_ERR_PARSE, "%s", b64[i]);
    for (size_t i = 0; i < COUNTOF(b58); i++)
        cr_assert_eq(wire_base58_decode(b58[i], strlen(b58[i]), out, 2, &n), SL_ERR_PARSE, "%s", b58[i]);
}

/* ---- Solana ---------------------------------------------------------------- */

typedef struct sol_case {
    const char *name;
    const char *b58;
    const char *b64;
    const char *signature;
} sol_case_t;

/* Signed by @solana/web3.js with Keypair.fromSeed(fill(7)) as fee payer (and
 * seeds fill(9), fill(11) as the other signers); signature = bs58 of
 * tx.signature, i.e. the fee payer's. */
static const sol_case_t sol_cases[] = {
    {"transfer, one signer",
     "5caVQ9HrhEa6THevWYpHhFK1CLbR9d6Zhmhx2rdd3Nk69XEMQwg7aYarnvEBbT6pg1MEg2NQBBKpfWprAiAtvN9a11ALkZsr"
     "uKpD29SAQ4SL9KhvDvtiaBcy25DQ4A4gV2qkacwLx5uPoJEPbPYSjxQ52rwzsspNDxqAqrq3efdyXavmcZ5fDXQKf34aUYQY"
     "9gt53D6hq83t1KvYpzA4o9Mx2Hk2KMvCtzX69CvSNBKDMjoNx5DzQSzwDzaTTERbezoFzf26HftC9QnuBP1VuXooFmS1M3i2"
     "kswmH",
     "Aap27hlNKmwmpgPSDHUMB/Zh1qMvJbKQ+qsIv1QEAnspdv6ftBPYTuTKbA/Pa5pprjlw/FQrHZ/j7vH9nMrsowwBAAED6kps"
     "Y+KcUgq+9VB7Ey7F+ZVHdq6+vnuSQh7qaRRG0ix+jAiHYL/eHd3PMsF/IJuCQu5SqvEx+s2I0OosbQsG8gAAAAAAAAAAAAAA"
     "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAABAgIAAQwCAAAA6AMAAAAAAAA=",
     "4QfxbiKbHXonyhC1R8XFT1dZfFbAA8YydXqQAZv2RsoxEBTe98Lx3EwXiFzqk19ARg6t6YrmVxiURSjigvKs5YqH"},
    {"three signers",
     "r9RsRC3iLPRnkSgBQSX7suSKYW6QNFs7ddcvnx2pSEbJZk4mm4h2W5tBGg7tV3HebwchVZNsVzVbvwRTemWdKZcpsFVSzK8Z"
     "gCJYbJNHbXqCEGi1PNhrenpauKhBBsNBgYRMr4PDoLEEWaEVzFegkiNgGhz47Rgk755rJMdUvPyWx3R8u8fRmwXzSrpV7vtP"
     "3MoQ1vGe7TZc4yigN1k6nhw1mJJ4ty8PRmyXscFmrbAJPHm7R7zd15m8qLDM3cFXrQZUSjSCULS8vQyr7U8Jcb9gfkbaJ34e"
     "rekXXGP1Lej7gWAWyRvCG7waLEYxA3ajHibQsYL3vnawAb1TGhRtg5wieGg7seGMzAndziwtGms3RM6BZ811VmTLeE6Ej2Uc"
     "DPYdKePU3TzTji21XPYk6HDVVU9QDtSH4P1Tdd2eVeiGiXt8R5aNysLiRThZiimZCS1U1NgLzX3qEWUEKJotnspJKLqESSKH"
     "s4GwhxDS1SbtxGJuHS19ZFpPVQTnpLZKGg6kXdCtwjBdWRXUgzygACHqUgaJezvGhHyearJanLQ5giqtnLCQ2N1CceR3WMix"
     "zK",
     "AzDmgp/ltxyEMpinj+yzMtIls53b+OyddcJ7XGSlmG0GBRvZ2vd7YpfqWRWhE1wSxyprBCtyP3mGabCdXLI8AgDUQxssZM7/"
     "H961qDiJk2FRmhywWYjkFOVKdVYSVErn67GmMgvWzqLOyYrW2CUT+ySTwOz/Rwfc63kQ3xQb4IIIYqQ4v5uGDXWTlEzgTOB9"
     "yLQ2B18wmNNH8fh1GWdXI0Qpdb2FbdcLAcyJke1n87vJXZ2L5F+qgqCeDY0AKDTSAwMAAQXqSmxj4pxSCr71UHsTLsX5lUd2"
     "rr6+e5JCHuppFEbSLGa+fjMsekUzMr2dCn99sFX1xe8aBq2mbZizn7aBDEc6/RckOFqgx1tk+3jNYC+h2ZH96/drE8WO1wLq"
     "yDXp9hh+jAiHYL/eHd3PMsF/IJuCQu5SqvEx+s2I0OosbQsG8gAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAxJrn"
     "dgN4IFTxep3s6kO0ROug7bEsbx0xxuDkqEvwUusCBAICAwwCAAAABQAAAAAAAAAEAgEDDAIAAAAGAAAAAAAAAA==",
     "yhuNCrSzurzV99YXE4MDB945ei8x3SWMbahVUjc4qmBQ5rfF2A9bZr7bxLVTwwmZdjQgYu7sGLVfV7ecoyVyMjm"},
    {"v0 message",
     "2tvSqjPMTK8UnWzEC2vZ6mogCic3RiN5CmNzoxTfuBSA1gPiff3ktZ3gyve3zTaxXEogatgXx1sHVsSauiPDzpwGFqRDEbd3"
     "94XU53JAcy1vX7jfKfKWA4kxUmGckMLnP9VL4NyL1oEv4TyMEz8LUDSQjNaSDVjCzZZXXhfZz4MsCahwBTyCivzKpEW331A4"
     "ZcqzmMewcX7C58SVZrUgPvTCkx1VNxdPaB51iQgcvxxvamnZn2ns14NX9yJtjNsYyZk46g5wwLBp9VzKASUft3cyLA7YoQLq"
     "oQ7o4RwXuTMsJC3HqiNdihfB4g7Di7n2LT3jy1UWjmTTuWkM7h7nEKwPGDj4YFV4tViX",
     "AWtyd4EHiSzPG/KF/7qe7c0RpAZ+Si6dF5KwsrQgeZOd+0Cb+YaeawxlKUHkgb/UPU43+Wh7lcksWre6qjUzuASAAQACBOpK"
     "bGPinFIKvvVQexMuxfmVR3auvr57kkIe6mkURtIsfowIh2C/3h3dzzLBfyCbgkLuUqrxMfrNiNDqLG0LBvIDBkZv5SEXMv/s"
     "rbpyw5vnvIzlu8X3EmssQ5s6QAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAxJrndgN4IFTxep3s6kO0ROug"
     "7bEsbx0xxuDkqEvwUusCAgAJAwEAAAAAAAAAAwIAAQwCAAAAKgAAAAAAAAAA",
     "39bb1zr97icrEPvPipWGZgGhXcZ3qqk7ost99zihqm33tK8xtc1mtcroQW7zkSqAvS3kEFBH95xppKJy5gHxf24K"},
};

static void check_sol(const char *name, const char *text, wire_sol_encoding_t enc, const char *want)
{
    char out[96];
    memset(out, 'x', sizeof out);
    cr_assert_eq(wire_sol_tx_signature(text, strlen(text), enc, out), SL_OK, "%s (%d)", name, enc);
    cr_assert_str_eq(out, want, "%s (%d)", name, enc);
}

Test(txid, sol_transactions)
{
    for (size_t i = 0; i < COUNTOF(sol_cases); i++) {
        const sol_case_t *c = &sol_cases[i];
        check_sol(c->name, c->b58, WIRE_SOL_BASE58, c->signature);
        check_sol(c->name, c->b64, WIRE_SOL_BASE64, c->signature);
    }
}

/* Each real transaction, cut so its first signature is incomplete (84 base64
 * characters are 63 bytes), is refused. */
Test(txid, sol_truncated)
{
    for (size_t i = 0; i < COUNTOF(sol_cases); i++) {
        char out[96];
        cr_assert_eq(wire_sol_tx_signature(sol_cases[i].b64, 84, WIRE_SOL_BASE64, out), SL_ERR_PARSE, "%s",
                     sol_cases[i].name);
        cr_assert_eq(out[0], '\0');
    }
}

static void b64_encode(const uint8_t *p, size_t n, char *out)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        out[o++] = a[v >> 18];
        out[o++] = a[v >> 12 & 63];
        out[o++] = i + 1 < n ? a[v >> 6 & 63] : '=';
        out[o++] = i + 2 < n ? a[v & 63] : '=';
    }
    out[o] = '\0';
}

typedef struct sol_synth {
    const char *name;
    uint8_t head[4];      /* the signature count as encoded */
    size_t head_len;
    size_t body;          /* bytes after it: signature i is filled with i + 1 */
    sl_err_t err;
} sol_synth_t;

/* Made-up transactions around the count's edges; each is tried in both
 * encodings. A count in 2 bytes (>= 128) cannot fit in 1232 bytes. */
static const sol_synth_t sol_synth[] = {
    {"one signature, nothing else", {0x01}, 1, 64, SL_OK},
    {"two signatures and a message", {0x02}, 1, 128 + 100, SL_OK},
    {"the largest transaction", {0x01}, 1, 1231, SL_OK},
    {"count 0", {0x00}, 1, 64, SL_ERR_PARSE},
    {"count 0, no body", {0x00}, 1, 0, SL_ERR_PARSE},
    {"63 of 64 bytes", {0x01}, 1, 63, SL_ERR_PARSE},
    {"count 2, 127 bytes", {0x02}, 1, 127, SL_ERR_PARSE},
    {"count 1 spelled 0x81 0x00", {0x81, 0x00}, 2, 64, SL_ERR_PARSE},
    {"count 1 spelled 0x81 0x80 0x00", {0x81, 0x80, 0x00}, 3, 64, SL_ERR_PARSE},
    {"count 128", {0x80, 0x01}, 2, 1230, SL_ERR_PARSE},
    {"third byte continues", {0x81, 0x80, 0x80}, 3, 64, SL_ERR_PARSE},
    {"over 16 bits", {0xff, 0xff, 0x04}, 3, 64, SL_ERR_PARSE},
    {"count cut off", {0x80}, 1, 0, SL_ERR_PARSE},
    {"1233 bytes", {0x01}, 1, 1232, SL_ERR_TOO_LARGE},
};

Test(txid, sol_synthetic)
{
    for (size_t i = 0; i < COUNTOF(sol_synth); i++) {
        const sol_synth_t *c = &sol_synth[i];
        uint8_t tx[1300];
        char b58[2 * sizeof tx + 1], b64[sizeof tx / 3 * 4 + 5], want[2 * 64 + 1], out[96];
        size_t n = c->head_len + c->body;
        memcpy(tx, c->head, c->head_len);
        for (size_t j = 0; j < c->body; j++)
            tx[c->head_len + j] = (uint8_t)(j / 64 + 1);
        wire_base58_encode(tx, n, b58);
        b64_encode(tx, n, b64);
        wire_base58_encode(tx + c->head_len, 64, want);
        const char *texts[] = {b58, b64};
        for (int e = 0; e < 2; e++) {
            wire_sol_encoding_t enc = e == 0 ? WIRE_SOL_BASE58 : WIRE_SOL_BASE64;
            memset(out, 'x', sizeof out);
            cr_assert_eq(wire_sol_tx_signature(texts[e], strlen(texts[e]), enc, out), c->err, "%s (%d)", c->name, e);
            if (c->err == SL_OK)
                cr_assert_str_eq(out, want, "%s (%d)", c->name, e);
            else
                cr_assert_eq(out[0], '\0', "%s (%d)", c->name, e);
        }
    }
}

/* The longest signature text: 64 bytes of 0xff are 88 characters. */
Test(txid, sol_longest_signature)
{
    uint8_t tx[65];
    char text[2 * sizeof tx + 1], out[96];
    tx[0] = 1;
    memset(tx + 1, 0xff, 64);
    wire_base58_encode(tx, sizeof tx, text);
    cr_assert_eq(wire_sol_tx_signature(text, strlen(text), WIRE_SOL_BASE58, out), SL_OK);
    cr_assert_str_eq(out, "67rpwLCuS5DGA8KGZXKsVQ7dnPb9goRLoKfgGbLfQg9WoLUgNY77E2jT11fem3coV9nAkguBACzrU1iyZM4B8roQ");
}

Test(txid, sol_bad_text)
{
    char out[96];
    const sol_case_t *c = &sol_cases[0];
    cr_assert_eq(wire_sol_tx_signature("", 0, WIRE_SOL_BASE58, out), SL_ERR_PARSE);
    cr_assert_eq(wire_sol_tx_signature("", 0, WIRE_SOL_BASE64, out), SL_ERR_PARSE);
    cr_assert_eq(wire_sol_tx_signature("4Qfx0biK", 8, WIRE_SOL_BASE58, out), SL_ERR_PARSE);
    cr_assert_eq(wire_sol_tx_signature("Aap2*hlN", 8, WIRE_SOL_BASE64, out), SL_ERR_PARSE);
    /* each text in the other encoding */
    cr_assert_eq(wire_sol_tx_signature(c->b64, strlen(c->b64), WIRE_SOL_BASE58, out), SL_ERR_PARSE);
    cr_assert_eq(wire_sol_tx_signature(c->b58, strlen(c->b58), WIRE_SOL_BASE64, out), SL_ERR_PARSE);
    cr_assert_eq(wire_sol_tx_signature(c->b58, strlen(c->b58), (wire_sol_encoding_t)2, out), SL_ERR_INVALID);
    cr_assert_eq(out[0], '\0');
}
