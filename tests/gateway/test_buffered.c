/* tests/gateway/test_buffered.c: the share, the reserve and the share at
 * completion (gateway/gw_buffered.c), without sockets: stalled resets off. */
#include <criterion/criterion.h>
#include <stddef.h>

#include "gateway/gw_buffered.h"

#define MiB (1024u * 1024)

typedef struct fake_req {
    size_t bytes;
    size_t real;                  /* of bytes, what is not a reservation (the test with a reservation) */
    int sent;
    gw_held_entry_t e;
} fake_req_t;

static const fake_req_t *req_of(const gw_held_entry_t *e)
{
    return (const fake_req_t *)((const char *)e - offsetof(fake_req_t, e));
}

static size_t bytes_of(const gw_held_entry_t *e)
{
    return req_of(e)->bytes;
}

static size_t real_of(const gw_held_entry_t *e)
{
    return req_of(e)->real;
}

static size_t sent_of(const gw_held_entry_t *e)
{
    return req_of(e)->sent ? req_of(e)->bytes : 0;
}

static cfg_server_conf_t conf(size_t limit, double share)
{
    return (cfg_server_conf_t){.max_buffered_bytes = limit, .max_buffered_share = share, .stalled_reset_ms = 0,
                              .max_connections = 100};
}

/* b over a budget of limit bytes with a share of 0.25; real: what an entry
 * holds, its reservation aside */
static void open_quarter(gw_buffered_t *b, sl_budget_t *budget, size_t limit, gw_held_bytes_cb real)
{
    cfg_server_conf_t c = conf(limit, 0.25);
    *budget = (sl_budget_t){.limit = limit};
    gw_buffered_init(b, &c, budget, NULL, bytes_of, real);
}

Test(buffered, the_reserve_is_a_sixteenth_or_4_mib_at_most_half)
{
    cfg_server_conf_t c = conf(256 * MiB, 0.25);
    cr_assert_eq(gw_buffered_reserve(&c), 16 * MiB);
    cr_assert_eq(gw_buffered_share(&c), 64 * MiB);
    c = conf(64 * MiB, 0.25);
    cr_assert_eq(gw_buffered_reserve(&c), 4 * MiB);
    c = conf(16 * MiB, 0.25);
    cr_assert_eq(gw_buffered_reserve(&c), 4 * MiB);
    c = conf(1 * MiB, 0.25);
    cr_assert_eq(gw_buffered_reserve(&c), MiB / 2);
}

Test(buffered, admission_below_the_budget_less_its_reserve_and_below_the_callers_share)
{
    sl_budget_t budget;
    gw_buffered_t b;
    open_quarter(&b, &budget, 64 * MiB, bytes_of);
    size_t held;
    cr_assert_eq(gw_buffered_admit(&b, "ip:a", 0, 0, &held), GW_BUFFERED_ADMIT);
    fake_req_t r1 = {.bytes = 15 * MiB};
    gw_held_add(b.held, &r1.e, "ip:a");
    budget.used = 15 * MiB;
    cr_assert_eq(gw_buffered_admit(&b, "ip:a", 0, 0, &held), GW_BUFFERED_ADMIT);
    r1.bytes = 16 * MiB; /* read on: at the share */
    budget.used = 16 * MiB;
    cr_assert_eq(gw_buffered_admit(&b, "ip:a", 0, 0, &held), GW_BUFFERED_SHARE);
    cr_assert_eq(held, 16 * MiB);
    cr_assert_eq(gw_buffered_admit(&b, "key:other", 0, 0, &held), GW_BUFFERED_ADMIT);
    budget.used = 60 * MiB - 1; /* others hold the rest, under the reserve's mark */
    cr_assert_eq(gw_buffered_admit(&b, "key:other", 0, 0, &held), GW_BUFFERED_ADMIT);
    budget.used = 60 * MiB;
    cr_assert_eq(gw_buffered_admit(&b, "key:other", 0, 0, &held), GW_BUFFERED_FULL);
    cr_assert_eq(gw_buffered_admit(&b, "ip:a", 0, 0, &held), GW_BUFFERED_SHARE, "the caller's own reason first");
    gw_held_remove(b.held, &r1.e);
    gw_buffered_dispose(&b);
}

Test(buffered, a_share_of_one_leaves_only_the_budget)
{
    cfg_server_conf_t c = conf(64 * MiB, 1);
    sl_budget_t budget = {.limit = 64 * MiB, .used = 30 * MiB};
    gw_buffered_t b;
    gw_buffered_init(&b, &c, &budget, NULL, bytes_of, bytes_of);
    fake_req_t r1 = {.bytes = 30 * MiB, .sent = 1}, r2 = {.bytes = 20 * MiB};
    gw_held_add(b.held, &r1.e, "ip:a");
    gw_held_add(b.held, &r2.e, "ip:a");
    size_t held;
    cr_assert_eq(gw_buffered_admit(&b, "ip:a", 0, 0, &held), GW_BUFFERED_ADMIT);
    cr_assert(gw_buffered_keep(&b, &r2.e, r2.bytes, sent_of, &held));
    gw_held_remove(b.held, &r1.e);
    gw_held_remove(b.held, &r2.e);
    gw_buffered_dispose(&b);
}

Test(buffered, a_complete_answer_is_kept_while_the_callers_other_answers_being_written_are_under_its_share)
{
    sl_budget_t budget;
    gw_buffered_t b;
    open_quarter(&b, &budget, 64 * MiB, bytes_of);
    /* a burst: three calls admitted before any answer was read */
    fake_req_t r[3] = {{.bytes = 20 * MiB}, {.bytes = 20 * MiB}, {.bytes = 20 * MiB}};
    for (int i = 0; i < 3; i++)
        gw_held_add(b.held, &r[i].e, "ip:a");
    size_t held;
    /* the first complete: the others are still being read, not written */
    cr_assert(gw_buffered_keep(&b, &r[0].e, r[0].bytes, sent_of, &held));
    r[0].sent = 1;
    cr_assert_not(gw_buffered_keep(&b, &r[1].e, r[1].bytes, sent_of, &held));
    cr_assert_eq(held, 20 * MiB);
    /* a small answer is kept whatever the caller holds */
    cr_assert(gw_buffered_keep(&b, &r[2].e, GW_BUFFERED_SMALL, sent_of, &held));
    /* another caller's answers do not count */
    fake_req_t o = {.bytes = 20 * MiB};
    gw_held_add(b.held, &o.e, "ip:b");
    cr_assert(gw_buffered_keep(&b, &o.e, o.bytes, sent_of, &held));
    for (int i = 0; i < 3; i++)
        gw_held_remove(b.held, &r[i].e);
    gw_held_remove(b.held, &o.e);
    gw_buffered_dispose(&b);
}

Test(buffered, a_callers_share_is_reserved_at_admission_for_what_its_calls_are_expected_to_hold)
{
    sl_budget_t budget;
    gw_buffered_t b;
    open_quarter(&b, &budget, 64 * MiB, bytes_of);
    size_t held;
    /* a caller holding nothing is admitted whatever its call is expected to hold */
    cr_assert_eq(gw_buffered_admit(&b, "ip:a", 40 * MiB, 0, &held), GW_BUFFERED_ADMIT);
    fake_req_t r1 = {.bytes = 8 * MiB}; /* its reservation, nothing read yet */
    gw_held_add(b.held, &r1.e, "ip:a");
    cr_assert_eq(gw_buffered_admit(&b, "ip:a", 8 * MiB, 0, &held), GW_BUFFERED_ADMIT, "8 + 8 of a 16 MiB share");
    cr_assert_eq(gw_buffered_admit(&b, "ip:a", 8 * MiB + 1, 0, &held), GW_BUFFERED_SHARE);
    cr_assert_eq(held, 8 * MiB);
    /* another caller is not charged for it */
    cr_assert_eq(gw_buffered_admit(&b, "ip:b", 16 * MiB, 0, &held), GW_BUFFERED_ADMIT);
    cr_assert_eq(held, 0);
    gw_held_remove(b.held, &r1.e);
    gw_buffered_dispose(&b);
}

Test(buffered, a_scan_of_unknown_size_reserves_half_the_lesser_of_the_answer_limit_and_the_share)
{
    cfg_server_conf_t c = conf(64 * MiB, 0.25);
    c.max_response_bytes = 32 * MiB;
    sl_budget_t budget = {.limit = 64 * MiB};
    gw_buffered_t b;
    gw_buffered_init(&b, &c, &budget, NULL, bytes_of, bytes_of);
    const policy_method_t *logs = policy_method_lookup(POLICY_CHAIN_ETHEREUM, "eth_getLogs", 11);
    const policy_method_t *bn = policy_method_lookup(POLICY_CHAIN_ETHEREUM, "eth_blockNumber", 15);
    cr_assert_eq(gw_estimate_get(b.estimate, "ip:a", "eth_getLogs", logs), 8 * MiB);
    cr_assert_eq(gw_estimate_get(b.estimate, "ip:a", "eth_blockNumber", bn), GW_ESTIMATE_SMALL);
    /* history: the largest recent answer, a quarter less for each smaller one */
    gw_estimate_put(b.estimate, "ip:a", "eth_getLogs", 1000);
    cr_assert_eq(gw_estimate_get(b.estimate, "ip:a", "eth_getLogs", logs), 1000);
    gw_estimate_put(b.estimate, "ip:a", "eth_getLogs", 20000);
    gw_estimate_put(b.estimate, "ip:a", "eth_getLogs", 100);
    cr_assert_eq(gw_estimate_get(b.estimate, "ip:a", "eth_getLogs", logs), 15000);
    /* per caller: another's history is its own */
    cr_assert_eq(gw_estimate_get(b.estimate, "ip:b", "eth_getLogs", logs), 8 * MiB);
    gw_buffered_dispose(&b);
}

Test(buffered, a_small_call_is_judged_by_the_bytes_the_caller_really_holds_not_its_reservations)
{
    sl_budget_t budget;
    gw_buffered_t b;
    open_quarter(&b, &budget, 64 * MiB, real_of);
    fake_req_t scan = {.bytes = 16 * MiB, .real = 0}; /* a slow scan: its share reserved, nothing read */
    gw_held_add(b.held, &scan.e, "ip:a");
    size_t held;
    cr_assert_eq(gw_buffered_admit(&b, "ip:a", GW_BUFFERED_SMALL, 0, &held), GW_BUFFERED_ADMIT,
                 "the caller's cheap reads go on while its scan is out");
    cr_assert_eq(held, 0);
    cr_assert_eq(gw_buffered_admit(&b, "ip:a", GW_BUFFERED_SMALL + 1, 0, &held), GW_BUFFERED_SHARE);
    cr_assert_eq(held, 16 * MiB);
    scan.real = 16 * MiB; /* read, and not taken by its client */
    cr_assert_eq(gw_buffered_admit(&b, "ip:a", GW_BUFFERED_SMALL, 0, &held), GW_BUFFERED_SHARE);
    gw_held_remove(b.held, &scan.e);
    gw_buffered_dispose(&b);
}
