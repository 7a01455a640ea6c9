/* sub/sub_kinds.c: the subscription kinds sluice serves (or refuses
 * clearly), one row each: a new kind is its functions in the family's file
 * (sub_eth.c, sub_sol*.c) and one row here. Read by sub.c. */
#include "sub/sub_int.h"

#define NO_WS_UPSTREAM                                                                                         \
    "newPendingTransactions needs an endpoint with ws_url (it is passed through from an upstream's WebSocket; "  \
    "this network has none)"

#define ETH(kname, norm, gauge_, start_, stop_, pos_, refusal_)                                                  \
    {.name = kname, .position = pos_, .chain = POLICY_CHAIN_ETHEREUM, .method = "eth_subscribe", .unsubscribe = "eth_unsubscribe",  \
     .notification = "eth_subscription", .id_form = SUB_ID_HEX, .gauge = gauge_, .normalise = norm,          \
     .refusal = refusal_, .start = start_, .stop = stop_}
#define SOL(kname, unsub, notif, norm, gauge_, start_, pos_)                                                    \
    {.name = kname, .position = pos_, .chain = POLICY_CHAIN_SOLANA, .method = kname, .unsubscribe = unsub,      \
     .notification = notif, .id_form = SUB_ID_INT, .gauge = gauge_, .normalise = norm, .start = start_,       \
     .stop = sub_sol_stop}

const sub_kind_t sub_kinds[] = {
    ETH("newHeads", sub_eth_heads_params, STATE_SRV_SUBS_NEWHEADS, sub_eth_heads_start, sub_eth_heads_stop,
        sub_eth_heads_position, NULL),
    ETH("logs", sub_eth_logs_params, STATE_SRV_SUBS_LOGS, sub_eth_logs_start, sub_eth_logs_stop,
        sub_eth_logs_position, NULL),
    {.name = "newPendingTransactions", .chain = POLICY_CHAIN_ETHEREUM, .method = "eth_subscribe",
     .unsubscribe = "eth_unsubscribe", .notification = "eth_subscription", .id_form = SUB_ID_HEX,
     .gauge = STATE_SRV_SUBS_PENDING, .normalise = sub_pass_pending_params, .refusal = NO_WS_UPSTREAM,
     .pass = 1},
    SOL("slotSubscribe", "slotUnsubscribe", "slotNotification", sub_sol_slot_params, STATE_SRV_SUBS_SLOT,
        sub_sol_slot_start, sub_sol_slot_position),
    SOL("rootSubscribe", "rootUnsubscribe", "rootNotification", sub_sol_slot_params, STATE_SRV_SUBS_ROOT,
        sub_sol_root_start, NULL),
    SOL("signatureSubscribe", "signatureUnsubscribe", "signatureNotification", sub_sol_signature_params,
        STATE_SRV_SUBS_SIGNATURE, sub_sol_signature_start, NULL),
    SOL("accountSubscribe", "accountUnsubscribe", "accountNotification", sub_sol_account_params,
        STATE_SRV_SUBS_ACCOUNT, sub_sol_account_start, NULL),
    {.name = "logsSubscribe", .chain = POLICY_CHAIN_SOLANA, .method = "logsSubscribe",
     .unsubscribe = "logsUnsubscribe", .notification = "logsNotification", .id_form = SUB_ID_INT,
     .gauge = STATE_SRV_SUBS_SOL_LOGS, .normalise = sub_sol_logs_params, .start = sub_sol_logs_start,
     .stop = sub_sol_logs_stop, .pass = 1, .own_poll = 1, .follow = sub_sol_logs_follow,
     .unfollow = sub_sol_logs_unfollow},
    {.name = "programSubscribe", .chain = POLICY_CHAIN_SOLANA, .method = "programSubscribe",
     .unsubscribe = "programUnsubscribe", .notification = "programNotification", .id_form = SUB_ID_INT,
     .gauge = STATE_SRV_SUBS_PROGRAM, .normalise = sub_sol_program_params, .start = sub_sol_program_start,
     .stop = sub_sol_program_stop, .pass = 1, .own_poll = 1},
};
const size_t sub_nkinds = sizeof(sub_kinds) / sizeof(sub_kinds[0]);
