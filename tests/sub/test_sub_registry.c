/* tests/sub/test_sub_registry.c: the registry (sub/sub.c) through
 * sub_message, on the scripted pool: which messages are subscription calls,
 * the answers and errors, sluice's ids, fan-in by normalised params, the
 * bounds of sub_limits_t (-32005, with data.reason where the refusal has
 * one), unsubscribe, a refused admit, a client's close, the gauges. Upstream
 * calls are left held unless a test answers them. */
#include "tests/sub/scripted_sub.h"

#define HEADS "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_subscribe\",\"params\":[\"newHeads\"]}"
#define LOGS_A "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"eth_subscribe\",\"params\":[\"logs\",{\"address\":\"" SS_ADDR_A "\"}]}"
#define LOGS_B "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"eth_subscribe\",\"params\":[\"logs\",{\"address\":\"" SS_ADDR_B "\"}]}"

static void setup(void)
{
    memset(&ss_chain, 0, sizeof(ss_chain));
    ss.responder = ss_chain_answer;
    ss_limits_default();
}

static void teardown(void)
{
    ss_close();
}

TestSuite(sub_registry, .init = setup, .fini = teardown, .timeout = 10);

static void open_eth(void)
{
    ss_open(POLICY_CHAIN_ETHEREUM);
    ss_client(0, "ip:10.0.0.1");
}

static void expect_error(int64_t code, const char *msg, const char *data)
{
    int64_t c;
    char m[512], d[256];
    ss_last_error(&c, m, sizeof(m), d, sizeof(d));
    cr_expect_eq(c, code, "code %" PRId64 " (%s)", c, m);
    if (msg != NULL)
        cr_expect_str_eq(m, msg);
    cr_expect_str_eq(d, data);
}

static void unsubscribe(int client, const char *method, const char *id, const char *want)
{
    char call[200], ans[100];
    snprintf(call, sizeof(call), "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"%s\",\"params\":[%s]}", method, id);
    cr_assert_eq(ss_call(client, call), 1);
    snprintf(ans, sizeof(ans), "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":%s}", want);
    cr_expect_str_eq(ss_last(), ans);
}

/* ---- what is a subscription call ---- */

Test(sub_registry, other_calls_are_not_answered_here)
{
    open_eth();
    static const char *const others[] = {
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_blockNumber\",\"params\":[]}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"slotSubscribe\",\"params\":[]}", /* another chain's */
        "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"eth_subscribe\",\"params\":[\"newHeads\"]}",
        "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_subscribe\",\"params\":[\"newHeads\"]}]", /* a batch */
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_subscribe\",\"params\":[\"newHeads\"]", /* truncated */
        "not json",
    };
    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
        cr_expect_eq(ss_call(0, others[i]), 0, "%s", others[i]);
    cr_expect_eq(ss.nmsg, 0);
    cr_expect_eq(sc.natt, 0);
    cr_expect_eq(ss.nadmit, 0, "what is not ours is not charged here");
}

Test(sub_registry, a_subscribe_is_answered_with_a_fresh_id)
{
    open_eth();
    char a[SUB_ID_MAX], b[SUB_ID_MAX];
    ss_subscribe(0, HEADS, a);
    ss_subscribe(0, HEADS, b);
    cr_expect_str_neq(a, b);
    for (const char *id = a; id != NULL; id = id == a ? b : NULL) {
        cr_expect_eq(strlen(id), 36);
        cr_expect_eq(strncmp(id, "\"0x", 3), 0);
        for (size_t i = 3; i < 35; i++)
            cr_expect(strchr("0123456789abcdef", id[i]) != NULL, "%s", id);
    }
    char want[100];
    snprintf(want, sizeof(want), "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":%s}", b);
    cr_expect_str_eq(ss_last(), want, "the caller's id echoed, the subscription id as the result");
    cr_expect_eq(ss.nadmit, 2, "each call charged once");
}

Test(sub_registry, unknown_kinds_and_bad_params_are_refused)
{
    open_eth();
    static const struct {
        const char *call;
        int64_t code;
        const char *msg;
    } bad[] = {
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_subscribe\",\"params\":[\"syncing\"]}", -32602,
         "invalid params: eth_subscribe serves \"newHeads\", \"logs\" and \"newPendingTransactions\""},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_subscribe\",\"params\":{\"a\":1}}", -32602,
         "invalid params: expected an array"},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_subscribe\",\"params\":[\"newHeads\",{}]}", -32602,
         "invalid params: newHeads takes no options"},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_subscribe\",\"params\":[\"logs\",{\"address\":\"0x12\"}]}",
         -32602, "invalid params: address must be 20-byte hex or an array of them"},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_subscribe\",\"params\":[\"logs\",{\"topics\":[1]}]}", -32602,
         "invalid params: a topic must be 32-byte hex, null or an array of them"},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_subscribe\",\"params\":[\"logs\",5]}", -32602,
         "invalid params: logs takes one filter object {address, topics}"},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_subscribe\",\"params\":[\"newPendingTransactions\"]}",
         -32601, NULL},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_unsubscribe\",\"params\":[]}", -32602,
         "invalid params: expected [subscription id]"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        size_t n = ss.nmsg;
        cr_assert_eq(ss_call(0, bad[i].call), 1, "%s", bad[i].call);
        cr_assert_eq(ss.nmsg, n + 1);
        expect_error(bad[i].code, bad[i].msg, "");
    }
    cr_expect(strstr(ss_last(), "\"id\":1") != NULL);
    cr_expect_eq(sc.natt, 0, "nothing started upstream");
    cr_expect_eq(ss.srv_set[STATE_SRV_SUBS_LOGS], 0);
}

Test(sub_registry, a_logs_filter_over_its_caps_says_why_in_data)
{
    open_eth();
    sl_buf_t call;
    sl_buf_init(&call);
    sl_buf_append_str(&call, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"eth_subscribe\",\"params\":[\"logs\",{\"address\":[");
    for (int i = 0; i < 1001; i++)
        sl_buf_printf(&call, "%s\"0x%040x\"", i > 0 ? "," : "", i);
    sl_buf_append_str(&call, "]}]}");
    sl_buf_append_char(&call, '\0');
    cr_assert_eq(ss_call(0, call.base), 1);
    expect_error(-32602, sub_eth_logs_too_many_addresses, "{\"reason\":\"logs_filter_addresses\",\"limit\":1000}");
    sl_buf_reset(&call);
    sl_buf_append_str(&call, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"eth_subscribe\",\"params\":[\"logs\",{\"topics\":[[");
    for (int i = 0; i < 101; i++)
        sl_buf_printf(&call, "%s\"0x%064x\"", i > 0 ? "," : "", i);
    sl_buf_append_str(&call, "]]}]}");
    sl_buf_append_char(&call, '\0');
    cr_assert_eq(ss_call(0, call.base), 1);
    expect_error(-32602, sub_eth_logs_too_many_topics, "{\"reason\":\"logs_filter_topics\",\"limit\":100}");
    sl_buf_dispose(&call);
}

/* ---- fan-in ---- */

Test(sub_registry, filters_that_normalise_alike_share_one_source)
{
    open_eth();
    ss_client(1, "ip:10.0.0.2");
    char a[SUB_ID_MAX], b[SUB_ID_MAX], c[SUB_ID_MAX];
    ss_subscribe(0, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_subscribe\",\"params\":[\"logs\",{\"address\":[\""
                    SS_ADDR_B "\",\"0xAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"]}]}", a);
    ss_subscribe(1, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_subscribe\",\"params\":[\"logs\",{\"address\":[\""
                    SS_ADDR_A "\",\"" SS_ADDR_B "\",\"" SS_ADDR_A "\"],\"topics\":null}]}", b);
    cr_expect_eq(ss.net_count[STATE_SUBS_SOURCES + STATE_SRV_SUBS_LOGS], 1, "case, order, repeats, a null "
                 "topics: one filter");
    ss_subscribe(1, LOGS_A, c);
    cr_expect_eq(ss.net_count[STATE_SUBS_SOURCES + STATE_SRV_SUBS_LOGS], 2, "another filter, another source");
    cr_expect_eq(ss.srv_set[STATE_SRV_SUBS_LOGS], 3);
    cr_expect_eq(ss.net_count[STATE_SRV_SUBS_LOGS], 3);
}

/* ---- bounds ---- */

Test(sub_registry, per_connection_bound)
{
    ss.limits.per_connection = 2;
    open_eth();
    ss_client(1, "ip:10.0.0.1"); /* the same caller on another socket */
    char id[SUB_ID_MAX];
    ss_subscribe(0, HEADS, id);
    ss_subscribe(0, HEADS, id);
    cr_assert_eq(ss_call(0, HEADS), 1);
    expect_error(-32005, "too many subscriptions on this WebSocket (server.ws_max_subscriptions_per_connection): "
                         "unsubscribe first", "");
    cr_expect_eq(ss.net_count[STATE_SRV_SUB_REFUSED], 1);
    ss_subscribe(1, HEADS, id); /* the bound is the socket's */
    unsubscribe(0, "eth_unsubscribe", id, "false"); /* not this socket's id */
    cr_expect_eq(ss.srv_set[STATE_SRV_SUBS_NEWHEADS], 3);
}

Test(sub_registry, per_identity_bound_counts_every_socket_of_the_caller)
{
    ss.limits.per_identity = 3;
    open_eth();
    ss_client(1, "ip:10.0.0.1");
    ss_client(2, "ip:10.0.0.9");
    char id[SUB_ID_MAX], first[SUB_ID_MAX];
    ss_subscribe(0, HEADS, first);
    ss_subscribe(0, HEADS, id);
    ss_subscribe(1, HEADS, id);
    cr_assert_eq(ss_call(1, HEADS), 1);
    expect_error(-32005, "too many subscriptions for this caller (server.ws_max_subscriptions_per_identity): "
                         "unsubscribe first", "");
    ss_subscribe(2, HEADS, id); /* another caller */
    unsubscribe(0, "eth_unsubscribe", first, "true");
    ss_subscribe(1, HEADS, id); /* room again */
}

Test(sub_registry, sources_per_identity_bounds_new_sources_not_joining)
{
    ss.limits.sources_per_identity = 1;
    open_eth();
    ss_client(1, "ip:10.0.0.2");
    char id[SUB_ID_MAX];
    ss_subscribe(0, LOGS_A, id);
    cr_assert_eq(ss_call(0, LOGS_B), 1);
    expect_error(-32005, "too many distinct subscriptions started by this caller (server.ws_max_sources_per_identity): "
                         "subscribe to what is already followed, or unsubscribe first", "");
    ss_subscribe(0, LOGS_A, id); /* joining its own source costs no source */
    ss_subscribe(1, LOGS_B, id); /* another caller starts it */
    ss_subscribe(0, LOGS_B, id); /* ... and this one may join it */
    cr_expect_eq(ss.net_count[STATE_SUBS_SOURCES + STATE_SRV_SUBS_LOGS], 2);
}

Test(sub_registry, a_source_left_by_its_creator_is_charged_to_a_subscriber_still_on_it)
{
    ss.limits.sources_per_identity = 1;
    open_eth();
    ss_client(1, "ip:10.0.0.2");
    char a[SUB_ID_MAX], b[SUB_ID_MAX];
    ss_subscribe(0, LOGS_A, a);
    ss_subscribe(1, LOGS_A, b); /* joins 0's source */
    ss_subscribe(1, LOGS_B, b); /* its own first source */
    unsubscribe(0, "eth_unsubscribe", a, "true");
    /* LOGS_A's source now counts as client 1's: it may start no other */
    cr_assert_eq(ss_call(1, HEADS), 1);
    expect_error(-32005, NULL, "");
    ss_subscribe(0, HEADS, a); /* client 0 holds no source now */
}

static void open_sol(void)
{
    ss_open(POLICY_CHAIN_SOLANA);
    ss_client(0, "key:alice");
}

#define SOL_LOGS(n) "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"logsSubscribe\",\"params\":[{\"mentions\":[\"" n "\"]}]}"
#define ACCT "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"accountSubscribe\",\"params\":[\"Vote111111111111111111111111111111111111111\"]}"

Test(sub_registry, polled_sources_per_identity_says_polled_sources)
{
    ss.limits.polled_sources_per_identity = 1;
    open_sol();
    char id[SUB_ID_MAX];
    ss_subscribe(0, SOL_LOGS("Vote111111111111111111111111111111111111111"), id);
    cr_expect(id[0] >= '1' && id[0] <= '9', "Solana's ids are integers: %s", id);
    cr_assert_eq(ss_call(0, SOL_LOGS("Stake11111111111111111111111111111111111111")), 1);
    expect_error(-32005, sub_polled_sources_msg, "{\"reason\":\"polled_sources\"}");
    /* a merged poll (accounts) is no own poll: not bounded by it */
    ss_subscribe(0, ACCT, id);
    /* joining the polled source already running costs nothing */
    ss_subscribe(0, SOL_LOGS("Vote111111111111111111111111111111111111111"), id);
}

/* ---- unsubscribe ---- */

Test(sub_registry, unsubscribe_ends_only_that_subscription)
{
    open_eth();
    char a[SUB_ID_MAX], b[SUB_ID_MAX];
    ss_subscribe(0, HEADS, a);
    ss_subscribe(0, HEADS, b);
    cr_expect_eq(ss.srv_set[STATE_SRV_SUBS_NEWHEADS], 2);
    unsubscribe(0, "eth_unsubscribe", a, "true");
    unsubscribe(0, "eth_unsubscribe", a, "false");
    cr_expect_eq(ss.srv_set[STATE_SRV_SUBS_NEWHEADS], 1);
    cr_expect_eq(ss.net_count[STATE_SUBS_SOURCES + STATE_SRV_SUBS_NEWHEADS], 1, "b still holds the source");
    /* ids compare without case */
    char upper[SUB_ID_MAX];
    snprintf(upper, sizeof(upper), "%s", b);
    for (char *p = upper + 3; *p; p++)
        if (*p >= 'a' && *p <= 'f')
            *p = (char)(*p - 'a' + 'A');
    unsubscribe(0, "eth_unsubscribe", upper, "true");
    cr_expect_eq(ss.srv_set[STATE_SRV_SUBS_NEWHEADS], 0);
    cr_expect_eq(ss.net_count[STATE_SUBS_SOURCES + STATE_SRV_SUBS_NEWHEADS], 0);
    unsubscribe(0, "eth_unsubscribe", "\"0x00\"", "false");
    unsubscribe(0, "eth_unsubscribe", "12", "false");
}

Test(sub_registry, a_solana_unsubscribe_ends_only_its_own_kind)
{
    open_sol();
    char id[SUB_ID_MAX];
    ss_subscribe(0, ACCT, id);
    unsubscribe(0, "slotUnsubscribe", id, "false");
    cr_expect_eq(ss.srv_set[STATE_SRV_SUBS_ACCOUNT], 1);
    unsubscribe(0, "accountUnsubscribe", id, "true");
    cr_expect_eq(ss.srv_set[STATE_SRV_SUBS_ACCOUNT], 0);
}

Test(sub_registry, an_unsubscribe_of_another_socket_s_id_is_false)
{
    open_eth();
    ss_client(1, "ip:10.0.0.1");
    char id[SUB_ID_MAX];
    ss_subscribe(0, HEADS, id);
    unsubscribe(1, "eth_unsubscribe", id, "false");
    unsubscribe(0, "eth_unsubscribe", id, "true");
}

/* ---- admit, notifications, close ---- */

Test(sub_registry, a_refused_admit_answers_once_and_starts_nothing)
{
    open_eth();
    ss.refuse[0] = 1;
    cr_expect_eq(ss_call(0, HEADS), 1, "answered (by the admit's refusal)");
    cr_assert_eq(ss.nmsg, 1);
    cr_expect_str_eq(ss_last(), SS_REFUSAL);
    cr_expect_eq(sc.natt, 0, "no upstream call");
    cr_expect_eq(ss.srv_set[STATE_SRV_SUBS_NEWHEADS], 0);
    cr_expect_eq(ss.net_count[STATE_SUBS_SOURCES + STATE_SRV_SUBS_NEWHEADS], 0);
    ss.refuse[0] = 0;
    char id[SUB_ID_MAX];
    ss_subscribe(0, HEADS, id);
    ss.refuse[0] = 1;
    size_t n = ss.nmsg;
    char call[200];
    snprintf(call, sizeof(call), "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"eth_unsubscribe\",\"params\":[%s]}", id);
    cr_expect_eq(ss_call(0, call), 1);
    cr_expect_eq(ss.nmsg, n + 1);
    cr_expect_str_eq(ss_last(), SS_REFUSAL);
    cr_expect_eq(ss.srv_set[STATE_SRV_SUBS_NEWHEADS], 1, "a refused unsubscribe ends nothing");
}

Test(sub_registry, a_subscribe_without_id_is_no_subscription)
{
    open_eth();
    cr_expect_eq(ss_call(0, "{\"jsonrpc\":\"2.0\",\"method\":\"eth_subscribe\",\"params\":[\"newHeads\"]}"), 1);
    cr_expect_eq(ss.nmsg, 0, "a notification gets no answer");
    cr_expect_eq(sc.natt, 0);
    cr_expect_eq(ss.srv_set[STATE_SRV_SUBS_NEWHEADS], 0);
}

Test(sub_registry, a_closed_socket_s_sources_stop)
{
    open_eth();
    ss_client(1, "ip:10.0.0.2");
    char id[SUB_ID_MAX];
    ss_subscribe(0, HEADS, id);
    ss_subscribe(0, LOGS_A, id);
    ss_subscribe(1, HEADS, id);
    cr_expect_eq(ss.srv_set[STATE_SRV_SUBS_NEWHEADS], 2);
    ss_client_close(0);
    cr_expect_eq(ss.srv_set[STATE_SRV_SUBS_NEWHEADS], 1);
    cr_expect_eq(ss.srv_set[STATE_SRV_SUBS_LOGS], 0);
    cr_expect_eq(ss.net_count[STATE_SUBS_SOURCES + STATE_SRV_SUBS_LOGS], 0);
    cr_expect_eq(ss.net_count[STATE_SUBS_SOURCES + STATE_SRV_SUBS_NEWHEADS], 1, "client 1 still follows");
    sub_client_dispose(&ss.cl[0]); /* twice (the worker's teardown, then the socket's close): nothing */
}

Test(sub_registry, notifications_reach_every_subscriber_with_its_own_id)
{
    open_eth();
    ss_client(1, "ip:10.0.0.2");
    char a[SUB_ID_MAX], b[SUB_ID_MAX];
    ss_chain.head = 50;
    ss_subscribe(0, HEADS, a);
    ss_subscribe(1, HEADS, b);
    ss_serve_for(3 * SS_POLL_MS);
    size_t base = ss.nmsg;
    ss_chain.head = 51;
    ss_serve_msgs(base + 2);
    char *want = ss_head(51, 0);
    ss_expect_nth(0, base, 0, "eth_subscription", a, want);
    ss_expect_nth(1, base, 0, "eth_subscription", b, want);
    free(want);
    cr_expect_eq(ss.net_count[STATE_SRV_SUB_NOTIFICATIONS], 2);
}
