/* wire/json_scan_simd.c: the 64-byte block classifier under the string
 * loop of wire/json_scan.c, and the choice of which one runs.
 *
 * A block's mask has bit i set when byte i may not stand for itself inside
 * a JSON string: '"', '\\', a control byte (< 0x20) or a byte >= 0x80 (the
 * start or middle of a UTF-8 sequence, which the scanner checks one by one).
 * json_scan.c computes a block's mask once and finds every string end in it
 * with a bit scan, so a 64-byte run of hex costs about as much as one byte
 * did in the byte loop.
 *
 * Three classifiers give the same mask: AVX2 (chosen at run time when the
 * CPU has it; compiled with a target attribute, so the build needs no
 * -mavx2), SSE2 (every x86-64) and plain 64-bit integer arithmetic
 * (elsewhere). SLUICE_JSON_SCAN=scalar in the environment, or
 * wire_json_scan_path_set(), keeps the byte loop instead: the oracle that
 * tests/fuzz/fuzz_scan_paths.c compares the others with (swar, sse2 and
 * avx2 name the others). */
#include "wire/json_scan_int.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__SSE2__) && !defined(WIRE_JSON_SWAR_ONLY)
#include <immintrin.h>
#define JSON_SCAN_X86 1
#endif

/* Eight bytes at a time: a byte's high bit in hit is set by a zero byte of
 * q or b (a quote, a backslash), by a byte below 0x20 or by one above 0x7f;
 * borrows only start at such a byte, so the lowest flagged byte is exact,
 * and the bytes above it are classified again one by one. */
static uint64_t word_mask(uint64_t x)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
    uint64_t hit = (((q - ones) & ~q) | ((b - ones) & ~b) | (x - ones * 0x20) | x) & highs;
    if (hit == 0)
        return 0;
    uint64_t m = 0;
    for (unsigned i = (unsigned)__builtin_ctzll(hit) / 8; i < 8; i++) {
        uint8_t c = (uint8_t)(x >> (8 * i)); /* little-endian: byte i of the word */
        m |= (uint64_t)(c == '"' || c == '\\' || c < 0x20 || c >= 0x80) << i;
    }
    return m;
}

static inline __attribute__((always_inline)) uint64_t block_swar(const uint8_t *p)
{
    uint64_t m = 0;
    for (unsigned w = 0; w < 8; w++) {
        uint64_t x;
        memcpy(&x, p + 8 * w, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        x = __builtin_bswap64(x);
#endif
        m |= word_mask(x) << (8 * w);
    }
    return m;
}

#ifdef JSON_SCAN_X86
static inline __attribute__((always_inline)) uint64_t block_sse2(const uint8_t *p)
{
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
    uint64_t m = 0;
    for (unsigned i = 0; i < 4; i++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i));
        /* signed: bytes >= 0x80 are negative, so one compare finds both
         * control bytes and non-ASCII */
        __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
                                   _mm_cmplt_epi8(v, space));
        m |= (uint64_t)(unsigned)_mm_movemask_epi8(hit) << (16 * i);
    }
    return m;
}

/* not always_inline: its address is handed out (wire_json_path_fns), and an
 * optimiser that specialises a caller on that address (a -O3 constprop clone
 * of wire_json_tail_mask) must not be made to inline AVX2 code into a
 * function built for the baseline: plain inline, it is inlined where the
 * target matches (run_avx2) and called elsewhere */
__attribute__((target("avx2"))) static inline uint64_t block_avx2(const uint8_t *p)
{
    const __m256i quote = _mm256_set1_epi8('"'), bslash = _mm256_set1_epi8('\\');
    const __m256i space = _mm256_set1_epi8(0x20);
    __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)p);
    __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32));
    __m256i ha = _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(a, quote), _mm256_cmpeq_epi8(a, bslash)),
                                 _mm256_cmpgt_epi8(space, a));
    __m256i hb = _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(b, quote), _mm256_cmpeq_epi8(b, bslash)),
                                 _mm256_cmpgt_epi8(space, b));
    return (uint64_t)(uint32_t)_mm256_movemask_epi8(ha) | (uint64_t)(uint32_t)_mm256_movemask_epi8(hb) << 32;
}
#endif

__attribute__((noinline)) uint64_t wire_json_tail_mask(const uint8_t *p, const uint8_t *end,
                                                     wire_json_block_fn classify)
{
    size_t n = (size_t)(end - p);
    uint8_t tail[64];
    memcpy(tail, p, n);
    memset(tail + n, 0, 64 - n);
    return classify(tail) | ~0ull << n;
}

static inline __attribute__((always_inline)) uint32_t word4(const void *p)
{
    uint32_t w;
    memcpy(&w, p, 4);
    return w;
}

/* true, false or null at v, with at least 2 bytes left: its length, or 0. */
static inline __attribute__((always_inline)) size_t run_literal(const uint8_t *v, size_t left)
{
    if (left < 4)
        return 0;
    uint32_t w = word4(v);
    if (w == word4("true") || w == word4("null"))
        return 4;
    return left >= 5 && w == word4("fals") && v[4] == 'e' ? 5 : 0;
}

/* A value at v, if it is simple: a plain string, true, false or null, or
 * an opening bracket with such a first member (entered: pushed, *obj is
 * then the new container's kind). Returns where it stopped; *whole is 1 if
 * that is after a whole value, 0 if a value is still due there (nothing
 * consumed, or a bracket and its key). */
static inline __attribute__((always_inline)) const uint8_t *run_value(wire_scan_t *s, const uint8_t *v, int *whole,
                                                                      int *obj, const uint8_t **blk, uint64_t *mask,
                                                                      wire_json_block_fn classify)
{
    const uint8_t *end = s->end, *q;
    *whole = 0;
    for (;;) {
        size_t left = (size_t)(end - v), n;
        if (left < 2)
            return v;
        switch (*v) {
        case '"':
            q = wire_json_find(v + 1, end, blk, mask, classify);
            if (q == end || *q != '"')
                return v;
            *whole = 1;
            return q + 1;
        case 't':
        case 'f':
        case 'n':
            if ((n = run_literal(v, left)) == 0)
                return v;
            *whole = 1;
            return v + n;
        case '{':
            if (v[1] != '"' || s->depth >= WIRE_JSON_MAX_DEPTH)
                return v;
            q = wire_json_find(v + 2, end, blk, mask, classify);
            if (end - q < 2 || q[0] != '"' || q[1] != ':')
                return v;
            (void)wire_scan_push(s, 1);
            *obj = 1;
            v = q + 2;
            continue;
        case '[':
            if (v[1] != '"' || s->depth >= WIRE_JSON_MAX_DEPTH)
                return v;
            (void)wire_scan_push(s, 0);
            *obj = 0;
            v++;
            continue;
        default:
            return v;
        }
    }
}

/* wire_json_run_fn, with the classifier inlined into each path's copy. */
static inline __attribute__((always_inline)) int run_plain(wire_scan_t *s, unsigned base, wire_json_block_fn classify)
{
    const uint8_t *p = s->p, *end = s->end, *blk = s->blk;
    uint64_t mask = s->mask;
    int due = 0, obj = wire_scan_top_is_object(s);
    while (p != end) {
        const uint8_t *v = p + 1;
        if (*p == ',') {
            if (obj) {
                if (end - p < 2 || p[1] != '"')
                    break;
                const uint8_t *q = wire_json_find(p + 2, end, &blk, &mask, classify);
                if (end - q < 3 || q[0] != '"' || q[1] != ':')
                    break;
                v = q + 2;
                /* the usual member, ,"key":"value": its value's end found
                 * here, without a round through run_value's dispatch */
                if (*v == '"') {
                    q = wire_json_find(v + 1, end, &blk, &mask, classify);
                    if (q == end || *q != '"')
                        break;
                    p = q + 1;
                    continue;
                }
            }
            int whole;
            p = run_value(s, v, &whole, &obj, &blk, &mask, classify);
            if (!whole) {
                due = 1;
                break;
            }
        } else if (*p == (obj ? '}' : ']')) {
            s->depth--;
            p++;
            if (s->depth == base)
                break;
            obj = wire_scan_top_is_object(s);
        } else {
            break;
        }
    }
    s->p = p;
    s->blk = blk;
    s->mask = mask;
    return due;
}

static int run_swar(wire_scan_t *s, unsigned base)
{
    return run_plain(s, base, block_swar);
}

#ifdef JSON_SCAN_X86
static int run_sse2(wire_scan_t *s, unsigned base)
{
    return run_plain(s, base, block_sse2);
}

__attribute__((target("avx2"))) static int run_avx2(wire_scan_t *s, unsigned base)
{
    return run_plain(s, base, block_avx2);
}
#endif

/* Can this CPU, and this build, take path? */
static int path_runs(wire_json_path_t path)
{
#ifdef JSON_SCAN_X86
    __builtin_cpu_init();
    return path != WIRE_JSON_PATH_AVX2 || __builtin_cpu_supports("avx2");
#else
    return path != WIRE_JSON_PATH_AVX2 && path != WIRE_JSON_PATH_SSE2;
#endif
}

/* 0 until first asked, then the path every scan starts with. Written once
 * per process by whoever asks first (the same answer each time), read by
 * every worker: relaxed atomics. */
static int chosen;

/* SLUICE_JSON_SCAN=scalar|swar|sse2|avx2 asks for a path; one this CPU or
 * build cannot run, or no such variable, leaves the choice to the CPU. */
static wire_json_path_t path_detect(void)
{
    static const char *const names[] = {
        [WIRE_JSON_PATH_SCALAR] = "scalar", [WIRE_JSON_PATH_SWAR] = "swar",
        [WIRE_JSON_PATH_SSE2] = "sse2",     [WIRE_JSON_PATH_AVX2] = "avx2",
    };
    const char *env = getenv("SLUICE_JSON_SCAN");
    for (int p = WIRE_JSON_PATH_SCALAR; env != NULL && p <= WIRE_JSON_PATH_AVX2; p++)
        if (strcmp(env, names[p]) == 0 && path_runs((wire_json_path_t)p))
            return (wire_json_path_t)p;
    return path_runs(WIRE_JSON_PATH_AVX2) ? WIRE_JSON_PATH_AVX2
           : path_runs(WIRE_JSON_PATH_SSE2) ? WIRE_JSON_PATH_SSE2
                                            : WIRE_JSON_PATH_SWAR;
}

wire_json_path_t wire_json_scan_path(void)
{
    int p = __atomic_load_n(&chosen, __ATOMIC_RELAXED);
    if (p == 0) {
        p = (int)path_detect();
        __atomic_store_n(&chosen, p, __ATOMIC_RELAXED);
    }
    return (wire_json_path_t)p;
}

int wire_json_scan_path_set(wire_json_path_t path)
{
    if (path != WIRE_JSON_PATH_DEFAULT && !path_runs(path))
        return -1;
    __atomic_store_n(&chosen, (int)path, __ATOMIC_RELAXED);
    return 0;
}

void wire_json_path_fns(wire_json_block_fn *classify, wire_json_run_fn *run)
{
    switch (wire_json_scan_path()) {
    case WIRE_JSON_PATH_DEFAULT:
    case WIRE_JSON_PATH_SCALAR:
        *classify = NULL, *run = NULL;
        return;
    case WIRE_JSON_PATH_SWAR:
        *classify = block_swar, *run = run_swar;
        return;
#ifdef JSON_SCAN_X86
    case WIRE_JSON_PATH_SSE2:
        *classify = block_sse2, *run = run_sse2;
        return;
    case WIRE_JSON_PATH_AVX2:
        *classify = block_avx2, *run = run_avx2;
        return;
#else
    case WIRE_JSON_PATH_SSE2:
    case WIRE_JSON_PATH_AVX2:
        *classify = block_swar, *run = run_swar;
        return;
#endif
    }
}
