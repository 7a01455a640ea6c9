/* pool/pool_fail.c: the transport's failure table (POOL_FAIL_MAP in pool.h)
 * read by name, message, flags and outcome. In the transport layer, the
 * lowest of pool/: the endpoint state, the call and its satellites all read it,
 * so it calls nothing of theirs. */
#include "pool/pool.h"

static const char *const fail_msgs[POOL_FAIL_COUNT] = {
#define POOL_FAIL_MSG_(name, flags, outcome, msg) [POOL_FAIL_##name] = msg,
    POOL_FAIL_MAP(POOL_FAIL_MSG_)
#undef POOL_FAIL_MSG_
};

static const char *const fail_names[POOL_FAIL_COUNT] = {
#define POOL_FAIL_NAME_(name, flags, outcome, msg) [POOL_FAIL_##name] = #name,
    POOL_FAIL_MAP(POOL_FAIL_NAME_)
#undef POOL_FAIL_NAME_
};

static const unsigned fail_flags[POOL_FAIL_COUNT] = {
#define POOL_FAIL_FLAGS_(name, flags, outcome, msg) [POOL_FAIL_##name] = flags,
    POOL_FAIL_MAP(POOL_FAIL_FLAGS_)
#undef POOL_FAIL_FLAGS_
};

static const state_outcome_t fail_outcomes[POOL_FAIL_COUNT] = {
#define POOL_FAIL_OUTCOME_(name, flags, outcome, msg) [POOL_FAIL_##name] = STATE_OUTCOME_##outcome,
    POOL_FAIL_MAP(POOL_FAIL_OUTCOME_)
#undef POOL_FAIL_OUTCOME_
};

state_outcome_t pool_fail_outcome(pool_fail_t f)
{
    return (unsigned)f < POOL_FAIL_COUNT ? fail_outcomes[f] : STATE_OUTCOME_MALFORMED;
}

const char *pool_fail_str(pool_fail_t f)
{
    return (unsigned)f < POOL_FAIL_COUNT ? fail_msgs[f] : "unknown failure";
}

const char *pool_fail_name(pool_fail_t f)
{
    return (unsigned)f < POOL_FAIL_COUNT ? fail_names[f] : "UNKNOWN";
}

unsigned pool_fail_flags(pool_fail_t f)
{
    return (unsigned)f < POOL_FAIL_COUNT ? fail_flags[f] : 0;
}
