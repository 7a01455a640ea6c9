/* admin/admin_epapi_wait.c: an endpoint change answered once it is applied.
 *
 * POST, PATCH and DELETE /admin/endpoints keep the change (a new entry
 * generation) and ask the master to apply it; the answer waits, polling,
 * until the master records that this host's workers run that generation
 * (state_epapi_applied: set once the new workers are ready, before the
 * previous ones drain), then until this worker drains too (it is one of the
 * previous ones), so the client's next request meets the new endpoint set:
 * "status": "applied". Past EPAPI_WAIT_MS (a slow start, a failed reload,
 * two earlier generations still draining) it answers 202 "applying": the
 * change is kept and the master applies it as soon as it can. */
#include <string.h>

#include "admin/admin_int.h"
#include "base/sl_time.h"
#include "state/state_epapi.h"

#define EPAPI_POLL_MS 50          /* the reload route's tick (admin_reload.c), shared */
#define EPAPI_WAIT_MS 5000
#define EPAPI_DRAIN_WAIT_MS 2000  /* once applied, for this worker to start draining */
#define EPAPI_MAX_WAITING 16      /* per worker; more are answered "applying" at once */

typedef struct epapi_wait {
    admin_t *a;
    h2o_req_t *req;
    h2o_timeout_entry_t tick;
    cJSON *answer;                /* owned until sent */
    int status;                   /* 201 or 200 once applied */
    uint64_t gen;                 /* the generation the change made */
    uint64_t deadline_ms;
    uint64_t applied_ms;          /* 0: not yet */
} epapi_wait_t;

static void reply(epapi_wait_t *w, int status, const char *what)
{
    cJSON_AddStringToObject(w->answer, "status", what);
    cJSON *o = w->answer;
    w->answer = NULL;
    admin_send_json(w->req, status, o);
}

static int draining(const admin_t *a)
{
    char why[64];
    return a->conf.ready != NULL && !a->conf.ready(a->conf.data, why, sizeof(why));
}

/* 1 once the request was answered. */
static int look(epapi_wait_t *w)
{
    uint64_t now = sl_now_ms(), applied = 0;
    if (w->applied_ms == 0 && state_epapi_applied(w->a->conf.state, &applied) == SL_OK && applied >= w->gen)
        w->applied_ms = now;
    if (w->applied_ms != 0 && (draining(w->a) || now - w->applied_ms >= EPAPI_DRAIN_WAIT_MS)) {
        reply(w, w->status, "applied");
        return 1;
    }
    if (w->applied_ms == 0 && now >= w->deadline_ms) {
        reply(w, 202, "applying");
        return 1;
    }
    return 0;
}

static void on_tick(h2o_timeout_entry_t *entry)
{
    epapi_wait_t *w = H2O_STRUCT_FROM_MEMBER(epapi_wait_t, tick, entry);
    if (!look(w))
        h2o_timeout_link(w->a->conf.loop, &w->a->reload_timeout, &w->tick);
}

static void wait_dispose(void *p)
{
    epapi_wait_t *w = p;
    if (h2o_timeout_is_linked(&w->tick))
        h2o_timeout_unlink(&w->tick);
    cJSON_Delete(w->answer); /* the client left before its answer */
    w->a->epapi_waiting--;
}

int admin_epapi_answer(admin_t *a, h2o_req_t *req, cJSON *o, int status)
{
    uint64_t gen = 0;
    if (a->conf.epapi_notify == NULL || a->conf.loop == NULL || a->epapi_waiting >= EPAPI_MAX_WAITING ||
        state_epapi_generation(a->conf.state, &gen) != SL_OK) {
        cJSON_AddStringToObject(o, "status", "applying");
        return admin_send_json(req, 202, o);
    }
    if (!a->reload_timeout_ready) {
        h2o_timeout_init(a->conf.loop, &a->reload_timeout, EPAPI_POLL_MS);
        a->reload_timeout_ready = 1;
    }
    epapi_wait_t *w = h2o_mem_alloc_shared(&req->pool, sizeof(*w), wait_dispose);
    memset(w, 0, sizeof(*w));
    a->epapi_waiting++;
    *w = (epapi_wait_t){a, req, {.cb = on_tick}, o, status, gen, sl_now_ms() + EPAPI_WAIT_MS, 0};
    if (!look(w))
        h2o_timeout_link(a->conf.loop, &a->reload_timeout, &w->tick);
    return 0;
}
