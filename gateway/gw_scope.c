/* gateway/gw_scope.c: the access policy asked at the edge (gw_scope.h). */
#include "gateway/gw_scope.h"

#include <string.h>

#include "gateway/gw_jwt.h"
#include "gateway/gw_refuse.h"
#include "gateway/gw_stats.h"
#include "wire/envelope.h"

#define SCOPE_MSG_MAX 320

static const state_srv_counter_t reason_counter[POLICY_ACCESS_REASON_COUNT] = {
    [POLICY_ACCESS_KEY_REQUIRED] = STATE_SRV_ACCESS_KEY_REQUIRED,
    [POLICY_ACCESS_NETWORK] = STATE_SRV_ACCESS_NETWORK,
    [POLICY_ACCESS_METHOD] = STATE_SRV_ACCESS_METHOD,
    [POLICY_ACCESS_CONTRACT] = STATE_SRV_ACCESS_CONTRACT,
    [POLICY_ACCESS_ORIGIN] = STATE_SRV_ACCESS_ORIGIN,
};

static const state_key_counter_t key_counter[POLICY_ACCESS_REASON_COUNT] = {
    [POLICY_ACCESS_KEY_REQUIRED] = STATE_KEYC_COUNT, /* no key: not counted per key */
    [POLICY_ACCESS_NETWORK] = STATE_KEYC_NETWORK,
    [POLICY_ACCESS_METHOD] = STATE_KEYC_METHOD,
    [POLICY_ACCESS_CONTRACT] = STATE_KEYC_CONTRACT,
    [POLICY_ACCESS_ORIGIN] = STATE_KEYC_ORIGIN,
};

/* A refusal, in the server's counters and the key's (key NULL: none). */
static void count(gw_handler_t *h, const cfg_key_conf_t *key, policy_access_reason_t r)
{
    if (r == POLICY_ACCESS_OK || r >= POLICY_ACCESS_REASON_COUNT)
        return;
    gw_stats_srv_add(h->stats, reason_counter[r], 1);
    if (key != NULL)
        gw_stats_key_add(h->stats, key->name, key_counter[r], 1);
}

static const policy_access_scope_t *scope_of(const cfg_key_conf_t *key)
{
    return key != NULL && policy_access_scoped(&key->scope) ? &key->scope : NULL;
}

int gw_scope_request(gw_exec_t *x, h2o_req_t *req)
{
    char msg[SCOPE_MSG_MAX];
    policy_access_reason_t r = POLICY_ACCESS_OK;
    if (!gw_jwt_admit(&x->h->jwt_keys, x->key, req, msg, sizeof(msg))) {
        /* charged as a 401 is: to the key's own tier */
        gw_stats_srv_add(x->h->stats, STATE_SRV_ACCESS_JWT, 1);
        if (x->key != NULL)
            gw_stats_key_add(x->h->stats, x->key->name, STATE_KEYC_JWT, 1);
        if (gw_exec_admit_denied(x))
            gw_exec_refuse_jwt(x, msg);
        return 0;
    }
    if (x->key == NULL && x->h->cfg->anonymous_deny) {
        r = POLICY_ACCESS_KEY_REQUIRED;
        snprintf(msg, sizeof(msg), "API key required: call /%s/sl_<key> or send the key in an X-API-Key header",
                 x->net->sub.conf->name);
    } else if (scope_of(x->key) != NULL) {
        ssize_t i = h2o_find_header_by_str(&req->headers, H2O_STRLIT("origin"), -1);
        const h2o_iovec_t *origin = i >= 0 ? &req->headers.entries[i].value : NULL;
        r = policy_access_request(&x->key->scope, x->net->sub.conf->name, origin ? origin->base : NULL,
                                  origin ? origin->len : 0, msg, sizeof(msg));
    }
    if (r == POLICY_ACCESS_OK)
        return 1;
    count(x->h, x->key, r);
    /* charged as a 401 is: the caller's address, or the key's own tier */
    if (r == POLICY_ACCESS_KEY_REQUIRED ? gw_exec_admit_refusal(x) : gw_exec_admit_denied(x))
        gw_exec_refuse_denied(x, r, msg);
    return 0;
}

void gw_scope_members(gw_exec_t *x)
{
    const policy_access_scope_t *s = scope_of(x->key);
    if (s == NULL || x->rpc.kind == GW_RPC_REJECT)
        return;
    const char *body = x->body != NULL ? x->body : "";
    for (size_t i = 0; i < x->rpc.nmembers; i++) {
        gw_member_t *m = &x->rpc.members[i];
        if (m->status != GW_MEMBER_FORWARD)
            continue;
        char msg[SCOPE_MSG_MAX];
        policy_access_reason_t r = policy_access_call(s, m->name, strlen(m->name), body + m->params.off,
                                                      m->params.len, msg, sizeof(msg));
        if (r == POLICY_ACCESS_OK)
            continue;
        m->status = GW_MEMBER_DENIED;
        m->denied = (uint8_t)r;
        m->error = h2o_strdup(x->mem, msg, SIZE_MAX).base;
        count(x->h, x->key, r);
    }
}

int gw_scope_sub(gw_handler_t *h, const cfg_key_conf_t *key, sub_client_t *c, const char *body, size_t len,
                 wire_span_t id)
{
    const policy_access_scope_t *s = scope_of(key);
    wire_envelope_t env;
    char method[WIRE_RPC_METHOD_MAX], msg[SCOPE_MSG_MAX];
    if (s == NULL)
        return 1;
    /* sub/ read it already: a call with a string method */
    if (wire_envelope_scan(body, len, &env) != SL_OK ||
        wire_json_string(body, env.method, method, sizeof(method)) != SL_OK)
        return 1;
    policy_access_reason_t r = policy_access_call(s, method, strlen(method), body + env.params.off, env.params.len,
                                                  msg, sizeof(msg));
    if (r == POLICY_ACCESS_OK)
        return 1;
    if (h != NULL)
        count(h, key, r);
    sl_buf_t out = SL_BUF_INIT;
    gw_refuse_denied_error(&out, body, id, r, msg);
    c->send(c, out.base, out.len);
    sl_buf_dispose(&out);
    return 0;
}
