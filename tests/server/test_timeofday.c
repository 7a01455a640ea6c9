/* tests/gateway/test_timeofday.c: h2o's event-loop timers keep running
 * through a backward step of the wall clock (server/srv_timeofday.c). The
 * clocks are the test's (tests/lib/fake_clock.h); h2o reads
 * time through gettimeofday, which sluice replaces. No sleeps. */
#include <criterion/criterion.h>
#include <h2o.h>

#include "server/srv_timeofday.h"
#include "tests/lib/fake_clock.h"

static int fired;

static void on_timeout(h2o_timeout_entry_t *entry)
{
    (void)entry;
    fired++;
}

Test(timeofday, an_h2o_timer_fires_on_time_after_the_wall_clock_steps_back)
{
    cr_assert(srv_timeofday_shared());
    fake_clock_start(1700000000, 9000);
    h2o_evloop_t *loop = h2o_evloop_create();
    h2o_timeout_t timeout;
    h2o_timeout_entry_t entry = {.cb = on_timeout};
    h2o_timeout_init(loop, &timeout, 100);
    h2o_timeout_link(loop, &timeout, &entry);
    /* the wall clock steps back an hour; 150 ms pass */
    fake_clock_step_wall_s(-3600);
    fake_clock_pass_ms(150);
    for (int i = 0; i < 3 && !fired; i++)
        h2o_evloop_run(loop, 0);
    cr_expect_eq(fired, 1, "a 100 ms timer did not fire 150 ms later: the loop waits out the step");
    fake_clock_stop();
    if (h2o_timeout_is_linked(&entry))
        h2o_timeout_unlink(&entry);
    h2o_timeout_dispose(loop, &timeout);
    h2o_evloop_destroy(loop);
}
