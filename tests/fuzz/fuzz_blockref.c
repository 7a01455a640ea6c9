/* tests/fuzz/fuzz_blockref.c: policy_blockref_extract on every input.
 *
 * The first byte picks a row of the method table (or a method no table
 * knows), the rest is the params text, copied into a heap block of exactly
 * its size so ASan sees a read one byte too far. Oracles: the answer is OK
 * or PARSE; PARSE leaves nothing named; a NUMBER/TAG/HASH is only ever
 * found for a method of the table; a Solana minContextSlot only on Solana. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/blockref.h"

#define CHECK(cond) \
    ((cond) ? (void)0 : (fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond), abort()))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (1u << 20))
        return 0;
    size_t rows = 0;
    policy_chain_t chain = POLICY_CHAIN_ETHEREUM;
    while (policy_blockref_row(rows, &chain) != NULL)
        rows++;
    size_t pick = data[0] % (rows + 2);
    const char *method = pick < rows ? policy_blockref_row(pick, &chain) : "eth_chainId";
    if (pick == rows + 1) {
        method = "getBalance";
        chain = POLICY_CHAIN_SOLANA;
    }
    size_t len = size - 1;
    char *params = malloc(len ? len : 1);
    memcpy(params, data + 1, len);
    policy_blockref_call_t c;
    sl_err_t e = policy_blockref_extract(chain, method, strlen(method), params, (wire_span_t){0, (uint32_t)len}, &c);
    CHECK(e == SL_OK || e == SL_ERR_PARSE);
    if (e != SL_OK || pick >= rows) {
        CHECK(c.at.kind == POLICY_BLOCKREF_NONE && c.from.kind == POLICY_BLOCKREF_NONE);
    }
    if (e != SL_OK || chain != POLICY_CHAIN_SOLANA)
        CHECK(!c.has_min_context && c.commitment == POLICY_COMMITMENT_DEFAULT);
    CHECK(c.at.kind <= POLICY_BLOCKREF_HASH && c.from.kind <= POLICY_BLOCKREF_HASH);
    CHECK(c.at.kind != POLICY_BLOCKREF_TAG || c.at.tag < POLICY_TAG_COUNT);
    free(params);
    return 0;
}
