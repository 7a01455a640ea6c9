/* tests/state/test_lease.c: the callers waiting for a lease asked of the
 * cluster (state/state_lease.c): woken once, all or one caller's, and free
 * to wait again or cancel another from their callback. */
#include <criterion/criterion.h>
#include <string.h>

#include <h2o/memory.h>

#include "state/state_lease.h"

typedef struct caller {
    state_lease_wait_t wait;
    int who;                      /* the caller a lease is for */
    int woken;
    state_lease_waiters_t *again; /* waits again in this list when woken */
    struct caller *cancels;       /* cancels this one when woken */
} caller_t;

static void on_wake(state_lease_wait_t *w)
{
    caller_t *c = H2O_STRUCT_FROM_MEMBER(caller_t, wait, w);
    c->woken++;
    if (c->cancels != NULL)
        state_lease_wait_cancel(&c->cancels->wait);
    if (c->again != NULL)
        state_lease_wait(c->again, &c->wait, on_wake);
}

static int is_who(const state_lease_wait_t *w, const void *arg)
{
    return H2O_STRUCT_FROM_MEMBER(caller_t, wait, w)->who == *(const int *)arg;
}

Test(lease, a_wake_calls_each_waiter_once_and_empties_the_list)
{
    state_lease_waiters_t ws;
    state_lease_waiters_init(&ws);
    caller_t c[3];
    memset(c, 0, sizeof(c));
    for (int i = 0; i < 3; i++)
        state_lease_wait(&ws, &c[i].wait, on_wake);
    state_lease_wake(&ws, NULL, NULL);
    for (int i = 0; i < 3; i++)
        cr_expect_eq(c[i].woken, 1, "caller %d woken %d times", i, c[i].woken);
    cr_expect(h2o_linklist_is_empty(&ws.anchor));
    state_lease_wake(&ws, NULL, NULL);
    cr_expect_eq(c[0].woken, 1, "a woken caller no longer waits");
}

Test(lease, a_lease_for_one_caller_wakes_only_its_waiters)
{
    state_lease_waiters_t ws;
    state_lease_waiters_init(&ws);
    caller_t c[4];
    memset(c, 0, sizeof(c));
    for (int i = 0; i < 4; i++) {
        c[i].who = i % 2;
        state_lease_wait(&ws, &c[i].wait, on_wake);
    }
    int one = 1;
    state_lease_wake(&ws, is_who, &one);
    for (int i = 0; i < 4; i++)
        cr_expect_eq(c[i].woken, i % 2, "caller %d", i);
    int zero = 0;
    state_lease_wake(&ws, is_who, &zero);
    for (int i = 0; i < 4; i++)
        cr_expect_eq(c[i].woken, 1, "caller %d", i);
}

Test(lease, a_cancelled_waiter_is_not_woken_and_cancel_is_harmless_twice)
{
    state_lease_waiters_t ws;
    state_lease_waiters_init(&ws);
    caller_t c[2];
    memset(c, 0, sizeof(c));
    state_lease_wait_cancel(&c[0].wait); /* zero-filled: not waiting */
    state_lease_wait(&ws, &c[0].wait, on_wake);
    state_lease_wait(&ws, &c[1].wait, on_wake);
    state_lease_wait_cancel(&c[0].wait);
    state_lease_wait_cancel(&c[0].wait);
    state_lease_wake(&ws, NULL, NULL);
    cr_expect_eq(c[0].woken, 0);
    cr_expect_eq(c[1].woken, 1);
}

Test(lease, a_woken_waiter_may_wait_again_or_cancel_another_without_harm)
{
    state_lease_waiters_t ws;
    state_lease_waiters_init(&ws);
    caller_t c[3];
    memset(c, 0, sizeof(c));
    c[0].again = &ws;         /* its lease is still asked: waits for the next answer */
    c[1].cancels = &c[2];     /* its request takes another one's away */
    for (int i = 0; i < 3; i++)
        state_lease_wait(&ws, &c[i].wait, on_wake);
    state_lease_wake(&ws, NULL, NULL);
    cr_expect_eq(c[0].woken, 1, "waiting again is not a second wake in the same one");
    cr_expect_eq(c[1].woken, 1);
    cr_expect_eq(c[2].woken, 0, "cancelled while woken with the others");
    c[0].again = NULL;
    state_lease_wake(&ws, NULL, NULL);
    cr_expect_eq(c[0].woken, 2, "the next answer wakes it");
}
