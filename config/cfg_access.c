/* config/cfg_access.c: the access: section and a key's scope (issue 33):
 * networks, methods (allow / deny globs), contracts and origins under each
 * entry of keys:, read into its policy_access_scope_t (policy/access.h).
 * Networks are checked against networks: in cfg_check_keys, once both are read. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/cfg_int.h"

#define NFIELDS(t) (sizeof(t) / sizeof((t)[0]))

static const char *const anonymous_words[] = {"allow", "deny"};

static void access_anonymous(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    int v = 0;
    if (cfg_enum(c, n, anonymous_words, NFIELDS(anonymous_words), &v) == SL_OK)
        ((cfg_t *)target)->anonymous_deny = v;
}

static const cfg_field_t access_fields[] = {
    {"anonymous", CFG_FN, .fn = access_anonymous},
};

void cfg_read_access(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    cfg_map_decode(c, n, access_fields, NFIELDS(access_fields), target);
}

/* A list that must not be empty: [] would leave the key nothing. */
static int read_list(cfg_loader_t *c, yaml_node_t *n, const char *(*check)(const char *s), char ***out,
                     size_t *count)
{
    char **v = NULL;
    size_t nv = 0;
    if (cfg_str_list(c, n, check, &v, &nv) != SL_OK)
        return 0;
    if (nv == 0) {
        cfg_loader_error(c, cfg_line(n), "an empty list allows nothing: leave the key out to allow all");
        cfg_strv_free(v, nv);
        return 0;
    }
    cfg_strv_free(*out, *count);
    *out = v;
    *count = nv;
    return 1;
}

void cfg_key_networks(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    cfg_key_conf_t *k = target;
    k->networks_line = cfg_line(n);
    (void)read_list(c, n, NULL, &k->scope.networks, &k->scope.nnetworks);
}

static void methods_allow(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    policy_access_scope_t *s = target;
    (void)read_list(c, n, policy_access_glob_problem, &s->allow, &s->nallow);
}

static void methods_deny(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    policy_access_scope_t *s = target;
    (void)read_list(c, n, policy_access_glob_problem, &s->deny, &s->ndeny);
}

static const cfg_field_t methods_fields[] = {
    {"allow", CFG_FN, .fn = methods_allow},
    {"deny", CFG_FN, .fn = methods_deny},
};

void cfg_key_methods(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    cfg_key_conf_t *k = target;
    cfg_map_decode(c, n, methods_fields, NFIELDS(methods_fields), &k->scope);
}

static const char *address_check(const char *s)
{
    uint8_t a[20];
    return policy_access_parse_address(s, strlen(s), a) ? NULL
                                                         : "a contract must be an address: 0x and 40 hex digits";
}

void cfg_key_contracts(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    cfg_key_conf_t *k = target;
    char **v = NULL;
    size_t nv = 0;
    if (!read_list(c, n, address_check, &v, &nv))
        return;
    free(k->scope.contracts);
    k->scope.contracts = sl_xcalloc(nv, sizeof(*k->scope.contracts));
    for (size_t i = 0; i < nv; i++)
        (void)policy_access_parse_address(v[i], strlen(v[i]), k->scope.contracts[i]);
    k->scope.ncontracts = nv;
    cfg_strv_free(v, nv);
}

void cfg_key_origins(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    cfg_key_conf_t *k = target;
    (void)read_list(c, n, policy_access_origin_problem, &k->scope.origins, &k->scope.norigins);
}

void cfg_key_scope_check(cfg_loader_t *c, const cfg_t *cfg, const cfg_key_conf_t *k)
{
    for (size_t i = 0; i < k->scope.nnetworks; i++) {
        const char *name = k->scope.networks[i];
        if (cfg_network(cfg, name, strlen(name)) != NULL)
            continue;
        size_t mark = cfg_push(c, "networks");
        cfg_push_index(c, i);
        cfg_loader_error(c, k->networks_line, "unknown network '%s' (a name under networks:)", name);
        cfg_pop(c, mark);
    }
}

void cfg_key_scope_dispose(policy_access_scope_t *s)
{
    cfg_strv_free(s->networks, s->nnetworks);
    cfg_strv_free(s->allow, s->nallow);
    cfg_strv_free(s->deny, s->ndeny);
    cfg_strv_free(s->origins, s->norigins);
    free(s->contracts);
    memset(s, 0, sizeof(*s));
}
