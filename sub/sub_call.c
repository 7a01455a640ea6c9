/* sub/sub_call.c: a subscription source's upstream call through the
 * pool (sub_call.h). */
#include "sub/sub_call.h"

#include <string.h>

#define HEAD_ID "{\"jsonrpc\":\"2.0\",\"id\":"
#define LEAD HEAD_ID "1,\"method\":"

void sub_call_init(sub_call_t *c)
{
    memset(c, 0, sizeof(*c));
}

void sub_call_dispose(sub_call_t *c)
{
    for (size_t k = 0; k < 2; k++) {
        pool_call_release(c->slot[k].call);
        c->slot[k].call = NULL;
        for (size_t i = 0; i < c->slot[k].cap; i++)
            sl_buf_dispose(&c->slot[k].body[i]);
        free(c->slot[k].items);
        free(c->slot[k].body);
        c->slot[k].items = NULL;
        c->slot[k].body = NULL;
        c->slot[k].cap = 0;
    }
    pool_call_release(c->stale);
    c->stale = NULL;
}

static void on_done(pool_call_t *call, void *data)
{
    sub_call_t *c = data;
    (void)call;
    c->done = 1; /* the answers stay until the next start */
    c->in_cb = 1;
    c->cb(c, c->data);
    c->in_cb = 0;
    pool_call_release(c->stale); /* a call started from the callback took the other slot */
    c->stale = NULL;
}

/* One item: {"jsonrpc":"2.0","id":1,"method":"<m>","params":<p>} */
static void fill_item(sub_call_slot_t *sl, size_t i, const gw_net_t *net, const char *method, const char *params)
{
    sl_buf_t *b = &sl->body[i];
    sl_buf_reset(b);
    sl_buf_append_str(b, LEAD);
    sl_buf_append_json_str(b, method, strlen(method));
    sl_buf_append_str(b, ",\"params\":");
    size_t at = b->len;
    sl_buf_append_str(b, params);
    size_t plen = b->len - at;
    sl_buf_append_char(b, '}');
    pool_item_t *it = &sl->items[i];
    memset(it, 0, sizeof(*it));
    it->raw = b->base;
    it->raw_len = (uint32_t)b->len;
    it->id = (wire_span_t){(uint32_t)(sizeof(HEAD_ID) - 1), 1};
    it->params = (wire_span_t){(uint32_t)at, (uint32_t)plen};
    it->name = method;
    it->name_len = (uint32_t)strlen(method);
    it->method = policy_method_lookup_in(net->conf->method_overrides, net->conf->nmethod_overrides, net->conf->chain,
                                         method, it->name_len);
    it->endpoint = -1;
    /* a source follows the chain as it is now: "latest", and a height a reorg may have replaced,
     * are never answered from the response cache */
    it->no_cache = 1;
}

void sub_call_start(sub_call_t *c, gw_net_t *net, size_t n, const char *const *methods,
                       const char *const *params, sub_call_cb cb, void *data)
{
    if (c->in_cb) { /* the call whose callback runs is freed once it returns */
        pool_call_release(c->stale);
        c->stale = c->slot[c->cur].call;
        c->slot[c->cur].call = NULL;
        c->cur ^= 1;
    }
    sub_call_slot_t *sl = &c->slot[c->cur];
    pool_call_release(sl->call);
    sl->call = NULL;
    if (n > SUB_CALL_MAX)
        n = SUB_CALL_MAX;
    if (sl->cap < n) { /* grown only while the slot holds no call */
        sl->items = sl_xrealloc(sl->items, n * sizeof(*sl->items));
        sl->body = sl_xrealloc(sl->body, n * sizeof(*sl->body));
        for (size_t i = sl->cap; i < n; i++)
            sl_buf_init(&sl->body[i]);
        sl->cap = n;
    }
    for (size_t i = 0; i < n; i++)
        fill_item(sl, i, net, methods[i], params[i]);
    c->done = 0;
    sl->n = n;
    c->cb = cb;
    c->data = data;
    sl->call = pool_call_start(net->pool_net, sl->items, sl->n, sl->n > 1, 0, on_done, c);
}

const char *sub_call_endpoint(const sub_call_t *c, size_t i)
{
    const sub_call_slot_t *sl = &c->slot[c->cur];
    if (!c->done || i >= sl->n || sl->call == NULL || sl->items[i].endpoint < 0)
        return NULL;
    return pool_call_endpoint_id(sl->call, sl->items[i].endpoint);
}

int sub_call_failed_at(const sub_call_t *c, const char *id)
{
    const sub_call_slot_t *sl = &c->slot[c->cur];
    size_t n = 0;
    if (!c->done || sl->call == NULL)
        return 0;
    const pool_attempt_rec_t *log = pool_call_log(sl->call, &n);
    for (size_t i = 0; i < n; i++) {
        const char *at = log[i].endpoint >= 0 ? pool_call_endpoint_id(sl->call, log[i].endpoint) : NULL;
        if (at != NULL && strcmp(at, id) == 0 && (log[i].fail != POOL_FAIL_NONE || log[i].http_status >= 400))
            return 1;
    }
    return 0;
}

int sub_call_busy(const sub_call_t *c)
{
    return c->slot[c->cur].call != NULL && !c->done;
}

int sub_call_result(const sub_call_t *c, size_t i, const char **res, size_t *len)
{
    wire_envelope_t env;
    const sub_call_slot_t *sl = &c->slot[c->cur];
    if (!c->done || i >= sl->n)
        return 0;
    const pool_item_t *it = &sl->items[i];
    if (it->state != POOL_ITEM_ANSWERED || it->verdict != POLICY_VERDICT_SUCCESS ||
        wire_envelope_scan(it->answer, it->answer_len, &env) != SL_OK || env.result.len == 0)
        return 0;
    *res = it->answer + env.result.off;
    *len = env.result.len;
    return 1;
}

int sub_call_too_large(const sub_call_t *c, size_t i)
{
    const sub_call_slot_t *sl = &c->slot[c->cur];
    size_t n = 0;
    if (!c->done || i >= sl->n || sl->call == NULL)
        return 0;
    if (sl->items[i].outcome == POOL_OUTCOME_TOO_LARGE)
        return 1;
    /* an attempt refused as too large: the call may end otherwise (its endpoints tried, one by one) */
    const pool_attempt_rec_t *log = pool_call_log(sl->call, &n);
    for (size_t k = 0; k < n; k++)
        if (log[k].fail == POOL_FAIL_TOO_LARGE)
            return 1;
    return 0;
}
