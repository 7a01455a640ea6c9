/* tests/policy/test_jwt.c: a JWT's claims against a key's audience and the
 * time (policy/jwt.h). */
#include <criterion/criterion.h>

#include "policy/jwt.h"

Test(jwt, exp_is_required_and_must_be_to_come)
{
    policy_jwt_claims_t c = {0};
    cr_expect_eq(policy_jwt_check(&c, NULL, 1000), POLICY_JWT_NO_EXP);
    c.has_exp = 1;
    c.exp_s = 1000;
    cr_expect_eq(policy_jwt_check(&c, NULL, 1000), POLICY_JWT_EXPIRED, "exp is the first moment it is not good");
    cr_expect_eq(policy_jwt_check(&c, NULL, 999), POLICY_JWT_OK);
    c.has_nbf = 1;
    c.nbf_s = 500;
    cr_expect_eq(policy_jwt_check(&c, NULL, 499), POLICY_JWT_NOT_YET);
    cr_expect_eq(policy_jwt_check(&c, NULL, 500), POLICY_JWT_OK);
}

Test(jwt, the_audience_must_be_named_when_the_key_has_one)
{
    const char *aud[] = {"a.example", "rpc.example"};
    policy_jwt_claims_t c = {.has_exp = 1, .exp_s = 2000, .aud = aud, .naud = 0};
    cr_expect_eq(policy_jwt_check(&c, "rpc.example", 1), POLICY_JWT_AUDIENCE, "no aud");
    c.naud = 1;
    cr_expect_eq(policy_jwt_check(&c, "rpc.example", 1), POLICY_JWT_AUDIENCE);
    c.naud = 2;
    cr_expect_eq(policy_jwt_check(&c, "rpc.example", 1), POLICY_JWT_OK);
    cr_expect_eq(policy_jwt_check(&c, "RPC.example", 1), POLICY_JWT_AUDIENCE, "exact");
    c.naud = 0;
    cr_expect_eq(policy_jwt_check(&c, NULL, 1), POLICY_JWT_OK, "no audience configured: aud not checked");
    cr_expect_str_eq(policy_jwt_verdict_text(POLICY_JWT_EXPIRED), "the token has expired");
}
