/* tests/state/test_events.c: building an event (state_event_init). */
#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>

#include "state/state.h"

Test(events, init_sets_time_kind_names_and_observer)
{
    state_event_t ev;
    memset(&ev, 0xab, sizeof(ev));
    state_event_init(&ev, STATE_EVENT_BREAKER_OPENED, "eth", "alchemy", 1234);
    cr_expect_eq(ev.ts_ms, 1234);
    cr_expect_eq(ev.kind, STATE_EVENT_BREAKER_OPENED);
    cr_expect_str_eq(ev.network, "eth");
    cr_expect_str_eq(ev.endpoint, "alchemy");
    cr_expect_eq(ev.pid, (uint32_t)getpid());
    cr_expect_eq(ev.seq, 0);
    cr_expect_eq(ev.count, 0);
    cr_expect_eq(ev.duration_ms, 0);
    cr_expect_str_eq(ev.reason, "");
}

Test(events, init_without_names_and_with_long_ones)
{
    state_event_t ev;
    state_event_init(&ev, STATE_EVENT_WORKER_RESTARTED, NULL, NULL, 1);
    cr_expect_str_eq(ev.network, "");
    cr_expect_str_eq(ev.endpoint, "");
    char long_name[200];
    memset(long_name, 'n', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    state_event_init(&ev, STATE_EVENT_FAILOVER, long_name, long_name, 2);
    cr_expect_eq(strlen(ev.network), sizeof(ev.network) - 1, "cut to fit, terminated");
    cr_expect_eq(strlen(ev.endpoint), sizeof(ev.endpoint) - 1);
}
