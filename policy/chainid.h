/* policy/chainid.h: which chain a network is on, and which endpoints are not.
 *
 * An endpoint on the wrong chain (a testnet key, a provider that moved a
 * path) must never answer a client: its heads and blocks are another chain's.
 * The identity is the configured one (`chain_id` on Ethereum networks,
 * `genesis_hash` on Solana), else the one most endpoints report (learned at
 * start and kept in state); an endpoint reporting another is excluded, with
 * an endpoint_wrong_chain event, until a probe sees the right one. Ids are
 * compared in one normal form per chain, so "0x2105", "8453" and 8453 are one
 * chain. Pure. */
#ifndef POLICY_CHAINID_H
#define POLICY_CHAINID_H

#include <stddef.h>
#include <stdint.h>

#include "base/sl_err.h"
#include "policy/chain.h"

/* Room for a normal form and its NUL ("0x" + 16 hex digits; a base58 32-byte hash is at most 44). */
#define POLICY_CHAINID_MAX 48

/* The normal form of an id as an endpoint or the config writes it:
 * Ethereum "0x" + lowercase hex without leading zeros, from hex ("0x2105",
 * what eth_chainId answers) or decimal ("8453", net_version and configs);
 * Solana the base58 text of a 32-byte genesis hash. SL_ERR_PARSE if it is
 * neither (a chain id past 2^64, an empty text, a hash of another length). */
SL_MUST_CHECK sl_err_t policy_chainid_normalize(policy_chain_t chain, const char *text, size_t len,
                                                char out[POLICY_CHAINID_MAX]);

typedef enum policy_chainid_decision {
    POLICY_CHAINID_AGREED,        /* *want is the identity; *wrong the endpoints on another chain */
    POLICY_CHAINID_WAIT,          /* no endpoint has answered yet */
    POLICY_CHAINID_SPLIT,         /* no id has more than half of the answers: refuse to start */
} policy_chainid_decision_t;

/* Decides from the configured id (normal form, or NULL) and ids[0..n), each
 * endpoint's reported id in normal form (NULL: not known yet; n at most 64).
 * *want points at configured or at one of ids; bit i of *wrong is set for an
 * endpoint whose known id differs from it. */
policy_chainid_decision_t policy_chainid_decide(const char *configured, const char *const *ids, size_t n,
                                                const char **want, uint64_t *wrong);

/* A learned identity heals: kept (normal form) was learned from the
 * endpoints earlier (a first start with most URLs on another chain learns
 * that one), and now every endpoint that answers (ids[i] not NULL) says one
 * other id, with at least 2 answering, or n == 1. Returns that id (one of
 * ids), else NULL: kept stands. A configured identity never heals. */
const char *policy_chainid_heal(const char *kept, const char *const *ids, size_t n);

/* "wrong chain: 0x5 (want 0x1)", what /admin/endpoints shows as `excluded`,
 * NUL-terminated in out[0..cap). */
void policy_chainid_excluded(char *out, size_t cap, const char *got, const char *want);

#endif
