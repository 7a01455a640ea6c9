/* sub/sub_json.c: upstream answers' JSON as sub/ re-sends it
 * (sub_int.h): with wire/'s scanner over the answer's compact bytes when
 * they are plain (wire_json_compact_plain: no escapes, no number a tree
 * would respell), which is what a cJSON tree's print gave for them; an
 * answer that is not plain still goes through the tree, so that clients
 * get the bytes they always got. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sub/sub_int.h"
#include "wire/json_compact.h"
#include "wire/json_scan.h"

typedef struct without {
    sl_buf_t *out;
    const char *const *keys;
    size_t nkeys;
    unsigned dropped;             /* bit i: keys[i]'s first member left out (a tree deletes the first) */
    size_t n;                     /* members written */
} without_t;

static sl_err_t copy_member(const char *buf, wire_span_t k, wire_span_t v, void *arg)
{
    without_t *w = arg;
    for (size_t i = 0; i < w->nkeys; i++)
        if (!(w->dropped & 1u << i) && wire_json_key_is(buf, k, w->keys[i])) {
            w->dropped |= 1u << i;
            return SL_OK;
        }
    if (w->n++ > 0)
        sl_buf_append_char(w->out, ',');
    sl_buf_append(w->out, buf + k.off, v.off + v.len - k.off); /* compact: "key":value */
    return SL_OK;
}

int sub_json_object_without(const char *buf, wire_span_t obj, const char *const *keys, size_t nkeys,
                            const char *extra, sl_buf_t *out)
{
    without_t w = {out, keys, nkeys, 0, 0};
    size_t mark = out->len;
    sl_buf_append_char(out, '{');
    if (wire_json_kind(buf, obj) != WIRE_JSON_OBJECT || wire_json_each_member(buf, obj, copy_member, &w) != SL_OK) {
        out->len = mark;
        return 0;
    }
    if (extra != NULL) {
        if (w.n > 0)
            sl_buf_append_char(out, ',');
        sl_buf_append_str(out, extra);
    }
    sl_buf_append_char(out, '}');
    return 1;
}

/* ---- a logs array ---- */

typedef struct spans {
    wire_span_t *v;
    size_t n, cap;
    int objects;                  /* every element an object */
} spans_t;

static sl_err_t add_span(const char *buf, wire_span_t v, void *arg)
{
    spans_t *s = arg;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 16;
        s->v = sl_xrealloc(s->v, s->cap * sizeof(*s->v));
    }
    s->v[s->n++] = v;
    s->objects &= wire_json_kind(buf, v) == WIRE_JSON_OBJECT;
    return SL_OK;
}

static const char *const removed_key[] = {"removed"};

/* Through a tree: the answers that are not plain. */
static size_t each_log_tree(const char *logs, size_t len, int removed, sub_json_text_fn fn, void *arg)
{
    cJSON *arr = cJSON_ParseWithLength(logs, len), *log;
    size_t n = 0;
    if (removed) { /* newest first: undone in the reverse of their order */
        for (int i = cJSON_GetArraySize(arr) - 1; i >= 0; i--) {
            log = cJSON_GetArrayItem(arr, i);
            cJSON_DeleteItemFromObjectCaseSensitive(log, "removed");
            cJSON_AddBoolToObject(log, "removed", 1);
            char *s = cJSON_PrintUnformatted(log);
            fn(arg, s, strlen(s));
            free(s);
            n++;
        }
    } else {
        cJSON_ArrayForEach(log, arr)
        {
            char *s = cJSON_PrintUnformatted(log);
            fn(arg, s, strlen(s));
            free(s);
            n++;
        }
    }
    cJSON_Delete(arr);
    return n;
}

int sub_json_items(const char *buf, wire_span_t arr, wire_span_t **items, size_t *n, int *objects)
{
    spans_t s = {.objects = 1};
    if (wire_json_kind(buf, arr) != WIRE_JSON_ARRAY || wire_json_each_item(buf, arr, add_span, &s) != SL_OK) {
        free(s.v);
        return 0;
    }
    *items = s.v;
    *n = s.n;
    if (objects != NULL)
        *objects = s.objects;
    return 1;
}

int sub_json_plain_items(const char *text, size_t len, sl_buf_t *c, wire_span_t **items, size_t *n, int *objects)
{
    size_t mark = c->len;
    if (len == 0 || !wire_json_compact_plain(text, (wire_span_t){0, (uint32_t)len}, c) ||
        !sub_json_items(c->base, (wire_span_t){(uint32_t)mark, (uint32_t)(c->len - mark)}, items, n, objects)) {
        c->len = mark;
        return 0;
    }
    return 1;
}

wire_span_t sub_json_trim(const char *text, size_t len)
{
    size_t a = 0;
    while (a < len && (text[a] == ' ' || text[a] == '\t' || text[a] == '\n' || text[a] == '\r'))
        a++;
    while (len > a && (text[len - 1] == ' ' || text[len - 1] == '\t' || text[len - 1] == '\n' || text[len - 1] == '\r'))
        len--;
    return (wire_span_t){(uint32_t)a, (uint32_t)(len - a)};
}

int sub_json_escape_free(const char *text, size_t len)
{
    return memchr(text, '\\', len) == NULL;
}

void sub_json_print(const char *buf, wire_span_t v, sl_buf_t *out)
{
    if (wire_json_compact_plain(buf, v, out))
        return;
    cJSON *t = cJSON_ParseWithLength(buf + v.off, v.len);
    char *s = cJSON_PrintUnformatted(t);
    sl_buf_append_str(out, s != NULL ? s : "null");
    free(s);
    cJSON_Delete(t);
}

static sl_err_t first_item(const char *buf, wire_span_t v, void *arg)
{
    (void)buf;
    *(wire_span_t *)arg = v;
    return SL_ERR_RANGE; /* found: stop */
}

wire_span_t sub_json_item0(const char *buf, wire_span_t arr)
{
    wire_span_t v = {0, 0};
    if (wire_json_kind(buf, arr) != WIRE_JSON_ARRAY || wire_json_each_item(buf, arr, first_item, &v) != SL_ERR_RANGE)
        return (wire_span_t){0, 0};
    return v;
}

double sub_json_number(const char *buf, wire_span_t v)
{
    char tmp[64];
    snprintf(tmp, sizeof(tmp), "%.*s", (int)v.len, buf + v.off);
    return strtod(tmp, NULL);
}

size_t sub_json_each_log(const char *logs, size_t len, int removed, sub_json_text_fn fn, void *arg)
{
    sl_buf_t c, one;
    sl_buf_init(&c);
    wire_span_t *v = NULL;
    size_t n = 0;
    int objects = 0;
    if (!sub_json_plain_items(logs, len, &c, &v, &n, &objects) || (removed && !objects)) {
        free(v);
        sl_buf_dispose(&c);
        return each_log_tree(logs, len, removed, fn, arg);
    }
    sl_buf_init(&one);
    for (size_t k = 0; k < n; k++) {
        if (!removed) {
            fn(arg, c.base + v[k].off, v[k].len);
            continue;
        }
        sl_buf_reset(&one); /* newest first, "removed" moved last and true, as the tree's delete and add */
        (void)sub_json_object_without(c.base, v[n - 1 - k], removed_key, 1, "\"removed\":true", &one);
        fn(arg, one.base, one.len);
    }
    sl_buf_dispose(&one);
    free(v);
    sl_buf_dispose(&c);
    return n;
}
