/* tests/pool/test_fsm.c: the edges of the pool's state machines (an
 * upstream connection, a call, a call's item, a call's hedge). Each machine has one writer that
 * checks every transition against these tables. */
#include <criterion/criterion.h>
#include <signal.h>

#include "pool/pool_call_int.h"
#include "pool/pool_link_int.h"

/* every state reachable from the initial one through allowed edges */
static unsigned reachable(int (*allowed)(int, int), int initial, int count)
{
    unsigned seen = 1u << initial;
    for (int round = 0; round < count; round++)
        for (int from = 0; from < count; from++)
            for (int to = 0; to < count; to++)
                if ((seen & (1u << from)) && allowed(from, to))
                    seen |= 1u << to;
    return seen;
}

static int conn_allowed(int f, int t) { return pool_conn_edge_allowed((pool_conn_state_t)f, (pool_conn_state_t)t); }
static int item_allowed(int f, int t) { return pool_item_edge_allowed((pool_item_state_t)f, (pool_item_state_t)t); }
static int hedge_allowed(int f, int t) { return pool_hedge_edge_allowed((pool_hedge_state_t)f, (pool_hedge_state_t)t); }

Test(fsm, hedge_edges)
{
    cr_expect(pool_hedge_edge_allowed(POOL_HEDGE_IDLE, POOL_HEDGE_ARMED));
    cr_expect(pool_hedge_edge_allowed(POOL_HEDGE_ARMED, POOL_HEDGE_SENT));
    cr_expect(pool_hedge_edge_allowed(POOL_HEDGE_ARMED, POOL_HEDGE_IDLE));
    cr_expect(pool_hedge_edge_allowed(POOL_HEDGE_SENT, POOL_HEDGE_IDLE));
    /* never a hedge without its delay, never a second timer over a hedge in flight, no self-edges */
    cr_expect(!pool_hedge_edge_allowed(POOL_HEDGE_IDLE, POOL_HEDGE_SENT));
    cr_expect(!pool_hedge_edge_allowed(POOL_HEDGE_SENT, POOL_HEDGE_ARMED));
    for (int s = 0; s < POOL_HEDGE_STATE_COUNT; s++)
        cr_expect(!pool_hedge_edge_allowed((pool_hedge_state_t)s, (pool_hedge_state_t)s));
    cr_expect(!pool_hedge_edge_allowed(POOL_HEDGE_STATE_COUNT, POOL_HEDGE_IDLE));
    cr_expect_eq(reachable(hedge_allowed, POOL_HEDGE_IDLE, POOL_HEDGE_STATE_COUNT),
                 (1u << POOL_HEDGE_STATE_COUNT) - 1, "every state is reachable");
}

Test(fsm, conn_edges)
{
    /* the life of a keep-alive connection */
    cr_expect(pool_conn_edge_allowed(POOL_CONN_CONNECTING, POOL_CONN_HANDSHAKE));
    cr_expect(pool_conn_edge_allowed(POOL_CONN_CONNECTING, POOL_CONN_SENDING));
    cr_expect(pool_conn_edge_allowed(POOL_CONN_HANDSHAKE, POOL_CONN_SENDING));
    cr_expect(pool_conn_edge_allowed(POOL_CONN_SENDING, POOL_CONN_BODY));
    cr_expect(pool_conn_edge_allowed(POOL_CONN_BODY, POOL_CONN_IDLE));
    cr_expect(pool_conn_edge_allowed(POOL_CONN_IDLE, POOL_CONN_SENDING));
    /* never back to connecting, never idle before the answer is read, no self-edges */
    for (int s = 0; s < POOL_CONN_STATE_COUNT; s++) {
        cr_expect(!pool_conn_edge_allowed((pool_conn_state_t)s, POOL_CONN_CONNECTING));
        cr_expect(!pool_conn_edge_allowed((pool_conn_state_t)s, (pool_conn_state_t)s));
    }
    cr_expect(!pool_conn_edge_allowed(POOL_CONN_SENDING, POOL_CONN_IDLE));
    /* open, its exchange cancelled before the request (pool_conn_unsent) */
    cr_expect(pool_conn_edge_allowed(POOL_CONN_CONNECTING, POOL_CONN_IDLE));
    cr_expect(pool_conn_edge_allowed(POOL_CONN_HANDSHAKE, POOL_CONN_IDLE));
    cr_expect(!pool_conn_edge_allowed(POOL_CONN_IDLE, POOL_CONN_BODY));
    cr_expect(!pool_conn_edge_allowed(POOL_CONN_IDLE, POOL_CONN_HANDSHAKE));
    /* out of range */
    cr_expect(!pool_conn_edge_allowed(POOL_CONN_STATE_COUNT, POOL_CONN_IDLE));
    cr_expect(!pool_conn_edge_allowed(POOL_CONN_IDLE, POOL_CONN_STATE_COUNT));
    cr_expect_eq(reachable(conn_allowed, POOL_CONN_CONNECTING, POOL_CONN_STATE_COUNT),
                 (1u << POOL_CONN_STATE_COUNT) - 1, "every state is reachable");
}

Test(fsm, item_edges)
{
    cr_expect(pool_item_edge_allowed(POOL_ITEM_PENDING, POOL_ITEM_ANSWERED));
    cr_expect(pool_item_edge_allowed(POOL_ITEM_PENDING, POOL_ITEM_FAILED));
    /* settled once: no way out of ANSWERED or FAILED, not even to itself */
    for (int t = 0; t < POOL_ITEM_STATE_COUNT; t++) {
        cr_expect(!pool_item_edge_allowed(POOL_ITEM_ANSWERED, (pool_item_state_t)t));
        cr_expect(!pool_item_edge_allowed(POOL_ITEM_FAILED, (pool_item_state_t)t));
    }
    cr_expect(!pool_item_edge_allowed(POOL_ITEM_PENDING, POOL_ITEM_PENDING));
    cr_expect(!pool_item_edge_allowed(POOL_ITEM_STATE_COUNT, POOL_ITEM_FAILED));
    cr_expect_eq(reachable(item_allowed, POOL_ITEM_PENDING, POOL_ITEM_STATE_COUNT),
                 (1u << POOL_ITEM_STATE_COUNT) - 1, "every state is reachable");
}

Test(fsm, settling_twice_aborts, .signal = SIGABRT)
{
    pool_item_t it = {.state = POOL_ITEM_PENDING};
    pool_item_settle(&it, POOL_ITEM_ANSWERED);
    cr_assert_eq(it.state, POOL_ITEM_ANSWERED);
    pool_item_settle(&it, POOL_ITEM_FAILED); /* a bug: the item was answered */
}

static int call_allowed(int f, int t) { return pool_call_edge_allowed((pool_call_state_t)f, (pool_call_state_t)t); }

Test(fsm, call_edges)
{
    /* a new call rides on another's, or goes upstream itself, or (no attempt
     * could even start: each one counts) waits for its next round */
    static const pool_call_state_t from_new[] = {POOL_CALL_RIDING, POOL_CALL_SENDING, POOL_CALL_BACKOFF,
                                                 POOL_CALL_WAITING, POOL_CALL_LEASING, POOL_CALL_SETTLED};
    for (size_t i = 0; i < sizeof(from_new) / sizeof(from_new[0]); i++)
        cr_expect(pool_call_edge_allowed(POOL_CALL_NEW, from_new[i]), "NEW -> %d", (int)from_new[i]);
    cr_expect(!pool_call_edge_allowed(POOL_CALL_NEW, POOL_CALL_DONE), "the callback never runs inside the start");
    /* a rider is answered by the other call, or goes upstream itself */
    cr_expect(pool_call_edge_allowed(POOL_CALL_RIDING, POOL_CALL_DONE));
    cr_expect(pool_call_edge_allowed(POOL_CALL_RIDING, POOL_CALL_SENDING));
    cr_expect(!pool_call_edge_allowed(POOL_CALL_RIDING, POOL_CALL_RIDING), "rides once");
    /* the loop's states lead to one another, to the end, and never back to riding or new */
    static const pool_call_state_t loop[] = {POOL_CALL_SENDING, POOL_CALL_BACKOFF, POOL_CALL_WAITING,
                                             POOL_CALL_LEASING};
    for (size_t i = 0; i < 4; i++) {
        for (size_t j = 0; j < 4; j++)
            cr_expect(pool_call_edge_allowed(loop[i], loop[j]), "%d -> %d", (int)loop[i], (int)loop[j]);
        cr_expect(pool_call_edge_allowed(loop[i], POOL_CALL_SETTLED));
        cr_expect(pool_call_edge_allowed(loop[i], POOL_CALL_DONE), "a deadline ends it from anywhere");
        cr_expect(!pool_call_edge_allowed(loop[i], POOL_CALL_RIDING));
        cr_expect(!pool_call_edge_allowed(loop[i], POOL_CALL_NEW));
    }
    /* settled: only the callback is left; done: nothing */
    for (int t = 0; t < POOL_CALL_STATE_COUNT; t++) {
        cr_expect(pool_call_edge_allowed(POOL_CALL_SETTLED, (pool_call_state_t)t) == (t == POOL_CALL_DONE));
        cr_expect(!pool_call_edge_allowed(POOL_CALL_DONE, (pool_call_state_t)t));
    }
    cr_expect(!pool_call_edge_allowed(POOL_CALL_STATE_COUNT, POOL_CALL_DONE));
    cr_expect_eq(reachable(call_allowed, POOL_CALL_NEW, POOL_CALL_STATE_COUNT), (1u << POOL_CALL_STATE_COUNT) - 1,
                 "every state is reachable");
}

Test(fsm, call_bad_move_aborts, .signal = SIGABRT)
{
    pool_call_t call = {.state = POOL_CALL_DONE};
    pool_call_move(&call, POOL_CALL_SENDING); /* a bug: the call is over */
}
