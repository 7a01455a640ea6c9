/* gateway/gw_ws_int.h: what gw_ws.c (the sockets, their messages and
 * queues) and gw_ws_frames.c (a message being received: its frames, bytes
 * and clock) share. Not for other files. */
#ifndef GW_WS_INT_H
#define GW_WS_INT_H

#include <h2o/websocket.h>

#include "base/sl_log.h"
#include "gateway/gw_ws.h"
#include "gateway/gw_ws_sub.h"

#define CLOSE_WAIT_MS 5000        /* a close sluice starts: then the connection is reset */
#define LOG_EVERY_MS 10000
#define MAX_QUEUED_PONGS 4096     /* messages waiting when a ping comes: empty pongs weigh 0 bytes */
#define RESYNC_MS 100             /* a socket's queue charged to the budget is looked at again this often */
/* wslay keeps a heap chunk per frame of a message being received, and its
 * bound (max_body_bytes) counts payload only: 1-byte continuation frames
 * cost ~94 bytes of worker memory per byte sent (8 sockets took a worker to
 * 757 MB). So frames per message are bounded too (close 1009), and a
 * message is given a time to be finished, whatever else (pings) comes. */
#define WS_MAX_FRAGMENTS 1024
#define WS_MAX_MESSAGE_MS 10000
/* What a frame of a message being received costs the worker besides its
 * payload (wslay's chunk and the allocator's): charged with the payload */
#define WS_FRAME_COST 128

#define WS_SUBSCRIBE_ERROR "a subscription call is served alone in its message, not inside a batch"

struct gw_ws {
    gw_handler_t *h;
    const cfg_server_conf_t *srv;
    gw_stats_t *stats;
    h2o_loop_t *loop;
    h2o_linklist_t conns;         /* ws_conn_t, oldest first */
    size_t nconns;
    int draining;
    h2o_timeout_t zero_timeout;   /* on_flush */
    h2o_timeout_t tick_timeout;   /* on_tick: pings and the idle check */
    h2o_timeout_t close_timeout;  /* on_close_wait */
    h2o_timeout_t resync_timeout; /* on_resync */
    h2o_timeout_t message_timeout; /* on_unfinished: WS_MAX_MESSAGE_MS */
    sl_log_limit_t log_slow;
    sl_log_limit_t log_message;   /* message_refused */
    sub_reg_t *subs;           /* the worker's subscriptions */
};

typedef struct ws_conn {
    gw_ws_t *w;
    h2o_websocket_conn_t *wc;     /* its sock is NULL until the 101 is written */
    h2o_linklist_t link;          /* in w->conns */
    gw_net_t *net;
    const cfg_key_conf_t *key;
    char ip[GW_EXEC_IP_MAX];
    char ident[GW_EXEC_IDENT_MAX]; /* "key:<name>" / "ip:<address>": the per-identity cap */
    h2o_linklist_t msgs;          /* ws_msg_t not freed yet */
    gw_ws_subs_t sub;             /* its subscriptions */
    uint32_t inflight;            /* of them, not answered yet */
    uint64_t last_rx_ms;          /* any frame from the client, pongs included */
    h2o_timeout_entry_t flush, tick, close_wait, resync;
    gw_held_entry_t held;         /* its queue, in its caller's share (gw_held.h) */
    size_t charged;               /* of its queue, charged to the worker's budget */
    h2o_timeout_entry_t unfinished; /* linked while a message is being received */
    uint32_t fragments;           /* frames of that message so far */
    size_t partial;               /* of that message, the bytes held (payload + WS_FRAME_COST a frame):
                                     in the budget and its caller's share with its queue */
    int closing;                  /* a close frame is queued: nothing more is answered */
    int close_when_done;          /* shutdown: close with 1001 when inflight reaches 0 */
    uint8_t sub_call;             /* inside sub_message: its first send is the call's answer */
    uint8_t sub_error;            /* ... and that answer was a JSON-RPC error */
} ws_conn_t;

typedef struct ws_msg {
    gw_exec_t x;
    ws_conn_t *c;
    h2o_linklist_t link;          /* in c->msgs */
    int answered;                 /* queued in wslay (or nothing to send): free at the next flush */
    h2o_mem_pool_t mem;           /* the body and the parse */
} ws_msg_t;

/* Queues a close frame (code, reason) after the answers already queued;
 * the client has CLOSE_WAIT_MS to answer it. */
void gw_ws_conn_close(ws_conn_t *c, uint16_t code, const char *reason);
void gw_ws_unlink_timer(h2o_timeout_entry_t *e);
/* What the socket's queue holds (wslay's, not yet taken by h2o). */
size_t gw_ws_queued_bytes(const ws_conn_t *c);
/* The worker's budget charged with what the queue (queued) and the message
 * being received hold now. */
void gw_ws_charge_sync(ws_conn_t *c, size_t queued);

/* gw_ws_frames.c */
/* A message sluice will not finish receiving: close with code and reason,
 * then read and drop what the client still sends. */
void gw_ws_message_refused(ws_conn_t *c, uint16_t code, const char *reason);
/* message_timeout's: a message left unfinished for WS_MAX_MESSAGE_MS. */
void gw_ws_on_unfinished(h2o_timeout_entry_t *e);
/* wslay's frame-start callback (user: the h2o connection). */
void gw_ws_on_frame_start(wslay_event_context_ptr ctx, const struct wslay_event_on_frame_recv_start_arg *arg,
                          void *user);

#endif
