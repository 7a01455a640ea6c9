/* base/sl_log.h: process logging to stderr.
 *
 * Diagnostic lines are written at once, as text or JSON (config: log.format),
 * after every registered secret (base/sl_secret.h) is scrubbed out. Access-log
 * lines are buffered (below). */
#ifndef SL_LOG_H
#define SL_LOG_H

#include <stddef.h>
#include <stdint.h>

typedef enum sl_log_level {
    SL_LOG_ERROR,
    SL_LOG_WARN,
    SL_LOG_INFO,
    SL_LOG_DEBUG,
} sl_log_level_t;

typedef enum sl_log_format {
    SL_LOG_TEXT,
    SL_LOG_JSON,
} sl_log_format_t;

/* Sets the level, format and the process label shown on each line
 * ("master", "worker 1"). May be called again after fork. */
void sl_log_setup(sl_log_level_t level, sl_log_format_t format, const char *proc);
int sl_log_enabled(sl_log_level_t level);
/* Parses "error|warn|info|debug"; returns -1 if unknown. */
int sl_log_level_parse(const char *s);

void sl_log(sl_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define sl_log_error(...) sl_log(SL_LOG_ERROR, __VA_ARGS__)
#define sl_log_warn(...) sl_log(SL_LOG_WARN, __VA_ARGS__)
#define sl_log_info(...) sl_log(SL_LOG_INFO, __VA_ARGS__)
#define sl_log_debug(...)                                                      \
    do {                                                                       \
        if (sl_log_enabled(SL_LOG_DEBUG))                                      \
            sl_log(SL_LOG_DEBUG, __VA_ARGS__);                                 \
    } while (0)

/* ---- the access log (base/sl_log_access.c) ----
 * Lines are queued in one bounded buffer per process and written in whole
 * lines: when a quarter of the buffer is used, on the worker's housekeeping
 * timer (100 ms) and at exit. A write carries at most PIPE_BUF bytes unless
 * stderr is a regular file, so lines of several workers never interleave.
 * When stderr takes nothing (a full pipe), the worker does not wait: lines
 * that find the buffer full are dropped and counted, and a warning says how
 * many once stderr takes lines again. Event-loop thread only. */

/* The longest line sl_log_access takes (the newline makes it PIPE_BUF). */
#define SL_LOG_ACCESS_LINE_MAX 4095

/* Sets the buffer's size (0: 256 KiB) and looks at what stderr is; a worker
 * calls it once after fork. Without it the first line sets up the default. */
void sl_log_access_setup(size_t max_bytes);
/* Queues one access-log line (a JSON object without the newline, at most
 * SL_LOG_ACCESS_LINE_MAX bytes). The caller builds it from fields that carry
 * no secret. */
void sl_log_access(const char *line, size_t len);
/* Writes queued lines that stderr takes now, without waiting (the timer). */
void sl_log_flush(void);
/* At exit: writes every queued line, waiting up to wait_ms in all for a full
 * stderr; what is still queued then is counted as dropped. */
void sl_log_flush_final(uint32_t wait_ms);
/* Lines dropped since the process started (for /metrics). */
uint64_t sl_log_access_dropped(void);
/* Writes one diagnostic line (with its newline, at most PIPE_BUF bytes) now,
 * through the access log's sink: on a pipe or a socket that stays full it
 * waits at most wait_ms, then drops the line and counts it. Returns 1 when
 * the line went, with *dropped_before set to the lines dropped since the
 * last one that did (sl_log reports them). */
int sl_log_sink_line(const char *line, size_t len, int wait_ms, uint64_t *dropped_before);

/* A line that a flood could repeat (every refused connection, every stalled
 * client): at most one per interval, saying how many were held back, so a
 * flood of events cannot become a flood of log lines. Zero-initialise. */
typedef struct sl_log_limit {
    uint64_t next_ms;             /* no line before this (monotonic ms) */
    uint64_t held;                /* lines held back since the last one */
} sl_log_limit_t;

/* 1 if a line may be written at now_ms (then *held gets the number held back
 * since the previous one, and the next is due interval_ms later); 0 if this
 * one is held back (counted). */
int sl_log_limit_pass(sl_log_limit_t *l, uint64_t now_ms, uint32_t interval_ms, uint64_t *held);
/* The tail of such a line: " (N more like it since the last one)" when held
 * > 0, else "". Returns out (or the literal ""). */
#define SL_LOG_HELD_MAX 64
const char *sl_log_held_text(uint64_t held, char out[SL_LOG_HELD_MAX]);

/* Formats the wall clock as RFC 3339 UTC with milliseconds into out[32]. */
void sl_log_timestamp(char out[32]);

#endif
