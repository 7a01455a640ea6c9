/* tests/bench/epoll_ctl_cost.c: what the two epoll_ctl calls h2o 2.2.5 makes
 * per keep-alive HTTP/1 request cost, in ns per pair (issue 37).
 *
 *   gcc -O2 -Wall -Wextra tests/bench/epoll_ctl_cost.c -o /tmp/epoll_ctl_cost
 *   taskset -c 0 /tmp/epoll_ctl_cost [pairs_per_run] [runs] [other_sockets]
 *
 * Defaults: 200,000 pairs per run, 9 runs, 64 other connected sockets in the
 * same epoll set (a worker at c=64). One loopback TCP connection is
 * registered for EPOLLIN, as h2o registers a client socket; each case then
 * toggles its read interest off and on, as h2o does around a request:
 *
 *   del+add   EPOLL_CTL_DEL, then EPOLL_CTL_ADD (EPOLLIN): what Debian's
 *             2.2.5 does (its epoll backend deletes a socket whose interest
 *             drops to none and adds it back; strace shows DEL/ADD, not MOD)
 *   mod+mod   EPOLL_CTL_MOD (0), then EPOLL_CTL_MOD (EPOLLIN): what later
 *             h2o versions do
 *   getppid2  two getppid(2) calls: the bare price of entering the kernel
 *             twice, for scale
 *
 * Prints each run's CPU ns per pair (the thread's user + system time, so
 * other processes on the core do not count; the kernel's deferred freeing
 * of a deleted registration, an RCU callback, may run elsewhere and is
 * not counted) and the median. Not a CMake target: a
 * number on a shared CI machine means little. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what)
{
    perror(what);
    exit(1);
}

/* a listening socket on an ephemeral loopback port */
static int listen_any(struct sockaddr_in *addr)
{
    int l = socket(AF_INET, SOCK_STREAM, 0);
    if (l < 0)
        die("socket");
    memset(addr, 0, sizeof(*addr));
    addr->sin_family = AF_INET;
    addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(*addr);
    if (bind(l, (struct sockaddr *)addr, len) != 0 || listen(l, 512) != 0
        || getsockname(l, (struct sockaddr *)addr, &len) != 0)
        die("bind/listen");
    return l;
}

/* the server side of a fresh loopback connection (the client side leaks: it
 * must stay open for the server side to stay connected) */
static int connected_pair(int l, const struct sockaddr_in *addr)
{
    int c = socket(AF_INET, SOCK_STREAM, 0);
    if (c < 0 || connect(c, (const struct sockaddr *)addr, sizeof(*addr)) != 0)
        die("connect");
    int s = accept(l, NULL, NULL);
    if (s < 0)
        die("accept");
    return s;
}

static void ctl(int ep, int op, int fd, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data = {.fd = fd}};
    if (epoll_ctl(ep, op, fd, &ev) != 0)
        die("epoll_ctl");
}

/* the thread's CPU time (user + system): time spent in other processes on
 * the same core does not count, which steadies the figure on a busy machine */
static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

enum bench_case { CASE_DEL_ADD, CASE_MOD_MOD, CASE_GETPPID2, CASE_COUNT };
static const char *const case_names[CASE_COUNT] = {"del+add", "mod+mod", "getppid2"};

/* ns per pair of one run of n pairs */
static double run_case(enum bench_case c, int ep, int fd, long n)
{
    uint64_t t0 = now_ns();
    for (long i = 0; i < n; i++) {
        switch (c) {
        case CASE_DEL_ADD:
            ctl(ep, EPOLL_CTL_DEL, fd, 0);
            ctl(ep, EPOLL_CTL_ADD, fd, EPOLLIN);
            break;
        case CASE_MOD_MOD:
            ctl(ep, EPOLL_CTL_MOD, fd, 0);
            ctl(ep, EPOLL_CTL_MOD, fd, EPOLLIN);
            break;
        case CASE_GETPPID2:
            (void)syscall(SYS_getppid);
            (void)syscall(SYS_getppid);
            break;
        case CASE_COUNT:
            break;
        }
    }
    return (double)(now_ns() - t0) / (double)n;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 200000;
    int runs = argc > 2 ? atoi(argv[2]) : 9;
    int others = argc > 3 ? atoi(argv[3]) : 64;
    if (n <= 0 || runs <= 0 || runs > 99 || others < 0)
        return fprintf(stderr, "usage: epoll_ctl_cost [pairs_per_run] [runs 1-99] [other_sockets]\n"), 2;

    struct sockaddr_in addr;
    int l = listen_any(&addr);
    int ep = epoll_create1(0);
    if (ep < 0)
        die("epoll_create1");
    for (int i = 0; i < others; i++)
        ctl(ep, EPOLL_CTL_ADD, connected_pair(l, &addr), EPOLLIN);
    int fd = connected_pair(l, &addr);
    ctl(ep, EPOLL_CTL_ADD, fd, EPOLLIN);

    printf("%ld pairs per run, %d runs, %d other sockets in the set\n", n, runs, others);
    double ns[CASE_COUNT][99];
    for (int c = 0; c < CASE_COUNT; c++)
        (void)run_case((enum bench_case)c, ep, fd, n / 10 + 1); /* warm-up */
    /* the cases take turns within each run, so drift of a busy machine hits them alike */
    for (int r = 0; r < runs; r++)
        for (int c = 0; c < CASE_COUNT; c++)
            ns[c][r] = run_case((enum bench_case)c, ep, fd, n);
    for (int c = 0; c < CASE_COUNT; c++) {
        printf("%-9s", case_names[c]);
        for (int r = 0; r < runs; r++)
            printf(" %.0f", ns[c][r]);
        qsort(ns[c], (size_t)runs, sizeof(ns[c][0]), cmp_double);
        printf("  | median %.0f ns per pair (min %.0f, max %.0f)\n", ns[c][runs / 2], ns[c][0], ns[c][runs - 1]);
    }
    return 0;
}
