/* gateway/gw_head.h: the request head's size against the server's limits
 * (server.max_header_line_bytes, server.max_header_bytes), as the client
 * sent it. h2o read the head already (its own bound is H2O_MAX_REQLEN):
 * this is the stricter one, answered 414 or 431. */
#ifndef GW_HEAD_H
#define GW_HEAD_H

#include <stddef.h>

#include <h2o.h>

#include "config/cfg.h"

typedef struct gw_head_verdict {
    int status;                   /* 414 (the request line), 431 (a header line, or all) */
    size_t total;                 /* the head's bytes */
    size_t longest;               /* its longest line */
    char message[160];            /* the -32600 message, naming the limit */
} gw_head_verdict_t;

/* 1 if req's head is within srv's limits; else 0 and *out says why. */
int gw_head_check(const h2o_req_t *req, const cfg_server_conf_t *srv, gw_head_verdict_t *out);

#endif
