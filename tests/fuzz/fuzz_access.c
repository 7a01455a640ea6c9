/* tests/fuzz/fuzz_access.c: policy_access_call's contracts check on every
 * input, read as eth_call's params.
 *
 * Oracles:
 *  - only OK or contract_not_allowed, and OK only when the listed address
 *    is in the input;
 *  - the plain call-object reader and the general scan agree: the input
 *    with a member "n":1 (a number, which sends the object to the general
 *    scan) first in params[0] gets the same answer;
 *  - the input is an exact-size heap copy, so a read past it is an ASan
 *    report. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/access.h"

#define CHECK(cond) \
    ((cond) ? (void)0 : (fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond), abort()))

static const char listed[] = "1111111111111111111111111111111111111111";

static policy_access_reason_t check(const char *params, size_t len)
{
    static uint8_t contracts[1][20];
    char msg[256];
    memset(contracts[0], 0x11, 20);
    policy_access_scope_t s = {.contracts = contracts, .ncontracts = 1};
    return policy_access_call(&s, "eth_call", 8, params, len, msg, sizeof(msg));
}

static size_t skip_space(const uint8_t *p, size_t i, size_t n)
{
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r'))
        i++;
    return i;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *p = malloc(size ? size : 1);
    if (p == NULL)
        return 0;
    memcpy(p, data, size);
    policy_access_reason_t a = check(p, size);
    CHECK(a == POLICY_ACCESS_OK || a == POLICY_ACCESS_CONTRACT);
    if (a == POLICY_ACCESS_OK)
        CHECK(size >= 40 && memmem(data, size, listed, 40) != NULL);
    free(p);

    /* "[" ws "{": the same object with "n":1 first */
    size_t i = skip_space(data, 0, size);
    if (i >= size || data[i] != '[')
        return 0;
    i = skip_space(data, i + 1, size);
    if (i >= size || data[i] != '{')
        return 0;
    size_t j = skip_space(data, i + 1, size);
    const char *ins = j < size && data[j] == '}' ? "\"n\":1" : "\"n\":1,";
    size_t k = strlen(ins), n = size + k;
    char *q = malloc(n);
    if (q == NULL)
        return 0;
    memcpy(q, data, i + 1);
    memcpy(q + i + 1, ins, k);
    memcpy(q + i + 1 + k, data + i + 1, size - i - 1);
    policy_access_reason_t b = check(q, n);
    if (a != b)
        fprintf(stderr, "plain %d, general %d: %.*s\n", a, b, (int)(size > 300 ? 300 : size), (const char *)data);
    CHECK(a == b);
    free(q);
    return 0;
}
