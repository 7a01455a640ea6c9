/* tests/policy/test_wsstream.c: policy/wsstream.h: when a head stream is
 * given up, and the backoff before the next try. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "policy/wsstream.h"

Test(wsstream, a_try_has_the_handshake_deadline_until_subscribed)
{
    policy_ws_times_t t = {.began_ms = 1000, .last_head_ms = 0, .last_rx_ms = 1000};
    cr_expect_eq(policy_ws_check(&t, 7000, 600, 8000), POLICY_WS_FINE);
    cr_expect_eq(policy_ws_check(&t, 7000, 600, 8001), POLICY_WS_NOT_SUBSCRIBED);
    /* neither the stall nor silence counts before the subscription */
    cr_expect_eq(policy_ws_check(&t, 100000, 600, 50000), POLICY_WS_FINE);
}

Test(wsstream, no_head_for_stall_ms_is_a_stall_whatever_else_arrives)
{
    policy_ws_times_t t = {.began_ms = 0, .last_head_ms = 1000, .last_rx_ms = 1500, .ping_ms = 1000, .subscribed = 1};
    cr_expect_eq(policy_ws_check(&t, 7000, 600, 1600), POLICY_WS_FINE);
    cr_expect_eq(policy_ws_check(&t, 7000, 600, 1601), POLICY_WS_STALLED); /* pongs do not keep it */
}

Test(wsstream, silence_past_the_pings_and_a_ping_when_due)
{
    policy_ws_times_t t = {.last_head_ms = 0, .last_rx_ms = 0, .ping_ms = 0, .subscribed = 1};
    uint32_t stall = 3600000;
    cr_expect_eq(policy_ws_check(&t, 7000, stall, POLICY_WS_PING_MS - 1), POLICY_WS_FINE);
    cr_expect_eq(policy_ws_check(&t, 7000, stall, POLICY_WS_PING_MS), POLICY_WS_PING);
    t.ping_ms = POLICY_WS_PING_MS;
    cr_expect_eq(policy_ws_check(&t, 7000, stall, POLICY_WS_SILENT_MS), POLICY_WS_FINE);
    cr_expect_eq(policy_ws_check(&t, 7000, stall, POLICY_WS_SILENT_MS + 1), POLICY_WS_SILENT);
    t.last_rx_ms = POLICY_WS_SILENT_MS; /* the pong came */
    cr_expect_eq(policy_ws_check(&t, 7000, stall, POLICY_WS_SILENT_MS + 1), POLICY_WS_FINE);
}

Test(wsstream, stall_defaults_by_chain)
{
    cr_expect_eq(policy_ws_stall_ms(POLICY_CHAIN_ETHEREUM, 0), POLICY_WS_STALL_ETH_MS);
    cr_expect_eq(policy_ws_stall_ms(POLICY_CHAIN_SOLANA, 0), POLICY_WS_STALL_SOLANA_MS);
    cr_expect_eq(policy_ws_stall_ms(POLICY_CHAIN_SOLANA, 600), 600);
}

Test(wsstream, backoff_doubles_with_half_to_full_jitter_and_a_cap)
{
    uint32_t b = 0, want = POLICY_WS_BACKOFF_MIN_MS;
    for (int i = 0; i < 12; i++) {
        uint32_t lo = want / 2;
        uint32_t saved = b;
        cr_expect_eq(policy_ws_retry_ms(&b, 0), lo, "try %d: the least wait", i);
        b = saved;
        cr_expect_eq(policy_ws_retry_ms(&b, want - lo), want, "try %d: the most", i);
        want = want * 2 > POLICY_WS_BACKOFF_MAX_MS ? POLICY_WS_BACKOFF_MAX_MS : want * 2;
        cr_expect_eq(b, want, "try %d: the next backoff", i);
    }
    for (uint32_t rnd = 0; rnd < 100000; rnd += 7) {
        uint32_t x = POLICY_WS_BACKOFF_MAX_MS;
        uint32_t w = policy_ws_retry_ms(&x, rnd * 2654435761u);
        cr_assert(w >= POLICY_WS_BACKOFF_MAX_MS / 2 && w <= POLICY_WS_BACKOFF_MAX_MS);
    }
}
