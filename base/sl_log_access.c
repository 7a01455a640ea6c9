/* base/sl_log_access.c: the access log's buffer, and the stderr sink it
 * shares with diagnostic lines (see sl_log.h).
 *
 * One buffer per process, written from the event loop's thread only. What
 * keeps lines of several workers from interleaving mid-line: every write(2)
 * carries whole lines, and
 *  - on a pipe or a FIFO each write is at most PIPE_BUF bytes, which POSIX
 *    makes atomic; the pipe is reopened through /proc/self/fd/2 with
 *    O_NONBLOCK, so a full pipe answers EAGAIN (nothing written) instead of
 *    stopping the worker;
 *  - on a regular file (one open file description inherited from the master,
 *    or O_APPEND) Linux writes each write(2) whole under the file's lock, so
 *    a write may carry the whole buffer;
 *  - on a socket (journald, node's stdio) each send is at most PIPE_BUF bytes,
 *    with MSG_DONTWAIT: one buffer of the kernel's, all or nothing, so a full
 *    socket answers EAGAIN; a short send is completed at once;
 *  - on anything else (a terminal) each write is at most PIPE_BUF bytes, made
 *    only when poll() says the descriptor takes bytes now; a short write is
 *    completed at once, before anything else is written.
 * A line never exceeds SL_LOG_ACCESS_LINE_MAX (the caller keeps to it).
 * Diagnostic lines (sl_log) are not buffered: sl_log_sink_line writes each
 * through the same sink at once, waiting a bounded time for room. */
#include "base/sl_log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/sl_buf.h"
#include "base/sl_time.h"

#define DEFAULT_MAX_BYTES (256 * 1024)
#define DROP_REPORT_EVERY_MS 10000

typedef enum sink_kind {
    SINK_FILE,      /* regular file: writes of any size, no waiting check */
    SINK_PIPE,      /* our own O_NONBLOCK descriptor on the same pipe */
    SINK_SOCKET,    /* send(MSG_DONTWAIT) on stderr itself */
    SINK_POLL,      /* terminal, socket, a pipe we could not reopen: poll first */
} sink_kind_t;

static struct {
    sl_buf_t buf;                 /* whole lines, each ending in '\n' */
    size_t max_bytes;             /* buf never holds more */
    sink_kind_t kind;
    int fd;                       /* STDERR_FILENO, or the reopened pipe */
    int ready;                    /* setup done (else: set up on first use) */
    uint64_t dropped;             /* lines dropped since the process started */
    uint64_t dropped_unreported;  /* dropped since the last warning */
    uint64_t next_report_ms;
    uint64_t diag_dropped;        /* diagnostic lines dropped, not yet reported */
} alog;

static void sink_close(void)
{
    if (alog.ready && alog.fd != STDERR_FILENO)
        close(alog.fd);
    alog.fd = STDERR_FILENO;
}

void sl_log_access_setup(size_t max_bytes)
{
    sink_close();
    alog.max_bytes = max_bytes ? max_bytes : DEFAULT_MAX_BYTES;
    if (alog.max_bytes < SL_LOG_ACCESS_LINE_MAX + 1)
        alog.max_bytes = SL_LOG_ACCESS_LINE_MAX + 1;
    alog.kind = SINK_POLL;
    struct stat st;
    int known = fstat(STDERR_FILENO, &st) == 0;
    if (known && S_ISREG(st.st_mode)) {
        alog.kind = SINK_FILE;
    } else if (known && S_ISSOCK(st.st_mode)) {
        alog.kind = SINK_SOCKET;
    } else if (known && S_ISFIFO(st.st_mode)) {
        /* a new open file description of the same pipe: O_NONBLOCK on it
         * leaves stderr itself (shared with the master) blocking */
        int fd = open("/proc/self/fd/2", O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd >= 0) {
            alog.fd = fd;
            alog.kind = SINK_PIPE;
        }
    }
    alog.ready = 1;
}

uint64_t sl_log_access_dropped(void)
{
    return alog.dropped;
}

/* The longest prefix of buf[off..] that is whole lines and at most max bytes
 * (0 if not even one line fits: cannot happen, lines are shorter). */
static size_t whole_lines(size_t off, size_t max)
{
    size_t n = alog.buf.len - off;
    if (n <= max)
        return n;
    const char *p = alog.buf.base + off;
    const char *nl = memrchr(p, '\n', max);
    return nl ? (size_t)(nl - p) + 1 : 0;
}

/* 1 when fd takes bytes now (or within wait_ms), 0 when it does not, -1 when
 * it never will (closed, error). */
static int sink_wait(int wait_ms)
{
    struct pollfd pfd = {.fd = alog.fd, .events = POLLOUT};
    int r;
    do
        r = poll(&pfd, 1, wait_ms);
    while (r < 0 && errno == EINTR);
    if (r <= 0)
        return r < 0 ? -1 : 0;
    return (pfd.revents & (POLLERR | POLLNVAL)) ? -1 : 1;
}

/* Writes p[0..n); 1 when all of it went, 0 when nothing did because the sink
 * is full, -1 when it failed for good. A partial write (only a socket or a
 * terminal makes one) is completed at once: the rest of a line must follow it
 * before any other line. */
static int sink_write(const char *p, size_t n)
{
    size_t done = 0;
    while (done < n) {
        ssize_t w = alog.kind == SINK_SOCKET ? send(alog.fd, p + done, n - done, MSG_DONTWAIT | MSG_NOSIGNAL)
                                             : write(alog.fd, p + done, n - done);
        if (w >= 0) {
            done += (size_t)w;
            continue;
        }
        if (errno == EINTR)
            continue;
        if (errno == ENOTSOCK && alog.kind == SINK_SOCKET) { /* cannot happen: fstat said so */
            alog.kind = SINK_POLL;
            continue;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return -1;
        if (done == 0)
            return 0;
        if (sink_wait(-1) < 0) /* mid-line on a socket: finish the line */
            return -1;
    }
    return 1;
}

static void count_dropped(size_t off)
{
    for (size_t i = off; i < alog.buf.len; i++)
        if (alog.buf.base[i] == '\n') {
            alog.dropped++;
            alog.dropped_unreported++;
        }
}

/* Writes whole lines while the sink takes them; wait_ms > 0 waits for a full
 * sink up to that long in all (exit), 0 never waits. */
static void flush(int wait_ms)
{
    if (!alog.ready)
        sl_log_access_setup(0);
    size_t off = 0, chunk = alog.kind == SINK_FILE ? alog.buf.len : PIPE_BUF;
    uint64_t deadline = sl_now_ms() + (uint64_t)(wait_ms > 0 ? wait_ms : 0);
    while (off < alog.buf.len) {
        size_t n = whole_lines(off, chunk);
        int r = 1;
        if (alog.kind == SINK_POLL)
            r = sink_wait(0);
        if (r == 1)
            r = sink_write(alog.buf.base + off, n);
        if (r == 1) {
            off += n;
            continue;
        }
        uint64_t now = sl_now_ms();
        if (r == 0 && now < deadline && sink_wait((int)(deadline - now)) == 1)
            continue;
        if (r < 0 || wait_ms > 0) { /* never writable again, or the last chance */
            count_dropped(off);
            off = alog.buf.len;
        }
        break;
    }
    if (off == alog.buf.len)
        sl_buf_reset(&alog.buf);
    else if (off > 0) {
        memmove(alog.buf.base, alog.buf.base + off, alog.buf.len - off);
        alog.buf.len -= off;
        alog.buf.base[alog.buf.len] = '\0';
    }
    if (alog.dropped_unreported > 0 && alog.buf.len == 0 && wait_ms == 0) {
        uint64_t now = sl_now_ms();
        if (now >= alog.next_report_ms) {
            alog.next_report_ms = now + DROP_REPORT_EVERY_MS;
            uint64_t n = alog.dropped_unreported;
            alog.dropped_unreported = 0;
            sl_log_warn("access log: %llu line(s) dropped: stderr did not take them and the buffer "
                        "(server.access_log_buffer_bytes, %zu) was full; %llu dropped since start",
                        (unsigned long long)n, alog.max_bytes, (unsigned long long)alog.dropped);
        }
    }
}

void sl_log_access(const char *line, size_t len)
{
    if (!alog.ready)
        sl_log_access_setup(0);
    if (alog.buf.len + len + 1 > alog.max_bytes)
        flush(0);
    if (alog.buf.len + len + 1 > alog.max_bytes) {
        alog.dropped++;
        alog.dropped_unreported++;
        return;
    }
    sl_buf_reserve_exact(&alog.buf, alog.max_bytes - alog.buf.len); /* once: the buffer's full size */
    memcpy(alog.buf.base + alog.buf.len, line, len);
    alog.buf.len += len;
    alog.buf.base[alog.buf.len++] = '\n';
    alog.buf.base[alog.buf.len] = '\0';
    if (alog.buf.len >= alog.max_bytes / 4)
        flush(0);
}

int sl_log_sink_line(const char *line, size_t len, int wait_ms, uint64_t *dropped_before)
{
    if (!alog.ready)
        sl_log_access_setup(0);
    if (alog.kind != SINK_FILE && len > PIPE_BUF)
        len = PIPE_BUF; /* the caller ends its lines well before: one atomic write */
    int r = alog.kind == SINK_POLL ? sink_wait(wait_ms) : 1;
    if (r == 1)
        r = sink_write(line, len);
    if (r == 0 && sink_wait(wait_ms) == 1)
        r = sink_write(line, len);
    if (r != 1) {
        alog.diag_dropped++;
        return 0;
    }
    *dropped_before = alog.diag_dropped;
    alog.diag_dropped = 0;
    return 1;
}

void sl_log_flush(void)
{
    if (alog.buf.len > 0 || alog.dropped_unreported > 0)
        flush(0);
}

void sl_log_flush_final(uint32_t wait_ms)
{
    if (alog.buf.len > 0)
        flush(wait_ms > 0 ? (int)wait_ms : 1);
    sink_close();
    alog.ready = 0;
}
