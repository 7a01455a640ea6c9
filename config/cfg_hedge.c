/* config/cfg_hedge.c: a network's hedge: and coalesce: sections.
 *
 *   hedge:    { enabled: true, min_ms: 30, max_ms: 1000, max_ratio: 0.1, burst: 10, window_ms: 10000 }
 *   coalesce: { max_waiters: 64 }     (0: identical reads are not coalesced)
 *
 * The defaults (policy/hedge.h, pool/pool_conf.h) are set before these run. */
#include <stddef.h>

#include "config/cfg_int.h"

#define NFIELDS(t) (sizeof(t) / sizeof((t)[0]))

#define HG(field) offsetof(policy_hedge_conf_t, field)
static const cfg_field_t hedge_fields[] = {
    {"enabled", CFG_BOOL, HG(enabled)},
    {"min_ms", CFG_U32, HG(min_ms), 1, 600000},
    {"max_ms", CFG_U32, HG(max_ms), 1, 600000},
    {"max_ratio", CFG_DOUBLE, HG(max_ratio)},
    {"burst", CFG_U32, HG(burst), 0, 100000},
    {"window_ms", CFG_U32, HG(window_ms), 1000, 600000},
};
#undef HG

void cfg_net_hedge(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    policy_hedge_conf_t *h = &((pool_network_conf_t *)target)->hedge;
    cfg_map_decode(c, n, hedge_fields, NFIELDS(hedge_fields), h);
    int line = cfg_line(n);
    if (h->max_ms < h->min_ms)
        cfg_loader_error(c, line, "hedge.max_ms (%u) must be at least hedge.min_ms (%u)", h->max_ms, h->min_ms);
    if (h->max_ratio > 1)
        cfg_loader_error(c, line, "hedge.max_ratio (%g) must be in [0, 1]", h->max_ratio);
}

static const cfg_field_t coalesce_fields[] = {
    {"max_waiters", CFG_U32, offsetof(pool_network_conf_t, coalesce_max_waiters), 0, 10000},
};

void cfg_net_coalesce(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    cfg_map_decode(c, n, coalesce_fields, NFIELDS(coalesce_fields), target);
}
