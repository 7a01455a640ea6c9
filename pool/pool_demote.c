/* pool/pool_demote.c: demotion on the first timeout.
 *
 * A cheap read (or a health probe) that timed out or was reset takes its
 * endpoint out of first place at once: the shared record says until when
 * (one compare-and-set, an endpoint_demoted event when it starts), this
 * worker re-ranks at once and the others at their next snapshot (~50 ms),
 * whatever the ranking's stickiness says. Heavy calls never demote
 * (policy/demote.h): their slowness may be the request's own. */
#include "base/sl_log.h"
#include "base/sl_time.h"
#include "policy/demote.h"
#include "pool/pool_net.h"

typedef struct demote_ctx {
    pool_endpoint_t *ep;
    policy_demote_cause_t cause;
    uint64_t now;
    state_endpoint_rec_t result;
} demote_ctx_t;

static int demote_cb(void *arg, state_endpoint_rec_t *rec, int exists, state_event_t *events, size_t *nevents)
{
    demote_ctx_t *c = arg;
    (void)exists;
    uint32_t ms = c->ep->net->conf->demote_ms;
    uint64_t until = policy_demote_until(rec->demoted_until_ms, c->now, ms);
    if (until == rec->demoted_until_ms)
        return 0;
    int was = policy_demoted(rec->demoted_until_ms, c->now);
    rec->demoted_until_ms = until;
    rec->demoted_cause = (uint8_t)c->cause;
    c->result = *rec;
    if (was)
        return 1; /* extended: no new event */
    rec->demotions++;
    c->result = *rec;
    state_event_init(&events[0], STATE_EVENT_ENDPOINT_DEMOTED, c->ep->net->conf->name, c->ep->conf->id, c->now);
    events[0].duration_ms = ms;
    snprintf(events[0].reason, sizeof(events[0].reason), "%s%s: behind every other endpoint for %u ms",
             policy_demote_cause_name(c->cause), c->cause == POLICY_DEMOTE_HEDGES_LOST ? "" : " on a cheap read", ms);
    *nevents = 1;
    return 1;
}

void pool_demote_note(pool_endpoint_t *ep, state_outcome_t outcome, int heavy)
{
    pool_demote(ep, policy_demote_cause(outcome == STATE_OUTCOME_TIMEOUT, outcome == STATE_OUTCOME_RESET, heavy));
}

void pool_demote(pool_endpoint_t *ep, policy_demote_cause_t cause)
{
    uint32_t ms = ep->net->conf->demote_ms;
    if (cause == POLICY_DEMOTE_NONE || ms == 0)
        return;
    pool_health_t *h = &ep->health;
    uint64_t now = sl_shared_ms();
    /* a burst of timeouts must not become a burst of write transactions */
    uint64_t fresh = now + ms / 2;
    if (h->shared.demoted_until_ms > fresh || h->demote_written_until_ms > fresh)
        return;
    demote_ctx_t c = {ep, cause, now, {0}};
    int changed = 0;
    if (ep->net->pool->state == NULL) { /* unit tests: this worker is all there is */
        state_event_t ev;
        size_t n = 0;
        changed = demote_cb(&c, &h->shared, 1, &ev, &n);
    } else if (state_endpoint_update(ep->net->pool->state, h->key, demote_cb, &c, &changed) != SL_OK) {
        changed = 0;
    }
    if (!changed)
        return;
    h->shared = c.result;
    h->demote_written_until_ms = c.result.demoted_until_ms;
    sl_log_warn("endpoint %s/%s: %s: out of first place for %u ms", ep->net->conf->name, ep->conf->id,
                policy_demote_cause_name(cause), ms);
    pool_rank_update(ep->net, now);
}

int pool_demoted(const pool_endpoint_t *ep, uint64_t now_ms)
{
    return policy_demoted(ep->health.shared.demoted_until_ms, now_ms);
}
