#include "policy/lease.h"

#include <stddef.h>

/* edges[from][to]: down the ladder only, each rung may end the climb */
static const uint8_t edges[POLICY_LEASE_RUNG_COUNT][POLICY_LEASE_RUNG_COUNT] = {
    [POLICY_LEASE_RUNG_HELD] = {[POLICY_LEASE_RUNG_CLUSTER] = 1, [POLICY_LEASE_RUNG_HOST] = 1,
                                [POLICY_LEASE_RUNG_SHARE] = 1, [POLICY_LEASE_RUNG_DONE] = 1},
    [POLICY_LEASE_RUNG_CLUSTER] = {[POLICY_LEASE_RUNG_HOST] = 1, [POLICY_LEASE_RUNG_SHARE] = 1,
                                   [POLICY_LEASE_RUNG_DONE] = 1},
    [POLICY_LEASE_RUNG_HOST] = {[POLICY_LEASE_RUNG_SHARE] = 1, [POLICY_LEASE_RUNG_DONE] = 1},
    [POLICY_LEASE_RUNG_SHARE] = {[POLICY_LEASE_RUNG_DONE] = 1},
    [POLICY_LEASE_RUNG_DONE] = {[POLICY_LEASE_RUNG_DONE] = 1},
};

void policy_lease_init(policy_lease_ladder_t *l, uint64_t retry_every)
{
    *l = (policy_lease_ladder_t){.retry_every = retry_every};
}

int policy_lease_edge_allowed(policy_lease_rung_t from, policy_lease_rung_t to)
{
    if ((unsigned)from >= POLICY_LEASE_RUNG_COUNT || (unsigned)to >= POLICY_LEASE_RUNG_COUNT)
        return 0;
    return edges[from][to];
}

/* Below the cluster: the host's store, unless it failed less than
 * retry_every ago and the part is still degraded. */
static policy_lease_rung_t store(const policy_lease_ladder_t *l, policy_lease_mode_t mode, uint64_t now)
{
    return mode.degraded && now < l->retry_shared_at ? POLICY_LEASE_RUNG_SHARE : POLICY_LEASE_RUNG_HOST;
}

static policy_lease_rung_t fall(policy_lease_ladder_t *l, policy_lease_mode_t mode, policy_lease_rung_t from,
                                uint64_t now)
{
    switch (from) {
    case POLICY_LEASE_RUNG_HELD:
        return mode.cluster ? POLICY_LEASE_RUNG_CLUSTER : store(l, mode, now);
    case POLICY_LEASE_RUNG_CLUSTER:
        return store(l, mode, now);
    case POLICY_LEASE_RUNG_HOST:
        l->retry_shared_at = now + l->retry_every; /* fail safe, never unlimited */
        return POLICY_LEASE_RUNG_SHARE;
    case POLICY_LEASE_RUNG_SHARE:
    case POLICY_LEASE_RUNG_DONE:
    case POLICY_LEASE_RUNG_COUNT:
        break;
    }
    return POLICY_LEASE_RUNG_DONE;
}

policy_lease_rung_t policy_lease_next(policy_lease_ladder_t *l, policy_lease_mode_t mode, policy_lease_rung_t tried,
                                      policy_lease_result_t said, uint64_t now)
{
    policy_lease_rung_t next = POLICY_LEASE_RUNG_DONE;
    switch (said) {
    case POLICY_LEASE_FALL:
        next = fall(l, mode, tried, now);
        break;
    case POLICY_LEASE_NO:
    case POLICY_LEASE_YES:
    case POLICY_LEASE_WAIT:
    case POLICY_LEASE_RESULT_COUNT:
        break;
    }
    return policy_lease_edge_allowed(tried, next) ? next : POLICY_LEASE_RUNG_DONE;
}

static policy_lease_result_t act(const policy_lease_ops_t *ops, void *ctx, policy_lease_rung_t rung)
{
    switch (rung) {
    case POLICY_LEASE_RUNG_HELD:
        return ops->held(ctx);
    case POLICY_LEASE_RUNG_CLUSTER:
        return ops->cluster(ctx);
    case POLICY_LEASE_RUNG_HOST:
        return ops->host(ctx);
    case POLICY_LEASE_RUNG_SHARE:
        return ops->share(ctx);
    case POLICY_LEASE_RUNG_DONE:
    case POLICY_LEASE_RUNG_COUNT:
        break;
    }
    return POLICY_LEASE_FALL;
}

policy_lease_result_t policy_lease_climb(policy_lease_ladder_t *l, policy_lease_mode_t mode, uint64_t now,
                                         const policy_lease_ops_t *ops, void *ctx, policy_lease_rung_t *decided)
{
    policy_lease_rung_t rung = POLICY_LEASE_RUNG_HELD, last = rung;
    policy_lease_result_t said = POLICY_LEASE_FALL;
    for (; rung != POLICY_LEASE_RUNG_DONE; rung = policy_lease_next(l, mode, rung, said, now)) {
        last = rung;
        said = act(ops, ctx, rung);
    }
    if (decided != NULL)
        *decided = last;
    return said == POLICY_LEASE_FALL ? POLICY_LEASE_NO : said;
}
