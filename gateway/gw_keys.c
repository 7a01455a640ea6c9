/* gateway/gw_keys.c: the run-time keys' table of one worker (gw_keys.h). */
#include "gateway/gw_keys.h"

#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

#include "base/sl_buf.h"
#include "base/sl_log.h"
#include "policy/access.h"
#include "state/state_apikey.h"

typedef struct rt_key {
    cfg_key_conf_t conf;
    int revoked;                  /* its key is gone */
    uint64_t updated_ms;          /* the record's, to keep an unchanged entry across reloads */
    struct rt_key *next_retired;
} rt_key_t;

struct gw_keys {
    const cfg_t *cfg;
    state_t *st;
    h2o_loop_t *loop;
    h2o_timeout_t timeout;
    h2o_timeout_entry_t tick;
    uint64_t gen;
    int loaded;                   /* gen was read at least once */
    rt_key_t **live;
    size_t nlive;
    rt_key_t *retired;            /* kept for the worker's life (gw_keys.h) */
    void (*on_revoke)(void *data);
    void *data;
};

/* One entry per line of s into a fresh string vector. */
static char **split_lines(const char *s, size_t *n)
{
    *n = 0;
    if (s[0] == '\0')
        return NULL;
    size_t cap = 1;
    for (const char *p = s; *p != '\0'; p++)
        cap += *p == '\n';
    char **v = sl_xcalloc(cap, sizeof(*v));
    for (const char *p = s;;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl != NULL ? (size_t)(nl - p) : strlen(p);
        if (len != 0) {
            char *e = sl_xmalloc(len + 1);
            memcpy(e, p, len);
            e[len] = '\0';
            v[(*n)++] = e;
        }
        if (nl == NULL)
            break;
        p = nl + 1;
    }
    return v;
}

static const cfg_tier_conf_t *tier_named(const cfg_t *cfg, const char *name)
{
    for (size_t i = 0; name[0] != '\0' && i < cfg->ntiers; i++)
        if (strcmp(cfg->tiers[i].name, name) == 0)
            return &cfg->tiers[i];
    return NULL;
}

static rt_key_t *entry_new(const gw_keys_t *k, const state_apikey_rec_t *r)
{
    rt_key_t *e = sl_xcalloc(1, sizeof(*e));
    e->updated_ms = r->updated_ms;
    memcpy(e->conf.sha256, r->sha256, sizeof(e->conf.sha256));
    e->conf.sha256[64] = '\0';
    e->conf.name = sl_xstrdup(r->name);
    e->conf.tier = sl_xstrdup(r->tier);
    e->conf.tier_conf = tier_named(k->cfg, r->tier);
    if (e->conf.tier_conf == NULL) /* never served without its tier's limits */
        sl_log_warn("API key '%s' names tier '%s', which the config does not have: the key is refused until "
                    "its tier is set again (PATCH /admin/keys/%s)", r->name, r->tier, r->name);
    e->conf.per_address.limits =
        (cfg_limit_conf_t){r->per_address[0], r->per_address[1], r->per_address[2]};
    e->conf.credits.limits.per_day = r->credits[0];
    e->conf.credits.limits.per_month = r->credits[1];
    e->conf.credits.exact = 1; /* as cfg_keys.c reads a config key's */
    if (r->jwt_pem[0] != '\0') {
        e->conf.jwt.public_key_pem = sl_xstrdup(r->jwt_pem);
        e->conf.jwt.audience = r->jwt_audience[0] != '\0' ? sl_xstrdup(r->jwt_audience) : NULL;
    }
    policy_access_scope_t *s = &e->conf.scope;
    s->networks = split_lines(r->networks, &s->nnetworks);
    s->allow = split_lines(r->allow, &s->nallow);
    s->deny = split_lines(r->deny, &s->ndeny);
    s->origins = split_lines(r->origins, &s->norigins);
    size_t nc;
    char **c = split_lines(r->contracts, &nc);
    s->contracts = nc != 0 ? sl_xcalloc(nc, sizeof(*s->contracts)) : NULL;
    for (size_t i = 0; i < nc; i++) {
        if (policy_access_parse_address(c[i], strlen(c[i]), s->contracts[s->ncontracts]))
            s->ncontracts++;
        free(c[i]);
    }
    free(c);
    return e;
}

static void strv_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static void entry_free(rt_key_t *e)
{
    policy_access_scope_t *s = &e->conf.scope;
    strv_free(s->networks, s->nnetworks);
    strv_free(s->allow, s->nallow);
    strv_free(s->deny, s->ndeny);
    strv_free(s->origins, s->norigins);
    free(s->contracts);
    free(e->conf.name);
    free(e->conf.tier);
    free(e->conf.jwt.public_key_pem);
    free(e->conf.jwt.audience);
    free(e);
}

/* The live entry named name, unchanged since updated_ms, or NULL. */
static rt_key_t *entry_kept(gw_keys_t *k, const state_apikey_rec_t *r)
{
    for (size_t i = 0; i < k->nlive; i++)
        if (k->live[i] != NULL && strcmp(k->live[i]->conf.name, r->name) == 0 &&
            k->live[i]->updated_ms == r->updated_ms && memcmp(k->live[i]->conf.sha256, r->sha256, 64) == 0)
            return k->live[i];
    return NULL;
}

static void retire(gw_keys_t *k, rt_key_t *e, rt_key_t *const *next, size_t nnext)
{
    e->revoked = 1;
    for (size_t i = 0; i < nnext; i++)
        if (strcmp(next[i]->conf.name, e->conf.name) == 0)
            e->revoked = 0; /* replaced by a change: the key lives on */
    e->next_retired = k->retired;
    k->retired = e;
}

int gw_keys_refresh(gw_keys_t *k)
{
    uint64_t gen;
    if (state_apikey_generation(k->st, &gen) != SL_OK || (k->loaded && gen == k->gen))
        return 0;
    state_apikey_rec_t *recs;
    size_t n;
    if (state_apikey_list(k->st, &recs, &n, &gen) != SL_OK)
        return 0;
    rt_key_t **next = sl_xcalloc(n ? n : 1, sizeof(*next));
    for (size_t i = 0; i < n; i++) {
        rt_key_t *kept = entry_kept(k, &recs[i]);
        next[i] = kept != NULL ? kept : entry_new(k, &recs[i]);
    }
    int revoked = 0;
    for (size_t i = 0; i < k->nlive; i++) {
        size_t j = 0;
        while (j < n && next[j] != k->live[i])
            j++;
        if (j < n)
            continue;
        retire(k, k->live[i], next, n);
        revoked |= k->live[i]->revoked;
    }
    free(k->live);
    free(recs);
    k->live = next;
    k->nlive = n;
    k->gen = gen;
    k->loaded = 1;
    if (revoked && k->on_revoke != NULL)
        k->on_revoke(k->data);
    return 1;
}

const cfg_key_conf_t *gw_keys_match(const gw_keys_t *k, const char hex[65])
{
    const cfg_key_conf_t *found = NULL;
    for (size_t i = 0; k != NULL && i < k->nlive; i++)
        if (CRYPTO_memcmp(hex, k->live[i]->conf.sha256, 64) == 0 && k->live[i]->conf.tier_conf != NULL)
            found = &k->live[i]->conf;
    return found;
}

uint64_t gw_keys_generation(const gw_keys_t *k)
{
    return k != NULL ? k->gen : 0;
}

int gw_keys_revoked(const gw_keys_t *k, const cfg_key_conf_t *key)
{
    for (const rt_key_t *e = k != NULL && key != NULL ? k->retired : NULL; e != NULL; e = e->next_retired)
        if (&e->conf == key)
            return e->revoked;
    return 0;
}

static void on_tick(h2o_timeout_entry_t *entry)
{
    gw_keys_t *k = H2O_STRUCT_FROM_MEMBER(gw_keys_t, tick, entry);
    (void)gw_keys_refresh(k);
    h2o_timeout_link(k->loop, &k->timeout, &k->tick);
}

gw_keys_t *gw_keys_create(h2o_loop_t *loop, const cfg_t *cfg, state_t *st, void (*on_revoke)(void *data),
                          void *data)
{
    gw_keys_t *k = sl_xcalloc(1, sizeof(*k));
    k->cfg = cfg;
    k->st = st;
    k->loop = loop;
    k->on_revoke = on_revoke;
    k->data = data;
    (void)gw_keys_refresh(k);
    h2o_timeout_init(loop, &k->timeout, cfg->state.refresh_ms != 0 ? cfg->state.refresh_ms : 50);
    k->tick.cb = on_tick;
    h2o_timeout_link(loop, &k->timeout, &k->tick);
    return k;
}

void gw_keys_destroy(gw_keys_t *k)
{
    if (k == NULL)
        return;
    if (h2o_timeout_is_linked(&k->tick))
        h2o_timeout_unlink(&k->tick);
    h2o_timeout_dispose(k->loop, &k->timeout);
    /* the worker is done: no call or socket reads an entry any more (until now, replaced and
     * revoked ones were kept for whoever still held them) */
    for (size_t i = 0; i < k->nlive; i++)
        entry_free(k->live[i]);
    free(k->live);
    while (k->retired != NULL) {
        rt_key_t *e = k->retired;
        k->retired = e->next_retired;
        entry_free(e);
    }
    free(k);
}
