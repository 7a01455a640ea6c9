/* policy/shape.c: the table behind policy/shape.h. */
#include "policy/shape.h"

#include <stddef.h>

static const char *const shape_names[POLICY_SHAPE_COUNT] = {
#define POLICY_SHAPE_NAME_(name, str) [POLICY_SHAPE_##name] = str,
    POLICY_SHAPE_MAP(POLICY_SHAPE_NAME_)
#undef POLICY_SHAPE_NAME_
};

/* end -> the shape it suggests; heavy_only: only when the attempt carried a
 * call that may be slow by nature (a cheap read never is). */
static const struct {
    policy_shape_t shape;
    unsigned char heavy_only;
} suspects[POLICY_END_COUNT] = {
    [POLICY_END_OTHER] = {POLICY_SHAPE_NONE, 0},
    [POLICY_END_NEUTRAL] = {POLICY_SHAPE_NONE, 0},
    [POLICY_END_TOO_LARGE] = {POLICY_SHAPE_TOO_LARGE, 0},
    [POLICY_END_TIMEOUT] = {POLICY_SHAPE_SLOW_CALL, 1},
    [POLICY_END_UNREAD] = {POLICY_SHAPE_ID_UNANSWERABLE, 0},
};

const char *policy_shape_name(policy_shape_t s)
{
    return (unsigned)s < POLICY_SHAPE_COUNT ? shape_names[s] : "unknown";
}

policy_shape_t policy_shape_suspect(policy_attempt_end_t end, int heavy)
{
    if ((unsigned)end >= POLICY_END_COUNT)
        return POLICY_SHAPE_NONE;
    if (suspects[end].heavy_only && !heavy)
        return POLICY_SHAPE_NONE;
    return suspects[end].shape;
}

policy_held_t policy_shape_settle(policy_shape_t held, policy_attempt_end_t next, int heavy)
{
    if (next == POLICY_END_NEUTRAL)
        return POLICY_HELD_KEEP;
    if (held != POLICY_SHAPE_NONE && policy_shape_suspect(next, heavy) == held)
        return POLICY_HELD_REQUEST;
    return POLICY_HELD_ENDPOINT;
}

int policy_shape_unread(const wire_rpc_error_t *err)
{
    return err->has_code && (err->code == -32700 || err->code == -32600);
}
