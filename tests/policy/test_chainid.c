/* tests/policy/test_chainid.c: chain identity (policy/chainid.h). */
#include <criterion/criterion.h>
#include <string.h>

#include "policy/chainid.h"

#define ETH POLICY_CHAIN_ETHEREUM
#define SOL POLICY_CHAIN_SOLANA
#define MAINNET_GENESIS "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d"
#define DEVNET_GENESIS "EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG"

static const char *norm(policy_chain_t chain, const char *text)
{
    static char out[POLICY_CHAINID_MAX];
    return policy_chainid_normalize(chain, text, strlen(text), out) == SL_OK ? out : NULL;
}

Test(chainid, normal_forms)
{
    cr_expect_str_eq(norm(ETH, "0x2105"), "0x2105");
    cr_expect_str_eq(norm(ETH, "8453"), "0x2105");
    cr_expect_str_eq(norm(ETH, "0X00002105"), "0x2105");
    cr_expect_str_eq(norm(ETH, "0xAbC"), "0xabc");
    cr_expect_str_eq(norm(ETH, "1"), "0x1");
    cr_expect_str_eq(norm(ETH, "0"), "0x0");
    cr_expect_str_eq(norm(ETH, "0xffffffffffffffff"), "0xffffffffffffffff");
    cr_expect_null(norm(ETH, "0x10000000000000000"));
    cr_expect_null(norm(ETH, "18446744073709551616"));
    cr_expect_null(norm(ETH, ""));
    cr_expect_null(norm(ETH, "0x"));
    cr_expect_null(norm(ETH, "-1"));
    cr_expect_null(norm(ETH, "0x1g"));
    cr_expect_str_eq(norm(SOL, MAINNET_GENESIS), MAINNET_GENESIS);
    cr_expect_null(norm(SOL, "5eykt4UsFv8P8NJdTREpY1vzqKqZKvd")); /* 23 bytes */
    cr_expect_null(norm(SOL, "0OIl"));
    cr_expect_null(norm(SOL, ""));
    char out[POLICY_CHAINID_MAX];
    cr_expect_eq(policy_chainid_normalize(POLICY_CHAIN_COUNT, "1", 1, out), SL_ERR_INVALID);
}

Test(chainid, configured_wins)
{
    const char *ids[] = {"0x1", "0x2105", NULL, "0x2105"};
    const char *want;
    uint64_t wrong;
    cr_expect_eq(policy_chainid_decide("0x1", ids, 4, &want, &wrong), POLICY_CHAINID_AGREED);
    cr_expect_str_eq(want, "0x1");
    cr_expect_eq(wrong, 0xa); /* endpoints 1 and 3; endpoint 2 is not known yet */
}

Test(chainid, learned_from_the_majority)
{
    const char *ids[] = {"0x1", "0x5", "0x1"};
    const char *want;
    uint64_t wrong;
    cr_expect_eq(policy_chainid_decide(NULL, ids, 3, &want, &wrong), POLICY_CHAINID_AGREED);
    cr_expect_str_eq(want, "0x1");
    cr_expect_eq(wrong, 0x2);
    /* a wrong-chain endpoint with the higher head changes nothing: heads are not votes */
    const char *sol[] = {MAINNET_GENESIS, NULL, MAINNET_GENESIS, DEVNET_GENESIS};
    cr_expect_eq(policy_chainid_decide(NULL, sol, 4, &want, &wrong), POLICY_CHAINID_AGREED);
    cr_expect_str_eq(want, MAINNET_GENESIS);
    cr_expect_eq(wrong, 0x8);
}

Test(chainid, no_majority_refuses)
{
    const char *two[] = {"0x1", "0x5"};
    const char *want = "x";
    uint64_t wrong = 9;
    cr_expect_eq(policy_chainid_decide(NULL, two, 2, &want, &wrong), POLICY_CHAINID_SPLIT);
    cr_expect_null(want);
    cr_expect_eq(wrong, 0);
    const char *three[] = {"0x1", "0x5", "0x89"};
    cr_expect_eq(policy_chainid_decide(NULL, three, 3, &want, &wrong), POLICY_CHAINID_SPLIT);
    const char *none[] = {NULL, NULL};
    cr_expect_eq(policy_chainid_decide(NULL, none, 2, &want, &wrong), POLICY_CHAINID_WAIT);
    cr_expect_eq(policy_chainid_decide(NULL, none, 0, &want, &wrong), POLICY_CHAINID_WAIT);
    /* one answer is a majority of the answers */
    const char *one[] = {NULL, "0x1"};
    cr_expect_eq(policy_chainid_decide(NULL, one, 2, &want, &wrong), POLICY_CHAINID_AGREED);
    cr_expect_str_eq(want, "0x1");
}

Test(chainid, a_learned_chain_heals_when_every_answer_agrees)
{
    const char *fixed[] = {"0x1", "0x1", "0x1"}, *one_down[] = {"0x1", NULL, "0x1"};
    const char *split[] = {"0x1", "0x5", "0x1"}, *alone[] = {NULL, "0x1", NULL}, *same[] = {"0x5", "0x5", NULL};
    const char *single[] = {"0x1"}, *none[] = {NULL, NULL};
    cr_expect_str_eq(policy_chainid_heal("0x5", fixed, 3), "0x1", "every URL fixed");
    cr_expect_str_eq(policy_chainid_heal("0x5", one_down, 3), "0x1", "two answering agree, one silent");
    cr_expect_null(policy_chainid_heal("0x5", split, 3), "one answer for the kept chain: it stands");
    cr_expect_null(policy_chainid_heal("0x5", alone, 3), "one answer of three is not enough");
    cr_expect_null(policy_chainid_heal("0x5", same, 3), "they agree with what is kept");
    cr_expect_str_eq(policy_chainid_heal("0x5", single, 1), "0x1", "the only endpoint configured");
    cr_expect_null(policy_chainid_heal("0x5", none, 2), "nobody answers");
    cr_expect_null(policy_chainid_heal("", fixed, 3), "nothing kept: learned, not healed");
    cr_expect_null(policy_chainid_heal(NULL, fixed, 3));
}

Test(chainid, excluded_reason)
{
    char out[64];
    policy_chainid_excluded(out, sizeof out, "0x5", "0x1");
    cr_expect_str_eq(out, "wrong chain: 0x5 (want 0x1)");
}
