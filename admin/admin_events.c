/* admin/admin_events.c: the event feed and its Server-Sent Events stream.
 *
 * The stream polls the event log every 100 ms per subscriber (a read
 * transaction costs about a microsecond), sends each event as
 * "id: <seq>\nevent: <kind>\ndata: <json>\n\n", resumes after Last-Event-ID
 * (or ?since=), and writes a heartbeat comment when idle so proxies keep the
 * connection and dead clients are noticed. Only one h2o_send is in flight per
 * stream: what arrives meanwhile waits in `pending`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "admin/admin_int.h"
#include "base/sl_buf.h"
#include "base/sl_http.h"
#include "base/sl_time.h"
#include "policy/breaker.h"
#include "policy/pressure.h"

#define FEED_DEFAULT_LIMIT 100
#define FEED_MAX_LIMIT 1000
#define STREAM_BATCH 100
#define HEARTBEAT_MIN_MS 1000       /* each heartbeat wakes a stream: a floor on that work */
#define STREAMS_RETRY_AFTER "5"
#define STREAM_BACKLOG_MAX (64 * 1024)

cJSON *admin_event_json(const state_event_t *ev)
{
    char iso[32];
    cJSON *o = cJSON_CreateObject();
    admin_iso_time(ev->ts_ms, iso);
    cJSON_AddNumberToObject(o, "seq", (double)ev->seq);
    cJSON_AddStringToObject(o, "time", iso);
    cJSON_AddNumberToObject(o, "ts_ms", (double)ev->ts_ms);
    cJSON_AddStringToObject(o, "kind", state_event_kind_name((state_event_kind_t)ev->kind));
    cJSON_AddStringToObject(o, "network", ev->network);
    if (ev->endpoint[0] != '\0')
        cJSON_AddStringToObject(o, "endpoint", ev->endpoint);
    int breaker = ev->kind == STATE_EVENT_BREAKER_OPENED || ev->kind == STATE_EVENT_BREAKER_HALF_OPEN ||
                  ev->kind == STATE_EVENT_BREAKER_CLOSED;
    if (breaker) {
        cJSON_AddStringToObject(o, "from", policy_breaker_state_name((policy_breaker_state_t)ev->from));
        cJSON_AddStringToObject(o, "to", policy_breaker_state_name((policy_breaker_state_t)ev->to));
    }
    int pressure = ev->kind == STATE_EVENT_PRESSURE_CHANGED;
    if (pressure) {
        cJSON_AddStringToObject(o, "from", policy_pressure_level_name((policy_pressure_level_t)ev->from));
        cJSON_AddStringToObject(o, "to", policy_pressure_level_name((policy_pressure_level_t)ev->to));
        cJSON_AddNumberToObject(o, "previous_level_ms", (double)ev->duration_ms);
        cJSON_AddNumberToObject(o, "depth", (double)ev->count);
    }
    int reorg = ev->kind == STATE_EVENT_REORG;
    if (reorg) {
        cJSON_AddNumberToObject(o, "depth", (double)ev->count); /* height and hashes: in reason */
        cJSON_AddNumberToObject(o, "reorgs", (double)(ev->duration_ms ? ev->duration_ms : 1)); /* folded into it */
    }
    cJSON_AddStringToObject(o, "reason", ev->reason);
    if (ev->kind == STATE_EVENT_BREAKER_CLOSED)
        cJSON_AddNumberToObject(o, "open_for_ms", (double)ev->duration_ms);
    else if (ev->duration_ms != 0 && !pressure && !reorg)
        cJSON_AddNumberToObject(o, "duration_ms", (double)ev->duration_ms);
    if (ev->count != 0 && !pressure)
        cJSON_AddNumberToObject(o, "count", (double)ev->count);
    cJSON_AddNumberToObject(o, "pid", ev->pid);
    if (ev->host[0] != '\0')
        cJSON_AddStringToObject(o, "host", ev->host); /* cluster: which host saw it */
    return o;
}

int admin_route_events(admin_t *a, h2o_req_t *req)
{
    uint64_t since = admin_query_u64(req, "since", 0);
    uint64_t limit = admin_query_u64(req, "limit", FEED_DEFAULT_LIMIT);
    if (limit == 0 || limit > FEED_MAX_LIMIT)
        limit = limit == 0 ? FEED_DEFAULT_LIMIT : FEED_MAX_LIMIT;
    state_event_t *evs = sl_xmalloc(limit * sizeof(*evs));
    size_t n = 0;
    if (state_events_read(a->conf.state, since, evs, limit, &n) != SL_OK) {
        free(evs);
        return admin_send_text(req, 500, "application/json", H2O_STRLIT("{\"error\":\"cannot read events\"}"));
    }
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, admin_event_json(&evs[i]));
    free(evs);
    return admin_send_json(req, 200, arr);
}

typedef struct stream {
    h2o_generator_t super;        /* first: h2o hands it back to proceed/stop */
    admin_t *a;
    h2o_req_t *req;
    h2o_timeout_entry_t tick;
    uint64_t last_seq;
    uint64_t last_write_ms;
    uint64_t heartbeat_ms;
    int in_flight;                /* an h2o_send is being written */
    int stopped;
    sl_buf_t pending;             /* to send next */
    sl_buf_t sending;             /* owned by h2o until proceed */
} stream_t;

static void stream_flush(stream_t *s)
{
    if (s->in_flight || s->stopped || s->pending.len == 0)
        return;
    sl_buf_t t = s->sending;
    s->sending = s->pending;
    s->pending = t;
    sl_buf_reset(&s->pending);
    s->in_flight = 1;
    s->last_write_ms = sl_now_ms();
    h2o_iovec_t iov = h2o_iovec_init(s->sending.base, s->sending.len);
    h2o_send(s->req, &iov, 1, H2O_SEND_STATE_IN_PROGRESS);
}

static void stream_poll(stream_t *s)
{
    state_event_t evs[STREAM_BATCH];
    size_t n = 0;
    /* a subscriber that stopped reading: events wait in LMDB, not here */
    if (s->in_flight && s->pending.len >= STREAM_BACKLOG_MAX)
        return;
    if (state_events_read(s->a->conf.state, s->last_seq, evs, STREAM_BATCH, &n) == SL_OK) {
        for (size_t i = 0; i < n; i++) {
            cJSON *o = admin_event_json(&evs[i]);
            char *json = cJSON_PrintUnformatted(o);
            sl_buf_printf(&s->pending, "id: %llu\nevent: %s\ndata: %s\n\n", (unsigned long long)evs[i].seq,
                          state_event_kind_name((state_event_kind_t)evs[i].kind), json);
            cJSON_free(json);
            cJSON_Delete(o);
            s->last_seq = evs[i].seq;
        }
    }
    if (s->pending.len == 0 && !s->in_flight && sl_now_ms() - s->last_write_ms >= s->heartbeat_ms)
        sl_buf_append_str(&s->pending, ": heartbeat\n\n");
    stream_flush(s);
}

/* h2o does not read a connection while it answers, so a subscriber that
 * left is noticed only when a write fails, two heartbeats later: its FIN is
 * looked for each tick, and the connection is shut so the next write fails
 * at once and frees the stream's seat (admin.max_streams). */
static void stream_check_left(stream_t *s)
{
    h2o_socket_t *sock = s->req->conn->callbacks->get_socket(s->req->conn);
    char c;
    if (sock == NULL || recv(h2o_socket_get_fd(sock), &c, 1, MSG_PEEK | MSG_DONTWAIT) != 0)
        return;
    shutdown(h2o_socket_get_fd(sock), SHUT_RDWR);
    if (s->pending.len == 0)
        sl_buf_append_str(&s->pending, ": bye\n\n");
}

static void on_stream_tick(h2o_timeout_entry_t *entry)
{
    stream_t *s = H2O_STRUCT_FROM_MEMBER(stream_t, tick, entry);
    if (s->stopped)
        return;
    stream_check_left(s);
    stream_poll(s);
    h2o_timeout_link(s->a->conf.loop, &s->a->sse_timeout, &s->tick);
}

static void on_proceed(h2o_generator_t *gen, h2o_req_t *req)
{
    (void)req;
    stream_t *s = (stream_t *)gen;
    s->in_flight = 0;
    sl_buf_reset(&s->sending);
    stream_flush(s);
}

static void on_stop(h2o_generator_t *gen, h2o_req_t *req)
{
    (void)req;
    stream_t *s = (stream_t *)gen;
    s->stopped = 1;
    if (h2o_timeout_is_linked(&s->tick))
        h2o_timeout_unlink(&s->tick);
}

static void stream_dispose(void *p)
{
    stream_t *s = p;
    s->a->nstreams--;
    if (h2o_timeout_is_linked(&s->tick))
        h2o_timeout_unlink(&s->tick);
    sl_buf_dispose(&s->pending);
    sl_buf_dispose(&s->sending);
}

/* Every stream costs a poll of the event log each tick: past max_streams a
 * subscriber is told to come back, and a heartbeat under a second (which
 * would wake every stream that often) is refused. 1: answered. */
static int stream_refused(admin_t *a, h2o_req_t *req, uint64_t heartbeat_ms)
{
    if (heartbeat_ms < HEARTBEAT_MIN_MS) {
        static const char body[] = "{\"error\":\"heartbeat_ms must be at least 1000\"}";
        admin_send_text(req, 400, "application/json", body, sizeof(body) - 1);
        return 1;
    }
    if (a->nstreams < a->conf.max_streams)
        return 0;
    char body[160];
    int n = snprintf(body, sizeof(body),
                     "{\"error\":\"too many event streams open (admin.max_streams %u per worker); retry later\"}",
                     a->conf.max_streams);
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL, H2O_STRLIT(STREAMS_RETRY_AFTER));
    admin_send_text(req, 503, "application/json", body, (size_t)n);
    return 1;
}

int admin_route_stream(admin_t *a, h2o_req_t *req)
{
    uint64_t heartbeat_ms = admin_query_u64(req, "heartbeat_ms", a->conf.heartbeat_ms);
    if (stream_refused(a, req, heartbeat_ms))
        return 0;
    a->nstreams++;
    stream_t *s = h2o_mem_alloc_shared(&req->pool, sizeof(*s), stream_dispose);
    memset(s, 0, sizeof(*s));
    s->super.proceed = on_proceed;
    s->super.stop = on_stop;
    s->a = a;
    s->req = req;
    s->tick.cb = on_stream_tick;
    s->heartbeat_ms = heartbeat_ms;
    /* a new subscriber starts from now, unless it asks for history; a
     * reconnecting one resumes after its Last-Event-ID (junk: from now) */
    uint64_t now_seq = state_events_last_seq(a->conf.state);
    ssize_t h = h2o_find_header_by_str(&req->headers, H2O_STRLIT("last-event-id"), -1);
    if (h >= 0)
        s->last_seq = admin_parse_u64(req->headers.entries[h].value.base, req->headers.entries[h].value.len, now_seq);
    else
        s->last_seq = admin_query_u64(req, "since", now_seq);
    req->res.status = 200;
    req->res.reason = "OK";
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, H2O_STRLIT("text/event-stream"));
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CACHE_CONTROL, NULL, H2O_STRLIT("no-cache"));
    h2o_start_response(req, &s->super);
    sl_buf_append_str(&s->pending, "retry: 1000\n: connected\n\n");
    stream_poll(s);
    h2o_timeout_link(a->conf.loop, &a->sse_timeout, &s->tick);
    return 0;
}
