/* pool/pool_learn.c: learned capabilities (networks.<n>.capability_ttl_ms).
 *
 * An endpoint that answers a single call "method not found" (or a
 * provider's words for it), or "missing trie node" / "pruned" for a read
 * deep below the head (policy_capability_classify), is remembered for
 * capability_ttl_ms in its memory (pool_endpoint_t.learned, this worker's):
 * the plan puts it after every other endpoint for that method, or for reads
 * that deep (pool_call_loop.c). It is not left out altogether: when every
 * other endpoint has failed, asking it again costs one call and the client
 * gets its real answer. An event says when a capability is learned and when
 * it is forgotten (at the first plan that looks at the endpoint after the
 * TTL); `GET /admin/endpoints` shows what is remembered (from the events). */
#include <inttypes.h>
#include <stdio.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "pool/pool_call_int.h"

static void record(pool_network_t *net, pool_endpoint_t *e, state_event_kind_t kind, const char *reason,
                   uint64_t count)
{
    sl_log_info("endpoint %s/%s: %s %s", net->conf->name, e->conf->id,
                kind == STATE_EVENT_ENDPOINT_CAPABILITY_LEARNED ? "learned:" : "forgotten:", reason);
    if (net->pool->state == NULL)
        return;
    state_event_t ev;
    state_event_init(&ev, kind, net->conf->name, e->conf->id, sl_shared_ms());
    snprintf(ev.reason, sizeof(ev.reason), "%s", reason);
    ev.count = count;
    ev.duration_ms = kind == STATE_EVENT_ENDPOINT_CAPABILITY_LEARNED ? net->conf->capability_ttl_ms : 0;
    if (state_event_append(net->pool->state, &ev) != SL_OK)
        sl_log_warn("endpoint %s/%s: could not record %s", net->conf->name, e->conf->id,
                    state_event_kind_name(kind));
}

void pool_learn_from(pool_call_t *call, pool_endpoint_t *e, const policy_attempt_facts_t *f)
{
    pool_network_t *net = call->net;
    uint32_t ttl = net->conf->capability_ttl_ms;
    if (ttl == 0 || call->nsent != 1 || f->failed || f->body != POLICY_BODY_OBJECT ||
        f->obj.error != POLICY_ERROR_DECODED)
        return;
    const pool_item_t *it = &call->items[call->sent[0]];
    /* a method no table knows is not learned: a caller inventing names would
     * fill the memory and the events with them */
    if (it->name == NULL || it->method == NULL || it->method->name == NULL || it->method->name[0] == '\0')
        return;
    uint32_t retry_ms = 0;
    unsigned flags = 0;
    policy_verdict_t v = policy_verdict_rpc_error_flags(net->conf->chain, it->method, f->status, &f->obj.err,
                                                        f->obj.buf, &retry_ms, &flags);
    uint64_t depth = call->chain.depth;
    char reason[256];
    switch (policy_capability_classify(v, flags, &f->obj.err, depth, net->conf->archive_depth)) {
    case POLICY_CAPABILITY_NONE:
        return;
    case POLICY_CAPABILITY_METHOD:
        if (!policy_capability_learn_method(&e->learned, it->name, it->name_len, sl_now_ms(), ttl))
            return;
        snprintf(reason, sizeof(reason), "method %.*s: not served (%.120s)", (int)it->name_len, it->name,
                 f->obj.err.message);
        record(net, e, STATE_EVENT_ENDPOINT_CAPABILITY_LEARNED, reason, 0);
        return;
    case POLICY_CAPABILITY_DEPTH:
        if (!policy_capability_learn_depth(&e->learned, depth, sl_now_ms(), ttl))
            return;
        snprintf(reason, sizeof(reason), "depth %" PRIu64 ": no state this deep below the head (%.120s)", depth,
                 f->obj.err.message);
        record(net, e, STATE_EVENT_ENDPOINT_CAPABILITY_LEARNED, reason, depth);
        return;
    }
}

/* Forgets what expired, with an event each. */
static void forget_due(pool_network_t *net, pool_endpoint_t *e, uint64_t now)
{
    char name[POLICY_CAPABILITY_NAME], reason[160];
    uint64_t depth;
    while (policy_capability_forget_one(&e->learned, now, name, sizeof(name), &depth)) {
        if (name[0] != '\0')
            snprintf(reason, sizeof(reason), "method %s: asked again", name);
        else
            snprintf(reason, sizeof(reason), "depth %" PRIu64 ": asked again", depth);
        record(net, e, STATE_EVENT_ENDPOINT_CAPABILITY_FORGOTTEN, reason, depth);
    }
}

int pool_learn_lacks(pool_call_t *call, pool_endpoint_t *e)
{
    uint64_t now = sl_now_ms();
    forget_due(call->net, e, now);
    if (policy_capability_lacks_depth(&e->learned, call->chain.depth, now))
        return 1;
    for (size_t i = 0; i < call->nitems; i++) {
        const pool_item_t *it = &call->items[i];
        if (it->state == POOL_ITEM_PENDING && it->name != NULL &&
            policy_capability_lacks_method(&e->learned, it->name, it->name_len, now))
            return 1;
    }
    return 0;
}
