/* tests/sub/test_sub_kinds.c: the table of subscription kinds
 * (sub/sub_kinds.c): every row complete, none twice, each served
 * kind with a source, each refused one with its message; the passthrough
 * normalisers. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "sub/sub_int.h"
#include "policy/logfilter.h"
#include "tests/lib/sub_norm.h"

Test(sub_kinds, rows_are_complete)
{
    cr_assert_gt(sub_nkinds, 0);
    for (size_t i = 0; i < sub_nkinds; i++) {
        const sub_kind_t *k = &sub_kinds[i];
        cr_expect(k->name && k->method && k->unsubscribe && k->notification, "row %zu", i);
        if (k->start != NULL)
            cr_expect(k->normalise != NULL && k->stop != NULL, "%s", k->name);
        /* a kind without polling is passed through or refused, with its message */
        if (k->start == NULL)
            cr_expect(k->refusal != NULL && strlen(k->refusal) > 20, "%s", k->name);
        /* Solana's method is the kind; Ethereum's kinds share eth_subscribe */
        if (k->chain == POLICY_CHAIN_SOLANA)
            cr_expect_str_eq(k->method, k->name);
        else
            cr_expect_str_eq(k->method, "eth_subscribe");
        cr_expect(k->id_form == (k->chain == POLICY_CHAIN_SOLANA ? SUB_ID_INT : SUB_ID_HEX), "%s", k->name);
    }
}

Test(sub_kinds, no_kind_twice)
{
    for (size_t i = 0; i < sub_nkinds; i++)
        for (size_t j = i + 1; j < sub_nkinds; j++)
            cr_expect(sub_kinds[i].chain != sub_kinds[j].chain ||
                          strcmp(sub_kinds[i].name, sub_kinds[j].name) != 0,
                      "%s twice", sub_kinds[i].name);
}

Test(sub_kinds, the_kinds_the_issue_names)
{
    static const char *const want[] = {"newHeads", "logs", "newPendingTransactions", "slotSubscribe",
                                       "rootSubscribe", "signatureSubscribe", "accountSubscribe",
                                       "logsSubscribe", "programSubscribe"};
    for (size_t w = 0; w < sizeof(want) / sizeof(want[0]); w++) {
        int found = 0;
        for (size_t i = 0; i < sub_nkinds; i++)
            found |= strcmp(sub_kinds[i].name, want[w]) == 0;
        cr_expect(found, "%s has no row", want[w]);
    }
}

Test(sub_kinds, logs_filters_normalise_to_one_key)
{
    char k1[512], k2[512];
    cr_assert_null(norm(sub_eth_logs_params,
                        "[\"logs\",{\"address\":\"0xAbCd00000000000000000000000000000000EF12\","
                        "\"topics\":[\"0xDDF252AD1BE2C89B69C2B068FC378DAA952BA7F163C4A11628F55A4DF523B3EF\",null]}]",
                        k1, sizeof(k1)));
    cr_assert_null(norm(sub_eth_logs_params,
                        "[\"logs\",{\"topics\":[\"0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef\",null],"
                        "\"address\":\"0xabcd00000000000000000000000000000000ef12\"}]",
                        k2, sizeof(k2)));
    cr_expect_str_eq(k1, k2); /* case and member order do not make another source */
    cr_expect_str_eq(k1, ",\"address\":\"0xabcd00000000000000000000000000000000ef12\","
                         "\"topics\":[\"0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef\",null]");
    cr_assert_null(norm(sub_eth_logs_params, "[\"logs\"]", k1, sizeof(k1)));
    cr_expect_str_eq(k1, "");
}

/* The logs normaliser's verdict on a filter of n distinct values written
 * by fmt (from 0 up) between open and close. */
static const char *logs_of(int n, const char *open, const char *fmt, const char *close)
{
    static char key[64];
    sl_buf_t b;
    sl_buf_init(&b);
    sl_buf_printf(&b, "[\"logs\",%s", open);
    for (int i = 0; i < n; i++) {
        if (i > 0)
            sl_buf_append_char(&b, ',');
        sl_buf_printf(&b, fmt, i);
    }
    sl_buf_printf(&b, "%s]", close);
    const char *bad = norm(sub_eth_logs_params, b.base, key, sizeof(key));
    sl_buf_dispose(&b);
    return bad;
}

Test(sub_kinds, logs_sets_sorted_unique_and_capped)
{
    static const char a[] = "\"0x00000000000000000000000000000000000000aa\"";
    static const char b[] = "\"0x00000000000000000000000000000000000000BB\"";
    char k1[512], k2[512];
    char json[512];
    snprintf(json, sizeof(json), "[\"logs\",{\"address\":[%s,%s,%s,%s],\"topics\":[[%s,%s]]}]", b, a, b, b,
             "\"0x" "02" "00000000000000000000000000000000000000000000000000000000000000\"",
             "\"0x" "01" "00000000000000000000000000000000000000000000000000000000000000\"");
    cr_assert_null(norm(sub_eth_logs_params, json, k1, sizeof(k1)));
    cr_expect_str_eq(k1, ",\"address\":[\"0x00000000000000000000000000000000000000aa\","
                         "\"0x00000000000000000000000000000000000000bb\"],\"topics\":[["
                         "\"0x0100000000000000000000000000000000000000000000000000000000000000\","
                         "\"0x0200000000000000000000000000000000000000000000000000000000000000\"]]");
    snprintf(json, sizeof(json), "[\"logs\",{\"address\":[%s,%s],\"topics\":[[%s,%s]]}]", a, b,
             "\"0x" "01" "00000000000000000000000000000000000000000000000000000000000000\"",
             "\"0x" "02" "00000000000000000000000000000000000000000000000000000000000000\"");
    cr_assert_null(norm(sub_eth_logs_params, json, k2, sizeof(k2)));
    cr_expect_str_eq(k1, k2, "order, case and repeats do not make another source");

    /* the caps: 1,000 addresses and 100 topics at a position pass, one more does not */
    cr_expect_null(logs_of(POLICY_LOGFILTER_MAX_ADDRESSES, "{\"address\":[", "\"0x%040x\"", "]}"));
    cr_expect_eq(logs_of(POLICY_LOGFILTER_MAX_ADDRESSES + 1, "{\"address\":[", "\"0x%040x\"", "]}"),
                 sub_eth_logs_too_many_addresses);
    cr_expect_null(logs_of(POLICY_LOGFILTER_MAX_ALTERNATIVES, "{\"topics\":[null,[", "\"0x%064x\"", "]]}"));
    cr_expect_eq(logs_of(POLICY_LOGFILTER_MAX_ALTERNATIVES + 1, "{\"topics\":[null,[", "\"0x%064x\"", "]]}"),
                 sub_eth_logs_too_many_topics);
}

Test(sub_kinds, bad_params_are_refused)
{
    char k[512];
    cr_expect_not_null(norm(sub_eth_logs_params, "[\"logs\",{\"address\":\"0x12\"}]", k, sizeof(k)));
    cr_expect_not_null(norm(sub_eth_logs_params, "[\"logs\",{\"address\":\"0x12\\\"}]\"}]", k, sizeof(k)));
    cr_expect_not_null(norm(sub_eth_logs_params, "[\"logs\",{\"topics\":[1]}]", k, sizeof(k)));
    cr_expect_not_null(norm(sub_eth_logs_params, "[\"logs\",{\"topics\":[null,null,null,null,null]}]", k, sizeof(k)));
    cr_expect_not_null(norm(sub_eth_logs_params, "[\"logs\",5]", k, sizeof(k)));
    cr_expect_not_null(norm(sub_eth_heads_params, "[\"newHeads\",{}]", k, sizeof(k)));
    cr_expect_not_null(norm(sub_sol_slot_params, "[1]", k, sizeof(k)));
    /* Solana: base58 only (no JSON can be smuggled into the poll's params), a known commitment */
    cr_expect_not_null(norm(sub_sol_signature_params, "[\"\\\"]}\"]", k, sizeof(k)));
    cr_expect_not_null(norm(sub_sol_account_params, "[\"0OIl\"]", k, sizeof(k)));
    cr_expect_not_null(norm(sub_sol_account_params,
                            "[\"SysvarC1ock11111111111111111111111111111111\",{\"commitment\":\"max\"}]", k, sizeof(k)));
    cr_expect_not_null(norm(sub_sol_account_params,
                            "[\"SysvarC1ock11111111111111111111111111111111\",{\"encoding\":\"hex\"}]", k, sizeof(k)));
    cr_assert_null(norm(sub_sol_account_params,
                        "[\"SysvarC1ock11111111111111111111111111111111\",{\"encoding\":\"base64\",\"commitment\":\"confirmed\"}]",
                        k, sizeof(k)));
    cr_expect_str_eq(k, "SysvarC1ock11111111111111111111111111111111|1|base64");
}

Test(sub_kinds, passthrough_kinds_and_their_params)
{
    static const char *const pass[] = {"newPendingTransactions", "logsSubscribe", "programSubscribe"};
    for (size_t w = 0; w < 3; w++)
        for (size_t i = 0; i < sub_nkinds; i++)
            if (strcmp(sub_kinds[i].name, pass[w]) == 0)
                cr_expect(sub_kinds[i].pass, "%s is passed through", pass[w]);
    char k1[512], k2[512];
    cr_assert_null(norm(sub_pass_pending_params, "[\"newPendingTransactions\"]", k1, sizeof(k1)));
    cr_assert_null(norm(sub_pass_pending_params, "[\"newPendingTransactions\",false]", k2, sizeof(k2)));
    cr_expect_str_eq(k1, k2); /* hashes either way: one source */
    cr_assert_null(norm(sub_pass_pending_params, "[\"newPendingTransactions\",true]", k1, sizeof(k1)));
    cr_expect_str_eq(k1, "true");
    cr_expect_not_null(norm(sub_pass_pending_params, "[\"newPendingTransactions\",{}]", k1, sizeof(k1)));
    cr_expect_not_null(norm(sub_pass_pending_params, "[\"newPendingTransactions\",true,1]", k1, sizeof(k1)));
    /* the generic one: canonical (members sorted), a string or object first, bounded */
    cr_assert_null(norm(sub_pass_params, "[{\"mentions\":[\"A\"]},{\"commitment\":\"confirmed\",\"a\":{\"z\":1,\"b\":2}}]",
                        k1, sizeof(k1)));
    cr_expect_str_eq(k1, "[{\"mentions\":[\"A\"]},{\"a\":{\"b\":2,\"z\":1},\"commitment\":\"confirmed\"}]");
    cr_assert_null(norm(sub_pass_params, "[{\"a\":{\"b\":2,\"z\":1},\"commitment\":\"confirmed\"}]", k2, sizeof(k2)));
    cr_expect_not_null(norm(sub_pass_params, "[]", k1, sizeof(k1)));
    cr_expect_not_null(norm(sub_pass_params, "[5]", k1, sizeof(k1)));
    cr_expect_not_null(norm(sub_pass_params, "[\"all\",5]", k1, sizeof(k1)));
    cr_expect_not_null(norm(sub_pass_params, "[\"all\",{},{}]", k1, sizeof(k1)));
    char big[6000];
    snprintf(big, sizeof(big), "[\"%05000d\"]", 0);
    cr_expect_not_null(norm(sub_pass_params, big, k1, sizeof(k1)));
}
