/* policy/capability.h: what an endpoint turned out not to serve, learned
 * from its answers (networks.<n>.capability_ttl_ms).
 *
 * A hosted full node answers trace_* with "method not found" and a read deep
 * in history with "missing trie node"; asking it again only costs a call and
 * a failover. An answer that says so is classified here, and the endpoint's
 * memory (one per endpoint per worker, pool/pool_learn.c) leaves it out of
 * such calls' plans until the memory expires. Pure: time is passed in. */
#ifndef POLICY_CAPABILITY_H
#define POLICY_CAPABILITY_H

#include <stddef.h>
#include <stdint.h>

#include "policy/verdict.h"
#include "wire/envelope.h"

typedef enum policy_capability {
    POLICY_CAPABILITY_NONE,       /* the answer says nothing lasting */
    POLICY_CAPABILITY_METHOD,     /* the endpoint does not serve this method */
    POLICY_CAPABILITY_DEPTH,      /* the endpoint keeps no state this deep below its head */
} policy_capability_t;

/* What an error answer (err, judged v with POLICY_VERDICT_F_* vflags) says
 * of the endpoint, for a call depth blocks below the head (0: not known, or
 * not a numbered block) on a network of archive_depth:
 *   METHOD: v is UNSUPPORTED and it is -32601 or words of a method not
 *     served ("method not found", "not supported", "not whitelisted",
 *     "does not exist", "is not available", ...), and not a range or size
 *     refusal (POLICY_VERDICT_F_LOGS_RANGE: a narrower eth_getLogs passes);
 *     invalid params (-32602) say nothing of the method.
 *   DEPTH: v is MISSING_DATA, the call is more than archive_depth below the
 *     head, and the words say pruned state ("missing trie node", "pruned",
 *     "state not available", "historical state", "header not found", ...):
 *     near the head the same words mean a node behind or syncing.
 *   NONE otherwise. */
policy_capability_t policy_capability_classify(policy_verdict_t v, unsigned vflags, const wire_rpc_error_t *err,
                                               uint64_t depth, uint32_t archive_depth);

#define POLICY_CAPABILITY_METHODS 16  /* methods remembered per endpoint; the oldest entry makes room */
#define POLICY_CAPABILITY_NAME 64     /* longer method names are not remembered */

/* One endpoint's memory. Zeroed: nothing learned. */
typedef struct policy_capability_mem {
    struct {
        char name[POLICY_CAPABILITY_NAME]; /* "" : a free slot */
        uint64_t until_ms;
    } methods[POLICY_CAPABILITY_METHODS];
    uint64_t depth;               /* no state this many blocks (or more) below the head; 0: none learned */
    uint64_t depth_until_ms;
} policy_capability_mem_t;

/* Remembers that the endpoint does not serve name[0..len) until now + ttl.
 * Returns 1 if that is news (not remembered before), 0 if it only renews. */
int policy_capability_learn_method(policy_capability_mem_t *m, const char *name, size_t len, uint64_t now_ms,
                                   uint32_t ttl_ms);
/* Remembers that it keeps no state depth (> 0) blocks below the head: a
 * depth at least a quarter shallower than the one remembered replaces it
 * (any depth when none is). Returns 1 if that is news; 0 if it only renews. */
int policy_capability_learn_depth(policy_capability_mem_t *m, uint64_t depth, uint64_t now_ms, uint32_t ttl_ms);

/* 1 if m says the endpoint does not serve name[0..len) (an entry not expired). */
int policy_capability_lacks_method(const policy_capability_mem_t *m, const char *name, size_t len, uint64_t now_ms);
/* 1 if m says it keeps no state depth blocks below the head (depth 0: never). */
int policy_capability_lacks_depth(const policy_capability_mem_t *m, uint64_t depth, uint64_t now_ms);

/* Forgets the first entry expired by now: its method name copied to name
 * (cap bytes), or "" for the depth entry (*depth gets it). Returns 1 if one
 * was forgotten (call again for the next), 0 if none is due. */
int policy_capability_forget_one(policy_capability_mem_t *m, uint64_t now_ms, char *name, size_t cap,
                                 uint64_t *depth);

/* For table tests: the i-th word of the METHOD (kind 1) or DEPTH (kind 2) table, NULL past the end. */
const char *policy_capability_word(int kind, size_t i);

#endif
