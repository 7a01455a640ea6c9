/* tests/sub/test_sub_sol_logs.c: Solana's logsSubscribe polled
 * (sub/sub_sol_logs.c) on the scripted pool, a model node answering
 * getSignaturesForAddress and getTransaction: the newest signature at
 * subscribe is the starting point (not told), each later transaction told
 * once, oldest first, with its logs and err as a tree printed them. */
#include "tests/sub/scripted_sub.h"

#define NSIG 64
#define ADDR "Vote111111111111111111111111111111111111111"
#define SUBSCRIBE "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"logsSubscribe\",\"params\":[{\"mentions\":[\"" ADDR "\"]}]}"

static struct {
    int nsig;                     /* signatures 0..nsig-1 exist, 0 oldest */
    int readable;                 /* getTransaction reads the ones below this; null above */
    const char *logs[NSIG];       /* a transaction's logMessages (NULL: the default) */
    const char *err[NSIG];        /* its meta.err (NULL: null) */
} node;

static void sig(char *out, int i)
{
    snprintf(out, 96, "S111111111111111111111111111111111111111111111111111111111111111111111%07d", i);
    for (char *p = out; *p; p++)
        if (*p == '0')
            *p = 'z';
}

static int sig_index(const char *s)
{
    char digits[8];
    memcpy(digits, s + 71, 7);
    digits[7] = '\0';
    for (char *p = digits; *p; p++)
        if (*p == 'z')
            *p = '0';
    return atoi(digits);
}

#define DEFAULT_LOGS "[\"Program 11111111111111111111111111111111 invoke [1]\",\"Program log: hi\"]"

static int node_answer(const char *method, const char *params, sl_buf_t *out)
{
    if (strcmp(method, "getSignaturesForAddress") == 0) {
        cr_assert(strstr(params, ADDR) != NULL, "%s", params);
        const char *until = strstr(params, "\"until\":\"");
        int stop = until != NULL ? sig_index(until + 9) : -1;
        int limit = strstr(params, "\"limit\":1}") != NULL || strstr(params, "\"limit\":1,") != NULL ? 1 : 1000;
        sl_buf_append_char(out, '[');
        int k = 0;
        for (int i = node.nsig - 1; i > stop && k < limit; i--, k++) {
            char s[96];
            sig(s, i);
            sl_buf_printf(out, "%s{\"signature\":\"%s\",\"slot\":%d,\"err\":null,\"memo\":null}", k > 0 ? "," : "", s,
                          100 + i);
        }
        sl_buf_append_char(out, ']');
        return 1;
    }
    cr_assert_str_eq(method, "getTransaction");
    int i = sig_index(params + 2);
    if (i >= node.readable) {
        sl_buf_append_str(out, "null");
        return 1;
    }
    sl_buf_printf(out, "{ \"slot\": %d, \"blockTime\": 1700000000, \"meta\": { \"fee\": 5000, \"err\": %s, "
                  "\"logMessages\": %s, \"preBalances\": [18446744073709551615] }, \"transaction\": {} }", 100 + i,
                  node.err[i] != NULL ? node.err[i] : "null", node.logs[i] != NULL ? node.logs[i] : DEFAULT_LOGS);
    return 1;
}

static void setup(void)
{
    memset(&node, 0, sizeof(node));
    ss.responder = node_answer;
    ss_limits_default();
    ss_open(POLICY_CHAIN_SOLANA);
    ss_client(0, "key:a");
}

static void teardown(void)
{
    ss_close();
}

TestSuite(sub_sol_logs, .init = setup, .fini = teardown, .timeout = 10);

static void expect_tx(size_t from, size_t k, const char *id, int i, const char *err, const char *logs)
{
    char s[96], want[1024];
    sig(s, i);
    snprintf(want, sizeof(want), "{\"context\":{\"slot\":%d},\"value\":{\"signature\":\"%s\",\"err\":%s,\"logs\":%s}}",
             100 + i, s, err, logs);
    ss_expect_nth(0, from, k, "logsNotification", id, want);
}

Test(sub_sol_logs, later_transactions_are_told_once_oldest_first)
{
    char id[SUB_ID_MAX];
    node.nsig = node.readable = 3;
    ss_subscribe(0, SUBSCRIBE, id);
    ss_serve_for(4 * SS_POLL_MS);
    size_t base = ss.nmsg;
    cr_expect_eq(ss_count(0, 0), 1, "the ones before the subscribe are not told");
    node.nsig = node.readable = 6;
    ss_serve_msgs(base + 3);
    ss_serve_for(4 * SS_POLL_MS);
    cr_assert_eq(ss_count(0, base), 3, "3, 4, 5 once each");
    for (int k = 0; k < 3; k++)
        expect_tx(base, (size_t)k, id, 3 + k, "null", DEFAULT_LOGS);
    cr_expect_gt(ss.cost[STATE_SUB_POLLS_SOL_LOGS], 0);
}

Test(sub_sol_logs, a_transaction_not_readable_yet_waits_and_keeps_the_order)
{
    char id[SUB_ID_MAX];
    node.nsig = node.readable = 1;
    ss_subscribe(0, SUBSCRIBE, id);
    ss_serve_for(3 * SS_POLL_MS);
    size_t base = ss.nmsg;
    node.nsig = 3; /* 1 and 2 listed, not readable */
    ss_serve_for(5 * SS_POLL_MS);
    cr_expect_eq(ss_count(0, base), 0);
    node.readable = 3;
    ss_serve_msgs(base + 2);
    expect_tx(base, 0, id, 1, "null", DEFAULT_LOGS);
    expect_tx(base, 1, id, 2, "null", DEFAULT_LOGS);
}

Test(sub_sol_logs, logs_and_err_are_told_as_a_tree_printed_them)
{
    char id[SUB_ID_MAX];
    node.nsig = node.readable = 1;
    ss_subscribe(0, SUBSCRIBE, id);
    ss_serve_for(3 * SS_POLL_MS);
    size_t base = ss.nmsg;
    node.err[1] = "{ \"InstructionError\": [ 0, { \"Custom\": 6001 } ] }";
    node.logs[2] = "[ \"Program log: \\\"quoted\\\" \\u00e9\\/\" ]"; /* escapes: read through a tree */
    node.logs[3] = "[]";
    node.nsig = node.readable = 4;
    ss_serve_msgs(base + 3);
    expect_tx(base, 0, id, 1, "{\"InstructionError\":[0,{\"Custom\":6001}]}", DEFAULT_LOGS);
    expect_tx(base, 1, id, 2, "null", "[\"Program log: \\\"quoted\\\" \xc3\xa9/\"]");
    expect_tx(base, 2, id, 3, "null", "[]");
}
