/* state/state_cluster_jobs.c: leased jobs, once per fleet (state_cluster.h).
 *
 * A job (an endpoint's probes, "<network>/<endpoint>") is done by the host
 * whose name is in its lease, "<prefix>lease:<job>" = "<host> <token>",
 * taken with SET NX PX (the token: INCR "<prefix>leasetok", a fencing token
 * that only grows) and extended by its holder with PEXPIRE after comparing
 * the holder (one script: the ask). "<prefix>leaseh:<job>" remembers the
 * last holder, so that the one host that takes a lease over can tell who
 * had it (the lease_moved event is logged once, by the taker).
 *
 * A host stopped with SIGTERM hands its leases back (the master, with
 * state_cluster_leases_release: a compare-and-delete) and says "r <job>
 * <host>", so the others ask at once.
 *
 * The holder publishes each result on the cluster channel ("p ..."); the
 * events worker of every other host hands it to pool/ (state_cluster_on_job),
 * which applies it to its host's copy of the endpoint record. Asynchronous,
 * on the worker's loop, as every cluster command. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sl_log.h"
#include "state/state_cluster_int.h"
#include "state/state_int.h"

typedef struct job_op {
    state_cluster_t *cl;
    state_cluster_job_fn fn;
    void *data;
    char job[STATE_KEY_MAX];
} job_op_t;

static uint64_t reply_u64(const redisReply *e)
{
    if (e->type == REDIS_REPLY_INTEGER)
        return e->integer > 0 ? (uint64_t)e->integer : 0;
    return e->type == REDIS_REPLY_STRING ? strtoull(e->str, NULL, 10) : 0;
}

static void reply_str(const redisReply *e, char *out, size_t cap)
{
    snprintf(out, cap, "%s", e->type == REDIS_REPLY_STRING ? e->str : "");
}

static void on_ask(void *data, redisReply *reply)
{
    job_op_t *op = data;
    state_cluster_t *cl = op->cl;
    if (cl->destroying) {
        free(op);
        return;
    }
    state_cluster_job_answer_t a;
    memset(&a, 0, sizeof(a));
    if (reply != NULL && reply->type == REDIS_REPLY_ERROR)
        state_cluster_link_failed(cl, reply->str);
    else if (reply != NULL && reply->type == REDIS_REPLY_ARRAY && reply->elements == 6) {
        a.ok = 1;
        a.held = reply_u64(reply->element[0]) == 1;
        reply_str(reply->element[1], a.holder, sizeof(a.holder));
        a.token = reply_u64(reply->element[2]);
        a.ttl_left_ms = reply_u64(reply->element[3]);
        a.acquired = reply_u64(reply->element[4]) == 1;
        reply_str(reply->element[5], a.prev, sizeof(a.prev));
    }
    op->fn(op->data, op->job, &a);
    free(op);
}

int state_cluster_job_ask(state_cluster_t *cl, const char *job, uint32_t ttl_ms, state_cluster_job_fn fn, void *data)
{
    if (cl == NULL || !state_cluster_up(cl) || strlen(job) >= STATE_KEY_MAX || ttl_ms == 0)
        return -1;
    char key[STATE_CLUSTER_PREFIX_MAX + STATE_KEY_MAX + 8], tok[STATE_CLUSTER_PREFIX_MAX + 16];
    char last[STATE_CLUSTER_PREFIX_MAX + STATE_KEY_MAX + 8], ttl[16];
    snprintf(key, sizeof(key), "%slease:%s", cl->conf->prefix, job);
    snprintf(tok, sizeof(tok), "%sleasetok", cl->conf->prefix);
    snprintf(last, sizeof(last), "%sleaseh:%s", cl->conf->prefix, job);
    snprintf(ttl, sizeof(ttl), "%" PRIu32, ttl_ms);
    const char *argv[] = {"EVALSHA", cl->sha[STATE_SCRIPT_JOBLEASE], "3", key, tok, last, cl->conf->host, ttl};
    size_t lens[sizeof(argv) / sizeof(argv[0])];
    for (size_t i = 0; i < sizeof(argv) / sizeof(argv[0]); i++)
        lens[i] = strlen(argv[i]);
    job_op_t *op = sl_xcalloc(1, sizeof(*op));
    op->cl = cl;
    op->fn = fn;
    op->data = data;
    snprintf(op->job, sizeof(op->job), "%s", job);
    if (state_redis_send(&cl->cmd, on_ask, op, (int)(sizeof(argv) / sizeof(argv[0])), argv, lens) != 0) {
        free(op);
        return -1;
    }
    return 0;
}

static void on_published(void *data, redisReply *reply)
{
    state_cluster_t *cl = data;
    if (!cl->destroying && reply != NULL && reply->type == REDIS_REPLY_ERROR)
        state_cluster_link_failed(cl, reply->str);
}

static const char *or_dash(const char *s)
{
    return s[0] != '\0' ? s : "-";
}

int state_cluster_job_publish(state_cluster_t *cl, const state_cluster_job_result_t *r)
{
    if (cl == NULL || !state_cluster_up(cl) || strchr(r->job, ' ') != NULL)
        return -1;
    char msg[STATE_KEY_MAX + STATE_CLUSTER_HOST_MAX + 400];
    int n = snprintf(msg, sizeof(msg),
                     "p %s %s %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu32 " %" PRIu32 " %" PRIu64 " %" PRIu64
                     " %" PRIu64 " %" PRIu64 " %s %s %s %" PRIu64,
                     r->job, cl->conf->host, r->token, r->head, r->head_at_ms, r->ewma_us, r->failures, r->safe,
                     r->finalized, r->chain_at_ms, r->hash_height, or_dash(r->head_hash), or_dash(r->head_parent),
                     or_dash(r->chain_id), r->chain_id_at_ms);
    if (n < 0 || (size_t)n >= sizeof(msg))
        return -1;
    const char *argv[] = {"PUBLISH", cl->channel, msg};
    size_t lens[] = {7, strlen(cl->channel), (size_t)n};
    return state_redis_send(&cl->cmd, on_published, cl, 3, argv, lens);
}

/* "p <job> <host> <token> <head> <head_at> <ewma> <failures> <safe>
 * <finalized> <chain_at> <hash_height> <hash|-> <parent|-> <chain id|->
 * <chain id at>" */
static int job_parse(const char *msg, size_t len, state_cluster_job_result_t *r)
{
    char text[STATE_KEY_MAX + STATE_CLUSTER_HOST_MAX + 400], fmt[160];
    if (len < 3 || len >= sizeof(text) || msg[0] != 'p' || msg[1] != ' ')
        return 0;
    memcpy(text, msg, len);
    text[len] = '\0';
    _Static_assert(sizeof(r->head_hash) == 67 && sizeof(r->host) == STATE_CLUSTER_HOST_MAX + 1 &&
                       sizeof(r->chain_id) == 48,
                   "widths below");
    snprintf(fmt, sizeof(fmt),
             "p %%%zus %%%ds %%" SCNu64 " %%" SCNu64 " %%" SCNu64 " %%" SCNu32 " %%" SCNu32 " %%" SCNu64
             " %%" SCNu64 " %%" SCNu64 " %%" SCNu64 " %%66s %%66s %%47s %%" SCNu64,
             (size_t)STATE_KEY_MAX - 1, STATE_CLUSTER_HOST_MAX);
    memset(r, 0, sizeof(*r));
    if (sscanf(text, fmt, r->job, r->host, &r->token, &r->head, &r->head_at_ms, &r->ewma_us, &r->failures, &r->safe,
               &r->finalized, &r->chain_at_ms, &r->hash_height, r->head_hash, r->head_parent, r->chain_id,
               &r->chain_id_at_ms) != 15)
        return 0;
    if (strcmp(r->chain_id, "-") == 0)
        r->chain_id[0] = '\0';
    if (strcmp(r->head_hash, "-") == 0)
        r->head_hash[0] = '\0';
    if (strcmp(r->head_parent, "-") == 0)
        r->head_parent[0] = '\0';
    return 1;
}

/* "r <job> <host>": the host stopped and handed the job's lease back. */
static int release_parse(const char *msg, size_t len, state_cluster_job_result_t *r)
{
    char text[STATE_KEY_MAX + STATE_CLUSTER_HOST_MAX + 8], fmt[32];
    if (len < 3 || len >= sizeof(text) || msg[0] != 'r' || msg[1] != ' ')
        return 0;
    memcpy(text, msg, len);
    text[len] = '\0';
    snprintf(fmt, sizeof(fmt), "r %%%zus %%%ds", (size_t)STATE_KEY_MAX - 1, STATE_CLUSTER_HOST_MAX);
    memset(r, 0, sizeof(*r));
    r->released = 1;
    return sscanf(text, fmt, r->job, r->host) == 2;
}

void state_cluster_job_message(state_cluster_t *cl, const char *msg, size_t len)
{
    state_cluster_job_result_t r;
    if (!cl->events_worker || cl->on_job == NULL || !(job_parse(msg, len, &r) || release_parse(msg, len, &r)) ||
        strcmp(r.host, cl->conf->host) == 0)
        return;
    cl->on_job(cl->on_job_data, &r);
}

void state_cluster_on_job(state_cluster_t *cl, state_cluster_job_result_fn fn, void *data)
{
    if (cl == NULL)
        return;
    cl->on_job = fn;
    cl->on_job_data = data;
}
