/* policy/consensus.h: opt-in agreement between endpoints on a read.
 *
 * `consensus: {methods: [...], quorum: 2, of: 3}` on a network: a call of one
 * of those methods goes to `of` endpoints, and is answered when `quorum` of
 * the answers are equal. Answers compare as JSON values with the whitespace
 * outside strings dropped (one node pretty-prints, another does not); key
 * order and number spelling are compared as sent: nodes of one chain write
 * them the same way, and a gateway must not guess that "0x01" is "0x1".
 * An endpoint in the minority is reported (an endpoint_disagreed event and
 * a score penalty, for the caller); no quorum is -32603 with
 * data.outcome = "no_consensus" and the endpoint ids of each distinct
 * answer (the groups below). Pure: no allocation, no I/O. */
#ifndef POLICY_CONSENSUS_H
#define POLICY_CONSENSUS_H

#include <stddef.h>
#include <stdint.h>

#include "wire/envelope.h"

#define POLICY_CONSENSUS_MAX 64   /* votes at most: `of` is at most the network's endpoints */

typedef struct policy_consensus_conf {
    char **methods;               /* compared across endpoints; owned by the config; 0 of them: off */
    size_t nmethods;
    uint32_t quorum;              /* equal answers needed */
    uint32_t of;                  /* endpoints asked */
} policy_consensus_conf_t;

/* 1 if calls of method[0..len) are compared under conf. */
int policy_consensus_applies(const policy_consensus_conf_t *conf, const char *method, size_t len);

/* One endpoint's answer. A transient failure (a timeout, a rate limit, a
 * node behind) is no vote: leave it out. A deterministic JSON-RPC error
 * (a revert) is one: nodes that agree on it agree. */
typedef struct policy_consensus_vote {
    const char *buf;
    wire_span_t value;            /* the result's value, or the error object */
    uint8_t is_error;             /* an error never equals a result */
} policy_consensus_vote_t;

typedef struct policy_consensus_outcome {
    uint8_t decided;              /* answer with votes[winner] */
    uint8_t impossible;           /* no quorum can come any more: no_consensus */
    size_t winner;                /* decided: a vote of the winning group */
    uint32_t ngroups;             /* distinct answers */
    uint8_t group_of[POLICY_CONSENSUS_MAX];    /* vote i -> its group, groups numbered by first vote */
    uint32_t group_size[POLICY_CONSENSUS_MAX];
    uint64_t minority;            /* decided: bit i set if vote i disagrees with the winner */
} policy_consensus_outcome_t;

/* Judges votes[0..n) (n at most POLICY_CONSENSUS_MAX; more are ignored)
 * with `pending` answers still to come. Decided: the largest group has
 * quorum votes and no other group can reach its size with every pending
 * answer (a tie is no agreement). Impossible: not decided, and either no
 * group can reach quorum with every pending answer, or none is pending.
 * Neither: wait for the next answer. */
void policy_consensus_decide(const policy_consensus_vote_t *votes, size_t n, size_t pending, uint32_t quorum,
                             policy_consensus_outcome_t *out);

/* 1 if the JSON values at sa of a and sb of b are equal once the whitespace
 * outside strings is dropped. Both must be valid JSON (spans from
 * wire_envelope_scan); nothing past either span is read. */
int policy_consensus_equal(const char *a, wire_span_t sa, const char *b, wire_span_t sb);

/* dispatch: max (policy/method.h): the vote among votes[0..n) whose result
 * is the highest hex quantity ("0x1f" > "0x9"; leading zeros ignored), or
 * -1 if none is one (errors, other values: the caller answers as it would
 * any). Pure. */
int policy_consensus_max(const policy_consensus_vote_t *votes, size_t n);

/* What a minority answer costs the endpoint. Its disagreements are counted
 * with a memory of POLICY_CONSENSUS_HALF_LIFE_MS (the count halves each
 * half-life), and the count as it stands now is the score's `disagreed`
 * input (policy/score.h: each one weighs w_disagree, up to
 * POLICY_SCORE_MAX_DISAGREED). One endpoint_disagreed event per endpoint
 * per POLICY_CONSENSUS_REPORT_MS at most: a lying endpoint cannot flood the
 * feed. */
#define POLICY_CONSENSUS_HALF_LIFE_MS 60000
#define POLICY_CONSENSUS_REPORT_MS 60000

/* The disagreements count *count, last counted at *at_ms, decayed to now_ms
 * (and stored so), plus add. Returns the new count. */
uint32_t policy_consensus_disagreed(uint32_t *count, uint64_t *at_ms, uint64_t now_ms, uint32_t add);

/* 1 if a disagreement at now_ms is reported (an event), given the last
 * report at *last_ms (0: never), which it then becomes. */
int policy_consensus_report_due(uint64_t *last_ms, uint64_t now_ms);

#endif
