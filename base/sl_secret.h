/* base/sl_secret.h: the process's list of secret strings.
 *
 * Config loading registers every value that must never leave the process
 * (upstream URL keys, header values, admin token, client keys). sl_log scrubs
 * them from every diagnostic line; error bodies pass through the same scrub.
 * Registered before fork, so every worker inherits the list. */
#ifndef SL_SECRET_H
#define SL_SECRET_H

#include <stddef.h>

#include "base/sl_buf.h"

/* Registers s (copied). Strings shorter than 4 bytes are ignored: scrubbing
 * them would mangle ordinary text and they protect nothing. */
void sl_secret_add(const char *s);
void sl_secret_add_n(const char *s, size_t n);
/* Values sluice only suspects of being keys (URL pieces, header values,
 * environment values) are registered if they look like a generated key: 8+
 * bytes mixing digits and letters, or 24+ bytes of anything. Words such as
 * "ethereum", "eth_sepolia", "application/json" or "true" and numbers such
 * as "8453" are not: scrubbing them would mangle logs and answers, and
 * display redaction of URLs does not depend on this list. */
int sl_secret_key_like(const char *s, size_t n);
void sl_secret_add_key(const char *s, size_t n);
/* sl_secret_add_key() for each word of s (split at spaces, tabs, ',' and
 * ';'), as in "Bearer <token>". */
void sl_secret_add_words(const char *s);
/* Forgets every secret (config reload, tests). */
void sl_secret_clear(void);
/* Appends s[0..n) to out with each registered secret replaced by "***". */
void sl_secret_scrub(sl_buf_t *out, const char *s, size_t n);
/* Returns 1 if s[0..n) contains a registered secret. */
int sl_secret_contains(const char *s, size_t n);

#endif
