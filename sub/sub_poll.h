/* sub/sub_poll.h: the loop every polled source runs (sub_sol.c's slot
 * and root, sub_sol_logs.c): a call through the pool every poll interval
 * (sub_poll_ms), never two at once (a tick while the last is out is
 * skipped), the first at start; with SUB_POLL_WATCH also when the chain
 * view's head moves above the one last looked at (an upstream WebSocket's
 * heads at once, looked at every SUB_WATCH_MS). The source embeds a
 * sub_poll_t, says how to start its call (poll: sub_call_start on
 * p->call, whose callback is the source's), and finds itself from p
 * (H2O_STRUCT_FROM_MEMBER). Worker-local, one event loop. */
#ifndef SUB_POLL_H
#define SUB_POLL_H

#include <stdint.h>

#include "sub/sub_call.h"
#include "sub/sub_int.h"

#define SUB_POLL_WATCH 1u         /* also poll when the chain view's head moves */

typedef struct sub_poll sub_poll_t;
/* Starts the poll's call on p->call (never called while one is out). */
typedef void (*sub_poll_fn)(sub_poll_t *p);

struct sub_poll {
    sub_reg_t *reg;
    sub_net_t *net;
    sub_call_t call;              /* the poll's call: the source reads its answers in its callback */
    sub_poll_fn poll;
    h2o_timeout_t *period;
    h2o_timeout_entry_t tick;
    h2o_timeout_entry_t watch;    /* SUB_POLL_WATCH */
    uint64_t view_head;           /* the chain view's head last looked at */
};

/* p's call ready (a source that may never start its loop still stops). */
void sub_poll_init(sub_poll_t *p);
/* The loop of net's source in r starts: poll now, then every interval. */
void sub_poll_start(sub_poll_t *p, sub_reg_t *r, sub_net_t *net, unsigned flags, sub_poll_fn poll);
/* Timers unlinked, a call in flight released (no callback). */
void sub_poll_stop(sub_poll_t *p);

#endif
