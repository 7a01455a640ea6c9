/* policy/jwt.h: does a key's JWT hold, given its claims (issue 33)?
 *
 * A key with jwt: is only good with an Authorization: Bearer JWT signed by
 * the key's public key; gateway/gw_jwt.c verifies the signature and reads
 * the claims, and asks here whether they admit the call now. Pure: no I/O,
 * no clocks (now is given), no globals. */
#ifndef POLICY_JWT_H
#define POLICY_JWT_H

#include <stddef.h>
#include <stdint.h>

typedef enum policy_jwt_verdict {
    POLICY_JWT_OK,
    POLICY_JWT_NO_EXP,            /* no numeric exp claim: a token that never expires is refused */
    POLICY_JWT_EXPIRED,           /* exp <= now */
    POLICY_JWT_NOT_YET,           /* nbf > now */
    POLICY_JWT_AUDIENCE,          /* the key's audience is not among aud */
} policy_jwt_verdict_t;

typedef struct policy_jwt_claims {
    int has_exp;
    int64_t exp_s;                /* seconds since the epoch */
    int has_nbf;
    int64_t nbf_s;
    const char *const *aud;       /* aud as a string (1) or an array of strings */
    size_t naud;
} policy_jwt_claims_t;

/* The claims against audience (NULL: not checked) at now_s. */
policy_jwt_verdict_t policy_jwt_check(const policy_jwt_claims_t *c, const char *audience, int64_t now_s);

/* What a refusal's message says ("expired", ...). */
const char *policy_jwt_verdict_text(policy_jwt_verdict_t v);

#endif
