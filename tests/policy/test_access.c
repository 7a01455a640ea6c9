/* tests/policy/test_access.c: a key's scope against requests and calls.
 * The raw transactions are tests/wire/test_rawtx.c's (signed with ethers). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "policy/access.h"

#define S(x) x, strlen(x)

static const char legacy_to_11[] =
    "0xf86707843b9aca0082c3509411111111111111111111111111111111111111110184deadbeef25a061316c4e2963444ff33804d8c00"
    "5b98dd5c75a5f537b079f92aff2bd25d8aecfa0641ad9e0205bea1b4aa43e00f280e22db4cb9b750bc981a310fe751a5403e611";
static const char t2_create[] =
    "0x02f85a0107843b9aca00847735940082c350800184deadbeefc001a0668ae4533c6ccf95a0bbe641cdaefa18ec40bf59a944361c9056"
    "a091b4d92121a00e3d8fae5f80fabb949fb88c7894bc4c3d64800948ba2e8345779dbeedf0f911";
static const char eip155_to_35[] =
    "0xf86c098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a76400008025a028ef61340bd939bc21"
    "95fe537567866003e1a15d3c71ff63e1590620aa636276a067cbe9d8997f761aecb703304b3800ccf555c9f3dc64214b297fb1966a3b6d83";

static char *networks[] = {"eth", "base"};
static char *allow[] = {"eth_*", "net_version"};
static char *deny[] = {"eth_sendTransaction", "eth_sign*"};
static uint8_t contracts[1][20];
static char *origins[] = {"https://app.example"};

static policy_access_scope_t scope(void)
{
    memset(contracts[0], 0x11, 20);
    return (policy_access_scope_t){networks, 2, allow, 2, deny, 2, contracts, 1, origins, 1};
}

static char msg[256];

static policy_access_reason_t call(const policy_access_scope_t *s, const char *method, const char *params)
{
    msg[0] = '\0';
    return policy_access_call(s, S(method), params, params ? strlen(params) : 0, msg, sizeof(msg));
}

Test(access, reason_names)
{
    cr_assert_str_eq(policy_access_reason_name(POLICY_ACCESS_KEY_REQUIRED), "key_required");
    cr_assert_str_eq(policy_access_reason_name(POLICY_ACCESS_NETWORK), "network_not_allowed");
    cr_assert_str_eq(policy_access_reason_name(POLICY_ACCESS_METHOD), "method_not_allowed");
    cr_assert_str_eq(policy_access_reason_name(POLICY_ACCESS_CONTRACT), "contract_not_allowed");
    cr_assert_str_eq(policy_access_reason_name(POLICY_ACCESS_ORIGIN), "origin_not_allowed");
    for (int r = 0; r < POLICY_ACCESS_REASON_COUNT; r++)
        cr_assert_not_null(policy_access_reason_name((policy_access_reason_t)r));
}

Test(access, no_scope_admits_everything)
{
    policy_access_scope_t none = {0};
    cr_assert_not(policy_access_scoped(&none));
    cr_assert_eq(policy_access_request(&none, "sol", S("https://x"), msg, sizeof(msg)), POLICY_ACCESS_OK);
    cr_assert_eq(call(&none, "eth_sendRawTransaction", "[\"0x00\"]"), POLICY_ACCESS_OK);
    cr_assert_eq(call(NULL, "debug_traceCall", NULL), POLICY_ACCESS_OK);
}

Test(access, networks)
{
    policy_access_scope_t s = scope();
    cr_assert_eq(policy_access_request(&s, "eth", NULL, 0, msg, sizeof(msg)), POLICY_ACCESS_OK);
    cr_assert_eq(policy_access_request(&s, "base", NULL, 0, msg, sizeof(msg)), POLICY_ACCESS_OK);
    cr_assert_eq(policy_access_request(&s, "sol", NULL, 0, msg, sizeof(msg)), POLICY_ACCESS_NETWORK);
    cr_assert(strstr(msg, "'sol'") != NULL, "%s", msg);
}

Test(access, origins)
{
    policy_access_scope_t s = scope();
    cr_assert_eq(policy_access_request(&s, "eth", S("https://app.example"), msg, sizeof(msg)), POLICY_ACCESS_OK);
    cr_assert_eq(policy_access_request(&s, "eth", NULL, 0, msg, sizeof(msg)), POLICY_ACCESS_OK,
                 "no Origin: not a browser's call");
    cr_assert_eq(policy_access_request(&s, "eth", S("https://evil.example"), msg, sizeof(msg)), POLICY_ACCESS_ORIGIN);
    cr_assert(strstr(msg, "https://evil.example") != NULL, "%s", msg);
    cr_assert_eq(policy_access_request(&s, "eth", S("https://app.example.evil"), msg, sizeof(msg)),
                 POLICY_ACCESS_ORIGIN, "exact match only");
    cr_assert(policy_access_origin_listed(&s, S("https://app.example")));
}

Test(access, methods_allow_and_deny)
{
    policy_access_scope_t s = scope();
    s.ncontracts = 0;
    cr_assert_eq(call(&s, "eth_blockNumber", NULL), POLICY_ACCESS_OK);
    cr_assert_eq(call(&s, "net_version", NULL), POLICY_ACCESS_OK);
    cr_assert_eq(call(&s, "net_peerCount", NULL), POLICY_ACCESS_METHOD);
    cr_assert(strstr(msg, "net_peerCount") != NULL, "%s", msg);
    cr_assert_eq(call(&s, "eth_sendTransaction", NULL), POLICY_ACCESS_METHOD, "deny wins over allow");
    cr_assert_eq(call(&s, "eth_signTypedData_v4", NULL), POLICY_ACCESS_METHOD);
    cr_assert_eq(call(&s, "eth_subscribe", NULL), POLICY_ACCESS_OK);
    s.nallow = 0; /* deny only */
    cr_assert_eq(call(&s, "debug_traceTransaction", NULL), POLICY_ACCESS_OK);
    cr_assert_eq(call(&s, "eth_sign", NULL), POLICY_ACCESS_METHOD);
}

Test(access, call_objects)
{
    policy_access_scope_t s = scope();
    const char *ok = "[{\"to\":\"0x1111111111111111111111111111111111111111\",\"data\":\"0x\"},\"latest\"]";
    const char *upper = "[{\"TO\":\"0x1111111111111111111111111111111111111111\"}]";
    cr_assert_eq(call(&s, "eth_call", ok), POLICY_ACCESS_OK);
    cr_assert_eq(call(&s, "eth_estimateGas", ok), POLICY_ACCESS_OK);
    cr_assert_eq(call(&s, "eth_createAccessList", ok), POLICY_ACCESS_OK);
    cr_assert_eq(call(&s, "eth_call", upper), POLICY_ACCESS_OK, "geth reads keys without regard to case");
    cr_assert_eq(call(&s, "eth_call", "[{\"to\":\"0x2222222222222222222222222222222222222222\"},\"latest\"]"),
                 POLICY_ACCESS_CONTRACT);
    cr_assert(strstr(msg, "0x2222222222222222222222222222222222222222") != NULL, "%s", msg);
    cr_assert(strstr(msg, "eth_call") != NULL, "%s", msg);
    /* a second "to", in any case, could be the one a node reads */
    cr_assert_eq(call(&s, "eth_call", "[{\"to\":\"0x1111111111111111111111111111111111111111\","
                                      "\"To\":\"0x2222222222222222222222222222222222222222\"}]"),
                 POLICY_ACCESS_CONTRACT);
    cr_assert_eq(call(&s, "eth_call", "[{\"t\\u006f\":\"0x2222222222222222222222222222222222222222\"}]"),
                 POLICY_ACCESS_CONTRACT, "an escaped key is not guessed at");
    cr_assert_eq(call(&s, "eth_call", "[{\"data\":\"0x00\"}]"), POLICY_ACCESS_CONTRACT, "no to: a creation");
    cr_assert(strstr(msg, "creation") != NULL, "%s", msg);
    cr_assert_eq(call(&s, "eth_call", "[{\"to\":null}]"), POLICY_ACCESS_CONTRACT);
    cr_assert_eq(call(&s, "eth_call", "[{\"to\":\"0x11\"}]"), POLICY_ACCESS_CONTRACT);
    cr_assert_eq(call(&s, "eth_call", "[\"0x1111111111111111111111111111111111111111\"]"), POLICY_ACCESS_CONTRACT);
    cr_assert_eq(call(&s, "eth_call", NULL), POLICY_ACCESS_CONTRACT);
    cr_assert_eq(call(&s, "eth_call", "[]"), POLICY_ACCESS_CONTRACT);
    cr_assert_eq(call(&s, "eth_simulateV1", "[{}]"), POLICY_ACCESS_CONTRACT, "its calls are not read");
    /* methods that name no contract are not held to the list */
    cr_assert_eq(call(&s, "eth_getBalance", "[\"0x2222222222222222222222222222222222222222\",\"latest\"]"),
                 POLICY_ACCESS_OK);
    s.ncontracts = 0;
    cr_assert_eq(call(&s, "eth_call", "[{\"data\":\"0x00\"}]"), POLICY_ACCESS_OK, "no contracts scope");
}

/* The call object's plain reading (only plain strings) and the general
 * scan's must agree: the same answers whichever one reads it. */
Test(access, call_objects_plain_and_not)
{
    policy_access_scope_t s = scope();
    const char *to1 = "\"0x1111111111111111111111111111111111111111\"";
    const char *to2 = "\"0x2222222222222222222222222222222222222222\"";
    char p[512], data[300];
    memset(data, 'a', sizeof(data) - 1);
    data[sizeof(data) - 1] = '\0';
    snprintf(p, sizeof(p), " [ { \"to\" : %s , \"from\" : %s } , \"latest\" ] ", to1, to2);
    cr_assert_eq(call(&s, "eth_call", p), POLICY_ACCESS_OK, "a later from is not the recipient");
    snprintf(p, sizeof(p), "[{\"from\":%s,\"to\":%s}]", to1, to2);
    cr_assert_eq(call(&s, "eth_call", p), POLICY_ACCESS_CONTRACT);
    snprintf(p, sizeof(p), "[{\"to\":%s,\"data\":\"0x%s\",\"tO\":%s}]", to1, data, to2);
    cr_assert_eq(call(&s, "eth_call", p), POLICY_ACCESS_CONTRACT, "a second to past a long value");
    snprintf(p, sizeof(p), "[{\"data\":\"0x%s\",\"to\":%s}]", data, to1);
    cr_assert_eq(call(&s, "eth_call", p), POLICY_ACCESS_OK);
    snprintf(p, sizeof(p), "[{\"data\":\"0x\\u0041\",\"to\":%s}]", to1);
    cr_assert_eq(call(&s, "eth_call", p), POLICY_ACCESS_OK, "an escape in a value: read by the general scan");
    snprintf(p, sizeof(p), "[{\"gas\":21000,\"to\":%s,\"accessList\":[]}]", to1);
    cr_assert_eq(call(&s, "eth_call", p), POLICY_ACCESS_OK, "numbers and arrays: read by the general scan");
    cr_assert_eq(call(&s, "eth_call", "[{\"to\":\"0X1111111111111111111111111111111111111111\"}]"),
                 POLICY_ACCESS_OK);
    cr_assert_eq(call(&s, "eth_call", "[{\"to\":\"0x111111111111111111111111111111111111111g\"}]"),
                 POLICY_ACCESS_CONTRACT);
    cr_assert_eq(call(&s, "eth_call", "[{\"to\":\"0x1111111111111111111111111111111111111111\""),
                 POLICY_ACCESS_CONTRACT, "cut short");
    cr_assert_eq(call(&s, "eth_call", "[{\"to\":\"0x1111111111111111111111111111111111111111"),
                 POLICY_ACCESS_CONTRACT, "cut short in the address");
    cr_assert_eq(call(&s, "eth_call", "[{\"to\":\"0x1111111111111111111111111111111111111111\"x}]"),
                 POLICY_ACCESS_CONTRACT, "not JSON after the address");
}

/* The same objects read both ways: a member "n":1 (a number) sends the
 * object to the general scan and changes nothing about its "to". */
Test(access, call_objects_both_readings_agree)
{
    policy_access_scope_t s = scope();
    static const char *const keys[] = {"\"to\"", "\"To\"", "\"data\"", "\"from\"", "\"t\"", "\"too\""};
    static const char *const values[] = {"\"0x1111111111111111111111111111111111111111\"",
                                         "\"0x2222222222222222222222222222222222222222\"",
                                         "\"0x11111111111111111111111111111111111111111\"", "\"0x\"",
                                         "\"0x70a08231000000000000000000000000000000000000000000000000c0\""};
    unsigned seed = 33;
    for (int round = 0; round < 2000; round++) {
        char plain[1024] = "[{", general[1100];
        int members = (int)((seed = seed * 1103515245u + 12345u) >> 16) % 4;
        for (int m = 0; m < members; m++) {
            unsigned r = (seed = seed * 1103515245u + 12345u) >> 16;
            snprintf(plain + strlen(plain), sizeof(plain) - strlen(plain), "%s%s:%s", m ? "," : "", keys[r % 6],
                     values[(r / 6) % 5]);
        }
        snprintf(general, sizeof(general), "%s%s\"n\":1}]", plain, members ? "," : "");
        strcat(plain, "}]");
        policy_access_reason_t a = call(&s, "eth_call", plain), b = call(&s, "eth_call", general);
        cr_assert_eq(a, b, "%s: %d, %s: %d", plain, a, general, b);
    }
}

Test(access, raw_transactions)
{
    policy_access_scope_t s = scope();
    char params[600];
    snprintf(params, sizeof(params), "[\"%s\"]", legacy_to_11);
    cr_assert_eq(call(&s, "eth_sendRawTransaction", params), POLICY_ACCESS_OK);
    snprintf(params, sizeof(params), "[\"%s\"]", eip155_to_35);
    cr_assert_eq(call(&s, "eth_sendRawTransaction", params), POLICY_ACCESS_CONTRACT);
    cr_assert(strstr(msg, "0x3535353535353535353535353535353535353535") != NULL, "%s", msg);
    snprintf(params, sizeof(params), "[\"%s\"]", t2_create);
    cr_assert_eq(call(&s, "eth_sendRawTransaction", params), POLICY_ACCESS_CONTRACT);
    cr_assert(strstr(msg, "creation") != NULL, "%s", msg);
    cr_assert_eq(call(&s, "eth_sendRawTransaction", "[\"0xf800\"]"), POLICY_ACCESS_CONTRACT);
    cr_assert(strstr(msg, "could not be read") != NULL, "%s", msg);
    cr_assert_eq(call(&s, "eth_sendRawTransaction", "[12]"), POLICY_ACCESS_CONTRACT);
}

Test(access, check_runs_both_parts)
{
    policy_access_scope_t s = scope();
    const char *ok = "[{\"to\":\"0x1111111111111111111111111111111111111111\"}]";
    cr_assert_eq(policy_access_check(&s, "eth", S("eth_call"), S(ok), NULL, 0, msg, sizeof(msg)), POLICY_ACCESS_OK);
    cr_assert_eq(policy_access_check(&s, "sol", S("eth_call"), S(ok), NULL, 0, msg, sizeof(msg)),
                 POLICY_ACCESS_NETWORK);
    cr_assert_eq(policy_access_check(&s, "eth", S("net_peerCount"), NULL, 0, NULL, 0, msg, sizeof(msg)),
                 POLICY_ACCESS_METHOD);
}

Test(access, addresses)
{
    uint8_t a[20];
    cr_assert(policy_access_parse_address(S("0xAbCdEf0123456789abcdef0123456789ABCDEF01"), a));
    cr_assert_eq(a[0], 0xab);
    cr_assert_not(policy_access_parse_address(S("AbCdEf0123456789abcdef0123456789ABCDEF0123"), a));
    cr_assert_not(policy_access_parse_address(S("0xAbCdEf0123456789abcdef0123456789ABCDEF0"), a));
    cr_assert_not(policy_access_parse_address(S("0xgbCdEf0123456789abcdef0123456789ABCDEF01"), a));
}
