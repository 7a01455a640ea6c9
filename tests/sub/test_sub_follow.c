/* tests/sub/test_sub_follow.c: the head follower (sub/sub_follow.c) as
 * newHeads subscribers see it, on the scripted pool with the chain model
 * of scripted_sub.h answering: every header once and in order from the one
 * after the head at subscribe, heights between two polls backfilled, a
 * reorg walked back and told as new headers for the heights replaced, a
 * jump past the backfill bound told from the head on; one follower per
 * network however many subscribers; its counters. */
#include "tests/sub/scripted_sub.h"

#define HEADS "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_subscribe\",\"params\":[\"newHeads\"]}"

static void setup(void)
{
    memset(&ss_chain, 0, sizeof(ss_chain));
    ss.responder = ss_chain_answer;
    ss_open(POLICY_CHAIN_ETHEREUM);
    ss_client(0, "ip:10.0.0.1");
}

static void teardown(void)
{
    ss_close();
}

TestSuite(sub_follow, .init = setup, .fini = teardown, .timeout = 10);

/* Subscribes client i to newHeads with the chain at head and waits for the
 * follower's first header (recorded, not told). */
static void subscribe_at(int i, uint64_t head, char *id)
{
    ss_chain.head = head;
    size_t before = sc.natt;
    ss_subscribe(i, HEADS, id);
    cr_assert_eq(sc.natt, before + 1, "the first header is asked at once");
    cr_expect(strstr(sc_att(before)->body, "[\"latest\",false]") != NULL, "%s", sc_att(before)->body);
    ss_serve_for(3 * SS_POLL_MS);
}

static void expect_head(int client, size_t from, size_t k, const char *id, uint64_t h, uint8_t b)
{
    char *want = ss_head(h, b);
    ss_expect_nth(client, from, k, "eth_subscription", id, want);
    free(want);
}

Test(sub_follow, the_head_at_subscribe_is_not_told)
{
    char id[SUB_ID_MAX];
    subscribe_at(0, 100, id);
    cr_expect_eq(ss.nmsg, 1, "only the subscribe's answer: %s", ss_last());
    cr_expect_eq(id[0], '"');
    cr_expect_eq(strlen(id), 36, "\"0x\" and 32 hex digits, quoted: %s", id);
}

Test(sub_follow, each_new_head_is_told_once_in_order)
{
    char id[SUB_ID_MAX];
    subscribe_at(0, 100, id);
    size_t base = ss.nmsg;
    for (uint64_t h = 101; h <= 103; h++) {
        ss_chain.head = h;
        ss_serve_msgs(base + (h - 100));
    }
    ss_serve_for(4 * SS_POLL_MS); /* polls that find nothing new tell nothing */
    cr_assert_eq(ss_count(0, base), 3);
    for (size_t k = 0; k < 3; k++)
        expect_head(0, base, k, id, 101 + k, 0);
}

Test(sub_follow, heights_between_two_polls_are_backfilled_in_order)
{
    char id[SUB_ID_MAX];
    subscribe_at(0, 100, id);
    size_t base = ss.nmsg;
    ss_chain.head = 110; /* ten heights at once */
    ss_serve_msgs(base + 10);
    ss_serve_for(3 * SS_POLL_MS);
    cr_assert_eq(ss_count(0, base), 10);
    for (size_t k = 0; k < 10; k++)
        expect_head(0, base, k, id, 101 + k, 0);
    /* the ones between came by number; the head itself is no backfill */
    cr_expect_eq(ss.net_count[STATE_SRV_SUB_BACKFILLED], 9);
    cr_expect(ss_atts("eth_getBlockByNumber") >= 11);
    cr_expect_eq(ss.cost[STATE_SUB_POLLS_HEADS], (int64_t)ss_atts("eth_getBlockByNumber"));
    cr_expect_eq(ss.net_count[STATE_SRV_SUB_NOTIFICATIONS], 10);
}

Test(sub_follow, a_reorg_walks_back_and_tells_the_replaced_heights)
{
    char id[SUB_ID_MAX];
    subscribe_at(0, 100, id);
    size_t base = ss.nmsg;
    ss_chain.head = 104;
    ss_serve_msgs(base + 4); /* 101..104 on branch 0 */
    /* 103 and 104 replaced, and a new 105 on top: the follower sees 105's
     * parent is not the 104 it sent, walks back to 103 (whose parent 102
     * it sent), then tells 103', 104', 105' */
    ss_chain_reorg(103, 105, 1);
    ss_serve_msgs(base + 7);
    ss_serve_for(3 * SS_POLL_MS);
    cr_assert_eq(ss_count(0, base), 7);
    for (size_t k = 0; k < 4; k++)
        expect_head(0, base, k, id, 101 + k, 0);
    expect_head(0, base, 4, id, 103, 1);
    expect_head(0, base, 5, id, 104, 1);
    expect_head(0, base, 6, id, 105, 1);
    cr_expect_eq(ss.net_count[STATE_SRV_SUB_REORGED], 1, "one header replaced one sent (103'); 104' and 105' are "
                 "new heights of the branch (the walk forgot those above the fork)");
}

Test(sub_follow, a_reorg_to_a_shorter_branch_is_told_from_the_fork)
{
    char id[SUB_ID_MAX];
    subscribe_at(0, 100, id);
    size_t base = ss.nmsg;
    ss_chain.head = 105;
    ss_serve_msgs(base + 5);
    /* the new branch forks above 102 and its head is 104, below the 105 sent */
    ss_chain_reorg(103, 104, 2);
    ss_serve_for(6 * SS_POLL_MS);
    ss_chain.head = 106; /* the branch grows past the old one: the follower walks back from it */
    ss_chain.branch[105] = 2;
    ss_chain.branch[106] = 2;
    ss_serve_msgs(base + 9);
    ss_serve_for(3 * SS_POLL_MS);
    cr_assert_eq(ss_count(0, base), 9, "101..105, then 103'..106'");
    for (size_t k = 0; k < 4; k++)
        expect_head(0, base, 5 + k, id, 103 + k, 2);
}

Test(sub_follow, a_jump_past_the_backfill_bound_goes_on_from_the_head)
{
    char id[SUB_ID_MAX];
    subscribe_at(0, 100, id);
    size_t base = ss.nmsg;
    ss_chain.head = 101;
    ss_serve_msgs(base + 1);
    ss_chain.head = 101 + 300; /* over SUB_MAX_BACKFILL (128) heights to fill */
    ss_serve_msgs(base + 2);
    ss_serve_for(3 * SS_POLL_MS);
    cr_assert_eq(ss_count(0, base), 2, "101, then the head: nothing between");
    expect_head(0, base, 0, id, 101, 0);
    expect_head(0, base, 1, id, 401, 0);
    cr_expect_eq(ss.net_count[STATE_SRV_SUB_SKIPPED], 299);
    /* and it follows on from there */
    ss_chain.head = 402;
    ss_serve_msgs(base + 3);
    expect_head(0, base, 2, id, 402, 0);
}

Test(sub_follow, subscribers_share_one_follower)
{
    char a[SUB_ID_MAX], b[SUB_ID_MAX];
    ss_client(1, "ip:10.0.0.2");
    subscribe_at(0, 100, a);
    ss_subscribe(1, HEADS, b);
    cr_expect_str_neq(a, b, "each subscription its own id");
    size_t base = ss.nmsg;
    size_t polls = ss_atts("eth_getBlockByNumber");
    ss_chain.head = 101;
    ss_serve_msgs(base + 2);
    expect_head(0, base, 0, a, 101, 0);
    expect_head(1, base, 0, b, 101, 0);
    /* a second follower would ask every height twice: 101 is asked once here */
    size_t asked = 0;
    for (size_t i = polls; i < sc.natt; i++)
        asked += strstr(sc_att(i)->body, "[\"0x65\",false]") != NULL;
    cr_expect_leq(asked, 1);
    cr_expect_eq(ss.net_count[STATE_SUBS_SOURCES + STATE_SRV_SUBS_NEWHEADS], 1, "one source");
    cr_expect_eq(ss.srv_set[STATE_SRV_SUBS_NEWHEADS], 2, "two subscriptions open");
}

Test(sub_follow, a_late_subscriber_hears_only_what_came_after_it)
{
    char a[SUB_ID_MAX], b[SUB_ID_MAX];
    ss_client(1, "ip:10.0.0.2");
    subscribe_at(0, 100, a);
    ss_chain.head = 102;
    ss_serve_msgs(ss.nmsg + 2);
    ss_subscribe(1, HEADS, b);
    size_t base = ss.nmsg;
    ss_chain.head = 103;
    ss_serve_msgs(base + 2);
    ss_serve_for(3 * SS_POLL_MS);
    cr_expect_eq(ss_count(1, base), 1, "client 1 joined after 102: 103 only");
    expect_head(1, base, 0, b, 103, 0);
    expect_head(0, base, 0, a, 103, 0);
}

Test(sub_follow, the_last_unsubscribe_stops_the_polls)
{
    char id[SUB_ID_MAX], call[200];
    subscribe_at(0, 100, id);
    snprintf(call, sizeof(call), "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"eth_unsubscribe\",\"params\":[%s]}", id);
    cr_assert_eq(ss_call(0, call), 1);
    cr_expect_str_eq(ss_last(), "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":true}");
    size_t polls = sc.natt;
    ss_chain.head = 110;
    ss_serve_for(5 * SS_POLL_MS);
    cr_expect_eq(sc.natt, polls, "no poll after the last subscriber left");
    cr_expect_eq(ss.net_count[STATE_SUBS_SOURCES + STATE_SRV_SUBS_NEWHEADS], 0);
    cr_expect_eq(ss.srv_set[STATE_SRV_SUBS_NEWHEADS], 0);
}

Test(sub_follow, a_failed_poll_is_asked_again_at_the_next_tick)
{
    char id[SUB_ID_MAX];
    ss_chain.head = 100;
    ss_subscribe(0, HEADS, id);
    ss_wait_msgs(1);
    sc_wait_attempts(1);
    sc_reply(0, 200, "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32000,\"message\":\"down\"}}");
    ss_serve_for(2 * SS_POLL_MS);
    size_t base = ss.nmsg;
    ss_chain.head = 101;
    ss_serve_msgs(base + 1);
    expect_head(0, base, 0, id, 101, 0);
}

Test(sub_follow, a_header_that_is_not_a_block_is_not_told)
{
    char id[SUB_ID_MAX];
    subscribe_at(0, 100, id);
    size_t base = ss.nmsg;
    /* answer the next latest poll by hand with things that are not blocks */
    static const char *const bad[] = {
        "null",
        "{\"number\":\"0x65\"}",
        "{\"number\":\"0x65\",\"hash\":\"0x12\",\"parentHash\":\"0x34\"}",
        ("{\"number\":\"65\",\"hash\":\"0x0000000000000000000000000000000000000000000000000000000000006500\","
         "\"parentHash\":\"0x0000000000000000000000000000000000000000000000000000000000006400\"}"), /* one string */
        "[1,2]",
    };
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        size_t n = sc.natt;
        sc_wait_attempts(n + 1);
        ss_answer(n, bad[k]);
    }
    sc_run_for(SS_POLL_MS);
    cr_expect_eq(ss_count(0, base), 0, "told %s", ss.nmsg > base ? ss_last() : "");
    ss_chain.head = 101;
    ss_serve_msgs(base + 1);
    expect_head(0, base, 0, id, 101, 0);
}

/* The header sent is the block's members but its body's, compact, in the
 * node's order: wire/'s scanner for a plain answer, a tree's print for one
 * with escapes or numbers a tree respells; byte for byte what clients were
 * always sent. Answered by hand: the next latest poll gets each block. */
static void expect_printed(const char *block, const char *want)
{
    char id[SUB_ID_MAX];
    subscribe_at(0, 100, id);
    size_t base = ss.nmsg, n = sc.natt;
    sc_wait_attempts(n + 1);
    ss_answer(n, block);
    ss_wait_msgs(base + 1);
    ss_expect_nth(0, base, 0, "eth_subscription", id, want);
}

#define H101 "\"0x0000000000000000000000000000000000000000000000000000000000006500\""
#define H100 "\"0x0000000000000000000000000000000000000000000000000000000000006400\""

Test(sub_follow, a_plain_header_is_sent_compact_without_its_body)
{
    expect_printed("{ \"number\" : \"0x65\",\n \"hash\": " H101 ", \"transactions\": [ {\"a\": 1} ], \"parentHash\": "
                   H100 ", \"size\": \"0x1\", \"size\": \"0x2\", \"gasUsed\": 21000, \"withdrawals\": [],"
                   " \"totalDifficulty\": \"0x0\", \"uncles\": [\"x y\"], \"ok\": true, \"n\": null}",
                   "{\"number\":\"0x65\",\"hash\":" H101 ",\"parentHash\":" H100 ",\"size\":\"0x2\","
                   "\"gasUsed\":21000,\"ok\":true,\"n\":null}");
}

Test(sub_follow, a_header_a_tree_respells_is_sent_as_before)
{
    expect_printed("{\"number\":\"0x65\",\"hash\":" H101 ",\"parentHash\":" H100 ",\"extraData\":\"a\\/b\\u00e9\","
                   "\"difficulty\":1.0,\"baseFee\":12345678901234567,\"size\":\"0x1\"}",
                   "{\"number\":\"0x65\",\"hash\":" H101 ",\"parentHash\":" H100 ",\"extraData\":\"a/b\xc3\xa9\","
                   "\"difficulty\":1,\"baseFee\":12345678901234568}");
}
