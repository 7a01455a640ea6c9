/* policy/demote.c: demotion on the first timeout (pure). */
#include "policy/demote.h"

static const char *const cause_names[POLICY_DEMOTE_CAUSE_COUNT] = {
    [POLICY_DEMOTE_NONE] = "none",
    [POLICY_DEMOTE_TIMEOUT] = "timed out",
    [POLICY_DEMOTE_RESET] = "connection reset",
    [POLICY_DEMOTE_HEDGES_LOST] = "no answer while others answered (hedges lost in a row)",
};

const char *policy_demote_cause_name(policy_demote_cause_t c)
{
    return c < POLICY_DEMOTE_CAUSE_COUNT ? cause_names[c] : "unknown";
}

policy_demote_cause_t policy_demote_cause(int timed_out, int reset, int heavy)
{
    if (heavy)
        return POLICY_DEMOTE_NONE;
    if (timed_out)
        return POLICY_DEMOTE_TIMEOUT;
    return reset ? POLICY_DEMOTE_RESET : POLICY_DEMOTE_NONE;
}

policy_demote_cause_t policy_demote_on_loss(uint32_t losses_in_row, int got_bytes)
{
    return !got_bytes && losses_in_row >= POLICY_DEMOTE_LOSSES ? POLICY_DEMOTE_HEDGES_LOST : POLICY_DEMOTE_NONE;
}

uint64_t policy_demote_until(uint64_t until, uint64_t now_ms, uint32_t demote_ms)
{
    if (demote_ms == 0)
        return until;
    uint64_t next = now_ms + demote_ms;
    return next > until ? next : until;
}

int policy_demoted(uint64_t until, uint64_t now_ms)
{
    return now_ms < until;
}
