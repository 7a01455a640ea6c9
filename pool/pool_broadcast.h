/* pool/pool_broadcast.h: the broadcast satellite: a signed transaction of a
 * method whose row says broadcast: N goes to N endpoints at once, and the
 * first that takes it answers. Its row: pool_broadcast_row
 * (pool/pool_call_int.h). */
#ifndef POOL_BROADCAST_H
#define POOL_BROADCAST_H

#include <stdint.h>

typedef struct pool_broadcast_run pool_broadcast_run_t; /* pool_broadcast.c: the exchanges out */

/* A call's broadcast. */
typedef struct pool_broadcast_call {
    uint8_t on;                   /* the call is broadcast (set at its start) */
    uint8_t fanning;              /* inside the fan-out: its own gate lets each exchange through */
    uint8_t of;                   /* endpoints asked at once */
    pool_broadcast_run_t *run;    /* NULL until the fan-out (heap: only broadcast calls pay for it) */
} pool_broadcast_call_t;

#endif
