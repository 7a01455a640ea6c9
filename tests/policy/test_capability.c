/* tests/policy/test_capability.c: what an answer says an endpoint does not
 * serve, and the memory of it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "policy/capability.h"

static wire_rpc_error_t err(int64_t code, const char *msg)
{
    wire_rpc_error_t e;
    memset(&e, 0, sizeof(e));
    e.has_code = 1;
    e.code = code;
    snprintf(e.message, sizeof(e.message), "%s", msg);
    return e;
}

#define UNSUP POLICY_VERDICT_UNSUPPORTED
#define MISSING POLICY_VERDICT_MISSING_DATA

Test(capability, method_not_served)
{
    wire_rpc_error_t e = err(-32601, "the method trace_block does not exist/is not available");
    cr_expect_eq(policy_capability_classify(UNSUP, 0, &e, 0, 128), POLICY_CAPABILITY_METHOD);
    e = err(-32601, "whatever");
    cr_expect_eq(policy_capability_classify(UNSUP, 0, &e, 0, 128), POLICY_CAPABILITY_METHOD);
    e = err(-32000, "trace_block is not whitelisted");
    cr_expect_eq(policy_capability_classify(UNSUP, 0, &e, 0, 128), POLICY_CAPABILITY_METHOD);
    e = err(-32004, "Method not supported");
    cr_expect_eq(policy_capability_classify(UNSUP, 0, &e, 0, 128), POLICY_CAPABILITY_METHOD);
    e = err(-32000, "debug_traceTransaction is not included in your current plan");
    cr_expect_eq(policy_capability_classify(UNSUP, 0, &e, 0, 128), POLICY_CAPABILITY_METHOD);
}

Test(capability, other_refusals_say_nothing_lasting)
{
    /* a range too large: a narrower eth_getLogs passes */
    wire_rpc_error_t e = err(-32005, "query returned more than 10000 results, not supported");
    cr_expect_eq(policy_capability_classify(UNSUP, POLICY_VERDICT_F_LOGS_RANGE, &e, 0, 128), POLICY_CAPABILITY_NONE);
    /* bad params, whatever the words */
    e = err(-32602, "method not found in params");
    cr_expect_eq(policy_capability_classify(UNSUP, 0, &e, 0, 128), POLICY_CAPABILITY_NONE);
    e = err(-32600, "invalid request");
    cr_expect_eq(policy_capability_classify(UNSUP, 0, &e, 0, 128), POLICY_CAPABILITY_NONE);
    /* an unsupported answer without such words */
    e = err(-32001, "resource not found");
    cr_expect_eq(policy_capability_classify(UNSUP, 0, &e, 0, 128), POLICY_CAPABILITY_NONE);
    /* not an unsupported verdict at all */
    e = err(-32601, "method not found");
    cr_expect_eq(policy_capability_classify(POLICY_VERDICT_TRANSIENT, 0, &e, 0, 128), POLICY_CAPABILITY_NONE);
    cr_expect_eq(policy_capability_classify(UNSUP, 0, NULL, 0, 128), POLICY_CAPABILITY_NONE);
}

Test(capability, depth_only_deep_below_the_head)
{
    wire_rpc_error_t e = err(-32000, "missing trie node 0123abcd (path )");
    cr_expect_eq(policy_capability_classify(MISSING, 0, &e, 5000, 128), POLICY_CAPABILITY_DEPTH);
    /* near the head the same words mean a node behind or syncing */
    cr_expect_eq(policy_capability_classify(MISSING, 0, &e, 100, 128), POLICY_CAPABILITY_NONE);
    cr_expect_eq(policy_capability_classify(MISSING, 0, &e, 0, 128), POLICY_CAPABILITY_NONE);
    e = err(-32000, "header not found");
    cr_expect_eq(policy_capability_classify(MISSING, POLICY_VERDICT_F_BEHIND, &e, 100000, 128),
                 POLICY_CAPABILITY_DEPTH);
    e = err(-32000, "historical state 0xabc is not available");
    cr_expect_eq(policy_capability_classify(MISSING, 0, &e, 100000, 128), POLICY_CAPABILITY_DEPTH);
    /* a lookup's missing transaction says nothing of depth */
    e = err(-32000, "transaction not found");
    cr_expect_eq(policy_capability_classify(MISSING, 0, &e, 100000, 128), POLICY_CAPABILITY_NONE);
}

Test(capability, methods_remembered_until_the_ttl)
{
    policy_capability_mem_t m;
    memset(&m, 0, sizeof(m));
    cr_expect_eq(policy_capability_learn_method(&m, "trace_block", 11, 1000, 500), 1);
    cr_expect_eq(policy_capability_learn_method(&m, "trace_block", 11, 1100, 500), 0, "renewed, not news");
    cr_expect(policy_capability_lacks_method(&m, "trace_block", 11, 1599));
    cr_expect(!policy_capability_lacks_method(&m, "trace_call", 10, 1200));
    cr_expect(!policy_capability_lacks_method(&m, "trace_bloc", 10, 1200), "a prefix is another name");
    cr_expect(!policy_capability_lacks_method(&m, "trace_block", 11, 1600), "expired");
    char name[64];
    uint64_t depth = 7;
    cr_expect_eq(policy_capability_forget_one(&m, 1599, name, sizeof(name), &depth), 0);
    cr_expect_eq(policy_capability_forget_one(&m, 1600, name, sizeof(name), &depth), 1);
    cr_expect_str_eq(name, "trace_block");
    cr_expect_eq(depth, 0);
    cr_expect_eq(policy_capability_forget_one(&m, 1600, name, sizeof(name), &depth), 0);
    cr_expect_eq(policy_capability_learn_method(&m, "trace_block", 11, 2000, 500), 1, "news again");
    cr_expect_eq(policy_capability_learn_method(&m, "trace_block", 11, 2000, 0), 0, "ttl 0: learning is off");
    char longname[80];
    memset(longname, 'x', sizeof(longname));
    cr_expect_eq(policy_capability_learn_method(&m, longname, sizeof(longname), 2000, 500), 0);
}

Test(capability, a_full_memory_makes_room_from_the_oldest)
{
    policy_capability_mem_t m;
    memset(&m, 0, sizeof(m));
    char name[16];
    for (int i = 0; i < POLICY_CAPABILITY_METHODS; i++) {
        int n = snprintf(name, sizeof(name), "m_%02d", i);
        cr_expect_eq(policy_capability_learn_method(&m, name, (size_t)n, 1000 + (uint64_t)i, 1000), 1);
    }
    cr_expect_eq(policy_capability_learn_method(&m, "m_new", 5, 2000, 1000), 1);
    cr_expect(policy_capability_lacks_method(&m, "m_new", 5, 2001));
    cr_expect(!policy_capability_lacks_method(&m, "m_00", 4, 1500), "the one expiring first made room");
    cr_expect(policy_capability_lacks_method(&m, "m_01", 4, 1500));
}

Test(capability, depth_remembered_shallowest_first)
{
    policy_capability_mem_t m;
    memset(&m, 0, sizeof(m));
    cr_expect(!policy_capability_lacks_depth(&m, 100000, 0));
    cr_expect_eq(policy_capability_learn_depth(&m, 5000, 1000, 500), 1);
    cr_expect(policy_capability_lacks_depth(&m, 5000, 1200));
    cr_expect(policy_capability_lacks_depth(&m, 9000, 1200));
    cr_expect(!policy_capability_lacks_depth(&m, 4999, 1200));
    cr_expect(!policy_capability_lacks_depth(&m, 0, 1200));
    cr_expect_eq(policy_capability_learn_depth(&m, 8000, 1300, 500), 0, "deeper: nothing new");
    cr_expect_eq(policy_capability_learn_depth(&m, 3000, 1300, 500), 1, "shallower: news");
    cr_expect(policy_capability_lacks_depth(&m, 3000, 1700));
    char name[8] = "x";
    uint64_t depth = 0;
    cr_expect_eq(policy_capability_forget_one(&m, 1800, name, sizeof(name), &depth), 1);
    cr_expect_str_eq(name, "");
    cr_expect_eq(depth, 3000);
    cr_expect(!policy_capability_lacks_depth(&m, 9000, 1800));
}

Test(capability, word_tables_are_lower_case_and_unique)
{
    for (int kind = 1; kind <= 2; kind++)
        for (size_t i = 0; policy_capability_word(kind, i) != NULL; i++) {
            const char *w = policy_capability_word(kind, i);
            for (const char *p = w; *p; p++)
                cr_expect(!(*p >= 'A' && *p <= 'Z'), "%s", w);
            for (size_t j = i + 1; policy_capability_word(kind, j) != NULL; j++)
                cr_expect_str_neq(w, policy_capability_word(kind, j));
        }
    cr_expect_null(policy_capability_word(3, 0));
}

Test(capability, depth_walked_up_a_block_at_a_time_is_news_a_few_times)
{
    policy_capability_mem_t m;
    memset(&m, 0, sizeof(m));
    unsigned news = 0;
    for (uint64_t d = 1000000; d > 128; d--)
        news += (unsigned)policy_capability_learn_depth(&m, d, 1000, 60000);
    cr_expect_eq(m.depth <= 170, 1, "the depth learned is close to the real one: %llu", (unsigned long long)m.depth);
    cr_expect_leq(news, 50u, "one event per quarter, not one per block: %u", news);
    cr_expect_eq(policy_capability_learn_depth(&m, m.depth - 1, 1000, 60000), 0, "a block shallower: renewed only");
}

