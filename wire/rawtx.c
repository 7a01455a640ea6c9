/* wire/rawtx.c: the recipient of a signed Ethereum transaction (rawtx.h).
 *
 * RLP (the yellow paper, appendix B): a byte below 0x80 is itself; 0x80-0xb7
 * a string of up to 55 bytes; 0xb8-0xbf a longer string whose length
 * follows in 1-8 bytes; 0xc0-0xf7 and 0xf8-0xff the same for lists. Nodes
 * refuse non-canonical encodings (a single byte below 0x80 wrapped as a
 * string, a long form for a short length, a length with a leading zero), so
 * this refuses them too: what it reads is what a node would read. */
#include "wire/rawtx.h"

#include <stdlib.h>
#include <string.h>

#include "base/sl_buf.h"
#include "base/sl_parse.h"

#define RAWTX_MAX (1u << 20)      /* decoded bytes: as wire_eth_tx_hash's bound */

typedef struct rlp_item {
    int list;
    size_t off;                   /* payload's offset */
    size_t len;                   /* payload's length */
} rlp_item_t;

/* The item at p[at..end); 0 on a header that is not canonical or runs past end. */
static int rlp_item(const uint8_t *p, size_t at, size_t end, rlp_item_t *it)
{
    if (at >= end)
        return 0;
    uint8_t b = p[at];
    size_t avail = end - at - 1, len, hdr = 1;
    if (b < 0x80) {
        *it = (rlp_item_t){0, at, 1};
        return 1;
    }
    it->list = b >= 0xc0;
    uint8_t base = it->list ? 0xc0 : 0x80;
    if (b - base <= 55) {
        len = (size_t)(b - base);
        if (!it->list && len == 1 && (avail < 1 || p[at + 1] < 0x80))
            return 0; /* a single byte below 0x80 is written as itself */
    } else {
        size_t ll = (size_t)(b - base - 55);
        if (ll > avail || p[at + 1] == 0 || ll > sizeof(size_t))
            return 0;
        len = 0;
        for (size_t i = 0; i < ll; i++) {
            if (len > (SIZE_MAX >> 8))
                return 0;
            len = len << 8 | p[at + 1 + i];
        }
        if (len <= 55)
            return 0;
        hdr += ll;
        avail -= ll;
    }
    if (len > avail)
        return 0;
    it->off = at + hdr;
    it->len = len;
    return 1;
}

/* The items of the list payload p[off..off+len): 0 unless each is well
 * formed; *count gets their number, to[] the item at to_index (if any). */
static int rlp_walk(const uint8_t *p, size_t off, size_t len, size_t to_index, rlp_item_t *to, size_t *count)
{
    size_t at = off, end = off + len, n = 0;
    while (at < end) {
        rlp_item_t it;
        if (!rlp_item(p, at, end, &it))
            return 0;
        if (n == to_index)
            *to = it;
        n++;
        at = it.off + it.len;
    }
    *count = n;
    return 1;
}

/* One row per transaction type: where "to" is, how many fields the signed
 * list has, and whether "to" may be empty (a creation). */
typedef struct rawtx_type {
    uint8_t to_index;
    uint8_t fields;
    uint8_t may_create;
} rawtx_type_t;

static const rawtx_type_t rawtx_types[] = {
    /* legacy: nonce, gasPrice, gas, to, value, data, v, r, s */
    [0] = {3, 9, 1},
    /* 0x01: chainId, nonce, gasPrice, gas, to, value, data, accessList, yParity, r, s */
    [1] = {4, 11, 1},
    /* 0x02: chainId, nonce, maxPriorityFee, maxFee, gas, to, value, data, accessList, yParity, r, s */
    [2] = {5, 12, 1},
    /* 0x03: ... 0x02's to accessList, maxFeePerBlobGas, blobVersionedHashes, yParity, r, s */
    [3] = {5, 14, 0},
    /* 0x04: ... 0x02's to accessList, authorizationList, yParity, r, s */
    [4] = {5, 13, 0},
};

/* The signed list at p[0..len) (one list filling the bytes) of type t. */
static wire_rawtx_to_t read_list(const uint8_t *p, size_t len, size_t t, int wrapped, uint8_t to[20])
{
    rlp_item_t outer, field = {0};
    size_t n = 0;
    if (!rlp_item(p, 0, len, &outer) || !outer.list || outer.off + outer.len != len)
        return WIRE_RAWTX_MALFORMED;
    if (wrapped) {
        /* 0x03's network form: [[signed fields...], blobs, commitments, proofs (, ...)] */
        rlp_item_t inner;
        if (!rlp_walk(p, outer.off, outer.len, 0, &inner, &n) || n < 2 || !inner.list)
            return WIRE_RAWTX_MALFORMED;
        outer = inner;
    }
    const rawtx_type_t *row = &rawtx_types[t];
    if (!rlp_walk(p, outer.off, outer.len, row->to_index, &field, &n) || n != row->fields || field.list)
        return WIRE_RAWTX_MALFORMED;
    if (field.len == 0 && p[field.off - 1] == 0x80)
        return row->may_create ? WIRE_RAWTX_CREATION : WIRE_RAWTX_MALFORMED;
    if (field.len != 20)
        return WIRE_RAWTX_MALFORMED;
    memcpy(to, p + field.off, 20);
    return WIRE_RAWTX_HAS_TO;
}

wire_rawtx_to_t wire_rawtx_to(const uint8_t *tx, size_t len, uint8_t to[20])
{
    if (tx == NULL || len == 0)
        return WIRE_RAWTX_MALFORMED;
    if (tx[0] >= 0xc0)
        return read_list(tx, len, 0, 0, to);
    if (tx[0] < 1 || tx[0] > 4 || len < 2)
        return WIRE_RAWTX_MALFORMED; /* 0x05-0x7f: types this does not know; above: not a typed envelope */
    size_t t = tx[0];
    if (t == 3) {
        /* bare or wrapped: the first field of the bare list is a string (chainId), of the wrapper a list */
        rlp_item_t outer, first;
        if (rlp_item(tx + 1, 0, len - 1, &outer) && outer.list && outer.len > 0 &&
            rlp_item(tx + 1, outer.off, outer.off + outer.len, &first) && first.list)
            return read_list(tx + 1, len - 1, t, 1, to);
    }
    return read_list(tx + 1, len - 1, t, 0, to);
}

wire_rawtx_to_t wire_rawtx_to_hex(const char *hex, size_t len, uint8_t to[20])
{
    if (len >= 2 && hex[0] == '0' && (hex[1] == 'x' || hex[1] == 'X'))
        hex += 2, len -= 2;
    if (len == 0 || len % 2 != 0 || len / 2 > RAWTX_MAX)
        return WIRE_RAWTX_MALFORMED;
    uint8_t *bytes = sl_xmalloc(len / 2);
    for (size_t i = 0; i < len / 2; i++) {
        int hi = sl_hex_digit((unsigned char)hex[2 * i]), lo = sl_hex_digit((unsigned char)hex[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            free(bytes);
            return WIRE_RAWTX_MALFORMED;
        }
        bytes[i] = (uint8_t)(hi << 4 | lo);
    }
    wire_rawtx_to_t r = wire_rawtx_to(bytes, len / 2, to);
    free(bytes);
    return r;
}
