/* gateway/gw_sub_kinds.c: the subscription kinds sluice serves (or refuses
 * clearly), one row each: a new kind is its functions in the family's file
 * (gw_sub_eth.c, gw_sub_sol*.c) and one row here. Read by gw_sub.c. */
#include "gateway/gw_sub_int.h"

#define NO_WS_UPSTREAM                                                                                         \
    "newPendingTransactions needs an endpoint with ws_url (it is passed through from an upstream's WebSocket; "  \
    "this network has none)"

#define ETH(kname, norm, gauge_, start_, stop_, refusal_)                                                        \
    {.name = kname, .chain = POLICY_CHAIN_ETHEREUM, .method = "eth_subscribe", .unsubscribe = "eth_unsubscribe",  \
     .notification = "eth_subscription", .id_form = GW_SUB_ID_HEX, .gauge = gauge_, .normalise = norm,          \
     .refusal = refusal_, .start = start_, .stop = stop_}
#define SOL(kname, unsub, notif, norm, gauge_, start_, refusal_)                                                \
    {.name = kname, .chain = POLICY_CHAIN_SOLANA, .method = kname, .unsubscribe = unsub, .notification = notif, \
     .id_form = GW_SUB_ID_INT, .gauge = gauge_, .normalise = norm, .refusal = refusal_, .start = start_,        \
     .stop = gw_sub_sol_stop}

const gw_sub_kind_t gw_sub_kinds[] = {
    ETH("newHeads", gw_sub_eth_heads_params, STATE_SRV_SUBS_NEWHEADS, gw_sub_eth_heads_start, gw_sub_eth_heads_stop,
        NULL),
    ETH("logs", gw_sub_eth_logs_params, STATE_SRV_SUBS_LOGS, gw_sub_eth_logs_start, gw_sub_eth_logs_stop, NULL),
    {.name = "newPendingTransactions", .chain = POLICY_CHAIN_ETHEREUM, .method = "eth_subscribe",
     .unsubscribe = "eth_unsubscribe", .notification = "eth_subscription", .id_form = GW_SUB_ID_HEX,
     .gauge = STATE_SRV_SUBS_PENDING, .normalise = gw_sub_pass_pending_params, .refusal = NO_WS_UPSTREAM,
     .pass = 1},
    SOL("slotSubscribe", "slotUnsubscribe", "slotNotification", gw_sub_sol_slot_params, STATE_SRV_SUBS_SLOT,
        gw_sub_sol_slot_start, NULL),
    SOL("rootSubscribe", "rootUnsubscribe", "rootNotification", gw_sub_sol_slot_params, STATE_SRV_SUBS_ROOT,
        gw_sub_sol_root_start, NULL),
    SOL("signatureSubscribe", "signatureUnsubscribe", "signatureNotification", gw_sub_sol_signature_params,
        STATE_SRV_SUBS_SIGNATURE, gw_sub_sol_signature_start, NULL),
    SOL("accountSubscribe", "accountUnsubscribe", "accountNotification", gw_sub_sol_account_params,
        STATE_SRV_SUBS_ACCOUNT, gw_sub_sol_account_start, NULL),
    {.name = "logsSubscribe", .chain = POLICY_CHAIN_SOLANA, .method = "logsSubscribe",
     .unsubscribe = "logsUnsubscribe", .notification = "logsNotification", .id_form = GW_SUB_ID_INT,
     .gauge = STATE_SRV_SUBS_SOL_LOGS, .normalise = gw_sub_sol_logs_params, .start = gw_sub_sol_logs_start,
     .stop = gw_sub_sol_logs_stop, .pass = 1, .own_poll = 1},
    {.name = "programSubscribe", .chain = POLICY_CHAIN_SOLANA, .method = "programSubscribe",
     .unsubscribe = "programUnsubscribe", .notification = "programNotification", .id_form = GW_SUB_ID_INT,
     .gauge = STATE_SRV_SUBS_PROGRAM, .normalise = gw_sub_sol_program_params, .start = gw_sub_sol_program_start,
     .stop = gw_sub_sol_program_stop, .pass = 1, .own_poll = 1},
};
const size_t gw_sub_nkinds = sizeof(gw_sub_kinds) / sizeof(gw_sub_kinds[0]);
