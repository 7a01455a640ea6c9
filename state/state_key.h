/* state/state_key.h: the keys of every LMDB database, built in one place.
 *
 * Each builder writes a NUL-terminated key into out[0..cap) and returns the
 * length it needed, as snprintf does: a key is complete only if that is
 * below cap (names are validated by the config, so STATE_KEY_MAX holds every
 * key built from them; callers with outside input check). */
#ifndef STATE_KEY_H
#define STATE_KEY_H

#include <stddef.h>

#define STATE_KEY_MAX 192

/* endpoints: "<network>/<endpoint>", the shared breaker/drain/mark record */
size_t state_key_endpoint(char *out, size_t cap, const char *network, const char *endpoint);
/* stats: "<network>/<endpoint>/<slot>", one worker's counters of an endpoint */
size_t state_key_stats(char *out, size_t cap, const char *network, const char *endpoint, unsigned slot);
/* stats: "pm/<network>/<endpoint>/<slot>", one worker's per-method counters */
size_t state_key_per_method(char *out, size_t cap, const char *network, const char *endpoint, unsigned slot);
/* stats: "req/<network>/<slot>", one worker's per-request counters */
size_t state_key_requests(char *out, size_t cap, const char *network, unsigned slot);
/* stats: "cache/<network>/<slot>", one worker's response-cache lookups per method */
size_t state_key_cache(char *out, size_t cap, const char *network, unsigned slot);
/* stats: "subs/<network>/<slot>", one worker's WebSocket and subscription counters of a network */
size_t state_key_subs(char *out, size_t cap, const char *network, unsigned slot);
/* ledgers: "<network>/<endpoint>/<window>", a credit window's ledger */
size_t state_key_ledger(char *out, size_t cap, const char *network, const char *endpoint, const char *window);
/* limits: "<identity>/<bucket>/<window>", a client-limit cell */
size_t state_key_cell(char *out, size_t cap, const char *identity, const char *bucket, const char *window);
/* pins: "<network>/<txid>", the endpoint that accepted a transaction */
size_t state_key_pin(char *out, size_t cap, const char *network, const char *txid);
/* meta: "level/<network>", the network's redundancy level */
size_t state_key_level(char *out, size_t cap, const char *network);
/* stats: "deg/<slot>", the parts of shared state one worker runs without */
size_t state_key_degraded(char *out, size_t cap, unsigned slot);
/* stats: "srv/<slot>", one worker's connection and buffer counters */
size_t state_key_server(char *out, size_t cap, unsigned slot);

/* meta: "pressure/<network>", the network's pressure level */
size_t state_key_pressure(char *out, size_t cap, const char *network);
/* meta: "chain/<network>", the heads served on the network (state_chain.c) */
size_t state_key_chain(char *out, size_t cap, const char *network);
/* stats: "pr/<network>/<slot>", one worker's pressure inputs */
size_t state_key_pressure_slot(char *out, size_t cap, const char *network, unsigned slot);
/* stats: "key/<name>/<slot>", one worker's counters of an API key (STATE_KEYC_*) */
size_t state_key_keystats(char *out, size_t cap, const char *name, unsigned slot);
/* stats: "keyover/<slot>", one counter: calls and refusals under API keys
 * that one worker's per-key table (GW_STATS_KEYS_MAX) had no room for */
size_t state_key_keys_uncounted(char *out, size_t cap, unsigned slot);
/* meta: "apikey/<name>", a key made at run time (state_apikey.c) */
size_t state_key_apikey(char *out, size_t cap, const char *name);

#endif
