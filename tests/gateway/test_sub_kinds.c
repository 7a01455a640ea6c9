/* tests/gateway/test_sub_kinds.c: the table of subscription kinds
 * (gateway/gw_sub_kinds.c): every row complete, none twice, each served
 * kind with a source, each refused one with its message. */
#include <criterion/criterion.h>
#include <string.h>

#include "gateway/gw_sub_int.h"

Test(sub_kinds, rows_are_complete)
{
    cr_assert_gt(gw_sub_nkinds, 0);
    for (size_t i = 0; i < gw_sub_nkinds; i++) {
        const gw_sub_kind_t *k = &gw_sub_kinds[i];
        cr_expect(k->name && k->method && k->unsubscribe && k->notification, "row %zu", i);
        if (k->normalise != NULL)
            cr_expect(k->start != NULL && k->stop != NULL && k->refusal == NULL, "%s", k->name);
        else
            cr_expect(k->refusal != NULL && strlen(k->refusal) > 20, "%s", k->name);
        /* Solana's method is the kind; Ethereum's kinds share eth_subscribe */
        if (k->chain == POLICY_CHAIN_SOLANA)
            cr_expect_str_eq(k->method, k->name);
        else
            cr_expect_str_eq(k->method, "eth_subscribe");
        cr_expect(k->id_form == (k->chain == POLICY_CHAIN_SOLANA ? GW_SUB_ID_INT : GW_SUB_ID_HEX), "%s", k->name);
    }
}

Test(sub_kinds, no_kind_twice)
{
    for (size_t i = 0; i < gw_sub_nkinds; i++)
        for (size_t j = i + 1; j < gw_sub_nkinds; j++)
            cr_expect(gw_sub_kinds[i].chain != gw_sub_kinds[j].chain ||
                          strcmp(gw_sub_kinds[i].name, gw_sub_kinds[j].name) != 0,
                      "%s twice", gw_sub_kinds[i].name);
}

Test(sub_kinds, the_kinds_the_issue_names)
{
    static const char *const want[] = {"newHeads", "logs", "newPendingTransactions", "slotSubscribe",
                                       "rootSubscribe", "signatureSubscribe", "accountSubscribe",
                                       "logsSubscribe", "programSubscribe"};
    for (size_t w = 0; w < sizeof(want) / sizeof(want[0]); w++) {
        int found = 0;
        for (size_t i = 0; i < gw_sub_nkinds; i++)
            found |= strcmp(gw_sub_kinds[i].name, want[w]) == 0;
        cr_expect(found, "%s has no row", want[w]);
    }
}
