/* policy/cacheadmit.c: admission to the response cache (policy/cacheadmit.h). */
#include "policy/cacheadmit.h"

#include <string.h>

void policy_cacheadmit_init(policy_cacheadmit_t *a)
{
    memset(a, 0, sizeof(*a));
}

static uint64_t tag_of(const uint8_t *key)
{
    uint64_t t;
    memcpy(&t, key, sizeof(t));
    return t != 0 ? t : 1;
}

/* 1 if the large key was asked before (it is forgotten: a third ask is a
 * first again, once kept it is found in the cache); else it is remembered. */
static int seen_before(policy_cacheadmit_t *a, const uint8_t *key)
{
    uint64_t t = tag_of(key);
    uint64_t *slot = &a->seen[t % POLICY_CACHEADMIT_SEEN];
    if (*slot == t) {
        *slot = 0;
        return 1;
    }
    *slot = t;
    return 0;
}

/* The owner's entry: found, or a free one, or the one whose window began
 * longest ago (a caller forgotten starts a fresh window: at most one share
 * more, and only once 256 others are counted at once). */
static policy_cacheadmit_owner_t *owner_of(policy_cacheadmit_t *a, uint64_t owner)
{
    size_t start = (size_t)(owner % POLICY_CACHEADMIT_OWNERS), oldest = start;
    for (size_t k = 0; k < POLICY_CACHEADMIT_OWNERS; k++) {
        policy_cacheadmit_owner_t *o = &a->owners[(start + k) % POLICY_CACHEADMIT_OWNERS];
        if (!o->used || o->owner == owner)
            return o;
        if (o->since_ms < a->owners[oldest].since_ms)
            oldest = (start + k) % POLICY_CACHEADMIT_OWNERS;
    }
    policy_cacheadmit_owner_t *o = &a->owners[oldest];
    o->used = 0;
    return o;
}

policy_cacheadmit_verdict_t policy_cacheadmit_judge(policy_cacheadmit_t *a, const policy_cacheadmit_conf_t *conf,
                                                    const uint8_t *key, uint64_t len, uint64_t owner, uint64_t now_ms)
{
    if (conf->max_entry != 0 && len > conf->max_entry)
        return POLICY_CACHEADMIT_TOO_LARGE;
    if (conf->large != 0 && len > conf->large && !seen_before(a, key))
        return POLICY_CACHEADMIT_FIRST_ASK;
    if (conf->share_bytes == 0)
        return POLICY_CACHEADMIT_KEEP;
    policy_cacheadmit_owner_t *o = owner_of(a, owner);
    if (!o->used || now_ms - o->since_ms >= conf->window_ms || now_ms < o->since_ms) {
        o->used = 1;
        o->owner = owner;
        o->bytes = 0;
        o->since_ms = now_ms;
    }
    if (o->bytes + len > conf->share_bytes)
        return POLICY_CACHEADMIT_OVER_SHARE;
    o->bytes += len;
    return POLICY_CACHEADMIT_KEEP;
}

const char *policy_cacheadmit_name(policy_cacheadmit_verdict_t v)
{
    static const char *const names[POLICY_CACHEADMIT_VERDICT_COUNT] = {
        [POLICY_CACHEADMIT_KEEP] = "keep",
        [POLICY_CACHEADMIT_TOO_LARGE] = "too_large",
        [POLICY_CACHEADMIT_FIRST_ASK] = "first_ask",
        [POLICY_CACHEADMIT_OVER_SHARE] = "over_share",
    };
    return (unsigned)v < POLICY_CACHEADMIT_VERDICT_COUNT ? names[v] : "unknown";
}
