/* admin/admin_learned.c: what the workers learned each endpoint does not
 * serve (pool/pool_learn.c), for GET /admin/endpoints.
 *
 * The memory lives in each worker; what it learns and forgets is in the
 * events (endpoint_capability_learned with its TTL in duration_ms,
 * endpoint_capability_forgotten), so the view replays the newest of them:
 * a method (or depth) learned by any worker and neither forgotten since nor
 * past its TTL is shown. */
#include <stdlib.h>
#include <string.h>

#include "admin/admin_int.h"

#define LEARNED_EVENTS 1024

state_event_t *admin_learned_events(admin_t *a, size_t *n)
{
    *n = 0;
    uint64_t last = state_events_last_seq(a->conf.state);
    state_event_t *evs = sl_xmalloc(LEARNED_EVENTS * sizeof(*evs));
    if (state_events_read(a->conf.state, last > LEARNED_EVENTS ? last - LEARNED_EVENTS : 0, evs, LEARNED_EVENTS,
                          n) != SL_OK)
        *n = 0;
    size_t k = 0; /* only the capability events are kept */
    for (size_t i = 0; i < *n; i++)
        if (evs[i].kind == STATE_EVENT_ENDPOINT_CAPABILITY_LEARNED ||
            evs[i].kind == STATE_EVENT_ENDPOINT_CAPABILITY_FORGOTTEN)
            evs[k++] = evs[i];
    *n = k;
    return evs;
}

/* The method an event's reason names ("method NAME: ..."), into out; 0 if none. */
static int reason_method(const char *reason, char *out, size_t cap)
{
    if (strncmp(reason, "method ", 7) != 0)
        return 0;
    const char *p = reason + 7, *end = strchr(p, ':');
    size_t len = end != NULL ? (size_t)(end - p) : 0;
    if (len == 0 || len >= cap)
        return 0;
    memcpy(out, p, len);
    out[len] = '\0';
    return 1;
}

typedef struct learned_method {
    char name[64];
    uint64_t until_ms;
} learned_method_t;

cJSON *admin_learned_json(const admin_ep_view_t *v, const state_event_t *evs, size_t n, uint64_t now)
{
    learned_method_t m[32];
    size_t nm = 0;
    uint64_t depth = 0, depth_until = 0;
    for (size_t i = 0; i < n; i++) {
        const state_event_t *ev = &evs[i];
        if (strcmp(ev->network, v->net->name) != 0 || strcmp(ev->endpoint, v->ep->id) != 0)
            continue;
        int learned = ev->kind == STATE_EVENT_ENDPOINT_CAPABILITY_LEARNED;
        char name[64];
        if (!reason_method(ev->reason, name, sizeof(name))) { /* the depth */
            if (learned) {
                depth = ev->count;
                depth_until = ev->ts_ms + ev->duration_ms;
            } else if (ev->count == depth) {
                depth = 0;
            }
            continue;
        }
        size_t j = 0;
        while (j < nm && strcmp(m[j].name, name) != 0)
            j++;
        if (!learned) {
            if (j < nm)
                m[j] = m[--nm];
            continue;
        }
        if (j == nm) {
            if (nm == sizeof(m) / sizeof(m[0]))
                continue;
            memcpy(m[nm].name, name, sizeof(name));
            nm++;
        }
        m[j].until_ms = ev->ts_ms + ev->duration_ms;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(o, "methods");
    for (size_t j = 0; j < nm; j++)
        if (m[j].until_ms > now)
            cJSON_AddItemToArray(arr, cJSON_CreateString(m[j].name));
    if (depth != 0 && depth_until > now)
        cJSON_AddNumberToObject(o, "depth", (double)depth);
    else
        cJSON_AddNullToObject(o, "depth");
    return o;
}
