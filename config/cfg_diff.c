/* config/cfg_diff.c: the running configuration against a new one.
 * Every compared field is a row of a table (settings, network fields,
 * endpoint fields); a field a reload cannot apply is flagged in its row. */
#include "config/cfg_diff.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sl_buf.h"

typedef enum field_kind {
    F_U32,
    F_SIZE,
    F_INT,                        /* int and enums */
    F_STR,                        /* char *, NULL allowed */
    F_STRV,                       /* char ** at off, size_t count at count_off; NULL != empty */
    F_MEM,                        /* a struct without padding, size bytes */
    F_FN,                         /* fn decides */
} field_kind_t;

typedef struct field {
    const char *name;
    field_kind_t kind;
    size_t off;
    size_t count_off;             /* F_STRV: the count; F_MEM: the size */
    int (*fn)(const void *a, const void *b); /* F_FN: 1 if they differ */
    int restart;                  /* 1: a reload cannot apply it */
    int show;                     /* 1: the values may be shown (not secrets) */
} field_t;

/* F_MEM rows memcmp whole structs: they must not have padding */
_Static_assert(sizeof(pool_timeouts_t) == 4 * sizeof(uint32_t), "pool_timeouts_t has padding");
_Static_assert(sizeof(policy_breaker_conf_t) == 8 * sizeof(uint32_t), "policy_breaker_conf_t has padding");
_Static_assert(sizeof(policy_score_conf_t) == 4 * sizeof(double) + 6 * sizeof(uint32_t),
               "policy_score_conf_t has padding");

static int str_differs(const char *a, const char *b)
{
    if (a == NULL || b == NULL)
        return a != b;
    return strcmp(a, b) != 0;
}

typedef char *str_t;
typedef char **strv_t;
#define AT(base, off, type) (*(const type *)((const char *)(base) + (off)))

static int strv_differs(const field_t *f, const void *a, const void *b)
{
    char *const *va = AT(a, f->off, strv_t), *const *vb = AT(b, f->off, strv_t);
    size_t na = AT(a, f->count_off, size_t), nb = AT(b, f->count_off, size_t);
    if ((va == NULL) != (vb == NULL) || na != nb)
        return 1;
    for (size_t i = 0; i < na; i++)
        if (str_differs(va[i], vb[i]))
            return 1;
    return 0;
}

static int differs(const field_t *f, const void *a, const void *b)
{
    switch (f->kind) {
    case F_U32: return AT(a, f->off, uint32_t) != AT(b, f->off, uint32_t);
    case F_SIZE: return AT(a, f->off, size_t) != AT(b, f->off, size_t);
    case F_INT: return AT(a, f->off, int) != AT(b, f->off, int);
    case F_STR: return str_differs(AT(a, f->off, str_t), AT(b, f->off, str_t));
    case F_STRV: return strv_differs(f, a, b);
    case F_MEM: return memcmp((const char *)a + f->off, (const char *)b + f->off, f->count_off) != 0;
    case F_FN: return f->fn(a, b);
    }
    return 1;
}

static void show_value(const field_t *f, const void *rec, sl_buf_t *out)
{
    if (f->kind == F_STR) {
        const char *s = AT(rec, f->off, str_t);
        sl_buf_append_str(out, s != NULL ? s : "off");
    } else if (f->kind == F_U32) {
        sl_buf_printf(out, "%u", AT(rec, f->off, uint32_t));
    } else if (f->kind == F_SIZE) {
        sl_buf_printf(out, "%zu", AT(rec, f->off, size_t));
    }
}

/* ---- the tables ---- */

/* The cluster: section (several hosts through Redis): each worker's link is
 * made at its start, the master's check of Redis at sluice's, so a change
 * is for a restart. Its values are not shown: the URL holds the password. */
static int cluster_differs(const void *a, const void *b)
{
    const cfg_t *x = a, *y = b;
    const state_cluster_conf_t *p = &x->cluster, *q = &y->cluster;
    if (x->has_cluster != y->has_cluster)
        return 1;
    return x->has_cluster && (str_differs(p->redis_host, q->redis_host) || p->redis_port != q->redis_port ||
                              str_differs(p->user, q->user) || str_differs(p->password, q->password) ||
                              p->db != q->db || str_differs(p->host, q->host) || str_differs(p->prefix, q->prefix) ||
                              p->timeout_ms != q->timeout_ms);
}

static int tiers_differ(const void *a, const void *b)
{
    const cfg_t *x = a, *y = b;
    if (x->ntiers != y->ntiers)
        return 1;
    for (size_t i = 0; i < x->ntiers; i++)
        if (strcmp(x->tiers[i].name, y->tiers[i].name) != 0 ||
            memcmp(&x->tiers[i].limits, &y->tiers[i].limits, sizeof(cfg_limit_conf_t)) != 0)
            return 1;
    return 0;
}
_Static_assert(sizeof(cfg_limit_conf_t) == 4 * sizeof(uint32_t), "cfg_limit_conf_t has padding");

static int strv_differ(char **x, size_t nx, char **y, size_t ny)
{
    if (nx != ny)
        return 1;
    for (size_t i = 0; i < nx; i++)
        if (strcmp(x[i], y[i]) != 0)
            return 1;
    return 0;
}

static int scope_differs(const policy_access_scope_t *x, const policy_access_scope_t *y)
{
    return strv_differ(x->networks, x->nnetworks, y->networks, y->nnetworks) ||
           strv_differ(x->allow, x->nallow, y->allow, y->nallow) || strv_differ(x->deny, x->ndeny, y->deny, y->ndeny) ||
           strv_differ(x->origins, x->norigins, y->origins, y->norigins) || x->ncontracts != y->ncontracts ||
           (x->ncontracts != 0 && memcmp(x->contracts, y->contracts, x->ncontracts * 20) != 0);
}

static int keys_differ(const void *a, const void *b)
{
    const cfg_t *x = a, *y = b;
    if (x->nkeys != y->nkeys)
        return 1;
    for (size_t i = 0; i < x->nkeys; i++)
        if (strcmp(x->keys[i].sha256, y->keys[i].sha256) != 0 || str_differs(x->keys[i].tier, y->keys[i].tier) ||
            str_differs(x->keys[i].name, y->keys[i].name) || scope_differs(&x->keys[i].scope, &y->keys[i].scope) ||
            memcmp(&x->keys[i].per_address.limits, &y->keys[i].per_address.limits, sizeof(cfg_limit_conf_t)) != 0 ||
            memcmp(&x->keys[i].credits.limits, &y->keys[i].credits.limits, sizeof(cfg_limit_conf_t)) != 0 ||
            str_differs(x->keys[i].jwt.public_key_file, y->keys[i].jwt.public_key_file) ||
            str_differs(x->keys[i].jwt.audience, y->keys[i].jwt.audience))
            return 1;
    return 0;
}

#define CFG(member) offsetof(cfg_t, member)
static const field_t settings[] = {
    {"server.listen", F_STR, CFG(server.listen), .restart = 1, .show = 1},
    {"server.workers", F_U32, CFG(server.workers), .restart = 1, .show = 1},
    {"admin.listen", F_STR, CFG(admin.listen), .restart = 1, .show = 1},
    {"server.ws_listen", F_STR, CFG(server.ws_listen), .restart = 1, .show = 1},
    {"server.ws_listen (off)", F_INT, CFG(server.ws_listen_off), .restart = 1},
    {"state.path", F_STR, CFG(state.path), .restart = 1, .show = 1},
    {"state.map_size_mb", F_U32, CFG(state.map_size_mb), .restart = 1, .show = 1},
    {"server.max_body_bytes", F_SIZE, CFG(server.max_body_bytes)},
    {"server.max_batch", F_U32, CFG(server.max_batch)},
    {"server.max_response_bytes", F_SIZE, CFG(server.max_response_bytes)},
    {"server.shutdown_grace_ms", F_U32, CFG(server.shutdown_grace_ms)},
    {"server.access_log", F_INT, CFG(server.access_log)},
    {"server.trace_header", F_INT, CFG(server.trace_all)},
    {"server.access_log_buffer_bytes", F_SIZE, CFG(server.access_log_buffer_bytes)},
    {"server.cors_origins", F_STRV, CFG(server.cors_origins), CFG(server.ncors_origins)},
    {"server.trusted_proxies", F_STRV, CFG(server.trusted_proxies), CFG(server.ntrusted_proxies)},
    {"server.read_multiplier", F_U32, CFG(server.read_multiplier)},
    {"server.max_connections_per_address", F_U32, CFG(server.max_connections_per_address)},
    {"server.first_request_timeout_ms", F_U32, CFG(server.first_request_timeout_ms)},
    {"server.ws_max_connections", F_U32, CFG(server.ws_max_connections)},
    {"server.ws_max_connections_per_identity", F_U32, CFG(server.ws_max_connections_per_identity)},
    {"server.ws_max_queued_bytes", F_SIZE, CFG(server.ws_max_queued_bytes)},
    {"server.ws_max_inflight", F_U32, CFG(server.ws_max_inflight)},
    {"server.ws_max_subscriptions_per_connection", F_U32, CFG(server.ws_max_subscriptions_per_connection)},
    {"server.ws_max_subscriptions_per_identity", F_U32, CFG(server.ws_max_subscriptions_per_identity)},
    {"server.ws_max_sources_per_identity", F_U32, CFG(server.ws_max_sources_per_identity)},
    {"server.ws_max_polled_sources_per_identity", F_U32, CFG(server.ws_max_polled_sources_per_identity)},
    {"server.ws_ping_interval_ms", F_U32, CFG(server.ws_ping_interval_ms)},
    {"server.ws_idle_timeout_ms", F_U32, CFG(server.ws_idle_timeout_ms)},
    {"server.ws_logs_retry_s", F_U32, CFG(server.ws_logs_retry_s)},
    {"server.ws_resume", F_INT, CFG(server.ws_resume)},
    {"server.ws_resume_s", F_U32, CFG(server.ws_resume_s)},
    /* new workers load the files: a certificate replaced in place is a change too */
    {"server.tls.cert_file", F_STR, CFG(server.tls.cert_file), .show = 1},
    {"server.tls.key_file", F_STR, CFG(server.tls.key_file), .show = 1},
    {"server.tls.http2", F_INT, CFG(server.tls.http2)},
    {"server.tls (certificate)", F_MEM, CFG(server.tls.fingerprint), sizeof(((cfg_t *)0)->server.tls.fingerprint),
     .show = 0},
    {"admin.token", F_STR, CFG(admin.token)},
    {"admin.max_connections", F_U32, CFG(admin.max_connections)},
    {"admin.max_streams", F_U32, CFG(admin.max_streams)},
    {"admin.heartbeat_ms", F_U32, CFG(admin.heartbeat_ms)},
    {"state.refresh_ms", F_U32, CFG(state.refresh_ms)},
    {"state.flush_ms", F_U32, CFG(state.flush_ms)},
    {"state.event_max_count", F_U32, CFG(state.event_max_count)},
    {"state.event_max_age_hours", F_U32, CFG(state.event_max_age_hours)},
    {"cache.max_entry_kb", F_U32, CFG(cache.max_entry_kb)},
    {"cache.caller_share_pct", F_U32, CFG(cache.caller_share_pct)},
    {"log.level", F_INT, CFG(log.level)},
    {"log.format", F_INT, CFG(log.json)},
    {"tiers", F_FN, .fn = tiers_differ},
    {"keys", F_FN, .fn = keys_differ},
    {"access.anonymous", F_INT, CFG(anonymous_deny)},
    {"cluster", F_FN, .fn = cluster_differs, .restart = 1},
};
#undef CFG

static int methods_differ(const void *a, const void *b)
{
    const pool_network_conf_t *x = a, *y = b;
    if (x->nmethod_overrides != y->nmethod_overrides)
        return 1;
    for (size_t i = 0; i < x->nmethod_overrides; i++) {
        const policy_method_t *m = &x->method_overrides[i], *n = &y->method_overrides[i];
        if (str_differs(m->name, n->name) || m->cls != n->cls || m->priority != n->priority ||
            m->retry_safe != n->retry_safe || m->cheap != n->cheap || m->timeout_ms != n->timeout_ms ||
            m->dispatch != n->dispatch || m->of != n->of || m->broadcast != n->broadcast)
            return 1;
    }
    return 0;
}

static int has_id(const pool_network_conf_t *net, const char *id)
{
    for (size_t i = 0; i < net->nendpoints; i++)
        if (strcmp(net->endpoints[i].id, id) == 0)
            return 1;
    return 0;
}

/* The endpoints both have, in a different order (added and removed ones say
 * so themselves). */
static int endpoint_order_differs(const void *a, const void *b)
{
    const pool_network_conf_t *x = a, *y = b;
    size_t i = 0, k = 0;
    for (;;) {
        while (i < x->nendpoints && !has_id(y, x->endpoints[i].id))
            i++;
        while (k < y->nendpoints && !has_id(x, y->endpoints[k].id))
            k++;
        if (i == x->nendpoints || k == y->nendpoints)
            return 0;
        if (strcmp(x->endpoints[i++].id, y->endpoints[k++].id) != 0)
            return 1;
    }
}

static int hedge_differs(const void *a, const void *b)
{
    const policy_hedge_conf_t *x = &((const pool_network_conf_t *)a)->hedge;
    const policy_hedge_conf_t *y = &((const pool_network_conf_t *)b)->hedge;
    return x->enabled != y->enabled || x->min_ms != y->min_ms || x->max_ms != y->max_ms ||
           x->max_ratio != y->max_ratio || x->burst != y->burst || x->window_ms != y->window_ms;
}

static int chain_id_differs(const void *a, const void *b)
{
    const pool_network_conf_t *x = a, *y = b;
    return x->has_chain_id != y->has_chain_id || (x->has_chain_id && x->chain_id != y->chain_id);
}

static int consensus_differs(const void *a, const void *b)
{
    const policy_consensus_conf_t *x = &((const pool_network_conf_t *)a)->consensus;
    const policy_consensus_conf_t *y = &((const pool_network_conf_t *)b)->consensus;
    if (x->nmethods != y->nmethods || x->quorum != y->quorum || x->of != y->of)
        return 1;
    for (size_t i = 0; i < x->nmethods; i++)
        if (str_differs(x->methods[i], y->methods[i]))
            return 1;
    return 0;
}

#define NET(member) offsetof(pool_network_conf_t, member)
static const field_t network_fields[] = {
    {"chain", F_INT, NET(chain)},
    {"timeouts", F_MEM, NET(timeouts), sizeof(pool_timeouts_t)},
    {"max_attempts", F_U32, NET(max_attempts)},
    {"resend_writes", F_INT, NET(resend_writes)},
    {"methods", F_FN, .fn = methods_differ},
    {"blocked_methods", F_STRV, NET(blocked_methods), NET(nblocked_methods)},
    {"breaker", F_MEM, NET(breaker), sizeof(policy_breaker_conf_t)},
    {"ranking", F_MEM, NET(ranking), sizeof(policy_score_conf_t)},
    {"retry", F_U32, NET(backoff_base_ms)},
    {"retry", F_U32, NET(backoff_max_ms)},
    {"pin", F_U32, NET(pin_ms)},
    {"hedge", F_FN, .fn = hedge_differs},
    {"coalesce", F_U32, NET(coalesce_max_waiters)},
    {"demote_ms", F_U32, NET(demote_ms)},
    {"archive_depth", F_U32, NET(archive_depth)},
    {"capability_ttl_ms", F_U32, NET(capability_ttl_ms)},
    {"chain_id", F_FN, .fn = chain_id_differs},
    {"genesis_hash", F_STR, NET(genesis_hash)},
    {"max_lag_blocks", F_U32, NET(max_lag_blocks)},
    {"max_lag_slots", F_U32, NET(max_lag_slots)},
    {"max_logs_split", F_U32, NET(max_logs_split)},
    {"chain_probe_ms", F_U32, NET(chain_probe_ms)},
    {"ws_stall_ms", F_U32, NET(ws_stall_ms)},
    {"max_head_lead", F_U32, NET(max_head_lead)},
    {"consensus", F_FN, .fn = consensus_differs},
    {"endpoint order", F_FN, .fn = endpoint_order_differs},
};
#undef NET

static int headers_differ(const void *a, const void *b)
{
    const pool_endpoint_conf_t *x = a, *y = b;
    if (x->nheaders != y->nheaders)
        return 1;
    for (size_t i = 0; i < x->nheaders; i++)
        if (strcmp(x->headers[i].name, y->headers[i].name) != 0 ||
            strcmp(x->headers[i].value, y->headers[i].value) != 0)
            return 1;
    return 0;
}

static int credits_differ(const void *a, const void *b)
{
    const pool_endpoint_conf_t *x = a, *y = b;
    const pool_credits_conf_t *c = &x->credits, *d = &y->credits;
    return x->has_credits != y->has_credits || memcmp(c->limit, d->limit, sizeof(c->limit)) != 0 ||
           c->month_reset_day != d->month_reset_day;
}

#define EP(member) offsetof(pool_endpoint_conf_t, member)
static const field_t endpoint_fields[] = {
    {"url", F_STR, EP(url)},
    {"ws_url", F_STR, EP(ws_url)},
    {"tls_ca_file", F_STR, EP(tls_ca_file)},
    {"headers", F_FN, .fn = headers_differ},
    {"max_inflight", F_U32, EP(max_inflight)},
    {"tier", F_INT, EP(tier)},
    {"cost_profile", F_STR, EP(cost_profile)},
    {"credits", F_FN, .fn = credits_differ},
    {"max_logs_blocks", F_U32, EP(max_logs_blocks)},
    {"methods", F_STRV, EP(methods.allow), EP(methods.nallow)},
    {"methods", F_STRV, EP(methods.deny), EP(methods.ndeny)},
    {"archive", F_MEM, EP(archive), sizeof(uint8_t)},
};
#undef EP

/* ---- the diff ---- */

static cfg_change_t *add(cfg_diff_t *d, cfg_change_op_t op, cfg_change_subject_t subject, const char *name,
                        const char *id)
{
    d->items = sl_xrealloc(d->items, (d->n + 1) * sizeof(*d->items));
    cfg_change_t *c = &d->items[d->n++];
    memset(c, 0, sizeof(*c));
    c->op = op;
    c->subject = subject;
    if (id != NULL)
        snprintf(c->name, sizeof(c->name), "%s/%s", name, id);
    else
        snprintf(c->name, sizeof(c->name), "%s", name);
    return c;
}

/* The names of the rows that differ, comma-separated (each name once). */
static void changed_fields(const field_t *rows, size_t n, const void *a, const void *b, char *out, size_t len)
{
    sl_buf_t buf = SL_BUF_INIT;
    const char *last = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!differs(&rows[i], a, b) || (last != NULL && strcmp(last, rows[i].name) == 0))
            continue;
        if (buf.len > 0)
            sl_buf_append_str(&buf, ", ");
        sl_buf_append_str(&buf, rows[i].name);
        last = rows[i].name;
    }
    snprintf(out, len, "%s", buf.base != NULL ? buf.base : "");
    sl_buf_dispose(&buf);
}

static const pool_endpoint_conf_t *find_endpoint(const pool_network_conf_t *net, const char *id)
{
    for (size_t i = 0; i < net->nendpoints; i++)
        if (strcmp(net->endpoints[i].id, id) == 0)
            return &net->endpoints[i];
    return NULL;
}

static void diff_endpoints(cfg_diff_t *d, const pool_network_conf_t *old, const pool_network_conf_t *new)
{
    for (size_t i = 0; new != NULL && i < new->nendpoints; i++) {
        const pool_endpoint_conf_t *e = &new->endpoints[i], *was = old ? find_endpoint(old, e->id) : NULL;
        char fields[128];
        if (was == NULL) {
            add(d, CFG_CHANGE_ADDED, CFG_CHANGE_ENDPOINT, new->name, e->id);
            continue;
        }
        changed_fields(endpoint_fields, sizeof(endpoint_fields) / sizeof(endpoint_fields[0]), was, e, fields,
                       sizeof(fields));
        if (fields[0] != '\0')
            snprintf(add(d, CFG_CHANGE_CHANGED, CFG_CHANGE_ENDPOINT, new->name, e->id)->fields, sizeof(fields), "%s",
                     fields);
    }
    for (size_t i = 0; old != NULL && i < old->nendpoints; i++)
        if (new == NULL || find_endpoint(new, old->endpoints[i].id) == NULL)
            add(d, CFG_CHANGE_REMOVED, CFG_CHANGE_ENDPOINT, old->name, old->endpoints[i].id);
}

static void diff_settings(cfg_diff_t *d, const cfg_t *old, const cfg_t *new)
{
    sl_buf_t restart = SL_BUF_INIT;
    for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++) {
        const field_t *f = &settings[i];
        if (!differs(f, old, new))
            continue;
        if (!f->restart) {
            add(d, CFG_CHANGE_CHANGED, CFG_CHANGE_SETTING, f->name, NULL);
            continue;
        }
        if (restart.len > 0)
            sl_buf_append_str(&restart, "; ");
        if (!f->show) { /* a secret may be in it */
            sl_buf_printf(&restart, "%s changed: needs a restart", f->name);
            continue;
        }
        sl_buf_printf(&restart, "%s (", f->name);
        show_value(f, old, &restart);
        sl_buf_append_str(&restart, " -> ");
        show_value(f, new, &restart);
        sl_buf_append_str(&restart, ") needs a restart");
    }
    snprintf(d->restart, sizeof(d->restart), "%s", restart.base != NULL ? restart.base : "");
    sl_buf_dispose(&restart);
}

void cfg_diff(const cfg_t *old, const cfg_t *new, cfg_diff_t *out)
{
    memset(out, 0, sizeof(*out));
    size_t nn = sizeof(network_fields) / sizeof(network_fields[0]);
    for (size_t i = 0; i < new->nnetworks; i++) {
        const pool_network_conf_t *net = &new->networks[i];
        const pool_network_conf_t *was = cfg_network(old, net->name, strlen(net->name));
        char fields[128];
        if (was == NULL) {
            add(out, CFG_CHANGE_ADDED, CFG_CHANGE_NETWORK, net->name, NULL);
            continue;
        }
        changed_fields(network_fields, nn, was, net, fields, sizeof(fields));
        if (fields[0] != '\0')
            snprintf(add(out, CFG_CHANGE_CHANGED, CFG_CHANGE_NETWORK, net->name, NULL)->fields, sizeof(fields), "%s",
                     fields);
    }
    for (size_t i = 0; i < old->nnetworks; i++)
        if (cfg_network(new, old->networks[i].name, strlen(old->networks[i].name)) == NULL)
            add(out, CFG_CHANGE_REMOVED, CFG_CHANGE_NETWORK, old->networks[i].name, NULL);
    for (size_t i = 0; i < new->nnetworks; i++)
        diff_endpoints(out, cfg_network(old, new->networks[i].name, strlen(new->networks[i].name)),
                       &new->networks[i]);
    for (size_t i = 0; i < old->nnetworks; i++)
        if (cfg_network(new, old->networks[i].name, strlen(old->networks[i].name)) == NULL)
            diff_endpoints(out, &old->networks[i], NULL);
    diff_settings(out, old, new);
}

void cfg_diff_dispose(cfg_diff_t *d)
{
    free(d->items);
    memset(d, 0, sizeof(*d));
}

static const char op_mark[] = {[CFG_CHANGE_ADDED] = '+', [CFG_CHANGE_REMOVED] = '-', [CFG_CHANGE_CHANGED] = '~'};
static const char *const subject_word[] = {
    [CFG_CHANGE_NETWORK] = "network",
    [CFG_CHANGE_ENDPOINT] = "endpoint",
    [CFG_CHANGE_SETTING] = "setting",
};

void cfg_diff_summary(const cfg_diff_t *d, char *out, size_t len)
{
    if (len == 0)
        return;
    if (d->n == 0) {
        snprintf(out, len, "no changes");
        return;
    }
    size_t used = 0;
    for (size_t i = 0; i < d->n; i++) {
        const cfg_change_t *c = &d->items[i];
        char one[300];
        int n = snprintf(one, sizeof(one), "%s%c%s %s%s%s%s", i ? "; " : "", op_mark[c->op], subject_word[c->subject],
                         c->name, c->fields[0] ? " (" : "", c->fields, c->fields[0] ? ")" : "");
        char more[48];
        int m = i + 1 < d->n ? snprintf(more, sizeof(more), "; ... and %zu more", d->n - i - 1) : 0;
        /* this item fits, with room left to say how many would follow it */
        if (used + (size_t)n + (size_t)m < len) {
            memcpy(out + used, one, (size_t)n);
            used += (size_t)n;
            continue;
        }
        snprintf(more, sizeof(more), "%s... and %zu more", i ? "; " : "", d->n - i);
        snprintf(out + used, len - used, "%s", more);
        return;
    }
    out[used] = '\0';
}
