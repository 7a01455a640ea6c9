/* base/sl_time.c: the process's anchor of shared time (sl_time.h). */
#include "base/sl_time.h"

/* 0 until state/ anchors it or the first read sets it from the wall clock. */
uint64_t sl_shared_offset_us;
uint64_t sl_shared_resync_at_us;

/* The wall clock is read before the monotonic one, so a gap between the two
 * reads (preemption) makes wall - mono smaller, never a spurious step. */
uint64_t sl_shared_resync(void)
{
    uint64_t wall = sl_wall_us(), mono = sl_now_us();
    if (mono + sl_shared_offset_us < wall)
        sl_shared_offset_us = wall - mono; /* unset yet, or the wall clock stepped forward */
    sl_shared_resync_at_us = mono + SL_SHARED_RESYNC_US;
    return mono + sl_shared_offset_us;
}
