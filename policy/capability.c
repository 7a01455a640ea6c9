/* policy/capability.c: learned capabilities (policy/capability.h). strcasestr comes
 * with _GNU_SOURCE, which the build defines. */
#include "policy/capability.h"

#include <string.h>
#include <strings.h>


/* Words of a method an endpoint does not serve (verdict UNSUPPORTED already;
 * these keep out the other UNSUPPORTED answers: bad params, sizes). */
static const char *const method_words[] = {
    "method not found", "does not exist", "is not available", "not supported", "unsupported method",
    "method not allowed", "not whitelisted", "not allowed to access method", "not included in your current plan",
    "is disabled", NULL,
};

/* Words of pruned state, for a call deep below the head (verdict MISSING_DATA). */
static const char *const depth_words[] = {
    "missing trie node", "pruned", "state not available", "state is not available", "no state available",
    "historical state", "state histories", "header not found", "no historical rpc", "genesis is not traceable",
    "requested data is not available", NULL,
};

static int has_word(const char *msg, const char *const *words)
{
    for (; *words != NULL; words++)
        if (strcasestr(msg, *words) != NULL)
            return 1;
    return 0;
}

policy_capability_t policy_capability_classify(policy_verdict_t v, unsigned vflags, const wire_rpc_error_t *err,
                                               uint64_t depth, uint32_t archive_depth)
{
    if (err == NULL)
        return POLICY_CAPABILITY_NONE;
    if (v == POLICY_VERDICT_UNSUPPORTED && !(vflags & POLICY_VERDICT_F_LOGS_RANGE) &&
        !(err->has_code && (err->code == -32602 || err->code == -32600)) &&
        ((err->has_code && err->code == -32601) || has_word(err->message, method_words)))
        return POLICY_CAPABILITY_METHOD;
    if (v == POLICY_VERDICT_MISSING_DATA && depth > archive_depth && has_word(err->message, depth_words))
        return POLICY_CAPABILITY_DEPTH;
    return POLICY_CAPABILITY_NONE;
}

static int name_is(const char *slot, const char *name, size_t len)
{
    return slot[0] != '\0' && strlen(slot) == len && memcmp(slot, name, len) == 0;
}

int policy_capability_learn_method(policy_capability_mem_t *m, const char *name, size_t len, uint64_t now_ms,
                                   uint32_t ttl_ms)
{
    if (len == 0 || len >= POLICY_CAPABILITY_NAME || ttl_ms == 0)
        return 0;
    size_t pick = 0;
    for (size_t i = 0; i < POLICY_CAPABILITY_METHODS; i++) {
        if (name_is(m->methods[i].name, name, len)) {
            int news = m->methods[i].until_ms <= now_ms;
            m->methods[i].until_ms = now_ms + ttl_ms;
            return news;
        }
        /* a free slot first, else the one that expires first */
        if (m->methods[pick].name[0] != '\0' &&
            (m->methods[i].name[0] == '\0' || m->methods[i].until_ms < m->methods[pick].until_ms))
            pick = i;
    }
    memcpy(m->methods[pick].name, name, len);
    m->methods[pick].name[len] = '\0';
    m->methods[pick].until_ms = now_ms + ttl_ms;
    return 1;
}

int policy_capability_learn_depth(policy_capability_mem_t *m, uint64_t depth, uint64_t now_ms, uint32_t ttl_ms)
{
    if (depth == 0 || ttl_ms == 0)
        return 0;
    int live = m->depth != 0 && m->depth_until_ms > now_ms;
    /* shallower by a quarter at least: a caller walking its reads up one
     * block at a time learns the endpoint's depth in a few dozen steps, not
     * one event per block */
    int news = !live || depth <= m->depth - m->depth / 4;
    if (news)
        m->depth = depth;
    m->depth_until_ms = now_ms + ttl_ms;
    return news;
}

int policy_capability_lacks_method(const policy_capability_mem_t *m, const char *name, size_t len, uint64_t now_ms)
{
    for (size_t i = 0; i < POLICY_CAPABILITY_METHODS; i++)
        if (name_is(m->methods[i].name, name, len))
            return m->methods[i].until_ms > now_ms;
    return 0;
}

int policy_capability_lacks_depth(const policy_capability_mem_t *m, uint64_t depth, uint64_t now_ms)
{
    return depth != 0 && m->depth != 0 && depth >= m->depth && m->depth_until_ms > now_ms;
}

int policy_capability_forget_one(policy_capability_mem_t *m, uint64_t now_ms, char *name, size_t cap,
                                 uint64_t *depth)
{
    for (size_t i = 0; i < POLICY_CAPABILITY_METHODS; i++) {
        if (m->methods[i].name[0] == '\0' || m->methods[i].until_ms > now_ms)
            continue;
        if (cap > 0) {
            size_t n = strlen(m->methods[i].name);
            n = n < cap - 1 ? n : cap - 1;
            memcpy(name, m->methods[i].name, n);
            name[n] = '\0';
        }
        m->methods[i].name[0] = '\0';
        m->methods[i].until_ms = 0;
        *depth = 0;
        return 1;
    }
    if (m->depth != 0 && m->depth_until_ms <= now_ms) {
        if (cap > 0)
            name[0] = '\0';
        *depth = m->depth;
        m->depth = 0;
        m->depth_until_ms = 0;
        return 1;
    }
    return 0;
}

const char *policy_capability_word(int kind, size_t i)
{
    const char *const *t = kind == 1 ? method_words : kind == 2 ? depth_words : NULL;
    size_t n = kind == 1 ? sizeof(method_words) / sizeof(method_words[0]) - 1
             : kind == 2 ? sizeof(depth_words) / sizeof(depth_words[0]) - 1
                         : 0;
    return t != NULL && i < n ? t[i] : NULL;
}
