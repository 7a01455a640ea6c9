/* tests/lib/fake_clock.h: the clocks of a unit-test binary, injected.
 *
 * Include it in the one .c file of a test binary (each tests/<room>/test_*.c
 * is its own binary): it defines clock_gettime, so every clock sluice reads
 * (base/sl_time.h: monotonic, wall and shared time; srv_timeofday's
 * gettimeofday; LMDB and libc callers in the same process) is the test's
 * once fake_clock_start() has run, and the kernel's again after
 * fake_clock_stop(). Tests move time with fake_clock_pass_ms() and step the
 * wall clock alone (NTP, an operator) with fake_clock_step_wall_s(), so they
 * never sleep. */
#ifndef TESTS_LIB_FAKE_CLOCK_H
#define TESTS_LIB_FAKE_CLOCK_H

#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FAKE_CLOCK_NS_PER_S 1000000000ull

static int fake_clock_on;
static uint64_t fake_clock_wall_ns, fake_clock_mono_ns;

int clock_gettime(clockid_t id, struct timespec *ts)
{
    if (!fake_clock_on) /* before start (Criterion's own setup) and after stop */
        return (int)syscall(SYS_clock_gettime, id, ts);
    uint64_t v = id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE ? fake_clock_wall_ns : fake_clock_mono_ns;
    ts->tv_sec = (time_t)(v / FAKE_CLOCK_NS_PER_S);
    ts->tv_nsec = (long)(v % FAKE_CLOCK_NS_PER_S);
    return 0;
}

/* From now on the wall clock reads wall_s seconds since the epoch and the
 * monotonic clock mono_s seconds since boot (realistic values, so nothing
 * passes only because a clock is small). */
static inline void fake_clock_start(uint64_t wall_s, uint64_t mono_s)
{
    fake_clock_wall_ns = wall_s * FAKE_CLOCK_NS_PER_S;
    fake_clock_mono_ns = mono_s * FAKE_CLOCK_NS_PER_S;
    fake_clock_on = 1;
}

/* The kernel's clocks again. */
static inline void fake_clock_stop(void) { fake_clock_on = 0; }

/* Time passes: both clocks move on. */
static inline void fake_clock_pass_ms(uint64_t ms)
{
    fake_clock_wall_ns += ms * 1000000ull;
    fake_clock_mono_ns += ms * 1000000ull;
}

/* The wall clock steps by s seconds (back when negative); monotonic time
 * does not move. */
static inline void fake_clock_step_wall_s(int64_t s)
{
    if (s < 0)
        fake_clock_wall_ns -= (uint64_t)(-s) * FAKE_CLOCK_NS_PER_S;
    else
        fake_clock_wall_ns += (uint64_t)s * FAKE_CLOCK_NS_PER_S;
}

#endif
