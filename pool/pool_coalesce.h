/* pool/pool_coalesce.h: the coalesce satellite: identical reads in flight
 * share one upstream call. Its row: pool_coalesce_row. */
#ifndef POOL_COALESCE_H
#define POOL_COALESCE_H

#include "pool/pool_link.h"

typedef struct pool_shared_body pool_shared_body_t;

/* pool_coalesce.c: identical reads in flight share one upstream call. */
/* 1 if call (just started) waits on an identical call in flight: it is
 * answered when that one is. Otherwise it may lead a new group. */
int pool_coalesce_offer(pool_call_t *call);
/* The call is finishing: its waiters get its answer (their own ids). */
void pool_coalesce_done(pool_call_t *call);
/* The call goes away before it finished (cancel, deadline): a waiter
 * leaves its group; a leader hands the group to its first waiter. */
void pool_coalesce_leave(pool_call_t *call);
/* Lets go of the group's shared answer; the last call to do so frees it. */
void pool_coalesce_unshare(pool_call_t *call);

/* A call's part in a group. */
typedef struct pool_coalesce_call {
    struct pool_coalesce *group;  /* the identical read this call leads or waits on */
    h2o_linklist_t link;          /* in the group's waiters while waiting */
    uint8_t answered;             /* it was answered by another call's upstream answer */
    struct pool_shared_body *shared; /* the group's answer, held with the others */
} pool_coalesce_call_t;

#endif
