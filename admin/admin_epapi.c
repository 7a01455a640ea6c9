/* admin/admin_epapi.c: endpoints added, changed and removed at run time
 * (issue 34).
 *
 *   POST   /admin/endpoints                {"network", "id", "url", ...}: the keys of a
 *                                          YAML endpoint entry -> 201
 *   PATCH  /admin/endpoints/{network}/{id} the fields given replace the entry's
 *                                          (null removes one) -> 200
 *   DELETE /admin/endpoints/{network}/{id} -> 200
 * The entry is checked by config/'s own decoder, with the config file and the
 * other kept entries (conf.epapi_check, server/srv_epapi.c): a bad one is 400
 * naming the field. An id the network has already is 409; an endpoint of the
 * config file cannot be changed or removed here (409). Each change is one
 * state/ write with its event (endpoint_added, endpoint_changed,
 * endpoint_removed; the url redacted), then the master is asked to apply the
 * entries (conf.epapi_notify): new workers take the new endpoint set, the
 * old ones finish their calls and drain. The answer waits for that
 * (admin_epapi_wait.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/admin_int.h"
#include "base/sl_log.h"
#include "base/sl_time.h"
#include "state/state_cluster.h"
#include "state/state_epapi.h"
#include "wire/url.h"

static int send_error(h2o_req_t *req, int status, const char *field, const char *msg)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "error", msg);
    if (field != NULL && field[0] != '\0')
        cJSON_AddStringToObject(o, "field", field);
    return admin_send_json(req, status, o);
}

static cJSON *parse_body(h2o_req_t *req)
{
    cJSON *body = cJSON_ParseWithLength(req->entity.base, req->entity.len);
    if (body != NULL && !cJSON_IsObject(body)) {
        cJSON_Delete(body);
        return NULL;
    }
    return body;
}

/* The configured endpoint net/id, or NULL. */
static const pool_endpoint_conf_t *configured(const admin_t *a, const char *net, const char *id)
{
    for (size_t i = 0; i < a->conf.nnetworks; i++) {
        const pool_network_conf_t *n = &a->conf.networks[i];
        for (size_t j = 0; strcmp(n->name, net) == 0 && j < n->nendpoints; j++)
            if (strcmp(n->endpoints[j].id, id) == 0)
                return &n->endpoints[j];
    }
    return NULL;
}

/* "url " and the entry's url redacted (no url: ""), into out. */
static void url_note(const char *json, char *out, size_t cap)
{
    cJSON *o = cJSON_Parse(json);
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(o, "url");
    out[0] = '\0';
    if (cJSON_IsString(u)) {
        char *r = wire_url_redact(u->valuestring);
        snprintf(out, cap, "url %s", r);
        free(r);
    }
    cJSON_Delete(o);
}

/* Checks json as the entry net/id; 0 after answering 400 or 409. */
static int check(admin_t *a, h2o_req_t *req, const char *net, const char *id, const char *json)
{
    char why[512], field[64];
    int conflict = 0;
    if (a->conf.epapi_check == NULL)
        return send_error(req, 503, NULL, "endpoints cannot be changed at run time here"), 0;
    if (strlen(json) >= STATE_EPAPI_JSON_MAX)
        return send_error(req, 400, NULL, "the entry is too long"), 0;
    if (a->conf.epapi_check(a->conf.epapi_data, a->conf.state, net, id, json, why, sizeof(why), field,
                            sizeof(field), &conflict) == 0)
        return 1;
    return send_error(req, conflict ? 409 : 400, field, why), 0;
}

/* Keeps rec with its event, asks the master to apply; answers. */
static int keep(admin_t *a, h2o_req_t *req, state_epapi_rec_t *rec, int create, state_event_kind_t kind,
                const char *changed)
{
    state_event_t ev;
    char note[256];
    state_event_init(&ev, kind, rec->network, rec->id, sl_shared_ms());
    url_note(rec->json, note, sizeof(note));
    snprintf(ev.reason, sizeof(ev.reason), "%s%s%s", changed, changed[0] && note[0] ? "; " : "", note);
    sl_err_t err = state_epapi_put(a->conf.state, rec, create, &ev);
    if (err == SL_ERR_EXISTS)
        return send_error(req, 409, "id", "an endpoint of that id was added already");
    if (err == SL_ERR_NOT_FOUND)
        return send_error(req, 404, NULL, "no such endpoint added at run time");
    if (err != SL_OK)
        return send_error(req, 503, NULL, "the endpoint could not be kept in the shared state");
    state_cluster_epapi_publish(state_cluster_of(a->conf.state), rec, 0); /* not up: pushed on its return */
    if (a->conf.epapi_notify != NULL && a->conf.epapi_notify(a->conf.epapi_data) != 0)
        sl_log_warn("admin: could not tell the master that the endpoints changed; it applies them within a second");
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "network", rec->network);
    cJSON_AddStringToObject(o, "id", rec->id);
    cJSON_AddStringToObject(o, "source", "api");
    return admin_epapi_answer(a, req, o, create ? 201 : 200);
}

int admin_route_epapi_add(admin_t *a, h2o_req_t *req)
{
    cJSON *body = parse_body(req);
    if (body == NULL)
        return send_error(req, 400, NULL, "the body must be a JSON object");
    state_epapi_rec_t *rec = sl_xcalloc(1, sizeof(*rec));
    cJSON *net = cJSON_DetachItemFromObjectCaseSensitive(body, "network");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(body, "id");
    if (!cJSON_IsString(net) || net->valuestring[0] == '\0' || strlen(net->valuestring) >= sizeof(rec->network) ||
        strchr(net->valuestring, '/') != NULL)
        send_error(req, 400, "network", "network must name a network of the config file");
    else if (!cJSON_IsString(id) || id->valuestring[0] == '\0' || strlen(id->valuestring) >= sizeof(rec->id) ||
             strchr(id->valuestring, '/') != NULL)
        send_error(req, 400, "id", "an endpoint added at run time needs an id: 1-64 of [A-Za-z0-9_.-]");
    else if (configured(a, net->valuestring, id->valuestring) != NULL)
        send_error(req, 409, "id", "the network has an endpoint of that id");
    else {
        char *json = cJSON_PrintUnformatted(body);
        snprintf(rec->network, sizeof(rec->network), "%s", net->valuestring);
        snprintf(rec->id, sizeof(rec->id), "%s", id->valuestring);
        state_epapi_rec_t old;
        if (state_epapi_get(a->conf.state, rec->network, rec->id, &old) == SL_OK && old.json[0] != '\0')
            send_error(req, 409, "id", "an endpoint of that id was added already");
        else if (check(a, req, rec->network, rec->id, json)) {
            snprintf(rec->json, sizeof(rec->json), "%s", json);
            uint64_t now = sl_shared_ms(); /* later than a tombstone of the same id, for the cluster's merge */
            rec->created_ms = rec->updated_ms = now > old.updated_ms ? now : old.updated_ms + 1;
            keep(a, req, rec, 1, STATE_EVENT_ENDPOINT_ADDED, "");
        }
        cJSON_free(json);
    }
    cJSON_Delete(net);
    cJSON_Delete(body);
    free(rec);
    return 0;
}

/* {network}/{id} of /admin/endpoints/{network}/{id} into rec; 0 after answering 404. */
static int path_ids(h2o_req_t *req, state_epapi_rec_t *rec)
{
    h2o_iovec_t p = req->path_normalized;
    size_t skip = strlen("/admin/endpoints/");
    const char *s = p.base + skip, *end = p.base + p.len;
    const char *slash = memchr(s, '/', (size_t)(end - s));
    if (slash == NULL || slash == s || slash + 1 >= end || memchr(slash + 1, '/', (size_t)(end - slash - 1)) != NULL ||
        (size_t)(slash - s) >= sizeof(rec->network) || (size_t)(end - slash - 1) >= sizeof(rec->id))
        return send_error(req, 404, NULL, "no such endpoint: /admin/endpoints/{network}/{id}"), 0;
    memcpy(rec->network, s, (size_t)(slash - s));
    memcpy(rec->id, slash + 1, (size_t)(end - slash - 1));
    return 1;
}

/* The kept entry named by the path into rec; 0 after answering 404, 409 or 503. */
static int find(admin_t *a, h2o_req_t *req, state_epapi_rec_t *rec)
{
    if (!path_ids(req, rec))
        return 0;
    const pool_endpoint_conf_t *ep = configured(a, rec->network, rec->id);
    if (ep != NULL && !ep->from_api)
        return send_error(req, 409, NULL, "an endpoint of the config file: change it there"), 0;
    char net[sizeof(rec->network)], id[sizeof(rec->id)];
    memcpy(net, rec->network, sizeof(net));
    memcpy(id, rec->id, sizeof(id));
    sl_err_t err = state_epapi_get(a->conf.state, net, id, rec);
    if (err == SL_ERR_NOT_FOUND || (err == SL_OK && rec->json[0] == '\0'))
        return send_error(req, 404, NULL, "no such endpoint added at run time"), 0;
    if (err != SL_OK)
        return send_error(req, 503, NULL, "the shared state could not be read"), 0;
    return 1;
}

/* body's fields over the entry's json (null removes one); the names changed
 * into changed. NULL after answering 400. */
static char *patched(h2o_req_t *req, const state_epapi_rec_t *rec, cJSON *body, char *changed, size_t cap)
{
    cJSON *o = cJSON_Parse(rec->json);
    size_t n = 0;
    changed[0] = '\0';
    if (o == NULL)
        o = cJSON_CreateObject();
    for (cJSON *f = body->child; f != NULL; f = f->next) {
        if (strcmp(f->string, "network") == 0 || strcmp(f->string, "id") == 0) {
            cJSON_Delete(o);
            return send_error(req, 400, f->string, "an endpoint's network and id stay: remove it and add another"),
                   NULL;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(o, f->string);
        if (!cJSON_IsNull(f))
            cJSON_AddItemToObject(o, f->string, cJSON_Duplicate(f, 1));
        n += (size_t)snprintf(changed + n, n < cap ? cap - n : 0, "%s%s", n ? "," : "changed ", f->string);
    }
    char *json = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return json;
}

int admin_route_epapi_change(admin_t *a, h2o_req_t *req)
{
    state_epapi_rec_t *rec = sl_xcalloc(1, sizeof(*rec));
    cJSON *body = NULL;
    char changed[256], *json = NULL;
    if (!find(a, req, rec))
        goto cleanup;
    if ((body = parse_body(req)) == NULL) {
        send_error(req, 400, NULL, "the body must be a JSON object");
        goto cleanup;
    }
    json = patched(req, rec, body, changed, sizeof(changed));
    if (json != NULL && check(a, req, rec->network, rec->id, json)) {
        snprintf(rec->json, sizeof(rec->json), "%s", json);
        uint64_t now = sl_shared_ms();
        rec->updated_ms = now > rec->updated_ms ? now : rec->updated_ms + 1;
        keep(a, req, rec, 0, STATE_EVENT_ENDPOINT_CHANGED, changed);
    }
    cJSON_free(json);
cleanup:
    cJSON_Delete(body);
    free(rec);
    return 0;
}

int admin_route_epapi_remove(admin_t *a, h2o_req_t *req)
{
    state_epapi_rec_t *rec = sl_xcalloc(1, sizeof(*rec));
    if (find(a, req, rec)) {
        state_event_t ev;
        uint64_t now = sl_shared_ms();
        rec->updated_ms = now > rec->updated_ms ? now : rec->updated_ms + 1; /* the tombstone's time */
        state_event_init(&ev, STATE_EVENT_ENDPOINT_REMOVED, rec->network, rec->id, now);
        url_note(rec->json, ev.reason, sizeof(ev.reason));
        sl_err_t err = state_epapi_delete(a->conf.state, rec->network, rec->id, rec->updated_ms, &ev);
        if (err == SL_ERR_NOT_FOUND)
            send_error(req, 404, NULL, "no such endpoint added at run time");
        else if (err != SL_OK)
            send_error(req, 503, NULL, "the shared state could not be written");
        else {
            state_cluster_epapi_publish(state_cluster_of(a->conf.state), rec, 1); /* not up: pushed on its return */
            if (a->conf.epapi_notify != NULL && a->conf.epapi_notify(a->conf.epapi_data) != 0)
                sl_log_warn("admin: could not tell the master that the endpoints changed; it applies them within a "
                            "second");
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "network", rec->network);
            cJSON_AddStringToObject(o, "id", rec->id);
            cJSON_AddBoolToObject(o, "removed", 1);
            admin_epapi_answer(a, req, o, 200);
        }
    }
    free(rec);
    return 0;
}
