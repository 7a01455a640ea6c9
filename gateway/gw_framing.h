/* gateway/gw_framing.h: does a request head give its body's length once?
 *
 * h2o 2.2.5 chooses a request's framing itself and keeps both headers from
 * the handler: Transfer-Encoding wins over Content-Length, the last
 * Transfer-Encoding line and the first Content-Length line win. A front
 * proxy that chooses otherwise sees a different body, and bytes of this
 * body as a request of their own (request smuggling). RFC 9112 §6.3: such
 * a request is refused with 400 and the connection closed. The handler
 * runs the check over the head h2o parsed, which is still at the start of
 * the connection's input buffer (h2o consumes a request's bytes only after
 * its answer).
 *
 * Two Content-Length lines with the same value are read as one (RFC 9110
 * §8.6 allows either): the length is not in doubt. A list in one line
 * ("42, 42") never gets here: h2o refuses it (400) as not a number. Pure. */
#ifndef GW_FRAMING_H
#define GW_FRAMING_H
#include <stddef.h>

typedef enum gw_framing {
    GW_FRAMING_OK,            /* one length (or none) */
    GW_FRAMING_CL_AND_TE,     /* Content-Length and Transfer-Encoding */
    GW_FRAMING_CL_CONFLICT,   /* Content-Length values that differ, or one that is not a number */
    GW_FRAMING_TE_REPEATED,   /* Transfer-Encoding on more than one line */
    GW_FRAMING_COUNT
} gw_framing_t;

/* head: the request head's bytes (request line, header lines, the empty
 * line; bytes after it are not read). Lines may end in CRLF or LF; header
 * names in any case; a line starting with a space or tab continues the
 * one before (obsolete folding) and names nothing. */
gw_framing_t gw_framing_check(const char *head, size_t len);

/* The -32600 message for a verdict other than GW_FRAMING_OK (a literal). */
const char *gw_framing_message(gw_framing_t verdict);

#endif
