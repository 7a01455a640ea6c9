/* config/cfg_cache.c: the top-level cache: section (the response
 * cache, policy/cache.h and state/state_cache.h).
 *
 *   cache:
 *     enabled: true           on by default: only answers that cannot change are kept
 *     path: ./var/sluice-cache   default: the state folder's path + "-cache"
 *     max_mb: 256             the cache's LMDB map; the least recently used bytes go first
 *     unfinalized: off        head: also keep answers above finalized, keyed by block hash
 *     redis: false            true (cluster: only): the cluster's Redis as a second tier
 *     redis_ttl_s: 86400      an entry's expiry in Redis
 *     redis_wait_ms: 10       a lookup in Redis unanswered this long is a miss
 *     max_entry_kb: 1024      an answer larger than this is never kept (nor over a 64th of the map)
 *     caller_share_pct: 12    a caller inserts at most this % of the map a minute (per worker; 100: no share) */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/cfg_int.h"

#define NFIELDS(t) (sizeof(t) / sizeof((t)[0]))

static void cache_unfinalized(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    cfg_cache_conf_t *cc = target;
    char *v = NULL;
    if (cfg_str(c, n, &v) != SL_OK)
        return;
    if (strcmp(v, "off") == 0)
        cc->unfinalized = 0;
    else if (strcmp(v, "head") == 0)
        cc->unfinalized = 1;
    else
        cfg_loader_error(c, cfg_line(n), "cache.unfinalized is off or head (got '%s')", v);
    free(v);
}

static const cfg_field_t cache_fields[] = {
    {"enabled", CFG_BOOL, offsetof(cfg_cache_conf_t, enabled)},
    {"path", CFG_STR, offsetof(cfg_cache_conf_t, path)},
    {"max_mb", CFG_U32, offsetof(cfg_cache_conf_t, max_mb), 1, 1048576},
    {"unfinalized", CFG_FN, .fn = cache_unfinalized},
    {"redis", CFG_BOOL, offsetof(cfg_cache_conf_t, redis)},
    {"redis_ttl_s", CFG_U32, offsetof(cfg_cache_conf_t, redis_ttl_s), 1, 365 * 86400},
    {"redis_wait_ms", CFG_U32, offsetof(cfg_cache_conf_t, redis_wait_ms), 1, 1000},
    {"max_entry_kb", CFG_U32, offsetof(cfg_cache_conf_t, max_entry_kb), 1, 1048576},
    {"caller_share_pct", CFG_U32, offsetof(cfg_cache_conf_t, caller_share_pct), 1, 100},
};

/* Answers over this are kept on their second ask (policy/cacheadmit.h):
 * a read's few KB at once, a one-off block of logs not. */
#define CACHE_LARGE_BYTES (64u << 10)
#define CACHE_SHARE_WINDOW_MS 60000u

policy_cacheadmit_conf_t cfg_cache_admit_conf(const cfg_cache_conf_t *cc)
{
    uint64_t map = (uint64_t)cc->max_mb << 20;
    uint64_t entry = (uint64_t)cc->max_entry_kb << 10;
    return (policy_cacheadmit_conf_t){
        .max_entry = entry < map / 64 ? entry : map / 64,
        .large = CACHE_LARGE_BYTES,
        .share_bytes = cc->caller_share_pct >= 100 ? 0 : map * cc->caller_share_pct / 100,
        .window_ms = CACHE_SHARE_WINDOW_MS,
    };
}

void cfg_read_cache(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    cfg_cache_conf_t *cc = &((cfg_t *)target)->cache;
    cfg_map_decode(c, n, cache_fields, NFIELDS(cache_fields), cc);
    if (cc->path != NULL && cc->path[0] == '\0') {
        size_t mark = cfg_push(c, "path");
        cfg_loader_error(c, cfg_line(cfg_get(c, n, "path")), "cache.path must not be empty");
        cfg_pop(c, mark);
    }
    yaml_node_t *redis = cfg_get(c, n, "redis");
    if (cc->redis && cfg_get(c, yaml_document_get_root_node(c->doc), "cluster") == NULL) {
        size_t mark = cfg_push(c, "redis");
        cfg_loader_error(c, cfg_line(redis), "true needs a cluster: section (the Redis tier is the "
                                            "cluster's Redis, shared by its hosts)");
        cfg_pop(c, mark);
    }
}

/* Strips trailing slashes for a comparison ("./var/x/" is "./var/x"). */
static size_t path_len(const char *p)
{
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/')
        n--;
    return n;
}

void cfg_cache_finish(cfg_loader_t *c, yaml_node_t *root, cfg_t *cfg)
{
    cfg_cache_conf_t *cc = &cfg->cache;
    if (cc->path != NULL) {
        /* the cache's LMDB environment is its own: opened on the state's, it
         * would be two environments on one file in each worker (LMDB's locks
         * break), and a broken cache moved aside would take the state along */
        size_t n = path_len(cc->path);
        if (cc->enabled && n == path_len(cfg->state.path) && memcmp(cc->path, cfg->state.path, n) == 0) {
            yaml_node_t *cn = cfg_get(c, root, "cache");
            size_t mark = cfg_push(c, "cache");
            cfg_push(c, "path");
            cfg_loader_error(c, cfg_line(cn != NULL ? cfg_get(c, cn, "path") : root),
                         "cache.path must not be the state folder (state.path): the cache is an LMDB environment "
                         "of its own; leave cache.path out for the default, state.path + \"-cache\"");
            cfg_pop(c, mark);
        }
        return;
    }
    size_t n = strlen(cfg->state.path) + sizeof("-cache");
    cc->path = sl_xmalloc(n);
    snprintf(cc->path, n, "%s-cache", cfg->state.path);
}
