/* wire/txid.h: the id of a signed transaction, computed from its bytes.
 *
 * When a node answers "already known" to eth_sendRawTransaction (or Solana's
 * "already processed" to sendTransaction), the broadcast succeeded and the
 * client must get the transaction's id as if it had been accepted now:
 * Ethereum's is keccak-256 of the raw bytes; Solana's is the transaction's
 * first signature, base58-encoded. Pure, fuzzed (tests/fuzz/fuzz_txid.c). */
#ifndef WIRE_TXID_H
#define WIRE_TXID_H

#include <stddef.h>
#include <stdint.h>

#include "base/sl_err.h"

/* A 32-byte hash as "0x" + 64 lower-case hex digits + NUL. */
void wire_hash_hex(const uint8_t h[32], char out[67]);

/* "0x" and the n bytes of b in lower-case hex, NUL-terminated, into out
 * (2 * n + 3 bytes). */
void wire_hex_text(const uint8_t *b, size_t n, char *out);

/* Keccak-256 (the pre-standard padding Ethereum uses, not SHA3-256). */
void wire_keccak256(const void *data, size_t len, uint8_t out[32]);

/* The hash of the raw transaction given as hex ("0x..." or without 0x, even
 * length, case-insensitive) in hex[0..len): out gets "0x" + 64 lower-case hex
 * digits + NUL. SL_ERR_PARSE if it is empty or not hex; SL_ERR_TOO_LARGE over
 * 1 MiB of decoded bytes. On error out is "". */
SL_MUST_CHECK sl_err_t wire_eth_tx_hash(const char *hex, size_t len, char out[67]);

typedef enum wire_sol_encoding {
    WIRE_SOL_BASE58,    /* sendTransaction's default */
    WIRE_SOL_BASE64,
} wire_sol_encoding_t;

/* The first signature of a serialized Solana transaction (text in enc):
 * compact-u16 signature count >= 1, then 64-byte signatures. out gets the
 * base58 signature + NUL (at most 88 characters). SL_ERR_PARSE on bad
 * encoding, a non-minimal count or one whose signatures are not all there;
 * SL_ERR_TOO_LARGE if it decodes to over 1232 bytes (PACKET_DATA_SIZE, which
 * validators enforce); SL_ERR_INVALID for an unknown enc. On error out is "". */
SL_MUST_CHECK sl_err_t wire_sol_tx_signature(const char *text, size_t len, wire_sol_encoding_t enc, char out[96]);

/* Base58 (Bitcoin alphabet, each leading '1' a zero byte) and base64 (RFC 4648
 * standard alphabet, padded or not, no whitespace, unused bits zero) decoders
 * into out[0..cap); "" decodes to no bytes. *n gets the length (0 on error,
 * when out[0..cap) may have been written). SL_ERR_PARSE for a text that is
 * not valid whatever cap, else SL_ERR_TOO_LARGE if the bytes would not fit.
 * Base58 takes time O(len * cap): bound cap. */
SL_MUST_CHECK sl_err_t wire_base58_decode(const char *s, size_t len, uint8_t *out, size_t cap, size_t *n);
SL_MUST_CHECK sl_err_t wire_base64_decode(const char *s, size_t len, uint8_t *out, size_t cap, size_t *n);
/* Base58 encoder; out must hold 2 * len + 1 bytes. */
void wire_base58_encode(const uint8_t *data, size_t len, char *out);

#endif
