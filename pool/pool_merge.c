/* pool/pool_merge.c: confirmation polls of several clients as one upstream call.
 *
 * Confirmation dominates an engine's request budget: every transaction in
 * flight is polled until it resolves. Polls that arrive in this worker within
 * pressure.merge_window_ms of the first go upstream together:
 *   Solana getSignatureStatuses: one call with every client's signatures (at
 *     most 256, the node's limit); each client gets the shared context and its
 *     own statuses, in its own order, with its own id;
 *   Ethereum eth_getTransactionReceipt: one JSON-RPC batch (at most 100).
 * Only polls that could be merged without changing their meaning join: a
 * single call (never a member of a client's batch: that batch is already one
 * upstream call, answered together), with an id, well-formed params
 * (signatures that decode to 64 bytes; a 32-byte hash), the same options
 * object (Solana) and the same pinned endpoint (a poll of a transaction that
 * endpoint accepted goes only with others pinned there).
 * A merged call that fails fails each poll as a single call would have (its
 * outcome, Retry-After and attempt log); a Solana answer that cannot be split
 * (an error object, a wrong number of statuses) sends each poll on alone. A
 * poll whose client leaves or whose deadline passes drops out. */
#include <stdlib.h>
#include <string.h>

#include "base/sl_log.h"
#include "wire/json_scan.h"
#include "wire/txid.h"
#include "pool/pool_call_int.h"

#define MERGE_SOL_MAX_SIGS 256        /* getSignatureStatuses takes at most 256 */
#define MERGE_ETH_MAX_CALLS 100       /* a batch size every provider accepts */

typedef struct merge_slot {
    pool_call_t *call;            /* NULL once it left */
    wire_span_t list;             /* Solana: its signature array, in its item's raw bytes */
    uint32_t first, count;        /* its statuses in the merged answer */
    int item;                     /* Ethereum: its item in the carrier's batch, -1 if none */
} merge_slot_t;

typedef struct pool_merge {
    h2o_linklist_t link;          /* in net->merges */
    pool_network_t *net;
    int solana;
    int pinned;                   /* the endpoint every member is pinned to, or -1 */
    const char *opts;             /* Solana: the options object (in the first member's bytes), or NULL */
    uint32_t opts_len;
    merge_slot_t *slots;
    size_t n, cap, live;
    uint32_t nsigs;
    h2o_timeout_entry_t timer;
    pool_call_t *carrier;         /* sent: the merged call */
    pool_item_t *items;           /* its items */
    sl_buf_t body;                /* Solana: its request */
} pool_merge_t;

static void pool_merge_init(pool_network_t *net)
{
    h2o_linklist_init_anchor(&net->merges);
    h2o_timeout_init(net->pool->loop, &net->merge_timeout, net->conf->pressure.merge_window_ms);
}

static void merge_free(pool_merge_t *g)
{
    if (h2o_linklist_is_linked(&g->link))
        h2o_linklist_unlink(&g->link);
    if (h2o_timeout_is_linked(&g->timer))
        h2o_timeout_unlink(&g->timer);
    sl_buf_dispose(&g->body);
    free(g->items);
    free(g->slots);
    free(g);
}

static void pool_merge_dispose(pool_network_t *net)
{
    while (!h2o_linklist_is_empty(&net->merges)) {
        pool_merge_t *g = H2O_STRUCT_FROM_MEMBER(pool_merge_t, link, net->merges.next);
        for (size_t i = 0; i < g->n; i++)
            if (g->slots[i].call != NULL)
                g->slots[i].call->merge.group = NULL;
        if (g->carrier != NULL)
            pool_call_release(g->carrier);
        merge_free(g);
    }
    h2o_timeout_dispose(net->pool->loop, &net->merge_timeout);
}

/* ---- which polls may join ---- */

/* The params of it as [list] or [list, {options}]: spans relative to it->raw. */
static int poll_params(const pool_item_t *it, wire_span_t *list, wire_span_t *opts)
{
    wire_span_t params, p[3];
    size_t n = 0;
    if (!pool_item_params(it, &params) || wire_json_kind(it->raw, params) != WIRE_JSON_ARRAY)
        return 0;
    if (wire_envelope_scan_array(it->raw + params.off, params.len, p, 2, &n) != SL_OK || n < 1)
        return 0;
    *list = (wire_span_t){params.off + p[0].off, p[0].len};
    *opts = n == 2 ? (wire_span_t){params.off + p[1].off, p[1].len} : (wire_span_t){0, 0};
    return 1;
}

/* Solana: [[sig, ...]] or [[sig, ...], {options}], every sig base58 of 64 bytes. */
static uint32_t sol_signatures(const pool_item_t *it, wire_span_t *list, wire_span_t *opts)
{
    wire_span_t sigs[MERGE_SOL_MAX_SIGS];
    size_t n = 0;
    if (!poll_params(it, list, opts) || wire_json_kind(it->raw, *list) != WIRE_JSON_ARRAY ||
        (opts->len != 0 && wire_json_kind(it->raw, *opts) != WIRE_JSON_OBJECT))
        return 0;
    if (wire_envelope_scan_array(it->raw + list->off, list->len, sigs, MERGE_SOL_MAX_SIGS, &n) != SL_OK || n == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        wire_span_t s = {list->off + sigs[i].off, sigs[i].len};
        char text[96];
        uint8_t bytes[64];
        size_t len = 0;
        if (wire_json_kind(it->raw, s) != WIRE_JSON_STRING || wire_json_string(it->raw, s, text, sizeof(text)) != SL_OK ||
            wire_base58_decode(text, strlen(text), bytes, sizeof(bytes), &len) != SL_OK || len != 64)
            return 0;
    }
    return (uint32_t)n;
}

/* Ethereum: ["0x" + 64 hex digits]. */
static int eth_hash(const pool_item_t *it)
{
    wire_span_t list, opts;
    char text[80];
    if (!poll_params(it, &list, &opts) || opts.len != 0 || wire_json_kind(it->raw, list) != WIRE_JSON_STRING ||
        wire_json_string(it->raw, list, text, sizeof(text)) != SL_OK || strlen(text) != 66 || text[0] != '0' ||
        (text[1] != 'x' && text[1] != 'X'))
        return 0;
    return strspn(text + 2, "0123456789abcdefABCDEF") == 64;
}

/* ---- sending ---- */

static void on_timer(h2o_timeout_entry_t *entry);
static void on_carrier_done(pool_call_t *carrier, void *data);

static void solana_body(pool_merge_t *g)
{
    sl_buf_t *b = &g->body;
    sl_buf_append_str(b, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"getSignatureStatuses\",\"params\":[[");
    int first = 1;
    for (size_t i = 0; i < g->n; i++) {
        merge_slot_t *s = &g->slots[i];
        if (s->call == NULL)
            continue;
        const char *raw = s->call->items[0].raw;
        /* the list's elements as the client wrote them, between its brackets */
        if (!first)
            sl_buf_append_char(b, ',');
        sl_buf_append(b, raw + s->list.off + 1, s->list.len - 2);
        first = 0;
    }
    sl_buf_append_char(b, ']');
    if (g->opts != NULL) {
        sl_buf_append_char(b, ',');
        sl_buf_append(b, g->opts, g->opts_len);
    }
    sl_buf_append_str(b, "]}");
}

static const char sol_method[] = "getSignatureStatuses";
static const char eth_method[] = "eth_getTransactionReceipt";

/* Ethereum: the members' calls, copied (a client that leaves takes its
 * request's memory with it while the batch may still be retried). */
static size_t eth_items(pool_merge_t *g, const policy_method_t *method)
{
    size_t n = 0;
    uint32_t *offs = sl_xmalloc(g->live * sizeof(*offs));
    for (size_t i = 0; i < g->n; i++) {
        merge_slot_t *s = &g->slots[i];
        if (s->call == NULL)
            continue;
        const pool_item_t *src = &s->call->items[0];
        offs[n] = (uint32_t)g->body.len;
        sl_buf_append(&g->body, src->raw, src->raw_len);
        g->items[n] = (pool_item_t){.raw_len = src->raw_len, .id = src->id, .method = method,
                                    .cheap = method->cheap, .name = eth_method,
                                    .name_len = sizeof(eth_method) - 1};
        s->item = (int)n++;
    }
    for (size_t k = 0; k < n; k++)
        g->items[k].raw = g->body.base + offs[k];
    free(offs);
    return n;
}

/* Sends the merge: alone when one poll is left, else as one call. */
static void merge_send(pool_merge_t *g)
{
    pool_network_t *net = g->net;
    if (h2o_linklist_is_linked(&g->link))
        h2o_linklist_unlink(&g->link);
    if (h2o_timeout_is_linked(&g->timer))
        h2o_timeout_unlink(&g->timer);
    const policy_method_t *method = NULL;
    uint32_t at = 0;
    for (size_t i = 0; i < g->n; i++) {
        merge_slot_t *s = &g->slots[i];
        s->item = -1;
        if (s->call == NULL)
            continue;
        method = s->call->items[0].method;
        s->first = at;
        at += s->count;
    }
    g->nsigs = at;
    if (g->live <= 1) {
        for (size_t i = 0; i < g->n; i++)
            if (g->slots[i].call != NULL) {
                pool_call_t *call = g->slots[i].call;
                call->merge.group = NULL;
                pool_call_resume(call);
            }
        merge_free(g);
        return;
    }
    size_t nitems = 1;
    g->items = sl_xcalloc(g->solana ? 1 : g->live, sizeof(*g->items));
    if (g->solana) {
        solana_body(g);
        g->items[0] = (pool_item_t){.raw = g->body.base, .raw_len = (uint32_t)g->body.len,
                                    .id = {sizeof("{\"jsonrpc\":\"2.0\",\"id\":") - 1, 1}, .method = method,
                                    .cheap = method->cheap, .name = sol_method, .name_len = sizeof(sol_method) - 1};
    } else {
        nitems = eth_items(g, method);
    }
    net->pressure.polls_merged += g->live;
    net->pressure.calls_saved += g->live - 1;
    /* kept in the list while in flight, so pool_merge_dispose finds it */
    h2o_linklist_insert(&net->merges, &g->link);
    g->carrier = pool_call_start_carrier(net, g->items, nitems, !g->solana, g->pinned, on_carrier_done, g);
}

static void on_timer(h2o_timeout_entry_t *entry)
{
    pool_merge_t *g = H2O_STRUCT_FROM_MEMBER(pool_merge_t, timer, entry);
    merge_send(g);
}

/* The merge this poll may join (same kind, pin and options, room left);
 * one that matches but is full is sent now. NULL: start a new one. */
static pool_merge_t *find_merge(pool_network_t *net, pool_call_t *call, const char *opts, uint32_t opts_len,
                                uint32_t nsigs)
{
    for (h2o_linklist_t *l = net->merges.next; l != &net->merges; l = l->next) {
        pool_merge_t *g = H2O_STRUCT_FROM_MEMBER(pool_merge_t, link, l);
        if (g->carrier != NULL || g->pinned != call->pinned || g->opts_len != opts_len ||
            (opts_len != 0 && memcmp(g->opts, opts, opts_len) != 0))
            continue;
        int room = g->solana ? g->nsigs + nsigs <= MERGE_SOL_MAX_SIGS : g->n < MERGE_ETH_MAX_CALLS;
        if (room)
            return g;
        merge_send(g);
        return NULL;
    }
    return NULL;
}

int pool_merge_offer(pool_call_t *call)
{
    pool_network_t *net = call->net;
    const policy_pressure_conf_t *conf = &net->conf->pressure;
    if (!conf->enabled || conf->merge_window_ms == 0 || call->batch || call->nitems != 1 || call->carrier)
        return 0;
    const pool_item_t *it = &call->items[0];
    if (it->id.len == 0 || it->method->cls != POLICY_CLASS_CONFIRM || it->name == NULL)
        return 0;
    int solana = net->conf->chain == POLICY_CHAIN_SOLANA;
    wire_span_t list = {0, 0}, opts = {0, 0};
    uint32_t nsigs = 1;
    if (solana) {
        if (it->name_len != sizeof(sol_method) - 1 || memcmp(it->name, sol_method, it->name_len) != 0 ||
            (nsigs = sol_signatures(it, &list, &opts)) == 0)
            return 0;
    } else if (it->name_len != sizeof(eth_method) - 1 || memcmp(it->name, eth_method, it->name_len) != 0 ||
               !eth_hash(it)) {
        return 0;
    }
    if (solana && nsigs >= MERGE_SOL_MAX_SIGS)
        return 0; /* full alone: nothing to merge it with (a merge sent with one member would resume it) */
    const char *o = opts.len ? it->raw + opts.off : NULL;
    pool_merge_t *g = find_merge(net, call, o, opts.len, nsigs);
    if (g == NULL) {
        g = sl_xcalloc(1, sizeof(*g));
        g->net = net;
        g->solana = solana;
        g->pinned = call->pinned;
        g->opts = o;
        g->opts_len = opts.len;
        g->timer.cb = on_timer;
        h2o_linklist_insert(&net->merges, &g->link);
        h2o_timeout_link(net->pool->loop, &net->merge_timeout, &g->timer);
    }
    if (g->n == g->cap) {
        g->cap = g->cap ? g->cap * 2 : 8;
        g->slots = sl_xrealloc(g->slots, g->cap * sizeof(*g->slots));
    }
    g->slots[g->n] = (merge_slot_t){call, list, 0, nsigs, -1};
    call->merge.group = g;
    call->merge.index = (uint32_t)g->n++;
    g->live++;
    g->nsigs += nsigs;
    if (g->solana ? g->nsigs >= MERGE_SOL_MAX_SIGS : g->n >= MERGE_ETH_MAX_CALLS)
        merge_send(g);
    return 1;
}

void pool_merge_leave(pool_call_t *call)
{
    pool_merge_t *g = call->merge.group;
    if (g == NULL)
        return;
    merge_slot_t *s = &g->slots[call->merge.index];
    s->call = NULL;
    call->merge.group = NULL;
    g->live--;
    /* the options bytes live in the first member's body: a merge that lost
     * them re-points to another member's identical bytes */
    if (g->opts != NULL && g->opts >= call->items[0].raw && g->opts < call->items[0].raw + call->items[0].raw_len) {
        g->opts = NULL;
        for (size_t i = 0; i < g->n && g->opts == NULL; i++)
            if (g->slots[i].call != NULL) {
                wire_span_t list, opts;
                if (poll_params(&g->slots[i].call->items[0], &list, &opts) && opts.len == g->opts_len)
                    g->opts = g->slots[i].call->items[0].raw + opts.off;
            }
    }
    if (g->carrier == NULL && g->live == 0)
        merge_free(g);
}

/* ---- answering ---- */

/* The member's item gets what the carrier's item got: a copy of its answer
 * (the member's id is spliced in by the gateway, as for any answer), or its
 * failure. */
static void copy_item(pool_call_t *member, const pool_item_t *from)
{
    const char *answer = NULL;
    if (from->state == POOL_ITEM_ANSWERED) {
        sl_buf_t b = SL_BUF_INIT;
        sl_buf_append(&b, from->answer, from->answer_len);
        answer = pool_call_keep(member, &b);
    }
    pool_item_answer_copy(&member->items[0], from, answer);
}

/* The "context" and "value" members of a getSignatureStatuses result, and
 * the statuses in value (n of them). Spans relative to answer. */
static int sol_split(const char *answer, uint32_t len, wire_span_t *ctx, wire_span_t **statuses, size_t want)
{
    wire_envelope_t env;
    if (wire_envelope_scan(answer, len, &env) != SL_OK || wire_json_kind(answer, env.result) != WIRE_JSON_OBJECT)
        return 0;
    *ctx = wire_json_member(answer, env.result, "context");
    wire_span_t value = wire_json_member(answer, env.result, "value");
    if (ctx->len == 0 || wire_json_kind(answer, value) != WIRE_JSON_ARRAY)
        return 0;
    size_t n = 0;
    *statuses = sl_xmalloc((want + 1) * sizeof(**statuses));
    if (wire_envelope_scan_array(answer + value.off, value.len, *statuses, want, &n) != SL_OK || n != want) {
        free(*statuses);
        *statuses = NULL;
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        (*statuses)[i].off += value.off;
    return 1;
}

/* {"jsonrpc":"2.0","result":{"context":C,"value":[its statuses]},"id":ID} */
static void sol_answer(pool_call_t *member, const merge_slot_t *s, const char *answer, wire_span_t ctx,
                       const wire_span_t *statuses, int endpoint)
{
    pool_item_t *it = &member->items[0];
    sl_buf_t b = SL_BUF_INIT;
    sl_buf_append_str(&b, "{\"jsonrpc\":\"2.0\",\"result\":{\"context\":");
    sl_buf_append(&b, answer + ctx.off, ctx.len);
    sl_buf_append_str(&b, ",\"value\":[");
    for (uint32_t k = 0; k < s->count; k++) {
        if (k)
            sl_buf_append_char(&b, ',');
        sl_buf_append(&b, answer + statuses[s->first + k].off, statuses[s->first + k].len);
    }
    sl_buf_append_str(&b, "]},\"id\":");
    uint32_t id_off = (uint32_t)b.len;
    sl_buf_append(&b, it->raw + it->id.off, it->id.len); /* its own id, byte for byte */
    sl_buf_append_char(&b, '}');
    uint32_t len = (uint32_t)b.len;
    pool_item_answer_set(it, &(pool_item_answer_t){.verdict = POLICY_VERDICT_SUCCESS,
                                                    .answer = pool_call_keep(member, &b),
                                                    .answer_len = len,
                                                    .answer_id = {id_off, it->id.len},
                                                    .endpoint = (int16_t)endpoint});
}

static void on_carrier_done(pool_call_t *carrier, void *data)
{
    pool_merge_t *g = data;
    const pool_item_t *ci = &carrier->items[0];
    wire_span_t ctx = {0, 0}, *statuses = NULL;
    int split = 0, alone = 0;
    if (g->solana && ci->state == POOL_ITEM_ANSWERED) {
        split = ci->verdict == POLICY_VERDICT_SUCCESS && sol_split(ci->answer, ci->answer_len, &ctx, &statuses, g->nsigs);
        /* an answer that does not split (an error object, a short list)
         * may be one poll's doing: each goes on alone */
        alone = !split;
    }
    if (alone)
        sl_log_debug("network %s: a merged getSignatureStatuses did not split; the polls go on alone",
                     g->net->conf->name);
    for (size_t i = 0; i < g->n; i++) {
        pool_call_t *m = g->slots[i].call;
        if (m == NULL)
            continue;
        g->slots[i].call = NULL;
        m->merge.group = NULL;
        if (alone) {
            pool_call_resume(m);
            continue;
        }
        memcpy(m->log, carrier->log, carrier->nlog * sizeof(carrier->log[0]));
        m->nlog = carrier->nlog;
        m->attempts = carrier->attempts;
        if (split)
            sol_answer(m, &g->slots[i], ci->answer, ctx, statuses, ci->endpoint);
        else
            copy_item(m, g->solana ? ci : &carrier->items[g->slots[i].item]);
        pool_call_finish(m);
    }
    free(statuses);
    pool_call_release(carrier);
    merge_free(g);
}

static void row_stop(pool_call_t *call, pool_call_stop_t why)
{
    if (why != POOL_CALL_FINISHED)
        pool_merge_leave(call); /* cancelled, or its deadline ran out */
}

const pool_call_row_t pool_merge_row = {
    .name = "merge",
    .offer = pool_merge_offer,
    .stop = row_stop,
    .net_init = pool_merge_init,
    .net_dispose = pool_merge_dispose,
};
