/* policy/wsstream.c: the head stream's deadlines and backoff (wsstream.h). */
#include "policy/wsstream.h"

policy_ws_verdict_t policy_ws_check(const policy_ws_times_t *t, uint32_t handshake_ms, uint32_t stall_ms,
                                    uint64_t now_ms)
{
    if (!t->subscribed)
        return now_ms > t->began_ms + handshake_ms ? POLICY_WS_NOT_SUBSCRIBED : POLICY_WS_FINE;
    if (now_ms > t->last_head_ms + stall_ms)
        return POLICY_WS_STALLED;
    if (now_ms > t->last_rx_ms + POLICY_WS_SILENT_MS)
        return POLICY_WS_SILENT;
    return now_ms >= t->ping_ms + POLICY_WS_PING_MS ? POLICY_WS_PING : POLICY_WS_FINE;
}

uint32_t policy_ws_stall_ms(policy_chain_t chain, uint32_t configured_ms)
{
    if (configured_ms != 0)
        return configured_ms;
    return chain == POLICY_CHAIN_SOLANA ? POLICY_WS_STALL_SOLANA_MS : POLICY_WS_STALL_ETH_MS;
}

uint32_t policy_ws_retry_ms(uint32_t *backoff_ms, uint32_t rnd)
{
    uint32_t b = *backoff_ms < POLICY_WS_BACKOFF_MIN_MS ? POLICY_WS_BACKOFF_MIN_MS : *backoff_ms;
    if (b > POLICY_WS_BACKOFF_MAX_MS)
        b = POLICY_WS_BACKOFF_MAX_MS;
    *backoff_ms = b > POLICY_WS_BACKOFF_MAX_MS / 2 ? POLICY_WS_BACKOFF_MAX_MS : b * 2;
    return b / 2 + rnd % (b - b / 2 + 1);
}
