/* config/cfg_int.h: the pieces cfg*.c share. Not for other
 * folders.
 *
 * Loading is two layers. cfg_yaml.c turns YAML text into a libyaml
 * document and offers typed readers over its nodes (strings with ${ENV}
 * expanded, bounded integers, booleans, enums, lists) plus a table-driven
 * mapping decoder; every reader reports its own problems, with line and
 * path, into the error list and the caller carries on, so one pass finds
 * every error. cfg.c and cfg_net.c hold the key tables and the
 * checks that span several keys. */
#ifndef CFG_INT_H
#define CFG_INT_H

#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#include "base/sl_buf.h"
#include "config/cfg.h"

typedef struct cfg_loader {
    yaml_document_t *doc;
    cfg_errors_t *errs;
    sl_buf_t path;            /* where the decoder is: "networks.eth.endpoints[1]" */
    yaml_node_t *methods;     /* a network's methods: node, decoded once its chain is known */
} cfg_loader_t;

typedef enum cfg_type {
    CFG_STR,               /* char *, heap, ${ENV} expanded; replaces (frees) a default */
    CFG_U32,               /* uint32_t within [min, max] */
    CFG_U64,               /* uint64_t within [min, max] */
    CFG_SIZE,              /* size_t within [min, max] */
    CFG_BOOL,              /* int, 0 or 1 */
    CFG_DOUBLE,            /* double, a plain decimal in [0, 1000] (weights) */
    CFG_FN,                /* fn decodes the value itself */
} cfg_type_t;

/* Decodes node into the struct the table is about (not into a field: such
 * values usually fill or check several fields). */
typedef void (*cfg_fn_t)(cfg_loader_t *c, yaml_node_t *node, void *target);

typedef struct cfg_field {
    const char *key;          /* first member: cfg_suggest() reads tables of these */
    cfg_type_t type;
    size_t offset;            /* of the field in the target struct; not for CFG_FN */
    uint64_t min, max;        /* integers: accepted range, inclusive */
    cfg_fn_t fn;           /* CFG_FN only */
    int required;
} cfg_field_t;

/* ---- cfg_yaml.c ---- */

/* Parses yaml into doc. On failure reports one error (libyaml's problem, an
 * empty file, several documents) into errs and returns SL_ERR_CONFIG with
 * doc already freed. */
SL_MUST_CHECK sl_err_t cfg_yaml_load(const char *yaml, size_t len, yaml_document_t *doc,
                                        cfg_errors_t *errs);

/* Appends one error; the message and path are scrubbed of registered secrets.
 * Past CFG_MAX_ERRORS it adds a last "too many errors" entry and drops the rest. */
void cfg_errors_add(cfg_errors_t *errs, int line, const char *path, const char *msg);
void cfg_loader_error(cfg_loader_t *c, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Path steps; each push returns the mark to pop back to. */
size_t cfg_push(cfg_loader_t *c, const char *key);
size_t cfg_push_index(cfg_loader_t *c, size_t i);
void cfg_pop(cfg_loader_t *c, size_t mark);

yaml_node_t *cfg_node(cfg_loader_t *c, int id);
int cfg_line(const yaml_node_t *n);   /* 1-based */
int cfg_is_null(const yaml_node_t *n);
const char *cfg_kind(const yaml_node_t *n);   /* "a mapping", "a list", ... */

/* The pairs of a mapping (a null node is an empty one). Reports a node of
 * another kind, a key that is not a string and a repeated key; returns the
 * number of pairs, 0 after an error. */
size_t cfg_pairs(cfg_loader_t *c, yaml_node_t *n, yaml_node_pair_t **pairs);
/* The items of a list (a null node is an empty one); as cfg_pairs. */
size_t cfg_items(cfg_loader_t *c, yaml_node_t *n, yaml_node_item_t **items);
/* A key's text (keys are never expanded); NULL if the key is not a scalar. */
const char *cfg_key(cfg_loader_t *c, const yaml_node_pair_t *pair);
/* The value under key in a mapping node, NULL if absent. */
yaml_node_t *cfg_get(cfg_loader_t *c, yaml_node_t *map, const char *key);

/* Scalar readers: on error report it (line of n, current path) and return
 * non-SL_OK; out is untouched then. */
SL_MUST_CHECK sl_err_t cfg_str(cfg_loader_t *c, yaml_node_t *n, char **out);
SL_MUST_CHECK sl_err_t cfg_uint(cfg_loader_t *c, yaml_node_t *n, uint64_t min, uint64_t max, uint64_t *out);
SL_MUST_CHECK sl_err_t cfg_bool(cfg_loader_t *c, yaml_node_t *n, int *out);
/* One of names[0..count) (an array of const char *); *out = its index. */
SL_MUST_CHECK sl_err_t cfg_enum(cfg_loader_t *c, yaml_node_t *n, const char *const *names, size_t count, int *out);
/* A list of strings, each accepted by check (returns why not, or NULL; may
 * be NULL itself). An explicit [] gives a non-NULL empty array. */
SL_MUST_CHECK sl_err_t cfg_str_list(cfg_loader_t *c, yaml_node_t *n, const char *(*check)(const char *s),
                                       char ***out, size_t *count);

/* Decodes mapping n against fields into target. Reports unknown keys (with a
 * did-you-mean), wrong types, values out of range and missing required keys.
 * Returns a mask of the fields present (bit i for fields[i]; at most 64). */
uint64_t cfg_map_decode(cfg_loader_t *c, yaml_node_t *n, const cfg_field_t *fields, size_t nfields, void *target);

/* The closest candidate to word by edit distance (at most 2), or NULL.
 * Candidates are count records of stride bytes, each starting with a
 * const char * (a cfg_field_t table, or an array of names). */
const char *cfg_suggest(const char *word, const void *cands, size_t count, size_t stride);

void cfg_strv_free(char **v, size_t n);

/* ---- cfg_env.c ---- */

/* Expands ${NAME}, ${NAME:-default} (default when unset or empty) and $$ in
 * s[0..n) into *out (heap). Every substituted text is registered with
 * sl_secret_add_n. On failure appends the reason to why (never a secret) and
 * returns SL_ERR_NOT_FOUND (unset variable) or SL_ERR_PARSE. */
SL_MUST_CHECK sl_err_t cfg_env_expand(const char *s, size_t n, char **out, sl_buf_t *why);

/* ---- cfg_extra.c ---- */

/* Copies eps[0..n) into doc's networks (merged / skipped filled); an entry
 * that is not a JSON object, or holds "${", is an error in errs. */
void cfg_extra_merge(yaml_document_t *doc, cfg_extra_ep_t *eps, size_t n, cfg_errors_t *errs);
/* Sets from_api on cfg's endpoints that eps merged. */
void cfg_extra_mark(cfg_t *cfg, const cfg_extra_ep_t *eps, size_t n);

/* ---- cfg_net.c ---- */

/* CFG_FN for the top-level "networks" key; target is the cfg_t. */
void cfg_networks(cfg_loader_t *c, yaml_node_t *node, void *target);
void cfg_network_dispose(pool_network_conf_t *net);

/* ---- cfg_hedge.c ---- */

/* CFG_FN for a network's hedge: and coalesce: keys; target is the
 * pool_network_conf_t. */
void cfg_net_hedge(cfg_loader_t *c, yaml_node_t *node, void *target);
void cfg_net_coalesce(cfg_loader_t *c, yaml_node_t *node, void *target);

/* ---- cfg.c ---- */

/* 1 if s[0..n) has only characters of set (and no NUL). */
int cfg_all_chars(const char *s, size_t n, const char *set);
/* Reads a listen address into *slot; "off" gives NULL where allow_off. */
void cfg_read_listen(cfg_loader_t *c, yaml_node_t *n, char **slot, int allow_off);
/* The CPUs online (1..256): server.workers' default. */
uint32_t cfg_online_cpus(void);
/* cfg_server.c: the server: section, decoded and checked into cfg->server. */
void cfg_section_server(cfg_loader_t *c, yaml_node_t *n, void *target);

/* ---- cfg_keys.c ---- */

/* CFG_FN for the top-level tiers: and keys: keys; target is the cfg_t. */
void cfg_tiers(cfg_loader_t *c, yaml_node_t *node, void *target);
void cfg_read_keys(cfg_loader_t *c, yaml_node_t *node, void *target);
/* CFG_FN for the top-level access: key; target is the cfg_t. */
void cfg_read_access(cfg_loader_t *c, yaml_node_t *node, void *target);
/* CFG_FN for a key's networks:, methods:, contracts: and origins:; target
 * is the cfg_key_conf_t. */
void cfg_key_networks(cfg_loader_t *c, yaml_node_t *node, void *target);
void cfg_key_methods(cfg_loader_t *c, yaml_node_t *node, void *target);
void cfg_key_contracts(cfg_loader_t *c, yaml_node_t *node, void *target);
void cfg_key_origins(cfg_loader_t *c, yaml_node_t *node, void *target);
/* Its networks name configured networks (errors at the list's line). */
void cfg_key_scope_check(cfg_loader_t *c, const cfg_t *cfg, const cfg_key_conf_t *k);
/* Frees what a key's scope holds (cfg_destroy). */
void cfg_key_scope_dispose(policy_access_scope_t *s);
/* After parsing: finds the anonymous tier and each key's tier (an unknown
 * tier is an error), and refuses a key hash listed twice. */
void cfg_check_keys(cfg_loader_t *c, cfg_t *cfg);

/* ---- cfg_chain.c ---- */

/* The chain view's keys (chain_id, genesis_hash, max_lag_blocks,
 * max_lag_slots, max_logs_split, consensus; an endpoint's max_logs_blocks).
 * Defaults are set before a network's (an endpoint's) keys are decoded;
 * cfg_net_chain_check runs after all of a network's keys, since what is
 * valid depends on its chain, its endpoints and its methods:. */
void cfg_net_chain_defaults(pool_network_conf_t *net);
void cfg_ep_chain_defaults(pool_endpoint_conf_t *ep);
/* CFG_FN for chain_id:, genesis_hash: and consensus:; target is the pool_network_conf_t. */
void cfg_net_chain_id(cfg_loader_t *c, yaml_node_t *node, void *target);
void cfg_net_genesis_hash(cfg_loader_t *c, yaml_node_t *node, void *target);
void cfg_net_consensus(cfg_loader_t *c, yaml_node_t *node, void *target);
/* n is the network's mapping node. */
void cfg_net_chain_check(cfg_loader_t *c, yaml_node_t *n, pool_network_conf_t *net);
void cfg_net_chain_dispose(pool_network_conf_t *net);

/* ---- cfg_route.c ---- */

/* CFG_FN for an endpoint's methods: key (allow / deny globs); target is the
 * pool_endpoint_conf_t. */
void cfg_ep_methods(cfg_loader_t *c, yaml_node_t *n, void *target);
/* CFG_FN for archive: (a policy_archive_t; unset stays POLICY_ARCHIVE_UNKNOWN). */
void cfg_ep_archive(cfg_loader_t *c, yaml_node_t *n, void *target);
void cfg_ep_route_dispose(pool_endpoint_conf_t *ep);

/* ---- cfg_pressure.c ---- */

/* CFG_FN for a network's pressure: key; target is the pool_network_conf_t. */
void cfg_net_pressure(cfg_loader_t *c, yaml_node_t *node, void *target);

/* ---- cfg_tls.c ---- */

/* CFG_FN for server.tls; target is the cfg_server_conf_t. Loads the
 * files (an error names the file, never its content). */
void cfg_server_tls(cfg_loader_t *c, yaml_node_t *node, void *target);
void cfg_tls_dispose(cfg_tls_conf_t *tls);

/* ---- cfg_cache.c ---- */

/* CFG_FN for the top-level "cache" key; target is the cfg_t. */
void cfg_read_cache(cfg_loader_t *c, yaml_node_t *node, void *target);
/* cache.path's default, once state.path is known; a cache.path that is the
 * state folder is refused. */
void cfg_cache_finish(cfg_loader_t *c, yaml_node_t *root, cfg_t *cfg);

/* ---- cfg_cluster.c ---- */

/* CFG_FN for the top-level "cluster" key; target is the cfg_t. */
void cfg_read_cluster(cfg_loader_t *c, yaml_node_t *node, void *target);
void cfg_cluster_dispose(state_cluster_conf_t *cl);
/* Parses redis://[[user]:password@]host[:port][/db] into out (redis_host,
 * port, user, password, db, url_shown); returns why it is malformed (never
 * quoting it), or NULL. The password is registered as a secret first. */
const char *cfg_cluster_url_parse(const char *url, state_cluster_conf_t *out);

#endif
