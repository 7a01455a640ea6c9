/* base/sl_time.h: clocks. Only I/O rooms read them; policy/ is handed now_ms. */
#ifndef SL_TIME_H
#define SL_TIME_H

#include <stdint.h>
#include <time.h>

/* Monotonic milliseconds / microseconds (CLOCK_MONOTONIC), for deadlines. */
static inline uint64_t sl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static inline uint64_t sl_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Wall-clock milliseconds / microseconds since the epoch: for what a person
 * reads (log and event timestamps) and nothing that measures a duration. */
static inline uint64_t sl_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static inline uint64_t sl_wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Shared time: what every record in LMDB that measures a duration carries
 * (GCRA cells, lease expiry, credit windows, breaker timers, rate-limit
 * marks, probe claims, pins). It is CLOCK_MONOTONIC plus an offset fixed
 * once per boot (state/ keeps it in LMDB, so every process of a boot, and
 * every sluice started during it, uses the same one: CLOCK_MONOTONIC is
 * system-wide on Linux), so it reads like wall time but never steps back:
 * a backward step of the wall clock is ignored (no active client refused
 * for the length of the step, no budget window opened twice). A forward
 * step is followed: the offset only ever grows (a clock that was wrong
 * when the boot began is corrected). After a reboot the first process
 * anchors it at max(wall clock, the last shared time recorded), so records
 * written before a reboot never lie further ahead than they did.
 *
 * A forward step is noticed within SL_SHARED_RESYNC_US: only then is the wall
 * clock read again (sl_shared_resync), so the hot path reads one clock, as a
 * wall-clock read did. */
#define SL_SHARED_RESYNC_US 100000

extern uint64_t sl_shared_offset_us;
extern uint64_t sl_shared_resync_at_us; /* monotonic µs of the next look at the wall clock */

/* Reads the wall clock and follows it if it is ahead; returns shared time. */
uint64_t sl_shared_resync(void);

static inline uint64_t sl_shared_us(void)
{
    uint64_t mono = sl_now_us();
    if (__builtin_expect(mono >= sl_shared_resync_at_us, 0))
        return sl_shared_resync();
    return mono + sl_shared_offset_us;
}

static inline uint64_t sl_shared_ms(void)
{
    return sl_shared_us() / 1000;
}

#endif
