/* sl_budget: bytes held, the limit, the peak. */
#include <criterion/criterion.h>

#include "base/sl_budget.h"

Test(budget, charge_release_and_peak)
{
    sl_budget_t b = {.limit = 100};
    cr_assert_not(sl_budget_exhausted(&b));
    sl_budget_charge(&b, 60);
    sl_budget_charge(&b, 39);
    cr_assert_not(sl_budget_exhausted(&b));
    sl_budget_charge(&b, 1);
    cr_assert(sl_budget_exhausted(&b), "at the limit: new work is refused");
    sl_budget_charge(&b, 50); /* work already admitted may pass it */
    cr_assert_eq(b.used, 150);
    sl_budget_release(&b, 120);
    cr_assert_eq(b.used, 30);
    cr_assert_not(sl_budget_exhausted(&b));
    cr_assert_eq(b.peak, 150);
    sl_budget_release(&b, 30);
    cr_assert_eq(b.used, 0);
}
