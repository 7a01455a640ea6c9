/* admin/admin_keys.c: API keys made at run time (issue 33, phase 2).
 *
 *   POST   /admin/keys          {"name", "tier", "networks", "methods": {"allow",
 *                                "deny"}, "contracts", "origins", "per_address":
 *                                {"per_second", "per_minute", "per_day"}, "credits":
 *                                {"per_day", "per_month"}, "jwt": {"public_key_pem",
 *                                "audience"}} -> 201 {"name", "key"}:
 *                               the secret, this once (only its SHA-256 is kept)
 *   GET    /admin/keys          every key, the config file's too ("source"), never
 *                               a secret or hash
 *   PATCH  /admin/keys/{name}   the tier or scope fields given replace the key's
 *   DELETE /admin/keys/{name}   revokes it
 * The fields are checked as the config checks a key's (policy/access.h): a
 * bad one is 400 naming it. A name of a config key or a kept key is 409;
 * a config key cannot be changed or revoked here (409). Each change is one
 * state/ write with its event (key_created, key_scope_changed, key_revoked,
 * the name in reason); the workers pick it up on their next refresh. */
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/admin_int.h"
#include "base/sl_time.h"
#include "state/state_apikey.h"

#define KEY_RAW 24
#define KEYS_PAGE_MAX 1000 /* keys a GET /admin/keys answers at most (and by default) */

static int send_error(h2o_req_t *req, int status, const char *field, const char *msg)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "error", msg);
    if (field != NULL)
        cJSON_AddStringToObject(o, "field", field);
    return admin_send_json(req, status, o);
}

static const admin_key_info_t *config_key(const admin_t *a, const char *name)
{
    for (size_t i = 0; i < a->conf.nconfig_keys; i++)
        if (a->conf.config_keys[i].name != NULL && strcmp(a->conf.config_keys[i].name, name) == 0)
            return &a->conf.config_keys[i];
    return NULL;
}

static int name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= STATE_APIKEY_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '-' || s[i] == '_' || s[i] == '.'))
            return 0;
    return 1;
}

/* One entry's problem (NULL: none) for the list called field. */
static const char *entry_problem(const admin_t *a, const char *field, const char *s)
{
    if (strcmp(field, "networks") == 0) {
        for (size_t i = 0; i < a->conf.nnetworks; i++)
            if (strcmp(a->conf.networks[i].name, s) == 0)
                return NULL;
        return "unknown network (a name under networks:)";
    }
    if (strcmp(field, "contracts") == 0) {
        uint8_t addr[20];
        return policy_access_parse_address(s, strlen(s), addr) ? NULL
                                                               : "a contract must be an address: 0x and 40 hex digits";
    }
    if (strcmp(field, "origins") == 0)
        return policy_access_origin_problem(s);
    return policy_access_glob_problem(s);
}

/* A JSON array of strings into out[0..cap) one per line; NULL or a problem. */
static const char *read_list(const admin_t *a, const cJSON *v, const char *field, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    if (!cJSON_IsArray(v))
        return "must be a list of strings";
    const cJSON *e;
    cJSON_ArrayForEach(e, v) {
        if (!cJSON_IsString(e) || strchr(e->valuestring, '\n') != NULL)
            return "must be a list of strings";
        const char *why = entry_problem(a, field, e->valuestring);
        if (why != NULL)
            return why;
        size_t len = strlen(e->valuestring);
        if (n + len + 2 > cap)
            return "too long a list";
        if (n != 0)
            out[n++] = '\n';
        memcpy(out + n, e->valuestring, len + 1);
        if (strcmp(field, "contracts") == 0)
            for (size_t i = n; i < n + len; i++)
                out[i] = (char)(out[i] >= 'A' && out[i] <= 'F' ? out[i] + 32 : out[i]);
        n += len;
    }
    return NULL;
}

static const char *const window_names[3] = {"per_second", "per_minute", "per_day"};

/* per_address: {per_second, per_minute, per_day} into out (a field left out
 * is 0: no limit in that window; {} removes the limit); NULL or what is wrong. */
static const char *read_per_address(const cJSON *v, uint32_t out[3])
{
    if (!cJSON_IsObject(v))
        return "must be an object: {\"per_second\", \"per_minute\", \"per_day\"}";
    uint32_t w[3] = {0, 0, 0};
    for (const cJSON *f = v->child; f != NULL; f = f->next) {
        int i = 0;
        while (i < 3 && strcmp(f->string, window_names[i]) != 0)
            i++;
        if (i == 3)
            return "unknown field: the fields are per_second, per_minute, per_day";
        if (!cJSON_IsNumber(f) || f->valuedouble < 0 || f->valuedouble > 4294967295.0 ||
            f->valuedouble != (double)(uint64_t)f->valuedouble)
            return "a limit is a whole number from 0 to 4294967295";
        w[i] = (uint32_t)f->valuedouble;
    }
    memcpy(out, w, sizeof(w));
    return NULL;
}

/* credits: {per_day, per_month} into out (a field left out is 0: no budget
 * in that window; {} removes the budget); NULL or what is wrong. */
static const char *read_credits(const cJSON *v, uint32_t out[2])
{
    static const char *const names[2] = {"per_day", "per_month"};
    if (!cJSON_IsObject(v))
        return "must be an object: {\"per_day\", \"per_month\"}";
    uint32_t w[2] = {0, 0};
    for (const cJSON *f = v->child; f != NULL; f = f->next) {
        int i = 0;
        while (i < 2 && strcmp(f->string, names[i]) != 0)
            i++;
        if (i == 2)
            return "unknown field: the fields are per_day, per_month";
        if (!cJSON_IsNumber(f) || f->valuedouble < 0 || f->valuedouble > 4294967295.0 ||
            f->valuedouble != (double)(uint64_t)f->valuedouble)
            return "a budget is a whole number of credits from 0 to 4294967295";
        w[i] = (uint32_t)f->valuedouble;
    }
    memcpy(out, w, sizeof(w));
    return NULL;
}

/* What is wrong with pem as a JWT public key (NULL: an EC P-256 or RSA public key). */
static const char *pem_problem(const char *pem)
{
    BIO *bio = BIO_new_mem_buf(pem, -1);
    EVP_PKEY *pk = bio != NULL ? PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL) : NULL;
    BIO_free(bio);
    const char *why = NULL;
    if (pk == NULL)
        why = "public_key_pem holds no PEM public key (-----BEGIN PUBLIC KEY-----)";
    else if (!(EVP_PKEY_base_id(pk) == EVP_PKEY_EC && EVP_PKEY_bits(pk) == 256) && EVP_PKEY_base_id(pk) != EVP_PKEY_RSA)
        why = "public_key_pem must be an EC P-256 (ES256) or an RSA (RS256) public key";
    EVP_PKEY_free(pk);
    return why;
}

/* jwt: {public_key_pem, audience} into rec ({} removes it); NULL or what is wrong. */
static const char *read_jwt(const cJSON *v, state_apikey_rec_t *rec)
{
    if (!cJSON_IsObject(v))
        return "must be an object: {\"public_key_pem\", \"audience\"}";
    const cJSON *pem = NULL, *aud = NULL;
    for (const cJSON *f = v->child; f != NULL; f = f->next) {
        if (strcmp(f->string, "public_key_pem") == 0)
            pem = f;
        else if (strcmp(f->string, "audience") == 0)
            aud = f;
        else
            return "unknown field: the fields are public_key_pem, audience";
    }
    if (pem == NULL && aud == NULL) {
        rec->jwt_pem[0] = rec->jwt_audience[0] = '\0';
        return NULL;
    }
    if (!cJSON_IsString(pem))
        return "public_key_pem is required: the PEM text of the public key";
    if (strlen(pem->valuestring) >= sizeof(rec->jwt_pem))
        return "public_key_pem is too long";
    if (aud != NULL && (!cJSON_IsString(aud) || aud->valuestring[0] == '\0' ||
                        strlen(aud->valuestring) >= sizeof(rec->jwt_audience)))
        return "audience must be a non-empty string";
    const char *why = pem_problem(pem->valuestring);
    if (why != NULL)
        return why;
    snprintf(rec->jwt_pem, sizeof(rec->jwt_pem), "%s", pem->valuestring);
    snprintf(rec->jwt_audience, sizeof(rec->jwt_audience), "%s", aud != NULL ? aud->valuestring : "");
    return NULL;
}

/* credits and jwt present in body into rec; 0 after answering 400. */
static int read_budget_jwt(h2o_req_t *req, const cJSON *body, state_apikey_rec_t *rec)
{
    const cJSON *cr = cJSON_GetObjectItemCaseSensitive(body, "credits");
    const char *why = cr != NULL ? read_credits(cr, rec->credits) : NULL;
    if (why != NULL)
        return send_error(req, 400, "credits", why), 0;
    const cJSON *jwt = cJSON_GetObjectItemCaseSensitive(body, "jwt");
    why = jwt != NULL ? read_jwt(jwt, rec) : NULL;
    if (why != NULL)
        return send_error(req, 400, "jwt", why), 0;
    return 1;
}

/* The tier and scope fields present in body into rec; 0 after answering 400. */
static int read_fields(admin_t *a, h2o_req_t *req, const cJSON *body, state_apikey_rec_t *rec)
{
    const cJSON *tier = cJSON_GetObjectItemCaseSensitive(body, "tier");
    if (tier != NULL) {
        size_t i = 0;
        while (cJSON_IsString(tier) && i < a->conf.ntiers && strcmp(a->conf.tiers[i], tier->valuestring) != 0)
            i++;
        if (!cJSON_IsString(tier) || i == a->conf.ntiers)
            return send_error(req, 400, "tier", "unknown tier (a name under tiers:)"), 0;
        snprintf(rec->tier, sizeof(rec->tier), "%s", tier->valuestring);
    }
    struct {
        const char *field;
        const cJSON *v;
        char *out;
        size_t cap;
    } lists[] = {
        {"networks", cJSON_GetObjectItemCaseSensitive(body, "networks"), rec->networks, sizeof(rec->networks)},
        {"contracts", cJSON_GetObjectItemCaseSensitive(body, "contracts"), rec->contracts, sizeof(rec->contracts)},
        {"origins", cJSON_GetObjectItemCaseSensitive(body, "origins"), rec->origins, sizeof(rec->origins)},
        {"methods.allow", NULL, rec->allow, sizeof(rec->allow)},
        {"methods.deny", NULL, rec->deny, sizeof(rec->deny)},
    };
    const cJSON *methods = cJSON_GetObjectItemCaseSensitive(body, "methods");
    if (methods != NULL && !cJSON_IsObject(methods))
        return send_error(req, 400, "methods", "must be an object with allow and deny lists"), 0;
    const cJSON *pa = cJSON_GetObjectItemCaseSensitive(body, "per_address");
    const char *pa_why = pa != NULL ? read_per_address(pa, rec->per_address) : NULL;
    if (pa_why != NULL)
        return send_error(req, 400, "per_address", pa_why), 0;
    lists[3].v = cJSON_GetObjectItemCaseSensitive(methods, "allow");
    lists[4].v = cJSON_GetObjectItemCaseSensitive(methods, "deny");
    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
        const char *why = lists[i].v != NULL ? read_list(a, lists[i].v, lists[i].field, lists[i].out, lists[i].cap) : NULL;
        if (why != NULL)
            return send_error(req, 400, lists[i].field, why), 0;
    }
    return read_budget_jwt(req, body, rec);
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

static sl_err_t put_with_event(admin_t *a, const state_apikey_rec_t *rec, int create, state_event_kind_t kind)
{
    state_event_t ev;
    state_event_init(&ev, kind, "", "", sl_shared_ms());
    snprintf(ev.reason, sizeof(ev.reason), "%s", rec->name);
    return state_apikey_put(a->conf.state, rec, create, &ev);
}

/* A fresh secret as `sluice key new` makes one, and its SHA-256 in hex. */
static int new_secret(char key[3 + KEY_RAW + 1], char hex[65])
{
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    static const char digits[] = "0123456789abcdef";
    unsigned char raw[KEY_RAW], md[SHA256_DIGEST_LENGTH];
    if (RAND_bytes(raw, sizeof(raw)) != 1)
        return 0;
    memcpy(key, "sl_", 3);
    for (size_t i = 0; i < KEY_RAW; i++)
        key[3 + i] = alphabet[raw[i] % (sizeof(alphabet) - 1)];
    key[3 + KEY_RAW] = '\0';
    SHA256((const unsigned char *)key, 3 + KEY_RAW, md);
    for (size_t i = 0; i < SHA256_DIGEST_LENGTH; i++) {
        hex[2 * i] = digits[md[i] >> 4];
        hex[2 * i + 1] = digits[md[i] & 15];
    }
    hex[64] = '\0';
    return 1;
}

int admin_route_keys_create(admin_t *a, h2o_req_t *req)
{
    cJSON *body = parse_body(req);
    if (body == NULL)
        return send_error(req, 400, NULL, "the body must be a JSON object");
    state_apikey_rec_t *rec = sl_xcalloc(1, sizeof(*rec));
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(body, "name");
    int answered = 1;
    if (!cJSON_IsString(name) || !name_ok(name->valuestring))
        send_error(req, 400, "name", "a name is 1 to 63 letters, digits, '-', '_' or '.'");
    else if (config_key(a, name->valuestring) != NULL)
        send_error(req, 409, "name", "a key of the config file has that name");
    else if (cJSON_GetObjectItemCaseSensitive(body, "tier") == NULL)
        send_error(req, 400, "tier", "a key needs a tier (a name under tiers:), as in the config");
    else
        answered = !read_fields(a, req, body, rec);
    if (!answered) {
        char key[3 + KEY_RAW + 1];
        snprintf(rec->name, sizeof(rec->name), "%s", name->valuestring);
        rec->created_ms = rec->updated_ms = sl_shared_ms();
        sl_err_t err = new_secret(key, rec->sha256) ? put_with_event(a, rec, 1, STATE_EVENT_KEY_CREATED) : SL_ERR_STATE;
        if (err == SL_ERR_EXISTS)
            send_error(req, 409, "name", "a key of that name exists");
        else if (err != SL_OK)
            send_error(req, 503, NULL, "the key could not be kept in the shared state");
        else {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "name", rec->name);
            cJSON_AddStringToObject(o, "key", key);
            admin_send_json(req, 201, o);
        }
        OPENSSL_cleanse(key, sizeof(key));
    }
    free(rec);
    cJSON_Delete(body);
    return 0;
}

/* The {name} of /admin/keys/{name} into out; 0 after answering 404. */
static int path_name(h2o_req_t *req, char out[STATE_APIKEY_NAME_MAX])
{
    h2o_iovec_t p = req->path_normalized;
    size_t skip = strlen("/admin/keys/");
    size_t len = p.len - skip;
    if (len == 0 || len >= STATE_APIKEY_NAME_MAX)
        return send_error(req, 404, NULL, "no such key"), 0;
    memcpy(out, p.base + skip, len);
    out[len] = '\0';
    if (!name_ok(out))
        return send_error(req, 404, NULL, "no such key"), 0;
    return 1;
}

int admin_route_keys_change(admin_t *a, h2o_req_t *req)
{
    char name[STATE_APIKEY_NAME_MAX];
    if (!path_name(req, name))
        return 0;
    if (config_key(a, name) != NULL)
        return send_error(req, 409, NULL, "a key of the config file: change it there");
    cJSON *body = parse_body(req);
    if (body == NULL)
        return send_error(req, 400, NULL, "the body must be a JSON object");
    state_apikey_rec_t *rec = sl_xcalloc(1, sizeof(*rec));
    sl_err_t err = state_apikey_get(a->conf.state, name, rec);
    if (err == SL_ERR_NOT_FOUND)
        send_error(req, 404, NULL, "no such key");
    else if (err != SL_OK)
        send_error(req, 503, NULL, "the shared state could not be read");
    else if (read_fields(a, req, body, rec)) {
        uint64_t now = sl_shared_ms();
        rec->updated_ms = now > rec->updated_ms ? now : rec->updated_ms + 1; /* the workers tell a change by it */
        err = put_with_event(a, rec, 0, STATE_EVENT_KEY_SCOPE_CHANGED);
        if (err == SL_ERR_NOT_FOUND)
            send_error(req, 404, NULL, "no such key");
        else if (err != SL_OK)
            send_error(req, 503, NULL, "the key could not be kept in the shared state");
        else {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "name", name);
            cJSON_AddBoolToObject(o, "changed", 1);
            admin_send_json(req, 200, o);
        }
    }
    free(rec);
    cJSON_Delete(body);
    return 0;
}

int admin_route_keys_revoke(admin_t *a, h2o_req_t *req)
{
    char name[STATE_APIKEY_NAME_MAX];
    if (!path_name(req, name))
        return 0;
    if (config_key(a, name) != NULL)
        return send_error(req, 409, NULL, "a key of the config file: remove it there");
    state_event_t ev;
    uint64_t now = sl_shared_ms();
    state_event_init(&ev, STATE_EVENT_KEY_REVOKED, "", "", now);
    snprintf(ev.reason, sizeof(ev.reason), "%s", name);
    sl_err_t err = state_apikey_delete(a->conf.state, name, now, &ev);
    if (err == SL_ERR_NOT_FOUND)
        return send_error(req, 404, NULL, "no such key");
    if (err != SL_OK)
        return send_error(req, 503, NULL, "the shared state could not be written");
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", name);
    cJSON_AddBoolToObject(o, "revoked", 1);
    return admin_send_json(req, 200, o);
}

static cJSON *strv_json(char *const *v, size_t n)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateString(v[i]));
    return arr;
}

/* One entry per line of s as a JSON array. */
static cJSON *lines_json(const char *s)
{
    cJSON *arr = cJSON_CreateArray();
    while (*s != '\0') {
        const char *nl = strchr(s, '\n');
        size_t len = nl != NULL ? (size_t)(nl - s) : strlen(s);
        char buf[256];
        snprintf(buf, sizeof(buf), "%.*s", (int)len, s);
        cJSON_AddItemToArray(arr, cJSON_CreateString(buf));
        s += len + (nl != NULL);
    }
    return arr;
}

static void per_address_json(cJSON *o, const uint32_t w[3])
{
    cJSON *pa = cJSON_AddObjectToObject(o, "per_address");
    for (int i = 0; i < 3; i++)
        if (w[i] != 0)
            cJSON_AddNumberToObject(pa, window_names[i], w[i]);
}

static void credits_json(cJSON *o, uint32_t per_day, uint32_t per_month)
{
    cJSON *c = cJSON_AddObjectToObject(o, "credits");
    if (per_day != 0)
        cJSON_AddNumberToObject(c, "per_day", per_day);
    if (per_month != 0)
        cJSON_AddNumberToObject(c, "per_month", per_month);
}

/* jwt: null, or {"audience"} (null: not checked); the public key is not shown */
static void jwt_json(cJSON *o, int has, const char *audience)
{
    if (!has) {
        cJSON_AddNullToObject(o, "jwt");
        return;
    }
    cJSON *j = cJSON_AddObjectToObject(o, "jwt");
    if (audience != NULL && audience[0] != '\0')
        cJSON_AddStringToObject(j, "audience", audience);
    else
        cJSON_AddNullToObject(j, "audience");
}

static cJSON *config_key_json(const admin_key_info_t *k)
{
    static const char digits[] = "0123456789abcdef";
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", k->name != NULL ? k->name : "");
    cJSON_AddStringToObject(o, "source", "config");
    cJSON_AddStringToObject(o, "tier", k->tier != NULL ? k->tier : "");
    cJSON_AddItemToObject(o, "networks", strv_json(k->scope->networks, k->scope->nnetworks));
    cJSON *m = cJSON_AddObjectToObject(o, "methods");
    cJSON_AddItemToObject(m, "allow", strv_json(k->scope->allow, k->scope->nallow));
    cJSON_AddItemToObject(m, "deny", strv_json(k->scope->deny, k->scope->ndeny));
    cJSON *c = cJSON_AddArrayToObject(o, "contracts");
    for (size_t i = 0; i < k->scope->ncontracts; i++) {
        char hex[43] = "0x";
        for (size_t b = 0; b < 20; b++) {
            hex[2 + 2 * b] = digits[k->scope->contracts[i][b] >> 4];
            hex[3 + 2 * b] = digits[k->scope->contracts[i][b] & 15];
        }
        hex[42] = '\0';
        cJSON_AddItemToArray(c, cJSON_CreateString(hex));
    }
    cJSON_AddItemToObject(o, "origins", strv_json(k->scope->origins, k->scope->norigins));
    per_address_json(o, k->per_address);
    credits_json(o, k->credits[0], k->credits[1]);
    jwt_json(o, k->jwt, k->jwt_audience);
    return o;
}

static cJSON *api_key_json(const state_apikey_rec_t *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", r->name);
    cJSON_AddStringToObject(o, "source", "api");
    cJSON_AddStringToObject(o, "tier", r->tier);
    cJSON_AddItemToObject(o, "networks", lines_json(r->networks));
    cJSON *m = cJSON_AddObjectToObject(o, "methods");
    cJSON_AddItemToObject(m, "allow", lines_json(r->allow));
    cJSON_AddItemToObject(m, "deny", lines_json(r->deny));
    cJSON_AddItemToObject(o, "contracts", lines_json(r->contracts));
    cJSON_AddItemToObject(o, "origins", lines_json(r->origins));
    per_address_json(o, r->per_address);
    credits_json(o, r->credits[0], r->credits[1]);
    jwt_json(o, r->jwt_pem[0] != '\0', r->jwt_audience);
    cJSON_AddNumberToObject(o, "created_ms", (double)r->created_ms);
    cJSON_AddNumberToObject(o, "updated_ms", (double)r->updated_ms);
    return o;
}

/* Where the page after the key named after starts in the listing: the
 * config file's keys in their order, then the kept ones by name (recs[] is
 * in name order), so a cursor whose key was revoked meanwhile still finds
 * its place. */
static size_t page_start(const admin_t *a, const state_apikey_rec_t *recs, size_t n, const char *after)
{
    if (after[0] == '\0')
        return 0;
    for (size_t i = 0; i < a->conf.nconfig_keys; i++)
        if (a->conf.config_keys[i].name != NULL && strcmp(a->conf.config_keys[i].name, after) == 0)
            return i + 1;
    size_t i = 0;
    while (i < n && strcmp(recs[i].name, after) <= 0)
        i++;
    return a->conf.nconfig_keys + i;
}

/* The key's spend and last use, as /metrics counts them (admin_key_metrics.c), inside a snapshot. */
static void add_counts(admin_t *a, cJSON *k, const char *name)
{
    uint64_t c[STATE_KEYC_COUNT];
    admin_key_counts(a, name, c);
    uint64_t refused = 0;
    for (int r = STATE_KEYC_NETWORK; r <= STATE_KEYC_JWT; r++)
        refused += c[r];
    cJSON_AddNumberToObject(k, "calls", (double)c[STATE_KEYC_CALLS]);
    cJSON_AddNumberToObject(k, "refusals", (double)refused);
    cJSON_AddNumberToObject(k, "credits_spent", (double)c[STATE_KEYC_SPENT]);
    if (c[STATE_KEYC_LAST_USE_S] != 0)
        cJSON_AddNumberToObject(k, "last_used_ms", (double)c[STATE_KEYC_LAST_USE_S] * 1000);
    else
        cJSON_AddNullToObject(k, "last_used_ms");
}

int admin_route_keys_list(admin_t *a, h2o_req_t *req)
{
    size_t after_len = 0;
    const char *after_q = admin_query_value(req, "after", &after_len);
    char after[STATE_APIKEY_NAME_MAX] = "";
    uint64_t limit = admin_query_u64(req, "limit", KEYS_PAGE_MAX);
    if (limit == 0 || limit > KEYS_PAGE_MAX)
        return send_error(req, 400, "limit", "limit is 1 to 1000 keys a page");
    if (after_q != NULL && after_len >= sizeof(after))
        return send_error(req, 400, "after", "after is a key's name (as the last page's next says)");
    if (after_q != NULL)
        memcpy(after, after_q, after_len);
    state_apikey_rec_t *recs;
    size_t n;
    if (state_apikey_list(a->conf.state, &recs, &n, NULL) != SL_OK)
        return send_error(req, 503, NULL, "the shared state could not be read");
    size_t total = a->conf.nconfig_keys + n, i = page_start(a, recs, n, after), shown = 0;
    cJSON *o = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(o, "keys");
    int snapshot = state_read_begin(a->conf.state) == SL_OK;
    const char *last = NULL;
    for (; i < total && shown < limit; i++, shown++) {
        const admin_key_info_t *conf = i < a->conf.nconfig_keys ? &a->conf.config_keys[i] : NULL;
        cJSON *k = conf != NULL ? config_key_json(conf) : api_key_json(&recs[i - a->conf.nconfig_keys]);
        last = cJSON_GetObjectItem(k, "name")->valuestring;
        if (snapshot)
            add_counts(a, k, last);
        cJSON_AddItemToArray(arr, k);
    }
    if (snapshot)
        state_read_end(a->conf.state);
    if (i < total && last != NULL)
        cJSON_AddStringToObject(o, "next", last); /* ?after= this for the next page */
    else
        cJSON_AddNullToObject(o, "next");
    free(recs);
    return admin_send_json(req, 200, o);
}
