/* pool/pool_split.c: eth_getLogs range splitting (pool/pool_split.h).
 * Called by the handler (gw_handler.c) for the forwarded items of a request.
 *
 * The range. fromBlock..toBlock, each tag (latest, pending, safe, finalized,
 * earliest; a bound left out is latest) resolved from the network's chain
 * view first (pool_logs_resolve); a blockHash filter, a tag the view has no
 * number for, or from > to goes out whole as the client wrote it.
 *
 * The split size. A sub-call spans at most the largest max_logs_blocks
 * among the usable endpoints (pool_logs_blocks): the fewest sub-calls (each
 * costs credits), and the chain row's gate (pool_chain_call.c) keeps a
 * sub-call off an endpoint whose own max_logs_blocks is below its span
 * while one that takes it is open, so the wider endpoints serve the parts
 * and the narrower ones are the failover. The smallest limit would make
 * every endpoint usable for every part but multiply the calls by the ratio
 * of the limits; a refusal (below) covers an endpoint that takes less than
 * the others. When one usable endpoint has no limit (0), nothing is split
 * until a refusal says otherwise.
 *
 * The sub-calls. Each is its own pool call of one item ({"jsonrpc":"2.0",
 * "id":0,...} with the client's filter, only fromBlock and toBlock
 * replaced: policy_logsplit_params), so failover, credits per sub-call,
 * pressure and coalescing apply to each; at most POOL_SPLIT_INFLIGHT of
 * one request are in flight (a batch's members together, in order), and at most the network's max_logs_split
 * are ever sent for it (refusals and halvings included): a call planned
 * wider is refused with -32005 naming the limit before any is sent, with a
 * logs_split_refused event (at most one per network every 10 s per worker,
 * pool_logs_refused). An endpoint that refuses a range as too wide
 * (POLICY_VERDICT_F_LOGS_RANGE: its real limit is below its configured
 * one) sends the sub-call on to the next endpoint (pool/'s UNSUPPORTED);
 * when every endpoint refused, the range is halved here, within the same
 * total. An endpoint answering logs outside the range is a failed attempt
 * in pool/ (pool_chain_logs_off_range); each answer is checked again here
 * (policy_logsplit_check) before the merge (policy_logsplit_merge), which
 * writes the bytes one unlimited node would have sent. A sub-call that
 * fails fails the client's call with a JSON-RPC error naming the sub-range;
 * one answered with a node's own error (bad params) gives the client that
 * error.
 *
 * The caller pays for each sub-call. The plan is made first and sent only
 * by pool_split_start, once the request has charged its sub-calls to the
 * caller's limits and reserved its share of answer bytes for the jobs
 * (gw_exec.c); halves sent later are charged as they go (hooks->charge),
 * and a job whose caller is over its limit then ends with -32005
 * (reason "rate_limited"). The bytes of a job's sub-answers are counted as
 * they arrive: past hooks->max_bytes the job ends with -32005 (reason
 * "max_response_bytes"), its sub-calls stopped and their bytes freed, so a
 * merged answer is bounded as one upstream answer is. The merged answer carries id 0, spliced with the client's id by
 * gw_reply like any upstream answer. */
#include "pool/pool_split.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sl_buf.h"
#include "policy/blockref.h"
#include "policy/logsplit.h"
#include "policy/verdict.h"
#include "pool/pool_logs.h"

#define LEAD "{\"jsonrpc\":\"2.0\",\"id\":"
#define LEAD_LEN (sizeof(LEAD) - 1)
#define METHOD_NAME "eth_getLogs"

typedef enum part_state { PART_WAIT, PART_SENT, PART_DONE } part_state_t;

typedef struct job job_t;

typedef struct part {
    job_t *job;
    policy_logs_range_t r;
    pool_item_t item;             /* the sub-call's one item */
    pool_call_t *call;
    sl_buf_t req;                 /* the sub-call's bytes */
    part_state_t state;
    wire_span_t result;           /* DONE: the result array in item.answer */
} part_t;

struct job {
    pool_split_t *s;
    size_t k;                     /* the client's item: s->items[k] */
    policy_logs_range_t whole;
    uint8_t ranged;               /* whole is known (a numbered or resolved range) */
    uint8_t live;                 /* sub-calls running */
    part_t **parts;               /* in block order; room for max_split */
    size_t nparts;
    uint32_t issued, inflight;    /* sub-calls sent in all; in flight now */
    size_t bytes;                 /* of the results done, the merge's size less its brackets */
    sl_buf_t answer;              /* the client's answer once done */
};

struct pool_split {
    pool_network_t *net;
    uint32_t max_split;
    uint64_t owner;
    const pool_split_hooks_t *hooks;
    void *data;
    uint8_t started;              /* pool_split_start was called: parts may be sent */
    pool_item_t *items;           /* the handler's */
    job_t *jobs;                  /* one per eth_getLogs item */
    size_t njobs;
    pool_item_t *rest;            /* the items left for the request's call */
    size_t *rest_k;
    size_t nrest;
    size_t pending;               /* live jobs */
    size_t inflight;              /* sub-calls in flight, every job's: at most POOL_SPLIT_INFLIGHT */
    pool_attempt_rec_t trace[POOL_SPLIT_TRACE]; /* the sub-calls' attempts, as each ended (X-Sluice-Trace) */
    const char *trace_ids[POOL_SPLIT_TRACE];    /* ... the endpoint ids (the network's config's) */
    size_t ntrace;
    uint64_t credits;             /* billed for the sub-calls' attempts */
};

static int is_get_logs(const pool_item_t *it)
{
    return it->name != NULL && it->name_len == sizeof(METHOD_NAME) - 1 &&
           memcmp(it->name, METHOD_NAME, it->name_len) == 0 && it->params.len != 0;
}

/* One bound of the filter as a number: a number, or a tag from the view. */
static int bound(pool_network_t *net, const policy_blockref_t *b, uint64_t *n)
{
    if (b->kind == POLICY_BLOCKREF_NUMBER) {
        *n = b->number;
        return 1;
    }
    return b->kind == POLICY_BLOCKREF_TAG && pool_logs_resolve(net, b->tag, n) == SL_OK;
}

/* The item's range as numbers; 0 for a blockHash filter, a tag the view
 * cannot resolve, or params that do not read as a filter. */
static int range_of(pool_network_t *net, pool_item_t *it, policy_logs_range_t *r)
{
    const policy_blockref_call_t *ref = pool_item_blockref(it, pool_network_conf(net)->chain);
    if (ref == NULL || ref->at.kind == POLICY_BLOCKREF_HASH)
        return 0;
    return bound(net, &ref->from, &r->from) && bound(net, &ref->at, &r->to);
}

/* Makes job's answer the client's item's (id 0 at LEAD_LEN). The item
 * never went to pool/, so it is settled here, once. */
static void answer_item(job_t *j, policy_verdict_t v)
{
    pool_logs_answer(&j->s->items[j->k], v, j->answer.base, (uint32_t)j->answer.len, (wire_span_t){LEAD_LEN, 1});
}

/* The client's item answered with a JSON-RPC error of sluice's. */
static void answer_error(job_t *j, int code, const char *msg, const char *data)
{
    sl_buf_reset(&j->answer);
    sl_buf_append_str(&j->answer, LEAD "0,\"error\":{\"code\":");
    sl_buf_printf(&j->answer, "%d,\"message\":", code);
    sl_buf_append_json_str(&j->answer, msg, strlen(msg));
    if (data != NULL) {
        sl_buf_append_str(&j->answer, ",\"data\":");
        sl_buf_append_str(&j->answer, data);
    }
    sl_buf_append_str(&j->answer, "}}");
    answer_item(j, POLICY_VERDICT_DETERMINISTIC);
}

/* -32005 for a range that needs more than max_logs_split sub-calls of
 * blocks each; the event and the count. */
static void refuse(job_t *j, uint32_t blocks)
{
    pool_split_t *s = j->s;
    char msg[400], data[160];
    policy_logsplit_too_wide_message(msg, sizeof(msg), j->whole.from, j->whole.to, blocks, s->max_split);
    snprintf(data, sizeof(data),
             "{\"scope\":\"logs_split\",\"max_logs_split\":%" PRIu32 ",\"max_logs_blocks\":%" PRIu32 "}",
             s->max_split, blocks);
    answer_error(j, POLICY_LOGSPLIT_TOO_WIDE_CODE, msg, data);
    pool_logs_refused(s->net, j->whole.from, j->whole.to, blocks, s->max_split);
}

/* -32005 for a job whose caller's limits refused its next sub-calls. */
static void refuse_limited(job_t *j)
{
    char msg[200];
    snprintf(msg, sizeof(msg), "eth_getLogs was split into sub-calls, each charged to this caller's rate limit; "
             "the limit refused the next ones after %" PRIu32, j->issued);
    answer_error(j, -32005, msg, "{\"scope\":\"logs_split\",\"reason\":\"rate_limited\"}");
}

/* -32005 for a job whose sub-answers passed max_bytes. */
static void refuse_bytes(job_t *j)
{
    char msg[300], data[200];
    size_t limit = j->s->hooks->max_bytes;
    snprintf(msg, sizeof(msg), "eth_getLogs was split into sub-calls whose answers passed %zu bytes, the most one "
             "answer may have (server.max_response_bytes); ask for fewer blocks or a narrower filter", limit);
    snprintf(data, sizeof(data), "{\"scope\":\"logs_split\",\"reason\":\"max_response_bytes\",\"limit_bytes\":%zu,"
             "\"read_bytes\":%zu}", limit, j->bytes);
    answer_error(j, -32005, msg, data);
}

static part_t *part_new(job_t *j, policy_logs_range_t r)
{
    part_t *p = sl_xcalloc(1, sizeof(*p));
    p->job = j;
    p->r = r;
    j->issued++;
    return p;
}

static void part_free(part_t *p)
{
    pool_call_release(p->call); /* NULL: nothing */
    sl_buf_dispose(&p->req);
    free(p);
}

/* Builds p's request; 0 if the client's params cannot be rewritten. */
static int part_build(part_t *p)
{
    const pool_item_t *src = &p->job->s->items[p->job->k];
    size_t cap = src->params.len + POLICY_LOGSPLIT_PARAMS_EXTRA, len;
    sl_buf_append_str(&p->req, LEAD "0,\"method\":\"" METHOD_NAME "\",\"params\":");
    size_t at = p->req.len;
    sl_buf_reserve(&p->req, cap + 2);
    if (policy_logsplit_params(src->raw, src->params, p->r, p->req.base + at, cap, &len) != SL_OK)
        return 0;
    p->req.len = at + len;
    sl_buf_append_char(&p->req, '}');
    pool_item_t *it = &p->item;
    it->raw = p->req.base;
    it->raw_len = (uint32_t)p->req.len;
    it->id = (wire_span_t){LEAD_LEN, 1};
    it->params = (wire_span_t){(uint32_t)at, (uint32_t)len};
    it->method = src->method;
    it->name = src->name;
    it->name_len = src->name_len;
    return 1;
}

static void on_part_done(pool_call_t *call, void *data);

/* Starts waiting parts, in the order of the request's items and of their
 * blocks, while fewer than POOL_SPLIT_INFLIGHT of the request are in flight. */
static void pump(pool_split_t *s)
{
    if (!s->started)
        return;
    for (size_t k = 0; k < s->njobs && s->inflight < POOL_SPLIT_INFLIGHT; k++) {
        job_t *j = &s->jobs[k];
        for (size_t i = 0; j->live && i < j->nparts && s->inflight < POOL_SPLIT_INFLIGHT; i++) {
            part_t *p = j->parts[i];
            if (p->state != PART_WAIT)
                continue;
            p->state = PART_SENT;
            j->inflight++;
            s->inflight++;
            p->call = pool_call_start(s->net, &p->item, 1, 0, s->owner, on_part_done, p);
        }
    }
}

/* The job is over (answered): its sub-calls stop; the request hears of it
 * when it was the last, else the other jobs take the freed slots. */
static void job_end(job_t *j)
{
    pool_split_t *s = j->s;
    for (size_t i = 0; i < j->nparts; i++)
        part_free(j->parts[i]);
    j->nparts = 0;
    s->inflight -= j->inflight; /* stopped with their calls */
    j->inflight = 0;
    if (!j->live)
        return;
    j->live = 0;
    if (--s->pending == 0)
        s->hooks->done(s->data); /* the request may build its reply: s is not touched after it */
    else
        pump(s);
}

/* Splits the job into parts (a plan's ranges), sent now; 0 if the client's
 * params cannot be rewritten (then nothing changed). */
static int job_start(job_t *j, const policy_logs_range_t *ranges, size_t n)
{
    pool_split_t *s = j->s;
    if (j->parts == NULL)
        j->parts = sl_xcalloc(s->max_split + 1, sizeof(*j->parts));
    for (size_t i = 0; i < n; i++) {
        j->parts[i] = part_new(j, ranges[i]);
        if (!part_build(j->parts[i])) {
            j->nparts = i + 1;
            j->issued -= (uint32_t)(i + 1);
            job_end(j);
            return 0;
        }
    }
    j->nparts = n;
    j->live = 1;
    s->pending++;
    pool_logs_count(s->net, POOL_LOGS_SPLITS, 1);
    pump(s);
    return 1;
}

/* 1 if the answer is an error some vendor words as "range too large". */
static int refused_as_too_wide(pool_network_t *net, const pool_item_t *it)
{
    wire_envelope_t env;
    wire_rpc_error_t err;
    uint32_t ms;
    unsigned flags = 0;
    if (it->state != POOL_ITEM_ANSWERED || it->verdict == POLICY_VERDICT_SUCCESS ||
        wire_envelope_scan(it->answer, it->answer_len, &env) != SL_OK || env.error.len == 0 ||
        wire_envelope_error(it->answer, env.error, &err) != SL_OK)
        return 0;
    (void)policy_verdict_rpc_error_flags(pool_network_conf(net)->chain, it->method, 200, &err, it->answer, &ms, &flags);
    return (flags & POLICY_VERDICT_F_LOGS_RANGE) != 0;
}

/* Halves parts[i] (every endpoint refused its range as too wide): 1 if
 * the halves were sent, 0 if the job ended (one block, or past max_logs_split). */
static int halve(job_t *j, size_t i)
{
    part_t *p = j->parts[i];
    uint64_t span = p->r.to - p->r.from;
    if (span == 0 || j->issued + 2 > j->s->max_split) {
        uint32_t blocks = (uint32_t)((span + 2) / 2 > UINT32_MAX ? UINT32_MAX : (span + 2) / 2);
        refuse(j, blocks);
        job_end(j);
        return 0;
    }
    if (!j->s->hooks->charge(j->s->data, 2)) {
        refuse_limited(j);
        job_end(j);
        return 0;
    }
    uint64_t mid = p->r.from + span / 2;
    part_t *lo = part_new(j, (policy_logs_range_t){p->r.from, mid});
    part_t *hi = part_new(j, (policy_logs_range_t){mid + 1, p->r.to});
    if (!part_build(lo) || !part_build(hi)) { /* it was built once: cannot happen, but never half a range */
        part_free(lo);
        part_free(hi);
        answer_error(j, -32603, "eth_getLogs: the filter could not be split", NULL);
        job_end(j);
        return 0;
    }
    part_free(p);
    memmove(&j->parts[i + 2], &j->parts[i + 1], (j->nparts - i - 1) * sizeof(*j->parts));
    j->parts[i] = lo;
    j->parts[i + 1] = hi;
    j->nparts++;
    pool_logs_count(j->s->net, POOL_LOGS_SUBCALLS, 2);
    return 1;
}

/* The merge of every part's result: the client's answer. */
static void merge(job_t *j)
{
    policy_logsplit_part_t *parts = sl_xcalloc(j->nparts, sizeof(*parts));
    size_t size = 0, len = 0, at;
    for (size_t i = 0; i < j->nparts; i++)
        parts[i] = (policy_logsplit_part_t){j->parts[i]->item.answer, j->parts[i]->result};
    sl_buf_reset(&j->answer);
    sl_buf_append_str(&j->answer, LEAD "0,\"result\":");
    at = j->answer.len;
    int ok = policy_logsplit_merge_size(parts, j->nparts, &size) == SL_OK;
    if (ok) {
        sl_buf_reserve(&j->answer, size + 1);
        ok = policy_logsplit_merge(parts, j->nparts, j->answer.base + at, size, &len) == SL_OK;
    }
    free(parts);
    if (!ok) { /* each part was checked as an array of logs: cannot happen */
        answer_error(j, -32603, "eth_getLogs: the sub-range answers could not be merged", NULL);
        return;
    }
    j->answer.len = at + len;
    sl_buf_append_char(&j->answer, '}');
    answer_item(j, POLICY_VERDICT_SUCCESS);
}

/* A sub-call that did not give its logs: the client's call fails with it. */
static void part_failed(job_t *j, part_t *p)
{
    const pool_item_t *it = &p->item;
    char msg[300], data[200];
    if (it->state == POOL_ITEM_ANSWERED && it->verdict != POLICY_VERDICT_SUCCESS) {
        /* the node's own error for the client's filter: given as the node gave it */
        sl_buf_reset(&j->answer);
        sl_buf_append(&j->answer, it->answer, it->answer_len);
        pool_logs_answer(&j->s->items[j->k], it->verdict, j->answer.base, (uint32_t)j->answer.len, it->answer_id);
        return;
    }
    int limited = it->state == POOL_ITEM_FAILED && it->outcome == POOL_OUTCOME_RATE_LIMITED;
    snprintf(msg, sizeof(msg),
             "eth_getLogs was split into %zu sub-ranges; the one for blocks 0x%" PRIx64 " to 0x%" PRIx64 " %s",
             j->nparts, p->r.from, p->r.to,
             it->state == POOL_ITEM_ANSWERED ? "was answered with logs outside its range at every endpoint"
             : limited                       ? "was refused with a rate limit by every endpoint"
                                             : "failed at every endpoint");
    snprintf(data, sizeof(data),
             "{\"scope\":\"upstream\",\"outcome\":\"%s\",\"from\":\"0x%" PRIx64 "\",\"to\":\"0x%" PRIx64 "\"}",
             limited ? "rate_limited" : "upstream_error", p->r.from, p->r.to);
    answer_error(j, limited ? -32005 : -32603, msg, data);
}

/* Keeps the ended sub-call's attempts for the request's trace. */
static void note_trace(pool_split_t *s, const pool_call_t *call)
{
    size_t n;
    const pool_attempt_rec_t *log = pool_call_log(call, &n);
    for (size_t i = 0; i < n && s->ntrace < POOL_SPLIT_TRACE; i++) {
        s->trace_ids[s->ntrace] = pool_call_endpoint_id(call, log[i].endpoint);
        s->trace[s->ntrace++] = log[i];
    }
    s->credits += pool_call_credits(call);
}

const pool_attempt_rec_t *pool_split_trace(const pool_split_t *s, size_t *n, const char *const **ids,
                                           uint64_t *credits)
{
    *n = s != NULL ? s->ntrace : 0;
    *ids = s != NULL ? s->trace_ids : NULL;
    *credits = s != NULL ? s->credits : 0;
    return s != NULL ? s->trace : NULL;
}

static void on_part_done(pool_call_t *call, void *data)
{
    part_t *p = data;
    job_t *j = p->job;
    note_trace(j->s, call);
    pool_item_t *it = &p->item;
    wire_envelope_t env;
    j->inflight--;
    j->s->inflight--;
    if (it->state == POOL_ITEM_ANSWERED && it->verdict == POLICY_VERDICT_SUCCESS &&
        wire_envelope_scan(it->answer, it->answer_len, &env) == SL_OK && env.result.len != 0 &&
        policy_logsplit_check(it->answer, env.result, p->r) == SL_OK) {
        p->state = PART_DONE;
        p->result = env.result;
        j->bytes += env.result.len;
        if (j->bytes > j->s->hooks->max_bytes) {
            refuse_bytes(j);
            job_end(j);
            return;
        }
    } else if (refused_as_too_wide(j->s->net, it)) {
        size_t i = 0;
        while (j->parts[i] != p)
            i++;
        if (!halve(j, i))
            return;
    } else {
        part_failed(j, p);
        job_end(j);
        return;
    }
    for (size_t i = 0; i < j->nparts; i++)
        if (j->parts[i]->state != PART_DONE) {
            pump(j->s);
            return;
        }
    merge(j);
    job_end(j);
}

/* Plans item k: split (sub-calls started), refused, or left for the
 * request's call (0; ranged when a refusal may still split it). */
static int take_one(pool_split_t *s, job_t *j)
{
    uint32_t blocks = pool_logs_blocks(s->net);
    policy_logs_range_t *w = &j->whole;
    j->ranged = (uint8_t)(range_of(s->net, &s->items[j->k], w) && w->from <= w->to);
    if (!j->ranged || blocks == 0 || w->to - w->from < blocks)
        return 0; /* one call takes it (policy_logsplit_plan's ONE): the common case, no plan */
    policy_logs_range_t *ranges = sl_xcalloc(s->max_split, sizeof(*ranges));
    size_t n = 0;
    int taken = 1;
    switch (policy_logsplit_plan(w->from, w->to, blocks, s->max_split, ranges, s->max_split, &n)) {
    case POLICY_LOGSPLIT_SPLIT:
        taken = job_start(j, ranges, n);
        if (taken)
            pool_logs_count(s->net, POOL_LOGS_SUBCALLS, n);
        break;
    case POLICY_LOGSPLIT_TOO_WIDE:
        refuse(j, blocks);
        break;
    case POLICY_LOGSPLIT_ONE:
    case POLICY_LOGSPLIT_BACKWARDS:
        taken = 0;
        break;
    }
    free(ranges);
    return taken;
}

pool_split_t *pool_split_take(pool_network_t *net, pool_item_t *items, size_t n, uint64_t owner,
                                const pool_split_hooks_t *hooks, void *data)
{
    size_t nlogs = 0;
    if (pool_network_conf(net)->chain != POLICY_CHAIN_ETHEREUM)
        return NULL;
    for (size_t k = 0; k < n; k++)
        nlogs += is_get_logs(&items[k]);
    if (nlogs == 0)
        return NULL;
    pool_split_t *s = sl_xcalloc(1, sizeof(*s));
    *s = (pool_split_t){.net = net, .max_split = pool_network_conf(net)->max_logs_split, .owner = owner,
                         .hooks = hooks, .data = data, .items = items};
    if (s->max_split == 0)
        s->max_split = 1;
    s->jobs = sl_xcalloc(nlogs, sizeof(*s->jobs));
    s->rest = sl_xcalloc(n, sizeof(*s->rest));
    s->rest_k = sl_xcalloc(n, sizeof(*s->rest_k));
    for (size_t k = 0; k < n; k++) {
        if (is_get_logs(&items[k])) {
            job_t *j = &s->jobs[s->njobs++];
            j->s = s;
            j->k = k;
            if (take_one(s, j))
                continue;
        }
        s->rest[s->nrest] = items[k];
        s->rest_k[s->nrest++] = k;
    }
    return s;
}

uint32_t pool_split_planned(const pool_split_t *s, size_t *jobs)
{
    uint32_t more = 0;
    *jobs = 0;
    for (size_t i = 0; i < s->njobs; i++)
        if (s->jobs[i].live) {
            more += s->jobs[i].issued - 1;
            (*jobs)++;
        }
    return more;
}

void pool_split_start(pool_split_t *s)
{
    s->started = 1;
    pump(s);
}

pool_item_t *pool_split_rest(pool_split_t *s, size_t *n)
{
    *n = s->nrest;
    return s->rest;
}

int pool_split_settle(pool_split_t *s)
{
    for (size_t r = 0; r < s->nrest; r++)
        s->items[s->rest_k[r]] = s->rest[r];
    for (size_t i = 0; i < s->njobs; i++) {
        job_t *j = &s->jobs[i];
        const pool_item_t *it = &s->items[j->k];
        if (j->ranged && j->nparts == 0 && j->answer.len == 0 && j->whole.from < j->whole.to &&
            refused_as_too_wide(s->net, it)) {
            /* every endpoint refused it whole: in halves, the whole counted as sent */
            uint64_t mid = j->whole.from + (j->whole.to - j->whole.from) / 2;
            policy_logs_range_t halves[2] = {{j->whole.from, mid}, {mid + 1, j->whole.to}};
            j->issued = 1;
            if (s->max_split < 3)
                refuse(j, (uint32_t)((j->whole.to - j->whole.from + 2) / 2));
            else if (!s->hooks->charge(s->data, 2))
                refuse_limited(j);
            else if (job_start(j, halves, 2))
                pool_logs_count(s->net, POOL_LOGS_SUBCALLS, 2);
        }
    }
    return s->pending != 0;
}

int pool_split_pending(const pool_split_t *s)
{
    return s != NULL && s->pending != 0;
}

size_t pool_split_held(const pool_split_t *s)
{
    size_t n = 0;
    for (size_t i = 0; s != NULL && i < s->njobs; i++) {
        n += s->jobs[i].answer.len;
        for (size_t p = 0; p < s->jobs[i].nparts; p++)
            if (s->jobs[i].parts[p]->call != NULL)
                n += pool_call_held(s->jobs[i].parts[p]->call);
    }
    return n;
}

void pool_split_dispose(pool_split_t *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->njobs; i++) {
        job_t *j = &s->jobs[i];
        j->live = 0; /* no callback: the request is going */
        job_end(j);
        free(j->parts);
        sl_buf_dispose(&j->answer);
    }
    free(s->jobs);
    free(s->rest);
    free(s->rest_k);
    free(s);
}
