/* wire/txid.c: transaction ids from raw transaction bytes.
 *
 * Everything runs on the stack: Keccak absorbs the hex text in rate-sized
 * chunks as it is decoded, and base58 does its big-number arithmetic inside
 * the caller's output buffer. */
#include "wire/txid.h"

#include <string.h>

#include "base/sl_parse.h"

#define KECCAK_RATE 136           /* bytes: 1600 bits minus 2 x 256 of capacity */
#define KECCAK_LANES 25
#define KECCAK_ROUNDS 24
#define ETH_MAX_TX (1u << 20)     /* decoded bytes; far above any node's limit */
#define SOL_MAX_TX 1232           /* PACKET_DATA_SIZE: nodes refuse anything longer */
#define SOL_SIG_LEN 64

#define COUNTOF(a) (sizeof(a) / sizeof((a)[0]))

/* ---- Keccak-f[1600] ------------------------------------------------------ */

/* The iota constants, one per round (FIPS 202, 3.2.5). */
static const uint64_t keccak_rc[KECCAK_ROUNDS] = {
    0x0000000000000001, 0x0000000000008082, 0x800000000000808a, 0x8000000080008000,
    0x000000000000808b, 0x0000000080000001, 0x8000000080008081, 0x8000000000008009,
    0x000000000000008a, 0x0000000000000088, 0x0000000080008009, 0x000000008000000a,
    0x000000008000808b, 0x800000000000008b, 0x8000000000008089, 0x8000000000008003,
    0x8000000000008002, 0x8000000000000080, 0x000000000000800a, 0x800000008000000a,
    0x8000000080008081, 0x8000000000008080, 0x0000000080000001, 0x8000000080008008,
};

/* The rho rotation of lane (x, y), at index x + 5 * y (FIPS 202, table 2). */
static const uint8_t keccak_rho[KECCAK_LANES] = {
     0,  1, 62, 28, 27,
    36, 44,  6, 55, 20,
     3, 10, 43, 25, 39,
    41, 45, 15, 21,  8,
    18,  2, 61, 56, 14,
};

typedef struct keccak {
    uint64_t lane[KECCAK_LANES];  /* lane (x, y) at x + 5 * y */
    uint8_t block[KECCAK_RATE];   /* input not yet absorbed */
    size_t fill;                  /* bytes used in block */
} keccak_t;

static uint64_t rotl64(uint64_t v, unsigned n)
{
    return n == 0 ? v : (v << n) | (v >> (64 - n));
}

static void keccak_permute(uint64_t a[KECCAK_LANES])
{
    for (int round = 0; round < KECCAK_ROUNDS; round++) {
        uint64_t c[5], b[KECCAK_LANES];
        for (int x = 0; x < 5; x++)
            c[x] = a[x] ^ a[x + 5] ^ a[x + 10] ^ a[x + 15] ^ a[x + 20];
        for (int x = 0; x < 5; x++) {
            uint64_t d = c[(x + 4) % 5] ^ rotl64(c[(x + 1) % 5], 1);
            for (int y = 0; y < 5; y++)
                a[x + 5 * y] ^= d;
        }
        /* rho and pi: lane (x, y) moves to (y, 2x + 3y) */
        for (int x = 0; x < 5; x++)
            for (int y = 0; y < 5; y++)
                b[y + 5 * ((2 * x + 3 * y) % 5)] = rotl64(a[x + 5 * y], keccak_rho[x + 5 * y]);
        for (int y = 0; y < 5; y++)
            for (int x = 0; x < 5; x++)
                a[x + 5 * y] = b[x + 5 * y] ^ (~b[(x + 1) % 5 + 5 * y] & b[(x + 2) % 5 + 5 * y]);
        a[0] ^= keccak_rc[round];
    }
}

/* Lanes are little-endian; read byte by byte so any alignment works. */
static void keccak_absorb_block(keccak_t *k)
{
    for (size_t i = 0; i < KECCAK_RATE / 8; i++) {
        uint64_t v = 0;
        for (int j = 7; j >= 0; j--)
            v = v << 8 | k->block[8 * i + (size_t)j];
        k->lane[i] ^= v;
    }
    keccak_permute(k->lane);
    k->fill = 0;
}

static void keccak_init(keccak_t *k)
{
    memset(k, 0, sizeof *k);
}

static void keccak_update(keccak_t *k, const uint8_t *p, size_t len)
{
    while (len > 0) {
        size_t n = KECCAK_RATE - k->fill < len ? KECCAK_RATE - k->fill : len;
        memcpy(k->block + k->fill, p, n);
        k->fill += n;
        p += n;
        len -= n;
        if (k->fill == KECCAK_RATE)
            keccak_absorb_block(k);
    }
}

/* Ethereum kept the original Keccak padding (0x01 ... 0x80); SHA3-256
 * would start it with 0x06 and give a different hash. */
static void keccak_final(keccak_t *k, uint8_t out[32])
{
    memset(k->block + k->fill, 0, KECCAK_RATE - k->fill);
    k->block[k->fill] ^= 0x01;
    k->block[KECCAK_RATE - 1] ^= 0x80;
    keccak_absorb_block(k);
    for (size_t i = 0; i < 32; i++)
        out[i] = (uint8_t)(k->lane[i / 8] >> (8 * (i % 8)));
}

void wire_keccak256(const void *data, size_t len, uint8_t out[32])
{
    keccak_t k;
    keccak_init(&k);
    keccak_update(&k, data, len);
    keccak_final(&k, out);
}

/* ---- Ethereum ------------------------------------------------------------ */


sl_err_t wire_eth_tx_hash(const char *hex, size_t len, char out[67])
{
    out[0] = '\0';
    if (len >= 2 && hex[0] == '0' && (hex[1] == 'x' || hex[1] == 'X')) {
        hex += 2;
        len -= 2;
    }
    if (len / 2 > ETH_MAX_TX)
        return SL_ERR_TOO_LARGE;
    if (len == 0 || len % 2 != 0)
        return SL_ERR_PARSE;
    keccak_t k;
    keccak_init(&k);
    for (size_t i = 0; i < len;) {
        uint8_t chunk[KECCAK_RATE];
        size_t n = 0;
        for (; n < sizeof chunk && i < len; n++, i += 2) {
            int hi = sl_hex_digit(hex[i]), lo = sl_hex_digit(hex[i + 1]);
            if (hi < 0 || lo < 0)
                return SL_ERR_PARSE;
            chunk[n] = (uint8_t)(hi << 4 | lo);
        }
        keccak_update(&k, chunk, n);
    }
    uint8_t hash[32];
    keccak_final(&k, hash);
    wire_hash_hex(hash, out);
    return SL_OK;
}

void wire_hex_text(const uint8_t *b, size_t n, char *out)
{
    static const char hexd[] = "0123456789abcdef";
    out[0] = '0';
    out[1] = 'x';
    for (size_t i = 0; i < n; i++) {
        out[2 + 2 * i] = hexd[b[i] >> 4];
        out[3 + 2 * i] = hexd[b[i] & 0xf];
    }
    out[2 + 2 * n] = '\0';
}

void wire_hash_hex(const uint8_t h[32], char out[67])
{
    wire_hex_text(h, 32, out);
}

/* ---- base58 -------------------------------------------------------------- */

static const char b58_alphabet[] = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/* Digit value + 1 of each character; 0 marks one outside the alphabet. */
static const uint8_t b58_value[256] = {
    ['1'] = 1, ['2'] = 2, ['3'] = 3, ['4'] = 4, ['5'] = 5, ['6'] = 6, ['7'] = 7, ['8'] = 8,
    ['9'] = 9, ['A'] = 10, ['B'] = 11, ['C'] = 12, ['D'] = 13, ['E'] = 14, ['F'] = 15, ['G'] = 16,
    ['H'] = 17, ['J'] = 18, ['K'] = 19, ['L'] = 20, ['M'] = 21, ['N'] = 22, ['P'] = 23, ['Q'] = 24,
    ['R'] = 25, ['S'] = 26, ['T'] = 27, ['U'] = 28, ['V'] = 29, ['W'] = 30, ['X'] = 31, ['Y'] = 32,
    ['Z'] = 33, ['a'] = 34, ['b'] = 35, ['c'] = 36, ['d'] = 37, ['e'] = 38, ['f'] = 39, ['g'] = 40,
    ['h'] = 41, ['i'] = 42, ['j'] = 43, ['k'] = 44, ['m'] = 45, ['n'] = 46, ['o'] = 47, ['p'] = 48,
    ['q'] = 49, ['r'] = 50, ['s'] = 51, ['t'] = 52, ['u'] = 53, ['v'] = 54, ['w'] = 55, ['x'] = 56,
    ['y'] = 57, ['z'] = 58,
};

/* A lower bound on the bytes of a number of d base58 digits, the first
 * non-zero: it is at least 58^(d-1), and log256(58) > 0.732. Lets an input
 * that cannot fit be refused before the quadratic arithmetic. */
static size_t b58_min_bytes(size_t d)
{
    return (d - 1) / 1000 * 732 + (d - 1) % 1000 * 732 / 1000;
}

sl_err_t wire_base58_decode(const char *s, size_t len, uint8_t *out, size_t cap, size_t *n)
{
    *n = 0;
    size_t zeros = 0;
    while (zeros < len && s[zeros] == '1')
        zeros++;
    for (size_t i = zeros; i < len; i++)
        if (b58_value[(uint8_t)s[i]] == 0)
            return SL_ERR_PARSE;
    if (zeros > cap || (len > zeros && b58_min_bytes(len - zeros) > cap - zeros))
        return SL_ERR_TOO_LARGE;
    /* The number grows big-endian from the end of out, in out[cap - used, cap),
     * and moves down next to its leading zeros at the end. */
    size_t used = 0;
    for (size_t i = zeros; i < len; i++) {
        unsigned carry = b58_value[(uint8_t)s[i]] - 1u;
        for (size_t j = cap; j > cap - used; j--) {
            carry += 58u * out[j - 1];
            out[j - 1] = (uint8_t)carry;
            carry >>= 8;
        }
        for (; carry != 0; carry >>= 8) {
            if (zeros + used == cap)
                return SL_ERR_TOO_LARGE;
            used++;
            out[cap - used] = (uint8_t)carry;
        }
    }
    if (used > 0)     /* out may be NULL when cap is 0 */
        memmove(out + zeros, out + cap - used, used);
    if (zeros > 0)
        memset(out, 0, zeros);
    *n = zeros + used;
    return SL_OK;
}

void wire_base58_encode(const uint8_t *data, size_t len, char *out)
{
    size_t zeros = 0;
    while (zeros < len && data[zeros] == 0)
        zeros++;
    /* Digit values, least significant first, are built where the text goes
     * (after the '1's) and then reversed and mapped to characters. */
    uint8_t *digit = (uint8_t *)out + zeros;
    size_t ndigits = 0;
    for (size_t i = zeros; i < len; i++) {
        unsigned carry = data[i];
        for (size_t j = 0; j < ndigits; j++) {
            carry += (unsigned)digit[j] << 8;
            digit[j] = (uint8_t)(carry % 58);
            carry /= 58;
        }
        for (; carry != 0; carry /= 58)
            digit[ndigits++] = (uint8_t)(carry % 58);
    }
    for (size_t i = 0; i < ndigits / 2; i++) {
        uint8_t t = digit[i];
        digit[i] = digit[ndigits - 1 - i];
        digit[ndigits - 1 - i] = t;
    }
    for (size_t i = 0; i < ndigits; i++)
        out[zeros + i] = b58_alphabet[digit[i]];
    memset(out, '1', zeros);
    out[zeros + ndigits] = '\0';
}

/* ---- base64 -------------------------------------------------------------- */

/* Value + 1 of each character of the standard alphabet; 0 marks any other,
 * '=' included (padding is stripped before decoding). */
static const uint8_t b64_value[256] = {
    ['A'] = 1, ['B'] = 2, ['C'] = 3, ['D'] = 4, ['E'] = 5, ['F'] = 6, ['G'] = 7, ['H'] = 8,
    ['I'] = 9, ['J'] = 10, ['K'] = 11, ['L'] = 12, ['M'] = 13, ['N'] = 14, ['O'] = 15, ['P'] = 16,
    ['Q'] = 17, ['R'] = 18, ['S'] = 19, ['T'] = 20, ['U'] = 21, ['V'] = 22, ['W'] = 23, ['X'] = 24,
    ['Y'] = 25, ['Z'] = 26, ['a'] = 27, ['b'] = 28, ['c'] = 29, ['d'] = 30, ['e'] = 31, ['f'] = 32,
    ['g'] = 33, ['h'] = 34, ['i'] = 35, ['j'] = 36, ['k'] = 37, ['l'] = 38, ['m'] = 39, ['n'] = 40,
    ['o'] = 41, ['p'] = 42, ['q'] = 43, ['r'] = 44, ['s'] = 45, ['t'] = 46, ['u'] = 47, ['v'] = 48,
    ['w'] = 49, ['x'] = 50, ['y'] = 51, ['z'] = 52, ['0'] = 53, ['1'] = 54, ['2'] = 55, ['3'] = 56,
    ['4'] = 57, ['5'] = 58, ['6'] = 59, ['7'] = 60, ['8'] = 61, ['9'] = 62, ['+'] = 63, ['/'] = 64,
};

/* Padding is only taken on a whole quantum, so "QQ=" is refused; whatever
 * '=' is left over is then an invalid character. */
static size_t b64_padding(const char *s, size_t len)
{
    if (len == 0 || len % 4 != 0 || s[len - 1] != '=')
        return 0;
    return s[len - 2] == '=' ? 2 : 1;
}

/* Every character in the alphabet, and the unused low bits of the last one
 * zero as the encoder writes them: otherwise two texts would decode to the
 * same bytes. len is without padding. */
static int b64_valid(const char *s, size_t len)
{
    static const uint8_t unused_bits[4] = {[2] = 0xf, [3] = 0x3};
    for (size_t i = 0; i < len; i++)
        if (b64_value[(uint8_t)s[i]] == 0)
            return 0;
    return len == 0 || ((b64_value[(uint8_t)s[len - 1]] - 1u) & unused_bits[len % 4]) == 0;
}

sl_err_t wire_base64_decode(const char *s, size_t len, uint8_t *out, size_t cap, size_t *n)
{
    *n = 0;
    len -= b64_padding(s, len);
    if (len % 4 == 1 || !b64_valid(s, len))
        return SL_ERR_PARSE;
    if (len / 4 * 3 + (len % 4 == 0 ? 0 : len % 4 - 1) > cap)
        return SL_ERR_TOO_LARGE;
    uint32_t acc = 0;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        acc = acc << 6 | (b64_value[(uint8_t)s[i]] - 1u);
        if (i % 4 == 3) {
            out[o++] = (uint8_t)(acc >> 16);
            out[o++] = (uint8_t)(acc >> 8);
            out[o++] = (uint8_t)acc;
            acc = 0;
        }
    }
    if (len % 4 == 2) {
        out[o++] = (uint8_t)(acc >> 4);
    } else if (len % 4 == 3) {
        out[o++] = (uint8_t)(acc >> 10);
        out[o++] = (uint8_t)(acc >> 2);
    }
    *n = o;
    return SL_OK;
}

/* ---- Solana -------------------------------------------------------------- */

/* Solana's compact-u16 ("shortvec"): 7 bits a byte, low first, 0x80 meaning
 * more follows, at most 3 bytes. Like the validator, refuse a zero byte after
 * the first (a second spelling of a shorter encoding) and values over 16 bits. */
static sl_err_t shortvec_u16(const uint8_t *p, size_t len, size_t *value, size_t *used)
{
    uint32_t v = 0;
    for (size_t i = 0; i < 3 && i < len; i++) {
        if (i > 0 && p[i] == 0)
            return SL_ERR_PARSE;
        v |= (uint32_t)(p[i] & 0x7f) << (7 * i);
        if ((p[i] & 0x80) == 0) {
            if (v > 0xffff)
                return SL_ERR_PARSE;
            *value = v;
            *used = i + 1;
            return SL_OK;
        }
    }
    return SL_ERR_PARSE;
}

typedef sl_err_t (*sol_decoder_fn)(const char *, size_t, uint8_t *, size_t, size_t *);

static const sol_decoder_fn sol_decoders[] = {
    [WIRE_SOL_BASE58] = wire_base58_decode,
    [WIRE_SOL_BASE64] = wire_base64_decode,
};

sl_err_t wire_sol_tx_signature(const char *text, size_t len, wire_sol_encoding_t enc, char out[96])
{
    uint8_t tx[SOL_MAX_TX];
    size_t n, count, used;
    out[0] = '\0';
    if ((size_t)enc >= COUNTOF(sol_decoders))
        return SL_ERR_INVALID;
    sl_err_t err = sol_decoders[enc](text, len, tx, sizeof tx, &n);
    if (err != SL_OK)
        return err;
    if ((err = shortvec_u16(tx, n, &count, &used)) != SL_OK)
        return err;
    if (count == 0 || count > (n - used) / SOL_SIG_LEN)
        return SL_ERR_PARSE;
    /* the encoder wants 2 * len + 1 bytes; a signature needs at most 88 + 1 */
    char sig[2 * SOL_SIG_LEN + 1];
    wire_base58_encode(tx + used, SOL_SIG_LEN, sig);
    memcpy(out, sig, strlen(sig) + 1);
    return SL_OK;
}
