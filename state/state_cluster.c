/* state/state_cluster.c: a worker's link to Redis.
 *
 * Two connections: commands, and a subscriber (a subscribed connection takes
 * no other command). A 50 ms tick drives everything that waits: reconnects
 * (a backoff of 100 ms doubling to 5 s), the heartbeat (every second: this
 * host's entry in the hosts set, the number of hosts seen, Redis' clock, and
 * a message to this worker's own heartbeat channel that its subscriber must
 * hear), and command deadlines: the oldest command without a reply for
 * conf->timeout_ms means Redis is slow, which counts as down. The first
 * cause of a fall is remembered and logged once per outage. */
#include <arpa/inet.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "state/state_cluster_int.h"
#include "state/state_int.h"

#define TICK_MS 50
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
#define HELLO_EVERY_MS 1000
#define CONNECT_TIMEOUT_MIN_MS 1000
/* the backoff starts again from BACKOFF_MIN_MS only after the link stayed
 * up this long: a Redis that accepts and then fails is not retried 10 times
 * a second */
#define STABLE_AFTER_MS 10000
#define REFUSED_HOLD_MS 1000
#define ERROR_LOG_EVERY_MS 60000
#define MODE_TICK_MS 1000

static void link_down(state_cluster_t *cl, const char *why);
static void link_connect(state_cluster_t *cl);
static void link_up(state_cluster_t *cl);
static void link_refused(state_cluster_t *cl, const char *why);

/* ---- the link's machine ---- */

static const uint8_t link_edges[STATE_LINK_COUNT][STATE_LINK_COUNT] = {
    [STATE_LINK_DOWN] = {[STATE_LINK_RESOLVING] = 1, [STATE_LINK_CONNECTING] = 1},
    [STATE_LINK_RESOLVING] = {[STATE_LINK_CONNECTING] = 1, [STATE_LINK_DOWN] = 1},
    [STATE_LINK_CONNECTING] = {[STATE_LINK_JOINING] = 1, [STATE_LINK_DOWN] = 1},
    [STATE_LINK_JOINING] = {[STATE_LINK_UP] = 1, [STATE_LINK_DOWN] = 1},
    [STATE_LINK_UP] = {[STATE_LINK_JOINING] = 1, [STATE_LINK_DOWN] = 1},
};

int state_link_edge_allowed(state_link_t from, state_link_t to)
{
    return (unsigned)from < STATE_LINK_COUNT && (unsigned)to < STATE_LINK_COUNT && link_edges[from][to];
}

const char *state_link_name(state_link_t l)
{
    static const char *const names[STATE_LINK_COUNT] = {
        [STATE_LINK_DOWN] = "down", [STATE_LINK_RESOLVING] = "resolving",
        [STATE_LINK_CONNECTING] = "connecting", [STATE_LINK_JOINING] = "joining", [STATE_LINK_UP] = "up"};
    return (unsigned)l < STATE_LINK_COUNT ? names[l] : "unknown";
}

/* The one writer of cl->link. */
static void set_link(state_cluster_t *cl, state_link_t to)
{
    if (!state_link_edge_allowed(cl->link, to)) {
        sl_log_error("cluster: bug: link %s -> %s is not an edge", state_link_name(cl->link), state_link_name(to));
        abort();
    }
    cl->link = to;
}

/* ---- heartbeat ---- */

static void on_hello(void *data, redisReply *reply)
{
    state_cluster_t *cl = data;
    cl->hello_pending = 0;
    if ((cl->link != STATE_LINK_UP && cl->link != STATE_LINK_JOINING) || reply == NULL)
        return;
    if (reply->type == REDIS_REPLY_ERROR) {
        /* the connection works, Redis refuses the write (out of memory, a
         * read-only replica): not up, and not reconnecting either */
        link_refused(cl, reply->str);
        return;
    }
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 3 || reply->element[0]->type != REDIS_REPLY_INTEGER ||
        reply->element[1]->type != REDIS_REPLY_STRING || reply->element[2]->type != REDIS_REPLY_STRING) {
        link_down(cl, reply->type == REDIS_REPLY_ERROR ? reply->str : "unexpected heartbeat answer");
        return;
    }
    long long n = reply->element[0]->integer;
    uint64_t redis_ms = strtoull(reply->element[1]->str, NULL, 10) * 1000 + strtoull(reply->element[2]->str, NULL, 10) / 1000;
    cl->hb_sent_ms = sl_now_ms();
    cl->redis_offset_ms = (int64_t)redis_ms - (int64_t)sl_shared_ms();
    uint32_t hosts = n < 1 ? 1 : n > 100000 ? 100000 : (uint32_t)n;
    if (cl->link == STATE_LINK_JOINING) {
        cl->hosts = hosts;
        link_up(cl);
    } else if (hosts != cl->hosts) {
        cl->hosts = hosts;
        state_cluster_mode_move(cl->st, STATE_CLUSTER_SHARED, hosts, NULL, sl_wall_ms());
    }
}

static void send_hello(state_cluster_t *cl)
{
    char ttl[24];
    snprintf(ttl, sizeof(ttl), "%u", STATE_CLUSTER_HOST_TTL_MS);
    const char *argv[] = {"EVALSHA", cl->sha[STATE_SCRIPT_HELLO], "1", cl->hosts_key, cl->conf->host, ttl, cl->hb_channel};
    size_t lens[7];
    for (int i = 0; i < 7; i++)
        lens[i] = strlen(argv[i]);
    cl->next_hello_ms = sl_now_ms() + HELLO_EVERY_MS;
    if (state_redis_send(&cl->cmd, on_hello, cl, 7, argv, lens) == 0)
        cl->hello_pending = 1;
}

/* ---- subscriber ---- */

static void on_message(void *data, redisReply *reply)
{
    state_cluster_t *cl = data;
    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY || reply->elements < 3 ||
        reply->element[0]->type != REDIS_REPLY_STRING || reply->element[1]->type != REDIS_REPLY_STRING)
        return;
    const char *kind = reply->element[0]->str;
    if (strcmp(kind, "subscribe") == 0) {
        if (++cl->subscribed == 2 && --cl->handshake_left == 0 && cl->link == STATE_LINK_CONNECTING)
            link_connect(cl);
        return;
    }
    if (strcmp(kind, "message") != 0)
        return;
    if (strcmp(reply->element[1]->str, cl->hb_channel) == 0)
        cl->last_hb_seen_ms = sl_now_ms();
    else if (reply->element[2]->type != REDIS_REPLY_STRING || cl->link != STATE_LINK_UP)
        return;
    else
        state_cluster_channel_tell(cl, reply->element[2]->str, reply->element[2]->len);
}

/* ---- connecting ---- */

static void on_handshake(void *data, redisReply *reply);

typedef struct hs_step {
    state_cluster_t *cl;
    int script;                   /* a state_script_t, or -1 */
} hs_step_t;

static void on_handshake(void *data, redisReply *reply)
{
    hs_step_t *s = data;
    state_cluster_t *cl = s->cl;
    int script = s->script;
    free(s);
    if (cl->link != STATE_LINK_CONNECTING)
        return;
    if (reply == NULL) {
        link_down(cl, state_redis_error(&cl->cmd));
        return;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        char why[160];
        snprintf(why, sizeof(why), "handshake refused: %.120s", reply->str);
        link_down(cl, why);
        return;
    }
    if (script >= 0) {
        if (reply->type != REDIS_REPLY_STRING || reply->len >= sizeof(cl->sha[0])) {
            link_down(cl, "SCRIPT LOAD gave no digest");
            return;
        }
        memcpy(cl->sha[script], reply->str, reply->len + 1);
    }
    if (--cl->handshake_left == 0)
        link_connect(cl);
}

static void send_step(state_cluster_t *cl, state_redis_t *r, int script, int argc, const char **argv)
{
    size_t lens[4];
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    hs_step_t *s = sl_xmalloc(sizeof(*s));
    *s = (hs_step_t){cl, script};
    cl->handshake_left++;
    if (state_redis_send(r, on_handshake, s, argc, argv, lens) != 0) {
        free(s);
        cl->handshake_left--;
        link_down(cl, "cannot send the handshake");
    }
}

static void send_auth(state_cluster_t *cl, state_redis_t *r)
{
    const state_cluster_conf_t *c = cl->conf;
    if (c->password == NULL)
        return;
    const char *argv[3] = {"AUTH", c->user ? c->user : c->password, c->password};
    send_step(cl, r, -1, c->user ? 3 : 2, argv);
}

/* Both TCP connections are up: AUTH, SELECT, SCRIPT LOAD, SUBSCRIBE. */
static void start_handshake(state_cluster_t *cl)
{
    char db[16];
    snprintf(db, sizeof(db), "%u", cl->conf->db);
    cl->handshake_left = 1; /* held until every step is queued */
    cl->subscribed = 0;
    send_auth(cl, &cl->cmd);
    const char *select[2] = {"SELECT", db};
    send_step(cl, &cl->cmd, -1, 2, select);
    for (int s = 0; s < STATE_SCRIPT_COUNT && cl->link == STATE_LINK_CONNECTING; s++) {
        const char *load[3] = {"SCRIPT", "LOAD", state_script_source((state_script_t)s)};
        send_step(cl, &cl->cmd, s, 3, load);
    }
    if (cl->link != STATE_LINK_CONNECTING)
        return;
    send_auth(cl, &cl->sub);
    const char *sub[3] = {"SUBSCRIBE", cl->channel, cl->hb_channel};
    size_t lens[3] = {9, strlen(cl->channel), strlen(cl->hb_channel)};
    cl->handshake_left++; /* both confirmations count as one step */
    if (cl->link != STATE_LINK_CONNECTING || state_redis_subscribe(&cl->sub, on_message, cl, 3, sub, lens) != 0) {
        if (cl->link == STATE_LINK_CONNECTING)
            link_down(cl, "cannot subscribe");
        return;
    }
    if (--cl->handshake_left == 0)
        link_connect(cl);
}

/* CONNECTING: called as the handshake completes its steps. The link is not
 * UP yet: a Redis that takes connections may still refuse every write, so
 * the first heartbeat (a ZADD) decides. */
static void link_connect(state_cluster_t *cl)
{
    set_link(cl, STATE_LINK_JOINING);
    sl_log_debug("cluster: connected to Redis at %s; joining with a heartbeat", cl->conf->url_shown);
    send_hello(cl);
}

/* JOINING: a heartbeat was written. */
static void link_up(state_cluster_t *cl)
{
    uint64_t now = sl_now_ms();
    set_link(cl, STATE_LINK_UP);
    cl->up_since_ms = now;
    cl->refused_until_ms = 0; /* the resync below pushes what was decided alone */
    cl->last_hb_seen_ms = now;
    cl->hb_sent_ms = 0;
    if (cl->reported_down)
        sl_log_warn("cluster: Redis at %s answers again; records are shared", cl->conf->url_shown);
    cl->reported_down = 0;
    state_cluster_mode_move(cl->st, STATE_CLUSTER_SHARED, cl->hosts, NULL, sl_wall_ms());
    state_cluster_ep_resync(cl);
    state_cluster_epapi_sync(cl);
    cl->keys_sync_pending = 0; /* a read under way died with the last connection */
    state_cluster_keys_sync(cl);
}

/* UP or JOINING: Redis refused the heartbeat's write. The connections stay
 * (nothing is wrong with them); the host is degraded until a heartbeat
 * succeeds, tried every HELLO_EVERY_MS. */
static void link_refused(state_cluster_t *cl, const char *why)
{
    char reason[160];
    snprintf(reason, sizeof(reason), "Redis refuses writes: %.130s", why);
    cl->errors++;
    if (cl->link == STATE_LINK_UP)
        set_link(cl, STATE_LINK_JOINING);
    if (!cl->reported_down) {
        sl_log_error("cluster: %s (Redis at %s); this host enforces limits, budgets and breakers on its own until "
                     "a write succeeds (retrying every %u ms)", reason, cl->conf->url_shown, HELLO_EVERY_MS);
        cl->reported_down = 1;
    }
    state_cluster_mode_move(cl->st, STATE_CLUSTER_DEGRADED, cl->hosts, reason, sl_wall_ms());
}

static void on_closed(state_redis_t *r)
{
    state_cluster_t *cl = r->cl;
    if (cl->link != STATE_LINK_DOWN && !cl->destroying)
        link_down(cl, r->error);
}

static void open_both(state_cluster_t *cl)
{
    set_link(cl, STATE_LINK_CONNECTING);
    cl->connect_started_ms = sl_now_ms();
    cl->cmd.ready = cl->sub.ready = 0;
    cl->handshake_left = 0;
    if (state_redis_open(&cl->cmd, cl->addr, cl->conf->redis_port) != 0 ||
        state_redis_open(&cl->sub, cl->addr, cl->conf->redis_port) != 0) {
        link_down(cl, "cannot open a connection");
        return;
    }
    /* hiredis keeps what is sent before the connect completes */
    start_handshake(cl);
}

static void on_resolved(h2o_hostinfo_getaddr_req_t *req, const char *errstr, struct addrinfo *res, void *data)
{
    (void)req;
    state_cluster_t *cl = data;
    cl->resolving = NULL;
    if (errstr != NULL || res == NULL ||
        getnameinfo(res->ai_addr, res->ai_addrlen, cl->addr, sizeof(cl->addr), NULL, 0, NI_NUMERICHOST) != 0) {
        char why[160];
        snprintf(why, sizeof(why), "cannot resolve %s: %s", cl->conf->redis_host, errstr ? errstr : "no address");
        link_down(cl, why);
        return;
    }
    open_both(cl);
}

static int is_numeric(const char *host)
{
    unsigned char buf[16];
    return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

static void start_connect(state_cluster_t *cl)
{
    if (is_numeric(cl->conf->redis_host) || cl->getaddr_receiver == NULL) {
        snprintf(cl->addr, sizeof(cl->addr), "%s", cl->conf->redis_host);
        open_both(cl);
        return;
    }
    set_link(cl, STATE_LINK_RESOLVING);
    char port[8];
    int n = snprintf(port, sizeof(port), "%u", (unsigned)cl->conf->redis_port);
    cl->resolving = h2o_hostinfo_getaddr(cl->getaddr_receiver,
                                         h2o_iovec_init(cl->conf->redis_host, strlen(cl->conf->redis_host)),
                                         h2o_iovec_init(port, (size_t)n), AF_UNSPEC, SOCK_STREAM, IPPROTO_TCP,
                                         AI_ADDRCONFIG | AI_NUMERICSERV, on_resolved, cl);
}

/* ---- going down ---- */

static void link_down(state_cluster_t *cl, const char *why)
{
    if (cl->link == STATE_LINK_DOWN)
        return;
    int was_up = cl->link == STATE_LINK_UP;
    set_link(cl, STATE_LINK_DOWN);
    if (cl->resolving != NULL) {
        h2o_hostinfo_getaddr_cancel(cl->resolving);
        cl->resolving = NULL;
    }
    snprintf(cl->down_why, sizeof(cl->down_why), "%s", why);
    if (was_up && sl_now_ms() - cl->up_since_ms >= STABLE_AFTER_MS)
        cl->backoff_ms = 0;
    cl->backoff_ms = cl->backoff_ms == 0 ? BACKOFF_MIN_MS : cl->backoff_ms * 2;
    if (cl->backoff_ms > BACKOFF_MAX_MS)
        cl->backoff_ms = BACKOFF_MAX_MS;
    cl->retry_at_ms = sl_now_ms() + cl->backoff_ms;
    cl->hello_pending = 0;
    cl->resync_pending = 0;
    cl->ship_pending = cl->tail_pending = cl->tail_again = 0;
    cl->ledger_sync_pending = 0;
    cl->next_ledger_sync_ms = 0; /* merge at once when the link comes up */
    cl->next_tail_ms = 0;
    /* closing runs the pending commands' callbacks with NULL: they fall back */
    state_redis_close(&cl->cmd);
    state_redis_close(&cl->sub);
    if (!cl->reported_down) {
        sl_log_error("cluster: Redis at %s %s: %s; this host enforces limits, budgets and breakers on its own "
                     "until it answers again (retrying)",
                     cl->conf->url_shown, was_up ? "lost" : "unreachable", why);
        cl->reported_down = 1;
    } else {
        sl_log_debug("cluster: Redis still unreachable: %s (next try in %u ms)", why, cl->backoff_ms);
    }
    char reason[160];
    snprintf(reason, sizeof(reason), "Redis %s: %.140s", was_up ? "lost" : "unreachable", why);
    state_cluster_mode_move(cl->st, STATE_CLUSTER_DEGRADED, cl->hosts, reason, sl_wall_ms());
}

void state_cluster_link_failed(state_cluster_t *cl, const char *why)
{
    uint64_t now = sl_now_ms();
    if (strncmp(why, "NOSCRIPT", 8) == 0) {
        link_down(cl, "Redis lost the scripts (SCRIPT FLUSH?): reconnecting loads them");
        return;
    }
    cl->errors++;
    cl->refused_until_ms = now + REFUSED_HOLD_MS;
    if (cl->error_logged_ms == 0 || now - cl->error_logged_ms >= ERROR_LOG_EVERY_MS) {
        sl_log_warn("cluster: Redis answered an error: %.120s; this decision and the next ones for %u ms are made "
                    "locally (%llu error(s) so far)", why, REFUSED_HOLD_MS, (unsigned long long)cl->errors);
        cl->error_logged_ms = now;
    }
}

/* ---- the tick ---- */

/* 1 if the oldest command is overdue (the link was taken down). */
static int overdue(state_cluster_t *cl, uint64_t now)
{
    uint64_t oldest = state_redis_oldest_ms(&cl->cmd);
    if (oldest == 0 || now - oldest < cl->conf->timeout_ms)
        return 0;
    char why[96];
    snprintf(why, sizeof(why), "no answer within %u ms", cl->conf->timeout_ms);
    link_down(cl, why);
    return 1;
}

static void check_joining(state_cluster_t *cl, uint64_t now)
{
    if (!overdue(cl, now) && now >= cl->next_hello_ms && !cl->hello_pending)
        send_hello(cl);
}

static void check_up(state_cluster_t *cl, uint64_t now)
{
    if (overdue(cl, now))
        return;
    if (cl->refused_until_ms != 0 && now >= cl->refused_until_ms) {
        /* what was decided alone after an error reply (a breaker moved
         * here, marked dirty) goes to Redis as after a return */
        cl->refused_until_ms = 0;
        state_cluster_ep_resync(cl);
    }
    /* the subscription must hear the heartbeat that Redis acknowledged */
    if (cl->hb_sent_ms != 0 && cl->last_hb_seen_ms + HELLO_EVERY_MS / 2 < cl->hb_sent_ms &&
        now - cl->hb_sent_ms >= cl->conf->timeout_ms) {
        link_down(cl, "the subscription stopped receiving");
        return;
    }
    if (now >= cl->next_hello_ms && !cl->hello_pending)
        send_hello(cl);
    state_cluster_events_tick(cl, now);
    state_cluster_epapi_tick(cl, now);
    if (cl->events_worker && now >= cl->next_ledger_sync_ms)
        state_cluster_ledgers_sync(cl);
    if (cl->events_worker && now >= cl->next_keys_sync_ms)
        state_cluster_keys_sync(cl);
}

static void on_tick(h2o_timeout_entry_t *entry)
{
    state_cluster_t *cl = H2O_STRUCT_FROM_MEMBER(state_cluster_t, tick, entry);
    uint64_t now = sl_now_ms();
    uint32_t connect_ms = cl->conf->timeout_ms > CONNECT_TIMEOUT_MIN_MS ? cl->conf->timeout_ms : CONNECT_TIMEOUT_MIN_MS;
    switch (cl->link) {
    case STATE_LINK_DOWN:
        if (now >= cl->retry_at_ms)
            start_connect(cl);
        break;
    case STATE_LINK_RESOLVING:
        break; /* the resolver has its own deadline */
    case STATE_LINK_CONNECTING:
        if (now - cl->connect_started_ms >= connect_ms) {
            link_down(cl, cl->cmd.ready && cl->sub.ready ? "the handshake timed out" : "connect timed out");
        }
        break;
    case STATE_LINK_JOINING:
        check_joining(cl, now);
        break;
    case STATE_LINK_UP:
        check_up(cl, now);
        break;
    case STATE_LINK_COUNT:
        break;
    }
    if (now >= cl->next_mode_tick_ms) {
        cl->next_mode_tick_ms = now + MODE_TICK_MS;
        state_cluster_mode_tick(cl->st, sl_wall_ms());
    }
    h2o_timeout_link(cl->loop, &cl->tick_timeout, &cl->tick);
}

/* ---- lifetime ---- */

state_cluster_t *state_cluster_create(const state_cluster_conf_t *conf, h2o_loop_t *loop,
                                      h2o_multithread_receiver_t *getaddr_receiver, state_t *st)
{
    state_cluster_t *cl = sl_xcalloc(1, sizeof(*cl));
    cl->conf = conf;
    cl->loop = loop;
    cl->getaddr_receiver = getaddr_receiver;
    cl->st = st;
    cl->link = STATE_LINK_DOWN;
    state_cluster_mode_rec_t mode = state_cluster_mode_get(st);
    cl->hosts = mode.hosts > 1 ? mode.hosts : 1; /* as last seen, until a heartbeat says */
    cl->cmd = (state_redis_t){.cl = cl, .name = "commands", .on_closed = on_closed};
    cl->sub = (state_redis_t){.cl = cl, .name = "subscriber", .on_closed = on_closed};
    snprintf(cl->channel, sizeof(cl->channel), "%sch", conf->prefix);
    snprintf(cl->hosts_key, sizeof(cl->hosts_key), "%shosts", conf->prefix);
    snprintf(cl->hb_channel, sizeof(cl->hb_channel), "%shb:%s:%d", conf->prefix, conf->host, (int)getpid());
    st->cluster = cl;
    state_set_host(st, conf->host);
    h2o_timeout_init(loop, &cl->tick_timeout, TICK_MS);
    cl->tick.cb = on_tick;
    h2o_timeout_link(loop, &cl->tick_timeout, &cl->tick);
    start_connect(cl);
    return cl;
}

void state_cluster_destroy(state_cluster_t *cl)
{
    if (cl == NULL)
        return;
    cl->destroying = 1;
    if (cl->resolving != NULL)
        h2o_hostinfo_getaddr_cancel(cl->resolving);
    state_redis_close(&cl->cmd);
    state_redis_close(&cl->sub);
    if (h2o_timeout_is_linked(&cl->tick))
        h2o_timeout_unlink(&cl->tick);
    h2o_timeout_dispose(cl->loop, &cl->tick_timeout);
    if (cl->st != NULL && cl->st->cluster == cl)
        cl->st->cluster = NULL;
    for (size_t i = 0; i < cl->nwatched; i++)
        free(cl->watched[i]);
    free(cl->watched);
    for (size_t i = 0; i < cl->nledgers; i++)
        free(cl->ledgers[i]);
    free(cl->ledgers);
    free(cl);
}

state_cluster_t *state_cluster_of(const state_t *st)
{
    return st != NULL ? st->cluster : NULL;
}

int state_cluster_up(const state_cluster_t *cl)
{
    /* an error reply holds decisions local for a moment (the tick ends it) */
    return cl != NULL && cl->link == STATE_LINK_UP && cl->refused_until_ms == 0;
}

uint32_t state_cluster_hosts(const state_cluster_t *cl)
{
    return cl != NULL && cl->hosts > 0 ? cl->hosts : 1;
}

const char *state_cluster_host(const state_cluster_t *cl)
{
    return cl != NULL ? cl->conf->host : "";
}

uint64_t state_cluster_commands(const state_cluster_t *cl)
{
    return cl != NULL ? cl->commands : 0;
}

sl_err_t state_cluster_counters_put(state_cluster_t *cl, unsigned slot)
{
    if (cl->commands == cl->commands_put && cl->errors == cl->errors_put)
        return SL_OK;
    char key[32];
    snprintf(key, sizeof(key), "cluster/%u", slot);
    state_counters_rec_t *rec = sl_xcalloc(1, sizeof(*rec));
    rec->n = 2;
    rec->v[0] = cl->commands;
    rec->v[1] = cl->errors;
    const char *keys[1] = {key};
    const state_counters_rec_t *recs[1] = {rec};
    sl_err_t err = state_counters_put(cl->st, keys, recs, 1);
    free(rec);
    if (err == SL_OK) {
        cl->commands_put = cl->commands;
        cl->errors_put = cl->errors;
    }
    return err;
}

/* Value idx of every worker's slot, summed. */
static uint64_t slots_sum(state_t *st, unsigned nworkers, unsigned idx)
{
    uint64_t sum = 0;
    state_counters_rec_t *rec = sl_xcalloc(1, sizeof(*rec));
    for (unsigned slot = 1; slot <= nworkers; slot++) {
        char key[32];
        snprintf(key, sizeof(key), "cluster/%u", slot);
        if (state_counters_get(st, key, rec) == SL_OK && rec->n > idx)
            sum += rec->v[idx];
    }
    free(rec);
    return sum;
}

uint64_t state_cluster_commands_sum(state_t *st, unsigned nworkers)
{
    return slots_sum(st, nworkers, 0);
}

uint64_t state_cluster_errors_sum(state_t *st, unsigned nworkers)
{
    return slots_sum(st, nworkers, 1);
}
