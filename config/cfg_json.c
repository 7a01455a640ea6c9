/* config/cfg_json.c: the effective configuration as one JSON object (GET
 * /admin/config), every section with the values sluice runs after defaults.
 *
 * Keys are the YAML's. No secret is written: URLs are the redacted ones,
 * header values, the admin token, the Redis password and the client keys'
 * hashes are left out (a token or password is shown as "set": true), and the
 * finished text passes through sl_secret_scrub so a value that is also a
 * registered secret (a path or a name that happens to hold one) is "***".
 *
 * The writer appends "key":value, after each value and trims the last comma
 * when an object or array closes: one append per key, no nesting state. */
#include <string.h>

#include "base/sl_log.h"
#include "base/sl_secret.h"
#include "config/cfg.h"
#include "policy/blockref.h"

static void key(sl_buf_t *b, const char *k)
{
    if (k != NULL) {
        sl_buf_append_json_str(b, k, strlen(k));
        sl_buf_append_char(b, ':');
    }
}

static void open_(sl_buf_t *b, const char *k, char c)
{
    key(b, k);
    sl_buf_append_char(b, c);
}

static void close_(sl_buf_t *b, char c)
{
    if (b->len > 0 && b->base[b->len - 1] == ',')
        b->len--;
    sl_buf_append_char(b, c);
    sl_buf_append_char(b, ',');
}

static void str(sl_buf_t *b, const char *k, const char *v)
{
    key(b, k);
    if (v == NULL)
        sl_buf_append_str(b, "null");
    else
        sl_buf_append_json_str(b, v, strlen(v));
    sl_buf_append_char(b, ',');
}

static void u64(sl_buf_t *b, const char *k, uint64_t v)
{
    key(b, k);
    sl_buf_append_u64(b, v);
    sl_buf_append_char(b, ',');
}

static void dbl(sl_buf_t *b, const char *k, double v)
{
    key(b, k);
    sl_buf_printf(b, "%.6g,", v);
}

static void boolean(sl_buf_t *b, const char *k, int v)
{
    key(b, k);
    sl_buf_append_str(b, v ? "true," : "false,");
}

static void strs(sl_buf_t *b, const char *k, char *const *v, size_t n)
{
    open_(b, k, '[');
    for (size_t i = 0; i < n; i++)
        str(b, NULL, v[i]);
    close_(b, ']');
}

static void server_json(sl_buf_t *b, const cfg_server_conf_t *s)
{
    static const char *const resume[] = {"off", "keyed", "all"};
    open_(b, "server", '{');
    str(b, "listen", s->listen);
    u64(b, "workers", s->workers);
    u64(b, "max_body_bytes", s->max_body_bytes);
    u64(b, "max_batch", s->max_batch);
    u64(b, "max_response_bytes", s->max_response_bytes);
    u64(b, "shutdown_grace_ms", s->shutdown_grace_ms);
    boolean(b, "access_log", s->access_log);
    u64(b, "access_log_buffer_bytes", s->access_log_buffer_bytes);
    strs(b, "cors_origins", s->cors_origins, s->ncors_origins);
    strs(b, "trusted_proxies", s->trusted_proxies, s->ntrusted_proxies);
    u64(b, "read_multiplier", s->read_multiplier);
    u64(b, "max_connections", s->max_connections);
    u64(b, "idle_timeout_ms", s->idle_timeout_ms);
    u64(b, "write_timeout_ms", s->write_timeout_ms);
    u64(b, "max_buffered_bytes", s->max_buffered_bytes);
    dbl(b, "max_buffered_share", s->max_buffered_share);
    u64(b, "stalled_reset_ms", s->stalled_reset_ms);
    u64(b, "max_header_line_bytes", s->max_header_line_bytes);
    u64(b, "max_header_bytes", s->max_header_bytes);
    u64(b, "ipv6_prefix", s->ipv6_prefix);
    u64(b, "max_connections_per_address", s->max_connections_per_address);
    u64(b, "first_request_timeout_ms", s->first_request_timeout_ms);
    str(b, "ws_listen", s->ws_listen_off ? "off" : s->ws_listen);
    u64(b, "ws_max_connections", s->ws_max_connections);
    u64(b, "ws_max_connections_per_identity", s->ws_max_connections_per_identity);
    u64(b, "ws_max_queued_bytes", s->ws_max_queued_bytes);
    u64(b, "ws_max_inflight", s->ws_max_inflight);
    u64(b, "ws_max_subscriptions_per_connection", s->ws_max_subscriptions_per_connection);
    u64(b, "ws_max_subscriptions_per_identity", s->ws_max_subscriptions_per_identity);
    u64(b, "ws_max_sources_per_identity", s->ws_max_sources_per_identity);
    u64(b, "ws_max_polled_sources_per_identity", s->ws_max_polled_sources_per_identity);
    u64(b, "ws_ping_interval_ms", s->ws_ping_interval_ms);
    u64(b, "ws_idle_timeout_ms", s->ws_idle_timeout_ms);
    u64(b, "ws_logs_retry_s", s->ws_logs_retry_s);
    str(b, "ws_resume", s->ws_resume >= 0 && s->ws_resume <= CFG_WS_RESUME_ALL ? resume[s->ws_resume] : "?");
    u64(b, "ws_resume_s", s->ws_resume_s);
    str(b, "trace_header", s->trace_all ? "all" : "request");
    open_(b, "tls", '{');
    str(b, "cert_file", s->tls.cert_file);
    str(b, "key_file", s->tls.key_file);
    boolean(b, "http2", s->tls.http2);
    close_(b, '}');
    close_(b, '}');
}

static void sections_json(sl_buf_t *b, const cfg_t *c)
{
    static const char *const levels[] = {"error", "warn", "info", "debug"};
    open_(b, "admin", '{');
    str(b, "listen", c->admin.listen != NULL ? c->admin.listen : "off");
    boolean(b, "token", c->admin.token != NULL); /* set or not: never its value */
    u64(b, "max_connections", c->admin.max_connections);
    u64(b, "max_streams", c->admin.max_streams);
    u64(b, "heartbeat_ms", c->admin.heartbeat_ms);
    close_(b, '}');
    open_(b, "state", '{');
    str(b, "path", c->state.path);
    u64(b, "map_size_mb", c->state.map_size_mb);
    u64(b, "refresh_ms", c->state.refresh_ms);
    u64(b, "flush_ms", c->state.flush_ms);
    u64(b, "event_max_count", c->state.event_max_count);
    u64(b, "event_max_age_hours", c->state.event_max_age_hours);
    u64(b, "max_limit_cells", c->state.max_limit_cells);
    close_(b, '}');
    open_(b, "cache", '{');
    boolean(b, "enabled", c->cache.enabled);
    str(b, "path", c->cache.path);
    u64(b, "max_mb", c->cache.max_mb);
    str(b, "unfinalized", c->cache.unfinalized ? "head" : "off");
    boolean(b, "redis", c->cache.redis);
    u64(b, "redis_ttl_s", c->cache.redis_ttl_s);
    u64(b, "redis_wait_ms", c->cache.redis_wait_ms);
    u64(b, "max_entry_kb", c->cache.max_entry_kb);
    u64(b, "caller_share_pct", c->cache.caller_share_pct);
    close_(b, '}');
    open_(b, "log", '{');
    str(b, "level", c->log.level >= SL_LOG_ERROR && c->log.level <= SL_LOG_DEBUG ? levels[c->log.level] : "?");
    str(b, "format", c->log.json ? "json" : "text");
    close_(b, '}');
    open_(b, "cluster", '{');
    boolean(b, "enabled", c->has_cluster);
    if (c->has_cluster) {
        str(b, "redis", c->cluster.url_shown); /* the password as *** */
        str(b, "host", c->cluster.host);
        str(b, "prefix", c->cluster.prefix);
        u64(b, "timeout_ms", c->cluster.timeout_ms);
    }
    close_(b, '}');
    open_(b, "access", '{');
    str(b, "anonymous", c->anonymous_deny ? "deny" : "allow");
    close_(b, '}');
}

static void limits_json(sl_buf_t *b, const char *k, const cfg_limit_conf_t *l)
{
    open_(b, k, '{');
    u64(b, "per_second", l->per_second);
    u64(b, "per_minute", l->per_minute);
    u64(b, "per_day", l->per_day);
    if (l->per_month > 0)
        u64(b, "per_month", l->per_month);
    close_(b, '}');
}

/* Keys by name: their hashes are left out (a hash is as good as a name to
 * an operator, and tells an attacker which key to guess). */
static void keys_json(sl_buf_t *b, const cfg_t *c)
{
    open_(b, "tiers", '{');
    for (size_t i = 0; i < c->ntiers; i++)
        limits_json(b, c->tiers[i].name, &c->tiers[i].limits);
    close_(b, '}');
    open_(b, "keys", '[');
    for (size_t i = 0; i < c->nkeys; i++) {
        const cfg_key_conf_t *k = &c->keys[i];
        open_(b, NULL, '{');
        str(b, "name", k->name);
        str(b, "tier", k->tier);
        strs(b, "networks", k->scope.networks, k->scope.nnetworks);
        open_(b, "methods", '{');
        strs(b, "allow", k->scope.allow, k->scope.nallow);
        strs(b, "deny", k->scope.deny, k->scope.ndeny);
        close_(b, '}');
        u64(b, "contracts", k->scope.ncontracts);
        strs(b, "origins", k->scope.origins, k->scope.norigins);
        limits_json(b, "per_address", &k->per_address.limits);
        open_(b, "credits", '{');
        u64(b, "per_day", k->credits.limits.per_day);
        u64(b, "per_month", k->credits.limits.per_month);
        close_(b, '}');
        boolean(b, "jwt", k->jwt.public_key_file != NULL);
        close_(b, '}');
    }
    close_(b, ']');
}

static void endpoint_json(sl_buf_t *b, const pool_endpoint_conf_t *ep)
{
    static const char *const archive[] = {"unknown", "true", "false"};
    open_(b, NULL, '{');
    str(b, "id", ep->id);
    str(b, "source", ep->from_api ? "api" : "yaml");
    str(b, "url", ep->url_redacted);
    if (ep->ws_url_redacted != NULL)
        str(b, "ws_url", ep->ws_url_redacted);
    str(b, "tier", ep->tier == POOL_TIER_FALLBACK ? "fallback" : "primary");
    u64(b, "max_inflight", ep->max_inflight);
    str(b, "cost_profile", ep->cost_profile != NULL ? ep->cost_profile : "flat");
    boolean(b, "credits", ep->has_credits);
    if (ep->has_credits) {
        open_(b, "credit_limits", '{');
        for (int w = 0; w < POLICY_CREDIT_WINDOW_COUNT; w++)
            u64(b, policy_credit_window_name((policy_credit_window_t)w), ep->credits.limit[w]);
        u64(b, "month_reset_day", ep->credits.month_reset_day);
        close_(b, '}');
    }
    if (ep->max_logs_blocks > 0)
        u64(b, "max_logs_blocks", ep->max_logs_blocks);
    str(b, "tls_ca_file", ep->tls_ca_file);
    str(b, "archive", ep->archive <= POLICY_ARCHIVE_NO ? archive[ep->archive] : "?");
    open_(b, "methods", '{');
    strs(b, "allow", ep->methods.allow, ep->methods.nallow);
    strs(b, "deny", ep->methods.deny, ep->methods.ndeny);
    close_(b, '}');
    open_(b, "headers", '['); /* names only: values may be keys */
    for (size_t i = 0; i < ep->nheaders; i++)
        str(b, NULL, ep->headers[i].name);
    close_(b, ']');
    if (ep->yaml_line > 0 && !ep->from_api)
        u64(b, "line", (uint64_t)ep->yaml_line);
    close_(b, '}');
}

static void network_policies_json(sl_buf_t *b, const pool_network_conf_t *n)
{
    open_(b, "breaker", '{');
    u64(b, "window_ms", n->breaker.window_ms);
    u64(b, "min_calls", n->breaker.min_calls);
    u64(b, "failure_count", n->breaker.failure_count);
    u64(b, "failure_ratio_pct", n->breaker.failure_ratio_pct);
    u64(b, "consecutive", n->breaker.consecutive);
    u64(b, "cooldown_ms", n->breaker.cooldown_ms);
    u64(b, "max_cooldown_ms", n->breaker.max_cooldown_ms);
    u64(b, "probe_timeout_ms", n->breaker.probe_timeout_ms);
    close_(b, '}');
    open_(b, "ranking", '{');
    dbl(b, "w_error", n->ranking.w_error);
    dbl(b, "w_rate_limit", n->ranking.w_rate_limit);
    dbl(b, "w_lag", n->ranking.w_lag);
    dbl(b, "w_disagree", n->ranking.w_disagree);
    u64(b, "max_lag", n->ranking.max_lag);
    u64(b, "max_error_pct", n->ranking.max_error_pct);
    u64(b, "min_calls", n->ranking.min_calls);
    u64(b, "hysteresis_pct", n->ranking.hysteresis_pct);
    u64(b, "switch_after_ms", n->ranking.switch_after_ms);
    u64(b, "probe_interval_ms", n->ranking.probe_interval_ms);
    close_(b, '}');
    open_(b, "pressure", '{');
    boolean(b, "enabled", n->pressure.enabled);
    dbl(b, "elevated", n->pressure.elevated);
    dbl(b, "critical", n->pressure.critical);
    dbl(b, "hysteresis", n->pressure.hysteresis);
    u64(b, "hold_ms", n->pressure.hold_ms);
    u64(b, "rise_ms", n->pressure.rise_ms);
    dbl(b, "slow_factor", n->pressure.slow_factor);
    u64(b, "slow_min_ms", n->pressure.slow_min_ms);
    dbl(b, "refusal_ratio", n->pressure.refusal_ratio);
    u64(b, "window_ms", n->pressure.window_ms);
    u64(b, "min_samples", n->pressure.min_samples);
    u64(b, "retry_after_ms", n->pressure.retry_after_ms);
    u64(b, "merge_window_ms", n->pressure.merge_window_ms);
    dbl(b, "identity_share", n->pressure.identity_share);
    close_(b, '}');
    open_(b, "hedge", '{');
    boolean(b, "enabled", n->hedge.enabled);
    u64(b, "min_ms", n->hedge.min_ms);
    u64(b, "max_ms", n->hedge.max_ms);
    dbl(b, "max_ratio", n->hedge.max_ratio);
    u64(b, "burst", n->hedge.burst);
    u64(b, "window_ms", n->hedge.window_ms);
    close_(b, '}');
    open_(b, "consensus", '{');
    strs(b, "methods", n->consensus.methods, n->consensus.nmethods);
    u64(b, "quorum", n->consensus.quorum);
    u64(b, "of", n->consensus.of);
    close_(b, '}');
}

static void network_json(sl_buf_t *b, const pool_network_conf_t *n)
{
    open_(b, NULL, '{');
    str(b, "name", n->name);
    str(b, "chain", policy_chain_name(n->chain));
    if (n->has_chain_id)
        u64(b, "chain_id", n->chain_id);
    if (n->genesis_hash != NULL)
        str(b, "genesis_hash", n->genesis_hash);
    open_(b, "timeouts", '{');
    u64(b, "connect_ms", n->timeouts.connect_ms);
    u64(b, "first_byte_ms", n->timeouts.first_byte_ms);
    u64(b, "attempt_ms", n->timeouts.attempt_ms);
    u64(b, "request_ms", n->timeouts.request_ms);
    close_(b, '}');
    u64(b, "max_attempts", n->max_attempts);
    u64(b, "demote_ms", n->demote_ms);
    boolean(b, "resend_writes", n->resend_writes);
    if (n->blocked_methods != NULL)
        strs(b, "blocked_methods", n->blocked_methods, n->nblocked_methods);
    else
        str(b, "blocked_methods", "default");
    open_(b, "methods", '[');
    for (size_t i = 0; i < n->nmethod_overrides; i++)
        str(b, NULL, n->method_overrides[i].name);
    close_(b, ']');
    open_(b, "retry", '{');
    u64(b, "backoff_base_ms", n->backoff_base_ms);
    u64(b, "backoff_max_ms", n->backoff_max_ms);
    close_(b, '}');
    open_(b, "pin", '{');
    u64(b, "window_ms", n->pin_ms);
    close_(b, '}');
    open_(b, "coalesce", '{');
    u64(b, "max_waiters", n->coalesce_max_waiters);
    close_(b, '}');
    network_policies_json(b, n);
    u64(b, "max_lag_blocks", n->max_lag_blocks);
    u64(b, "max_lag_slots", n->max_lag_slots);
    u64(b, "max_logs_split", n->max_logs_split);
    u64(b, "archive_depth", n->archive_depth);
    u64(b, "chain_probe_ms", n->chain_probe_ms);
    u64(b, "ws_stall_ms", n->ws_stall_ms);
    u64(b, "max_head_lead", n->max_head_lead);
    u64(b, "capability_ttl_ms", n->capability_ttl_ms);
    open_(b, "endpoints", '[');
    for (size_t j = 0; j < n->nendpoints; j++)
        endpoint_json(b, &n->endpoints[j]);
    close_(b, ']');
    close_(b, '}');
}

void cfg_json(const cfg_t *cfg, sl_buf_t *out)
{
    sl_buf_t b = SL_BUF_INIT;
    sl_buf_append_char(&b, '{');
    str(&b, "file", cfg->file);
    server_json(&b, &cfg->server);
    sections_json(&b, cfg);
    keys_json(&b, cfg);
    open_(&b, "networks", '[');
    for (size_t i = 0; i < cfg->nnetworks; i++)
        network_json(&b, &cfg->networks[i]);
    close_(&b, ']');
    close_(&b, '}');
    b.len--; /* the last comma */
    sl_secret_scrub(out, b.base, b.len);
    sl_buf_dispose(&b);
}
