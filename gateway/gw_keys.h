/* gateway/gw_keys.h: this worker's copy of the API keys made at run time
 * (issue 33, phase 2; state/state_apikey.h keeps them).
 *
 * Every state.refresh_ms the table reads the keys' generation from state/
 * and, when it moved, reloads every key: a key made, changed or revoked
 * through /admin/keys reaches each worker within one tick. A key's entry is
 * a cfg_key_conf_t like a config key's, its tier resolved against this
 * worker's config (a key whose tier the config no longer has is refused as
 * unknown, and logged, never served without limits). An entry that a
 * reload replaces or drops stays allocated until gw_keys_destroy (calls in
 * flight and sockets hold it; changes are an operator's, rare) and is
 * marked: gw_keys_revoked says when its key is gone, and on_revoke runs
 * once per reload that dropped any (the WebSocket sweep). */
#ifndef GW_KEYS_H
#define GW_KEYS_H

#include <h2o.h>

#include "config/cfg.h"
#include "state/state.h"

typedef struct gw_keys gw_keys_t;

/* cfg and st must outlive the table; on_revoke (may be NULL) gets data. */
gw_keys_t *gw_keys_create(h2o_loop_t *loop, const cfg_t *cfg, state_t *st, void (*on_revoke)(void *data),
                          void *data);
void gw_keys_destroy(gw_keys_t *k);

/* The generation the table holds (0: none read; k NULL: 0). Moves with
 * every change, so what was resolved at another one is resolved again
 * (gw_keycache.h). */
uint64_t gw_keys_generation(const gw_keys_t *k);

/* Reads the generation now and reloads if it moved; 1 if it did. */
int gw_keys_refresh(gw_keys_t *k);

/* The live entry whose SHA-256 is hex[0..64), compared against every entry
 * in constant time; NULL if none. k NULL: NULL. */
const cfg_key_conf_t *gw_keys_match(const gw_keys_t *k, const char hex[65]);

/* 1 if key is an entry of a run-time key since revoked (0 for config keys,
 * live entries, and entries a change replaced while the key lives on):
 * a walk of the dropped entries, for the sweep after a revocation. */
int gw_keys_revoked(const gw_keys_t *k, const cfg_key_conf_t *key);

#endif
