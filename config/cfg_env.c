/* config/cfg_env.c: ${ENV} expansion in config values.
 *
 * Environment variables are how operators hand sluice its API keys, so every
 * substituted text is registered as a secret before anything could print it,
 * and no error message quotes a value (only variable names). */
#include <stdlib.h>
#include <string.h>

#include "base/sl_secret.h"
#include "config/cfg_int.h"

static int name_char(char c, int first)
{
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_')
        return 1;
    return !first && c >= '0' && c <= '9';
}

/* Expands the reference at s[0..n) (which starts with "${") into out;
 * *used = bytes consumed. */
static sl_err_t expand_one(const char *s, size_t n, sl_buf_t *out, size_t *used, sl_buf_t *why)
{
    const char *close = memchr(s, '}', n);
    if (close == NULL) {
        sl_buf_append_str(why, "unterminated '${' (missing '}'; write $$ for a literal '$')");
        return SL_ERR_PARSE;
    }
    const char *body = s + 2;
    size_t blen = (size_t)(close - body);
    size_t name = 0;
    while (name < blen && name_char(body[name], name == 0))
        name++;
    int has_default = blen - name >= 2 && body[name] == ':' && body[name + 1] == '-';
    if (name == 0 || (name != blen && !has_default)) {
        sl_buf_append_str(why, "invalid reference: write ${NAME} or ${NAME:-default}, NAME of [A-Za-z0-9_]");
        return SL_ERR_PARSE;
    }
    char *var = sl_xstrndup(body, name);
    const char *val = getenv(var);
    sl_err_t err = SL_OK;
    if (has_default && (val == NULL || val[0] == '\0')) {
        sl_secret_add_key(body + name + 2, blen - name - 2);
        sl_buf_append(out, body + name + 2, blen - name - 2);
    } else if (val == NULL) {
        sl_buf_printf(why, "environment variable %s is not set", var);
        err = SL_ERR_NOT_FOUND;
    } else {
        sl_secret_add_words(val);
        sl_buf_append_str(out, val);
    }
    free(var);
    *used = (size_t)(close - s) + 1;
    return err;
}

sl_err_t cfg_env_expand(const char *s, size_t n, char **out, sl_buf_t *why)
{
    sl_buf_t b = SL_BUF_INIT;
    sl_err_t err = SL_OK;
    size_t i = 0;
    while (i < n) {
        const char *dollar = memchr(s + i, '$', n - i);
        size_t lit = dollar != NULL ? (size_t)(dollar - (s + i)) : n - i;
        sl_buf_append(&b, s + i, lit);
        i += lit;
        if (i >= n)
            break;
        if (i + 1 < n && s[i + 1] == '$') {
            sl_buf_append_char(&b, '$');
            i += 2;
        } else if (i + 1 < n && s[i + 1] == '{') {
            size_t used = 0;
            err = expand_one(s + i, n - i, &b, &used, why);
            if (err != SL_OK)
                goto cleanup;
            i += used;
        } else {
            sl_buf_append_char(&b, '$');   /* a lone '$' is just a character */
            i++;
        }
    }
    *out = sl_buf_steal(&b, NULL);
cleanup:
    sl_buf_dispose(&b);
    return err;
}
