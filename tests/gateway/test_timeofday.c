/* tests/gateway/test_timeofday.c: h2o's event-loop timers keep running
 * through a backward step of the wall clock (gateway/gw_timeofday.c). This
 * binary defines clock_gettime, so the clocks are the test's; h2o reads
 * time through gettimeofday, which sluice replaces. No sleeps. */
#include <criterion/criterion.h>
#include <h2o.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "gateway/gw_timeofday.h"

static int fake_on;
static uint64_t fake_wall_ns, fake_mono_ns;

int clock_gettime(clockid_t id, struct timespec *ts)
{
    if (!fake_on)
        return (int)syscall(SYS_clock_gettime, id, ts);
    uint64_t v = id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE ? fake_wall_ns : fake_mono_ns;
    ts->tv_sec = (time_t)(v / 1000000000ull);
    ts->tv_nsec = (long)(v % 1000000000ull);
    return 0;
}

static int fired;

static void on_timeout(h2o_timeout_entry_t *entry)
{
    (void)entry;
    fired++;
}

Test(timeofday, an_h2o_timer_fires_on_time_after_the_wall_clock_steps_back)
{
    cr_assert(gw_timeofday_shared());
    fake_wall_ns = 1700000000ull * 1000000000ull;
    fake_mono_ns = 9000ull * 1000000000ull;
    fake_on = 1;
    h2o_evloop_t *loop = h2o_evloop_create();
    h2o_timeout_t timeout;
    h2o_timeout_entry_t entry = {.cb = on_timeout};
    h2o_timeout_init(loop, &timeout, 100);
    h2o_timeout_link(loop, &timeout, &entry);
    /* the wall clock steps back an hour; 150 ms pass */
    fake_wall_ns -= 3600ull * 1000000000ull;
    fake_wall_ns += 150000000ull;
    fake_mono_ns += 150000000ull;
    for (int i = 0; i < 3 && !fired; i++)
        h2o_evloop_run(loop, 0);
    cr_expect_eq(fired, 1, "a 100 ms timer did not fire 150 ms later: the loop waits out the step");
    fake_on = 0;
    if (h2o_timeout_is_linked(&entry))
        h2o_timeout_unlink(&entry);
    h2o_timeout_dispose(loop, &timeout);
    h2o_evloop_destroy(loop);
}
