/* config/cfg_net.c: the networks section: each network's chain,
 * timeouts and retry settings, and its endpoints (full form or a bare URL).
 * Fills the pool_network_conf_t that pool/ is handed. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/sl_secret.h"
#include "config/cfg_int.h"
#include "wire/url.h"

#define NFIELDS(t) (sizeof(t) / sizeof((t)[0]))

static int only_chars(const char *s, const char *set)
{
    return s[strspn(s, set)] == '\0';
}

static void set_str(char **slot, char *s)
{
    free(*slot);
    *slot = s;
}

/* ---- endpoint fields ---- */

static void ep_id(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    char *s = NULL;
    if (cfg_str(c, n, &s) != SL_OK)
        return;
    if (s[0] == '\0' || strlen(s) > 64 ||
        !only_chars(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-"))
        cfg_loader_error(c, cfg_line(n), "endpoint id must be 1-64 of [A-Za-z0-9_.-]");
    set_str(&((pool_endpoint_conf_t *)target)->id, s);
}

static void add_secret(const char *s, size_t n, void *arg)
{
    (void)arg;
    sl_secret_add_key(s, n);
}

/* The url is registered piecewise before anything can print it, and only
 * its redacted form ever appears in a message. */
static void ep_url(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    pool_endpoint_conf_t *ep = target;
    char *s = NULL;
    if (cfg_str(c, n, &s) != SL_OK)
        return;
    wire_url_each_secret(s, add_secret, NULL);
    const char *why = wire_url_parse_error(s);
    if (why != NULL)
        cfg_loader_error(c, cfg_line(n), "invalid url: %s", why);
    set_str(&ep->url, s);
    set_str(&ep->url_redacted, wire_url_redact(s));
}

/* ws_url: the endpoint's WebSocket, a source of heads (pool/pool_wshead.c);
 * registered and redacted as url is. */
static void ep_ws_url(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    pool_endpoint_conf_t *ep = target;
    char *s = NULL;
    if (cfg_str(c, n, &s) != SL_OK)
        return;
    char *http = wire_url_ws_as_http(s);
    if (http != NULL) {
        wire_url_each_secret(http, add_secret, NULL);
        const char *why = wire_url_parse_error(http);
        if (why != NULL)
            cfg_loader_error(c, cfg_line(n), "invalid ws_url: %s", why);
        free(http);
    } else {
        cfg_loader_error(c, cfg_line(n), "invalid ws_url: scheme must be ws or wss");
    }
    set_str(&ep->ws_url, s);
    set_str(&ep->ws_url_redacted, wire_url_redact_ws(s));
}

static void ep_tls_ca_file(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    char *s = NULL;
    if (cfg_str(c, n, &s) != SL_OK)
        return;
    if (access(s, R_OK) != 0)
        cfg_loader_error(c, cfg_line(n), "cannot read tls_ca_file '%s': %s", s, strerror(errno));
    set_str(&((pool_endpoint_conf_t *)target)->tls_ca_file, s);
}

/* sluice frames the upstream request itself (User-Agent, Accept and
 * Authorization may be configured: they replace sluice's own). */
static const char *const reserved_headers[] = {"content-length", "transfer-encoding", "connection", "host",
                                               "content-type"};

static const char *header_name_check(const char *name)
{
    if (name[0] == '\0' ||
        !only_chars(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-.^_`|~"))
        return "header name must be an HTTP token (letters, digits, '-', ...)";
    for (size_t i = 0; i < NFIELDS(reserved_headers); i++)
        if (strcasecmp(name, reserved_headers[i]) == 0)
            return "header is set by sluice and cannot be configured";
    return NULL;
}

static void ep_header(cfg_loader_t *c, pool_endpoint_conf_t *ep, const yaml_node_pair_t *pair)
{
    const char *name = cfg_key(c, pair);
    char *value = NULL;
    int line = cfg_line(cfg_node(c, pair->key));
    const char *why = header_name_check(name);
    if (why != NULL)
        cfg_loader_error(c, line, "%s", why);
    for (size_t j = 0; j < ep->nheaders && why == NULL; j++)
        if (strcasecmp(ep->headers[j].name, name) == 0)
            cfg_loader_error(c, line, "header '%s' is given twice (names are case-insensitive)", name);
    if (cfg_str(c, cfg_node(c, pair->value), &value) != SL_OK)
        return;
    sl_secret_add_words(value);   /* header values are where API keys go */
    if (strpbrk(value, "\r\n") != NULL)
        cfg_loader_error(c, cfg_line(cfg_node(c, pair->value)), "header value must not contain a line break");
    pool_header_t *h = &ep->headers[ep->nheaders++];
    h->name = sl_xstrdup(name);
    h->value = value;
}

static void ep_headers(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    pool_endpoint_conf_t *ep = target;
    yaml_node_pair_t *pairs;
    size_t np = cfg_pairs(c, n, &pairs);
    ep->headers = sl_xcalloc(np + 1, sizeof(*ep->headers));
    for (size_t i = 0; i < np; i++) {
        if (cfg_key(c, &pairs[i]) == NULL)
            continue;
        size_t mark = cfg_push(c, cfg_key(c, &pairs[i]));
        ep_header(c, ep, &pairs[i]);
        cfg_pop(c, mark);
    }
}

static const char *const tier_names[] = {
    [POOL_TIER_PRIMARY] = "primary",
    [POOL_TIER_FALLBACK] = "fallback",
};

static void ep_tier(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    int t = 0;
    if (cfg_enum(c, n, tier_names, NFIELDS(tier_names), &t) == SL_OK)
        ((pool_endpoint_conf_t *)target)->tier = (pool_tier_t)t;
}

/* The built-in cost profiles (per-method credit prices live with the
 * accounting code); "flat" charges one credit per call. */
static const char *const cost_profiles[] = {"alchemy", "infura", "quicknode", "helius", "flat"};

static void ep_cost_profile(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    int p = 0;
    if (cfg_enum(c, n, cost_profiles, NFIELDS(cost_profiles), &p) == SL_OK)
        set_str(&((pool_endpoint_conf_t *)target)->cost_profile, sl_xstrdup(cost_profiles[p]));
}

static const cfg_field_t credit_fields[] = {
    {"per_second", CFG_U64, offsetof(pool_credits_conf_t, limit[POLICY_CREDIT_SECOND]), 0, UINT64_MAX},
    {"per_minute", CFG_U64, offsetof(pool_credits_conf_t, limit[POLICY_CREDIT_MINUTE]), 0, UINT64_MAX},
    {"per_day", CFG_U64, offsetof(pool_credits_conf_t, limit[POLICY_CREDIT_DAY]), 0, UINT64_MAX},
    {"per_month", CFG_U64, offsetof(pool_credits_conf_t, limit[POLICY_CREDIT_MONTH]), 0, UINT64_MAX},
    {"month_reset_day", CFG_U32, offsetof(pool_credits_conf_t, month_reset_day), 1, 28},
};

static void ep_credits(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    pool_endpoint_conf_t *ep = target;
    ep->has_credits = !cfg_is_null(n);
    cfg_map_decode(c, n, credit_fields, NFIELDS(credit_fields), &ep->credits);
}

static const cfg_field_t endpoint_fields[] = {
    {"id", CFG_FN, .fn = ep_id},
    {"url", CFG_FN, .fn = ep_url, .required = 1},
    {"ws_url", CFG_FN, .fn = ep_ws_url},
    {"tls_ca_file", CFG_FN, .fn = ep_tls_ca_file},
    {"headers", CFG_FN, .fn = ep_headers},
    {"max_inflight", CFG_U32, offsetof(pool_endpoint_conf_t, max_inflight), 1, 100000},
    {"tier", CFG_FN, .fn = ep_tier},
    {"cost_profile", CFG_FN, .fn = ep_cost_profile},
    {"credits", CFG_FN, .fn = ep_credits},
    {"max_logs_blocks", CFG_U32, offsetof(pool_endpoint_conf_t, max_logs_blocks), 0, 100000000},
    {"methods", CFG_FN, .fn = cfg_ep_methods},
    {"archive", CFG_FN, .fn = cfg_ep_archive},
};

/* ---- endpoints ---- */

static void endpoint_decode(cfg_loader_t *c, yaml_node_t *n, pool_endpoint_conf_t *ep, size_t index)
{
    ep->max_inflight = POOL_DEFAULT_MAX_INFLIGHT;
    ep->tier = POOL_TIER_PRIMARY;
    ep->cost_profile = sl_xstrdup("flat");
    ep->credits.month_reset_day = POOL_DEFAULT_MONTH_RESET_DAY;
    ep->yaml_line = cfg_line(n);
    cfg_ep_chain_defaults(ep);
    if (n != NULL && n->type == YAML_SCALAR_NODE && !cfg_is_null(n))
        ep_url(c, n, ep);   /* the shorthand: "- https://..." */
    else
        cfg_map_decode(c, n, endpoint_fields, NFIELDS(endpoint_fields), ep);
    if (ep->id == NULL) {
        sl_buf_t b = SL_BUF_INIT;
        sl_buf_printf(&b, "e%zu", index);
        ep->id = sl_buf_steal(&b, NULL);
    }
}

static void net_endpoints(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    pool_network_conf_t *net = target;
    yaml_node_item_t *items;
    size_t ni = cfg_items(c, n, &items);
    if (ni == 0 && (cfg_is_null(n) || n->type == YAML_SEQUENCE_NODE))
        cfg_loader_error(c, cfg_line(n), "a network needs at least one endpoint");
    if (ni > POOL_MAX_ENDPOINTS) {
        cfg_loader_error(c, cfg_line(n), "at most %d endpoints per network (got %zu)", POOL_MAX_ENDPOINTS, ni);
        ni = POOL_MAX_ENDPOINTS;
    }
    net->endpoints = sl_xcalloc(ni + 1, sizeof(*net->endpoints));
    for (size_t i = 0; i < ni; i++) {
        yaml_node_t *item = cfg_node(c, items[i]);
        pool_endpoint_conf_t *ep = &net->endpoints[net->nendpoints++];
        size_t mark = cfg_push_index(c, i);
        endpoint_decode(c, item, ep, i);
        for (size_t j = 0; j < i; j++) {
            if (strcmp(net->endpoints[j].id, ep->id) != 0)
                continue;
            yaml_node_t *id = cfg_get(c, item, "id");
            cfg_push(c, "id");
            cfg_loader_error(c, id != NULL ? cfg_line(id) : ep->yaml_line,
                         "duplicate endpoint id '%s' (first at line %d)", ep->id, net->endpoints[j].yaml_line);
            break;
        }
        cfg_pop(c, mark);
    }
}

/* ---- network fields ---- */

static void net_chain(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    const char *names[POLICY_CHAIN_COUNT];
    int chain = 0;
    for (int i = 0; i < POLICY_CHAIN_COUNT; i++)
        names[i] = policy_chain_name((policy_chain_t)i);
    if (cfg_enum(c, n, names, POLICY_CHAIN_COUNT, &chain) == SL_OK)
        ((pool_network_conf_t *)target)->chain = (policy_chain_t)chain;
}

static const cfg_field_t timeout_fields[] = {
    {"connect_ms", CFG_U32, offsetof(pool_timeouts_t, connect_ms), 1, 600000},
    {"first_byte_ms", CFG_U32, offsetof(pool_timeouts_t, first_byte_ms), 1, 600000},
    {"attempt_ms", CFG_U32, offsetof(pool_timeouts_t, attempt_ms), 1, 600000},
    {"request_ms", CFG_U32, offsetof(pool_timeouts_t, request_ms), 1, 600000},
};
enum { T_FIRST_BYTE = 1u << 1, T_ATTEMPT = 1u << 2, T_REQUEST = 1u << 3 };

static uint32_t min_u32(uint32_t a, uint32_t b) { return a < b ? a : b; }
static uint32_t max_u32(uint32_t a, uint32_t b) { return a > b ? a : b; }

/* Values left out follow the ones given (attempt_ms: 3000 alone lowers
 * first_byte_ms to 3000), so only an explicit contradiction is an error. */
static void net_timeouts(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    pool_timeouts_t *t = &((pool_network_conf_t *)target)->timeouts;
    uint64_t seen = cfg_map_decode(c, n, timeout_fields, NFIELDS(timeout_fields), t);
    if (!(seen & T_ATTEMPT))
        t->attempt_ms = min_u32(POOL_DEFAULT_ATTEMPT_MS, t->request_ms);
    if (!(seen & T_FIRST_BYTE))
        t->first_byte_ms = min_u32(POOL_DEFAULT_FIRST_BYTE_MS, t->attempt_ms);
    if (!(seen & T_REQUEST))
        t->request_ms = max_u32(POOL_DEFAULT_REQUEST_MS, t->attempt_ms);
    if (t->first_byte_ms > t->attempt_ms || t->attempt_ms > t->request_ms)
        cfg_loader_error(c, cfg_line(n),
                     "timeouts must satisfy first_byte_ms <= attempt_ms <= request_ms (got %u, %u, %u)",
                     t->first_byte_ms, t->attempt_ms, t->request_ms);
}

static const char *method_check(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || !only_chars(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-*") ||
        (strchr(s, '*') != NULL && strchr(s, '*') != s + n - 1))
        return "a blocked method is a method name, or a prefix ending in '*' (e.g. debug_*)";
    return NULL;
}

static void net_blocked(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    pool_network_conf_t *net = target;
    char **v = NULL;
    size_t nv = 0;
    if (cfg_str_list(c, n, method_check, &v, &nv) != SL_OK)
        return;
    cfg_strv_free(net->blocked_methods, net->nblocked_methods);
    net->blocked_methods = v;
    net->nblocked_methods = nv;
}

/* methods: { name: { class: write, priority: high, retry_safe: false, timeout_ms: 3000, dispatch: first } } */
static void method_override(cfg_loader_t *c, yaml_node_t *n, policy_method_t *row, int unknown)
{
    yaml_node_pair_t *pairs;
    size_t np = cfg_pairs(c, n, &pairs);
    int safe_given = 0, class_given = 0;
    for (size_t i = 0; i < np; i++) {
        const char *key = cfg_key(c, &pairs[i]);
        yaml_node_t *v = cfg_node(c, pairs[i].value);
        char *s = NULL;
        int b = 0, x;
        if (key == NULL)
            continue;
        size_t mark = cfg_push(c, key);
        if (strcmp(key, "retry_safe") == 0) {
            safe_given = 1;
            if (cfg_bool(c, v, &b) == SL_OK)
                row->retry_safe = (uint8_t)b;
        } else if (strcmp(key, "class") == 0 || strcmp(key, "priority") == 0) {
            int cls = strcmp(key, "class") == 0;
            if (cfg_str(c, v, &s) == SL_OK) {
                x = cls ? policy_method_class_parse(s) : policy_priority_parse(s);
                if (x < 0) {
                    cfg_loader_error(c, cfg_line(v), cls ? "class must be read, write, confirm, simulate, subscribe or blocked"
                                                        : "priority must be low, normal, high or critical");
                } else if (cls) {
                    row->cls = (policy_method_class_t)x;
                    class_given = 1;
                } else {
                    row->priority = (policy_priority_t)x;
                }
            }
            free(s);
        } else if (strcmp(key, "timeout_ms") == 0) {
            uint64_t ms;
            if (cfg_uint(c, v, 1, 600000, &ms) == SL_OK)
                row->timeout_ms = (uint32_t)ms;
        } else if (strcmp(key, "dispatch") == 0) {
            if (cfg_str(c, v, &s) == SL_OK) {
                x = policy_dispatch_parse(s);
                if (x < 0)
                    cfg_loader_error(c, cfg_line(v), "dispatch must be first, not_null or max");
                else
                    row->dispatch = (uint8_t)x;
            }
            free(s);
        } else if (strcmp(key, "of") == 0) {
            uint64_t of;
            if (cfg_uint(c, v, 2, 16, &of) == SL_OK)
                row->of = (uint8_t)of;
        } else if (strcmp(key, "broadcast") == 0) {
            uint64_t nb;
            if (cfg_uint(c, v, 1, 16, &nb) == SL_OK)
                row->broadcast = (uint8_t)(nb >= 2 ? nb : 0); /* 1: one endpoint, as without it */
        } else {
            cfg_loader_error(c, cfg_line(cfg_node(c, pairs[i].key)),
                             "unknown key '%s' (class, priority, retry_safe, timeout_ms, dispatch, of, broadcast)", key);
        }
        cfg_pop(c, mark);
    }
    if ((row->dispatch == POLICY_DISPATCH_MAX) != (row->of >= 2))
        cfg_loader_error(c, cfg_line(n), row->of >= 2 ? "of: is for dispatch: max" : "dispatch: max needs of: 2 or more");
    if (row->broadcast != 0 && row->cls != POLICY_CLASS_WRITE)
        cfg_loader_error(c, cfg_line(n), "broadcast: is for writes (class write)");
    /* a broadcast is never retry-safe unless the operator says so */
    if (!safe_given && row->cls == POLICY_CLASS_WRITE)
        row->retry_safe = 0;
    /* a name no table knows started from a guess by its name (a write if it
     * sounds like one): the class the operator gives replaces the guess whole */
    else if (!safe_given && unknown && class_given)
        row->retry_safe = row->cls == POLICY_CLASS_READ || row->cls == POLICY_CLASS_CONFIRM ||
                          row->cls == POLICY_CLASS_SIMULATE;
}

static void net_methods(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    (void)target;
    c->methods = n; /* rows start from the chain's table: decode after `chain:` */
}

static void net_methods_decode(cfg_loader_t *c, yaml_node_t *n, pool_network_conf_t *net)
{
    yaml_node_pair_t *pairs;
    size_t np = cfg_pairs(c, n, &pairs);
    net->method_overrides = sl_xcalloc(np ? np : 1, sizeof(*net->method_overrides));
    for (size_t i = 0; i < np; i++) {
        const char *name = cfg_key(c, &pairs[i]);
        if (name == NULL)
            continue;
        size_t mark = cfg_push(c, name);
        if (method_check(name) != NULL || strchr(name, '*') != NULL)
            cfg_loader_error(c, cfg_line(cfg_node(c, pairs[i].key)), "a method name is letters, digits, _ . -");
        /* start from what the chain's table says, then apply the override */
        policy_method_t *row = &net->method_overrides[net->nmethod_overrides++];
        *row = *policy_method_lookup(net->chain, name, strlen(name));
        int unknown = row->name[0] == '\0';
        row->name = sl_xstrdup(name);
        row->solo = 0; /* named by the operator: no longer a method nobody knows, so it may be coalesced */
        method_override(c, cfg_node(c, pairs[i].value), row, unknown);
        cfg_pop(c, mark);
    }
}

static const cfg_field_t breaker_fields[] = {
    {"window_ms", CFG_U32, offsetof(policy_breaker_conf_t, window_ms), 100, 3600000},
    {"min_calls", CFG_U32, offsetof(policy_breaker_conf_t, min_calls), 1, 100000},
    {"failure_count", CFG_U32, offsetof(policy_breaker_conf_t, failure_count), 1, 100000},
    {"failure_ratio_pct", CFG_U32, offsetof(policy_breaker_conf_t, failure_ratio_pct), 1, 100},
    {"consecutive", CFG_U32, offsetof(policy_breaker_conf_t, consecutive), 0, 100000},
    {"cooldown_ms", CFG_U32, offsetof(policy_breaker_conf_t, cooldown_ms), 10, 86400000},
    {"max_cooldown_ms", CFG_U32, offsetof(policy_breaker_conf_t, max_cooldown_ms), 10, 86400000},
    {"probe_timeout_ms", CFG_U32, offsetof(policy_breaker_conf_t, probe_timeout_ms), 100, 600000},
};

static void net_breaker(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    policy_breaker_conf_t *b = &((pool_network_conf_t *)target)->breaker;
    uint64_t seen = cfg_map_decode(c, n, breaker_fields, NFIELDS(breaker_fields), b);
    if (!(seen & (1u << 6)) && b->max_cooldown_ms < b->cooldown_ms) /* max_cooldown_ms left out */
        b->max_cooldown_ms = b->cooldown_ms;
    if (b->max_cooldown_ms < b->cooldown_ms)
        cfg_loader_error(c, cfg_line(n), "breaker.max_cooldown_ms (%u) must be at least cooldown_ms (%u)",
                     b->max_cooldown_ms, b->cooldown_ms);
}

static const cfg_field_t ranking_fields[] = {
    {"w_error", CFG_DOUBLE, offsetof(policy_score_conf_t, w_error)},
    {"w_rate_limit", CFG_DOUBLE, offsetof(policy_score_conf_t, w_rate_limit)},
    {"w_lag", CFG_DOUBLE, offsetof(policy_score_conf_t, w_lag)},
    {"w_disagree", CFG_DOUBLE, offsetof(policy_score_conf_t, w_disagree)},
    {"max_lag", CFG_U32, offsetof(policy_score_conf_t, max_lag), 0, 1000000},
    {"max_error_pct", CFG_U32, offsetof(policy_score_conf_t, max_error_pct), 1, 100},
    {"min_calls", CFG_U32, offsetof(policy_score_conf_t, min_calls), 1, 100000},
    {"hysteresis_pct", CFG_U32, offsetof(policy_score_conf_t, hysteresis_pct), 0, 99},
    {"switch_after_ms", CFG_U32, offsetof(policy_score_conf_t, switch_after_ms), 0, 3600000},
    {"probe_interval_ms", CFG_U32, offsetof(policy_score_conf_t, probe_interval_ms), 0, 3600000},
};

static void net_ranking(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    cfg_map_decode(c, n, ranking_fields, NFIELDS(ranking_fields), &((pool_network_conf_t *)target)->ranking);
}

static const cfg_field_t retry_fields[] = {
    {"backoff_base_ms", CFG_U32, offsetof(pool_network_conf_t, backoff_base_ms), 1, 60000},
    {"backoff_max_ms", CFG_U32, offsetof(pool_network_conf_t, backoff_max_ms), 1, 600000},
};

static void net_retry(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    pool_network_conf_t *net = target;
    cfg_map_decode(c, n, retry_fields, NFIELDS(retry_fields), net);
    if (net->backoff_max_ms < net->backoff_base_ms)
        cfg_loader_error(c, cfg_line(n), "retry.backoff_max_ms (%u) must be at least backoff_base_ms (%u)",
                     net->backoff_max_ms, net->backoff_base_ms);
}

static const cfg_field_t pin_fields[] = {
    {"window_ms", CFG_U32, offsetof(pool_network_conf_t, pin_ms), 0, 3600000},
};

static void net_pin(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    cfg_map_decode(c, n, pin_fields, NFIELDS(pin_fields), target);
}

static const cfg_field_t network_fields[] = {
    {"chain", CFG_FN, .fn = net_chain},
    {"timeouts", CFG_FN, .fn = net_timeouts},
    {"max_attempts", CFG_U32, offsetof(pool_network_conf_t, max_attempts), 0, 16},
    {"demote_ms", CFG_U32, offsetof(pool_network_conf_t, demote_ms), 0, 3600000},
    {"archive_depth", CFG_U32, offsetof(pool_network_conf_t, archive_depth), 1, 100000000},
    {"capability_ttl_ms", CFG_U32, offsetof(pool_network_conf_t, capability_ttl_ms), 0, 86400000},
    {"resend_writes", CFG_BOOL, offsetof(pool_network_conf_t, resend_writes)},
    {"blocked_methods", CFG_FN, .fn = net_blocked},
    {"methods", CFG_FN, .fn = net_methods},
    {"breaker", CFG_FN, .fn = net_breaker},
    {"ranking", CFG_FN, .fn = net_ranking},
    {"retry", CFG_FN, .fn = net_retry},
    {"pin", CFG_FN, .fn = net_pin},
    {"pressure", CFG_FN, .fn = cfg_net_pressure},
    {"hedge", CFG_FN, .fn = cfg_net_hedge},
    {"coalesce", CFG_FN, .fn = cfg_net_coalesce},
    {"chain_id", CFG_FN, .fn = cfg_net_chain_id},
    {"genesis_hash", CFG_FN, .fn = cfg_net_genesis_hash},
    {"max_lag_blocks", CFG_U32, offsetof(pool_network_conf_t, max_lag_blocks), 0, 1000000},
    {"max_lag_slots", CFG_U32, offsetof(pool_network_conf_t, max_lag_slots), 0, 1000000},
    {"max_logs_split", CFG_U32, offsetof(pool_network_conf_t, max_logs_split), 1, 1000},
    {"chain_probe_ms", CFG_U32, offsetof(pool_network_conf_t, chain_probe_ms), 0, 3600000},
    {"ws_stall_ms", CFG_U32, offsetof(pool_network_conf_t, ws_stall_ms), 100, 3600000},
    {"max_head_lead", CFG_U32, offsetof(pool_network_conf_t, max_head_lead), 0, 1000000000},
    {"consensus", CFG_FN, .fn = cfg_net_consensus},
    {"endpoints", CFG_FN, .fn = net_endpoints, .required = 1},
};

/* Network names are URL path segments next to the gateway's own routes. */
static const char *const reserved_names[] = {"admin", "metrics", "healthz", "readyz"};

static void check_network_name(cfg_loader_t *c, const char *name, int line)
{
    if (name[0] == '\0' || strlen(name) > 32 || !only_chars(name, "abcdefghijklmnopqrstuvwxyz0123456789_-") ||
        name[0] == '_' || name[0] == '-') {
        cfg_loader_error(c, line, "network name '%s' must match [a-z0-9][a-z0-9_-]{0,31} (it is the URL path)", name);
        return;
    }
    for (size_t i = 0; i < NFIELDS(reserved_names); i++)
        if (strcmp(name, reserved_names[i]) == 0)
            cfg_loader_error(c, line, "network name '%s' is reserved for sluice's own routes", name);
}

void cfg_networks(cfg_loader_t *c, yaml_node_t *n, void *target)
{
    cfg_t *cfg = target;
    yaml_node_pair_t *pairs;
    size_t np = cfg_pairs(c, n, &pairs);
    if (np == 0 && (cfg_is_null(n) || n->type == YAML_MAPPING_NODE))
        cfg_loader_error(c, cfg_line(n), "at least one network is required");
    cfg->networks = sl_xcalloc(np + 1, sizeof(*cfg->networks));
    for (size_t i = 0; i < np; i++) {
        const char *name = cfg_key(c, &pairs[i]);
        if (name == NULL)
            continue;
        pool_network_conf_t *net = &cfg->networks[cfg->nnetworks++];
        size_t mark = cfg_push(c, name);
        net->yaml_line = cfg_line(cfg_node(c, pairs[i].key));
        check_network_name(c, name, net->yaml_line);
        net->name = sl_xstrdup(name);
        net->chain = POLICY_CHAIN_ETHEREUM;
        net->timeouts = (pool_timeouts_t){POOL_DEFAULT_CONNECT_MS, POOL_DEFAULT_FIRST_BYTE_MS,
                                          POOL_DEFAULT_ATTEMPT_MS, POOL_DEFAULT_REQUEST_MS};
        net->breaker = POLICY_BREAKER_DEFAULTS;
        net->ranking = POLICY_SCORE_DEFAULTS;
        net->backoff_base_ms = POOL_DEFAULT_BACKOFF_BASE_MS;
        net->backoff_max_ms = POOL_DEFAULT_BACKOFF_MAX_MS;
        net->pin_ms = POOL_DEFAULT_PIN_MS;
        net->pressure = POLICY_PRESSURE_DEFAULTS;
        net->hedge = POLICY_HEDGE_DEFAULTS;
        net->demote_ms = POOL_DEFAULT_DEMOTE_MS;
        net->archive_depth = POOL_DEFAULT_ARCHIVE_DEPTH;
        net->capability_ttl_ms = POOL_DEFAULT_CAPABILITY_TTL_MS;
        net->coalesce_max_waiters = POOL_DEFAULT_COALESCE_MAX_WAITERS;
        cfg_net_chain_defaults(net);
        c->methods = NULL;
        yaml_node_t *body = cfg_node(c, pairs[i].value);
        cfg_map_decode(c, body, network_fields, NFIELDS(network_fields), net);
        if (c->methods != NULL) {
            size_t mm = cfg_push(c, "methods");
            net_methods_decode(c, c->methods, net);
            cfg_pop(c, mm);
        }
        cfg_net_chain_check(c, body, net);
        /* Solana makes a slot every ~400 ms: the default lag allowance is in slots */
        if (net->chain == POLICY_CHAIN_SOLANA && net->ranking.max_lag == POLICY_SCORE_DEFAULTS.max_lag)
            net->ranking.max_lag = POOL_DEFAULT_SOLANA_MAX_LAG;
        cfg_pop(c, mark);
    }
}

void cfg_network_dispose(pool_network_conf_t *net)
{
    for (size_t i = 0; i < net->nendpoints; i++) {
        pool_endpoint_conf_t *ep = &net->endpoints[i];
        free(ep->id);
        free(ep->url);
        free(ep->url_redacted);
        free(ep->ws_url);
        free(ep->ws_url_redacted);
        free(ep->tls_ca_file);
        for (size_t h = 0; h < ep->nheaders; h++) {
            free(ep->headers[h].name);
            free(ep->headers[h].value);
        }
        free(ep->headers);
        free(ep->cost_profile);
        cfg_ep_route_dispose(ep);
    }
    free(net->endpoints);
    for (size_t i = 0; i < net->nmethod_overrides; i++)
        free((char *)net->method_overrides[i].name);
    free(net->method_overrides);
    cfg_strv_free(net->blocked_methods, net->nblocked_methods);
    cfg_net_chain_dispose(net);
    free(net->name);
}
