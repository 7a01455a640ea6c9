/* tests/bench/epoll_shim.c: an LD_PRELOAD shim that keeps an accepted
 * (client) socket registered in epoll between keep-alive requests, to measure
 * what h2o 2.2.5's two epoll_ctl calls per request cost sluice (issue 37).
 * A MEASUREMENT, NOT A FIX: see "correctness" below.
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
 *   - ADD on a parked socket: not made when the events and data asked for are
 *     the ones registered, else made as a MOD;
 *   - anything else is made as asked. close() and a new accept/socket on
 *     the same fd number forget the fd's state (the kernel drops a closed
 *     fd's registration itself).
 *
 * Correctness: h2o's epoll loop ignores EPOLLIN on a socket it does not poll
 * for reading (it logs "ignoring epoll event" at most once a minute). With
 * level-triggered epoll, a parked socket that becomes readable while its
 * request is handled (a client that pipelines a second request after the
 * first was read, or closes its end) makes every epoll_wait return at once
 * until the answer is written and h2o reads again: no byte is lost or
 * reordered, but the worker spins at 100% CPU for as long as the request
 * waits upstream. That is why this is a measurement only; a fix inside h2o
 * would have to keep the socket registered and treat such readiness as
 * deferred (EPOLLET or EPOLLONESHOT and its own "readable" flag), which the
 * library's public API does not reach.
 *
 * Not a CMake target. Linux only. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SHIM_MAX_FD 65536

typedef struct shim_fd {
    uint8_t client;     /* returned by accept/accept4 */
    uint8_t kernel_reg; /* registered in the kernel's set */
    uint8_t parked;     /* registered though h2o believes it deleted it */
    uint32_t events;    /* what the kernel holds */
    uint64_t data;
} shim_fd_t;

static shim_fd_t shim_fds[SHIM_MAX_FD];
static int shim_real_ctl(int ep, int op, int fd, struct epoll_event *ev)
{
    return (int)syscall(SYS_epoll_ctl, ep, op, fd, ev);
}

static void shim_forget(int fd, int client)
{
    if (fd >= 0 && fd < SHIM_MAX_FD)
        shim_fds[fd] = (shim_fd_t){.client = (uint8_t)client};
}

int epoll_ctl(int ep, int op, int fd, struct epoll_event *ev)
{
    if (fd < 0 || fd >= SHIM_MAX_FD || !shim_fds[fd].client)
        return shim_real_ctl(ep, op, fd, ev);
    shim_fd_t *s = &shim_fds[fd];
    if (op == EPOLL_CTL_DEL && s->kernel_reg && s->events == EPOLLIN) {
        s->parked = 1;
        return 0;
    }
    if (op == EPOLL_CTL_ADD && s->parked) {
        s->parked = 0;
        if (ev->events == s->events && ev->data.u64 == s->data) {
            return 0;
        }
        op = EPOLL_CTL_MOD;
    }
    int ret = shim_real_ctl(ep, op, fd, ev);
    if (ret == 0) {
        s->kernel_reg = op != EPOLL_CTL_DEL;
        s->parked = 0;
        s->events = op == EPOLL_CTL_DEL ? 0 : ev->events;
        s->data = op == EPOLL_CTL_DEL ? 0 : ev->data.u64;
    }
    return ret;
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
