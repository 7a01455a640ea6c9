/* tests/wire/test_traceparent.c: which traceparent headers are forwarded. */
#include <criterion/criterion.h>
#include <string.h>

#include "wire/traceparent.h"

static int ok(const char *s)
{
    return wire_traceparent_parse(s, strlen(s), NULL);
}

Test(traceparent, the_spec_example_is_taken)
{
    char id[33];
    const char *s = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    cr_expect(wire_traceparent_parse(s, strlen(s), id));
    cr_expect_str_eq(id, "4bf92f3577b34da6a3ce929d0e0e4736");
    cr_expect(ok("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"), "a later version, same shape");
}

Test(traceparent, malformed_ones_are_refused)
{
    cr_expect(!ok(""));
    cr_expect(!ok("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), "version ff");
    cr_expect(!ok("00-00000000000000000000000000000000-00f067aa0ba902b7-01"), "zero trace id");
    cr_expect(!ok("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"), "zero parent id");
    cr_expect(!ok("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"), "upper case");
    cr_expect(!ok("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-"), "too long");
    cr_expect(!ok("00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01"), "too short");
    cr_expect(!ok("00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), "separator");
    cr_expect(!ok("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7\r\n1"), "header injection");
    cr_expect(!wire_traceparent_parse(NULL, 55, NULL));
}
