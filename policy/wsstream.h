/* policy/wsstream.h: when an upstream's head stream (an endpoint's ws_url,
 * pool/pool_wshead.c) is given up, and how long until it is tried again.
 * Pure: the caller passes the times (monotonic ms) and the random number.
 *
 * A stream is given up when its Upgrade and the subscription's answer take
 * longer than a connection's deadlines allow, when it brings no head for
 * stall_ms (several block times: the node stopped telling, or the stream is
 * wedged behind a proxy), or when nothing at all arrives for
 * POLICY_WS_SILENT_MS although a ping goes every POLICY_WS_PING_MS (a dead
 * peer whose TCP connection nobody reset). Tries after a loss wait half to
 * all of a backoff that doubles from POLICY_WS_BACKOFF_MIN_MS to
 * POLICY_WS_BACKOFF_MAX_MS, so the workers of several hosts that lost one
 * node together do not come back together; a head brings it back to the
 * minimum. */
#ifndef POLICY_WSSTREAM_H
#define POLICY_WSSTREAM_H

#include <stdint.h>

#include "policy/chain.h"

#define POLICY_WS_PING_MS 10000
#define POLICY_WS_SILENT_MS 15000
#define POLICY_WS_BACKOFF_MIN_MS 250
#define POLICY_WS_BACKOFF_MAX_MS 30000
#define POLICY_WS_STALL_ETH_MS 60000   /* five 12 s blocks */
#define POLICY_WS_STALL_SOLANA_MS 5000 /* a dozen 400 ms slots */

typedef enum policy_ws_verdict {
    POLICY_WS_FINE,
    POLICY_WS_PING,               /* fine, and a ping is due */
    POLICY_WS_NOT_SUBSCRIBED,     /* no subscription within handshake_ms of the try */
    POLICY_WS_STALLED,            /* no head for stall_ms */
    POLICY_WS_SILENT,             /* no bytes, not even a pong, for POLICY_WS_SILENT_MS */
} policy_ws_verdict_t;

/* A stream's times, monotonic ms. */
typedef struct policy_ws_times {
    uint64_t began_ms;            /* this try started (connect) */
    uint64_t last_head_ms;        /* the last head, or the subscription's answer */
    uint64_t last_rx_ms;          /* the last bytes received */
    uint64_t ping_ms;             /* the last ping sent, or the subscription's answer */
    uint8_t subscribed;           /* the subscription was answered */
} policy_ws_times_t;

/* What to do with a stream at now_ms (not closed yet). */
policy_ws_verdict_t policy_ws_check(const policy_ws_times_t *t, uint32_t handshake_ms, uint32_t stall_ms,
                                    uint64_t now_ms);

/* stall_ms configured (ws_stall_ms), or the chain's default when 0. */
uint32_t policy_ws_stall_ms(policy_chain_t chain, uint32_t configured_ms);

/* The wait before the next try after a loss, from *backoff_ms (0: none
 * yet), which doubles for the loss after it; rnd: any random number. */
uint32_t policy_ws_retry_ms(uint32_t *backoff_ms, uint32_t rnd);

#endif
