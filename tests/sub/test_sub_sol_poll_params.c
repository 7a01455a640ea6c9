/* tests/sub/test_sub_sol_poll_params.c: the normalisers of Solana's
 * logsSubscribe and programSubscribe (sub/sub_sol_logs.c,
 * sub_sol_program.c): equal params give one key, bad ones a message. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "sub/sub_int.h"
#include "tests/lib/sub_norm.h"

#define PK "SysvarC1ock11111111111111111111111111111111"
#define TOKEN "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"

Test(sub_sol_poll, logs_mentions_normalise)
{
    char k1[256], k2[256];
    cr_assert_null(norm(sub_sol_logs_params, "[{\"mentions\":[\"" PK "\"]}]", k1, sizeof(k1)));
    cr_assert_null(norm(sub_sol_logs_params, "[{\"mentions\":[\"" PK "\"]},{\"commitment\":\"finalized\"}]", k2,
                        sizeof(k2)));
    cr_expect_str_eq(k1, k2);
    cr_expect_str_eq(k1, PK "|2");
    /* processed is polled at confirmed (the least getSignaturesForAddress reads) */
    cr_assert_null(norm(sub_sol_logs_params, "[{\"mentions\":[\"" PK "\"]},{\"commitment\":\"processed\"}]", k1,
                        sizeof(k1)));
    cr_expect_str_eq(k1, PK "|1");
}

Test(sub_sol_poll, logs_bad_params)
{
    char k[256];
    const char *all = norm(sub_sol_logs_params, "[\"all\"]", k, sizeof(k));
    cr_assert_not_null(all);
    cr_expect(strstr(all, "ws_url") != NULL, "%s", all);
    cr_expect_not_null(norm(sub_sol_logs_params, "[\"allWithVotes\"]", k, sizeof(k)));
    cr_expect_not_null(norm(sub_sol_logs_params, "[{\"mentions\":[\"" PK "\",\"" TOKEN "\"]}]", k, sizeof(k)));
    cr_expect_not_null(norm(sub_sol_logs_params, "[{\"mentions\":[]}]", k, sizeof(k)));
    cr_expect_not_null(norm(sub_sol_logs_params, "[{\"mentions\":[\"0OIl\"]}]", k, sizeof(k)));
    cr_expect_not_null(norm(sub_sol_logs_params, "[{\"mentions\":\"" PK "\"}]", k, sizeof(k)));
    cr_expect_not_null(norm(sub_sol_logs_params, "[{\"mentions\":[\"" PK "\"],\"x\":1}]", k, sizeof(k)));
    cr_expect_not_null(norm(sub_sol_logs_params, "[{\"mentions\":[\"" PK "\"]},{\"commitment\":\"max\"}]", k,
                            sizeof(k)));
    cr_expect_not_null(norm(sub_sol_logs_params, "[{\"mentions\":[\"" PK "\"]},{\"encoding\":\"base64\"}]", k,
                            sizeof(k)));
    cr_expect_not_null(norm(sub_sol_logs_params, "[]", k, sizeof(k)));
}

Test(sub_sol_poll, program_normalise)
{
    char k1[512], k2[512];
    cr_assert_null(norm(sub_sol_program_params,
                        "[\"" TOKEN "\",{\"encoding\":\"base64\",\"filters\":[{\"dataSize\":165},"
                        "{\"memcmp\":{\"bytes\":\"" PK "\",\"offset\":32}}]}]",
                        k1, sizeof(k1)));
    cr_assert_null(norm(sub_sol_program_params,
                        "[\"" TOKEN "\",{\"filters\":[{\"dataSize\":165.0},{\"memcmp\":{\"offset\":32,\"bytes\":\"" PK
                        "\"}}],\"commitment\":\"finalized\",\"encoding\":\"base64\"}]",
                        k2, sizeof(k2)));
    cr_expect_str_eq(k1, k2);
    cr_expect_str_eq(k1, TOKEN "|2|base64|[{\"dataSize\":165},{\"memcmp\":{\"offset\":32,\"bytes\":\"" PK "\"}}]");
    cr_assert_null(norm(sub_sol_program_params, "[\"" TOKEN "\"]", k1, sizeof(k1)));
    cr_expect_str_eq(k1, TOKEN "|2||");
}

Test(sub_sol_poll, program_bad_params)
{
    char k[512];
    cr_expect_not_null(norm(sub_sol_program_params, "[]", k, sizeof(k)));
    cr_expect_not_null(norm(sub_sol_program_params, "[\"\\\"]}\"]", k, sizeof(k)));
    cr_expect_not_null(norm(sub_sol_program_params, "[\"" TOKEN "\",{\"encoding\":\"hex\"}]", k, sizeof(k)));
    cr_expect_not_null(norm(sub_sol_program_params, "[\"" TOKEN "\",{\"dataSlice\":{}}]", k, sizeof(k)));
    cr_expect_not_null(norm(sub_sol_program_params, "[\"" TOKEN "\",{\"filters\":{}}]", k, sizeof(k)));
    cr_expect_not_null(norm(sub_sol_program_params, "[\"" TOKEN "\",{\"filters\":[{\"dataSize\":-1}]}]", k,
                            sizeof(k)));
    cr_expect_not_null(norm(sub_sol_program_params, "[\"" TOKEN "\",{\"filters\":[{\"dataSize\":1.5}]}]", k,
                            sizeof(k)));
    cr_expect_not_null(norm(sub_sol_program_params,
                            "[\"" TOKEN "\",{\"filters\":[{\"dataSize\":1},{\"dataSize\":1},{\"dataSize\":1},"
                            "{\"dataSize\":1},{\"dataSize\":1}]}]",
                            k, sizeof(k)));
    cr_expect_not_null(norm(sub_sol_program_params,
                            "[\"" TOKEN "\",{\"filters\":[{\"memcmp\":{\"offset\":0,\"bytes\":\"\\\"}\"}}]}]", k,
                            sizeof(k)));
    cr_expect_not_null(norm(sub_sol_program_params,
                            "[\"" TOKEN "\",{\"filters\":[{\"memcmp\":{\"offset\":0,\"bytes\":\"AA\",\"x\":1}}]}]", k,
                            sizeof(k)));
    cr_expect_not_null(norm(sub_sol_program_params,
                            "[\"" TOKEN "\",{\"filters\":[{\"dataSize\":1,\"memcmp\":{\"offset\":0,\"bytes\":\"AA\"}}]}]",
                            k, sizeof(k)));
}
