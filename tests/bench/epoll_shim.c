/* tests/bench/epoll_shim.c: an LD_PRELOAD shim that keeps an accepted
 * (client) socket registered in epoll between keep-alive requests, to measure
 * what h2o 2.2.5's two epoll_ctl calls per request cost sluice (issue 37).
 * A MEASUREMENT, NOT A FIX: see the last paragraph. Figures and method:
 * docs/performance.md, "h2o's two epoll_ctl per request".
 *
 *   gcc -O2 -Wall -Wextra -shared -fPIC tests/bench/epoll_shim.c -o /tmp/epoll_shim.so -ldl
 *   LD_PRELOAD=/tmp/epoll_shim.so build/server/sluice -c sluice.yaml
 *   strace -f -yy -e trace=epoll_ctl ...   to see which calls are left
 *
 * What h2o 2.2.5 (Debian's libh2o-evloop) does: its HTTP/1 server stops
 * reading a client socket once a request is parsed and starts again after
 * the answer is written; its epoll backend applies the change before the next
 * epoll_wait, as EPOLL_CTL_DEL when the socket's interest drops to none and
 * EPOLL_CTL_ADD (EPOLLIN) when reading starts again (strace shows DEL + ADD,
 * not MOD). What the shim does, for sockets returned by accept/accept4 only
 * (upstream sockets and listeners pass through untouched):
 *
 *   - DEL while the kernel holds exactly EPOLLIN: not made; the socket stays
 *     registered for EPOLLIN ("parked");
 *   - ADD on a parked socket: not made when the events asked for are the ones
 *     registered, else made as a MOD;
 *   - anything else is made as asked. close() and a new accept/socket on
 *     the same fd number forget the fd's state (the kernel drops a closed
 *     fd's registration itself).
 *
 * EPOLL_SHIM_MODE=naive stops there. h2o's epoll loop ignores EPOLLIN on a
 * socket it does not poll for reading (it logs "ignoring epoll event" at most
 * once a minute), and epoll is level-triggered: a parked socket that becomes
 * readable while its request is handled (a client that pipelines a second
 * request after the first was read, or closes its end) makes every
 * epoll_wait return at once until the answer is written and h2o reads
 * again. No byte is lost or reordered, but the worker spins for as long as
 * the request waits upstream.
 *
 * EPOLL_SHIM_MODE=lazy (the default) removes the spin: the shim registers a
 * client socket with its fd (tagged) as the event's data and keeps h2o's
 * data itself; its epoll_wait gives h2o back its own data and, for an event
 * on a parked socket (one h2o believes deleted, so the kernel would not have
 * reported it), makes the DEL then and drops the event. The DEL is paid only
 * when a parked socket turns readable, not on every request.
 *
 * EPOLL_SHIM_MODE=time keeps h2o's calls as they are and times the client
 * sockets' DEL and ADD where they happen, in the worker under load (medians to
 * stderr every 50,000 ADDs).
 *
 * In every mode this is a MEASUREMENT, not a fix: it interposes libc beneath
 * h2o and relies on how 2.2.5's epoll backend behaves inside (DEL at no
 * interest, ADD to resume, events it did not ask for ignored), none of which
 * is h2o's public API.
 *
 * Not a CMake target. Linux only. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SHIM_MAX_FD 65536
#define SHIM_TAG (1ull << 63) /* above any user-space pointer h2o registers */

typedef struct shim_fd {
    uint8_t client;     /* returned by accept/accept4 */
    uint8_t kernel_reg; /* registered in the kernel's set */
    uint8_t parked;     /* registered though h2o believes it deleted it */
    uint32_t events;    /* what the kernel holds */
    uint64_t data;      /* h2o's data for it (lazy mode: the kernel holds the tagged fd) */
} shim_fd_t;

static shim_fd_t shim_fds[SHIM_MAX_FD];
enum shim_mode { SHIM_LAZY, SHIM_NAIVE, SHIM_TIME };
static int shim_mode_v = -1;

static enum shim_mode shim_mode(void)
{
    if (shim_mode_v < 0) {
        const char *m = getenv("EPOLL_SHIM_MODE");
        shim_mode_v = m == NULL ? SHIM_LAZY : strcmp(m, "naive") == 0 ? SHIM_NAIVE
                                            : strcmp(m, "time") == 0  ? SHIM_TIME
                                                                      : SHIM_LAZY;
    }
    return (enum shim_mode)shim_mode_v;
}

static int shim_is_lazy(void)
{
    return shim_mode() == SHIM_LAZY;
}

/* EPOLL_SHIM_MODE=time: every client DEL and ADD is made as asked and timed
 * (CLOCK_MONOTONIC, in 10 ns bins); each SHIM_TIME_BATCH ADDs the medians go
 * to stderr. A median shrugs off the calls during which the core was taken. */
#define SHIM_TIME_BINS 2000
#define SHIM_TIME_BATCH 50000
static uint32_t shim_hist[2][SHIM_TIME_BINS];
static uint32_t shim_timed[2];

static long shim_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static long shim_median_ns(const uint32_t *h, uint32_t n)
{
    uint32_t seen = 0;
    for (int b = 0; b < SHIM_TIME_BINS; b++)
        if ((seen += h[b]) * 2 >= n)
            return b * 10L + 5;
    return SHIM_TIME_BINS * 10L;
}

static int shim_timed_ctl(int ep, int op, int fd, struct epoll_event *ev)
{
    long t0 = shim_now_ns();
    int ret = (int)syscall(SYS_epoll_ctl, ep, op, fd, ev);
    long bin = (shim_now_ns() - t0) / 10;
    int k = op == EPOLL_CTL_ADD;
    if (op != EPOLL_CTL_DEL && op != EPOLL_CTL_ADD)
        return ret;
    shim_hist[k][bin < SHIM_TIME_BINS ? bin : SHIM_TIME_BINS - 1]++;
    if (++shim_timed[k] == SHIM_TIME_BATCH && k == 1) {
        fprintf(stderr, "epoll_shim[%d]: median DEL %ld ns (%u calls), ADD %ld ns (%u calls)\n", (int)getpid(),
                shim_median_ns(shim_hist[0], shim_timed[0]), shim_timed[0], shim_median_ns(shim_hist[1], shim_timed[1]),
                shim_timed[1]);
        memset(shim_hist, 0, sizeof(shim_hist));
        memset(shim_timed, 0, sizeof(shim_timed));
    }
    return ret;
}

static void shim_forget(int fd, int client)
{
    if (fd >= 0 && fd < SHIM_MAX_FD)
        shim_fds[fd] = (shim_fd_t){.client = (uint8_t)client};
}

/* makes op for a client socket and records what the kernel then holds */
static int shim_apply(int ep, int op, int fd, const struct epoll_event *ev, shim_fd_t *s)
{
    struct epoll_event kev = {0};
    if (op != EPOLL_CTL_DEL) {
        kev = *ev;
        if (shim_is_lazy())
            kev.data.u64 = SHIM_TAG | (uint64_t)fd;
    }
    int ret = (int)syscall(SYS_epoll_ctl, ep, op, fd, &kev);
    if (ret == 0) {
        s->kernel_reg = op != EPOLL_CTL_DEL;
        s->parked = 0;
        s->events = s->kernel_reg ? ev->events : 0;
        s->data = s->kernel_reg ? ev->data.u64 : 0;
    }
    return ret;
}

int epoll_ctl(int ep, int op, int fd, struct epoll_event *ev)
{
    if (fd < 0 || fd >= SHIM_MAX_FD || !shim_fds[fd].client)
        return (int)syscall(SYS_epoll_ctl, ep, op, fd, ev);
    if (shim_mode() == SHIM_TIME)
        return shim_timed_ctl(ep, op, fd, ev);
    shim_fd_t *s = &shim_fds[fd];
    if (op == EPOLL_CTL_DEL && s->kernel_reg && s->events == EPOLLIN) {
        s->parked = 1;
        return 0;
    }
    if (op == EPOLL_CTL_ADD && s->parked) {
        if (ev->events == s->events && (shim_is_lazy() || ev->data.u64 == s->data)) {
            s->parked = 0;
            s->data = ev->data.u64;
            return 0;
        }
        op = EPOLL_CTL_MOD;
    }
    return shim_apply(ep, op, fd, ev, s);
}

int epoll_wait(int ep, struct epoll_event *evs, int max, int timeout)
{
    static int (*real)(int, struct epoll_event *, int, int);
    if (real == NULL)
        real = (int (*)(int, struct epoll_event *, int, int))dlsym(RTLD_NEXT, "epoll_wait");
    int n = real(ep, evs, max, timeout);
    if (n <= 0 || !shim_is_lazy())
        return n;
    int out = 0;
    for (int i = 0; i < n; i++) {
        uint64_t d = evs[i].data.u64;
        if ((d & SHIM_TAG) != 0) {
            int fd = (int)(d & 0xffffffffu);
            shim_fd_t *s = &shim_fds[fd];
            if (s->parked) { /* h2o deleted it: the kernel would not have told */
                (void)shim_apply(ep, EPOLL_CTL_DEL, fd, NULL, s);
                continue;
            }
            evs[i].data.u64 = s->data;
        }
        evs[out++] = evs[i];
    }
    return out;
}

int accept4(int l, struct sockaddr *addr, socklen_t *len, int flags)
{
    static int (*real)(int, struct sockaddr *, socklen_t *, int);
    if (real == NULL)
        real = (int (*)(int, struct sockaddr *, socklen_t *, int))dlsym(RTLD_NEXT, "accept4");
    int fd = real(l, addr, len, flags);
    shim_forget(fd, 1);
    return fd;
}

int accept(int l, struct sockaddr *addr, socklen_t *len)
{
    return accept4(l, addr, len, 0);
}

int socket(int domain, int type, int protocol)
{
    static int (*real)(int, int, int);
    if (real == NULL)
        real = (int (*)(int, int, int))dlsym(RTLD_NEXT, "socket");
    int fd = real(domain, type, protocol);
    shim_forget(fd, 0);
    return fd;
}

int close(int fd)
{
    static int (*real)(int);
    if (real == NULL)
        real = (int (*)(int))dlsym(RTLD_NEXT, "close");
    shim_forget(fd, 0);
    return real(fd);
}
