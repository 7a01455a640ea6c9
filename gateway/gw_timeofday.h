/* gateway/gw_timeofday.h: gettimeofday returns shared time (see the .c).
 * main() calls gw_timeofday_shared() once, which also makes sure the
 * replacement is linked into the executable. */
#ifndef GW_TIMEOFDAY_H
#define GW_TIMEOFDAY_H

/* Returns 1 (the replacement is in place). */
int gw_timeofday_shared(void);

#endif
