/* server/srv_timeofday.h: gettimeofday returns shared time (see the .c).
 * main() calls srv_timeofday_shared() once, which also makes sure the
 * replacement is linked into the executable. */
#ifndef SRV_TIMEOFDAY_H
#define SRV_TIMEOFDAY_H

/* Returns 1 (the replacement is in place). */
int srv_timeofday_shared(void);

#endif
