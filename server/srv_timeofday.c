/* server/srv_timeofday.c: gettimeofday is shared time in sluice.
 *
 * h2o 2.2.5's event loop measures every timeout it keeps (its loop->_now,
 * the pool's tick that re-reads breakers and runs probes, request and
 * connect deadlines, idle keep-alive timers) with gettimeofday. A backward
 * step of the wall clock would freeze them all for the length of the step:
 * no shared-state refresh, no probe, no breaker half-open, no request
 * deadline. This definition takes the place of libc's for the whole process
 * (the executable's symbol wins over the shared library's, as malloc
 * replacements do): it returns shared time (base/sl_time.h), which reads as
 * wall time but never steps back. Log timestamps read the wall clock
 * directly (sl_log_timestamp). */
#include "server/srv_timeofday.h"

#include <string.h>
#include <sys/time.h>

#include "base/sl_time.h"

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    uint64_t us = sl_shared_us();
    tv->tv_sec = (time_t)(us / 1000000); /* glibc declares tv non-null */
    tv->tv_usec = (suseconds_t)(us % 1000000);
    if (tz != NULL)
        memset(tz, 0, sizeof(struct timezone));
    return 0;
}

int srv_timeofday_shared(void)
{
    struct timeval tv;
    return gettimeofday(&tv, NULL) == 0;
}
