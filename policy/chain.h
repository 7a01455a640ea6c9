/* policy/chain.h: chain families. The same JSON-RPC error code means different
 * things on different chains (-32005: rate limit on Ethereum, node behind on
 * Solana), so every table in policy/ is keyed by one of these. */
#ifndef POLICY_CHAIN_H
#define POLICY_CHAIN_H

typedef enum policy_chain {
    POLICY_CHAIN_ETHEREUM,
    POLICY_CHAIN_SOLANA,
    POLICY_CHAIN_COUNT
} policy_chain_t;

/* "ethereum" | "solana"; returns -1 if unknown. */
int policy_chain_parse(const char *s);
const char *policy_chain_name(policy_chain_t chain);

#endif
