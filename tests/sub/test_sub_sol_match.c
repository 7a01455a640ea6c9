/* tests/sub/test_sub_sol_match.c: a programSubscribe's filters applied
 * to the accounts of a shared getProgramAccounts answer
 * (sub/sub_sol_match.c): base58 / base64 bytes and data decoded,
 * dataSize and memcmp as a node applies them. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "sub/sub_int.h"

static size_t parse(const char *json, sub_sol_filter_t *f)
{
    size_t n = 99;
    cr_assert(sub_sol_filters_parse(json, f, 4, &n), "%s", json);
    return n;
}

Test(sub_sol_match, memcmp_bytes_decoded)
{
    sub_sol_filter_t f[4];
    /* base58: "2" is the byte 1, each leading '1' a zero byte; base64 "AQID" is 1 2 3 */
    cr_assert_eq(parse("[{\"memcmp\":{\"offset\":0,\"bytes\":\"2\"}},{\"memcmp\":{\"offset\":3,\"bytes\":\"112\"}},"
                       "{\"memcmp\":{\"offset\":1,\"bytes\":\"AQID\",\"encoding\":\"base64\"}},{\"dataSize\":165}]",
                       f),
                 4);
    cr_expect_eq(f[0].len, 1);
    cr_expect_eq(f[0].bytes[0], 1);
    cr_expect_eq(f[1].len, 3);
    cr_expect(memcmp(f[1].bytes, "\0\0\1", 3) == 0);
    cr_expect_eq(f[1].n, 3);
    cr_expect_eq(f[2].len, 3);
    cr_expect(memcmp(f[2].bytes, "\1\2\3", 3) == 0);
    cr_expect(f[3].data_size);
    cr_expect_eq(f[3].n, 165);
    cr_expect_str_eq(f[3].text, "{\"dataSize\":165}");
    cr_assert_eq(parse("", f), 0);
    size_t n;
    cr_expect_not(sub_sol_filters_parse("[{\"memcmp\":{\"offset\":0,\"bytes\":\"0OIl\"}}]", f, 4, &n));
}

Test(sub_sol_match, filters_match)
{
    sub_sol_filter_t f[4];
    const uint8_t data[] = {1, 2, 3, 4};
    size_t n = parse("[{\"memcmp\":{\"offset\":1,\"bytes\":\"AgM=\",\"encoding\":\"base64\"}},{\"dataSize\":4}]", f);
    cr_expect(sub_sol_filters_match(f, n, data, 4));
    cr_expect_not(sub_sol_filters_match(f, n, data, 3));          /* dataSize */
    n = parse("[{\"memcmp\":{\"offset\":3,\"bytes\":\"AgM=\",\"encoding\":\"base64\"}}]", f);
    cr_expect_not(sub_sol_filters_match(f, n, data, 4));          /* past the end */
    n = parse("[{\"memcmp\":{\"offset\":9,\"bytes\":\"2\"}}]", f);
    cr_expect_not(sub_sol_filters_match(f, n, data, 4));          /* offset past the data */
    cr_expect(sub_sol_filters_match(f, 0, data, 4));              /* no filter: every account */
}

static int data_of(const char *account, uint8_t **d, size_t *len)
{
    cJSON *a = cJSON_Parse(account);
    int ok = sub_sol_account_data(a, d, len);
    cJSON_Delete(a);
    return ok;
}

Test(sub_sol_match, account_data)
{
    uint8_t *d;
    size_t len;
    cr_assert(data_of("{\"data\":[\"AQIDBA==\",\"base64\"],\"space\":4}", &d, &len));
    cr_expect_eq(len, 4);
    cr_expect(memcmp(d, "\1\2\3\4", 4) == 0);
    free(d);
    cr_assert(data_of("{\"data\":[\"12\",\"base58\"]}", &d, &len));
    cr_expect_eq(len, 2);
    cr_expect(memcmp(d, "\0\1", 2) == 0);
    free(d);
    cr_assert(data_of("{\"data\":\"\"}", &d, &len)); /* the legacy binary form: a base58 string */
    cr_expect_eq(len, 0);
    free(d);
    cr_expect_not(data_of("{\"data\":{\"parsed\":{}},\"space\":4}", &d, &len));
    cr_expect_not(data_of("{\"data\":[\"KLUv\",\"base64+zstd\"]}", &d, &len));
    cr_expect_not(data_of("{\"data\":[\"!!\",\"base64\"]}", &d, &len));
}
