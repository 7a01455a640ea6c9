/* base/sl_time.c: the process's anchor of shared time (sl_time.h). */
#include "base/sl_time.h"

/* 0 until state/ anchors it or the first read sets it from the wall clock. */
uint64_t sl_shared_offset_us;
