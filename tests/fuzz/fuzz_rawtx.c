/* tests/fuzz/fuzz_rawtx.c: wire/rawtx.h on every input.
 *
 * The input is read as transaction bytes and as hex text. Oracles:
 *  - only the three answers; to[] untouched unless HAS_TO, and then its 20
 *    bytes are in the input (after an 0x94 header);
 *  - the bytes, hex-encoded here (either case), give the same answer and
 *    recipient as the bytes themselves;
 *  - the input is an exact-size heap copy, so a read past it is an ASan
 *    report. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/rawtx.h"

#define CHECK(cond) \
    ((cond) ? (void)0 : (fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond), abort()))

static int contains(const uint8_t *p, size_t n, const uint8_t to[20])
{
    for (size_t i = 1; i + 20 <= n; i++)
        if (p[i - 1] == 0x94 && memcmp(p + i, to, 20) == 0)
            return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1);
    memcpy(copy, data, size);
    uint8_t to[20], to2[20], untouched[20];
    memset(to, 0xa5, sizeof(to));
    memset(untouched, 0xa5, sizeof(untouched));
    wire_rawtx_to_t r = wire_rawtx_to(copy, size, to);
    CHECK(r == WIRE_RAWTX_HAS_TO || r == WIRE_RAWTX_CREATION || r == WIRE_RAWTX_MALFORMED);
    if (r == WIRE_RAWTX_HAS_TO)
        CHECK(contains(copy, size, to));
    else
        CHECK(memcmp(to, untouched, 20) == 0);

    char *hex = malloc(2 + 2 * size + 1);
    memcpy(hex, size % 2 ? "0x" : "0X", 2);
    for (size_t i = 0; i < size; i++)
        snprintf(hex + 2 + 2 * i, 3, i % 3 ? "%02x" : "%02X", copy[i]);
    wire_rawtx_to_t h = wire_rawtx_to_hex(hex, 2 + 2 * size, to2);
    CHECK(h == r);
    if (h == WIRE_RAWTX_HAS_TO)
        CHECK(memcmp(to, to2, 20) == 0);
    free(hex);

    /* the input itself as hex text */
    char *text = malloc(size ? size : 1);
    memcpy(text, data, size);
    r = wire_rawtx_to_hex(text, size, to2);
    CHECK(r == WIRE_RAWTX_HAS_TO || r == WIRE_RAWTX_CREATION || r == WIRE_RAWTX_MALFORMED);
    free(text);
    free(copy);
    return 0;
}
