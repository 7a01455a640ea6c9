/* pool/pool_lease.c: the probes of an endpoint, once per fleet (cluster:).
 *
 * An endpoint's health probe and chain probe are one leased job, keyed by
 * its record's key ("<network>/<endpoint>"). Its lease is asked of Redis
 * (state_cluster_job_ask) by one worker of each host at a time: the one that
 * moves lease_ask_ms forward in the host's record (as the probes are
 * claimed); the answer (holder, token, until when) goes into that record,
 * which every worker of the host reads at its tick. policy/joblease.h then
 * says who probes: the holder's host (as today, one worker of it, by the
 * probes' own claims), nobody on the other hosts (their events worker
 * applies the holder's published results to their record, as if they had
 * probed: head, latency, failures in a row, safe/finalized and the latest
 * block's hashes), every host for itself while Redis is away (degraded:
 * counted, STATE_PART_LEASES). The breaker's half-open probe is not leased:
 * it is claimed across the cluster already. The host that takes a lease
 * over logs lease_moved (one event for the fleet). */
#include <string.h>

#include "base/sl_log.h"
#include "base/sl_time.h"
#include "policy/joblease.h"
#include "pool/pool_net.h"
#include "state/state_cluster.h"

static state_cluster_t *cluster_of(const pool_endpoint_t *ep)
{
    state_t *st = ep->net->pool->state;
    return st != NULL ? state_cluster_of(st) : NULL;
}

static uint32_t ttl_of(const pool_endpoint_t *ep)
{
    const pool_network_conf_t *conf = ep->net->conf;
    return policy_joblease_ttl_ms(conf->ranking.probe_interval_ms, conf->chain_probe_ms);
}

policy_joblease_role_t pool_lease_role(const pool_endpoint_t *ep, uint64_t now_ms)
{
    state_cluster_t *cl = cluster_of(ep);
    const state_endpoint_rec_t *r = &ep->health.shared;
    policy_joblease_view_t v = {.cluster = cl != NULL && ttl_of(ep) != 0,
                                .redis_up = (uint8_t)state_cluster_up(cl),
                                .me = cl != NULL ? state_cluster_host(cl) : "",
                                .holder = r->lease_holder,
                                .until_ms = r->lease_until_ms};
    return policy_joblease_role(&v, now_ms);
}

int pool_lease_does_job(const pool_endpoint_t *ep, uint64_t now_ms)
{
    return policy_joblease_does_job(pool_lease_role(ep, now_ms));
}

void pool_lease_claimed(pool_endpoint_t *ep, uint64_t now_ms)
{
    if (pool_lease_role(ep, now_ms) == POLICY_JOBLEASE_LOCAL)
        state_degraded_count(ep->net->pool->state, STATE_PART_LEASES, 1);
}

void pool_lease_publish(pool_endpoint_t *ep, const state_endpoint_rec_t *rec, uint64_t now_ms)
{
    if (pool_lease_role(ep, now_ms) != POLICY_JOBLEASE_HOLDER)
        return;
    state_cluster_job_result_t r;
    memset(&r, 0, sizeof(r));
    snprintf(r.job, sizeof(r.job), "%s", ep->health.key);
    r.token = rec->lease_token;
    r.head = rec->head;
    r.head_at_ms = rec->head_at_ms;
    r.ewma_us = rec->probe_ewma_us;
    r.failures = rec->probe_failures;
    r.safe = rec->safe;
    r.finalized = rec->finalized;
    r.chain_at_ms = rec->chain_at_ms;
    r.hash_height = rec->hash_height;
    memcpy(r.head_hash, rec->head_hash, sizeof(r.head_hash));
    memcpy(r.head_parent, rec->head_parent, sizeof(r.head_parent));
    _Static_assert(sizeof(r.chain_id) == sizeof(rec->lease_chain_id), "the chain heard, both ways");
    memcpy(r.chain_id, rec->lease_chain_id, sizeof(r.chain_id));
    r.chain_id_at_ms = rec->lease_chain_at_ms;
    (void)state_cluster_job_publish(cluster_of(ep), &r);
}

static int heard_cb(void *arg, state_endpoint_rec_t *rec, int exists, state_event_t *events, size_t *nevents)
{
    const state_endpoint_rec_t *w = arg;
    (void)exists;
    (void)events;
    (void)nevents;
    memcpy(rec->lease_chain_id, w->lease_chain_id, sizeof(rec->lease_chain_id));
    rec->lease_chain_at_ms = w->lease_chain_at_ms;
    return 1;
}

void pool_lease_chain_heard(pool_endpoint_t *ep, const char *id, uint64_t now_ms)
{
    if (pool_lease_role(ep, now_ms) != POLICY_JOBLEASE_HOLDER)
        return;
    state_endpoint_rec_t w, out;
    snprintf(w.lease_chain_id, sizeof(w.lease_chain_id), "%s", id);
    w.lease_chain_at_ms = now_ms;
    int changed = 0;
    if (state_endpoint_update_local(ep->net->pool->state, ep->health.key, heard_cb, &w, &changed, &out) != SL_OK ||
        !changed)
        return;
    ep->health.shared = out;
    ep->id_fed_at = out.lease_chain_at_ms; /* judged here already */
    pool_lease_publish(ep, &out, now_ms);
}

static pool_endpoint_t *find(pool_t *pool, const char *key)
{
    for (size_t k = 0; k < pool->nnetworks; k++)
        for (size_t i = 0; i < pool->networks[k].nendpoints; i++)
            if (strcmp(pool->networks[k].endpoints[i].health.key, key) == 0)
                return &pool->networks[k].endpoints[i];
    return NULL;
}

/* ---- the answer to an ask ---- */
typedef struct answer_ctx {
    pool_endpoint_t *ep;
    const state_cluster_job_answer_t *a;
    uint64_t now;
    uint32_t ttl;
    const char *me;
    state_endpoint_rec_t result;
} answer_ctx_t;

static int answer_cb(void *arg, state_endpoint_rec_t *rec, int exists, state_event_t *events, size_t *nevents)
{
    answer_ctx_t *c = arg;
    const state_cluster_job_answer_t *a = c->a;
    (void)exists;
    policy_joblease_role_t role = a->held ? POLICY_JOBLEASE_HOLDER : POLICY_JOBLEASE_FOLLOWER;
    if (a->holder[0] == '\0')
        role = POLICY_JOBLEASE_PENDING; /* lapsed between two commands of Redis': asked again soon */
    snprintf(rec->lease_holder, sizeof(rec->lease_holder), "%s", a->holder);
    rec->lease_token = a->token;
    rec->lease_until_ms = c->now + a->ttl_left_ms;
    rec->lease_ask_ms = policy_joblease_next_ask_ms(role, rec->lease_until_ms, c->ttl, c->now);
    if (a->acquired && strcmp(a->prev, c->me) != 0 && *nevents < STATE_MAX_TXN_EVENTS) {
        state_event_t *ev = &events[(*nevents)++];
        state_event_init(ev, STATE_EVENT_LEASE_MOVED, c->ep->net->conf->name, c->ep->conf->id, c->now);
        ev->count = a->token;
        snprintf(ev->reason, sizeof(ev->reason), "probes of %s leased by %s (was %s), token %llu, ttl %u ms",
                 c->ep->health.key, a->holder, a->prev[0] != '\0' ? a->prev : "nobody",
                 (unsigned long long)a->token, c->ttl);
    }
    c->result = *rec;
    return 1;
}

static void on_answer(void *data, const char *job, const state_cluster_job_answer_t *a)
{
    pool_t *pool = data;
    pool_endpoint_t *ep = find(pool, job);
    state_cluster_t *cl = pool->state != NULL ? state_cluster_of(pool->state) : NULL;
    if (ep == NULL || cl == NULL || !a->ok)
        return; /* no answer: asked again at the lease_ask_ms claimed */
    answer_ctx_t c = {ep, a, sl_shared_ms(), ttl_of(ep), state_cluster_host(cl), {0}};
    int changed = 0;
    state_endpoint_rec_t rec;
    if (state_endpoint_update_local(pool->state, ep->health.key, answer_cb, &c, &changed, &rec) == SL_OK && changed)
        ep->health.shared = rec;
    if (a->acquired && strcmp(a->prev, c.me) != 0)
        sl_log_info("endpoint %s: this host now probes for the cluster (lease token %llu, was %s)", job,
                    (unsigned long long)a->token, a->prev[0] != '\0' ? a->prev : "nobody");
}

typedef struct ask_claim {
    uint64_t now;
    uint32_t retry_ms;
} ask_claim_t;

static int ask_claim_cb(void *arg, state_endpoint_rec_t *rec, int exists, state_event_t *events, size_t *nevents)
{
    ask_claim_t *c = arg;
    (void)exists;
    (void)events;
    (void)nevents;
    if (rec->lease_ask_ms > c->now)
        return 0;
    rec->lease_ask_ms = c->now + c->retry_ms; /* the answer sets the real next ask */
    return 1;
}

static void ask_tick(pool_endpoint_t *ep, state_cluster_t *cl, uint64_t now)
{
    uint32_t ttl = ttl_of(ep);
    if (ttl == 0 || now < ep->health.shared.lease_ask_ms)
        return;
    ask_claim_t c = {now, ttl / 3};
    int changed = 0;
    state_endpoint_rec_t rec;
    if (state_endpoint_update_local(ep->net->pool->state, ep->health.key, ask_claim_cb, &c, &changed, &rec) != SL_OK ||
        !changed)
        return;
    ep->health.shared = rec;
    (void)state_cluster_job_ask(cl, ep->health.key, ttl, on_answer, ep->net->pool);
}

/* ---- another host's result ---- */
typedef struct apply_ctx {
    const state_cluster_job_result_t *r;
    uint64_t now;
} apply_ctx_t;

static int apply_cb(void *arg, state_endpoint_rec_t *rec, int exists, state_event_t *events, size_t *nevents)
{
    apply_ctx_t *c = arg;
    const state_cluster_job_result_t *r = c->r;
    (void)exists;
    (void)events;
    (void)nevents;
    if (r->token < rec->lease_token)
        return 0; /* fenced: a holder older than the one this host heard of */
    if (r->token > rec->lease_token || strcmp(rec->lease_holder, r->host) != 0) {
        snprintf(rec->lease_holder, sizeof(rec->lease_holder), "%s", r->host);
        rec->lease_token = r->token;
    }
    if (r->head != 0 && r->head_at_ms != 0)
        (void)pool_chain_head_write(rec, r->head, 1, c->now); /* probed just now, by the holder */
    rec->probe_ewma_us = r->ewma_us;
    rec->probe_failures = r->failures;
    if (r->chain_at_ms != 0 && r->chain_at_ms != rec->chain_at_ms) {
        rec->safe = r->safe;
        rec->finalized = r->finalized;
        rec->chain_at_ms = r->chain_at_ms;
        rec->hash_height = r->hash_height;
        memcpy(rec->head_hash, r->head_hash, sizeof(rec->head_hash));
        memcpy(rec->head_parent, r->head_parent, sizeof(rec->head_parent));
    }
    if (r->chain_id_at_ms != rec->lease_chain_at_ms && r->chain_id[0] != '\0') {
        memcpy(rec->lease_chain_id, r->chain_id, sizeof(rec->lease_chain_id));
        rec->lease_chain_at_ms = r->chain_id_at_ms;
    }
    return 1;
}

/* The holder stopped and handed the lease back: this host asks at once (the
 * first worker to claim the ask), instead of when the lease would lapse. */
static int released_cb(void *arg, state_endpoint_rec_t *rec, int exists, state_event_t *events, size_t *nevents)
{
    const state_cluster_job_result_t *r = arg;
    (void)exists;
    (void)events;
    (void)nevents;
    if (strcmp(rec->lease_holder, r->host) != 0)
        return 0; /* another host took it already: as that one's answer says */
    rec->lease_until_ms = 0;
    rec->lease_ask_ms = 0;
    return 1;
}

static void on_result(void *data, const state_cluster_job_result_t *r)
{
    pool_t *pool = data;
    pool_endpoint_t *ep = find(pool, r->job);
    if (ep == NULL)
        return;
    apply_ctx_t c = {r, sl_shared_ms()};
    int changed = 0;
    state_endpoint_rec_t rec;
    sl_err_t err = r->released
                       ? state_endpoint_update_local(pool->state, ep->health.key, released_cb, (void *)r, &changed, &rec)
                       : state_endpoint_update_local(pool->state, ep->health.key, apply_cb, &c, &changed, &rec);
    if (err == SL_OK && changed)
        ep->health.shared = rec;
}

void pool_lease_tick(pool_t *pool, uint64_t now_ms)
{
    state_cluster_t *cl = pool->state != NULL ? state_cluster_of(pool->state) : NULL;
    if (cl == NULL)
        return;
    if (pool->slot == 1)
        state_cluster_on_job(cl, on_result, pool); /* the events worker hands the results on */
    int up = state_cluster_up(cl), leased = 0;
    for (size_t k = 0; k < pool->nnetworks; k++)
        for (size_t i = 0; i < pool->networks[k].nendpoints; i++) {
            pool_endpoint_t *ep = &pool->networks[k].endpoints[i];
            leased |= ttl_of(ep) != 0;
            if (up)
                ask_tick(ep, cl, now_ms);
        }
    if (leased && pool->slot == 1) /* one state_degraded / state_restored pair per host */
        state_degraded_note(pool->state, STATE_PART_LEASES, up ? SL_OK : SL_ERR_IO, now_ms);
}
