/* wire/traceparent.h: the W3C Trace Context `traceparent` header
 * (https://www.w3.org/TR/trace-context/): version-traceid-parentid-flags,
 * lower-case hex. sluice passes a client's to the upstream and writes its
 * trace id in the access line; a malformed one is ignored, never forwarded
 * (its bytes would go into an upstream request's head). */
#ifndef WIRE_TRACEPARENT_H
#define WIRE_TRACEPARENT_H

#include <stddef.h>

#define WIRE_TRACEPARENT_LEN 55   /* "00-" 32 hex "-" 16 hex "-" 2 hex */

/* 1 if s[0..len) is a traceparent sluice forwards: exactly
 * WIRE_TRACEPARENT_LEN bytes, a version other than ff, a trace id and a
 * parent id that are not all zeros, lower-case hex throughout. trace_id
 * (may be NULL) gets the 32 hex digits of the trace id and a NUL. */
int wire_traceparent_parse(const char *s, size_t len, char trace_id[33]);

#endif
