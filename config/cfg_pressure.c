/* config/cfg_pressure.c: a network's pressure: section (the level's
 * thresholds, the shed order, merged polls, the identity's share).
 *
 *   pressure: { elevated: 0.6, critical: 0.85, shed: { low: elevated }, identity_share: 0.5, ... }
 *
 * The defaults (POLICY_PRESSURE_DEFAULTS) are set before this runs. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "config/cfg_int.h"

#define NFIELDS(t) (sizeof(t) / sizeof((t)[0]))

/* pressure: { elevated: 0.6, critical: 0.85, shed: { low: elevated }, ... } */
typedef struct pressure_yaml {
    policy_pressure_conf_t conf;
    int shed_writes;              /* shed_writes_at_critical: shorthand for shed.high: critical */
    int shed_high_given;          /* shed: named high itself */
} pressure_yaml_t;

static const char *const shed_priorities[] = {"low", "normal", "high", "critical"};

static void pr_shed(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    pressure_yaml_t *p = target;
    yaml_node_pair_t *pairs;
    size_t np = cfg_pairs(c, n, &pairs);
    for (size_t i = 0; i < np; i++) {
        const char *key = cfg_key(c, &pairs[i]);
        if (key == NULL)
            continue;
        size_t mark = cfg_push(c, key);
        int line = cfg_line(cfg_node(c, pairs[i].key));
        int prio = policy_priority_parse(key);
        char *v = NULL;
        if (prio < 0) {
            const char *guess = cfg_suggest(key, shed_priorities, NFIELDS(shed_priorities), sizeof(char *));
            cfg_loader_error(c, line, "unknown priority '%s' (low, normal, high)%s%s%s", key, guess ? "; did you mean '" : "",
                         guess ? guess : "", guess ? "'?" : "");
        } else if (prio == POLICY_PRIO_CRITICAL) {
            cfg_loader_error(c, line, "priority critical (confirmation polls) is never shed");
        } else if (cfg_str(c, cfg_node(c, pairs[i].value), &v) == SL_OK) {
            int at = policy_pressure_level_parse(v);
            if (at <= POLICY_PRESSURE_OK)
                cfg_loader_error(c, cfg_line(cfg_node(c, pairs[i].value)),
                             "a priority is shed at elevated, at critical, or never (got '%s')", v);
            else
                p->conf.shed[prio] = (uint8_t)at;
            p->shed_high_given |= prio == POLICY_PRIO_HIGH;
        }
        free(v);
        cfg_pop(c, mark);
    }
}

#define PR(field) offsetof(pressure_yaml_t, conf.field)
static const cfg_field_t pressure_fields[] = {
    {"enabled", CFG_BOOL, PR(enabled)},
    {"elevated", CFG_DOUBLE, PR(elevated)},
    {"critical", CFG_DOUBLE, PR(critical)},
    {"hysteresis", CFG_DOUBLE, PR(hysteresis)},
    {"hold_ms", CFG_U32, PR(hold_ms), 0, 600000},
    {"rise_ms", CFG_U32, PR(rise_ms), 0, 60000},
    {"slow_factor", CFG_DOUBLE, PR(slow_factor)},
    {"slow_min_ms", CFG_U32, PR(slow_min_ms), 0, 600000},
    {"refusal_ratio", CFG_DOUBLE, PR(refusal_ratio)},
    {"window_ms", CFG_U32, PR(window_ms), 1000, 600000},
    {"min_samples", CFG_U32, PR(min_samples), 1, 1000000},
    {"shed", CFG_FN, .fn = pr_shed},
    {"shed_writes_at_critical", CFG_BOOL, offsetof(pressure_yaml_t, shed_writes)},
    {"retry_after_ms", CFG_U32, PR(retry_after_ms), 1, 600000},
    {"merge_window_ms", CFG_U32, PR(merge_window_ms), 0, 1000},
    {"identity_share", CFG_DOUBLE, PR(identity_share)},
};
#undef PR

void cfg_net_pressure(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    policy_pressure_conf_t *conf = &((pool_network_conf_t *)target)->pressure;
    pressure_yaml_t p = {.conf = *conf};
    cfg_map_decode(c, n, pressure_fields, NFIELDS(pressure_fields), &p);
    int line = cfg_line(n);
    if (!(p.conf.elevated > 0 && p.conf.elevated < p.conf.critical))
        cfg_loader_error(c, line, "pressure: 0 < elevated < critical is required (got %g and %g)", p.conf.elevated,
                     p.conf.critical);
    if (p.conf.hysteresis >= p.conf.elevated)
        cfg_loader_error(c, line, "pressure.hysteresis (%g) must be below pressure.elevated (%g)", p.conf.hysteresis,
                     p.conf.elevated);
    if (p.conf.slow_factor < 1)
        cfg_loader_error(c, line, "pressure.slow_factor (%g) must be at least 1", p.conf.slow_factor);
    if (!(p.conf.refusal_ratio > 0 && p.conf.refusal_ratio <= 1))
        cfg_loader_error(c, line, "pressure.refusal_ratio (%g) must be in (0, 1]", p.conf.refusal_ratio);
    if (!(p.conf.identity_share > 0 && p.conf.identity_share <= 1))
        cfg_loader_error(c, line, "pressure.identity_share (%g) must be in (0, 1] (1: no identity shares)",
                     p.conf.identity_share);
    if (p.shed_writes) {
        if (p.shed_high_given && p.conf.shed[POLICY_PRIO_HIGH] != POLICY_PRESSURE_CRITICAL)
            cfg_loader_error(c, line, "pressure.shed_writes_at_critical: true contradicts pressure.shed.high: %s",
                         policy_pressure_level_name((policy_pressure_level_t)p.conf.shed[POLICY_PRIO_HIGH]));
        p.conf.shed[POLICY_PRIO_HIGH] = POLICY_PRESSURE_CRITICAL;
    }
    *conf = p.conf;
}
