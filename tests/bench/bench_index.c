/* tests/bench/bench_index.c: what the first half of a two-stage scanner
 * (simdjson's stage 1) would cost on sluice's answers, measured before
 * building it into wire/ (issue 37): each 64-byte block classified once with
 * AVX2 (quotes, backslashes, control and non-ASCII bytes, the six structural
 * characters by two nibble lookups), the in-string mask by a carry-less
 * multiply (prefix XOR), and the positions of every token (structural
 * characters outside strings, every quote, the start of every other run)
 * written to an index. No validation, no walk: what stage 1 alone costs is
 * the floor of that design, to set beside wire_envelope_scan's whole cost.
 *
 *   gcc -O2 -g tests/bench/bench_index.c -o /tmp/bench_index
 *   valgrind --tool=callgrind --toggle-collect=index_answer /tmp/bench_index 11 FILE
 *   (Ir collected / 12 / FILE's size = instructions per byte; tests/bench/README.md)
 *
 * Not a CMake target; not used by sluice. A block holding a backslash, a
 * control or a non-ASCII byte stops the prototype (it would be handed to the
 * scalar scanner): the measured answers have none. */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char input[1 << 22];
static uint32_t idx[1 << 22];

/* bit k of the class of a byte, from its low and high nibble: ',' ':' '{'
 * '}' '[' ']' each a bit; the AND of the two lookups is exact for these */
__attribute__((target("avx2,pclmul"))) static inline uint64_t block_masks(const uint8_t *p, uint64_t *quote,
                                                                          uint64_t *odd)
{
    const __m256i lo_tbl = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 4 | 16, 1, 8 | 32, 0, 0, 0, 0, 0,
                                            0, 0, 0, 0, 0, 0, 0, 2, 4 | 16, 1, 8 | 32, 0, 0);
    const __m256i hi_tbl = _mm256_setr_epi8(0, 0, 1, 2, 0, 16 | 32, 0, 4 | 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
                                            2, 0, 16 | 32, 0, 4 | 8, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m256i nib = _mm256_set1_epi8(0x0f), zero = _mm256_setzero_si256();
    const __m256i q = _mm256_set1_epi8('"'), bs = _mm256_set1_epi8('\\'), sp = _mm256_set1_epi8(0x20);
    uint64_t st = 0, qu = 0, bad = 0;
    for (int h = 0; h < 2; h++) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32 * h));
        __m256i lo = _mm256_shuffle_epi8(lo_tbl, _mm256_and_si256(v, nib));
        __m256i hi = _mm256_shuffle_epi8(hi_tbl, _mm256_and_si256(_mm256_srli_epi16(v, 4), nib));
        __m256i cls = _mm256_and_si256(lo, hi);
        uint64_t s = (uint32_t)~_mm256_movemask_epi8(_mm256_cmpeq_epi8(cls, zero));
        uint64_t qq = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, q));
        uint64_t b = (uint32_t)_mm256_movemask_epi8(
            _mm256_or_si256(_mm256_cmpeq_epi8(v, bs), _mm256_cmpgt_epi8(sp, v)));
        st |= s << (32 * h), qu |= qq << (32 * h), bad |= b << (32 * h);
    }
    *quote = qu;
    *odd = bad;
    return st;
}

__attribute__((target("avx2,pclmul"))) static inline uint64_t prefix_xor(uint64_t x)
{
    __m128i a = _mm_set_epi64x(0, (long long)x);
    return (uint64_t)_mm_cvtsi128_si64(_mm_clmulepi64_si128(a, _mm_set1_epi8((char)0xff), 0));
}

/* Writes the tokens of buf[0..len) (whole blocks; the tail padded with
 * spaces) to idx; returns how many, or -1 at a block it cannot take. */
__attribute__((noinline, target("avx2,pclmul"))) long index_answer(const uint8_t *buf, size_t len)
{
    uint64_t in_carry = 0, other_carry = 0;
    long n = 0;
    for (size_t b = 0; b < len; b += 64) {
        uint8_t tail[64];
        const uint8_t *p = buf + b;
        if (len - b < 64) {
            memset(tail, ' ', 64);
            memcpy(tail, p, len - b);
            p = tail;
        }
        uint64_t quote, odd;
        uint64_t st = block_masks(p, &quote, &odd);
        if (odd)
            return -1;
        uint64_t in = prefix_xor(quote) ^ in_carry; /* the opening quote and what follows it */
        in_carry = (uint64_t)((int64_t)in >> 63);
        uint64_t out = ~in & ~quote, other = out & ~st;
        /* a run of other bytes (a number, a literal, or whitespace: no
         * separate whitespace class is computed, which saves a lookup per
         * block) is one token at its first byte; a walk would skip the
         * whitespace at such a token and check what follows it */
        uint64_t tok = (st & out) | quote | (other & ~(other << 1 | other_carry));
        other_carry = other >> 63;
        long cnt = __builtin_popcountll(tok), i = n;
        while (tok) { /* flattened as simdjson does: four at a time, unconditionally */
            idx[i] = (uint32_t)(b + (size_t)__builtin_ctzll(tok));
            tok &= tok - 1;
            idx[i + 1] = (uint32_t)(b + (size_t)__builtin_ctzll(tok));
            tok &= tok - 1;
            idx[i + 2] = (uint32_t)(b + (size_t)__builtin_ctzll(tok));
            tok &= tok - 1;
            idx[i + 3] = (uint32_t)(b + (size_t)__builtin_ctzll(tok));
            tok &= tok - 1;
            i += 4;
        }
        n += cnt; /* the slots past it were written as padding */
    }
    return n;
}

int main(int argc, char **argv)
{
    unsigned iters = argc > 1 ? (unsigned)atoi(argv[1]) : 1000;
    if (argc < 3) {
        fprintf(stderr, "usage: %s ITERATIONS FILE\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[2], "rb");
    if (f == NULL) {
        perror(argv[2]);
        return 1;
    }
    size_t len = fread(input, 1, sizeof input, f);
    fclose(f);
    long n = 0;
    for (unsigned i = 0; i <= iters; i++)
        n = index_answer((const uint8_t *)input, len);
    printf("input %zu bytes, %ld tokens per pass\n", len, n);
    return n < 0;
}
