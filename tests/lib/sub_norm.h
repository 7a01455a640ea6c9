/* tests/lib/sub_norm.h: a subscription kind's normaliser run on JSON text
 * (sub/sub_int.h), for the kinds' unit tests: the key it writes goes
 * to key (cap bytes), and its -32602 message (NULL when the params are good)
 * is returned. */
#ifndef TESTS_LIB_SUB_NORM_H
#define TESTS_LIB_SUB_NORM_H

#include <stdio.h>

#include "sub/sub_int.h"

static inline const char *norm(const char *(*fn)(const cJSON *, sl_buf_t *), const char *json, char *key, size_t cap)
{
    cJSON *p = cJSON_Parse(json);
    sl_buf_t b;
    sl_buf_init(&b);
    const char *bad = fn(p, &b);
    snprintf(key, cap, "%.*s", (int)b.len, b.base != NULL ? b.base : "");
    sl_buf_dispose(&b);
    cJSON_Delete(p);
    return bad;
}

#endif
