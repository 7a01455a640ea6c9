/* policy/jwt.c: the claims' decision (policy/jwt.h). */
#include "policy/jwt.h"

#include <string.h>

policy_jwt_verdict_t policy_jwt_check(const policy_jwt_claims_t *c, const char *audience, int64_t now_s)
{
    if (!c->has_exp)
        return POLICY_JWT_NO_EXP;
    if (c->exp_s <= now_s)
        return POLICY_JWT_EXPIRED;
    if (c->has_nbf && c->nbf_s > now_s)
        return POLICY_JWT_NOT_YET;
    if (audience == NULL)
        return POLICY_JWT_OK;
    for (size_t i = 0; i < c->naud; i++)
        if (c->aud[i] != NULL && strcmp(c->aud[i], audience) == 0)
            return POLICY_JWT_OK;
    return POLICY_JWT_AUDIENCE;
}

const char *policy_jwt_verdict_text(policy_jwt_verdict_t v)
{
    switch (v) {
    case POLICY_JWT_OK:
        return "ok";
    case POLICY_JWT_NO_EXP:
        return "the token has no exp claim";
    case POLICY_JWT_EXPIRED:
        return "the token has expired";
    case POLICY_JWT_NOT_YET:
        return "the token is not valid yet (nbf)";
    case POLICY_JWT_AUDIENCE:
        return "the token is for another audience";
    }
    return "invalid token";
}
