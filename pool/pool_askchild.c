/* pool/pool_askchild.c: a question asked of endpoints in a child process of
 * its own, waited for by the caller (pool_link.h, pool_askchild_run): the
 * chain identity at start (pool_ask.c) and each ws_url's check
 * (pool_askws.c).
 *
 * The child runs the asker's body on a short-lived h2o loop with the
 * workers' transport: a host name is looked up on h2o's resolver threads,
 * which must never exist in the master that forks the workers (a forked
 * worker would inherit a resolver that counts threads it does not have).
 * The body writes one line per answer to a pipe (pool_askchild_tell) and
 * returns by its deadline; the parent reads the lines until the pipe closes
 * or the deadline and a second pass, then kills the child and reaps it. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/sl_time.h"
#include "pool/pool_link.h"

#define LINE_MAX_BYTES 16384

void pool_askchild_tell(const pool_askchild_t *c, const char *line, size_t len)
{
    if (write(c->fd, line, len) != (ssize_t)len)
        _exit(3);
}

static void child(int fd, pool_askchild_body body, void *data)
{
    signal(SIGPIPE, SIG_IGN);
    pool_askchild_t c = {.fd = fd};
    c.loop = h2o_evloop_create();
    h2o_multithread_queue_t *queue = h2o_multithread_create_queue(c.loop);
    h2o_multithread_register_receiver(queue, &c.getaddr, h2o_hostinfo_getaddr_receiver);
    pool_transport_init(&c.t, c.loop, &c.getaddr, 1 << 20, NULL, &pool_transport_sockets);
    body(&c, data);
    _exit(0);
}

/* Hands each whole line to on_line until the pipe closes or the deadline. */
static void read_lines(int fd, uint64_t deadline, pool_askchild_line on_line, void *data)
{
    char buf[LINE_MAX_BYTES];
    size_t have = 0;
    for (;;) {
        uint64_t now = sl_now_ms();
        struct pollfd p = {fd, POLLIN, 0};
        if (now >= deadline || poll(&p, 1, (int)(deadline - now)) <= 0)
            break;
        ssize_t r = read(fd, buf + have, sizeof(buf) - 1 - have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        have += (size_t)r;
        buf[have] = '\0';
        char *line = buf, *nl;
        while ((nl = strchr(line, '\n')) != NULL) {
            *nl = '\0';
            on_line(line, data);
            line = nl + 1;
        }
        have = strlen(line);
        if (have == sizeof(buf) - 1)
            have = 0; /* a line longer than any asker writes: dropped */
        memmove(buf, line, have);
    }
}

sl_err_t pool_askchild_run(pool_askchild_body body, void *body_data, uint32_t timeout_ms, pool_askchild_line on_line,
                           void *line_data)
{
    int fds[2];
    if (pipe(fds) != 0)
        return SL_ERR_IO;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return SL_ERR_IO;
    }
    if (pid == 0) {
        close(fds[0]);
        child(fds[1], body, body_data);
    }
    close(fds[1]);
    read_lines(fds[0], sl_now_ms() + timeout_ms + 1000, on_line, line_data);
    close(fds[0]);
    kill(pid, SIGKILL); /* done or late: either way no longer needed */
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    return SL_OK;
}
