/* fp_stats.c: request counters, per-method counts, and the store of
 * transactions this provider "received" (for receipts and sent_raw).
 *
 * The per-method map is touched on every call, so it is an open-addressing
 * hash over the raw method name rather than a list walk. */
#include "fp.h"

#include <stdlib.h>
#include <string.h>

#include "base/sl_hash.h"

#define FP_METHODS_MAX 4096     /* distinct names counted; later ones share "(other)" */

static void index_insert(fp_stats_t *st, size_t i)
{
    const char *name = st->methods[i].name;
    size_t mask = st->index_cap - 1;
    size_t j = sl_fnv1a(SL_FNV1A_OFFSET, name, strlen(name)) & mask;
    while (st->method_index[j])
        j = (j + 1) & mask;
    st->method_index[j] = (uint32_t)i + 1;
}

static void methods_add(fp_stats_t *st, const char *p, size_t n)
{
    if (st->method_count == st->method_cap) {
        st->method_cap = st->method_cap ? st->method_cap * 2 : 32;
        st->methods = fp_xrealloc(st->methods, st->method_cap * sizeof *st->methods);
    }
    st->methods[st->method_count++] = (fp_counter_t){fp_xstrndup(p, n), 1};
    if (st->method_count * 2 <= st->index_cap) {
        index_insert(st, st->method_count - 1);
        return;
    }
    /* grow: keep the load under one half so probes stay short */
    free(st->method_index);
    st->index_cap = st->index_cap ? st->index_cap * 2 : 64;
    st->method_index = calloc(st->index_cap, sizeof *st->method_index);
    if (!st->method_index)
        abort();
    for (size_t i = 0; i < st->method_count; i++)
        index_insert(st, i);
}

void fp_stats_count_method(fp_stats_t *st, fp_span_t raw)
{
    if (raw.n > FP_METHOD_MAX || st->method_count >= FP_METHODS_MAX)
        raw = (fp_span_t){"(other)", 7};
    if (st->index_cap) {
        size_t mask = st->index_cap - 1;
        for (size_t j = sl_fnv1a(SL_FNV1A_OFFSET, raw.p, raw.n) & mask; st->method_index[j]; j = (j + 1) & mask) {
            fp_counter_t *e = &st->methods[st->method_index[j] - 1];
            if (strncmp(e->name, raw.p, raw.n) == 0 && e->name[raw.n] == '\0') {
                e->n++;
                return;
            }
        }
    }
    methods_add(st, raw.p, raw.n);
}

void fp_stats_dispose(fp_stats_t *st)
{
    for (size_t i = 0; i < st->method_count; i++)
        free(st->methods[i].name);
    for (size_t i = 0; i < st->sent_count; i++)
        free(st->sent_raw[i]);
    free(st->methods);
    free(st->method_index);
    free(st->sent_raw);
    *st = (fp_stats_t){0};
}

void fp_stats_reset(fp_stats_t *st)
{
    fp_stats_dispose(st);
}

static size_t tx_slot(const fp_txstore_t *ts, const char *key, size_t n)
{
    size_t mask = ts->cap - 1;
    size_t j = sl_fnv1a(SL_FNV1A_OFFSET, key, n) & mask;
    while (ts->slots[j].key
           && !(strncmp(ts->slots[j].key, key, n) == 0 && ts->slots[j].key[n] == '\0'))
        j = (j + 1) & mask;
    return j;
}

static void txstore_grow(fp_txstore_t *ts)
{
    fp_txstore_t bigger = {.cap = ts->cap ? ts->cap * 2 : 256, .count = ts->count};
    bigger.slots = calloc(bigger.cap, sizeof *bigger.slots);
    if (!bigger.slots)
        abort();
    for (size_t i = 0; i < ts->cap; i++)
        if (ts->slots[i].key)
            bigger.slots[tx_slot(&bigger, ts->slots[i].key, strlen(ts->slots[i].key))] = ts->slots[i];
    free(ts->slots);
    *ts = bigger;
}

const fp_tx_t *fp_tx_find(const fp_txstore_t *ts, const char *key, size_t n)
{
    if (ts->cap == 0)
        return NULL;
    const fp_tx_t *t = &ts->slots[tx_slot(ts, key, n)];
    return t->key ? t : NULL;
}

/* Every send is listed (duplicates show up, which tests want to see); the
 * receipt keeps the block of the first one, as a real chain would. */
void fp_tx_record(fp_server_t *srv, const char *key, uint64_t block)
{
    fp_stats_t *st = &srv->stats;
    fp_txstore_t *ts = &srv->txs;
    size_t n = strlen(key);
    if (st->sent_count == st->sent_cap) {
        st->sent_cap = st->sent_cap ? st->sent_cap * 2 : 16;
        st->sent_raw = fp_xrealloc(st->sent_raw, st->sent_cap * sizeof *st->sent_raw);
    }
    st->sent_raw[st->sent_count++] = fp_xstrndup(key, n);
    if ((ts->count + 1) * 2 > ts->cap)
        txstore_grow(ts);
    fp_tx_t *t = &ts->slots[tx_slot(ts, key, n)];
    if (t->key)
        return;
    *t = (fp_tx_t){fp_xstrndup(key, n), block};
    ts->count++;
}

void fp_txstore_dispose(fp_txstore_t *ts)
{
    for (size_t i = 0; i < ts->cap; i++)
        free(ts->slots[i].key);
    free(ts->slots);
    *ts = (fp_txstore_t){0};
}
