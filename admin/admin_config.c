/* admin/admin_config.c: GET /admin/config, the effective networks and
 * endpoints (the parts of the configuration an operator changes at run time).
 *
 * The config file is the base; the endpoints added at run time (POST
 * /admin/endpoints) are merged into it, and this says which is which: each
 * network's endpoints as this worker runs them ("source": "yaml" or "api"),
 * and every kept entry with whether it is applied (one the config file now
 * names, or whose network it dropped, is kept but not applied). URLs are the
 * redacted ones; header values are never shown. */
#include <stdlib.h>
#include <string.h>

#include "admin/admin_int.h"
#include "state/state_epapi.h"
#include "wire/url.h"

static cJSON *endpoint_json(const pool_endpoint_conf_t *ep)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", ep->id);
    cJSON_AddStringToObject(o, "source", ep->from_api ? "api" : "yaml");
    cJSON_AddStringToObject(o, "url", ep->url_redacted);
    if (ep->ws_url_redacted != NULL)
        cJSON_AddStringToObject(o, "ws_url", ep->ws_url_redacted);
    cJSON_AddStringToObject(o, "tier", ep->tier == POOL_TIER_FALLBACK ? "fallback" : "primary");
    cJSON_AddNumberToObject(o, "max_inflight", ep->max_inflight);
    cJSON_AddStringToObject(o, "cost_profile", ep->cost_profile != NULL ? ep->cost_profile : "flat");
    cJSON_AddBoolToObject(o, "credits", ep->has_credits);
    if (ep->max_logs_blocks > 0)
        cJSON_AddNumberToObject(o, "max_logs_blocks", ep->max_logs_blocks);
    cJSON *h = cJSON_AddArrayToObject(o, "headers"); /* names only: values may be keys */
    for (size_t i = 0; i < ep->nheaders; i++)
        cJSON_AddItemToArray(h, cJSON_CreateString(ep->headers[i].name));
    if (ep->yaml_line > 0 && !ep->from_api)
        cJSON_AddNumberToObject(o, "line", ep->yaml_line);
    return o;
}

static int applied(const admin_t *a, const state_epapi_rec_t *r)
{
    for (size_t i = 0; i < a->conf.nnetworks; i++)
        for (size_t j = 0; strcmp(a->conf.networks[i].name, r->network) == 0 && j < a->conf.networks[i].nendpoints; j++)
            if (strcmp(a->conf.networks[i].endpoints[j].id, r->id) == 0)
                return a->conf.networks[i].endpoints[j].from_api;
    return 0;
}

/* A kept entry: its names, times, redacted url and whether it runs. */
static cJSON *entry_json(const admin_t *a, const state_epapi_rec_t *r)
{
    char iso[32];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "network", r->network);
    cJSON_AddStringToObject(o, "id", r->id);
    cJSON *fields = cJSON_Parse(r->json);
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(fields, "url");
    if (cJSON_IsString(u)) {
        char *red = wire_url_redact(u->valuestring);
        cJSON_AddStringToObject(o, "url", red);
        free(red);
    }
    cJSON *names = cJSON_AddArrayToObject(o, "fields");
    for (const cJSON *f = fields != NULL ? fields->child : NULL; f != NULL; f = f->next)
        cJSON_AddItemToArray(names, cJSON_CreateString(f->string));
    cJSON_Delete(fields);
    cJSON_AddBoolToObject(o, "applied", applied(a, r));
    admin_iso_time(r->created_ms, iso);
    cJSON_AddStringToObject(o, "created_at", iso);
    admin_iso_time(r->updated_ms, iso);
    cJSON_AddStringToObject(o, "updated_at", iso);
    return o;
}

int admin_route_config(admin_t *a, h2o_req_t *req)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *nets = cJSON_AddArrayToObject(o, "networks");
    for (size_t i = 0; i < a->conf.nnetworks; i++) {
        const pool_network_conf_t *n = &a->conf.networks[i];
        cJSON *no = cJSON_CreateObject();
        cJSON_AddStringToObject(no, "name", n->name);
        cJSON_AddStringToObject(no, "chain", policy_chain_name(n->chain));
        if (n->has_chain_id)
            cJSON_AddNumberToObject(no, "chain_id", (double)n->chain_id);
        cJSON *t = cJSON_AddObjectToObject(no, "timeouts");
        cJSON_AddNumberToObject(t, "connect_ms", n->timeouts.connect_ms);
        cJSON_AddNumberToObject(t, "first_byte_ms", n->timeouts.first_byte_ms);
        cJSON_AddNumberToObject(t, "attempt_ms", n->timeouts.attempt_ms);
        cJSON_AddNumberToObject(t, "request_ms", n->timeouts.request_ms);
        cJSON_AddNumberToObject(no, "max_attempts", n->max_attempts);
        cJSON *eps = cJSON_AddArrayToObject(no, "endpoints");
        for (size_t j = 0; j < n->nendpoints; j++)
            cJSON_AddItemToArray(eps, endpoint_json(&n->endpoints[j]));
        cJSON_AddItemToArray(nets, no);
    }
    state_epapi_rec_t *recs = NULL;
    size_t nrecs = 0;
    uint64_t gen = 0;
    cJSON *kept = cJSON_AddArrayToObject(o, "added_at_run_time");
    if (state_epapi_list(a->conf.state, &recs, &nrecs, &gen) == SL_OK)
        for (size_t i = 0; i < nrecs; i++)
            if (recs[i].json[0] != '\0') /* not a tombstone */
                cJSON_AddItemToArray(kept, entry_json(a, &recs[i]));
    cJSON_AddNumberToObject(o, "generation", (double)gen);
    free(recs);
    return admin_send_json(req, 200, o);
}
