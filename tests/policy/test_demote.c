/* tests/policy/test_demote.c: which failures push an endpoint out of first
 * place, and for how long. */
#include <criterion/criterion.h>

#include "policy/demote.h"

Test(demote, timeouts_and_resets_of_cheap_reads_demote)
{
    cr_expect_eq(policy_demote_cause(1, 0, 0), POLICY_DEMOTE_TIMEOUT);
    cr_expect_eq(policy_demote_cause(0, 1, 0), POLICY_DEMOTE_RESET);
    cr_expect_eq(policy_demote_cause(0, 0, 0), POLICY_DEMOTE_NONE);
}

Test(demote, a_heavy_call_never_demotes)
{
    /* a client's slow eth_call / eth_getLogs must not push endpoints down */
    cr_expect_eq(policy_demote_cause(1, 0, 1), POLICY_DEMOTE_NONE);
    cr_expect_eq(policy_demote_cause(0, 1, 1), POLICY_DEMOTE_NONE);
}

Test(demote, hedge_races_lost_without_a_byte_demote_after_a_few)
{
    cr_expect_eq(policy_demote_on_loss(1, 0), POLICY_DEMOTE_NONE);
    cr_expect_eq(policy_demote_on_loss(POLICY_DEMOTE_LOSSES - 1, 0), POLICY_DEMOTE_NONE);
    cr_expect_eq(policy_demote_on_loss(POLICY_DEMOTE_LOSSES, 0), POLICY_DEMOTE_HEDGES_LOST);
    /* slow but answering: never demoted for losing */
    cr_expect_eq(policy_demote_on_loss(100, 1), POLICY_DEMOTE_NONE);
}

Test(demote, until_extends_never_shortens)
{
    cr_expect_eq(policy_demote_until(0, 1000, 30000), 31000);
    cr_expect_eq(policy_demote_until(31000, 2000, 30000), 32000);
    cr_expect_eq(policy_demote_until(90000, 2000, 30000), 90000);
    cr_expect_eq(policy_demote_until(500, 2000, 0), 500, "demote_ms 0: off");
    cr_expect(policy_demoted(32000, 31999));
    cr_expect_not(policy_demoted(32000, 32000));
    cr_expect_not(policy_demoted(0, 1));
}

Test(demote, every_cause_has_a_name)
{
    for (int c = 0; c < POLICY_DEMOTE_CAUSE_COUNT; c++)
        cr_expect_neq(policy_demote_cause_name((policy_demote_cause_t)c)[0], '\0');
    cr_expect_str_eq(policy_demote_cause_name(POLICY_DEMOTE_CAUSE_COUNT), "unknown");
}
