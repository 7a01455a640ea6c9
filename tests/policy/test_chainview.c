/* tests/policy/test_chainview.c: one network's chain view (policy/chainview.h). */
#include <criterion/criterion.h>
#include <string.h>

#include "policy/chainview.h"

#define LATEST POLICY_HEAD_LATEST
#define SAFE POLICY_HEAD_SAFE
#define FINAL POLICY_HEAD_FINALIZED
#define ALL UINT64_MAX

static void head(policy_chainview_t *v, uint32_t ep, policy_head_kind_t kind, uint64_t h)
{
    policy_chainview_obs_t o = {.kind = kind, .height = h, .is_head = 1};
    policy_chainview_change_t c;
    policy_chainview_observe(v, ep, &o, 1000, &c);
}

/* A view of n endpoints, the first ones at these latest heads (0 ends the list). */
static void view_at(policy_chainview_t *v, uint32_t n, uint64_t h0, uint64_t h1, uint64_t h2)
{
    const uint64_t h[3] = {h0, h1, h2};
    policy_chainview_init(v, n);
    for (uint32_t i = 0; i < 3 && h[i] != 0; i++)
        head(v, i, LATEST, h[i]);
}

/* A 32-byte hash from (branch, height). */
static const uint8_t *hash_of(uint8_t branch, uint64_t h, uint8_t out[32])
{
    memset(out, branch, 32);
    memcpy(out, &h, sizeof h);
    return out;
}

/* The endpoint's head is block h of branch b, whose parent is h-1 of branch pb. */
static policy_chainview_change_t tip(policy_chainview_t *v, uint32_t ep, uint64_t h, uint8_t b, uint8_t pb)
{
    uint8_t hh[32], ph[32];
    policy_chainview_obs_t o = {.kind = LATEST, .height = h, .is_head = 1, .hash = hash_of(b, h, hh),
                                .parent = hash_of(pb, h - 1, ph)};
    policy_chainview_change_t c;
    policy_chainview_observe(v, ep, &o, 2000, &c);
    return c;
}

/* Evidence: ep answered block h of branch b (no parent). */
static policy_chainview_change_t block(policy_chainview_t *v, uint32_t ep, uint64_t h, uint8_t b)
{
    uint8_t hh[32];
    policy_chainview_obs_t o = {.kind = LATEST, .height = h, .hash = hash_of(b, h, hh)};
    policy_chainview_change_t c;
    policy_chainview_observe(v, ep, &o, 3000, &c);
    return c;
}

/* Serves a head answer; it must be at least last (what call `call` got before). */
static uint64_t serve_in_order(policy_chainview_t *v, uint64_t answered, uint64_t usable, uint64_t hold, uint64_t last,
                               int call)
{
    int reg;
    uint64_t served = policy_chainview_serve_head(v, LATEST, answered, usable, hold, &reg);
    cr_assert_geq(served, last, "call %d went from %llu to %llu", call, (unsigned long long)last,
                  (unsigned long long)served);
    cr_assert(!reg);
    return served;
}

Test(chainview, init_and_bounds)
{
    policy_chainview_t v;
    policy_chainview_init(&v, 1000);
    cr_expect_eq(v.nendpoints, POLICY_CHAINVIEW_MAX_ENDPOINTS);
    policy_chainview_init(&v, 3);
    cr_expect_eq(v.nendpoints, 3);
    cr_expect_eq(policy_chainview_head(&v, LATEST, ALL), 0);
    /* an endpoint out of range or a bad kind changes nothing */
    policy_chainview_obs_t o = {.kind = LATEST, .height = 9, .is_head = 1};
    policy_chainview_change_t c = {.reorg_depth = 7};
    policy_chainview_observe(&v, 3, &o, 1, &c);
    cr_expect_eq(c.reorg_depth, 0);
    o.kind = POLICY_HEAD_KIND_COUNT;
    policy_chainview_observe(&v, 0, &o, 1, &c);
    cr_expect_eq(policy_chainview_head(&v, LATEST, ALL), 0);
    cr_expect_eq(policy_chainview_head(&v, POLICY_HEAD_KIND_COUNT, ALL), 0);
}

Test(chainview, heads_and_evidence)
{
    policy_chainview_t v;
    policy_chainview_init(&v, 3);
    policy_chainview_obs_t o = {.kind = LATEST, .height = 100, .is_head = 1};
    policy_chainview_change_t c;
    policy_chainview_observe(&v, 0, &o, 500, &c);
    cr_expect(c.head_moved);
    cr_expect_eq(v.ep[0].head[LATEST], 100);
    cr_expect_eq(v.ep[0].seen_ms[LATEST], 500);
    /* a head may go down (a load balancer's other node, a resync) ... */
    o.height = 98;
    policy_chainview_observe(&v, 0, &o, 600, &c);
    cr_expect_eq(v.ep[0].head[LATEST], 98);
    cr_expect(c.head_moved);
    /* ... evidence of a block only raises it */
    o.is_head = 0;
    o.height = 90;
    policy_chainview_observe(&v, 0, &o, 700, &c);
    cr_expect_eq(v.ep[0].head[LATEST], 98);
    cr_expect(!c.head_moved);
    cr_expect_eq(v.ep[0].seen_ms[LATEST], 700);
    o.height = 99;
    policy_chainview_observe(&v, 0, &o, 800, &c);
    cr_expect_eq(v.ep[0].head[LATEST], 99);
    head(&v, 1, LATEST, 105);
    head(&v, 2, LATEST, 103);
    head(&v, 1, FINAL, 40);
    head(&v, 2, SAFE, 70);
    cr_expect_eq(policy_chainview_head(&v, LATEST, ALL), 105);
    cr_expect_eq(policy_chainview_head(&v, LATEST, 1u << 0 | 1u << 2), 103);
    cr_expect_eq(policy_chainview_head(&v, LATEST, 0), 0);
    cr_expect_eq(policy_chainview_head(&v, FINAL, ALL), 40);
    cr_expect_eq(policy_chainview_head(&v, SAFE, ALL), 70);
}

Test(chainview, served_head_never_goes_backwards)
{
    policy_chainview_t v;
    view_at(&v, 3, 100, 102, 101);
    int reg;
    /* an endpoint behind answers: the usable head is served */
    cr_expect_eq(policy_chainview_serve_head(&v, LATEST, 100, ALL, 0, &reg), 102);
    cr_expect(!reg);
    cr_expect_eq(v.floor[LATEST], 102);
    /* an answer ahead of the view raises it */
    cr_expect_eq(policy_chainview_serve_head(&v, LATEST, 104, ALL, 0, &reg), 104);
    cr_expect_eq(v.floor[LATEST], 104);
    /* the endpoint at 104 was endpoint 1 and it is still usable: no lower answer */
    head(&v, 1, LATEST, 104);
    cr_expect_eq(policy_chainview_serve_head(&v, LATEST, 101, ALL, 2, &reg), 104);
    cr_expect(!reg);
    /* endpoint 1 dies (or was hedged away): the others are within the hold
     * of the floor, which is served */
    uint64_t without1 = 1u << 0 | 1u << 2;
    cr_expect_eq(policy_chainview_serve_head(&v, LATEST, 101, without1, 8, &reg), 104);
    cr_expect(!reg);
    /* further below than the hold: the truth, flagged, the floor stays */
    cr_expect_eq(policy_chainview_serve_head(&v, LATEST, 101, without1, 2, &reg), 101);
    cr_expect(reg);
    cr_expect_eq(v.floor[LATEST], 104);
    /* floors are per kind (Solana getSlot per commitment) */
    head(&v, 0, FINAL, 60);
    cr_expect_eq(policy_chainview_serve_head(&v, FINAL, 0, ALL, 0, &reg), 60);
    cr_expect_eq(v.floor[FINAL], 60);
    cr_expect_eq(policy_chainview_serve_head(&v, POLICY_HEAD_KIND_COUNT, 7, ALL, 0, &reg), 7);
}

/* A floor served elsewhere (another worker, another host) that this view's
 * endpoints are a block or two short of is held, not gone below. */
Test(chainview, a_floor_from_elsewhere_within_hold_is_served)
{
    policy_chainview_t v;
    view_at(&v, 3, 100, 99, 98);
    int reg;
    v.floor[LATEST] = 102; /* another host served 102 */
    cr_expect_eq(policy_chainview_serve_head(&v, LATEST, 99, ALL, 2, &reg), 102);
    cr_expect(!reg);
    /* three below is more than the hold: nobody near the floor, the truth */
    v.floor[LATEST] = 103;
    cr_expect_eq(policy_chainview_serve_head(&v, LATEST, 99, ALL, 2, &reg), 100);
    cr_expect(reg);
    cr_expect_eq(v.floor[LATEST], 103);
    /* the endpoints catch up: the floor moves on */
    head(&v, 0, LATEST, 104);
    cr_expect_eq(policy_chainview_serve_head(&v, LATEST, 0, ALL, 2, &reg), 104);
    cr_expect_eq(v.floor[LATEST], 104);
    /* the endpoint this view saw at the floor is gone (not usable): the
     * others are within the hold, the floor is served */
    uint64_t without0 = 1u << 1 | 1u << 2;
    cr_expect_eq(policy_chainview_serve_head(&v, LATEST, 0, without0, 8, &reg), 104);
    cr_expect(!reg);
}

/* Three endpoints one block apart, the top one sometimes hedged away or
 * failing (left out of usable for that call), answers from any of them:
 * what is served never goes down. */
Test(chainview, hedges_and_failovers_never_serve_less)
{
    policy_chainview_t v;
    policy_chainview_init(&v, 3);
    uint64_t top = 1000, seed = 7, last = 0;
    for (int call = 0; call < 500; call++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        if ((seed >> 20) % 3 == 0)
            top++;
        for (uint32_t i = 0; i < 3; i++)
            head(&v, i, LATEST, top - i);
        uint32_t ep = (uint32_t)(seed >> 33) % 3;
        uint64_t usable = (seed >> 40) % 2 ? ALL : (ALL & ~1u); /* the top one hedged away */
        last = serve_in_order(&v, top - ep, usable, 8, last, call);
    }
}

/* One endpoint's word is not the chain's: with three or more, a lead over
 * every other by more than max_lag is unconfirmed; with two, only
 * max_head_lead tells (a laggard and a liar look alike). */
Test(chainview, a_lone_lead_past_max_lag_is_unconfirmed)
{
    policy_chainview_t v;
    uint64_t lead;
    view_at(&v, 3, 100, 100, 109);
    cr_expect_eq(policy_chainview_unconfirmed(&v, LATEST, 2, ALL, &lead), 1u << 2);
    cr_expect_eq(lead, 9);
    cr_expect_eq(policy_chainview_implausible(&v, LATEST, 128, ALL, NULL), 0, "the event's rule is wider");
    uint64_t trusted = ALL & ~policy_chainview_unconfirmed(&v, LATEST, 2, ALL, NULL);
    int reg;
    cr_expect_eq(policy_chainview_serve_head(&v, LATEST, 0, trusted, 8, &reg), 100);
    cr_expect(policy_chainview_latest_ok(&v, 0, LATEST, 2, trusted));
    /* within max_lag: a fast honest endpoint, believed */
    head(&v, 2, LATEST, 102);
    cr_expect_eq(policy_chainview_unconfirmed(&v, LATEST, 2, ALL, NULL), 0);
    /* two endpoints: nothing to tell a liar from a laggard at this margin */
    head(&v, 2, LATEST, 109);
    cr_expect_eq(policy_chainview_unconfirmed(&v, LATEST, 2, 1u << 0 | 1u << 2, NULL), 0);
    /* two far ahead together confirm each other */
    view_at(&v, 4, 100, 109, 109);
    cr_expect_eq(policy_chainview_unconfirmed(&v, LATEST, 2, ALL, NULL), 0);
}

/* safe and finalized are what another endpoint confirms, never the max,
 * and never above an endpoint's own head; what is kept as final is below
 * the agreed head by a margin. */
Test(chainview, finality_by_quorum)
{
    policy_chainview_t v;
    view_at(&v, 3, 1000, 1000, 1000);
    head(&v, 0, FINAL, 936);
    head(&v, 1, FINAL, 936);
    head(&v, 2, FINAL, 1000); /* a dev node, a misconfigured one, a liar */
    cr_expect_eq(policy_chainview_agreed(&v, FINAL, ALL), 936);
    cr_expect_eq(policy_chainview_final(&v, ALL, 2), 936);
    cr_expect(policy_chainview_final_confirmed(&v, ALL, 936));
    cr_expect(!policy_chainview_final_confirmed(&v, ALL, 937), "only the liar says 937 is final");
    uint64_t n;
    cr_expect_eq(policy_chainview_resolve(&v, POLICY_TAG_FINALIZED, ALL, &n), SL_OK);
    cr_expect_eq(n, 936);
    /* alone, it is believed, but never to the tip */
    cr_expect_eq(policy_chainview_agreed(&v, FINAL, 1u << 2), 1000);
    cr_expect_eq(policy_chainview_final(&v, 1u << 2, 2), 998);
    cr_expect(!policy_chainview_final_confirmed(&v, 1u << 2, 900), "one endpoint's word");
    /* a finalized above the endpoint's own head counts as its head */
    head(&v, 2, FINAL, 5000);
    cr_expect_eq(policy_chainview_agreed(&v, FINAL, 1u << 1 | 1u << 2), 936);
    cr_expect_eq(policy_chainview_agreed(&v, FINAL, 1u << 2), 1000);
    /* nobody reports one */
    view_at(&v, 2, 10, 10, 0);
    cr_expect_eq(policy_chainview_agreed(&v, FINAL, ALL), 0);
    cr_expect_eq(policy_chainview_final(&v, ALL, 2), 0);
    cr_expect_eq(policy_chainview_agreed(&v, POLICY_HEAD_KIND_COUNT, ALL), 0);
}

Test(chainview, a_head_far_ahead_of_every_other_is_implausible)
{
    policy_chainview_t v;
    uint64_t lead;
    view_at(&v, 4, 100, 99, 1000000000);
    cr_expect_eq(policy_chainview_implausible(&v, LATEST, 64, ALL, &lead), 1u << 2);
    cr_expect_eq(lead, 1000000000 - 100);
    /* the served head leaves it out: the honest head is served, not 10^9 */
    uint64_t trusted = ALL & ~policy_chainview_implausible(&v, LATEST, 64, ALL, NULL);
    int reg;
    cr_expect_eq(policy_chainview_serve_head(&v, LATEST, 0, trusted, 2, &reg), 100);
    cr_expect_eq(v.floor[LATEST], 100);
    cr_expect(!policy_chainview_latest_ok(&v, 1, LATEST, 2, ALL), "with it trusted, honest 99 is 'behind'");
    cr_expect(policy_chainview_latest_ok(&v, 1, LATEST, 2, trusted));
    /* 1,000 ahead is as implausible; 64 ahead is within the lead */
    head(&v, 2, LATEST, 1100);
    cr_expect_eq(policy_chainview_implausible(&v, LATEST, 64, ALL, &lead), 1u << 2);
    cr_expect_eq(lead, 1000);
    head(&v, 2, LATEST, 164);
    cr_expect_eq(policy_chainview_implausible(&v, LATEST, 64, ALL, &lead), 0);
    cr_expect_eq(lead, 0);
    /* a legitimately fast endpoint a few blocks ahead is the head */
    head(&v, 2, LATEST, 103);
    cr_expect_eq(policy_chainview_implausible(&v, LATEST, 64, ALL, NULL), 0);
    cr_expect_eq(policy_chainview_head(&v, LATEST, ALL), 103);
    /* another endpoint confirms the far head: trusted */
    head(&v, 2, LATEST, 5000);
    head(&v, 3, LATEST, 4990);
    cr_expect_eq(policy_chainview_implausible(&v, LATEST, 64, ALL, NULL), 0);
    /* only the endpoints of the mask compare: 3 unusable, 2 is alone ahead again */
    cr_expect_eq(policy_chainview_implausible(&v, LATEST, 64, ALL & ~(1u << 3), NULL), 1u << 2);
}

Test(chainview, a_single_endpoint_cannot_be_implausible)
{
    policy_chainview_t v;
    view_at(&v, 3, 1000000000, 0, 0);
    cr_expect_eq(policy_chainview_implausible(&v, LATEST, 64, ALL, NULL), 0, "nothing to compare with");
    /* endpoints with no head yet do not count */
    view_at(&v, 3, 1000000000, 0, 0);
    head(&v, 2, FINAL, 5);
    cr_expect_eq(policy_chainview_implausible(&v, LATEST, 64, ALL, NULL), 0);
    cr_expect_eq(policy_chainview_implausible(&v, POLICY_HEAD_KIND_COUNT, 64, ALL, NULL), 0);
    /* per kind: finalized compares finalized heads */
    head(&v, 0, FINAL, 1000);
    cr_expect_eq(policy_chainview_implausible(&v, FINAL, 64, ALL, NULL), 1u << 0);
}

/* The test, in miniature: 200 eth_blockNumber calls over three
 * endpoints at different heights, each answered by a random usable endpoint
 * whose own head is what it answers, never go backwards. */
Test(chainview, two_hundred_calls_over_three_endpoints)
{
    policy_chainview_t v;
    policy_chainview_init(&v, 3);
    uint64_t heads[3] = {1000, 997, 1002}, seed = 42, last = 0;
    for (int call = 0; call < 200; call++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t ep = (uint32_t)(seed >> 33) % 3;
        if ((seed >> 20) % 4 == 0)
            heads[(seed >> 40) % 3]++; /* the chain moves on, unevenly */
        head(&v, ep, LATEST, heads[ep]);
        last = serve_in_order(&v, heads[ep], ALL, 0, last, call);
    }
}

Test(chainview, latest_reads_go_to_endpoints_near_the_head)
{
    policy_chainview_t v;
    view_at(&v, 4, 100, 98, 97);
    cr_expect(policy_chainview_latest_ok(&v, 0, LATEST, 2, ALL));
    cr_expect(policy_chainview_latest_ok(&v, 1, LATEST, 2, ALL));
    cr_expect(!policy_chainview_latest_ok(&v, 2, LATEST, 2, ALL));
    cr_expect(policy_chainview_latest_ok(&v, 2, LATEST, 3, ALL));
    /* never observed: no evidence, no exclusion */
    cr_expect(policy_chainview_latest_ok(&v, 3, LATEST, 0, ALL));
    /* the head is the usable endpoints': with endpoint 0 out, 97 is within 2 of 98 */
    cr_expect(policy_chainview_latest_ok(&v, 2, LATEST, 2, 1u << 1 | 1u << 2));
    cr_expect(policy_chainview_latest_ok(&v, 99, LATEST, 0, ALL));
}

Test(chainview, block_availability)
{
    policy_chainview_t v;
    view_at(&v, 3, 100, 95, 0);
    cr_expect_eq(policy_chainview_has_block(&v, 0, 100), POLICY_HAS_YES);
    cr_expect_eq(policy_chainview_has_block(&v, 1, 100), POLICY_HAS_NO);
    cr_expect_eq(policy_chainview_has_block(&v, 2, 100), POLICY_HAS_UNKNOWN);
    cr_expect_eq(policy_chainview_has_block(&v, 9, 1), POLICY_HAS_UNKNOWN);
    /* not sent below the block while another usable endpoint has it */
    cr_expect(policy_chainview_block_ok(&v, 0, 100, ALL));
    cr_expect(!policy_chainview_block_ok(&v, 1, 100, ALL));
    cr_expect(policy_chainview_block_ok(&v, 2, 100, ALL));
    /* nobody usable has it: every endpoint is worth a try */
    cr_expect(policy_chainview_block_ok(&v, 1, 100, 1u << 1 | 1u << 2));
    cr_expect(policy_chainview_block_ok(&v, 1, 101, ALL));
    /* a null for block 100 from endpoint 1 means it is behind: the block exists */
    cr_expect(policy_chainview_null_is_behind(&v, 1, 100, ALL));
    cr_expect(policy_chainview_null_is_behind(&v, 0, 99, ALL));
    /* block 101: nobody saw it; null is the truth */
    cr_expect(!policy_chainview_null_is_behind(&v, 0, 101, ALL));
    /* only the endpoints in `among` (the right chain) count */
    cr_expect(!policy_chainview_null_is_behind(&v, 1, 100, 1u << 1));
}

Test(chainview, tags_resolve_from_the_view)
{
    policy_chainview_t v;
    policy_chainview_init(&v, 2);
    uint64_t n = 7;
    cr_expect_eq(policy_chainview_resolve(&v, POLICY_TAG_LATEST, ALL, &n), SL_ERR_NOT_FOUND);
    cr_expect_eq(n, 7);
    cr_expect_eq(policy_chainview_resolve(&v, POLICY_TAG_EARLIEST, ALL, &n), SL_OK);
    cr_expect_eq(n, 0);
    head(&v, 0, LATEST, 200);
    head(&v, 1, LATEST, 210);
    head(&v, 0, SAFE, 168);
    head(&v, 1, FINAL, 136);
    cr_expect_eq(policy_chainview_resolve(&v, POLICY_TAG_LATEST, ALL, &n), SL_OK);
    cr_expect_eq(n, 210);
    cr_expect_eq(policy_chainview_resolve(&v, POLICY_TAG_PENDING, 1u << 0, &n), SL_OK);
    cr_expect_eq(n, 200);
    cr_expect_eq(policy_chainview_resolve(&v, POLICY_TAG_SAFE, ALL, &n), SL_OK);
    cr_expect_eq(n, 168);
    cr_expect_eq(policy_chainview_resolve(&v, POLICY_TAG_FINALIZED, ALL, &n), SL_OK);
    cr_expect_eq(n, 136);
    cr_expect_eq(policy_chainview_resolve(&v, POLICY_TAG_FINALIZED, 1u << 0, &n), SL_ERR_NOT_FOUND);
    cr_expect_eq(policy_chainview_resolve(&v, POLICY_TAG_COUNT, ALL, &n), SL_ERR_INVALID);
    cr_expect_eq(policy_chainview_kind_of(POLICY_COMMITMENT_PROCESSED), LATEST);
    cr_expect_eq(policy_chainview_kind_of(POLICY_COMMITMENT_CONFIRMED), SAFE);
    cr_expect_eq(policy_chainview_kind_of(POLICY_COMMITMENT_FINALIZED), FINAL);
    cr_expect_eq(policy_chainview_kind_of(POLICY_COMMITMENT_DEFAULT), FINAL);
}

Test(chainview, one_chain_no_reorg)
{
    policy_chainview_t v;
    policy_chainview_init(&v, 2);
    for (uint64_t h = 100; h <= 110; h++) {
        policy_chainview_change_t c = tip(&v, h % 2, h, 1, 1);
        cr_assert_eq(c.reorg_depth, 0, "height %llu", (unsigned long long)h);
        cr_assert(!c.forked);
    }
    cr_expect_eq(v.ring_top, 110);
    uint8_t want[32];
    cr_expect_eq(memcmp(policy_chainview_hash_at(&v, 105), hash_of(1, 105, want), 32), 0);
    cr_expect_null(policy_chainview_hash_at(&v, 111));
    cr_expect_null(policy_chainview_hash_at(&v, 110 - POLICY_CHAINVIEW_RING));
    cr_expect(v.ep[0].has_hash);
    /* a lagging endpoint reading an old block of the same chain: nothing */
    policy_chainview_change_t c = block(&v, 1, 104, 1);
    cr_expect_eq(c.reorg_depth, 0);
    cr_expect(!c.forked);
}

/* Endpoint 0 has seen blocks 100..105 of branch 1; endpoint 1 nothing yet. */
static void one_branch(policy_chainview_t *v)
{
    policy_chainview_init(v, 2);
    for (uint64_t h = 100; h <= 105; h++)
        tip(v, 0, h, 1, 1);
}

Test(chainview, a_competing_tip_is_a_reorg_of_one)
{
    policy_chainview_t v;
    one_branch(&v);
    policy_chainview_change_t c = tip(&v, 1, 105, 2, 1);
    cr_expect_eq(c.reorg_depth, 1);
    cr_expect_eq(c.reorg_height, 105);
    uint8_t want[32];
    cr_expect_eq(memcmp(policy_chainview_hash_at(&v, 105), hash_of(2, 105, want), 32), 0);
}

Test(chainview, a_deeper_reorg_shows_as_the_ring_learns_it)
{
    policy_chainview_t v;
    one_branch(&v);
    /* endpoint 1 is on a branch from 103 on, and behind: only "forked" */
    policy_chainview_change_t c = tip(&v, 1, 104, 2, 2);
    cr_expect_eq(c.reorg_depth, 0);
    cr_expect(c.forked);
    uint8_t want[32];
    cr_expect_eq(memcmp(policy_chainview_hash_at(&v, 104), hash_of(1, 104, want), 32), 0);
    /* its branch overtakes: 106 whose parent is its 105 */
    c = tip(&v, 1, 106, 2, 2);
    cr_expect_eq(c.reorg_depth, 1);
    cr_expect_eq(c.reorg_height, 105);
    /* reading older blocks from it (now at the tip) shows the fork's depth */
    c = block(&v, 1, 104, 2);
    cr_expect_eq(c.reorg_depth, 3);
    cr_expect_eq(c.reorg_height, 104);
    c = block(&v, 1, 103, 2);
    cr_expect_eq(c.reorg_depth, 4);
    c = block(&v, 1, 102, 1); /* the common ancestor */
    cr_expect_eq(c.reorg_depth, 0);
    /* the old branch's endpoint, now behind, cannot flip the ring back */
    c = tip(&v, 0, 105, 1, 1);
    cr_expect(c.forked);
    cr_expect_eq(c.reorg_depth, 0);
    cr_expect_eq(memcmp(policy_chainview_hash_at(&v, 105), hash_of(2, 105, want), 32), 0);
    cr_expect(!v.ep[0].has_hash || memcmp(v.ep[0].hash, hash_of(1, 105, want), 32) == 0);
}

Test(chainview, plain_data_of_fixed_size)
{
    /* one LMDB record: no pointers, and small */
    cr_expect_lt(sizeof(policy_chainview_t), 16 * 1024);
    policy_chainview_t a, b;
    policy_chainview_init(&a, 2);
    tip(&a, 0, 10, 1, 1);
    memcpy(&b, &a, sizeof a);
    cr_expect_eq(memcmp(policy_chainview_hash_at(&b, 10), policy_chainview_hash_at(&a, 10), 32), 0);
}

/* The ring vouches only for heights linked parent to child up to the tip:
 * what a reader keys by (the response cache) is never a hash of a block a
 * reorg of unknown depth may have replaced. */
Test(chainview, the_ring_vouches_only_for_the_linked_run_up_to_the_tip)
{
    policy_chainview_t v;
    one_branch(&v); /* branch 1 up to 105, each height seen */
    uint8_t want[32];
    cr_expect_eq(memcmp(policy_chainview_hash_at(&v, 103), hash_of(1, 103, want), 32), 0);
    /* a new tip at 106 whose parent is not the ring's 105: a fork of unknown depth */
    policy_chainview_change_t c = tip(&v, 1, 106, 2, 2);
    cr_expect_eq(c.reorg_height, 105);
    cr_expect_not_null(policy_chainview_hash_at(&v, 106));
    cr_expect_not_null(policy_chainview_hash_at(&v, 105), "the tip's parent is the tip's word");
    cr_expect_null(policy_chainview_hash_at(&v, 104), "below it the ring no longer vouches");
    cr_expect_not_null(policy_chainview_held_at(&v, 104), "but still holds it, to tell the depth");
    /* reading 104 again from the tip vouches for it anew */
    block(&v, 1, 104, 2);
    cr_expect_eq(memcmp(policy_chainview_hash_at(&v, 104), hash_of(2, 104, want), 32), 0);
    /* heights gone by unseen: a tip at 110 not linked to 106 */
    tip(&v, 1, 110, 2, 2);
    cr_expect_null(policy_chainview_hash_at(&v, 106));
    cr_expect_not_null(policy_chainview_hash_at(&v, 109));
}
