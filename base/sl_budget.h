/* base/sl_budget.h: a worker's budget of bytes held in memory for answers.
 *
 * One per worker process, single-threaded. pool/ charges the bytes of an
 * upstream answer as they are read and releases them when the call is
 * freed; gateway/ charges the replies it assembles and decides which new
 * calls may have more (server.max_buffered_bytes less a reserve, each
 * caller's share: gateway/gw_buffered.h). Calls already admitted are never
 * cut short by the budget, so usage may pass the limit by what those calls
 * still read. */
#ifndef SL_BUDGET_H
#define SL_BUDGET_H

#include <assert.h>
#include <stddef.h>

typedef struct sl_budget {
    size_t used;                  /* bytes held now */
    size_t limit;                 /* server.max_buffered_bytes */
    size_t peak;                  /* highest used so far */
} sl_budget_t;

static inline void sl_budget_charge(sl_budget_t *b, size_t n)
{
    b->used += n;
    if (b->used > b->peak)
        b->peak = b->used;
}

static inline void sl_budget_release(sl_budget_t *b, size_t n)
{
    assert(n <= b->used);
    b->used -= n <= b->used ? n : b->used;
}

static inline int sl_budget_exhausted(const sl_budget_t *b)
{
    return b->used >= b->limit;
}

#endif
