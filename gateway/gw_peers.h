/* gateway/gw_peers.h: client connections open per address, one worker's
 * count. The key is gw_identity_group_key's (an IPv6 /ipv6_prefix network
 * is one address). Open addressing with a per-process random seed, so a
 * caller holding many networks cannot choose keys that share one probe run. */
#ifndef GW_PEERS_H
#define GW_PEERS_H

#include <stdint.h>

typedef struct gw_peers gw_peers_t;

gw_peers_t *gw_peers_create(void);
void gw_peers_destroy(gw_peers_t *p);

/* Connections counted for key now (0 if none). */
uint32_t gw_peers_get(const gw_peers_t *p, const uint8_t key[16]);
/* Counts one more connection for key; returns the new count. */
uint32_t gw_peers_add(gw_peers_t *p, const uint8_t key[16]);
/* Counts one less; a key not counted is left alone. */
void gw_peers_remove(gw_peers_t *p, const uint8_t key[16]);
/* Addresses with at least one connection. */
uint32_t gw_peers_size(const gw_peers_t *p);

#endif
