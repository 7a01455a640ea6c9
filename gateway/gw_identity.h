/* gateway/gw_identity.h: who is calling. A path segment starting with "sl_"
 * (or an X-API-Key header; the path wins) is a key, matched against the
 * SHA-256 hashes in the config in constant time. A key that matches nothing
 * is refused, never silently treated as anonymous. */
#ifndef GW_IDENTITY_H
#define GW_IDENTITY_H

#include <stddef.h>

#include "config/cfg.h"

#define GW_KEY_PREFIX "sl_"

typedef enum gw_identity_result {
    GW_IDENTITY_ANONYMOUS,
    GW_IDENTITY_KEY,
    GW_IDENTITY_UNKNOWN_KEY,
} gw_identity_result_t;

/* 1 if seg[0..len) is key-shaped (starts with "sl_"). */
int gw_identity_is_key(const char *seg, size_t len);

/* Resolves a key (NULL/0 = none); *key gets the config entry when known. */
gw_identity_result_t gw_identity_resolve(const cfg_t *cfg, const char *key, size_t len,
                                         const cfg_key_conf_t **out);

/* Writes the lower-case hex SHA-256 of key[0..len) into hex[65]. */
void gw_identity_hash(const char *key, size_t len, char hex[65]);

#include <h2o.h>
#include <stdint.h>
#include <sys/socket.h>

/* The caller's address as its limits know it: the peer, or, when the peer
 * is a trusted proxy (server.trusted_proxies), the right-most
 * X-Forwarded-For address that is not itself a trusted proxy. Every
 * X-Forwarded-For line counts, joined in order as RFC 9110 joins repeated
 * fields ("a" and "b" read as "a, b"), so a line the client sent ahead of
 * the one its proxy added cannot choose the identity. An element that is not
 * an address stops the walk at the proxy that passed it on. IPv6 addresses
 * stand for their /server.ipv6_prefix network ("2001:db8:1:2::/64"), so
 * one host's many addresses are one caller; IPv4-mapped ones are IPv4. */
void gw_identity_client_ip(h2o_req_t *req, const cfg_t *cfg, char out[64]);

/* The walk itself, for tests: addr holds the peer's address and gets the
 * caller's (not yet grouped); values[0..n) are the X-Forwarded-For lines. */
void gw_identity_forwarded(const h2o_iovec_t *values, size_t n, char *const *trusted, size_t ntrusted, char addr[64]);

/* Writes the identity of address addr: IPv6 as its /prefix network, IPv4
 * (and IPv4-mapped IPv6) as itself; anything else unchanged. */
void gw_identity_group(const char *addr, uint32_t prefix, char out[64]);

/* 1 if addr (text) is inside one of the CIDRs ("10.0.0.0/8", "::1"). */
int gw_identity_in_cidrs(const char *addr, char *const *cidrs, size_t n);

/* The same grouping for a socket address, as 16 bytes for a table key:
 * IPv4 (and IPv4-mapped IPv6) as its IPv4-mapped form, IPv6 with the bits
 * past prefix cleared. Returns 1, or 0 for another family (out zeroed). */
int gw_identity_group_key(const struct sockaddr *sa, uint32_t prefix, uint8_t out[16]);

/* The tier for a key (its configured tier) or for anonymous callers (the
 * tier named "anonymous"); NULL when none is configured. */
const cfg_tier_conf_t *gw_identity_tier(const cfg_t *cfg, const cfg_key_conf_t *key);

#endif
