/* tests/fuzz/fuzz_txid.c: every entry point of wire/txid.h on every input.
 *
 * The input is used three ways: as hex text for wire_eth_tx_hash, as
 * base58 / base64 text for the decoders and wire_sol_tx_signature, and as
 * raw bytes (a Solana transaction or data to hash) that the fuzzer encodes
 * itself. Oracles:
 *  - answers only OK, PARSE or TOO_LARGE; outputs are NUL-terminated within
 *    their size, "" on error; every output buffer is a heap block of exactly
 *    its documented size, so ASan sees one byte too many;
 *  - what is accepted is decided by simple reference checks written here
 *    (alphabet scans, a big-number-free shortvec reader that re-encodes);
 *  - hashing hex equals hashing the decoded bytes, at any alignment;
 *  - both codecs are canonical: decode then encode gives the text back, and
 *    encode then decode gives the bytes back, into a buffer of exactly their
 *    size; a small buffer fails only with TOO_LARGE where a large one holds
 *    the result. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/txid.h"

#define CHECK(cond) \
    ((cond) ? (void)0 : (fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond), abort()))

#define SMALL_CAP 8
#define LARGE_CAP 1500    /* above Solana's 1232 bytes; base58 is O(len * cap) */
#define SOL_MAX_TX 1232

static const char b58_alphabet[] = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
static const char b64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int in_alphabet(const char *alphabet, char c)
{
    return c != '\0' && strchr(alphabet, c) != NULL;
}

static int is_hex_digit(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* An exact-size heap copy, so reading past len is an ASan report. */
static char *copy(const void *p, size_t len)
{
    char *c = malloc(len ? len : 1);
    memcpy(c, p, len);
    return c;
}

static void b64_encode(const uint8_t *p, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        out[o++] = b64_alphabet[v >> 18];
        out[o++] = b64_alphabet[v >> 12 & 63];
        out[o++] = i + 1 < n ? b64_alphabet[v >> 6 & 63] : '=';
        out[o++] = i + 2 < n ? b64_alphabet[v & 63] : '=';
    }
    out[o] = '\0';
}

/* ---- Ethereum ------------------------------------------------------------ */

static void check_eth(const char *text, size_t len)
{
    char *out = malloc(67);
    sl_err_t err = wire_eth_tx_hash(text, len, out);
    const char *hex = text;
    size_t n = len;
    if (n >= 2 && hex[0] == '0' && (hex[1] == 'x' || hex[1] == 'X'))
        hex += 2, n -= 2;
    int valid = n > 0 && n % 2 == 0;
    for (size_t i = 0; i < n && valid; i++)
        valid = is_hex_digit(hex[i]);
    CHECK(err == (valid ? SL_OK : SL_ERR_PARSE));
    if (err != SL_OK) {
        CHECK(out[0] == '\0');
        free(out);
        return;
    }
    CHECK(out[66] == '\0' && out[0] == '0' && out[1] == 'x');
    for (int i = 2; i < 66; i++)
        CHECK((out[i] >= '0' && out[i] <= '9') || (out[i] >= 'a' && out[i] <= 'f'));
    /* the same bytes hashed in one piece, at an odd address */
    uint8_t *bytes = malloc(n / 2 + 1), hash[32];
    for (size_t i = 0; i < n / 2; i++) {
        unsigned v;
        CHECK(sscanf((char[3]){hex[2 * i], hex[2 * i + 1], 0}, "%2x", &v) == 1);
        bytes[1 + i] = (uint8_t)v;
    }
    wire_keccak256(bytes + 1, n / 2, hash);
    for (int i = 0; i < 32; i++) {
        char two[3];
        snprintf(two, sizeof two, "%02x", hash[i]);
        CHECK(memcmp(out + 2 + 2 * i, two, 2) == 0);
    }
    free(bytes);
    free(out);
}

/* Raw bytes as hex (both cases), against the one-shot hash. */
static void check_keccak(const uint8_t *data, size_t size)
{
    uint8_t hash[32];
    char *hex = malloc(2 + 2 * size + 1), *out = malloc(67);
    wire_keccak256(data, size, hash);
    memcpy(hex, "0X", 2);
    for (size_t i = 0; i < size; i++)
        snprintf(hex + 2 + 2 * i, 3, i % 2 ? "%02X" : "%02x", data[i]);
    sl_err_t err = wire_eth_tx_hash(hex, 2 + 2 * size, out);
    CHECK(err == (size > 0 ? SL_OK : SL_ERR_PARSE));
    for (int i = 0; i < 32 && err == SL_OK; i++) {
        char two[3];
        snprintf(two, sizeof two, "%02x", hash[i]);
        CHECK(memcmp(out + 2 + 2 * i, two, 2) == 0);
    }
    free(hex);
    free(out);
}

/* ---- decoders ------------------------------------------------------------ */

typedef sl_err_t (*decoder_fn)(const char *, size_t, uint8_t *, size_t, size_t *);

/* Decodes into a small and a large exact-size buffer: the same validity,
 * and the small one fails only for want of room. Returns the large result
 * in *out (malloc'd) when OK. */
static sl_err_t decode_both(decoder_fn fn, const char *text, size_t len, uint8_t **out, size_t *n)
{
    uint8_t *small = malloc(SMALL_CAP), *large = malloc(LARGE_CAP);
    size_t ns = 99, nl = 99;
    sl_err_t es = fn(text, len, small, SMALL_CAP, &ns), el = fn(text, len, large, LARGE_CAP, &nl);
    CHECK(es == SL_OK || es == SL_ERR_PARSE || es == SL_ERR_TOO_LARGE);
    CHECK(el == SL_OK || el == SL_ERR_PARSE || el == SL_ERR_TOO_LARGE);
    CHECK((es == SL_ERR_PARSE) == (el == SL_ERR_PARSE));
    CHECK(es == SL_OK ? ns <= SMALL_CAP : ns == 0);
    CHECK(el == SL_OK ? nl <= LARGE_CAP : nl == 0);
    if (es == SL_OK)
        CHECK(el == SL_OK && nl == ns && memcmp(small, large, ns) == 0);
    if (es == SL_ERR_TOO_LARGE)
        CHECK(el == SL_ERR_TOO_LARGE || nl > SMALL_CAP);
    free(small);
    *n = nl;
    *out = large;
    return el;
}

static void check_base58(const char *text, size_t len)
{
    uint8_t *bytes;
    size_t n;
    sl_err_t err = decode_both(wire_base58_decode, text, len, &bytes, &n);
    int valid = 1;
    for (size_t i = 0; i < len && valid; i++)
        valid = in_alphabet(b58_alphabet, text[i]);
    CHECK(valid == (err != SL_ERR_PARSE));
    if (err == SL_OK) {
        char *again = malloc(2 * n + 1);
        wire_base58_encode(bytes, n, again);
        CHECK(strlen(again) == len && memcmp(again, text, len) == 0);
        free(again);
    }
    free(bytes);
}

/* Canonical base64: the text is what the encoder writes, with or without
 * its padding. */
static int b64_canonical(const char *text, size_t len, const uint8_t *bytes, size_t n)
{
    char *again = malloc(4 * (n / 3 + 1) + 1);
    b64_encode(bytes, n, again);
    size_t full = strlen(again), bare = full;
    while (bare > 0 && again[bare - 1] == '=')
        bare--;
    int ok = (len == full || len == bare) && memcmp(again, text, len) == 0;
    free(again);
    return ok;
}

static void check_base64(const char *text, size_t len)
{
    uint8_t *bytes;
    size_t n;
    sl_err_t err = decode_both(wire_base64_decode, text, len, &bytes, &n);
    /* necessary conditions; b64_canonical is the sufficient one */
    size_t body = len;
    while (body > 0 && text[body - 1] == '=' && len - body < 2)
        body--;
    int chars_ok = len - body == 0 || len % 4 == 0;
    for (size_t i = 0; i < body && chars_ok; i++)
        chars_ok = in_alphabet(b64_alphabet, text[i]);
    if (err != SL_ERR_PARSE)
        CHECK(chars_ok && body % 4 != 1);
    if (err == SL_OK)
        CHECK(b64_canonical(text, len, bytes, n));
    free(bytes);
}

/* bytes -> base58 -> bytes and bytes -> base64 (padded, then bare) ->
 * bytes, into exactly size bytes. */
static void check_round_trip(const uint8_t *data, size_t size)
{
    char *text = malloc(2 * size + 1), *b64 = malloc(4 * (size / 3 + 1) + 1);
    uint8_t *back = malloc(size ? size : 1);
    size_t n = 99;
    wire_base58_encode(data, size, text);
    size_t tl = strlen(text);
    CHECK(tl <= 2 * size);
    for (size_t i = 0; i < tl; i++)
        CHECK(in_alphabet(b58_alphabet, text[i]));
    CHECK(wire_base58_decode(text, tl, back, size, &n) == SL_OK);
    CHECK(n == size && memcmp(back, data, size) == 0);
    b64_encode(data, size, b64);
    size_t full = strlen(b64), bare = full;
    while (bare > 0 && b64[bare - 1] == '=')
        bare--;
    for (size_t bl = full;; bl = bare) {
        n = 99;
        CHECK(wire_base64_decode(b64, bl, back, size, &n) == SL_OK);
        CHECK(n == size && memcmp(back, data, size) == 0);
        if (bl == bare)
            break;
    }
    free(text);
    free(b64);
    free(back);
}

/* ---- Solana -------------------------------------------------------------- */

/* Reads the count without rules, then insists it is spelled as the minimal
 * encoder would spell it: that is what "no alias, 3 bytes, 16 bits" means. */
static int ref_count(const uint8_t *p, size_t n, size_t *count, size_t *used)
{
    uint64_t v = 0;
    size_t i = 0;
    for (; i < n && i < 4; i++) {
        v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
        if (!(p[i] & 0x80))
            break;
    }
    if (i == n || i == 4 || v > 0xffff)
        return 0;
    uint8_t enc[3];
    size_t m = 0;
    uint64_t w = v;
    do {
        enc[m] = (uint8_t)(w & 0x7f);
        w >>= 7;
        if (w)
            enc[m] |= 0x80;
        m++;
    } while (w);
    if (m != i + 1 || memcmp(enc, p, m) != 0)
        return 0;
    *count = (size_t)v;
    *used = m;
    return 1;
}

/* The signature that the raw transaction tx[0..n) should yield, or "". */
static void ref_signature(const uint8_t *tx, size_t n, char want[2 * 64 + 1])
{
    size_t count, used;
    want[0] = '\0';
    if (n > SOL_MAX_TX || !ref_count(tx, n, &count, &used) || count == 0 || n - used < 64 * count)
        return;
    wire_base58_encode(tx + used, 64, want);
}

static void check_sol_text(const char *text, size_t len, wire_sol_encoding_t enc, const char *want)
{
    char *out = malloc(96);
    sl_err_t err = wire_sol_tx_signature(text, len, enc, out);
    CHECK(err == SL_OK || err == SL_ERR_PARSE || err == SL_ERR_TOO_LARGE);
    CHECK(memchr(out, '\0', 96) != NULL);
    if (err != SL_OK) {
        CHECK(out[0] == '\0' && want[0] == '\0');
    } else {
        CHECK(strlen(out) >= 1 && strlen(out) <= 88 && strcmp(out, want) == 0);
        uint8_t sig[64];
        size_t n;
        CHECK(wire_base58_decode(out, strlen(out), sig, sizeof sig, &n) == SL_OK && n == 64);
    }
    free(out);
}

/* Text in enc, judged by decoding it here and reading the count by the
 * reference rules. */
static void check_sol_as_text(const char *text, size_t len, wire_sol_encoding_t enc)
{
    uint8_t *tx = malloc(SOL_MAX_TX);
    size_t n;
    decoder_fn decode = enc == WIRE_SOL_BASE58 ? wire_base58_decode : wire_base64_decode;
    sl_err_t err = decode(text, len, tx, SOL_MAX_TX, &n);
    char want[2 * 64 + 1] = "";
    if (err == SL_OK)
        ref_signature(tx, n, want);
    check_sol_text(text, len, enc, want);
    free(tx);
}

/* The input as text in each encoding, and as a raw transaction encoded here. */
static void check_sol(const uint8_t *data, size_t size)
{
    check_sol_as_text((const char *)data, size, WIRE_SOL_BASE58);
    check_sol_as_text((const char *)data, size, WIRE_SOL_BASE64);
    if (size > SOL_MAX_TX + 8)
        return;
    char want[2 * 64 + 1];
    ref_signature(data, size, want);
    char *b58 = malloc(2 * size + 1), *b64 = malloc(4 * (size / 3 + 1) + 1);
    wire_base58_encode(data, size, b58);
    b64_encode(data, size, b64);
    check_sol_text(b58, strlen(b58), WIRE_SOL_BASE58, want);
    check_sol_text(b64, strlen(b64), WIRE_SOL_BASE64, want);
    free(b58);
    free(b64);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = copy(data, size);
    check_eth(text, size);
    check_keccak(data, size);
    check_base58(text, size);
    check_base64(text, size);
    check_round_trip(data, size);
    check_sol(data, size);
    free(text);
    return 0;
}
