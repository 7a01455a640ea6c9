/* config/cfg_yaml.c: YAML text -> libyaml document, typed readers over
 * its nodes, the table-driven mapping decoder and the error list.
 *
 * Readers never stop the load: each reports its problem with the node's line
 * and the decoder's path, and returns an error so the caller skips the value;
 * the load fails at the end if the list is not empty. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/sl_parse.h"
#include "base/sl_secret.h"
#include "config/cfg_int.h"

/* ---- errors ---- */

static char *scrubbed(const char *s)
{
    sl_buf_t b = SL_BUF_INIT;
    sl_secret_scrub(&b, s, strlen(s));
    return sl_buf_steal(&b, NULL);
}

void cfg_errors_add(cfg_errors_t *errs, int line, const char *path, const char *msg)
{
    if (errs->count > CFG_MAX_ERRORS)
        return;
    if (errs->count == CFG_MAX_ERRORS) {
        line = 0;
        path = "";
        msg = "too many errors; stopping here";
    }
    errs->items = sl_xrealloc(errs->items, (errs->count + 1) * sizeof(*errs->items));
    cfg_error_t *e = &errs->items[errs->count++];
    e->line = line;
    e->path = scrubbed(path != NULL ? path : "");
    e->message = scrubbed(msg);
}

void cfg_loader_error(cfg_loader_t *c, int line, const char *fmt, ...)
{
    sl_buf_t b = SL_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    sl_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    cfg_errors_add(c->errs, line, c->path.base, b.base != NULL ? b.base : "");
    sl_buf_dispose(&b);
}

void cfg_errors_dispose(cfg_errors_t *errs)
{
    if (errs == NULL)
        return;
    for (size_t i = 0; i < errs->count; i++) {
        free(errs->items[i].path);
        free(errs->items[i].message);
    }
    free(errs->items);
    errs->items = NULL;
    errs->count = 0;
}

void cfg_errors_print(const cfg_errors_t *errs, const char *file, FILE *out)
{
    for (size_t i = 0; i < errs->count; i++) {
        const cfg_error_t *e = &errs->items[i];
        fputs(file, out);
        if (e->line > 0)
            fprintf(out, ":%d", e->line);
        fputs(": ", out);
        if (e->path != NULL && e->path[0] != '\0')
            fprintf(out, "%s: ", e->path);
        fprintf(out, "%s\n", e->message);
    }
}

/* ---- path ---- */

size_t cfg_push(cfg_loader_t *c, const char *key)
{
    size_t mark = c->path.len;
    if (mark > 0)
        sl_buf_append_char(&c->path, '.');
    sl_buf_append_str(&c->path, key);
    return mark;
}

size_t cfg_push_index(cfg_loader_t *c, size_t i)
{
    size_t mark = c->path.len;
    sl_buf_printf(&c->path, "[%zu]", i);
    return mark;
}

void cfg_pop(cfg_loader_t *c, size_t mark)
{
    c->path.len = mark;
    if (c->path.base != NULL)
        c->path.base[mark] = '\0';
}

/* The key the decoder is at, for messages ("unknown cost_profile ..."). */
static const char *last_key(const cfg_loader_t *c)
{
    const char *p = c->path.base != NULL ? c->path.base : "";
    const char *dot = strrchr(p, '.');
    return dot != NULL ? dot + 1 : p;
}

/* ---- loading ---- */

static void report_parser(const yaml_parser_t *p, cfg_errors_t *errs)
{
    sl_buf_t b = SL_BUF_INIT;
    int line = (int)(p->error == YAML_READER_ERROR ? p->mark.line : p->problem_mark.line) + 1;
    sl_buf_printf(&b, "YAML syntax error: %s", p->problem != NULL ? p->problem : "unknown problem");
    if (p->context != NULL)
        sl_buf_printf(&b, " (%s at line %zu)", p->context, p->context_mark.line + 1);
    cfg_errors_add(errs, line, "", b.base);
    sl_buf_dispose(&b);
}

sl_err_t cfg_yaml_load(const char *yaml, size_t len, yaml_document_t *doc, cfg_errors_t *errs)
{
    yaml_parser_t p;
    yaml_document_t extra;
    sl_err_t err = SL_ERR_CONFIG;
    int have_doc = 0;
    if (!yaml_parser_initialize(&p))
        abort();   /* libyaml's only failure here is memory */
    yaml_parser_set_input_string(&p, (const unsigned char *)yaml, len);
    if (!yaml_parser_load(&p, doc)) {
        report_parser(&p, errs);
        goto cleanup;
    }
    have_doc = 1;
    yaml_node_t *root = yaml_document_get_root_node(doc);
    if (root == NULL || cfg_is_null(root)) {
        cfg_errors_add(errs, 0, "", "no configuration (file is empty)");
        goto cleanup;
    }
    if (!yaml_parser_load(&p, &extra)) {
        report_parser(&p, errs);
        goto cleanup;
    }
    int more = yaml_document_get_root_node(&extra) != NULL;
    int line = (int)extra.start_mark.line + 1;
    yaml_document_delete(&extra);
    if (more) {
        cfg_errors_add(errs, line, "", "more than one YAML document; the config must be a single document");
        goto cleanup;
    }
    err = SL_OK;
cleanup:
    if (err != SL_OK && have_doc)
        yaml_document_delete(doc);
    yaml_parser_delete(&p);
    return err;
}

/* ---- nodes ---- */

yaml_node_t *cfg_node(cfg_loader_t *c, int id)
{
    return yaml_document_get_node(c->doc, id);
}

int cfg_line(const yaml_node_t *n)
{
    return n != NULL ? (int)n->start_mark.line + 1 : 0;
}

int cfg_is_null(const yaml_node_t *n)
{
    if (n == NULL || n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return n == NULL;
    const char *v = (const char *)n->data.scalar.value;
    size_t len = n->data.scalar.length;
    return len == 0 || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 || strcmp(v, "Null") == 0 ||
           strcmp(v, "NULL") == 0;
}

const char *cfg_kind(const yaml_node_t *n)
{
    if (n == NULL || cfg_is_null(n))
        return "nothing";
    if (n->type == YAML_MAPPING_NODE)
        return "a mapping";
    if (n->type == YAML_SEQUENCE_NODE)
        return "a list";
    return "a plain value";
}

static int key_eq(const yaml_node_t *k, const char *s, size_t n)
{
    return k != NULL && k->type == YAML_SCALAR_NODE && k->data.scalar.length == n &&
           memcmp(k->data.scalar.value, s, n) == 0;
}

size_t cfg_pairs(cfg_loader_t *c, yaml_node_t *n, yaml_node_pair_t **pairs)
{
    *pairs = NULL;
    if (cfg_is_null(n))
        return 0;
    if (n->type != YAML_MAPPING_NODE) {
        cfg_loader_error(c, cfg_line(n), "expected a mapping (key: value), got %s", cfg_kind(n));
        return 0;
    }
    yaml_node_pair_t *start = n->data.mapping.pairs.start;
    size_t count = (size_t)(n->data.mapping.pairs.top - start);
    for (size_t i = 0; i < count; i++) {
        yaml_node_t *k = cfg_node(c, start[i].key);
        if (k == NULL || k->type != YAML_SCALAR_NODE) {
            cfg_loader_error(c, cfg_line(k), "a key must be a plain string, got %s", cfg_kind(k));
            continue;
        }
        for (size_t j = 0; j < i; j++) {
            yaml_node_t *prev = cfg_node(c, start[j].key);
            if (key_eq(prev, (const char *)k->data.scalar.value, k->data.scalar.length)) {
                cfg_loader_error(c, cfg_line(k), "duplicate key '%s' (first at line %d)",
                             (const char *)k->data.scalar.value, cfg_line(prev));
                break;
            }
        }
    }
    *pairs = start;
    return count;
}

size_t cfg_items(cfg_loader_t *c, yaml_node_t *n, yaml_node_item_t **items)
{
    *items = NULL;
    if (cfg_is_null(n))
        return 0;
    if (n->type != YAML_SEQUENCE_NODE) {
        cfg_loader_error(c, cfg_line(n), "expected a list, got %s", cfg_kind(n));
        return 0;
    }
    *items = n->data.sequence.items.start;
    return (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
}

const char *cfg_key(cfg_loader_t *c, const yaml_node_pair_t *pair)
{
    yaml_node_t *k = cfg_node(c, pair->key);
    return k != NULL && k->type == YAML_SCALAR_NODE ? (const char *)k->data.scalar.value : NULL;
}

yaml_node_t *cfg_get(cfg_loader_t *c, yaml_node_t *map, const char *key)
{
    if (map == NULL || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++)
        if (key_eq(cfg_node(c, p->key), key, strlen(key)))
            return cfg_node(c, p->value);
    return NULL;
}

/* ---- scalars ---- */

sl_err_t cfg_str(cfg_loader_t *c, yaml_node_t *n, char **out)
{
    if (n == NULL || n->type != YAML_SCALAR_NODE) {
        cfg_loader_error(c, cfg_line(n), "expected a plain value, got %s", cfg_kind(n));
        return SL_ERR_CONFIG;
    }
    if (cfg_is_null(n)) {
        cfg_loader_error(c, cfg_line(n), "a value is required");
        return SL_ERR_CONFIG;
    }
    const char *v = (const char *)n->data.scalar.value;
    size_t len = n->data.scalar.length;
    if (memchr(v, '\0', len) != NULL) {
        cfg_loader_error(c, cfg_line(n), "value contains a NUL byte");
        return SL_ERR_CONFIG;
    }
    sl_buf_t why = SL_BUF_INIT;
    sl_err_t err = cfg_env_expand(v, len, out, &why);
    if (err != SL_OK)
        cfg_loader_error(c, cfg_line(n), "%s", why.base);
    sl_buf_dispose(&why);
    return err;
}

/* Decimal digits only: YAML's 0x/0o forms, signs, fractions and exponents
 * are refused rather than guessed at. */
static const char *parse_u64(const char *s, uint64_t *out)
{
    if (s[0] == '-')
        return "must not be negative";
    if (s[0] == '\0')
        return "expected a whole number";
    sl_err_t err = sl_parse_u64(s, strlen(s), UINT64_MAX, out);
    if (err == SL_OK)
        return NULL;
    if (err == SL_ERR_RANGE)
        return "number is too large";
    return strchr(s, '.') != NULL ? "must be a whole number, without a fraction" : "expected a decimal whole number";
}

sl_err_t cfg_uint(cfg_loader_t *c, yaml_node_t *n, uint64_t min, uint64_t max, uint64_t *out)
{
    char *s = NULL;
    uint64_t v = 0;
    sl_err_t err = cfg_str(c, n, &s);
    if (err != SL_OK)
        return err;
    const char *why = parse_u64(s, &v);
    err = SL_ERR_CONFIG;
    if (why != NULL)
        cfg_loader_error(c, cfg_line(n), "%s (got '%s')", why, s);
    else if (v < min || v > max)
        cfg_loader_error(c, cfg_line(n), "must be between %" PRIu64 " and %" PRIu64 " (got %s)", min, max, s);
    else {
        *out = v;
        err = SL_OK;
    }
    free(s);
    return err;
}

/* A weight: a plain non-negative decimal ("4", "0.5"), at most 1000. */
static sl_err_t cfg_double(cfg_loader_t *c, yaml_node_t *n, double *out)
{
    char *s = NULL;
    sl_err_t err = cfg_str(c, n, &s);
    if (err != SL_OK)
        return err;
    char *end = NULL;
    size_t digits = strspn(s, "0123456789.");
    double v = strtod(s, &end);
    err = SL_ERR_CONFIG;
    if (digits == 0 || digits != strlen(s) || end == NULL || *end != '\0')
        cfg_loader_error(c, cfg_line(n), "expected a number such as 4 or 0.5 (got '%s')", s);
    else if (!(v >= 0 && v <= 1000))
        cfg_loader_error(c, cfg_line(n), "must be between 0 and 1000 (got %s)", s);
    else {
        *out = v;
        err = SL_OK;
    }
    free(s);
    return err;
}

static const struct {
    const char *word;
    int value;
} bool_words[] = {
    {"true", 1}, {"false", 0}, {"yes", 1}, {"no", 0}, {"on", 1}, {"off", 0},
};

sl_err_t cfg_bool(cfg_loader_t *c, yaml_node_t *n, int *out)
{
    char *s = NULL;
    sl_err_t err = cfg_str(c, n, &s);
    if (err != SL_OK)
        return err;
    err = SL_ERR_CONFIG;
    for (size_t i = 0; i < sizeof(bool_words) / sizeof(bool_words[0]); i++) {
        if (strcasecmp(s, bool_words[i].word) == 0) {
            *out = bool_words[i].value;
            err = SL_OK;
        }
    }
    if (err != SL_OK)
        cfg_loader_error(c, cfg_line(n), "expected true or false (also yes/no, on/off), got '%s'", s);
    free(s);
    return err;
}

sl_err_t cfg_enum(cfg_loader_t *c, yaml_node_t *n, const char *const *names, size_t count, int *out)
{
    char *s = NULL;
    sl_err_t err = cfg_str(c, n, &s);
    if (err != SL_OK)
        return err;
    for (size_t i = 0; i < count; i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = (int)i;
            free(s);
            return SL_OK;
        }
    }
    sl_buf_t b = SL_BUF_INIT;
    for (size_t i = 0; i < count; i++)
        sl_buf_printf(&b, "%s%s", i > 0 ? ", " : "", names[i]);
    const char *guess = cfg_suggest(s, names, count, sizeof(names[0]));
    if (guess != NULL)
        sl_buf_printf(&b, "; did you mean '%s'?", guess);
    cfg_loader_error(c, cfg_line(n), "unknown %s '%s' (expected one of: %s)", last_key(c), s, b.base);
    sl_buf_dispose(&b);
    free(s);
    return SL_ERR_CONFIG;
}

void cfg_strv_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

sl_err_t cfg_str_list(cfg_loader_t *c, yaml_node_t *n, const char *(*check)(const char *s), char ***out,
                         size_t *count)
{
    yaml_node_item_t *items;
    if (n == NULL || (!cfg_is_null(n) && n->type != YAML_SEQUENCE_NODE)) {
        cfg_loader_error(c, cfg_line(n), "expected a list of strings, got %s", cfg_kind(n));
        return SL_ERR_CONFIG;
    }
    size_t ni = cfg_items(c, n, &items), got = 0;
    char **v = sl_xcalloc(ni + 1, sizeof(*v));   /* +1: [] is not NULL */
    sl_err_t err = SL_OK;
    for (size_t i = 0; i < ni; i++) {
        size_t mark = cfg_push_index(c, i);
        yaml_node_t *item = cfg_node(c, items[i]);
        const char *why = NULL;
        if (cfg_str(c, item, &v[got]) != SL_OK)
            err = SL_ERR_CONFIG;
        else if (check != NULL && (why = check(v[got])) != NULL)
            cfg_loader_error(c, cfg_line(item), "%s", why);
        else
            got++;
        if (why != NULL) {
            free(v[got]);
            v[got] = NULL;
            err = SL_ERR_CONFIG;
        }
        cfg_pop(c, mark);
    }
    if (err != SL_OK) {
        cfg_strv_free(v, got);
        return err;
    }
    *out = v;
    *count = got;
    return SL_OK;
}

/* ---- mappings ---- */

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), row[65];
    if (la > 64 || lb > 64)
        return SIZE_MAX;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

const char *cfg_suggest(const char *word, const void *cands, size_t count, size_t stride)
{
    const char *best = NULL;
    size_t best_d = 3;
    for (size_t i = 0; i < count; i++) {
        const char *cand = *(const char *const *)((const char *)cands + i * stride);
        size_t d = edit_distance(word, cand);
        if (d < best_d && d < strlen(cand)) {
            best = cand;
            best_d = d;
        }
    }
    return best;
}

static void decode_field(cfg_loader_t *c, const cfg_field_t *f, yaml_node_t *v, void *target)
{
    void *slot = (char *)target + f->offset;
    uint64_t u = 0;
    char *s = NULL;
    switch (f->type) {
    case CFG_STR:
        if (cfg_str(c, v, &s) == SL_OK) {
            free(*(char **)slot);
            *(char **)slot = s;
        }
        break;
    case CFG_U32:
        if (cfg_uint(c, v, f->min, f->max, &u) == SL_OK)
            *(uint32_t *)slot = (uint32_t)u;
        break;
    case CFG_U64:
        if (cfg_uint(c, v, f->min, f->max, &u) == SL_OK)
            *(uint64_t *)slot = u;
        break;
    case CFG_SIZE:
        if (cfg_uint(c, v, f->min, f->max, &u) == SL_OK)
            *(size_t *)slot = (size_t)u;
        break;
    case CFG_BOOL: {
        int b = 0;
        if (cfg_bool(c, v, &b) == SL_OK)
            *(int *)slot = b;
        break;
    }
    case CFG_DOUBLE: {
        double d = 0;
        if (cfg_double(c, v, &d) == SL_OK)
            *(double *)slot = d;
        break;
    }
    case CFG_FN:
        f->fn(c, v, target);
        break;
    }
}

uint64_t cfg_map_decode(cfg_loader_t *c, yaml_node_t *n, const cfg_field_t *fields, size_t nfields, void *target)
{
    yaml_node_pair_t *pairs;
    uint64_t seen = 0;
    int is_map = cfg_is_null(n) || n->type == YAML_MAPPING_NODE;
    size_t np = cfg_pairs(c, n, &pairs);
    for (size_t i = 0; i < np; i++) {
        const char *key = cfg_key(c, &pairs[i]);
        size_t f = 0;
        if (key == NULL)
            continue;
        while (f < nfields && strcmp(fields[f].key, key) != 0)
            f++;
        size_t mark = cfg_push(c, key);
        if (f == nfields) {
            const char *guess = cfg_suggest(key, fields, nfields, sizeof(fields[0]));
            cfg_loader_error(c, cfg_line(cfg_node(c, pairs[i].key)), "unknown key '%s'%s%s%s", key,
                         guess != NULL ? " (did you mean '" : "", guess != NULL ? guess : "",
                         guess != NULL ? "'?)" : "");
        } else if (!(seen & (UINT64_C(1) << f))) {   /* a repeat is reported by cfg_pairs */
            seen |= UINT64_C(1) << f;
            decode_field(c, &fields[f], cfg_node(c, pairs[i].value), target);
        }
        cfg_pop(c, mark);
    }
    for (size_t f = 0; f < nfields && is_map; f++) {
        if (fields[f].required && !(seen & (UINT64_C(1) << f))) {
            size_t mark = cfg_push(c, fields[f].key);
            cfg_loader_error(c, cfg_line(n), "required key '%s' is missing", fields[f].key);
            cfg_pop(c, mark);
        }
    }
    return seen;
}
