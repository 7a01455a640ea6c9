/* gateway/gw_reply.h: the answer to a client request, from the parsed body
 * and what pool/ made of each forwarded member. */
#ifndef GW_REPLY_H
#define GW_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include <h2o.h>

#include "base/sl_buf.h"
#include "gateway/gw_rpc.h"
#include "pool/pool.h"

typedef struct gw_reply {
    int status;                   /* HTTP status */
    uint32_t retry_after_s;       /* > 0: send Retry-After */
    const char *body;             /* points into out, or at an upstream answer (zero copy) */
    size_t len;                   /* 0 with status 204: no body */
    /* nparts > 0: the body is these (len bytes in all), an upstream answer
     * around the client's own id bytes, sent without a copy of either */
    h2o_iovec_t parts[3];
    size_t nparts;
    sl_buf_t out;                 /* assembled body, when not zero copy */
    char endpoints[160];          /* X-Sluice-Endpoint: ids that answered, comma-separated */
    const char *outcome;          /* for the access log: "ok", "rate_limited", ... */
} gw_reply_t;

/* Builds the reply. items[k] answers the member at item_member[k]; call is the
 * finished pool call (NULL when nothing was forwarded). */
void gw_reply_build(gw_reply_t *r, const char *body, const gw_rpc_request_t *rpc, const pool_item_t *items,
                    const uint32_t *item_member, size_t nitems, const pool_call_t *call);
void gw_reply_dispose(gw_reply_t *r);

#endif
