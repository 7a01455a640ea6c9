#include "base/sl_log.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "base/sl_buf.h"
#include "base/sl_secret.h"

static sl_log_level_t log_level = SL_LOG_INFO;
static sl_log_format_t log_format = SL_LOG_TEXT;
static char log_proc[32] = "sluice";

static const char *const level_names[] = {
    [SL_LOG_ERROR] = "error",
    [SL_LOG_WARN] = "warn",
    [SL_LOG_INFO] = "info",
    [SL_LOG_DEBUG] = "debug",
};

void sl_log_setup(sl_log_level_t level, sl_log_format_t format, const char *proc)
{
    log_level = level;
    log_format = format;
    snprintf(log_proc, sizeof(log_proc), "%s", proc);
}

int sl_log_enabled(sl_log_level_t level)
{
    return level <= log_level;
}

int sl_log_level_parse(const char *s)
{
    for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
        if (strcmp(s, level_names[i]) == 0)
            return (int)i;
    return -1;
}

void sl_log_timestamp(char out[32])
{
    /* the wall clock itself: gettimeofday is shared time in sluice
     * (server/srv_timeofday.c). The date and time to the second are formatted
     * once per second per thread (every access line has one). */
    static __thread time_t cached_sec = (time_t)-1;
    static __thread char cached[24];
    static __thread size_t cached_len;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (ts.tv_sec != cached_sec) {
        struct tm tm;
        gmtime_r(&ts.tv_sec, &tm);
        cached_len = strftime(cached, sizeof(cached), "%Y-%m-%dT%H:%M:%S", &tm);
        cached_sec = ts.tv_sec;
    }
    int ms = (int)(ts.tv_nsec / 1000000) % 1000;
    char *p = out;
    memcpy(p, cached, cached_len);
    p += cached_len;
    *p++ = '.';
    *p++ = (char)('0' + ms / 100);
    *p++ = (char)('0' + ms / 10 % 10);
    *p++ = (char)('0' + ms % 10);
    *p++ = 'Z';
    *p = '\0';
}

/* How long a diagnostic line may wait for a full stderr (a stalled log
 * reader) before it is dropped: a bounded cost to the event loop, where a
 * blocking write(2) would stop the process until the reader came back. */
#define LOG_WAIT_MS 20
/* A line is cut to this (then ends in "...\n"): a pipe takes it in one
 * atomic write, so lines of several processes never interleave. */
#define LOG_LINE_MAX 4095

static int reporting_drops; /* the report below is itself an sl_log line */

/* The line for msg[0..n) in the configured format, newline included; "cut"
 * marks a message shortened to fit. */
static void format_line(sl_buf_t *line, sl_log_level_t level, const char *ts, const char *msg, size_t n, int cut)
{
    sl_buf_reset(line);
    if (log_format == SL_LOG_JSON) {
        sl_buf_printf(line, "{\"ts\":\"%s\",\"level\":\"%s\",\"pid\":%d,\"proc\":", ts, level_names[level],
                      (int)getpid());
        sl_buf_append_json_str(line, log_proc, strlen(log_proc));
        sl_buf_append_str(line, ",\"msg\":");
        sl_buf_append_json_str(line, msg, n);
        sl_buf_append_str(line, cut ? ",\"cut\":true}\n" : "}\n");
    } else {
        sl_buf_printf(line, "%s %s[%d] %-5s %.*s%s\n", ts, log_proc, (int)getpid(), level_names[level], (int)n, msg,
                      cut ? "..." : "");
    }
}

void sl_log(sl_log_level_t level, const char *fmt, ...)
{
    if (!sl_log_enabled(level))
        return;
    int saved_errno = errno;
    sl_buf_t msg = SL_BUF_INIT, clean = SL_BUF_INIT, line = SL_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    sl_buf_vprintf(&msg, fmt, ap);
    va_end(ap);
    sl_secret_scrub(&clean, msg.base ? msg.base : "", msg.len);
    if (log_format != SL_LOG_JSON) /* one message, one line: a newline inside cannot forge another */
        for (size_t i = 0; i < clean.len; i++)
            if ((unsigned char)clean.base[i] < 0x20)
                clean.base[i] = ' ';

    char ts[32];
    sl_log_timestamp(ts);
    const char *text = clean.base ? clean.base : "";
    size_t n = clean.len;
    format_line(&line, level, ts, text, n, 0);
    /* too long for one atomic write: the message is cut (JSON escapes make
     * its share of the line uncertain, so shrink until it fits) */
    while (line.len > LOG_LINE_MAX + 1 && n > 0) {
        size_t over = line.len - (LOG_LINE_MAX + 1);
        n = n > over + 16 ? n - over - 16 : 0;
        format_line(&line, level, ts, text, n, 1);
    }
    uint64_t dropped = 0;
    if (sl_log_sink_line(line.base, line.len, LOG_WAIT_MS, &dropped) && dropped > 0 && !reporting_drops) {
        reporting_drops = 1;
        sl_log(SL_LOG_WARN, "log: %llu line(s) dropped before the one above: stderr took nothing for %d ms",
               (unsigned long long)dropped, LOG_WAIT_MS);
        reporting_drops = 0;
    }
    sl_buf_dispose(&msg);
    sl_buf_dispose(&clean);
    sl_buf_dispose(&line);
    errno = saved_errno;
}

int sl_log_limit_pass(sl_log_limit_t *l, uint64_t now_ms, uint32_t interval_ms, uint64_t *held)
{
    if (l->next_ms != 0 && now_ms < l->next_ms) {
        l->held++;
        return 0;
    }
    *held = l->held;
    l->held = 0;
    l->next_ms = now_ms + interval_ms;
    if (l->next_ms == 0) /* 0 means "never written": keep it distinct */
        l->next_ms = 1;
    return 1;
}

const char *sl_log_held_text(uint64_t held, char out[SL_LOG_HELD_MAX])
{
    if (held == 0)
        return "";
    snprintf(out, SL_LOG_HELD_MAX, " (%llu more like it since the last one)", (unsigned long long)held);
    return out;
}
