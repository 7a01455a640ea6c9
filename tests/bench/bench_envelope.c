/* tests/bench/bench_envelope.c: how long wire_envelope_scan takes on an
 * eth_getLogs-like answer, next to cJSON_Parse on the same bytes.
 *
 *   gcc -O2 -I. -I/usr/include/cjson tests/bench/bench_envelope.c \
 *       wire/envelope.c wire/json_scan.c wire/json_scan_simd.c base/sl_err.c -lcjson -o /tmp/bench_envelope
 *   /tmp/bench_envelope [iterations] [logs | FILE]
 *
 * FILE: scan that file's bytes instead (an answer saved from the fake
 * provider, say). SLUICE_JSON_SCAN=scalar|sse2 picks the scanner's path;
 * under valgrind --tool=callgrind the instructions per byte follow.
 *
 * Not a CMake target: a number on a shared CI machine means little. */
#include <cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wire/envelope.h"
#include "wire/json_scan.h"

static char answer[1 << 20];

/* xorshift: the same "random" hex on every run */
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static unsigned next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)rng;
}

static size_t put_hex(char *p, unsigned ndigits)
{
    static const char digits[] = "0123456789abcdef";
    size_t n = (size_t)sprintf(p, "\"0x");
    for (unsigned i = 0; i < ndigits; i++)
        p[n++] = digits[next_rand() & 15];
    p[n++] = '"';
    return n;
}

static size_t put_log(char *p, unsigned i)
{
    size_t n = (size_t)sprintf(p, "%s{\"address\":", i ? "," : "");
    n += put_hex(p + n, 40);
    n += (size_t)sprintf(p + n, ",\"topics\":[");
    for (unsigned t = 0, nt = 1 + next_rand() % 4; t < nt; t++) {
        n += (size_t)sprintf(p + n, "%s", t ? "," : "");
        n += put_hex(p + n, 64);
    }
    n += (size_t)sprintf(p + n, "],\"data\":");
    n += put_hex(p + n, 64 * (1 + next_rand() % 6));
    n += (size_t)sprintf(p + n, ",\"blockNumber\":\"0x%x\",\"transactionHash\":", 17600000 + i / 8);
    n += put_hex(p + n, 64);
    n += (size_t)sprintf(p + n, ",\"transactionIndex\":\"0x%x\",\"blockHash\":", i % 200);
    n += put_hex(p + n, 64);
    n += (size_t)sprintf(p + n, ",\"logIndex\":\"0x%x\",\"removed\":false}", i);
    return n;
}

static size_t make_answer(unsigned nlogs)
{
    size_t n = (size_t)sprintf(answer, "{\"jsonrpc\":\"2.0\",\"id\":42,\"result\":[");
    for (unsigned i = 0; i < nlogs; i++)
        n += put_log(answer + n, i);
    n += (size_t)sprintf(answer + n, "]}");
    return n;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static volatile uint32_t sink;

static void report(const char *what, double ns, unsigned iters, size_t len)
{
    double per = ns / iters;
    printf("%-28s %9.0f ns/scan  %8.1f MB/s\n", what, per, (double)len / per * 1e3);
}

int main(int argc, char **argv)
{
    unsigned iters = argc > 1 ? (unsigned)atoi(argv[1]) : 100000;
    unsigned nlogs = argc > 2 ? (unsigned)atoi(argv[2]) : 39; /* 28 KB */
    size_t len;
    if (argc > 2 && nlogs == 0) {
        FILE *f = fopen(argv[2], "rb");
        if (f == NULL) {
            perror(argv[2]);
            return 1;
        }
        len = fread(answer, 1, sizeof answer, f);
        fclose(f);
    } else {
        len = make_answer(nlogs);
    }
    static const char *const paths[] = {"default", "scalar", "swar", "sse2", "avx2"};
    printf("input: %zu bytes, %u iterations, path %s\n", len, iters, paths[wire_json_scan_path()]);

    wire_envelope_t env;
    if (wire_envelope_scan(answer, len, &env) != SL_OK) {
        fprintf(stderr, "bench input does not scan\n");
        return 1;
    }
    double t0 = now_ns();
    for (unsigned i = 0; i < iters; i++) {
        sl_err_t err = wire_envelope_scan(answer, len, &env);
        sink += env.result.len + (uint32_t)err;
    }
    report("wire_envelope_scan", now_ns() - t0, iters, len);

    wire_json_kind_t kind;
    wire_span_t v;
    t0 = now_ns();
    for (unsigned i = 0; i < iters; i++) {
        sl_err_t err = wire_json_validate(answer, len, &kind, &v);
        sink += v.len + (uint32_t)err;
    }
    report("wire_json_validate", now_ns() - t0, iters, len);

    unsigned citers = iters / 10 ? iters / 10 : 1;
    t0 = now_ns();
    for (unsigned i = 0; i < citers; i++) {
        cJSON *root = cJSON_ParseWithLength(answer, len);
        sink += root != NULL;
        cJSON_Delete(root);
    }
    report("cJSON_Parse + cJSON_Delete", now_ns() - t0, citers, len);
    return 0;
}
