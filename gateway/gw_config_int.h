/* gateway/gw_config_int.h: the pieces gw_config*.c share. Not for other
 * folders.
 *
 * Loading is two layers. gw_config_yaml.c turns YAML text into a libyaml
 * document and offers typed readers over its nodes (strings with ${ENV}
 * expanded, bounded integers, booleans, enums, lists) plus a table-driven
 * mapping decoder; every reader reports its own problems, with line and
 * path, into the error list and the caller carries on, so one pass finds
 * every error. gw_config.c and gw_config_net.c hold the key tables and the
 * checks that span several keys. */
#ifndef GW_CONFIG_INT_H
#define GW_CONFIG_INT_H

#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#include "base/sl_buf.h"
#include "gateway/gw_config.h"

typedef struct gw_cfg {
    yaml_document_t *doc;
    gw_config_errors_t *errs;
    sl_buf_t path;            /* where the decoder is: "networks.eth.endpoints[1]" */
    yaml_node_t *methods;     /* a network's methods: node, decoded once its chain is known */
} gw_cfg_t;

typedef enum gw_cfg_type {
    GW_CFG_STR,               /* char *, heap, ${ENV} expanded; replaces (frees) a default */
    GW_CFG_U32,               /* uint32_t within [min, max] */
    GW_CFG_U64,               /* uint64_t within [min, max] */
    GW_CFG_SIZE,              /* size_t within [min, max] */
    GW_CFG_BOOL,              /* int, 0 or 1 */
    GW_CFG_DOUBLE,            /* double, a plain decimal in [0, 1000] (weights) */
    GW_CFG_FN,                /* fn decodes the value itself */
} gw_cfg_type_t;

/* Decodes node into the struct the table is about (not into a field: such
 * values usually fill or check several fields). */
typedef void (*gw_cfg_fn_t)(gw_cfg_t *c, yaml_node_t *node, void *target);

typedef struct gw_cfg_field {
    const char *key;          /* first member: gw_cfg_suggest() reads tables of these */
    gw_cfg_type_t type;
    size_t offset;            /* of the field in the target struct; not for GW_CFG_FN */
    uint64_t min, max;        /* integers: accepted range, inclusive */
    gw_cfg_fn_t fn;           /* GW_CFG_FN only */
    int required;
} gw_cfg_field_t;

/* ---- gw_config_yaml.c ---- */

/* Parses yaml into doc. On failure reports one error (libyaml's problem, an
 * empty file, several documents) into errs and returns SL_ERR_CONFIG with
 * doc already freed. */
SL_MUST_CHECK sl_err_t gw_cfg_yaml_load(const char *yaml, size_t len, yaml_document_t *doc,
                                        gw_config_errors_t *errs);

/* Appends one error; the message and path are scrubbed of registered secrets.
 * Past GW_MAX_ERRORS it adds a last "too many errors" entry and drops the rest. */
void gw_cfg_errors_add(gw_config_errors_t *errs, int line, const char *path, const char *msg);
void gw_cfg_error(gw_cfg_t *c, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Path steps; each push returns the mark to pop back to. */
size_t gw_cfg_push(gw_cfg_t *c, const char *key);
size_t gw_cfg_push_index(gw_cfg_t *c, size_t i);
void gw_cfg_pop(gw_cfg_t *c, size_t mark);

yaml_node_t *gw_cfg_node(gw_cfg_t *c, int id);
int gw_cfg_line(const yaml_node_t *n);   /* 1-based */
int gw_cfg_is_null(const yaml_node_t *n);
const char *gw_cfg_kind(const yaml_node_t *n);   /* "a mapping", "a list", ... */

/* The pairs of a mapping (a null node is an empty one). Reports a node of
 * another kind, a key that is not a string and a repeated key; returns the
 * number of pairs, 0 after an error. */
size_t gw_cfg_pairs(gw_cfg_t *c, yaml_node_t *n, yaml_node_pair_t **pairs);
/* The items of a list (a null node is an empty one); as gw_cfg_pairs. */
size_t gw_cfg_items(gw_cfg_t *c, yaml_node_t *n, yaml_node_item_t **items);
/* A key's text (keys are never expanded); NULL if the key is not a scalar. */
const char *gw_cfg_key(gw_cfg_t *c, const yaml_node_pair_t *pair);
/* The value under key in a mapping node, NULL if absent. */
yaml_node_t *gw_cfg_get(gw_cfg_t *c, yaml_node_t *map, const char *key);

/* Scalar readers: on error report it (line of n, current path) and return
 * non-SL_OK; out is untouched then. */
SL_MUST_CHECK sl_err_t gw_cfg_str(gw_cfg_t *c, yaml_node_t *n, char **out);
SL_MUST_CHECK sl_err_t gw_cfg_uint(gw_cfg_t *c, yaml_node_t *n, uint64_t min, uint64_t max, uint64_t *out);
SL_MUST_CHECK sl_err_t gw_cfg_bool(gw_cfg_t *c, yaml_node_t *n, int *out);
/* One of names[0..count) (an array of const char *); *out = its index. */
SL_MUST_CHECK sl_err_t gw_cfg_enum(gw_cfg_t *c, yaml_node_t *n, const char *const *names, size_t count, int *out);
/* A list of strings, each accepted by check (returns why not, or NULL; may
 * be NULL itself). An explicit [] gives a non-NULL empty array. */
SL_MUST_CHECK sl_err_t gw_cfg_str_list(gw_cfg_t *c, yaml_node_t *n, const char *(*check)(const char *s),
                                       char ***out, size_t *count);

/* Decodes mapping n against fields into target. Reports unknown keys (with a
 * did-you-mean), wrong types, values out of range and missing required keys.
 * Returns a mask of the fields present (bit i for fields[i]; at most 64). */
uint64_t gw_cfg_map_decode(gw_cfg_t *c, yaml_node_t *n, const gw_cfg_field_t *fields, size_t nfields, void *target);

/* The closest candidate to word by edit distance (at most 2), or NULL.
 * Candidates are count records of stride bytes, each starting with a
 * const char * (a gw_cfg_field_t table, or an array of names). */
const char *gw_cfg_suggest(const char *word, const void *cands, size_t count, size_t stride);

void gw_cfg_strv_free(char **v, size_t n);

/* ---- gw_config_env.c ---- */

/* Expands ${NAME}, ${NAME:-default} (default when unset or empty) and $$ in
 * s[0..n) into *out (heap). Every substituted text is registered with
 * sl_secret_add_n. On failure appends the reason to why (never a secret) and
 * returns SL_ERR_NOT_FOUND (unset variable) or SL_ERR_PARSE. */
SL_MUST_CHECK sl_err_t gw_env_expand(const char *s, size_t n, char **out, sl_buf_t *why);

/* ---- gw_config_net.c ---- */

/* GW_CFG_FN for the top-level "networks" key; target is the gw_config_t. */
void gw_cfg_networks(gw_cfg_t *c, yaml_node_t *node, void *target);
void gw_cfg_network_dispose(pool_network_conf_t *net);

/* ---- gw_config_hedge.c ---- */

/* GW_CFG_FN for a network's hedge: and coalesce: keys; target is the
 * pool_network_conf_t. */
void gw_cfg_net_hedge(gw_cfg_t *c, yaml_node_t *node, void *target);
void gw_cfg_net_coalesce(gw_cfg_t *c, yaml_node_t *node, void *target);

/* ---- gw_config.c ---- */

/* 1 if s[0..n) has only characters of set (and no NUL). */
int gw_cfg_all_chars(const char *s, size_t n, const char *set);

/* ---- gw_config_keys.c ---- */

/* GW_CFG_FN for the top-level tiers: and keys: keys; target is the gw_config_t. */
void gw_cfg_tiers(gw_cfg_t *c, yaml_node_t *node, void *target);
void gw_cfg_keys(gw_cfg_t *c, yaml_node_t *node, void *target);
/* After parsing: finds the anonymous tier and each key's tier (an unknown
 * tier is an error), and refuses a key hash listed twice. */
void gw_cfg_check_keys(gw_cfg_t *c, gw_config_t *cfg);

/* ---- gw_config_chain.c ---- */

/* The chain view's keys (chain_id, genesis_hash, max_lag_blocks,
 * max_lag_slots, max_logs_split, consensus; an endpoint's max_logs_blocks).
 * Defaults are set before a network's (an endpoint's) keys are decoded;
 * gw_cfg_net_chain_check runs after all of a network's keys, since what is
 * valid depends on its chain, its endpoints and its methods:. */
void gw_cfg_net_chain_defaults(pool_network_conf_t *net);
void gw_cfg_ep_chain_defaults(pool_endpoint_conf_t *ep);
/* GW_CFG_FN for chain_id:, genesis_hash: and consensus:; target is the pool_network_conf_t. */
void gw_cfg_net_chain_id(gw_cfg_t *c, yaml_node_t *node, void *target);
void gw_cfg_net_genesis_hash(gw_cfg_t *c, yaml_node_t *node, void *target);
void gw_cfg_net_consensus(gw_cfg_t *c, yaml_node_t *node, void *target);
/* n is the network's mapping node. */
void gw_cfg_net_chain_check(gw_cfg_t *c, yaml_node_t *n, pool_network_conf_t *net);
void gw_cfg_net_chain_dispose(pool_network_conf_t *net);

/* ---- gw_config_pressure.c ---- */

/* GW_CFG_FN for a network's pressure: key; target is the pool_network_conf_t. */
void gw_cfg_net_pressure(gw_cfg_t *c, yaml_node_t *node, void *target);

/* ---- gw_config_tls.c ---- */

/* GW_CFG_FN for server.tls; target is the gw_server_conf_t. Loads the
 * files (an error names the file, never its content). */
void gw_cfg_server_tls(gw_cfg_t *c, yaml_node_t *node, void *target);
void gw_cfg_tls_dispose(gw_tls_conf_t *tls);

/* ---- gw_config_cache.c ---- */

/* GW_CFG_FN for the top-level "cache" key; target is the gw_config_t. */
void gw_cfg_cache(gw_cfg_t *c, yaml_node_t *node, void *target);
/* cache.path's default, once state.path is known; a cache.path that is the
 * state folder is refused. */
void gw_cfg_cache_finish(gw_cfg_t *c, yaml_node_t *root, gw_config_t *cfg);

/* ---- gw_config_cluster.c ---- */

/* GW_CFG_FN for the top-level "cluster" key; target is the gw_config_t. */
void gw_cfg_cluster(gw_cfg_t *c, yaml_node_t *node, void *target);
void gw_cfg_cluster_dispose(state_cluster_conf_t *cl);
/* Parses redis://[[user]:password@]host[:port][/db] into out (redis_host,
 * port, user, password, db, url_shown); returns why it is malformed (never
 * quoting it), or NULL. The password is registered as a secret first. */
const char *gw_cluster_url_parse(const char *url, state_cluster_conf_t *out);

#endif
