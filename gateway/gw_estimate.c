/* gateway/gw_estimate.c: recent answer sizes per caller and method (the
 * rule is in gw_estimate.h). */
#include "gateway/gw_estimate.h"

#include <stdlib.h>

#include "base/sl_buf.h"
#include "base/sl_hash.h"

typedef struct seen {
    uint64_t key;                 /* the pair hashed; 0: empty */
    size_t bytes;                 /* the decaying largest answer */
} seen_t;

struct gw_estimate {
    size_t scan_default;
    seen_t slots[GW_ESTIMATE_SLOTS];
};

static uint64_t key_of(const char *ident, const char *name)
{
    uint64_t h = sl_fnv1a_str(SL_FNV1A_OFFSET, ident);
    h = sl_fnv1a_str(h ^ 0x2f, name); /* a separator: "ab"+"c" is not "a"+"bc" */
    return h | 1;
}

gw_estimate_t *gw_estimate_create(size_t scan_default)
{
    gw_estimate_t *t = sl_xcalloc(1, sizeof(*t));
    t->scan_default = scan_default;
    return t;
}

void gw_estimate_destroy(gw_estimate_t *t)
{
    free(t);
}

size_t gw_estimate_get(const gw_estimate_t *t, const char *ident, const char *name, const policy_method_t *m)
{
    uint64_t k = key_of(ident, name);
    const seen_t *s = &t->slots[k % GW_ESTIMATE_SLOTS];
    if (s->key == k)
        return s->bytes;
    int scan = m != NULL && m->cls == POLICY_CLASS_READ && m->priority == POLICY_PRIO_LOW;
    return scan ? t->scan_default : GW_ESTIMATE_SMALL;
}

void gw_estimate_put(gw_estimate_t *t, const char *ident, const char *name, size_t bytes)
{
    uint64_t k = key_of(ident, name);
    seen_t *s = &t->slots[k % GW_ESTIMATE_SLOTS];
    if (s->key != k)
        *s = (seen_t){k, bytes};
    else
        s->bytes = bytes > s->bytes - s->bytes / 4 ? bytes : s->bytes - s->bytes / 4;
}
