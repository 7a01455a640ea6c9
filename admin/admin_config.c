/* admin/admin_config.c: GET /admin/config, the effective configuration.
 *
 * config/ renders it (cfg_json: every section and key after defaults, no
 * secret) and server/ hands the text over; this adds what the state holds.
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
    cJSON *o = a->conf.config_json != NULL ? cJSON_Parse(a->conf.config_json) : NULL;
    if (o == NULL)
        o = cJSON_CreateObject(); /* not handed one (tests of admin/ alone) */
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
