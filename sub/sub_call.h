/* sub/sub_call.h: one call a subscription source makes upstream,
 * through the pool (so failover, ranking, credits and the chain view's
 * routing apply), from a method name and its params as JSON text; never
 * answered from the response cache (a source follows the chain as it is).
 *
 * Used by the sources of sub/sub_follow.c, sub_eth.c and
 * gw_sub_sol*.c. At most SUB_CALL_MAX calls, sent as one batch when more
 * than one; a call's items are allocated as its source needs them.
 * Worker-local, one event loop. */
#ifndef SUB_CALL_H
#define SUB_CALL_H

#include <stddef.h>

#include "base/sl_buf.h"
#include "gateway/gw_handler.h"

/* 2 for slotSubscribe's pair; 33 for logsSubscribe's poll (its
 * getSignaturesForAddress and up to 32 getTransaction, sub_sol_logs.c) */
#define SUB_CALL_MAX 33

typedef struct sub_call sub_call_t;
typedef void (*sub_call_cb)(sub_call_t *c, void *data);

typedef struct sub_call_slot {
    pool_call_t *call;            /* NULL: none */
    size_t n;
    size_t cap;                   /* items and bodies allocated: the most this source asked (a slot
                                     poll holds 2, not SUB_CALL_MAX) */
    pool_item_t *items;
    sl_buf_t *body;
} sub_call_slot_t;

/* Two slots: a call started from the previous one's callback takes the
 * other, and the previous one is released once its callback returned. */
struct sub_call {
    sub_call_slot_t slot[2];
    int cur;                      /* the slot of the call last started */
    int done;                     /* it was answered: its items hold the answers */
    int in_cb;                    /* inside its callback */
    pool_call_t *stale;           /* released when the callback returns */
    sub_call_cb cb;
    void *data;
};

void sub_call_init(sub_call_t *c);
/* Frees what it holds; a call in flight is released (no callback). */
void sub_call_dispose(sub_call_t *c);
/* Starts methods[i](params[i]) for i < n (params: a JSON array's text); cb
 * runs once from the event loop when every one is answered or failed. The
 * previous call's answers are freed first. */
void sub_call_start(sub_call_t *c, gw_net_t *net, size_t n, const char *const *methods,
                       const char *const *params, sub_call_cb cb, void *data);
/* After cb: call i's result as JSON text (*res, *len) and 1, or 0 when it
 * failed or answered an error (null is a result). */
int sub_call_result(const sub_call_t *c, size_t i, const char **res, size_t *len);
/* After cb: 1 if an answer of the call (i: its item, for the outcome) was
 * over server.max_response_bytes. */
int sub_call_too_large(const sub_call_t *c, size_t i);
/* After cb: the id of the endpoint that answered call i, or NULL (none, or the cache). */
const char *sub_call_endpoint(const sub_call_t *c, size_t i);
/* After cb: 1 if an attempt of the call at endpoint id failed (a failover away from it). */
int sub_call_failed_at(const sub_call_t *c, const char *id);
/* 1 while a call is in flight. */
int sub_call_busy(const sub_call_t *c);

#endif
