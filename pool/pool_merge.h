/* pool/pool_merge.h: the merge satellite: confirmation polls of several
 * clients as one upstream call (a carrier). Its row: pool_merge_row. */
#ifndef POOL_MERGE_H
#define POOL_MERGE_H

#include "pool/pool_link.h"

/* 1 if call (just started, pin known) was taken into a merge: it is answered
 * when the merged call is. */
int pool_merge_offer(pool_call_t *call);
/* The call leaves its merge (cancelled, or its deadline ran out). */
void pool_merge_leave(pool_call_t *call);

/* A poll's place in a merge. */
typedef struct pool_merge_call {
    struct pool_merge *group;     /* the merged call this poll rides in, or NULL */
    uint32_t index;               /* ... as its member number */
} pool_merge_call_t;

#endif
