/* admin/admin_reload.c: POST /admin/reload.
 *
 * The worker that takes the request asks the master to reload (the same
 * path as SIGHUP) with a tag, then watches the event log for the
 * config_reloaded or config_reload_failed event the master records with this
 * process's pid and that tag, and answers with it: 200 reloaded, 422 refused
 * (the running configuration stays), 504 if the master said nothing in
 * RELOAD_WAIT_MS (the outcome will still be in the feed). The master records
 * the event before it tells this worker to drain, so the answer goes out
 * even when this worker is one that the reload replaces. It always is after
 * a success: the answer waits until this worker drains (it no longer
 * accepts, the connection closes after the answer), so whatever the client
 * sends next meets the new configuration. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin/admin_int.h"
#include "base/sl_time.h"

#define RELOAD_POLL_MS 50
#define RELOAD_WAIT_MS 30000
#define RELOAD_MAX_WAITING 8      /* per worker; a tag is 8 bits and must not be reused while waited on */
#define RELOAD_BATCH 32
#define RELOAD_DRAIN_WAIT_MS 2000 /* after a success, for this worker to start draining */

typedef struct reload_wait {
    admin_t *a;
    h2o_req_t *req;
    h2o_timeout_entry_t tick;
    uint64_t since;               /* events up to this sequence were looked at */
    uint64_t deadline_ms;
    uint32_t pid;
    uint8_t tag;
    int found;                    /* ev is the answer, held back until this worker drains */
    uint64_t found_ms;
    state_event_t ev;
} reload_wait_t;

static int is_answer(const reload_wait_t *w, const state_event_t *ev)
{
    return (ev->kind == STATE_EVENT_CONFIG_RELOADED || ev->kind == STATE_EVENT_CONFIG_RELOAD_FAILED) &&
           ev->pid == w->pid && ev->from == w->tag;
}

static void answer(reload_wait_t *w, int status, const char *what, const state_event_t *ev)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "status", what);
    if (ev != NULL)
        cJSON_AddItemToObject(o, "event", admin_event_json(ev));
    else
        cJSON_AddStringToObject(o, "error", "the master did not record the reload's outcome in time; see /admin/events");
    admin_send_json(w->req, status, o);
}

static int draining(const admin_t *a)
{
    char why[64];
    return a->conf.ready != NULL && !a->conf.ready(a->conf.data, why, sizeof(why));
}

/* 1 once the request was answered. */
static int look(reload_wait_t *w)
{
    state_event_t evs[RELOAD_BATCH];
    size_t n = 0;
    if (w->found) {
        if (!draining(w->a) && sl_now_ms() - w->found_ms < RELOAD_DRAIN_WAIT_MS)
            return 0;
        answer(w, 200, "reloaded", &w->ev);
        return 1;
    }
    do {
        if (state_events_read(w->a->conf.state, w->since, evs, RELOAD_BATCH, &n) != SL_OK)
            break;
        for (size_t i = 0; i < n; i++) {
            w->since = evs[i].seq;
            if (!is_answer(w, &evs[i]))
                continue;
            if (evs[i].kind == STATE_EVENT_CONFIG_RELOAD_FAILED) {
                answer(w, 422, "failed", &evs[i]);
                return 1;
            }
            w->found = 1;
            w->found_ms = sl_now_ms();
            w->ev = evs[i];
            return look(w);
        }
    } while (n == RELOAD_BATCH);
    if (sl_now_ms() >= w->deadline_ms) {
        answer(w, 504, "pending", NULL);
        return 1;
    }
    return 0;
}

static void on_tick(h2o_timeout_entry_t *entry)
{
    reload_wait_t *w = H2O_STRUCT_FROM_MEMBER(reload_wait_t, tick, entry);
    if (!look(w))
        h2o_timeout_link(w->a->conf.loop, &w->a->reload_timeout, &w->tick);
}

static void wait_dispose(void *p)
{
    reload_wait_t *w = p;
    if (h2o_timeout_is_linked(&w->tick))
        h2o_timeout_unlink(&w->tick);
    w->a->reload_waiting--;
}

int admin_route_reload(admin_t *a, h2o_req_t *req)
{
    if (a->conf.reload == NULL)
        return admin_send_text(req, 503, "application/json", H2O_STRLIT("{\"error\":\"reload is not available\"}"));
    if (a->reload_waiting >= RELOAD_MAX_WAITING)
        return admin_send_text(req, 429, "application/json",
                               H2O_STRLIT("{\"error\":\"too many reload requests are waiting for their answer\"}"));
    if (!a->reload_timeout_ready) {
        h2o_timeout_init(a->conf.loop, &a->reload_timeout, RELOAD_POLL_MS);
        a->reload_timeout_ready = 1;
    }
    reload_wait_t *w = h2o_mem_alloc_shared(&req->pool, sizeof(*w), wait_dispose);
    memset(w, 0, sizeof(*w));
    a->reload_waiting++;
    w->a = a;
    w->req = req;
    w->tick.cb = on_tick;
    w->pid = (uint32_t)getpid();
    w->tag = a->reload_tag = (uint8_t)(a->reload_tag == UINT8_MAX ? 1 : a->reload_tag + 1);
    w->since = state_events_last_seq(a->conf.state); /* before asking: the answer comes after */
    w->deadline_ms = sl_now_ms() + RELOAD_WAIT_MS;
    if (a->conf.reload(a->conf.data, w->tag) != 0)
        return admin_send_text(req, 500, "application/json",
                               H2O_STRLIT("{\"error\":\"could not ask the master to reload\"}"));
    h2o_timeout_link(a->conf.loop, &a->reload_timeout, &w->tick);
    return 0;
}
