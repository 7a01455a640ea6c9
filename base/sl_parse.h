/* base/sl_parse.h: the digits every parser of outside input reads. One
 * definition each, so the HTTP client, the URL parser, the config and the
 * admin query strings agree on what a number is. */
#ifndef SL_PARSE_H
#define SL_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "base/sl_err.h"

/* The value of one hex digit (either case), or -1. */
static inline int sl_hex_digit(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20;
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* s[0..n) as a decimal whole number: one or more ASCII digits, nothing else
 * (no sign, space or fraction; leading zeros are fine). SL_OK with *out;
 * SL_ERR_PARSE for an empty or non-digit text; SL_ERR_RANGE past max (which
 * may be UINT64_MAX: overflow is caught). *out is untouched on error. */
SL_MUST_CHECK sl_err_t sl_parse_u64(const char *s, size_t n, uint64_t max, uint64_t *out);

#endif
