/* state/state_degraded.c: which parts of this process enforce locally
 * because their shared records failed, and the events that say so. */
#include <string.h>
#include <unistd.h>

#include "base/sl_log.h"
#include "state/state_int.h"

static const char *const part_names[STATE_PART_COUNT] = {
    [STATE_PART_LIMITS] = "client limits",
    [STATE_PART_CREDITS] = "credit budgets",
    [STATE_PART_LEASES] = "leased probes",
};

/* what a worker does meanwhile, in the event and the log line */
static const char *const part_alone[STATE_PART_COUNT] = {
    [STATE_PART_LIMITS] = "this worker enforces its share alone",
    [STATE_PART_CREDITS] = "this worker enforces its share alone",
    [STATE_PART_LEASES] = "this host probes every endpoint for itself",
};

#define EVENT_RETRY_MS 1000

/* Appends part's state_degraded (start) or state_restored event; 1 if it
 * was written. */
static int record(state_t *st, state_part_t part, int start)
{
    typeof(st->degraded[0]) *d = &st->degraded[part];
    state_event_t ev;
    state_event_init(&ev, start ? STATE_EVENT_STATE_DEGRADED : STATE_EVENT_STATE_RESTORED, NULL, NULL,
                     start ? d->since_ms : d->ended_ms);
    if (start) {
        snprintf(ev.reason, sizeof(ev.reason), "%s: shared state failed (%s); %s", part_names[part],
                 sl_err_str(d->why), part_alone[part]);
    } else {
        ev.duration_ms = d->ended_ms - d->since_ms;
        snprintf(ev.reason, sizeof(ev.reason), "%s: shared state works again after %llu ms of local enforcement",
                 part_names[part], (unsigned long long)ev.duration_ms);
    }
    return state_event_append(st, &ev) == SL_OK;
}

void state_degraded_note(state_t *st, state_part_t part, sl_err_t result, uint64_t now_ms)
{
    if ((unsigned)part >= STATE_PART_COUNT)
        return;
    typeof(st->degraded[0]) *d = &st->degraded[part];
    int failed = result != SL_OK;
    if (failed && !d->on) {
        sl_log_error("state: %s: shared state failed (%s); %s until it works", part_names[part], sl_err_str(result),
                     part_alone[part]);
        d->on = 1;
        d->why = result;
        if (d->need_end) {
            d->need_end = 0; /* its end was never written: one episode goes on */
        } else {
            d->since_ms = now_ms;
            d->need_start = 1;
        }
        d->retry_ms = 0;
    } else if (!failed && d->on) {
        sl_log_warn("state: %s: shared state works again after %llu ms", part_names[part],
                    (unsigned long long)(now_ms - d->since_ms));
        d->on = 0;
        d->ended_ms = now_ms;
        d->need_end = 1;
        d->retry_ms = 0;
    }
    if ((d->need_start || d->need_end) && now_ms >= d->retry_ms) {
        /* in order: an end is written only after its start */
        if (d->need_start && record(st, part, 1))
            d->need_start = 0;
        if (!d->need_start && d->need_end && record(st, part, 0))
            d->need_end = 0;
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

const char *state_part_name(state_part_t part)
{
    static const char *const labels[STATE_PART_COUNT] = {
        [STATE_PART_LIMITS] = "limits",
        [STATE_PART_CREDITS] = "credits",
        [STATE_PART_LEASES] = "leases",
    };
    return (unsigned)part < STATE_PART_COUNT ? labels[part] : "unknown";
}
