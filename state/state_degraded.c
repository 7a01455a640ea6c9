/* state/state_degraded.c: which parts of this process enforce locally
 * because their shared records failed, and the events that say so. */
#include <string.h>
#include <unistd.h>

#include "base/sl_log.h"
#include "state/state_int.h"

static const char *const part_names[STATE_PART_COUNT] = {
    [STATE_PART_LIMITS] = "client limits",
    [STATE_PART_CREDITS] = "credit budgets",
};

#define EVENT_RETRY_MS 1000

/* Appends the event of part's current state; 1 if it was written. */
static int record(state_t *st, state_part_t part, uint64_t now_ms)
{
    state_event_t ev;
    memset(&ev, 0, sizeof(ev));
    ev.ts_ms = now_ms;
    ev.kind = st->degraded[part].on ? STATE_EVENT_STATE_DEGRADED : STATE_EVENT_STATE_RESTORED;
    ev.pid = (uint32_t)getpid();
    if (st->degraded[part].on)
        snprintf(ev.reason, sizeof(ev.reason), "%s: shared state failed (%s); this worker enforces them locally",
                 part_names[part], sl_err_str(st->degraded[part].why));
    else
        snprintf(ev.reason, sizeof(ev.reason), "%s: shared state works again after %llu ms of local enforcement",
                 part_names[part], (unsigned long long)(now_ms - st->degraded[part].since_ms));
    ev.duration_ms = st->degraded[part].on ? 0 : now_ms - st->degraded[part].since_ms;
    return state_event_append(st, &ev) == SL_OK;
}

void state_degraded_note(state_t *st, state_part_t part, sl_err_t result, uint64_t now_ms)
{
    if ((unsigned)part >= STATE_PART_COUNT)
        return;
    typeof(st->degraded[0]) *d = &st->degraded[part];
    int failed = result != SL_OK;
    if (failed != d->on) {
        if (failed) {
            d->why = result;
            sl_log_error("state: %s: shared state failed (%s); enforcing them in this worker alone until it works",
                         part_names[part], sl_err_str(result));
        } else {
            sl_log_warn("state: %s: shared state works again after %llu ms", part_names[part],
                        (unsigned long long)(now_ms - d->since_ms));
        }
        /* an episode whose start was never written ends without a word */
        int unwritten = d->pending;
        d->on = failed;
        if (failed)
            d->since_ms = now_ms;
        d->pending = !(unwritten && !failed);
        d->retry_ms = 0;
    }
    if (d->pending && now_ms >= d->retry_ms) {
        d->pending = !record(st, part, now_ms);
        d->retry_ms = now_ms + EVENT_RETRY_MS;
    }
}

int state_degraded(const state_t *st, state_part_t part)
{
    return (unsigned)part < STATE_PART_COUNT && st->degraded[part].on;
}

void state_degraded_count(state_t *st, state_part_t part, uint64_t n)
{
    if ((unsigned)part < STATE_PART_COUNT)
        st->degraded[part].decisions += n;
}

uint64_t state_degraded_decisions(const state_t *st, state_part_t part)
{
    return (unsigned)part < STATE_PART_COUNT ? st->degraded[part].decisions : 0;
}
