/* pool/pool_logs.c: a network's eth_getLogs facts for the gateway's
 * splitting (pool/pool_logs.h). Called by pool/pool_split.c once per
 * client eth_getLogs. */
#include "pool/pool_logs.h"

#include <inttypes.h>
#include <stdio.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "pool/pool_call_int.h"

uint32_t pool_logs_blocks(pool_network_t *net)
{
    uint64_t usable = net->nendpoints <= POLICY_CHAINVIEW_MAX_ENDPOINTS ? pool_chain_usable(net, sl_shared_ms()) : 0;
    uint32_t widest = 0;
    for (int pass = 0; pass < 2; pass++) {
        int any = 0;
        for (size_t i = 0; i < net->nendpoints; i++) {
            if (pass == 0 && !(usable >> i & 1))
                continue;
            uint32_t b = net->endpoints[i].conf->max_logs_blocks;
            if (b == 0)
                return 0;
            widest = b > widest ? b : widest;
            any = 1;
        }
        if (any)
            break; /* the usable ones decide; with none usable, every endpoint does */
    }
    return widest;
}

sl_err_t pool_logs_resolve(pool_network_t *net, policy_block_tag_t tag, uint64_t *n)
{
    if (net->nendpoints > POLICY_CHAINVIEW_MAX_ENDPOINTS)
        return SL_ERR_NOT_FOUND;
    return policy_chainview_resolve(&net->chain, tag, pool_chain_usable(net, sl_shared_ms()), n);
}

void pool_logs_count(pool_network_t *net, pool_logs_counter_t c, uint64_t n)
{
    if ((unsigned)c < POOL_LOGS_COUNTER_COUNT)
        net->pressure.logs[c] += n;
}

void pool_logs_refused(pool_network_t *net, uint64_t from, uint64_t to, uint32_t blocks, uint32_t max_split)
{
    pool_pressure_t *pr = &net->pressure;
    uint64_t now = sl_shared_ms();
    pr->logs[POOL_LOGS_REFUSED]++;
    pr->logs_held++;
    if (pr->logs_event_ms != 0 && now - pr->logs_event_ms < POOL_LOGS_EVENT_EVERY_MS)
        return;
    pr->logs_event_ms = now;
    uint64_t count = pr->logs_held;
    pr->logs_held = 0;
    sl_log_warn("network %s: refused eth_getLogs over 0x%" PRIx64 "..0x%" PRIx64 " (%" PRIu64
                " refused since the last event): it needs more than max_logs_split %" PRIu32 " calls of %" PRIu32
                " blocks", net->conf->name, from, to, count, max_split, blocks);
    if (net->pool->state == NULL)
        return;
    state_event_t ev;
    state_event_init(&ev, STATE_EVENT_LOGS_SPLIT_REFUSED, net->conf->name, "", now);
    ev.count = count;
    snprintf(ev.reason, sizeof(ev.reason),
             "eth_getLogs over blocks 0x%" PRIx64 " to 0x%" PRIx64 " needs more than max_logs_split %" PRIu32
             " calls of at most %" PRIu32 " blocks",
             from, to, max_split, blocks);
    if (state_event_append(net->pool->state, &ev) != SL_OK)
        sl_log_warn("network %s: could not record logs_split_refused", net->conf->name);
}

void pool_logs_answer(pool_item_t *it, policy_verdict_t verdict, const char *answer, uint32_t answer_len,
                      wire_span_t answer_id)
{
    pool_item_answer_set(it, &(pool_item_answer_t){.verdict = verdict,
                                                    .answer = answer,
                                                    .answer_len = answer_len,
                                                    .answer_id = answer_id,
                                                    .endpoint = -1,
                                                    .over = 1});
}
