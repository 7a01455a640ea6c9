/* wire/envelope.h: the JSON-RPC envelope of a message, found without a DOM.
 *
 * Upstream answers can be tens of megabytes (eth_getLogs); sluice never builds
 * a tree of them. The scan validates the whole input as strict RFC 8259 JSON
 * (strings with escapes and UTF-8, numbers, literals, nesting) in one pass,
 * skipping plain string bytes 16 at a time (SSE2, or 8 with SWAR), and records the byte ranges of the
 * top-level members a gateway needs. Requests are scanned the same way, so
 * the exact bytes of each batch member and each id can be forwarded or
 * spliced without re-serialising a client's numbers.
 *
 * Pure: no allocation, no I/O. Every function here is fuzzed
 * (tests/fuzz/fuzz_envelope.c). */
#ifndef WIRE_ENVELOPE_H
#define WIRE_ENVELOPE_H

#include <stddef.h>
#include <stdint.h>

#include "base/sl_err.h"

/* Maximum nesting depth of arrays and objects accepted anywhere. */
#define WIRE_JSON_MAX_DEPTH 128

/* A byte range of the scanned buffer. len == 0 means "absent": every JSON
 * value is at least one byte long. */
typedef struct wire_span {
    uint32_t off;
    uint32_t len;
} wire_span_t;

/* The kind of a JSON value, from its first byte. */
typedef enum wire_json_kind {
    WIRE_JSON_NONE,         /* span absent */
    WIRE_JSON_OBJECT,
    WIRE_JSON_ARRAY,
    WIRE_JSON_STRING,
    WIRE_JSON_NUMBER,
    WIRE_JSON_TRUE,
    WIRE_JSON_FALSE,
    WIRE_JSON_NULL,
} wire_json_kind_t;

typedef struct wire_envelope {
    wire_span_t jsonrpc;    /* value of "jsonrpc" (raw token, quotes included) */
    wire_span_t id;         /* value of "id" */
    wire_span_t method;     /* value of "method" */
    wire_span_t params;     /* value of "params" */
    wire_span_t result;     /* value of "result" */
    wire_span_t error;      /* value of "error" */
    uint32_t nmembers;        /* top-level members, all keys counted */
} wire_envelope_t;

/* Scans buf[0..len) that must hold exactly one JSON object (surrounding
 * whitespace allowed) and fills *out. A key written with escapes counts as the
 * key it decodes to; a key equal to one of the six only the way Go's
 * encoding/json compares names (another case, Kelvin sign, long s), or with a
 * dotless or dotted I (stricter than Go: refused rather than guessed), makes
 * the message SL_ERR_PARSE: a node might read it as that key. A second
 * occurrence of any of the six keys above is SL_ERR_PARSE: a message with two
 * "result"s is not one a gateway may pass on.
 * Errors: SL_ERR_TRUNCATED (input ends inside a value), SL_ERR_TOO_DEEP,
 * SL_ERR_TOO_LARGE (len >= 4 GiB), SL_ERR_PARSE (anything else invalid,
 * including a valid JSON value that is not an object). */
SL_MUST_CHECK sl_err_t wire_envelope_scan(const char *buf, size_t len, wire_envelope_t *out);

/* Scans buf[0..len) that must hold exactly one JSON array and stores the span
 * of each element (trimmed of whitespace) in items[0..*nitems). Elements are
 * validated but not interpreted. More than max_items elements is
 * SL_ERR_TOO_LARGE (*nitems is then max_items + 1, the scan stops there);
 * other errors as wire_envelope_scan. */
SL_MUST_CHECK sl_err_t wire_envelope_scan_array(const char *buf, size_t len, wire_span_t *items, size_t max_items,
                                                  size_t *nitems);

/* Validates that buf[0..len) is exactly one JSON value of any kind (surrounding
 * whitespace allowed); on SL_OK *kind is its kind and *value its trimmed span. */
SL_MUST_CHECK sl_err_t wire_json_validate(const char *buf, size_t len, wire_json_kind_t *kind,
                                            wire_span_t *value);

/* The kind of the value at span s of buf (from its first byte). */
wire_json_kind_t wire_json_kind(const char *buf, wire_span_t s);

/* A decoded JSON-RPC error object. */
typedef struct wire_rpc_error {
    int has_code;             /* "code" present and an integer in int64 range */
    int64_t code;
    char message[256];        /* "message" unescaped to UTF-8, NUL-terminated,
                                 cut at 255 bytes on a character boundary; "" if absent */
    wire_span_t data;       /* raw value of "data", relative to buf */
} wire_rpc_error_t;

/* Decodes the error object at span err of buf (a span from wire_envelope_scan,
 * so already validated). A non-object error is SL_ERR_PARSE. */
SL_MUST_CHECK sl_err_t wire_envelope_error(const char *buf, wire_span_t err, wire_rpc_error_t *out);

/* The value of the first member named key of the JSON object at span obj of
 * buf, or {0, 0} when obj is absent or not an object, has no such member, or
 * is malformed before one. Keys compare on their raw bytes: a key written
 * with escapes never matches. Meant for spans a scan already validated (an
 * error's "data", a result). */
wire_span_t wire_json_member(const char *buf, wire_span_t obj, const char *key);

/* Unescapes the JSON string token at span s (quotes included) into out[0..cap),
 * NUL-terminated, cut at cap-1 bytes on a UTF-8 character boundary. Returns
 * SL_ERR_PARSE if s is not a string token, SL_ERR_TOO_LARGE if it was cut. */
SL_MUST_CHECK sl_err_t wire_json_string(const char *buf, wire_span_t s, char *out, size_t cap);

/* 1 if the string token at span s holds an escaped NUL ("\u0000"), which a
 * NUL-terminated decode would silently cut at. */
int wire_json_has_nul(const char *buf, wire_span_t s);

/* Parses the JSON number token at span s as a signed 64-bit integer.
 * SL_ERR_PARSE if it is not an integer token (fraction or exponent),
 * SL_ERR_RANGE if it does not fit. */
SL_MUST_CHECK sl_err_t wire_json_int64(const char *buf, wire_span_t s, int64_t *out);

/* Compares two id tokens: equal bytes, or two numbers of equal value. */
int wire_json_id_equal(const char *a, wire_span_t sa, const char *b, wire_span_t sb);

/* 1 if the id token at span s comes back unchanged from any upstream: null,
 * an integer in 0..2^53-1 written as plain digits (no sign, fraction,
 * exponent or leading zero), or a string of printable ASCII without escapes.
 * Others are valid JSON-RPC ids that some servers cannot echo: jsonrpc-core
 * and jsonrpsee take only u64 numbers and answer `1.5`, `1e3` or `-1` with
 * an error at id null; JavaScript servers round integers past 2^53; a server
 * may re-encode a string's escapes or non-ASCII bytes. */
int wire_json_id_portable(const char *buf, wire_span_t s);

#endif
