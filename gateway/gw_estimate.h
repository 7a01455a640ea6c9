/* gateway/gw_estimate.h: how many answer bytes a new call will probably
 * hold, so the caller's share (gw_buffered.h) is reserved when the call is
 * admitted rather than checked once its answer has been read.
 *
 * Each worker remembers, per caller and method, the size of recent answers
 * (a direct-mapped table: a collision forgets the older pair, which only
 * sends that caller back to the default). The estimate is the largest recent
 * answer, decaying by a quarter with each smaller one, so one large answer
 * does not pin a caller's estimate for ever. With no history the default is
 * by what the method is: a scan (a read of low priority: eth_getLogs,
 * trace_*, getProgramAccounts...) may answer up to max_response_bytes, so it
 * reserves half of the lesser of that and the share (two such calls of an
 * unknown size at once per caller); anything else GW_ESTIMATE_SMALL.
 *
 * One per worker, single-threaded; no I/O, no clocks. */
#ifndef GW_ESTIMATE_H
#define GW_ESTIMATE_H

#include <stddef.h>
#include <stdint.h>

#include "policy/method.h"

#define GW_ESTIMATE_SLOTS 4096
#define GW_ESTIMATE_SMALL (64u * 1024) /* a method that is no scan, size unknown */

typedef struct gw_estimate gw_estimate_t;

/* scan_default: what a scan of unknown size reserves (see above). */
gw_estimate_t *gw_estimate_create(size_t scan_default);
void gw_estimate_destroy(gw_estimate_t *t);

/* The bytes a call of m (named name) by ident is expected to hold. */
size_t gw_estimate_get(const gw_estimate_t *t, const char *ident, const char *name, const policy_method_t *m);

/* Remembers that a call of name by ident held bytes once complete. */
void gw_estimate_put(gw_estimate_t *t, const char *ident, const char *name, size_t bytes);

#endif
