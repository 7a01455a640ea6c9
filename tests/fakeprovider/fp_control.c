/* fp_control.c: the /_control/ API on the provider's own port, used by tests
 * to switch fault modes and read counters. Control requests are never
 * faulted and never counted. */
#include "fp.h"

#include <inttypes.h>
#include <string.h>

typedef int (*route_fn)(fp_server_t *srv, const char *body, size_t n, fp_buf_t *out);

static void put_kv_u64(fp_buf_t *out, const char *key, uint64_t v)
{
    fp_buf_printf(out, ",\"%s\":%" PRIu64, key, v);
}

static void put_methods(const fp_stats_t *st, fp_buf_t *out)
{
    fp_buf_puts(out, ",\"methods\":{");
    for (size_t i = 0; i < st->method_count; i++) {
        if (i)
            fp_buf_puts(out, ",");
        /* names are kept as the raw JSON string contents they arrived as */
        fp_buf_puts(out, "\"");
        fp_buf_puts(out, st->methods[i].name);
        fp_buf_printf(out, "\":%" PRIu64, st->methods[i].n);
    }
    fp_buf_puts(out, "}");
}

static void put_sent_raw(const fp_stats_t *st, fp_buf_t *out)
{
    fp_buf_puts(out, ",\"sent_raw\":[");
    for (size_t i = 0; i < st->sent_count; i++) {
        if (i)
            fp_buf_puts(out, ",");
        fp_buf_put_json_str(out, st->sent_raw[i], strlen(st->sent_raw[i]));
    }
    fp_buf_puts(out, "]");
}

/* Oldest first; the ring holds the newest FP_ARRIVALS_MAX. */
static void put_arrivals(const fp_stats_t *st, fp_buf_t *out)
{
    uint64_t n = st->arrival_total < FP_ARRIVALS_MAX ? st->arrival_total : FP_ARRIVALS_MAX;
    fp_buf_puts(out, ",\"arrivals_ms\":[");
    for (uint64_t i = st->arrival_total - n; i < st->arrival_total; i++) {
        if (i != st->arrival_total - n)
            fp_buf_puts(out, ",");
        fp_buf_put_u64(out, st->arrivals[i % FP_ARRIVALS_MAX]);
    }
    fp_buf_puts(out, "]");
}

static int route_stats(fp_server_t *srv, const char *body, size_t n, fp_buf_t *out)
{
    const fp_stats_t *st = &srv->stats;
    (void)body, (void)n;
    fp_buf_puts(out, "{\"name\":");
    fp_buf_put_json_str(out, srv->name, strlen(srv->name));
    fp_buf_printf(out, ",\"chain\":\"%s\",\"mode\":", srv->chain->name);
    fp_mode_to_json(&srv->mode, out);
    put_kv_u64(out, "requests", st->requests);
    put_kv_u64(out, "calls", st->calls);
    put_methods(st, out);
    put_sent_raw(st, out);
    put_arrivals(st, out);
    put_kv_u64(out, "connections_total", st->connections_total);
    put_kv_u64(out, "connections_open", srv->conns_open);
    put_kv_u64(out, "in_flight", srv->inflight);
    put_kv_u64(out, "max_concurrent", st->max_concurrent);
    put_kv_u64(out, "faults", st->faults);
    fp_buf_puts(out, ",\"last_traceparent\":");
    fp_buf_put_json_str(out, st->last_traceparent, strlen(st->last_traceparent));
    put_kv_u64(out, "head", fp_server_head(srv));
    fp_buf_puts(out, "}");
    return 200;
}

static int route_reset(fp_server_t *srv, const char *body, size_t n, fp_buf_t *out)
{
    (void)body, (void)n;
    fp_stats_reset(&srv->stats);
    srv->stats.max_concurrent = srv->inflight;  /* a max "from now on" */
    fp_buf_puts(out, "{\"ok\":true}");
    return 200;
}

static int route_mode(fp_server_t *srv, const char *body, size_t n, fp_buf_t *out)
{
    char err[128];
    fp_span_t v = fp_json_trim(body, n);
    if (v.n > 0 && !fp_mode_from_json(&srv->mode, v.p, v.n, err, sizeof err)) {
        fp_buf_puts(out, "{\"ok\":false,\"error\":");
        fp_buf_put_json_str(out, err, strlen(err));
        fp_buf_puts(out, "}");
        return 400;
    }
    fp_buf_puts(out, "{\"ok\":true,\"mode\":");
    size_t at = out->len;
    fp_mode_to_json(&srv->mode, out);
    if (v.n > 0)
        fp_log(srv, "mode set: %.*s", (int)(out->len - at), out->data + at);
    fp_buf_puts(out, "}");
    return 200;
}

static const struct {
    const char *path;
    route_fn fn;
} routes[] = {
    {"/_control/chain", fp_chain_route},
    {"/_control/mode", route_mode},
    {"/_control/reset", route_reset},
    {"/_control/sol", fp_solw_route},
    {"/_control/stats", route_stats},
    {"/_control/ws", fp_ws_route},
};

void fp_control_handle(fp_conn_t *c, const char *path, size_t path_len, const char *body,
                       size_t n)
{
    fp_server_t *srv = c->srv;
    const char *q = memchr(path, '?', path_len);
    if (q)
        path_len = (size_t)(q - path);
    fp_reply_t r = {.status = 404, .content_type = "application/json", .retry_after = -1};
    srv->body.len = 0;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (strlen(routes[i].path) == path_len && memcmp(routes[i].path, path, path_len) == 0)
            r.status = routes[i].fn(srv, body, n, &srv->body);
    if (r.status == 404)
        fp_buf_puts(&srv->body, "{\"ok\":false,\"error\":\"no such control route\"}");
    r.body = srv->body.data;
    r.body_len = srv->body.len;
    fp_conn_reply(c, &r);
    srv->body.len = 0;
}
