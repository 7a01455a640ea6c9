/* tests/policy/test_logsplit.c: eth_getLogs split planning, sub-call params
 * and the merge rule (policy/logsplit.h). */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sl_buf.h"
#include "policy/cost.h"
#include "policy/logsplit.h"

#define SPAN(s) ((wire_span_t){0, (uint32_t)strlen(s)})

Test(logsplit, fits_in_one_call)
{
    policy_logs_range_t r[4];
    size_t n = 9;
    cr_expect_eq(policy_logsplit_plan(100, 1099, 1000, 20, r, 4, &n), POLICY_LOGSPLIT_ONE);
    cr_expect_eq(n, 1);
    cr_expect(r[0].from == 100 && r[0].to == 1099);
    cr_expect_eq(policy_logsplit_plan(5, 5, 1, 20, r, 4, &n), POLICY_LOGSPLIT_ONE);
    /* no limit: whatever the width */
    cr_expect_eq(policy_logsplit_plan(0, UINT64_MAX, 0, 1, r, 4, &n), POLICY_LOGSPLIT_ONE);
    cr_expect(r[0].from == 0 && r[0].to == UINT64_MAX);
    cr_expect_eq(policy_logsplit_plan(9, 8, 1000, 20, r, 4, &n), POLICY_LOGSPLIT_BACKWARDS);
    cr_expect_eq(n, 0);
    cr_expect_eq(policy_logsplit_plan(1, 2, 1000, 20, r, 0, &n), POLICY_LOGSPLIT_TOO_WIDE);
}

Test(logsplit, ten_thousand_blocks_over_a_thousand_block_limit)
{
    policy_logs_range_t r[20];
    size_t n = 0;
    cr_assert_eq(policy_logsplit_plan(1000000, 1009999, 1000, 20, r, 20, &n), POLICY_LOGSPLIT_SPLIT);
    cr_assert_eq(n, 10);
    for (size_t i = 0; i < n; i++) {
        cr_expect_eq(r[i].from, 1000000 + i * 1000);
        cr_expect_eq(r[i].to, 1000999 + i * 1000);
    }
    /* a last range shorter than the others; every block exactly once */
    cr_assert_eq(policy_logsplit_plan(10, 2510, 1000, 20, r, 20, &n), POLICY_LOGSPLIT_SPLIT);
    cr_assert_eq(n, 3);
    cr_expect(r[2].from == 2010 && r[2].to == 2510);
    uint64_t next = 10;
    for (size_t i = 0; i < n; i++) {
        cr_expect_eq(r[i].from, next);
        cr_expect_leq(r[i].to - r[i].from + 1, 1000);
        next = r[i].to + 1;
    }
    cr_expect_eq(next, 2511);
    /* the top of the number space does not wrap */
    cr_assert_eq(policy_logsplit_plan(UINT64_MAX - 2499, UINT64_MAX, 1000, 20, r, 20, &n), POLICY_LOGSPLIT_SPLIT);
    cr_expect_eq(n, 3);
    cr_expect_eq(r[2].to, UINT64_MAX);
}

Test(logsplit, past_max_split_is_too_wide)
{
    policy_logs_range_t r[20];
    size_t n = 5;
    cr_expect_eq(policy_logsplit_plan(0, 19999, 1000, 20, r, 20, &n), POLICY_LOGSPLIT_SPLIT);
    cr_expect_eq(n, 20);
    cr_expect_eq(policy_logsplit_plan(0, 20000, 1000, 20, r, 20, &n), POLICY_LOGSPLIT_TOO_WIDE);
    cr_expect_eq(n, 0);
    /* the caller's room bounds it too */
    cr_expect_eq(policy_logsplit_plan(0, 4999, 1000, 20, r, 4, &n), POLICY_LOGSPLIT_TOO_WIDE);
    /* max_split 0 reads as 1 */
    cr_expect_eq(policy_logsplit_plan(0, 1999, 1000, 0, r, 20, &n), POLICY_LOGSPLIT_TOO_WIDE);
    cr_expect_eq(policy_logsplit_plan(0, UINT64_MAX, 1, 20, r, 20, &n), POLICY_LOGSPLIT_TOO_WIDE);
    char msg[256];
    size_t len = policy_logsplit_too_wide_message(msg, sizeof msg, 0, 249999, 1000, 20);
    cr_expect_eq(len, strlen(msg));
    cr_expect_str_eq(msg, "eth_getLogs over 250000 blocks (0x0 to 0x3d08f) needs 250 calls of at most 1000 blocks; "
                          "this network allows 20 (max_logs_split): ask for at most 20000 blocks at a time");
    /* cut, but NUL-terminated */
    char small[16];
    cr_expect_gt(policy_logsplit_too_wide_message(small, sizeof small, 0, 249999, 1000, 20), 15);
    cr_expect_eq(strlen(small), 15);
}

static const char FILTER[] =
    "[ {\"address\": \"0x2222222222222222222222222222222222222222\", \"fromBlock\": \"latest\",\n"
    "   \"topics\": [\"0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef\", null],"
    " \"toBlock\": \"0xf4240\"} ]";

Test(logsplit, sub_call_params_keep_the_filter)
{
    char out[sizeof FILTER + POLICY_LOGSPLIT_PARAMS_EXTRA];
    size_t len;
    cr_assert_eq(policy_logsplit_params(FILTER, SPAN(FILTER), (policy_logs_range_t){0xf4200, 0xf423f}, out,
                                        sizeof out, &len),
                 SL_OK);
    cr_expect_eq(len, strlen("[{\"fromBlock\":\"0xf4200\",\"toBlock\":\"0xf423f\",\"address\":\"0x2222222222222222"
                             "222222222222222222222222\",\"topics\":[\"0xddf252ad1be2c89b69c2b068fc378daa952ba7f163"
                             "c4a11628f55a4df523b3ef\", null]}]"));
    cr_expect_eq(memcmp(out, "[{\"fromBlock\":\"0xf4200\",\"toBlock\":\"0xf423f\",\"address\":\"0x222222222222222222"
                             "2222222222222222222222\",\"topics\":[\"0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a1"
                             "1628f55a4df523b3ef\", null]}]",
                        len),
                 0, "%.*s", (int)len, out);
    /* the worst case fits the documented room */
    const char bare[] = "[{}]";
    char tight[sizeof bare - 1 + POLICY_LOGSPLIT_PARAMS_EXTRA];
    cr_expect_eq(policy_logsplit_params(bare, SPAN(bare), (policy_logs_range_t){UINT64_MAX - 1, UINT64_MAX}, tight,
                                        sizeof tight, &len),
                 SL_OK);
    cr_expect_eq(memcmp(tight, "[{\"fromBlock\":\"0xfffffffffffffffe\",\"toBlock\":\"0xffffffffffffffff\"}]", len), 0);
    cr_expect_eq(policy_logsplit_params(FILTER, SPAN(FILTER), (policy_logs_range_t){1, 2}, out, 40, &len),
                 SL_ERR_TOO_LARGE);
    /* what cannot be split */
    const char *bad[] = {
        "[{\"blockHash\":\"0x88e96d4537bea4d9c05d12549907b32561d3bf31f45aae734cdc119f13406cb6\"}]",
        "[]", "[{}, {}]", "[\"0x1\"]", "{}", "[{\"from\\u0042lock\":\"0x1\"}]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect_eq(policy_logsplit_params(bad[i], SPAN(bad[i]), (policy_logs_range_t){1, 2}, out, sizeof out, &len),
                     SL_ERR_PARSE, "%s", bad[i]);
    /* a null blockHash is one left out */
    const char nullhash[] = "[{\"blockHash\":null,\"toBlock\":\"0x9\"}]";
    cr_expect_eq(policy_logsplit_params(nullhash, SPAN(nullhash), (policy_logs_range_t){1, 2}, out, sizeof out, &len),
                 SL_OK);
    cr_expect_eq(memcmp(out, "[{\"fromBlock\":\"0x1\",\"toBlock\":\"0x2\"}]", len), 0);
}

/* n logs per block over [from, to], as one compact JSON array (a node's answer). */
static void logs_json(sl_buf_t *b, uint64_t from, uint64_t to, int per_block)
{
    int first = 1;
    sl_buf_append_str(b, "[");
    for (uint64_t blk = from; blk <= to; blk++)
        for (int i = 0; i < per_block; i++) {
            sl_buf_printf(b, "%s{\"address\":\"0x22\",\"blockNumber\":\"0x%" PRIx64 "\",\"logIndex\":\"0x%x\"}",
                          first ? "" : ",", blk, i);
            first = 0;
        }
    sl_buf_append_str(b, "]");
}

Test(logsplit, merged_answer_is_byte_identical_to_one_nodes)
{
    sl_buf_t whole = SL_BUF_INIT;
    logs_json(&whole, 100, 149, 2);
    policy_logs_range_t r[8];
    size_t n;
    cr_assert_eq(policy_logsplit_plan(100, 149, 16, 8, r, 8, &n), POLICY_LOGSPLIT_SPLIT);
    cr_assert_eq(n, 4);
    sl_buf_t parts_buf[4];
    policy_logsplit_part_t parts[4];
    for (size_t i = 0; i < n; i++) {
        parts_buf[i] = (sl_buf_t)SL_BUF_INIT;
        logs_json(&parts_buf[i], r[i].from, r[i].to, 2);
        parts[i] = (policy_logsplit_part_t){parts_buf[i].base, {0, (uint32_t)parts_buf[i].len}};
        cr_expect_eq(policy_logsplit_check(parts[i].buf, parts[i].result, r[i]), SL_OK);
    }
    size_t size, len;
    cr_assert_eq(policy_logsplit_merge_size(parts, n, &size), SL_OK);
    cr_expect_eq(size, whole.len);
    char *out = malloc(size);
    cr_assert_eq(policy_logsplit_merge(parts, n, out, size, &len), SL_OK);
    cr_expect_eq(len, whole.len);
    cr_expect_eq(memcmp(out, whole.base, len), 0);
    cr_expect_eq(policy_logsplit_merge(parts, n, out, size - 1, &len), SL_ERR_TOO_LARGE);
    free(out);
    for (size_t i = 0; i < n; i++)
        sl_buf_dispose(&parts_buf[i]);
    sl_buf_dispose(&whole);
}

Test(logsplit, empty_sub_answers_leave_no_commas)
{
    const char a[] = "[]", b[] = "[ {\"blockNumber\":\"0x5\"} ]", c[] = "[\n]", d[] = "[{\"blockNumber\":\"0x9\"}]";
    policy_logsplit_part_t parts[] = {{a, SPAN(a)}, {b, SPAN(b)}, {c, SPAN(c)}, {d, SPAN(d)}, {a, SPAN(a)}};
    char out[64];
    size_t len;
    cr_assert_eq(policy_logsplit_merge(parts, 5, out, sizeof out, &len), SL_OK);
    cr_expect_eq(memcmp(out, "[{\"blockNumber\":\"0x5\"},{\"blockNumber\":\"0x9\"}]", len), 0, "%.*s", (int)len, out);
    cr_assert_eq(policy_logsplit_merge(parts, 1, out, sizeof out, &len), SL_OK);
    cr_expect_eq(memcmp(out, "[]", len), 0);
    cr_assert_eq(policy_logsplit_merge(parts, 0, out, sizeof out, &len), SL_OK);
    cr_expect_eq(len, 2);
    const char bad[] = "null";
    policy_logsplit_part_t worse[] = {{a, SPAN(a)}, {bad, SPAN(bad)}};
    size_t size;
    cr_expect_eq(policy_logsplit_merge_size(worse, 2, &size), SL_ERR_PARSE);
    cr_expect_eq(policy_logsplit_merge(worse, 2, out, sizeof out, &len), SL_ERR_PARSE);
}

Test(logsplit, check_refuses_answers_outside_their_range)
{
    policy_logs_range_t r = {0x10, 0x20};
    const struct {
        const char *json;
        sl_err_t want;
    } cases[] = {
        {"[]", SL_OK},
        {"[{\"blockNumber\":\"0x10\"},{\"blockNumber\":\"0x10\"},{\"blockNumber\":\"0x20\"}]", SL_OK},
        {"[{\"blockNumber\":\"0xf\"}]", SL_ERR_RANGE},
        {"[{\"blockNumber\":\"0x21\"}]", SL_ERR_RANGE},
        {"[{\"blockNumber\":\"0x12\"},{\"blockNumber\":\"0x11\"}]", SL_ERR_RANGE}, /* out of order */
        {"[{\"address\":\"0x1\"}]", SL_ERR_PARSE},                                  /* no blockNumber */
        {"[{\"blockNumber\":18}]", SL_ERR_PARSE},
        {"[{\"blockNumber\":\"0x\"}]", SL_ERR_PARSE},
        {"[{\"blockNumber\":\"0x10000000000000000\"}]", SL_ERR_PARSE},
        {"[1]", SL_ERR_PARSE},
        {"{}", SL_ERR_PARSE},
        {"[{\"blockNumber\":\"0x10\"}", SL_ERR_PARSE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_expect_eq(policy_logsplit_check(cases[i].json, SPAN(cases[i].json), r), cases[i].want, "%s: %s",
                     cases[i].json, sl_err_name(policy_logsplit_check(cases[i].json, SPAN(cases[i].json), r)));
}

Test(logsplit, default_blocks_table)
{
    uint32_t blocks;
    const char *prev = NULL, *name;
    size_t i = 0;
    for (; (name = policy_logsplit_default_row(i, &blocks)) != NULL; i++) {
        if (prev != NULL)
            cr_expect_lt(strcmp(prev, name), 0, "not sorted at %s", name);
        cr_expect_not_null(policy_cost_profile(name), "%s is no cost profile", name);
        cr_expect_eq(policy_logsplit_default_blocks(name), blocks);
        prev = name;
    }
    /* every built-in cost profile has its row */
    size_t np;
    const policy_cost_profile_t *profiles = policy_cost_profiles(&np);
    cr_expect_eq(i, np);
    for (size_t k = 0; k < np; k++) {
        int found = 0;
        for (size_t j = 0; (name = policy_logsplit_default_row(j, &blocks)) != NULL; j++)
            found |= strcmp(name, profiles[k].name) == 0;
        cr_expect(found, "cost profile %s has no max_logs_blocks row", profiles[k].name);
    }
    cr_expect_eq(policy_logsplit_default_blocks("infura"), 10000);
    cr_expect_eq(policy_logsplit_default_blocks("quicknode"), 10000);
    cr_expect_eq(policy_logsplit_default_blocks("alchemy"), 10);
    cr_expect_eq(policy_logsplit_default_blocks("flat"), 0);
    cr_expect_eq(policy_logsplit_default_blocks("nobody"), 0);
    cr_expect_eq(policy_logsplit_default_blocks(NULL), 0);
}
