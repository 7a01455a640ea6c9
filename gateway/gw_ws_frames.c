/* gateway/gw_ws_frames.c: a WebSocket message being received (gw_ws_int.h):
 * its frames counted (WS_MAX_FRAGMENTS), its clock (WS_MAX_MESSAGE_MS), its
 * bytes in the worker's budget and its caller's share; past any, the
 * socket is closed and the rest of the message read and dropped. */
#include "gateway/gw_ws_int.h"

#include "base/sl_time.h"

/* A client that sends a message sluice will not finish receiving: the
 * close goes out, and what the client still sends is read and dropped
 * (wslay's no-buffering mode keeps no chunk of data frames) until it
 * answers the close or CLOSE_WAIT_MS pass. Not reading at all would close
 * the socket on unread bytes: a reset, which loses the close frame and its
 * code for the client. */
void gw_ws_message_refused(ws_conn_t *c, uint16_t code, const char *reason)
{
    uint64_t held;
    char tail[SL_LOG_HELD_MAX];
    gw_ws_unlink_timer(&c->unfinished);
    if (c->closing)
        return;
    if (sl_log_limit_pass(&c->w->log_message, sl_now_ms(), LOG_EVERY_MS, &held))
        sl_log_warn("closed a WebSocket (%u) of %s: %s%s", code, c->ident, reason, sl_log_held_text(held, tail));
    gw_ws_conn_close(c, code, reason);
    wslay_event_config_set_no_buffering(c->wc->ws_ctx, 1);
}

/* The frame of payload bytes of a message being received, charged to the
 * worker's budget (max_buffered_bytes) and its caller's share
 * (max_buffered_share, with its answers, queues and filters) before it is
 * read; past either (once the message is over GW_BUFFERED_SMALL) the socket
 * is closed with 1009 and the message dropped. */
static void partial_charge(ws_conn_t *c, uint64_t payload)
{
    gw_buffered_t *b = &c->w->h->buffered;
    uint64_t add = payload + WS_FRAME_COST;
    if (c->closing)
        return;
    /* a message of GW_BUFFERED_SMALL or less is never refused (as a small
     * answer): a caller at its share still gets its subscribe's -32005 */
    if (b->budget != NULL && c->partial + add > GW_BUFFERED_SMALL) {
        if (b->budget->used + add > b->budget->limit) {
            gw_ws_message_refused(c, 1009, "a message past the worker's room for held bytes (server.max_buffered_bytes)");
            return;
        }
        if (b->share < b->budget->limit && gw_held_of(b->held, c->ident) + add > b->share) {
            gw_ws_message_refused(c, 1009, "a message past this caller's share of held bytes (server.max_buffered_share)");
            return;
        }
    }
    c->partial += (size_t)add;
    gw_ws_charge_sync(c, gw_ws_queued_bytes(c));
}

void gw_ws_on_unfinished(h2o_timeout_entry_t *e)
{
    gw_ws_message_refused(H2O_STRUCT_FROM_MEMBER(ws_conn_t, unfinished, e), 1008,
                    "a message was left unfinished for 10 s");
}

/* wslay's frame-start callback (user: the h2o connection): counts the
 * frames of the message being received and starts its clock. Control
 * frames (ping, pong, close) may come between its frames and are not
 * counted. */
void gw_ws_on_frame_start(wslay_event_context_ptr ctx, const struct wslay_event_on_frame_recv_start_arg *arg,
                           void *user)
{
    ws_conn_t *c = ((h2o_websocket_conn_t *)user)->data;
    (void)ctx;
    if (arg->opcode >= 0x8)
        return;
    if (arg->opcode != WSLAY_CONTINUATION_FRAME) {
        c->fragments = 0;
        c->partial = 0;
        gw_ws_unlink_timer(&c->unfinished);
        h2o_timeout_link(c->w->loop, &c->w->message_timeout, &c->unfinished);
    }
    if (++c->fragments > WS_MAX_FRAGMENTS) {
        gw_ws_message_refused(c, 1009, "a message in more than 1024 frames");
        return;
    }
    partial_charge(c, arg->payload_length);
}

