/* wire/json_compact.h: a JSON value written without the whitespace outside
 * its strings, so that two spellings of one value compare (and hash) alike:
 * the response cache's keys (pool/pool_cache_call.c). Pure. */
#ifndef WIRE_JSON_COMPACT_H
#define WIRE_JSON_COMPACT_H

#include "base/sl_buf.h"
#include "wire/envelope.h"

/* Appends the value at span s of buf to out with every space, tab, CR and
 * LF outside strings dropped; strings (escapes included) are copied byte for
 * byte. Meant for spans a scan already validated. */
void wire_json_compact(const char *buf, wire_span_t s, sl_buf_t *out);

#endif
