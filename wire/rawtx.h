/* wire/rawtx.h: the recipient ("to") of a signed Ethereum transaction, read
 * from its bytes.
 *
 * A format, no decisions: the access policy (policy/access.h) asks it which
 * contract an eth_sendRawTransaction calls. Reads a legacy transaction (an
 * RLP list) and the typed envelopes of EIP-2718: 0x01 (EIP-2930), 0x02
 * (EIP-1559), 0x03 (EIP-4844, bare or in its network form with blobs) and
 * 0x04 (EIP-7702). The list's structure is checked in full (canonical RLP
 * headers, every item inside its list, the list filling the bytes, the
 * type's number of fields); signatures are not checked. Pure, fuzzed
 * (tests/fuzz/fuzz_rawtx.c). */
#ifndef WIRE_RAWTX_H
#define WIRE_RAWTX_H

#include <stddef.h>
#include <stdint.h>

typedef enum wire_rawtx_to {
    WIRE_RAWTX_HAS_TO,        /* a call or transfer: to[] holds the recipient */
    WIRE_RAWTX_CREATION,      /* no recipient: a contract creation (legacy, 0x01, 0x02 only) */
    WIRE_RAWTX_MALFORMED,     /* not a transaction this reads (unknown type, bad RLP) */
} wire_rawtx_to_t;

/* The recipient of the transaction tx[0..len) into to[] (untouched unless
 * WIRE_RAWTX_HAS_TO). */
wire_rawtx_to_t wire_rawtx_to(const uint8_t *tx, size_t len, uint8_t to[20]);

/* As wire_rawtx_to, for the transaction as hex text ("0x..." or without 0x,
 * even length, either case), as eth_sendRawTransaction's param carries it.
 * Text that is not hex, or over 1 MiB decoded, is WIRE_RAWTX_MALFORMED.
 * Allocates while it runs (the decoded bytes), nothing after. */
wire_rawtx_to_t wire_rawtx_to_hex(const char *hex, size_t len, uint8_t to[20]);

#endif
