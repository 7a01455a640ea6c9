/* tests/admin/test_routes.c: the admin route table (admin/admin.c): its
 * flags, and how a method and path find a row (which answers 404 or 405). */
#include <criterion/criterion.h>
#include <string.h>

#include "admin/admin_int.h"

static h2o_iovec_t iov(const char *s) { return h2o_iovec_init(s, strlen(s)); }

Test(routes, only_the_page_and_healthz_go_without_the_token)
{
    size_t n;
    const admin_route_t *r = admin_routes(&n);
    cr_assert_gt(n, 8);
    for (size_t i = 0; i < n; i++) {
        int open = strcmp(r[i].path, "/") == 0 || strcmp(r[i].path, "/healthz") == 0;
        cr_expect_eq(!(r[i].flags & ADMIN_ROUTE_AUTH), open, "%s %s: auth flag", r[i].method, r[i].path);
        cr_expect_eq(r[i].flags & ~(unsigned)ADMIN_ROUTE_FLAGS, 0, "%s %s: an unknown flag", r[i].method, r[i].path);
        /* a prefix route's parameters start after a '/' */
        size_t len = strlen(r[i].path);
        cr_expect_eq(!!(r[i].flags & ADMIN_ROUTE_PREFIX), r[i].path[len - 1] == '/' && len > 1, "%s %s: prefix flag",
                     r[i].method, r[i].path);
        for (size_t j = 0; j < i; j++)
            cr_expect(strcmp(r[i].method, r[j].method) != 0 || strcmp(r[i].path, r[j].path) != 0,
                      "%s %s twice", r[i].method, r[i].path);
    }
}

Test(routes, match_by_method_and_path)
{
    static const struct {
        const char *method, *path;
        const char *route; /* the row's path, or NULL */
        unsigned flags;
        int path_known; /* NULL with a known path: 405; else 404 */
    } cases[] = {
        {"GET", "/", "/", 0, 1},
        {"GET", "/healthz", "/healthz", 0, 1},
        {"HEAD", "/healthz", NULL, 0, 1},
        {"GET", "/metrics", "/metrics", ADMIN_ROUTE_AUTH, 1},
        {"GET", "/admin/networks", "/admin/networks", ADMIN_ROUTE_AUTH, 1},
        {"GET", "/admin/networks/", NULL, 0, 0},
        {"POST", "/admin/endpoints/eth/a/drain", "/admin/endpoints/", ADMIN_ROUTE_AUTH | ADMIN_ROUTE_PREFIX, 1},
        {"GET", "/admin/endpoints/eth/a/drain", NULL, 0, 1},
        {"POST", "/admin/endpoints/", NULL, 0, 0}, /* a prefix needs something after it */
        {"GET", "/admin/endpoints", "/admin/endpoints", ADMIN_ROUTE_AUTH, 1},
        {"POST", "/admin/endpoints", "/admin/endpoints", ADMIN_ROUTE_AUTH, 1}, /* adds one (admin_epapi.c) */
        {"PATCH", "/admin/endpoints/eth/b", "/admin/endpoints/", ADMIN_ROUTE_AUTH | ADMIN_ROUTE_PREFIX, 1},
        {"DELETE", "/admin/endpoints/eth/b", "/admin/endpoints/", ADMIN_ROUTE_AUTH | ADMIN_ROUTE_PREFIX, 1},
        {"DELETE", "/admin/endpoints", NULL, 0, 1},
        {"GET", "/admin/config", "/admin/config", ADMIN_ROUTE_AUTH, 1},
        {"GET", "/admin/events/stream", "/admin/events/stream", ADMIN_ROUTE_AUTH, 1},
        {"POST", "/admin/reload", "/admin/reload", ADMIN_ROUTE_AUTH, 1},
        {"GET", "/admin/reload", NULL, 0, 1},
        {"get", "/metrics", NULL, 0, 1}, /* methods are case-sensitive */
        {"GET", "/nope", NULL, 0, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int known = -1;
        const admin_route_t *r = admin_route_match(iov(cases[i].method), iov(cases[i].path), &known);
        cr_expect_eq(known, cases[i].path_known, "%s %s: path known", cases[i].method, cases[i].path);
        if (cases[i].route == NULL) {
            cr_expect_null(r, "%s %s matched %s", cases[i].method, cases[i].path, r ? r->path : "");
            continue;
        }
        cr_assert_not_null(r, "%s %s: no route", cases[i].method, cases[i].path);
        cr_expect_str_eq(r->path, cases[i].route);
        cr_expect_str_eq(r->method, cases[i].method);
        cr_expect_eq(r->flags, cases[i].flags, "%s %s: flags", cases[i].method, cases[i].path);
    }
}
