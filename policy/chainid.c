/* policy/chainid.c: chain identity, by configuration or by majority
 * (policy/chainid.h). */
#include "policy/chainid.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/sl_parse.h"
#include "wire/txid.h"

static sl_err_t eth_normalize(const char *text, size_t len, char out[POLICY_CHAINID_MAX])
{
    uint64_t v = 0;
    if (len > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
        for (size_t i = 2; i < len; i++) {
            int d = sl_hex_digit((uint8_t)text[i]);
            if (d < 0 || v > (UINT64_MAX >> 4))
                return SL_ERR_PARSE;
            v = v << 4 | (uint64_t)d;
        }
    } else if (sl_parse_u64(text, len, UINT64_MAX, &v) != SL_OK) {
        return SL_ERR_PARSE;
    }
    snprintf(out, POLICY_CHAINID_MAX, "0x%" PRIx64, v);
    return SL_OK;
}

static sl_err_t sol_normalize(const char *text, size_t len, char out[POLICY_CHAINID_MAX])
{
    uint8_t hash[32];
    size_t n = 0;
    if (len >= POLICY_CHAINID_MAX || wire_base58_decode(text, len, hash, sizeof hash, &n) != SL_OK || n != 32)
        return SL_ERR_PARSE;
    memcpy(out, text, len);
    out[len] = '\0';
    return SL_OK;
}

sl_err_t policy_chainid_normalize(policy_chain_t chain, const char *text, size_t len, char out[POLICY_CHAINID_MAX])
{
    out[0] = '\0';
    switch (chain) {
    case POLICY_CHAIN_ETHEREUM:
        return eth_normalize(text, len, out);
    case POLICY_CHAIN_SOLANA:
        return sol_normalize(text, len, out);
    case POLICY_CHAIN_COUNT:
        break;
    }
    return SL_ERR_INVALID;
}

/* The known ids different from want, as a mask. */
static uint64_t differing(const char *want, const char *const *ids, size_t n)
{
    uint64_t wrong = 0;
    for (size_t i = 0; i < n && i < 64; i++)
        if (ids[i] != NULL && strcmp(ids[i], want) != 0)
            wrong |= (uint64_t)1 << i;
    return wrong;
}

policy_chainid_decision_t policy_chainid_decide(const char *configured, const char *const *ids, size_t n,
                                                const char **want, uint64_t *wrong)
{
    *want = configured;
    *wrong = 0;
    if (n > 64)
        n = 64;
    if (configured != NULL) {
        *wrong = differing(configured, ids, n);
        return POLICY_CHAINID_AGREED;
    }
    size_t answered = 0, best = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] == NULL)
            continue;
        answered++;
        size_t votes = 0;
        for (size_t k = 0; k < n; k++)
            votes += ids[k] != NULL && strcmp(ids[k], ids[i]) == 0;
        if (votes > best) {
            best = votes;
            *want = ids[i];
        }
    }
    if (answered == 0)
        return POLICY_CHAINID_WAIT;
    if (2 * best <= answered) {
        *want = NULL;
        return POLICY_CHAINID_SPLIT;
    }
    *wrong = differing(*want, ids, n);
    return POLICY_CHAINID_AGREED;
}

const char *policy_chainid_heal(const char *kept, const char *const *ids, size_t n)
{
    const char *to = NULL;
    size_t answered = 0;
    if (kept == NULL || kept[0] == '\0')
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] == NULL)
            continue;
        if (to != NULL && strcmp(ids[i], to) != 0)
            return NULL; /* not every one that answers agrees */
        to = ids[i];
        answered++;
    }
    if (to == NULL || strcmp(to, kept) == 0 || (answered < 2 && n != 1))
        return NULL;
    return to;
}

void policy_chainid_excluded(char *out, size_t cap, const char *got, const char *want)
{
    snprintf(out, cap, "wrong chain: %s (want %s)", got, want);
}
