/* tests/sub/test_sub_sol_batch.c: Solana's polled kinds on the scripted
 * pool: the merged account and signature polls (sub/sub_sol_batch.c: one
 * getMultipleAccounts / getSignatureStatuses for every source of a network
 * with the same options, split into chunks at the node's limits, each
 * member told its own part of the answer in the shape of the single call)
 * and the slot and root polls (sub/sub_sol.c). A model of the node answers
 * from per-account lamports and per-signature statuses the test sets. */
#include "sub/sub_sol_batch.h"
#include "tests/sub/scripted_sub.h"

#define NACCT 128

static struct {
    uint64_t slot;                /* context.slot of the answers */
    int lamports[NACCT];          /* < 0: the account does not exist (null) */
    const char *status[NACCT];    /* a signature's status object, NULL: none yet */
    uint64_t get_slot[2];         /* getSlot at processed, finalized */
    int short_value;              /* the next getMultipleAccounts answers one value too few */
    size_t calls;                 /* getMultipleAccounts / getSignatureStatuses answered */
} node;

/* Account i's base58 name ("Acct" and 36 characters, no '0'). */
static void acct_name(char *out, int i)
{
    snprintf(out, 48, "Acct11111111111111111111111111111%07d", i);
    for (char *p = out; *p; p++)
        if (*p == '0')
            *p = 'z';
}

static void sig(char *out, int i)
{
    snprintf(out, 96, "Sig1111111111111111111111111111111111111111111111111111111111111111111111111111%07d", i);
    for (char *p = out; *p; p++)
        if (*p == '0')
            *p = 'z';
}

static int index_of(const char *name)
{
    char digits[8];
    memcpy(digits, name + strlen(name) - 7, 8);
    for (char *p = digits; *p; p++)
        if (*p == 'z')
            *p = '0';
    return atoi(digits);
}

static void account_value(sl_buf_t *out, int i)
{
    if (node.lamports[i] < 0)
        sl_buf_append_str(out, "null");
    else
        sl_buf_printf(out, "{\"data\":[\"\",\"base58\"],\"executable\":false,\"lamports\":%d,\"owner\":"
                      "\"11111111111111111111111111111111\",\"rentEpoch\":0,\"space\":0}", node.lamports[i]);
}

static int node_answer(const char *method, const char *params, sl_buf_t *out)
{
    if (strcmp(method, "getSlot") == 0) {
        sl_buf_printf(out, "%" PRIu64, node.get_slot[strstr(params, "finalized") != NULL]);
        return 1;
    }
    int accounts = strcmp(method, "getMultipleAccounts") == 0;
    cr_assert(accounts || strcmp(method, "getSignatureStatuses") == 0, "%s", method);
    node.calls++;
    cJSON *p = cJSON_Parse(params), *x;
    cr_assert(cJSON_IsArray(cJSON_GetArrayItem(p, 0)), "%s", params);
    sl_buf_printf(out, "{\"context\":{\"apiVersion\":\"2.0.1\",\"slot\":%" PRIu64 "},\"value\":[", node.slot);
    int k = 0, skip = accounts && node.short_value;
    node.short_value = 0;
    cJSON_ArrayForEach(x, cJSON_GetArrayItem(p, 0))
    {
        if (skip-- > 0)
            continue;
        int i = index_of(x->valuestring);
        sl_buf_append_str(out, k++ > 0 ? "," : "");
        if (accounts)
            account_value(out, i);
        else
            sl_buf_append_str(out, node.status[i] != NULL ? node.status[i] : "null");
    }
    sl_buf_append_str(out, "]}");
    cJSON_Delete(p);
    return 1;
}

static void setup(void)
{
    memset(&node, 0, sizeof(node));
    node.slot = 500;
    ss.responder = node_answer;
    ss_limits_default();
    ss_open(POLICY_CHAIN_SOLANA);
    ss_client(0, "key:a");
    ss_client(1, "key:b");
    ss_client(2, "key:c");
}

static void teardown(void)
{
    ss_close();
}

TestSuite(sub_sol_batch, .init = setup, .fini = teardown, .timeout = 10);

static void subscribe_account(int client, int i, const char *cfg, char *id)
{
    char name[48], call[300];
    acct_name(name, i);
    snprintf(call, sizeof(call), "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"accountSubscribe\",\"params\":[\"%s\"%s%s]}",
             i, name, cfg != NULL ? "," : "", cfg != NULL ? cfg : "");
    ss_subscribe(client, call, id);
}

static void expect_account(int client, size_t from, size_t k, const char *id, int i)
{
    sl_buf_t r;
    sl_buf_init(&r);
    sl_buf_printf(&r, "{\"context\":{\"apiVersion\":\"2.0.1\",\"slot\":%" PRIu64 "},\"value\":", node.slot);
    account_value(&r, i);
    sl_buf_append_str(&r, "}");
    sl_buf_append_char(&r, '\0');
    ss_expect_nth(client, from, k, "accountNotification", id, r.base);
    sl_buf_dispose(&r);
}

static int pred_calls(const void *arg)
{
    return node.calls >= *(const size_t *)arg;
}

/* Serves until n merged calls were answered in all. */
static void serve_calls(size_t n)
{
    ss_serve_until(pred_calls, &n, SC_LIMIT_MS, "merged polls");
}

Test(sub_sol_batch, one_call_for_every_account_and_each_told_its_own_change)
{
    char id[3][SUB_ID_MAX];
    for (int i = 0; i < 3; i++) {
        node.lamports[i] = 1000 + i;
        subscribe_account(i, i, NULL, id[i]);
    }
    serve_calls(1);
    /* the first round asks the three in one call, in the order they came */
    cr_assert_eq(ss_atts("getMultipleAccounts"), 1, "one call, not three");
    char a0[48], a1[48], a2[48], want[300];
    acct_name(a0, 0), acct_name(a1, 1), acct_name(a2, 2);
    snprintf(want, sizeof(want), "\"params\":[[\"%s\",\"%s\",\"%s\"],{\"commitment\":\"finalized\",\"encoding\":\"base58\"}]",
             a0, a1, a2);
    cr_expect(strstr(sc_att(0)->body, want) != NULL, "%s", sc_att(0)->body);
    cr_expect_eq(ss.nmsg, 3, "the first read is where each stands: nothing told");
    size_t base = ss.nmsg;
    node.lamports[1] = 7;
    node.slot = 501;
    serve_calls(3);
    ss_serve_for(SS_POLL_MS);
    cr_assert_eq(ss_count(1, base), 1, "client 1's account changed");
    expect_account(1, base, 0, id[1], 1);
    cr_expect_eq(ss_count(0, base) + ss_count(2, base), 0, "the others did not");
    cr_expect_eq(ss.cost[STATE_SUB_POLLS_ACCOUNT], (int64_t)ss_atts("getMultipleAccounts"));
}

Test(sub_sol_batch, an_answer_of_the_wrong_length_tells_nobody)
{
    char id[2][SUB_ID_MAX];
    for (int i = 0; i < 2; i++) {
        node.lamports[i] = 5;
        subscribe_account(i, i, NULL, id[i]);
    }
    serve_calls(1);
    size_t base = ss.nmsg;
    node.lamports[0] = node.lamports[1] = 6;
    node.short_value = 1; /* value[0] would be account 1's: told to nobody rather than to the wrong member */
    serve_calls(2);
    cr_expect_eq(ss.nmsg, base, "told %s", ss.nmsg > base ? ss_last() : "");
    serve_calls(3);
    ss_serve_for(SS_POLL_MS);
    cr_expect_eq(ss_count(0, base), 1);
    cr_expect_eq(ss_count(1, base), 1);
    expect_account(0, base, 0, id[0], 0);
}

Test(sub_sol_batch, an_account_gone_is_not_told_its_return_is)
{
    char id[SUB_ID_MAX];
    node.lamports[3] = 10;
    subscribe_account(0, 3, NULL, id);
    serve_calls(1);
    size_t base = ss.nmsg;
    node.lamports[3] = -1;
    serve_calls(3);
    cr_expect_eq(ss.nmsg, base, "null is not told");
    node.lamports[3] = 11;
    serve_calls(4);
    ss_serve_for(SS_POLL_MS);
    cr_assert_eq(ss_count(0, base), 1);
    expect_account(0, base, 0, id, 3);
}

Test(sub_sol_batch, other_options_are_another_batch)
{
    char id[SUB_ID_MAX];
    subscribe_account(0, 0, NULL, id);
    subscribe_account(1, 1, "{\"commitment\":\"confirmed\",\"encoding\":\"base64\"}", id);
    subscribe_account(2, 2, "{\"encoding\":\"base58\",\"commitment\":\"finalized\"}", id); /* the first's */
    serve_calls(2);
    ss_serve_for(SS_POLL_MS / 2);
    size_t with3 = 0, conf = 0;
    for (size_t i = 0; i < sc.natt && i < 2; i++) {
        with3 += strstr(sc_att(i)->body, "finalized") != NULL;
        conf += strstr(sc_att(i)->body, "{\"commitment\":\"confirmed\",\"encoding\":\"base64\"}") != NULL;
    }
    cr_expect_eq(with3, 1);
    cr_expect_eq(conf, 1);
    cr_expect_eq(ss.net_count[STATE_SUBS_SOURCES + STATE_SRV_SUBS_ACCOUNT], 3, "three sources, two merged polls");
}

Test(sub_sol_batch, more_accounts_than_a_call_takes_split_into_chunks)
{
    int n = SUB_SOL_ACCOUNTS_MAX + 5;
    char id[SUB_ID_MAX], last[SUB_ID_MAX];
    for (int i = 0; i < n; i++) {
        node.lamports[i] = i;
        subscribe_account(i % 3, i, NULL, i == n - 1 ? last : id);
    }
    serve_calls(2);
    cr_assert_geq(sc.natt, 2);
    size_t in0 = 0, in1 = 0;
    for (const char *p = sc_att(0)->body; (p = strstr(p, "\"Acct")) != NULL; p++)
        in0++;
    for (const char *p = sc_att(1)->body; (p = strstr(p, "\"Acct")) != NULL; p++)
        in1++;
    cr_expect_eq(in0, SUB_SOL_ACCOUNTS_MAX, "a node's limit a call");
    cr_expect_eq(in1, 5);
    /* the second chunk's members are told from the second answer */
    size_t base = ss.nmsg;
    node.lamports[n - 1] = 9999;
    serve_calls(6);
    ss_serve_for(SS_POLL_MS);
    cr_assert_eq(ss_count((n - 1) % 3, base), 1);
    expect_account((n - 1) % 3, base, 0, last, n - 1);
}

Test(sub_sol_batch, a_member_that_leaves_mid_round_is_told_nothing)
{
    char a[SUB_ID_MAX], b[SUB_ID_MAX], call[200];
    node.lamports[0] = node.lamports[1] = 1;
    subscribe_account(0, 0, NULL, a);
    subscribe_account(1, 1, NULL, b);
    serve_calls(1);
    ss.responder = NULL;
    size_t att = sc.natt;
    sc_wait_attempts(att + 1); /* the next round, held */
    node.lamports[0] = node.lamports[1] = 2;
    snprintf(call, sizeof(call), "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"accountUnsubscribe\",\"params\":[%s]}", a);
    cr_assert_eq(ss_call(0, call), 1);
    size_t base = ss.nmsg;
    cr_assert(ss_answer_with(att, node_answer));
    sc_run_for(SS_POLL_MS / 2);
    cr_expect_eq(ss_count(0, base), 0, "client 0 left");
    cr_expect_eq(ss_count(1, base), 1);
}

/* ---- signatures ---- */

static void subscribe_sig(int client, int i, const char *commitment, char *id)
{
    char name[96], call[400];
    sig(name, i);
    snprintf(call, sizeof(call), "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"signatureSubscribe\",\"params\":[\"%s\""
             ",{\"commitment\":\"%s\"}]}", name, commitment);
    ss_subscribe(client, call, id);
}

Test(sub_sol_batch, a_signature_is_told_once_at_its_commitment_then_ends)
{
    char a[SUB_ID_MAX], b[SUB_ID_MAX], call[200];
    subscribe_sig(0, 0, "confirmed", a);
    subscribe_sig(1, 1, "finalized", b);
    serve_calls(1);
    cr_expect(strstr(sc_att(0)->body, "{\"searchTransactionHistory\":false}") != NULL, "%s", sc_att(0)->body);
    cr_expect_eq(ss_atts("getSignatureStatuses"), 1, "both in one call");
    size_t base = ss.nmsg;
    node.status[0] = "{\"slot\":499,\"confirmations\":1,\"err\":null,\"confirmationStatus\":\"processed\"}";
    serve_calls(3);
    cr_expect_eq(ss.nmsg, base, "processed is below confirmed");
    node.status[0] = "{\"slot\":499,\"confirmations\":2,\"err\":{\"InstructionError\":[0,{\"Custom\":1}]},"
                     "\"confirmationStatus\":\"confirmed\"}";
    node.status[1] = "{\"slot\":499,\"confirmations\":2,\"err\":null,\"confirmationStatus\":\"confirmed\"}";
    serve_calls(5);
    ss_serve_for(2 * SS_POLL_MS);
    cr_assert_eq(ss_count(0, base), 1, "once");
    ss_expect_nth(0, base, 0, "signatureNotification", a,
                  "{\"context\":{\"slot\":500},\"value\":{\"err\":{\"InstructionError\":[0,{\"Custom\":1}]}}}");
    cr_expect_eq(ss_count(1, base), 0, "finalized not reached");
    cr_expect_eq(ss.srv_set[STATE_SRV_SUBS_SIGNATURE], 1, "the told one ended");
    snprintf(call, sizeof(call), "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"signatureUnsubscribe\",\"params\":[%s]}", a);
    cr_assert_eq(ss_call(0, call), 1);
    cr_expect_str_eq(ss_last(), "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":false}");
    /* an old node's status without confirmationStatus is rooted */
    node.status[1] = "{\"slot\":499,\"confirmations\":null,\"err\":null}";
    base = ss.nmsg;
    ss_serve_msgs(base + 1);
    ss_expect_nth(1, base, 0, "signatureNotification", b, "{\"context\":{\"slot\":500},\"value\":{\"err\":null}}");
    cr_expect_eq(ss.srv_set[STATE_SRV_SUBS_SIGNATURE], 0);
}

/* ---- slot and root ---- */

Test(sub_sol_batch, slots_are_told_one_by_one_never_backwards)
{
    char id[SUB_ID_MAX];
    node.get_slot[0] = 10;
    node.get_slot[1] = 8;
    ss_subscribe(0, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"slotSubscribe\"}", id);
    size_t base = ss.nmsg;
    ss_serve_msgs(base + 1);
    cr_expect(strstr(sc_att(0)->body, "[{\"jsonrpc\":\"2.0\"") == sc_att(0)->body, "one batch of two getSlot");
    ss_expect_nth(0, base, 0, "slotNotification", id, "{\"parent\":9,\"root\":8,\"slot\":10}");
    node.get_slot[0] = 9; /* behind the one told: nothing */
    ss_serve_for(3 * SS_POLL_MS);
    cr_expect_eq(ss_count(0, base), 1);
    node.get_slot[0] = 13;
    node.get_slot[1] = 12;
    ss_serve_msgs(base + 4);
    ss_expect_nth(0, base, 1, "slotNotification", id, "{\"parent\":10,\"root\":11,\"slot\":11}");
    ss_expect_nth(0, base, 2, "slotNotification", id, "{\"parent\":11,\"root\":12,\"slot\":12}");
    ss_expect_nth(0, base, 3, "slotNotification", id, "{\"parent\":12,\"root\":12,\"slot\":13}");
    cr_expect_gt(ss.cost[STATE_SUB_POLLS_SLOT], 0);
}

Test(sub_sol_batch, roots_are_told_when_they_move)
{
    char id[SUB_ID_MAX];
    node.get_slot[1] = 40;
    ss_subscribe(0, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"rootSubscribe\",\"params\":[]}", id);
    size_t base = ss.nmsg;
    ss_serve_msgs(base + 1);
    ss_expect_nth(0, base, 0, "rootNotification", id, "40");
    ss_serve_for(3 * SS_POLL_MS);
    cr_expect_eq(ss_count(0, base), 1, "the same root is not told again");
    node.get_slot[1] = 44;
    ss_serve_msgs(base + 2);
    ss_expect_nth(0, base, 1, "rootNotification", id, "44");
}

/* ---- the bytes of what is told ---- */

/* An answer's numbers a tree respells (a u64 rentEpoch) are told as the
 * tree always printed them: per value, whatever the other members are. */
static const char *odd_value;

static int odd_answer(const char *method, const char *params, sl_buf_t *out)
{
    (void)params;
    cr_assert_str_eq(method, "getMultipleAccounts");
    node.calls++;
    sl_buf_printf(out, "{ \"context\" : { \"slot\" : %" PRIu64 " } , \"value\" : [ %s , null ] }", node.slot, odd_value);
    return 1;
}

Test(sub_sol_batch, values_are_told_as_a_tree_printed_them)
{
    char a[SUB_ID_MAX], b[SUB_ID_MAX];
    ss.responder = odd_answer;
    odd_value = "{\"lamports\": 1, \"rentEpoch\": 18446744073709551615, \"data\": [\"\", \"base64\"]}";
    subscribe_account(0, 0, NULL, a);
    subscribe_account(1, 1, NULL, b);
    serve_calls(1);
    size_t base = ss.nmsg;
    odd_value = "{\"lamports\": 2, \"rentEpoch\": 18446744073709551615, \"data\": [\"\", \"base64\"]}";
    ss_serve_msgs(base + 1);
    ss_expect_nth(0, base, 0, "accountNotification", a,
                  "{\"context\":{\"slot\":500},\"value\":{\"lamports\":2,\"rentEpoch\":1.8446744073709552e+19,"
                  "\"data\":[\"\",\"base64\"]}}");
    odd_value = "{\"lamports\": 3, \"owner\": \"a\\/b\\u0041\"}"; /* escapes: the tree's path */
    ss_serve_msgs(base + 2);
    ss_expect_nth(0, base, 1, "accountNotification", a,
                  "{\"context\":{\"slot\":500},\"value\":{\"lamports\":3,\"owner\":\"a/bA\"}}");
    cr_expect_eq(ss_count(1, base), 0, "null is never told");
}

static int escaped_status(const char *method, const char *params, sl_buf_t *out)
{
    (void)params;
    cr_assert_str_eq(method, "getSignatureStatuses");
    node.calls++;
    sl_buf_append_str(out, "{\"context\":{\"slot\":77},\"value\":[{\"confirmationStatus\":\"confirm\\u0065d\","
                           "\"err\":{\"m\":\"x\\ty\"},\"slot\":70}]}");
    return 1;
}

Test(sub_sol_batch, a_status_with_escapes_is_read_as_the_tree_read_it)
{
    char a[SUB_ID_MAX];
    ss.responder = escaped_status;
    subscribe_sig(0, 0, "confirmed", a);
    size_t base = ss.nmsg;
    ss_serve_msgs(base + 1);
    ss_expect_nth(0, base, 0, "signatureNotification", a,
                  "{\"context\":{\"slot\":77},\"value\":{\"err\":{\"m\":\"x\\ty\"}}}");
}

/* ---- the poll loop (sub/sub_poll.c) ---- */

/* The chain view's head moves (as an upstream WebSocket's slotSubscribe
 * moves it): the slot poll runs at once, not a (long) interval later. */
Test(sub_sol_batch, a_head_the_chain_view_learns_wakes_the_slot_poll)
{
    char id[SUB_ID_MAX];
    ss.conf.ranking.probe_interval_ms = 60000; /* no tick in this test */
    node.get_slot[0] = 10;
    node.get_slot[1] = 8;
    ss_subscribe(0, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"slotSubscribe\"}", id);
    size_t base = ss.nmsg;
    ss_serve_msgs(base + 1);
    ss_serve_for(5 * SUB_WATCH_MS);
    /* (the first answer may move the view's head itself: a second poll) */
    size_t polls = sc.natt;
    cr_expect_leq(polls, 2, "a poll at start, none on the interval");
    node.get_slot[0] = 11;
    uint64_t head = pool_network_head(sc.net) + 50;
    policy_chainview_obs_t obs = {.kind = pool_chain_probe_kind(sc.net), .height = head, .is_head = 1};
    policy_chainview_change_t chg;
    policy_chainview_observe(&sc.net->chain, 0, &obs, sl_now_ms(), &chg);
    cr_assert_eq(pool_network_head(sc.net), head, "the view's head moved");
    ss_serve_msgs(base + 2);
    cr_expect_eq(sc.natt, polls + 1, "woken once");
    ss_expect_nth(0, base, 1, "slotNotification", id, "{\"parent\":10,\"root\":8,\"slot\":11}");
    ss_serve_for(5 * SUB_WATCH_MS);
    cr_expect_eq(sc.natt, polls + 1, "the same head wakes it no more");
}
