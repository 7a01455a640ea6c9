/* state/state_resume.h: subscriptions held after their socket closed
 * (sub/sub_resume.c), so that the same caller's same eth_subscribe, on any
 * worker of the host and across a reload, goes on from where it was.
 *
 * One record per held subscription in the resume database, at
 * "<identity>/<network>/<kind>/<params hash>": the position the
 * subscription had reached and when the hold ends. Bounded per identity and
 * in all (STATE_RESUME_PER_IDENTITY, STATE_RESUME_MAX): past them the oldest
 * held is dropped. Expired records are deleted by the take that finds them,
 * and STATE_RESUME_GRACE_MS after they expired by a hold of the same
 * identity and the master's sweep (state_resume_purge). Any process may call these; each is one write
 * transaction. */
#ifndef STATE_RESUME_H
#define STATE_RESUME_H

#include <stddef.h>
#include <stdint.h>

#include "base/sl_err.h"
#include "state/state.h"

#define STATE_RESUME_PER_IDENTITY 64  /* held subscriptions of one caller */
#define STATE_RESUME_MAX 16384        /* held subscriptions in all */
#define STATE_RESUME_KEY_MAX 256
#define STATE_RESUME_BELOW 7          /* hashes kept of the heights just below the position (a reorg's walk back) */
/* An expired record is kept this much longer, so that a caller who comes
 * back late is told apart (counted expired) from one never held; deleted after. */
#define STATE_RESUME_GRACE_MS (10 * 60 * 1000)

typedef struct state_resume_rec {
    uint64_t height;              /* the last block the subscription delivered in full (its header; its logs) */
    char hash[67];                /* ... its hash, "0x" + 64 hex digits */
    uint64_t below[STATE_RESUME_BELOW * 4]; /* the hashes of height - 1 .. height - 7 sent before it, 32 bytes
                                               each as 4 big-endian words (zero: unknown) */
    uint64_t held_ms;             /* shared time the socket closed */
    uint64_t expires_ms;          /* ... and the hold ends (server.ws_resume_s later) */
} state_resume_rec_t;

extern const state_schema_t state_resume_schema;

/* The key of a held subscription into out (cap bytes: STATE_RESUME_KEY_MAX
 * holds an identity of 96 and a network of 40); its length, 0 if it did not
 * fit. params_hash: the normalised params' 64-bit hash. */
size_t state_resume_key(char *out, size_t cap, const char *ident, const char *network, const char *kind,
                        uint64_t params_hash);

/* Holds rec at key (replacing one there); ident is the identity the key
 * was built with (its bound). The identity's records past the grace are deleted;
 * past the bounds the oldest held of the identity, then of all, are dropped
 * (*dropped gets how many). */
SL_MUST_CHECK sl_err_t state_resume_hold(state_t *st, const char *key, const char *ident, const state_resume_rec_t *rec,
                                         uint64_t now_ms, size_t *dropped);

/* Takes the record at key over: read and deleted in one transaction, so
 * exactly one subscribe of any worker gets it, expired or not (the caller
 * judges: policy/resume.h). *found: 1 and rec filled, or 0 (none, or one
 * that did not decode: deleted). */
SL_MUST_CHECK sl_err_t state_resume_take(state_t *st, const char *key, state_resume_rec_t *rec, int *found);

/* Deletes every record expired more than STATE_RESUME_GRACE_MS before
 * now_ms (the master's housekeeping); *removed gets how many. */
SL_MUST_CHECK sl_err_t state_resume_purge(state_t *st, uint64_t now_ms, size_t *removed);

#endif
