#include "state/state_counters.h"

#include <stdlib.h>
#include <string.h>

#include "base/sl_buf.h"

void state_counters_slot_load(state_counters_slot_t *s, state_t *st, uint32_t want)
{
    if (s->rec == NULL)
        s->rec = sl_xcalloc(1, sizeof(*s->rec));
    if (want > STATE_COUNTERS_MAX)
        want = STATE_COUNTERS_MAX;
    if (st == NULL || state_counters_get(st, s->key, s->rec) != SL_OK || s->rec->n != want) {
        memset(s->rec->v, 0, want * sizeof(s->rec->v[0]));
        s->rec->n = want;
    }
}

void state_counters_slot_add(state_counters_slot_t *s, size_t i, uint64_t n)
{
    s->rec->v[i] += n;
    s->dirty = 1;
}

void state_counters_slot_set(state_counters_slot_t *s, size_t i, uint64_t value)
{
    if (s->rec->v[i] == value)
        return;
    s->rec->v[i] = value;
    s->dirty = 1;
}

void state_counters_slot_touch(state_counters_slot_t *s)
{
    s->dirty = 1;
}

void state_counters_slot_dispose(state_counters_slot_t *s)
{
    free(s->rec);
    s->rec = NULL;
}
