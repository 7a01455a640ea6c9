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

/* As wire_json_compact, but only for a "plain" value: every string (keys
 * included) without a backslash, every number an integer of at most 15
 * digits (no fraction, exponent, or "-0"). Such a value's compact bytes are
 * exactly what a DOM (cJSON) parse-and-print gives back, so code that used
 * to re-print upstream answers through a tree (sub/) may splice these
 * bytes instead and stay byte-identical; for any other value it keeps its
 * tree. Returns 1 with the bytes appended, else 0 with out as it was.
 * Meant for spans a scan already validated. */
int wire_json_compact_plain(const char *buf, wire_span_t s, sl_buf_t *out);

#endif
