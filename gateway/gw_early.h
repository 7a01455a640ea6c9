/* gateway/gw_early.h: JSON-RPC bodies for the answers h2o gives by itself.
 *
 * h2o answers some requests before any handler runs, in plain text, and
 * closes the connection after each: 413 for a body over
 * max_request_entity_size (server.max_body_bytes; a Content-Length over it
 * is refused at the head, a chunked body once it grows past it); 400 for a
 * Content-Length that is not one number (a list such as "42, 43" or
 * "42, 42" included), a Transfer-Encoding other than chunked, or broken
 * chunks; 417 for an Expect other than 100-continue. It sends them on the
 * host's fallback path, where this filter replaces the text with a -32600
 * JSON-RPC error naming the problem (and the limit, for 413), and asks for
 * a lingering close (gw_conns_linger): h2o has stopped reading the body,
 * and a client that writes its whole body before it reads would otherwise
 * meet a reset instead of the answer. Other answers pass unchanged. */
#ifndef GW_EARLY_H
#define GW_EARLY_H
#include <h2o.h>

#include "config/cfg.h"

/* srv must outlive host. Call before h2o_context_init on host's config. */
void gw_early_register(h2o_hostconf_t *host, const cfg_server_conf_t *srv);

#endif
