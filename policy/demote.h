/* policy/demote.h: demotion on the first timeout.
 *
 * An endpoint whose attempt timed out or was reset leaves first place at
 * once, whatever the ranking's stickiness says (stickiness is for latency
 * changes between healthy endpoints): it goes behind every endpoint that is
 * not demoted until demote_ms has passed without another such failure.
 * So does an endpoint that lost POLICY_DEMOTE_LOSSES hedge races in a row
 * without sending a byte (hedges are cheap reads only: pool/pool_hedge.c).
 * Only attempts that carried nothing but cheap reads demote (a health probe
 * is one): a heavy call that outlives the deadline may be slow by its own
 * nature (policy/shape.h: slow_call), and a client must not be able to push
 * every endpoint down with its own slow or huge requests. Pure. */
#ifndef POLICY_DEMOTE_H
#define POLICY_DEMOTE_H

#include <stdint.h>

typedef enum policy_demote_cause {
    POLICY_DEMOTE_NONE,
    POLICY_DEMOTE_TIMEOUT,        /* no complete answer within the attempt's deadlines */
    POLICY_DEMOTE_RESET,          /* the connection was reset or closed mid-answer */
    POLICY_DEMOTE_HEDGES_LOST,    /* POLICY_DEMOTE_LOSSES hedged reads in a row answered elsewhere while
                                     it had sent not one byte (it is far slower than its own p90) */
    POLICY_DEMOTE_CAUSE_COUNT
} policy_demote_cause_t;

const char *policy_demote_cause_name(policy_demote_cause_t c);

/* What an attempt's end says: timed_out / reset as it failed, heavy = it
 * carried a call that is not a cheap read. */
policy_demote_cause_t policy_demote_cause(int timed_out, int reset, int heavy);

/* A hung endpoint's hedged reads are cancelled before they time out: losing
 * this many races in a row without a byte of answer demotes it too. */
#define POLICY_DEMOTE_LOSSES 3

/* What losing a hedge race says: losses_in_row counts the races this one
 * included, got_bytes = the loser had begun to answer (slow, not hung). */
policy_demote_cause_t policy_demote_on_loss(uint32_t losses_in_row, int got_bytes);

/* The end of the demotion after a new cause at now_ms: now + demote_ms, never
 * earlier than it already was. demote_ms 0: demotion is off (returns until). */
uint64_t policy_demote_until(uint64_t until, uint64_t now_ms, uint32_t demote_ms);

/* 1 while demoted. */
int policy_demoted(uint64_t until, uint64_t now_ms);

#endif
