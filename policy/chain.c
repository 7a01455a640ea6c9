#include "policy/chain.h"

#include <string.h>

static const char *const chain_names[POLICY_CHAIN_COUNT] = {
    [POLICY_CHAIN_ETHEREUM] = "ethereum",
    [POLICY_CHAIN_SOLANA] = "solana",
};

int policy_chain_parse(const char *s)
{
    for (int i = 0; i < POLICY_CHAIN_COUNT; i++)
        if (strcmp(s, chain_names[i]) == 0)
            return i;
    return -1;
}

const char *policy_chain_name(policy_chain_t chain)
{
    return (unsigned)chain < POLICY_CHAIN_COUNT ? chain_names[chain] : "unknown";
}
