/* sub/sub_sol_batch.h: Solana account and signature polls merged
 * per network (sub_sol_batch.c): every accountSubscribe source of a
 * network with the same commitment and encoding is read by
 * getMultipleAccounts (at most 100 accounts a call), every
 * signatureSubscribe source by getSignatureStatuses (at most 256
 * signatures a call), several calls a round when there are more; a round
 * every poll interval. Each member is told its own part of the answer in
 * the shape the single call would have had. Used by sub_sol.c.
 * Worker-local, one event loop. */
#ifndef SUB_SOL_BATCH_H
#define SUB_SOL_BATCH_H

#include <stddef.h>

#include <h2o.h>

#include "sub/sub.h"

#define SUB_SOL_ACCOUNTS_MAX 100    /* getMultipleAccounts: a node's limit */
#define SUB_SOL_SIGNATURES_MAX 256  /* getSignatureStatuses: a node's limit */

typedef enum sub_sol_batch_kind {
    SUB_SOL_BATCH_ACCOUNT,     /* result: {"context":…,"value":<the account or null>} (getAccountInfo's) */
    SUB_SOL_BATCH_SIGNATURE,   /* result: {"context":…,"value":[<the status or null>]} */
} sub_sol_batch_kind_t;

typedef struct sub_sol_member sub_sol_member_t;
struct sub_sol_member {
    /* Its part of a round's answer (never called for a failed call). */
    void (*cb)(sub_sol_member_t *m, const char *result, size_t len);
    char item[96];                /* the account or signature (base58) */
    int done;                     /* polled no more (a signature told) */
    h2o_linklist_t link;
    struct sol_batch *batch;
};

/* m (its cb and item set) joins the polls of net of its kind; config is the
 * calls' options object (account: commitment and encoding), the same for
 * every member of a batch. Polled soon, then every round. */
void sub_sol_batch_join(sub_reg_t *r, gw_net_t *net, sub_sol_batch_kind_t kind, const char *config,
                           sub_sol_member_t *m);
/* m leaves; the batch stops with its last member. */
void sub_sol_batch_leave(sub_sol_member_t *m);

#endif
