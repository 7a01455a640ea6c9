/* tests/pool/test_call_chain.c: the chain satellite (pool/pool_chain_call.c)
 * over the scripted transport: with the view's heads set, which endpoint a
 * latest read, a numbered block and a write go to, what happens when the
 * fit endpoint fails, and the head eth_blockNumber is answered with. */
#include "tests/pool/scripted.h"

#include "pool/pool_logs.h"

#include <criterion/parameterized.h>

#define BN "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_blockNumber\",\"params\":[]}"
#define BAL "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_getBalance\",\"params\":[\"0x00000000000000000000000000000000000000aa\",\"latest\"]}"
#define BLOCK_100 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_getBlockByNumber\",\"params\":[\"0x64\",false]}"
#define BLOCK_512 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_getBlockByNumber\",\"params\":[\"0x200\",false]}"
#define SEND "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_sendRawTransaction\",\"params\":[\"0x02f86b\"]}"
#define OK_NULL "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":null}"

TestSuite(call_chain, .fini = sc_close);

static sc_call_t c;

/* n endpoints whose heads the view holds (0: never seen), max_lag_blocks 2. */
static void open_at(const uint64_t *heads, size_t n)
{
    sc_conf(n);
    sc.conf.max_lag_blocks = 2;
    sc_open();
    for (size_t i = 0; i < n; i++)
        if (heads[i] != 0)
            pool_chain_observe_head(sc_ep((int)i), POLICY_HEAD_LATEST, heads[i], 1);
}

Test(call_chain, with_no_fit_endpoint_left_the_lagging_one_answers)
{
    open_at((const uint64_t[]){95, 100}, 2);
    sc_start_one(&c, BAL, 0);
    cr_assert_eq(sc_att(0)->ep, 1);
    sc_reply(0, 503, "");
    sc_wait_attempts(2);
    cr_expect_eq(sc_att(1)->ep, 0, "the next round: better a lagging answer than none");
    sc_reply(1, 200, OK_NULL);
    sc_wait_done(&c.done);
    sc_expect_answer(&c.item, 0, OK_NULL);
}

/* Where a call's first attempt goes, by the heads the view holds. */
typedef struct first_case {
    const char *name;
    uint64_t heads[3];            /* 0: never seen */
    size_t n;
    const char *raw;
    int want;
} first_case_t;

static const first_case_t first_cases[] = {
    {"a latest read skips an endpoint past max_lag", {95, 100, 99}, 3, BAL, 1},
    {"an endpoint never seen is no reason to skip", {0, 100}, 2, BAL, 0},
    {"a numbered block goes to an endpoint that has it", {99, 98, 100}, 3, BLOCK_100, 2},
    {"a block nobody has yet follows the plan", {99, 100}, 2, BLOCK_512, 0},
    {"a write is never gated", {50, 100}, 2, SEND, 0},
};

ParameterizedTestParameters(call_chain, first_attempt)
{
    static size_t idx[sizeof(first_cases) / sizeof(first_cases[0])];
    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        idx[i] = i;
    return cr_make_param_array(size_t, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(size_t *i, call_chain, first_attempt)
{
    const first_case_t *k = &first_cases[*i];
    open_at(k->heads, k->n);
    sc_start_one(&c, k->raw, 0);
    cr_assert_eq(sc.natt, 1, "%s: one attempt, the skipped endpoints sent nothing", k->name);
    cr_expect_eq(sc_att(0)->ep, k->want, "%s: sent to e%d", k->name, sc_att(0)->ep);
}

Test(call_chain, eth_block_number_is_answered_with_the_network_head)
{
    open_at((const uint64_t[]){99, 100}, 2);
    sc_start_one(&c, BN, 0);
    cr_assert_eq(sc_att(0)->ep, 0, "within max_lag_blocks: e0 may take it");
    sc_reply(0, 200, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"0x63\"}");
    sc_wait_done(&c.done);
    sc_expect_answer(&c.item, 0, "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":\"0x64\"}");
    cr_expect(sc_answer_id_is(&c.item, "0"), "the client's id goes over the 0");
    cr_expect_eq(sc.net->chain.floor[POLICY_HEAD_LATEST], 100);
}

Test(call_chain, a_higher_answer_raises_the_head_and_is_kept_as_it_is)
{
    open_at((const uint64_t[]){99, 100}, 2);
    sc_start_one(&c, BN, 0);
    const char *ans = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"0x65\"}";
    sc_reply(0, 200, ans);
    sc_wait_done(&c.done);
    sc_expect_answer(&c.item, 0, ans);
    cr_expect_eq(sc.net->chain.ep[0].head[POLICY_HEAD_LATEST], 101, "the answer is the endpoint's head");
    cr_expect_eq(sc.net->chain.floor[POLICY_HEAD_LATEST], 101);
}

Test(call_chain, a_null_for_a_block_another_endpoint_has_goes_to_the_next)
{
    open_at((const uint64_t[]){0, 100}, 2);
    sc_start_one(&c, BLOCK_100, 0);
    cr_assert_eq(sc_att(0)->ep, 0, "e0's head is unknown: it may take it");
    sc_reply(0, 200, OK_NULL);
    sc_wait_attempts(2);
    cr_expect_eq(sc_att(1)->ep, 1, "e0 is behind block 100, which e1 has");
    const char *block = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"number\":\"0x64\"}}";
    sc_reply(1, 200, block);
    sc_wait_done(&c.done);
    sc_expect_answer(&c.item, 1, block);
}

Test(call_chain, a_null_nobody_is_past_is_the_answer)
{
    open_at((const uint64_t[]){0, 99}, 2);
    sc_start_one(&c, BLOCK_100, 0);
    sc_reply(0, 200, OK_NULL);
    sc_wait_done(&c.done);
    sc_expect_answer(&c.item, 0, OK_NULL);
    cr_expect_eq(sc.natt, 1);
}

Test(call_chain, an_endpoint_that_failed_the_call_vouches_for_no_head)
{
    open_at((const uint64_t[]){100, 98}, 2);
    sc_start_one(&c, BN, 0);
    cr_assert_eq(sc_att(0)->ep, 0);
    sc_reply(0, 503, "");
    sc_wait_attempts(2);
    const char *ans = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"0x62\"}";
    sc_reply(1, 200, ans);
    sc_wait_done(&c.done);
    sc_expect_answer(&c.item, 1, ans); /* e0 at 100 just failed it: e1's own head is the answer */
}

Test(call_chain, a_fit_endpoint_that_is_full_leaves_the_call_to_the_others)
{
    open_at((const uint64_t[]){95, 100}, 2);
    sc_ep(1)->max_inflight = 1;
    sc_ep(1)->link.inflight = 1; /* busy with another call */
    sc_start_one(&c, BAL, 0);
    cr_assert_eq(sc.natt, 1, "an attempt, not an 'unavailable' without one");
    cr_expect_eq(sc_att(0)->ep, 0);
    sc_ep(1)->link.inflight = 0;
}

/* eth_getLogs over 0x1..0x7d0 (2,000 blocks) */
#define LOGS_2000 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_getLogs\",\"params\":[{\"fromBlock\":\"0x1\",\"toBlock\":\"0x7d0\"}]}"
#define LOG_AT(n) "{\"blockNumber\":\"" n "\",\"logIndex\":\"0x0\"}"

/* two endpoints that have every block, e0 taking max_logs_blocks blocks */
static void open_logs(uint32_t e0_blocks, uint32_t e1_blocks)
{
    sc_conf(2);
    sc.eps[0].max_logs_blocks = e0_blocks;
    sc.eps[1].max_logs_blocks = e1_blocks;
    sc_open();
    pool_chain_observe_head(sc_ep(0), POLICY_HEAD_LATEST, 5000, 1);
    pool_chain_observe_head(sc_ep(1), POLICY_HEAD_LATEST, 5000, 1);
}

Test(call_chain, get_logs_skips_an_endpoint_whose_max_logs_blocks_is_below_its_span)
{
    open_logs(1000, 2000);
    sc_start_one(&c, LOGS_2000, 0);
    cr_assert_eq(sc.natt, 1);
    cr_expect_eq(sc_att(0)->ep, 1, "e0 takes 1,000 blocks, the call spans 2,000");
}

Test(call_chain, get_logs_within_every_limit_follows_the_plan)
{
    open_logs(2000, 0);
    sc_start_one(&c, LOGS_2000, 0);
    cr_expect_eq(sc_att(0)->ep, 0);
}

Test(call_chain, get_logs_answered_outside_its_range_goes_to_the_next_endpoint)
{
    open_logs(0, 0);
    sc_start_one(&c, LOGS_2000, 0);
    cr_assert_eq(sc_att(0)->ep, 0);
    /* e0 ignored the range: a log of block 0x1388 */
    sc_reply(0, 200, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":[" LOG_AT("0x5") "," LOG_AT("0x1388") "]}");
    sc_wait_attempts(2);
    cr_expect_eq(sc_att(1)->ep, 1, "a wrong answer is a failed attempt");
    const char *good = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":[" LOG_AT("0x5") "," LOG_AT("0x7d0") "]}";
    sc_reply(1, 200, good);
    sc_wait_done(&c.done);
    sc_expect_answer(&c.item, 1, good);
}

Test(call_chain, get_logs_split_size_is_the_widest_usable_endpoints)
{
    open_logs(1000, 2000);
    cr_expect_eq(pool_logs_blocks(sc.net), 2000);
    sc_close();
    open_logs(1000, 0);
    cr_expect_eq(pool_logs_blocks(sc.net), 0, "one endpoint takes any range: nothing is split before a refusal");
}

Test(call_chain, get_logs_tags_resolve_from_the_view)
{
    open_logs(1000, 1000);
    uint64_t n = 0;
    cr_expect_eq(pool_logs_resolve(sc.net, POLICY_TAG_LATEST, &n), SL_OK);
    cr_expect_eq(n, 5000);
    cr_expect_eq(pool_logs_resolve(sc.net, POLICY_TAG_EARLIEST, &n), SL_OK);
    cr_expect_eq(n, 0);
    cr_expect_eq(pool_logs_resolve(sc.net, POLICY_TAG_FINALIZED, &n), SL_ERR_NOT_FOUND, "no finalized head reported");
}
