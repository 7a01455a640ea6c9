/* sub/sub_reply.c: what a subscribe or unsubscribe call is answered
 * (sub_int.h): the result, an error with the data.reason of the
 * refusals that have one, and sluice's subscription ids. */
#include "sub/sub_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "wire/rpc_error.h"

/* Answers a call; a notification (no id) gets none. */
void sub_reply(sub_client_t *c, const char *body, wire_span_t id, const char *result)
{
    if (id.len == 0)
        return;
    sl_buf_t b;
    sl_buf_init(&b);
    sl_buf_append_str(&b, "{\"jsonrpc\":\"2.0\",\"id\":");
    sl_buf_append(&b, body + id.off, id.len);
    sl_buf_append_str(&b, ",\"result\":");
    sl_buf_append_str(&b, result);
    sl_buf_append_char(&b, '}');
    c->send(c, b.base, b.len);
    sl_buf_dispose(&b);
}

/* Refusals with a data.reason (error_data below). */
const char sub_pass_room_msg[] =
    "no room for another upstream subscription: every socket of the network's ws_url endpoints holds its 256; "
    "subscribe to params already followed, or retry later";
const char sub_pass_share_msg[] =
    "too many distinct passed-through subscriptions for this caller (at most 64 in a worker and a quarter of the "
    "upstream sockets' room left, each an upstream subscription): share params or unsubscribe first";
const char sub_polled_sources_msg[] =
    "too many distinct polled programSubscribe / logsSubscribe started by this caller (each polls the provider "
    "every interval: server.ws_max_polled_sources_per_identity): subscribe to what is already followed, or "
    "unsubscribe first";
const char sub_filter_share_msg[] =
    "this caller's subscriptions' filters and held answers are past its share of the worker's held bytes "
    "(server.max_buffered_share): unsubscribe, or narrow the filters";
const char sub_filter_budget_msg[] =
    "the worker holds its most bytes (server.max_buffered_bytes): retry later";

/* data.reason of a refusal whose message is one of these (the same pointer) */
static const struct {
    const char *msg, *data;
} error_data[] = {
    {sub_eth_logs_too_many_addresses, "{\"reason\":\"logs_filter_addresses\",\"limit\":1000}"},
    {sub_eth_logs_too_many_topics, "{\"reason\":\"logs_filter_topics\",\"limit\":100}"},
    {sub_pass_room_msg, "{\"reason\":\"passthrough_room\"}"},
    {sub_pass_share_msg, "{\"reason\":\"passthrough_share\"}"},
    {sub_polled_sources_msg, "{\"reason\":\"polled_sources\"}"},
    {sub_filter_share_msg, "{\"reason\":\"filter_bytes\",\"bound\":\"server.max_buffered_share\"}"},
    {sub_filter_budget_msg, "{\"reason\":\"filter_bytes\",\"bound\":\"server.max_buffered_bytes\"}"},
};

void sub_reply_error(sub_client_t *c, const char *body, wire_span_t id, int code, const char *msg)
{
    if (id.len == 0)
        return;
    const char *data = NULL;
    for (size_t i = 0; i < sizeof(error_data) / sizeof(error_data[0]); i++)
        if (msg == error_data[i].msg)
            data = error_data[i].data;
    sl_buf_t b;
    sl_buf_init(&b);
    wire_rpc_error(&b, body, id, code, msg, data);
    c->send(c, b.base, b.len);
    sl_buf_dispose(&b);
}

void sub_new_id(sub_id_form_t form, char *out)
{
    uint8_t rnd[16];
    if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
        for (size_t i = 0; i < sizeof(rnd); i++)
            rnd[i] = (uint8_t)random();
    if (form == SUB_ID_INT) {
        uint64_t v = 0;
        memcpy(&v, rnd, 6);
        snprintf(out, SUB_ID_MAX, "%" PRIu64, (v & ((UINT64_C(1) << 48) - 1)) | 1); /* exact in a double */
        return;
    }
    char *p = out;
    p += sprintf(p, "\"0x");
    for (size_t i = 0; i < sizeof(rnd); i++)
        p += sprintf(p, "%02x", rnd[i]);
    sprintf(p, "\"");
}
