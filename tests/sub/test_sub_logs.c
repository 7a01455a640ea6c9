/* tests/sub/test_sub_logs.c: logs subscriptions (sub/sub_eth.c) and
 * the shared per-block fetch past SUB_LOGS_SHARED_MIN filters
 * (sub/sub_logshare.c), with the chain model of scripted_sub.h answering:
 * each block's matching logs once and in order, a reorg's logs again with
 * "removed": true (newest first), the hand-off to one unfiltered
 * eth_getLogs a block at the fifth filter and back at the fourth, each
 * source's filter applied to the shared answer, and the ends: a block whose
 * logs keep failing, a jump past the backfill bound. */
#include "tests/sub/scripted_sub.h"

#define LOGS(addr) "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_subscribe\",\"params\":[\"logs\",{\"address\":\"" addr "\"}]}"
#define LOGS_ALL "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_subscribe\",\"params\":[\"logs\"]}"

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

TestSuite(sub_logs, .init = setup, .fini = teardown, .timeout = 10);

static void open_at(uint64_t head)
{
    ss_open(POLICY_CHAIN_ETHEREUM);
    for (int i = 0; i < 6; i++) {
        char ident[32];
        snprintf(ident, sizeof(ident), "ip:10.0.0.%d", i + 1);
        ss_client(i, ident);
    }
    ss_chain.head = head;
}

static void expect_log(int client, size_t from, size_t k, const char *id, uint64_t h, uint8_t b, int which,
                       int removed)
{
    char *want = ss_log_text(h, b, which, removed);
    ss_expect_nth(client, from, k, "eth_subscription", id, want);
    free(want);
}

/* eth_getLogs calls from attempt `from` on, and of them those without a filter. */
static size_t get_logs(size_t from, size_t *unfiltered)
{
    size_t n = 0, u = 0;
    for (size_t i = from; i < sc.natt; i++) {
        if (!ss_att_is(i, "eth_getLogs"))
            continue;
        n++;
        u += strstr(sc_att(i)->body, "\"address\"") == NULL;
    }
    if (unfiltered != NULL)
        *unfiltered = u;
    return n;
}

Test(sub_logs, each_block_s_matching_logs_once_in_order)
{
    open_at(100);
    char a[SUB_ID_MAX], all[SUB_ID_MAX];
    ss_subscribe(0, LOGS(SS_ADDR_A), a);
    ss_subscribe(1, LOGS_ALL, all);
    ss_serve_for(3 * SS_POLL_MS);
    size_t base = ss.nmsg;
    ss_chain.head = 103;
    ss_serve_until(ss_pred_msgs, &(size_t){base + 9}, SC_LIMIT_MS, "3 + 6 logs");
    ss_serve_for(3 * SS_POLL_MS);
    cr_assert_eq(ss_count(0, base), 3, "one log a block at address A");
    cr_assert_eq(ss_count(1, base), 6, "both logs of each block");
    for (size_t k = 0; k < 3; k++) {
        expect_log(0, base, k, a, 101 + k, 0, 0, 0);
        expect_log(1, base, 2 * k, all, 101 + k, 0, 0, 0);
        expect_log(1, base, 2 * k + 1, all, 101 + k, 0, 1, 0);
    }
    size_t unf;
    cr_expect_eq(get_logs(0, &unf), 6, "each source asks each block with its own filter");
    cr_expect_eq(unf, 3);
    cr_expect_eq(ss.net_count[STATE_SRV_SUB_LOGS_SENT], 9);
    cr_expect_eq(ss.cost[STATE_SUB_POLLS_LOGS], 6);
}

Test(sub_logs, the_filtered_call_names_the_block_and_the_filter)
{
    open_at(100);
    char a[SUB_ID_MAX];
    ss_subscribe(0, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_subscribe\",\"params\":[\"logs\",{\"address\":[\""
                    SS_ADDR_B "\",\"" SS_ADDR_A "\"],\"topics\":[\"" SS_TOPIC "\",null]}]}", a);
    ss_serve_for(3 * SS_POLL_MS);
    ss_chain.head = 101;
    ss_serve_until(ss_pred_msgs, &(size_t){3}, SC_LIMIT_MS, "two logs");
    size_t i = 0;
    while (!ss_att_is(i, "eth_getLogs"))
        i++;
    char hash[67], want[512];
    ss_hash(hash, 101, 0);
    snprintf(want, sizeof(want), "\"params\":[{\"blockHash\":\"%s\",\"address\":[\"%s\",\"%s\"],\"topics\":[\"%s\",null]}]",
             hash, SS_ADDR_A, SS_ADDR_B, SS_TOPIC);
    cr_expect(strstr(sc_att(i)->body, want) != NULL, "%s\nhas not %s", sc_att(i)->body, want);
}

Test(sub_logs, a_reorg_sends_the_replaced_logs_removed_newest_first)
{
    open_at(100);
    char all[SUB_ID_MAX];
    ss_subscribe(0, LOGS_ALL, all);
    ss_serve_for(3 * SS_POLL_MS);
    size_t base = ss.nmsg;
    ss_chain.head = 103;
    ss_serve_until(ss_pred_msgs, &(size_t){base + 6}, SC_LIMIT_MS, "logs of 101..103");
    ss_chain_reorg(102, 104, 1);
    ss_serve_until(ss_pred_msgs, &(size_t){base + 6 + 4 + 6}, SC_LIMIT_MS, "removed, then the new branch");
    ss_serve_for(3 * SS_POLL_MS);
    cr_assert_eq(ss_count(0, base), 16);
    size_t k = 6;
    /* 103 then 102 undone, each block's logs in reverse */
    expect_log(0, base, k++, all, 103, 0, 1, 1);
    expect_log(0, base, k++, all, 103, 0, 0, 1);
    expect_log(0, base, k++, all, 102, 0, 1, 1);
    expect_log(0, base, k++, all, 102, 0, 0, 1);
    for (uint64_t h = 102; h <= 104; h++) {
        expect_log(0, base, k++, all, h, 1, 0, 0);
        expect_log(0, base, k++, all, h, 1, 1, 0);
    }
}

Test(sub_logs, the_fifth_filter_hands_the_blocks_to_one_shared_call)
{
    open_at(100);
    static const char *const calls[] = {
        LOGS(SS_ADDR_A), LOGS(SS_ADDR_B), LOGS_ALL,
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_subscribe\",\"params\":[\"logs\",{\"topics\":[\"" SS_TOPIC "\"]}]}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_subscribe\",\"params\":[\"logs\",{\"address\":\"" SS_ADDR_A
        "\",\"topics\":[null,\"" SS_TOPIC "\"]}]}", /* no log has a second topic: none matches */
    };
    char id[5][SUB_ID_MAX];
    for (int i = 0; i < 4; i++)
        ss_subscribe(i, calls[i], id[i]);
    ss_serve_for(3 * SS_POLL_MS);
    cr_expect_eq(ss.cost[STATE_SUB_LOGS_SHARED], 0, "four filters: each its own call");
    size_t base = ss.nmsg, att = sc.natt, unf;
    ss_chain.head = 101;
    ss_serve_until(ss_pred_msgs, &(size_t){base + 1 + 1 + 2 + 2}, SC_LIMIT_MS, "101's logs");
    cr_expect_eq(get_logs(att, &unf), 4);
    cr_expect_eq(unf, 2, "LOGS_ALL's and the topics-only filter's name no address");
    ss_subscribe(4, calls[4], id[4]);
    cr_expect_eq(ss.cost_last[STATE_SUB_LOGS_SHARED], 1, "shared from the fifth");
    base = ss.nmsg;
    att = sc.natt;
    ss_chain.head = 103;
    ss_serve_until(ss_pred_msgs, &(size_t){base + 2 * 6}, SC_LIMIT_MS, "102's and 103's logs");
    ss_serve_for(3 * SS_POLL_MS);
    cr_expect_eq(get_logs(att, &unf), 2, "one eth_getLogs a block for the five");
    cr_expect_eq(unf, 2, "without a filter");
    /* each told its own part, in order */
    for (uint64_t h = 102, k = 0; h <= 103; h++, k++) {
        expect_log(0, base, k, id[0], h, 0, 0, 0);
        expect_log(1, base, k, id[1], h, 0, 1, 0);
        expect_log(2, base, 2 * k, id[2], h, 0, 0, 0);
        expect_log(2, base, 2 * k + 1, id[2], h, 0, 1, 0);
        expect_log(3, base, 2 * k, id[3], h, 0, 0, 0);
        expect_log(3, base, 2 * k + 1, id[3], h, 0, 1, 0);
    }
    cr_expect_eq(ss_count(4, base), 0, "the fifth filter matches nothing");
    cr_expect_eq(ss_count(0, base), 2);
    /* the fifth leaves: back under the threshold, each its own call again */
    ss_client_close(4);
    cr_expect_eq(ss.cost_last[STATE_SUB_LOGS_SHARED], 0);
    base = ss.nmsg;
    att = sc.natt;
    ss_chain.head = 104;
    ss_serve_until(ss_pred_msgs, &(size_t){base + 6}, SC_LIMIT_MS, "104's logs");
    ss_serve_for(2 * SS_POLL_MS);
    cr_expect_eq(get_logs(att, NULL), 4);
    expect_log(1, base, 0, id[1], 104, 0, 1, 0);
}

static int pred_logs_call(const void *arg)
{
    return get_logs(*(const size_t *)arg, NULL) >= 1;
}

Test(sub_logs, shared_sources_that_fail_together_ask_together)
{
    open_at(100);
    char id[5][SUB_ID_MAX];
    static const char *const addrs[] = {SS_ADDR_A, SS_ADDR_B, "0xcccccccccccccccccccccccccccccccccccccccc",
                                        "0xdddddddddddddddddddddddddddddddddddddddd",
                                        "0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"};
    for (int i = 0; i < 5; i++) {
        char call[200];
        snprintf(call, sizeof(call), "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_subscribe\",\"params\":[\"logs\","
                 "{\"address\":\"%s\"}]}", addrs[i]);
        ss_subscribe(i, call, id[i]);
    }
    ss_serve_for(3 * SS_POLL_MS);
    ss_chain.fail_logs = 1;
    size_t att = sc.natt;
    ss_chain.head = 101;
    ss_serve_until(pred_logs_call, &att, SC_LIMIT_MS, "a shared eth_getLogs");
    ss_serve_for(3 * SS_POLL_MS);
    size_t unf, failed = get_logs(att, &unf);
    /* a round of retries every backoff (15, 30, 60 ms ...): one unfiltered call each, not five */
    cr_expect(failed >= 1 && failed < 5, "five sources, one call a round: %zu in about four polls", failed);
    cr_expect_eq(unf, failed, "every one of them shared");
    ss_chain.fail_logs = 0;
    size_t base = ss.nmsg;
    ss_serve_until(ss_pred_msgs, &(size_t){base + 2}, 3 * SC_LIMIT_MS, "101's logs after the retry");
    expect_log(0, base, 0, id[0], 101, 0, 0, 0);
    expect_log(1, base, 0, id[1], 101, 0, 1, 0);
    cr_expect_eq(ss_count(2, base), 0);
}

Test(sub_logs, a_block_whose_logs_keep_failing_ends_the_subscription)
{
    ss.limits.logs_retry_s = 0; /* the first failure is past the retry window */
    open_at(100);
    ss_client(1, "ip:10.0.0.9");
    char a[SUB_ID_MAX], h[SUB_ID_MAX];
    ss_subscribe(0, LOGS(SS_ADDR_A), a);
    ss_subscribe(1, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"eth_subscribe\",\"params\":[\"newHeads\"]}", h);
    ss_serve_for(3 * SS_POLL_MS);
    ss_chain.fail_logs = 1;
    size_t base = ss.nmsg;
    ss_chain.head = 101;
    ss_serve_until(ss_pred_msgs, &(size_t){base + 2}, SC_LIMIT_MS, "the error and the head");
    const char *err = ss_nth(0, base, 0);
    cr_assert_not_null(err);
    char hash[67], want[300];
    ss_hash(hash, 101, 0);
    snprintf(want, sizeof(want), "\"data\":{\"subscription\":%s,\"method\":\"eth_subscribe\",\"reason\":\"retries\","
             "\"block\":\"0x65\",\"blockHash\":\"%s\"}}}", a, hash + 0);
    cr_expect(strstr(err, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32005,\"message\":\"logs subscription "
                          "ended: the logs of block 101 could not be delivered") == err, "%s", err);
    cr_expect(strstr(err, want) != NULL, "%s\nhas not %s", err, want);
    cr_expect_eq(ss.net_count[STATE_SRV_SUB_LOGS_SKIPPED], 1);
    cr_expect_eq(ss.srv_set[STATE_SRV_SUBS_LOGS], 0, "the subscription ended");
    ss_chain.fail_logs = 0;
    ss_chain.head = 102;
    ss_serve_until(ss_pred_msgs, &(size_t){base + 3}, SC_LIMIT_MS, "the next head");
    ss_serve_for(3 * SS_POLL_MS);
    cr_expect_eq(ss_count(0, base), 1, "nothing after the error");
    char call[200];
    snprintf(call, sizeof(call), "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"eth_unsubscribe\",\"params\":[%s]}", a);
    cr_assert_eq(ss_call(0, call), 1);
    cr_expect_str_eq(ss_last(), "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":false}");
}

Test(sub_logs, a_jump_past_the_backfill_bound_ends_a_logs_subscription)
{
    open_at(100);
    char a[SUB_ID_MAX];
    ss_subscribe(0, LOGS(SS_ADDR_A), a);
    ss_serve_for(3 * SS_POLL_MS);
    size_t base = ss.nmsg;
    ss_chain.head = 101;
    ss_serve_msgs(base + 1);
    ss_chain.head = 400;
    ss_serve_msgs(base + 2);
    const char *err = ss_nth(0, base, 1);
    cr_assert_not_null(err);
    cr_expect(strstr(err, "\"reason\":\"behind\",\"block\":\"0x66\"}") != NULL, "the first block not delivered: %s",
              err);
    cr_expect(strstr(err, "\"id\":null,\"error\":{\"code\":-32005") != NULL, "%s", err);
}
