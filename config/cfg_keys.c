/* config/cfg_keys.c: the top-level tiers: and keys: sections (client
 * rate-limit tiers, API keys by their SHA-256) and the checks across them. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sl_secret.h"
#include "config/cfg_int.h"

#define NFIELDS(t) (sizeof(t) / sizeof((t)[0]))

static const cfg_field_t tier_fields[] = {
    {"per_second", CFG_U32, offsetof(cfg_limit_conf_t, per_second), 0, UINT32_MAX},
    {"per_minute", CFG_U32, offsetof(cfg_limit_conf_t, per_minute), 0, UINT32_MAX},
    {"per_day", CFG_U32, offsetof(cfg_limit_conf_t, per_day), 0, UINT32_MAX},
};

static const char name_chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-";

void cfg_tiers(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    cfg_t *cfg = target;
    yaml_node_pair_t *pairs;
    size_t np = cfg_pairs(c, n, &pairs);
    cfg->tiers = sl_xcalloc(np + 1, sizeof(*cfg->tiers));
    for (size_t i = 0; i < np; i++) {
        const char *name = cfg_key(c, &pairs[i]);
        if (name == NULL)
            continue;
        size_t mark = cfg_push(c, name);
        yaml_node_t *v = cfg_node(c, pairs[i].value);
        if (strlen(name) > 32 || !cfg_all_chars(name, strlen(name), name_chars) || name[0] == '\0')
            cfg_loader_error(c, cfg_line(cfg_node(c, pairs[i].key)), "tier name must be 1-32 of [A-Za-z0-9_-]");
        cfg_tier_conf_t *t = &cfg->tiers[cfg->ntiers++];
        t->name = sl_xstrdup(name);
        t->yaml_line = cfg_line(v);
        cfg_map_decode(c, v, tier_fields, NFIELDS(tier_fields), &t->limits);
        cfg_pop(c, mark);
    }
}

static void key_sha256(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    cfg_key_conf_t *k = target;
    char *s = NULL;
    if (cfg_str(c, n, &s) != SL_OK)
        return;
    sl_secret_add(s);
    if (strlen(s) != 64 || !cfg_all_chars(s, 64, "0123456789abcdefABCDEF")) {
        cfg_loader_error(c, cfg_line(n), "sha256 must be 64 hex characters (the SHA-256 of the key)");
    } else {
        for (size_t i = 0; i < 64; i++)
            k->sha256[i] = (s[i] >= 'A' && s[i] <= 'F') ? (char)(s[i] + 32) : s[i];
        k->sha256[64] = '\0';
        sl_secret_add(k->sha256);   /* the form logs would show */
    }
    free(s);
}

/* per_address: the tier's three windows, held per client address under the key */
static void key_per_address(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    cfg_key_conf_t *k = target;
    k->per_address.yaml_line = cfg_line(n);
    cfg_map_decode(c, n, tier_fields, NFIELDS(tier_fields), &k->per_address.limits);
}

static const cfg_field_t credits_fields[] = {
    {"per_day", CFG_U32, offsetof(cfg_limit_conf_t, per_day), 0, UINT32_MAX},
    {"per_month", CFG_U32, offsetof(cfg_limit_conf_t, per_month), 0, UINT32_MAX},
};

/* credits: the key's budget in credit units (the cost profiles' units) */
static void key_credits(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    cfg_key_conf_t *k = target;
    k->credits.yaml_line = cfg_line(n);
    k->credits.exact = 1;
    cfg_map_decode(c, n, credits_fields, NFIELDS(credits_fields), &k->credits.limits);
}

static const cfg_field_t jwt_fields[] = {
    {"public_key_file", CFG_STR, offsetof(cfg_jwt_conf_t, public_key_file), .required = 1},
    {"audience", CFG_STR, offsetof(cfg_jwt_conf_t, audience)},
};

/* jwt: the key's calls carry a JWT it verifies (gateway/gw_jwt.c); the
 * file must be readable now (its PEM is read by each worker) */
static void key_jwt(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    cfg_key_conf_t *k = target;
    cfg_map_decode(c, n, jwt_fields, NFIELDS(jwt_fields), &k->jwt);
    FILE *f = k->jwt.public_key_file != NULL ? fopen(k->jwt.public_key_file, "r") : NULL;
    if (k->jwt.public_key_file != NULL && f == NULL)
        cfg_loader_error(c, cfg_line(n), "jwt.public_key_file '%s' cannot be read", k->jwt.public_key_file);
    if (f != NULL)
        fclose(f);
}

static const cfg_field_t key_fields[] = {
    {"sha256", CFG_FN, .fn = key_sha256, .required = 1},
    {"tier", CFG_STR, offsetof(cfg_key_conf_t, tier), .required = 1},
    {"name", CFG_STR, offsetof(cfg_key_conf_t, name), .required = 1},
    {"networks", CFG_FN, .fn = cfg_key_networks},
    {"methods", CFG_FN, .fn = cfg_key_methods},
    {"contracts", CFG_FN, .fn = cfg_key_contracts},
    {"origins", CFG_FN, .fn = cfg_key_origins},
    {"per_address", CFG_FN, .fn = key_per_address},
    {"credits", CFG_FN, .fn = key_credits},
    {"jwt", CFG_FN, .fn = key_jwt},
};

void cfg_read_keys(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    cfg_t *cfg = target;
    yaml_node_item_t *items;
    size_t ni = cfg_items(c, n, &items);
    cfg->keys = sl_xcalloc(ni + 1, sizeof(*cfg->keys));
    for (size_t i = 0; i < ni; i++) {
        cfg_key_conf_t *k = &cfg->keys[cfg->nkeys++];
        yaml_node_t *v = cfg_node(c, items[i]);
        size_t mark = cfg_push_index(c, i);
        k->yaml_line = cfg_line(v);
        cfg_map_decode(c, v, key_fields, NFIELDS(key_fields), k);
        cfg_pop(c, mark);
    }
}

/* Checks that need more than one section: keys name configured tiers, which
 * are resolved here (and the anonymous tier) so no call looks them up. */
void cfg_check_keys(cfg_loader_t *c, cfg_t *cfg)
{
    for (size_t t = 0; t < cfg->ntiers; t++)
        if (strcmp(cfg->tiers[t].name, "anonymous") == 0)
            cfg->anonymous_tier = &cfg->tiers[t];
    for (size_t i = 0; i < cfg->nkeys; i++) {
        cfg_key_conf_t *k = &cfg->keys[i];
        size_t mark = cfg_push(c, "keys");
        cfg_push_index(c, i);
        size_t t = 0;
        while (k->tier != NULL && t < cfg->ntiers && strcmp(cfg->tiers[t].name, k->tier) != 0)
            t++;
        k->tier_conf = t < cfg->ntiers ? &cfg->tiers[t] : NULL;
        if (k->tier != NULL && t == cfg->ntiers) {
            size_t at = cfg_push(c, "tier");
            const char *guess = cfg_suggest(k->tier, cfg->tiers, cfg->ntiers, sizeof(cfg->tiers[0]));
            cfg_loader_error(c, k->yaml_line, "key refers to unknown tier '%s'%s%s%s", k->tier,
                         guess != NULL ? " (did you mean '" : " (define it under tiers:)",
                         guess != NULL ? guess : "", guess != NULL ? "'?)" : "");
            cfg_pop(c, at);
        }
        for (size_t j = 0; j < i && k->sha256[0] != '\0'; j++)
            if (strcmp(cfg->keys[j].sha256, k->sha256) == 0)
                cfg_loader_error(c, k->yaml_line, "the same key hash is listed twice (first at line %d)",
                             cfg->keys[j].yaml_line);
        cfg_key_scope_check(c, cfg, k);
        cfg_pop(c, mark);
    }
}

/* ---- load ---- */
