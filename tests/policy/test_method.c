/* tests/policy/test_method.c: policy/method.h: the tables' invariants, lookup
 * and blocked-pattern matching. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/method.h"

static const policy_chain_t chains[] = {POLICY_CHAIN_ETHEREUM, POLICY_CHAIN_SOLANA};

static size_t count_patterns(const char *const *p)
{
    size_t n = 0;
    while (p[n] != NULL)
        n++;
    return n;
}

/* ---- table invariants -------------------------------------------------- */

Test(method, tables_sorted_without_duplicates)
{
    for (size_t c = 0; c < sizeof chains / sizeof chains[0]; c++) {
        size_t n;
        const policy_method_t *t = policy_method_table(chains[c], &n);
        cr_assert_gt(n, 10, "chain %zu: table too small", c);
        for (size_t i = 0; i < n; i++) {
            cr_expect_not_null(t[i].name);
            cr_expect_gt(strlen(t[i].name), 0, "chain %zu row %zu: empty name", c, i);
            cr_expect_lt(strlen(t[i].name), 128, "chain %zu row %zu: name too long for a request", c, i);
            cr_expect_lt(t[i].cls, POLICY_CLASS_COUNT, "chain %zu '%s': class", c, t[i].name);
            cr_expect_leq(t[i].priority, POLICY_PRIO_CRITICAL, "chain %zu '%s': priority", c, t[i].name);
            cr_expect_leq(t[i].retry_safe, 1, "chain %zu '%s': retry_safe", c, t[i].name);
            if (i > 0)
                cr_expect_lt(strcmp(t[i - 1].name, t[i].name), 0, "chain %zu: '%s' then '%s' is not sorted or repeats",
                             c, t[i - 1].name, t[i].name);
        }
    }
}

Test(method, class_rules)
{
    for (size_t c = 0; c < sizeof chains / sizeof chains[0]; c++) {
        size_t n;
        const policy_method_t *t = policy_method_table(chains[c], &n);
        const char *const *blocked = policy_method_default_blocked(chains[c]);
        size_t nb = count_patterns(blocked);
        unsigned seen = 0;
        for (size_t i = 0; i < n; i++) {
            const policy_method_t *m = &t[i];
            size_t len = strlen(m->name);
            seen |= 1u << m->cls;
            int matched = policy_method_match(blocked, nb, m->name, len);
            if (m->cls == POLICY_CLASS_BLOCKED)
                cr_expect(matched, "chain %zu: BLOCKED '%s' is not in the default blocked list", c, m->name);
            else
                cr_expect(!matched, "chain %zu: '%s' (%s) is blocked by default", c, m->name,
                          policy_method_class_name(m->cls));
            if (m->cls == POLICY_CLASS_WRITE)
                cr_expect(!m->retry_safe, "chain %zu: WRITE '%s' is retry_safe", c, m->name);
            if (m->cls == POLICY_CLASS_CONFIRM)
                cr_expect_eq(m->priority, POLICY_PRIO_CRITICAL, "chain %zu: CONFIRM '%s' is not CRITICAL", c, m->name);
            if (m->cls == POLICY_CLASS_SUBSCRIBE)
                cr_expect(len >= 8 && strcmp(m->name + len - 8, "ubscribe") == 0,
                          "chain %zu: SUBSCRIBE '%s' does not end with \"ubscribe\"", c, m->name);
            else
                cr_expect(len < 8 || strcmp(m->name + len - 8, "ubscribe") != 0,
                          "chain %zu: '%s' ends with \"ubscribe\" but is %s", c, m->name,
                          policy_method_class_name(m->cls));
        }
        /* each table has rows of every class, so each rule above was exercised */
        for (unsigned k = 0; k < POLICY_CLASS_COUNT; k++)
            cr_expect(seen & (1u << k), "chain %zu: no method of class %s", c, policy_method_class_name(k));
    }
}

Test(method, default_blocked_lists)
{
    static const struct {
        policy_chain_t chain;
        const char *name;
        int blocked;
    } cases[] = {
        {POLICY_CHAIN_ETHEREUM, "admin_peers", 1},
        {POLICY_CHAIN_ETHEREUM, "admin_", 1},
        {POLICY_CHAIN_ETHEREUM, "debug_traceTransaction", 1},
        {POLICY_CHAIN_ETHEREUM, "miner_setEtherbase", 1},
        {POLICY_CHAIN_ETHEREUM, "personal_sign", 1},
        {POLICY_CHAIN_ETHEREUM, "eth_sendTransaction", 1},
        {POLICY_CHAIN_ETHEREUM, "eth_sign", 1},
        {POLICY_CHAIN_ETHEREUM, "eth_signTransaction", 1},
        {POLICY_CHAIN_ETHEREUM, "eth_signTypedData", 1},
        {POLICY_CHAIN_ETHEREUM, "eth_signTypedData_v4", 1},
        {POLICY_CHAIN_ETHEREUM, "clique_propose", 1},
        {POLICY_CHAIN_ETHEREUM, "clique_getSigners", 1},
        {POLICY_CHAIN_ETHEREUM, "engine_forkchoiceUpdatedV3", 1},
        {POLICY_CHAIN_ETHEREUM, "engine_newPayloadV4", 1},
        {POLICY_CHAIN_ETHEREUM, "les_addBalance", 1},
        {POLICY_CHAIN_ETHEREUM, "ibft_proposeValidatorVote", 1},
        {POLICY_CHAIN_ETHEREUM, "qbft_proposeValidatorVote", 1},
        {POLICY_CHAIN_ETHEREUM, "istanbul_propose", 1},
        {POLICY_CHAIN_ETHEREUM, "raft_addPeer", 1},
        {POLICY_CHAIN_ETHEREUM, "perm_addNodesToAllowlist", 1},
        {POLICY_CHAIN_ETHEREUM, "plugins_reloadPluginConfig", 1},
        {POLICY_CHAIN_ETHEREUM, "signer_confirmRequest", 1},
        {POLICY_CHAIN_ETHEREUM, "anvil_setBalance", 1},
        {POLICY_CHAIN_ETHEREUM, "hardhat_impersonateAccount", 1},
        {POLICY_CHAIN_ETHEREUM, "evm_revert", 1},
        /* read families stay open unless configured */
        {POLICY_CHAIN_ETHEREUM, "trace_block", 0},
        {POLICY_CHAIN_ETHEREUM, "trace_replayTransaction", 0},
        {POLICY_CHAIN_ETHEREUM, "txpool_content", 0},
        {POLICY_CHAIN_ETHEREUM, "txpool_status", 0},
        {POLICY_CHAIN_ETHEREUM, "erigon_getHeaderByNumber", 0},
        {POLICY_CHAIN_ETHEREUM, "ots_getApiLevel", 0},
        {POLICY_CHAIN_ETHEREUM, "engine", 0},
        {POLICY_CHAIN_ETHEREUM, "eth_signer", 0},
        {POLICY_CHAIN_ETHEREUM, "eth_sendRawTransaction", 0},
        {POLICY_CHAIN_ETHEREUM, "eth_sendTransactionX", 0},
        {POLICY_CHAIN_ETHEREUM, "admin", 0},
        {POLICY_CHAIN_ETHEREUM, "registerNode", 0},
        {POLICY_CHAIN_SOLANA, "registerNode", 1},
        {POLICY_CHAIN_SOLANA, "deregisterNode", 1},
        {POLICY_CHAIN_SOLANA, "signVote", 1},
        {POLICY_CHAIN_SOLANA, "signVotes", 0},
        {POLICY_CHAIN_SOLANA, "admin_peers", 0},
        {POLICY_CHAIN_SOLANA, "sendTransaction", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *const *p = policy_method_default_blocked(cases[i].chain);
        cr_expect_eq(policy_method_match(p, count_patterns(p), cases[i].name, strlen(cases[i].name)),
                     cases[i].blocked, "case %zu '%s'", i, cases[i].name);
    }
}

/* An endpoint's methods: scope: allow (none: all), deny wins. */
Test(method, scope_admits)
{
    char *allow[] = {"eth_*", "trace_*", "debug_trace*"};
    char *deny[] = {"trace_replay*", "eth_getProof"};
    policy_method_scope_t all = {0}, only = {allow, 3, NULL, 0}, both = {allow, 3, deny, 2}, no = {NULL, 0, deny, 2};
    static const struct {
        const char *name;
        int all, only, both, no;
    } cases[] = {
        {"eth_call", 1, 1, 1, 1},           {"trace_block", 1, 1, 1, 1},
        {"trace_replayTransaction", 1, 1, 0, 0}, {"eth_getProof", 1, 1, 0, 0},
        {"debug_traceCall", 1, 1, 1, 1},    {"debug_getRawBlock", 1, 0, 0, 1},
        {"net_version", 1, 0, 0, 1},        {"eth", 1, 0, 0, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = strlen(cases[i].name);
        cr_expect_eq(policy_method_scope_admits(&all, cases[i].name, n), cases[i].all, "all %s", cases[i].name);
        cr_expect_eq(policy_method_scope_admits(&only, cases[i].name, n), cases[i].only, "only %s", cases[i].name);
        cr_expect_eq(policy_method_scope_admits(&both, cases[i].name, n), cases[i].both, "both %s", cases[i].name);
        cr_expect_eq(policy_method_scope_admits(&no, cases[i].name, n), cases[i].no, "no %s", cases[i].name);
    }
}

/* ---- lookup ------------------------------------------------------------ */

Test(method, lookup)
{
    static const struct {
        policy_chain_t chain;
        const char *name;
        size_t len; /* 0: strlen(name) */
        const char *row; /* "" : the unknown row */
        policy_method_class_t cls;
        policy_priority_t prio;
        int retry_safe;
    } cases[] = {
        {POLICY_CHAIN_ETHEREUM, "eth_blockNumber", 0, "eth_blockNumber", POLICY_CLASS_READ, POLICY_PRIO_NORMAL, 1},
        {POLICY_CHAIN_ETHEREUM, "eth_accounts", 0, "eth_accounts", POLICY_CLASS_READ, POLICY_PRIO_NORMAL, 1},
        {POLICY_CHAIN_ETHEREUM, "web3_sha3", 0, "web3_sha3", POLICY_CLASS_READ, POLICY_PRIO_NORMAL, 1},
        {POLICY_CHAIN_ETHEREUM, "eth_call", 0, "eth_call", POLICY_CLASS_SIMULATE, POLICY_PRIO_LOW, 1},
        {POLICY_CHAIN_ETHEREUM, "eth_sendRawTransaction", 0, "eth_sendRawTransaction", POLICY_CLASS_WRITE,
         POLICY_PRIO_HIGH, 0},
        {POLICY_CHAIN_ETHEREUM, "eth_getTransactionReceipt", 0, "eth_getTransactionReceipt", POLICY_CLASS_CONFIRM,
         POLICY_PRIO_CRITICAL, 1},
        {POLICY_CHAIN_ETHEREUM, "eth_getFilterChanges", 0, "eth_getFilterChanges", POLICY_CLASS_READ,
         POLICY_PRIO_NORMAL, 0},
        {POLICY_CHAIN_ETHEREUM, "eth_subscribe", 0, "eth_subscribe", POLICY_CLASS_SUBSCRIBE, POLICY_PRIO_NORMAL, 0},
        {POLICY_CHAIN_ETHEREUM, "eth_sign", 0, "eth_sign", POLICY_CLASS_BLOCKED, POLICY_PRIO_NORMAL, 0},
        {POLICY_CHAIN_SOLANA, "sendTransaction", 0, "sendTransaction", POLICY_CLASS_WRITE, POLICY_PRIO_HIGH, 0},
        {POLICY_CHAIN_SOLANA, "getSignatureStatuses", 0, "getSignatureStatuses", POLICY_CLASS_CONFIRM,
         POLICY_PRIO_CRITICAL, 1},
        /* a simulation: shed first under pressure, as eth_call is */
        {POLICY_CHAIN_SOLANA, "simulateTransaction", 0, "simulateTransaction", POLICY_CLASS_SIMULATE,
         POLICY_PRIO_LOW, 1},
        {POLICY_CHAIN_SOLANA, "accountSubscribe", 0, "accountSubscribe", POLICY_CLASS_SUBSCRIBE, POLICY_PRIO_NORMAL, 0},
        {POLICY_CHAIN_SOLANA, "voteUnsubscribe", 0, "voteUnsubscribe", POLICY_CLASS_SUBSCRIBE, POLICY_PRIO_NORMAL, 0},
        {POLICY_CHAIN_ETHEREUM, "eth_sendBundle", 0, "eth_sendBundle", POLICY_CLASS_WRITE, POLICY_PRIO_HIGH, 0},
        {POLICY_CHAIN_ETHEREUM, "eth_sendUserOperation", 0, "eth_sendUserOperation", POLICY_CLASS_WRITE,
         POLICY_PRIO_HIGH, 0},
        {POLICY_CHAIN_SOLANA, "sendBundle", 0, "sendBundle", POLICY_CLASS_WRITE, POLICY_PRIO_HIGH, 0},
        /* the other chain's names are unknown; an unknown name that says it
         * sends is an unnamed write (never re-sent) */
        {POLICY_CHAIN_SOLANA, "eth_sendRawTransaction", 0, "", POLICY_CLASS_WRITE, POLICY_PRIO_HIGH, 0},
        {POLICY_CHAIN_ETHEREUM, "sendTransaction", 0, "", POLICY_CLASS_WRITE, POLICY_PRIO_HIGH, 0},
        {POLICY_CHAIN_ETHEREUM, "eth_sendSomethingNew", 0, "", POLICY_CLASS_WRITE, POLICY_PRIO_HIGH, 0},
        {POLICY_CHAIN_ETHEREUM, "mev_sendBetaBundle", 0, "", POLICY_CLASS_WRITE, POLICY_PRIO_HIGH, 0},
        {POLICY_CHAIN_ETHEREUM, "eth_resend", 0, "", POLICY_CLASS_READ, POLICY_PRIO_NORMAL, 1},
        {POLICY_CHAIN_ETHEREUM, "eth_getSender", 0, "", POLICY_CLASS_READ, POLICY_PRIO_NORMAL, 1},
        /* unknown: a retry-safe READ of NORMAL priority, named "" */
        {POLICY_CHAIN_ETHEREUM, "eth_nope", 0, "", POLICY_CLASS_READ, POLICY_PRIO_NORMAL, 1},
        {POLICY_CHAIN_ETHEREUM, "", 0, "", POLICY_CLASS_READ, POLICY_PRIO_NORMAL, 1},
        {POLICY_CHAIN_ETHEREUM, "a", 0, "", POLICY_CLASS_READ, POLICY_PRIO_NORMAL, 1},
        {POLICY_CHAIN_ETHEREUM, "zzzz", 0, "", POLICY_CLASS_READ, POLICY_PRIO_NORMAL, 1},
        {POLICY_CHAIN_ETHEREUM, "ETH_CALL", 0, "", POLICY_CLASS_READ, POLICY_PRIO_NORMAL, 1},
        {POLICY_CHAIN_SOLANA, "getbalance", 0, "", POLICY_CLASS_READ, POLICY_PRIO_NORMAL, 1},
        /* a longer string, looked up by a shorter length, is its prefix only */
        {POLICY_CHAIN_ETHEREUM, "eth_callXYZ", 8, "eth_call", POLICY_CLASS_SIMULATE, POLICY_PRIO_LOW, 1},
        {POLICY_CHAIN_ETHEREUM, "eth_sendRawTransactionSync", 22, "eth_sendRawTransaction", POLICY_CLASS_WRITE,
         POLICY_PRIO_HIGH, 0},
        {POLICY_CHAIN_ETHEREUM, "eth_getBlockByNumber", 12, "", POLICY_CLASS_READ, POLICY_PRIO_NORMAL, 1},
        {POLICY_CHAIN_ETHEREUM, "eth_sendRawTransaction", 21, "", POLICY_CLASS_WRITE, POLICY_PRIO_HIGH, 0},
        {POLICY_CHAIN_ETHEREUM, "eth_subscribe", 4, "", POLICY_CLASS_READ, POLICY_PRIO_NORMAL, 1},
        {POLICY_CHAIN_SOLANA, "getBlocksWithLimit", 9, "getBlocks", POLICY_CLASS_READ, POLICY_PRIO_LOW, 1},
        {POLICY_CHAIN_SOLANA, "getBlocksWithLimit", 8, "getBlock", POLICY_CLASS_READ, POLICY_PRIO_LOW, 1},
        {POLICY_CHAIN_SOLANA, "getBlocksWithLimit", 7, "", POLICY_CLASS_READ, POLICY_PRIO_NORMAL, 1},
        {POLICY_CHAIN_SOLANA, "sendTransaction", 0, "sendTransaction", POLICY_CLASS_WRITE, POLICY_PRIO_HIGH, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len = cases[i].len ? cases[i].len : strlen(cases[i].name);
        /* a private copy with nothing after the length, so reading on is caught */
        char *name = malloc(len ? len : 1);
        memcpy(name, cases[i].name, len);
        const policy_method_t *m = policy_method_lookup(cases[i].chain, name, len);
        cr_assert_not_null(m, "case %zu", i);
        cr_expect_str_eq(m->name, cases[i].row, "case %zu '%.*s'", i, (int)len, cases[i].name);
        cr_expect_eq(m->cls, cases[i].cls, "case %zu '%.*s': class", i, (int)len, cases[i].name);
        cr_expect_eq(m->priority, cases[i].prio, "case %zu '%.*s': priority", i, (int)len, cases[i].name);
        cr_expect_eq(m->retry_safe, cases[i].retry_safe, "case %zu '%.*s': retry_safe", i, (int)len,
                     cases[i].name);
        free(name);
    }
}

/* name[0..len) is the name, NULs included: "eth_call\0" is no row's name,
 * and looking it up must not read past the shorter row name. */
Test(method, lookup_name_with_nul)
{
    static const struct {
        policy_chain_t chain;
        const char *name;
        size_t len;
    } cases[] = {
        {POLICY_CHAIN_ETHEREUM, "eth_call\0", 9},
        {POLICY_CHAIN_ETHEREUM, "eth_call\0\0\0\0\0\0\0\0", 16},
        {POLICY_CHAIN_SOLANA, "getSlot\0x", 9},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *name = malloc(cases[i].len);
        memcpy(name, cases[i].name, cases[i].len);
        const policy_method_t *m = policy_method_lookup(cases[i].chain, name, cases[i].len);
        cr_expect_str_eq(m->name, "", "case %zu: found row '%s'", i, m->name);
        free(name);
    }
}

/* Every row is found by its own name, and only by it. */
Test(method, lookup_finds_every_row)
{
    for (size_t c = 0; c < sizeof chains / sizeof chains[0]; c++) {
        size_t n;
        const policy_method_t *t = policy_method_table(chains[c], &n);
        for (size_t i = 0; i < n; i++) {
            size_t len = strlen(t[i].name);
            cr_expect_eq(policy_method_lookup(chains[c], t[i].name, len), &t[i], "chain %zu '%s'", c, t[i].name);
            /* one byte short, or one byte more: never this row */
            cr_expect_neq(policy_method_lookup(chains[c], t[i].name, len - 1), &t[i], "chain %zu '%s' - 1", c,
                          t[i].name);
            char longer[160];
            snprintf(longer, sizeof longer, "%s_", t[i].name);
            cr_expect_neq(policy_method_lookup(chains[c], longer, len + 1), &t[i], "chain %zu '%s_'", c, t[i].name);
        }
    }
    /* the unknown row is shared */
    cr_expect_eq(policy_method_lookup(POLICY_CHAIN_ETHEREUM, "x", 1), policy_method_lookup(POLICY_CHAIN_SOLANA, "y", 1));
}

/* ---- pattern matching -------------------------------------------------- */

Test(method, match)
{
    static const char *const list[] = {"debug_*", "eth_sign", "x*", "admin_peers"};
    static const char *const star[] = {"*"};
    static const char *const empty_pattern[] = {""};
    static const char *const null_ended[] = {"a_*", NULL, "b_*"};
    static const struct {
        const char *const *patterns;
        size_t n;
        const char *name;
        size_t len; /* 0: strlen(name) */
        int want;
    } cases[] = {
        {list, 4, "eth_sign", 0, 1},
        {list, 4, "eth_signX", 0, 0},
        {list, 4, "eth_sig", 0, 0},
        {list, 4, "eth_signX", 8, 1},     /* only len bytes count */
        {list, 4, "debug_", 0, 1},
        {list, 4, "debug_traceCall", 0, 1},
        {list, 4, "debug", 0, 0},
        {list, 4, "Debug_x", 0, 0},
        {list, 4, "debug_x", 5, 0},
        {list, 4, "x", 0, 1},
        {list, 4, "xylophone", 0, 1},
        {list, 4, "admin_peers", 0, 1},
        {list, 4, "admin_peer", 0, 0},
        {list, 4, "admin_peersX", 0, 0},
        {list, 4, "", 0, 0},
        {list, 3, "admin_peers", 0, 0},   /* n bounds the list */
        {list, 1, "eth_sign", 0, 0},
        {star, 1, "anything", 0, 1},
        {star, 1, "", 0, 1},
        {star, 0, "anything", 0, 0},
        {list, 0, "eth_sign", 0, 0},
        {NULL, 0, "eth_sign", 0, 0},     /* empty list */
        {empty_pattern, 1, "", 0, 1},
        {empty_pattern, 1, "a", 0, 0},
        {null_ended, 3, "a_x", 0, 1},
        {null_ended, 3, "b_x", 0, 0},    /* a NULL ends the list */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len = cases[i].len ? cases[i].len : strlen(cases[i].name);
        char *name = malloc(len ? len : 1);
        memcpy(name, cases[i].name, len);
        cr_expect_eq(policy_method_match(cases[i].patterns, cases[i].n, name, len), cases[i].want,
                     "case %zu '%.*s'", i, (int)len, cases[i].name);
        free(name);
    }
}

Test(method, class_names)
{
    static const char *const want[POLICY_CLASS_COUNT] = {
        [POLICY_CLASS_READ] = "read",         [POLICY_CLASS_WRITE] = "write",
        [POLICY_CLASS_CONFIRM] = "confirm",   [POLICY_CLASS_SIMULATE] = "simulate",
        [POLICY_CLASS_SUBSCRIBE] = "subscribe", [POLICY_CLASS_BLOCKED] = "blocked",
    };
    for (unsigned k = 0; k < POLICY_CLASS_COUNT; k++)
        cr_expect_str_eq(policy_method_class_name(k), want[k], "class %u", k);
    cr_expect_str_eq(policy_method_class_name(POLICY_CLASS_COUNT), "unknown");
}

/* ---- unknown methods: writes by name, never coalesced ------------------- */

Test(method, unknown_names_that_change_state_are_writes)
{
    static const struct {
        const char *name;
        int write;
    } cases[] = {
        /* send: a prefix of a segment, as before */
        {"eth_sendSomethingNew", 1}, {"sendFoo", 1}, {"sendfoo", 1}, {"x_y_sendBar", 1}, {"eth_sender", 1},
        /* the other verbs: a whole first word of a segment, camelCase or '_' ending it */
        {"eth_cancelBundle", 1}, {"mev_submitBundle", 1}, {"eth_registerX", 1}, {"requestAirdrop", 1},
        {"eth_cancelPrivateTransaction", 1}, {"flashbots_cancel", 1}, {"eth_unregisterRelay", 1},
        {"eth_submitHashrate", 1}, {"mev_submit_bundle", 1}, {"cancel_x", 1}, {"eth_request2", 1},
        {"eth_SubmitBundle", 1}, {"builder_REGISTER", 1},
        /* a verb in the middle of a segment, or a longer word: not a write */
        {"eth_getRequestStatus", 0}, {"eth_registered", 0}, {"eth_requests", 0}, {"eth_cancellation", 0},
        {"eth_submitter", 0}, {"eth_resend", 0}, {"eth_getSender", 0}, {"eth_bundleCancel", 0},
        {"eth_deregisterX", 0}, {"eth_nope", 0}, {"x_", 0}, {"_", 0}, {"s", 0}, {"cance", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *n = cases[i].name;
        size_t len = strlen(n);
        cr_expect_eq(policy_method_sounds_like_write(n, len), cases[i].write, "'%s'", n);
        /* a private copy with nothing after the length, so reading on is caught */
        char *name = malloc(len);
        memcpy(name, n, len);
        const policy_method_t *m = policy_method_lookup(POLICY_CHAIN_ETHEREUM, name, len);
        cr_expect_str_eq(m->name, "", "'%s' is in a table: pick another case", n);
        cr_expect_eq(m->cls, cases[i].write ? POLICY_CLASS_WRITE : POLICY_CLASS_READ, "'%s': class", n);
        cr_expect_eq(m->retry_safe, !cases[i].write, "'%s': retry_safe", n);
        cr_expect_eq(m->solo, 1, "'%s': an unknown method is never coalesced", n);
        cr_expect(!policy_method_coalesces(m), "'%s'", n);
        free(name);
    }
}

/* The name rule is for names no table knows: a known row that sounds like a
 * write is one (or is blocked), and keeps its own row. */
Test(method, known_rows_keep_their_rows)
{
    for (size_t c = 0; c < sizeof chains / sizeof chains[0]; c++) {
        size_t n;
        const policy_method_t *t = policy_method_table(chains[c], &n);
        for (size_t i = 0; i < n; i++) {
            cr_expect_eq(t[i].solo, 0, "chain %zu '%s': a known method is not solo", c, t[i].name);
            if (policy_method_sounds_like_write(t[i].name, strlen(t[i].name)))
                cr_expect(t[i].cls == POLICY_CLASS_WRITE || t[i].cls == POLICY_CLASS_BLOCKED,
                          "chain %zu '%s' sounds like a write but is %s", c, t[i].name,
                          policy_method_class_name(t[i].cls));
        }
    }
    const policy_method_t *air = policy_method_lookup(POLICY_CHAIN_SOLANA, "requestAirdrop", 14);
    cr_expect_str_eq(air->name, "requestAirdrop");
    cr_expect_eq(air->priority, POLICY_PRIO_NORMAL, "its own row, not the unknown write's HIGH");
}

Test(method, coalescing_eligibility)
{
    static const struct {
        policy_chain_t chain;
        const char *name;
        int coalesces;
    } cases[] = {
        {POLICY_CHAIN_ETHEREUM, "eth_blockNumber", 1}, {POLICY_CHAIN_ETHEREUM, "eth_call", 1},
        {POLICY_CHAIN_ETHEREUM, "eth_getTransactionReceipt", 1}, {POLICY_CHAIN_SOLANA, "getSlot", 1},
        {POLICY_CHAIN_ETHEREUM, "eth_sendRawTransaction", 0}, {POLICY_CHAIN_ETHEREUM, "eth_getFilterChanges", 0},
        {POLICY_CHAIN_ETHEREUM, "eth_subscribe", 0}, {POLICY_CHAIN_ETHEREUM, "eth_customRead", 0},
        {POLICY_CHAIN_SOLANA, "getSomethingNew", 0}, {POLICY_CHAIN_ETHEREUM, "mev_submitBundle", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const policy_method_t *m = policy_method_lookup(cases[i].chain, cases[i].name, strlen(cases[i].name));
        cr_expect_eq(policy_method_coalesces(m), cases[i].coalesces, "'%s'", cases[i].name);
    }
    /* a config row (methods:) is not solo: an operator who names a method says what it is */
    policy_method_t row = {"eth_customRead", POLICY_CLASS_READ, POLICY_PRIO_NORMAL, 1, 0, 0};
    cr_expect(policy_method_coalesces(&row));
}

/* ---- params that make a cheap method heavy ------------------------------ */

static int fee_history(const char *params)
{
    const policy_method_t *m = policy_method_lookup(POLICY_CHAIN_ETHEREUM, "eth_feeHistory", 14);
    size_t len = params ? strlen(params) : 0;
    char *buf = malloc(len + 1); /* nothing after the params: reading on is caught */
    memcpy(buf, params ? params : "", len);
    int r = policy_method_call_cheap(POLICY_CHAIN_ETHEREUM, m, buf, (wire_span_t){0, (uint32_t)len});
    free(buf);
    return r;
}

Test(method, fee_history_is_cheap_only_for_few_blocks_without_percentiles)
{
    static const struct {
        const char *params;
        int cheap;
    } cases[] = {
        {"[\"0x5\",\"latest\"]", 1},
        {"[\"0xa\",\"latest\"]", 1},
        {"[10,\"latest\"]", 1},
        {"[\"10\",\"latest\"]", 1},
        {"[\"0x1\",\"latest\",[]]", 1},
        {"[ \"0x4\" , \"latest\" , [ ] ]", 1},
        {"[\"0x4\",\"latest\",null]", 1},
        {"[\"0x0\",\"0x10\"]", 1},
        {"[\"0xb\",\"latest\"]", 0},          /* 11 blocks */
        {"[11,\"latest\"]", 0},
        {"[\"0x400\",\"latest\"]", 0},        /* geth's 1024 */
        {"[\"0x5\",\"latest\",[25,75]]", 0},  /* percentiles: every block's receipts */
        {"[\"0x1\",\"latest\",[50]]", 0},
        {"[\"0x5\"]", 0},                     /* unreadable: heavy */
        {"[]", 0},
        {"{\"blockCount\":\"0x5\"}", 0},
        {"[\"0x\",\"latest\"]", 0},
        {"[\"0xzz\",\"latest\"]", 0},
        {"[-1,\"latest\"]", 0},
        {"[1.5,\"latest\"]", 0},
        {"[\"0xffffffffffffffffffff\",\"latest\"]", 0},
        {"[\"0x5\",\"latest\",[],1]", 0},
        {"[\"0x5\",\"latest\",{}]", 0},
        {NULL, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_expect_eq(fee_history(cases[i].params), cases[i].cheap, "case %zu %s", i,
                     cases[i].params ? cases[i].params : "(none)");
}

Test(method, params_never_make_a_call_cheaper)
{
    static const char params[] = "[\"0x1\",\"latest\"]";
    wire_span_t s = {0, sizeof params - 1};
    /* other methods keep their row's flag whatever the params */
    const policy_method_t *bn = policy_method_lookup(POLICY_CHAIN_ETHEREUM, "eth_blockNumber", 15);
    const policy_method_t *logs = policy_method_lookup(POLICY_CHAIN_ETHEREUM, "eth_getLogs", 11);
    cr_expect_eq(policy_method_call_cheap(POLICY_CHAIN_ETHEREUM, bn, params, s), 1);
    cr_expect_eq(policy_method_call_cheap(POLICY_CHAIN_ETHEREUM, logs, params, s), 0);
    /* a config row that says eth_feeHistory is not cheap stays heavy */
    policy_method_t row = {"eth_feeHistory", POLICY_CLASS_READ, POLICY_PRIO_NORMAL, 1, 0, 0};
    cr_expect_eq(policy_method_call_cheap(POLICY_CHAIN_ETHEREUM, &row, params, s), 0);
    /* the rule is Ethereum's: a Solana method of that name (none) is untouched */
    row.cheap = 1;
    cr_expect_eq(policy_method_call_cheap(POLICY_CHAIN_SOLANA, &row, "[\"0xff\"]", (wire_span_t){0, 8}), 1);
}

/* ---- the small tables' invariants --------------------------------------- */

Test(method, write_verbs_table)
{
    const char *prev = NULL;
    int prefix;
    size_t n = 0;
    for (const char *v; (v = policy_method_write_verb(n, &prefix)) != NULL; n++) {
        cr_expect_gt(strlen(v), 2, "'%s'", v);
        for (const char *p = v; *p; p++)
            cr_expect(*p >= 'a' && *p <= 'z', "'%s': lowercase letters only (the word test relies on it)", v);
        if (prev != NULL)
            cr_expect_lt(strcmp(prev, v), 0, "'%s' then '%s': not sorted or repeated", prev, v);
        prev = v;
        /* each verb does what the table says: opens a name or a segment */
        char name[64];
        snprintf(name, sizeof name, "x_%sBundle", v);
        cr_expect(policy_method_sounds_like_write(name, strlen(name)), "'%s'", name);
        snprintf(name, sizeof name, "%s", v);
        cr_expect(policy_method_sounds_like_write(name, strlen(name)), "'%s'", name);
        snprintf(name, sizeof name, "x_get%c%s", v[0] - 'a' + 'A', v + 1);
        cr_expect(!policy_method_sounds_like_write(name, strlen(name)), "'%s': not first in its segment", name);
        snprintf(name, sizeof name, "x_%sed", v);
        cr_expect_eq(policy_method_sounds_like_write(name, strlen(name)), prefix, "'%s'", name);
    }
    cr_expect_eq(n, 6, "send, cancel, submit, register, unregister, request");
    cr_expect_null(policy_method_write_verb(n, &prefix));
}

Test(method, param_rules_table)
{
    policy_chain_t chain, prev_chain = POLICY_CHAIN_COUNT;
    const char *prev = NULL;
    size_t n = 0;
    for (const char *name; (name = policy_method_param_rule(n, &chain)) != NULL; n++) {
        cr_expect_lt(chain, POLICY_CHAIN_COUNT);
        if (prev != NULL)
            cr_expect(chain > prev_chain || (chain == prev_chain && strcmp(prev, name) < 0),
                      "'%s' then '%s': not sorted or repeated", prev, name);
        prev = name;
        prev_chain = chain;
        /* a rule may only make a cheap row heavy: on a heavy row or an unknown name it is dead */
        const policy_method_t *m = policy_method_lookup(chain, name, strlen(name));
        cr_expect_str_eq(m->name, name, "'%s' is in its chain's table", name);
        cr_expect_eq(m->cheap, 1, "'%s' is a cheap row", name);
    }
    cr_expect_geq(n, 1);
}
