/* config/cfg_route.c: where an endpoint may be sent calls: its method
 * scope (endpoints[].methods: allow / deny globs, policy_method_scope_admits
 * decides per call) and whether it keeps history (archive: true|false, unset
 * unknown; policy_blockref_archive_tier). Fills pool_endpoint_conf_t. */
#include <stdlib.h>
#include <string.h>

#include "config/cfg_int.h"
#include "policy/blockref.h"

#define NFIELDS(t) (sizeof(t) / sizeof((t)[0]))

/* policy_method_match's patterns: a name, or a prefix and one '*' at the end. */
static const char *scope_glob_check(const char *s)
{
    const char *star = strchr(s, '*');
    if (s[0] == '\0')
        return "a method pattern must not be empty";
    if (star != NULL && star[1] != '\0')
        return "a method pattern takes '*' only at its end (trace_*, debug_trace*, *)";
    return NULL;
}

static void read_globs(cfg_loader_t *c, yaml_node_t *n, char ***out, size_t *count, const char *empty)
{
    char **v = NULL;
    size_t nv = 0;
    if (cfg_str_list(c, n, scope_glob_check, &v, &nv) != SL_OK)
        return;
    if (nv == 0 && empty != NULL) {
        cfg_loader_error(c, cfg_line(n), "%s", empty);
        cfg_strv_free(v, nv);
        return;
    }
    cfg_strv_free(*out, *count);
    *out = v;
    *count = nv;
}

static void scope_allow(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    policy_method_scope_t *s = target;
    read_globs(c, n, &s->allow, &s->nallow,
               "an empty allow list serves nothing: leave allow out to serve every method");
}

static void scope_deny(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    policy_method_scope_t *s = target;
    read_globs(c, n, &s->deny, &s->ndeny, NULL);
}

static const cfg_field_t endpoint_methods_fields[] = {
    {"allow", CFG_FN, .fn = scope_allow},
    {"deny", CFG_FN, .fn = scope_deny},
};

void cfg_ep_methods(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    pool_endpoint_conf_t *ep = target;
    cfg_map_decode(c, n, endpoint_methods_fields, NFIELDS(endpoint_methods_fields), &ep->methods);
}

void cfg_ep_archive(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    pool_endpoint_conf_t *ep = target;
    int b;
    if (cfg_bool(c, n, &b) == SL_OK)
        ep->archive = b ? POLICY_ARCHIVE_YES : POLICY_ARCHIVE_NO;
}

void cfg_ep_route_dispose(pool_endpoint_conf_t *ep)
{
    cfg_strv_free(ep->methods.allow, ep->methods.nallow);
    cfg_strv_free(ep->methods.deny, ep->methods.ndeny);
}
