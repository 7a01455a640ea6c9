/* sub/sub_logshare.h: one unfiltered eth_getLogs per block shared
 * by a network's logs sources once it has more than SUB_LOGS_SHARED_MIN
 * distinct filters (sub_logshare.c); each source's filter is applied
 * locally (policy/logfilter.h). Used by sub_eth.c. Worker-local. */
#ifndef SUB_LOGSHARE_H
#define SUB_LOGSHARE_H

#include <stddef.h>
#include <stdint.h>

#include <h2o.h>

#include "sub/sub.h"
#include "policy/logfilter.h"

/* Distinct logs filters of a network (in the worker) fetched each their own
 * way; one more and the network's blocks are fetched once, unfiltered. */
#define SUB_LOGS_SHARED_MIN 4

typedef struct sub_logshare sub_logshare_t;
typedef struct sub_logs_wait sub_logs_wait_t;

/* A source waiting for one block's logs: cb runs once from the event loop
 * with the logs matching filter as a JSON array's text, or logs NULL when
 * the fetch failed (the source asks the share again after its backoff:
 * the sources that failed together ask together, one call; with too_large
 * set it asks with its filter instead). */
struct sub_logs_wait {
    void (*cb)(sub_logs_wait_t *w, const char *logs, size_t len);
    const policy_logfilter_t *filter;
    h2o_linklist_t link;          /* zeroed by its owner */
    h2o_timeout_entry_t soon;     /* zeroed by its owner */
    void *b;                      /* the block waited for (NULL: none) */
    uint8_t hash[32];             /* its hash */
    uint8_t too_large;            /* with logs NULL: the answer was over server.max_response_bytes */
};

/* A logs source of net starts (joins its network's share) or stops. */
sub_logshare_t *sub_logshare_join(sub_reg_t *r, gw_net_t *net);
/* w must not be waiting (sub_logshare_cancel first). */
void sub_logshare_leave(sub_logshare_t *s);
/* 1 when the network's sources fetch shared (more than SUB_LOGS_SHARED_MIN). */
int sub_logshare_shared(const sub_logshare_t *s);
/* Asks the logs of the block hash for w; 1: w->cb will run, 0: no room (a
 * deep backlog on every kept block: the source fetches this one itself). */
int sub_logshare_ask(sub_logshare_t *s, const uint8_t hash[32], sub_logs_wait_t *w);
int sub_logshare_waiting(const sub_logs_wait_t *w);
/* Shared, a source asks a block with its own filter only when the shared
 * answer was too large, and at most this many sources of a network at a
 * time: acquire (1: go on, 0: wait and try again), release when answered. */
#define SUB_LOGS_SOLO_MAX 4
int sub_logshare_solo_acquire(sub_logshare_t *s);
void sub_logshare_solo_release(sub_logshare_t *s);
void sub_logshare_cancel(sub_logs_wait_t *w);

#endif
