/* policy/joblease.c: who does a leased job now (policy/joblease.h). */
#include <string.h>

#include "policy/joblease.h"

policy_joblease_role_t policy_joblease_role(const policy_joblease_view_t *v, uint64_t now_ms)
{
    if (!v->cluster)
        return POLICY_JOBLEASE_ALONE;
    if (!v->redis_up)
        return POLICY_JOBLEASE_LOCAL;
    if (v->holder == NULL || v->holder[0] == '\0' || now_ms >= v->until_ms)
        return POLICY_JOBLEASE_PENDING;
    return v->me != NULL && strcmp(v->holder, v->me) == 0 ? POLICY_JOBLEASE_HOLDER : POLICY_JOBLEASE_FOLLOWER;
}

int policy_joblease_does_job(policy_joblease_role_t role)
{
    switch (role) {
    case POLICY_JOBLEASE_ALONE:
    case POLICY_JOBLEASE_HOLDER:
    case POLICY_JOBLEASE_LOCAL:
        return 1;
    case POLICY_JOBLEASE_FOLLOWER:
    case POLICY_JOBLEASE_PENDING:
    case POLICY_JOBLEASE_ROLE_COUNT:
        return 0;
    }
    return 0;
}

uint32_t policy_joblease_ttl_ms(uint32_t probe_ms, uint32_t chain_ms)
{
    uint32_t every = probe_ms != 0 && (chain_ms == 0 || probe_ms < chain_ms) ? probe_ms : chain_ms;
    if (every == 0)
        return 0;
    uint64_t ttl = (uint64_t)every * POLICY_JOBLEASE_INTERVALS;
    if (ttl < POLICY_JOBLEASE_MIN_TTL_MS)
        ttl = POLICY_JOBLEASE_MIN_TTL_MS;
    return ttl > UINT32_MAX ? UINT32_MAX : (uint32_t)ttl;
}

uint64_t policy_joblease_next_ask_ms(policy_joblease_role_t role, uint64_t until_ms, uint32_t ttl_ms,
                                     uint64_t now_ms)
{
    uint64_t third = now_ms + ttl_ms / 3;
    switch (role) {
    case POLICY_JOBLEASE_ALONE:
    case POLICY_JOBLEASE_ROLE_COUNT:
        return UINT64_MAX;
    case POLICY_JOBLEASE_FOLLOWER:
        return until_ms > now_ms && until_ms < third ? until_ms : third;
    case POLICY_JOBLEASE_HOLDER:
    case POLICY_JOBLEASE_PENDING:
    case POLICY_JOBLEASE_LOCAL:
        return third;
    }
    return third;
}

const char *policy_joblease_role_name(policy_joblease_role_t role)
{
    static const char *const names[POLICY_JOBLEASE_ROLE_COUNT] = {
        [POLICY_JOBLEASE_ALONE] = "alone",     [POLICY_JOBLEASE_HOLDER] = "holder",
        [POLICY_JOBLEASE_FOLLOWER] = "follower", [POLICY_JOBLEASE_PENDING] = "pending",
        [POLICY_JOBLEASE_LOCAL] = "local",
    };
    return (unsigned)role < POLICY_JOBLEASE_ROLE_COUNT ? names[role] : "unknown";
}
