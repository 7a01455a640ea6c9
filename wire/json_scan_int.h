/* wire/json_scan_int.h: what wire/json_scan.c shares with
 * wire/json_scan_simd.c (the 64-byte block classifiers, the run of plain
 * members, the choice among paths). Only for wire/ and its tests. */
#ifndef WIRE_JSON_SCAN_INT_H
#define WIRE_JSON_SCAN_INT_H

#include <stdint.h>

#include "wire/json_scan.h"

/* Bit i of the answer: byte p[i] is '"', '\\', below 0x20 or above 0x7f.
 * Reads exactly p[0..64). */
typedef uint64_t (*wire_json_block_fn)(const uint8_t *p);

/* After a complete value inside a container (s->p just past it, s->depth >
 * base): consumes what follows while it is compact JSON made of plain
 * strings (no whitespace, escapes or bytes >= 0x80), true, false, null and
 * brackets: ,"key":"value" members, ,"value" items, closing brackets down
 * to depth base, and opening ones followed by such a first member. 1 if it
 * stopped with a value due at s->p (a number, say: whatever was before it
 * consumed); 0 if it stopped after a value (at whitespace, an escape, the
 * end of the input, anything invalid...), for the general loop. */
typedef int (*wire_json_run_fn)(wire_scan_t *s, unsigned base);

static inline sl_err_t wire_scan_push(wire_scan_t *s, int is_object)
{
    if (s->depth >= WIRE_JSON_MAX_DEPTH)
        return SL_ERR_TOO_DEEP;
    uint64_t bit = 1ull << (s->depth & 63);
    uint64_t *word = &s->is_object[s->depth >> 6];
    *word = is_object ? *word | bit : *word & ~bit;
    s->depth++;
    return SL_OK;
}

static inline int wire_scan_top_is_object(const wire_scan_t *s)
{
    unsigned d = s->depth - 1;
    return (int)(s->is_object[d >> 6] >> (d & 63) & 1);
}

/* The functions of the path in use; both NULL for WIRE_JSON_PATH_SCALAR. */
void wire_json_path_fns(wire_json_block_fn *classify, wire_json_run_fn *run);

/* Classifies the fewer than 64 bytes of [p, end) as classify would, the
 * missing ones counting as special. */
uint64_t wire_json_tail_mask(const uint8_t *p, const uint8_t *end, wire_json_block_fn classify);

/* The first byte of [p, end) that is not plain, or end. *blk and *mask are
 * the current block and its classification (wire_scan_t's fields), moved
 * on as needed; *blk == end with *mask all ones before the first search. */
static inline __attribute__((always_inline)) const uint8_t *
wire_json_find(const uint8_t *p, const uint8_t *end, const uint8_t **blk, uint64_t *mask, wire_json_block_fn classify)
{
    for (;;) {
        uintptr_t off = (uintptr_t)p - (uintptr_t)*blk;
        if (__builtin_expect(off < 64, 1)) {
            uint64_t m = *mask >> off;
            if (m)
                return p + __builtin_ctzll(m);
            p = *blk + 64; /* a block with no bit left was a whole one */
        }
        *blk = p;
        *mask = end - p >= 64 ? classify(p) : wire_json_tail_mask(p, end, classify);
    }
}

#endif
