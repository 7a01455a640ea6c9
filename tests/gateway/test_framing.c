/* tests/gateway/test_framing.c: one body length per request head
 * (gateway/gw_framing.c), on heads as h2o leaves them in its buffer. */
#include <criterion/criterion.h>
#include <string.h>

#include "gateway/gw_framing.h"

static gw_framing_t check(const char *head)
{
    return gw_framing_check(head, strlen(head));
}

#define REQ "POST /eth HTTP/1.1\r\nhost: x\r\n"

Test(framing, one_length_or_none_is_fine)
{
    cr_expect_eq(check(REQ "\r\n"), GW_FRAMING_OK);
    cr_expect_eq(check(REQ "content-length: 12\r\n\r\n{\"a\":1}12345"), GW_FRAMING_OK);
    cr_expect_eq(check(REQ "transfer-encoding: chunked\r\n\r\n0\r\n\r\n"), GW_FRAMING_OK);
    cr_expect_eq(check(REQ "Content-Length: 5\r\nContent-Length:  5 \r\n\r\n"), GW_FRAMING_OK,
                 "the same value twice is read as one");
    cr_expect_eq(check(REQ "content-length: 5\r\ncontent-length: 05\r\n\r\n"), GW_FRAMING_OK, "the same number");
}

Test(framing, content_length_with_transfer_encoding)
{
    cr_expect_eq(check(REQ "content-length: 5\r\ntransfer-encoding: chunked\r\n\r\n"), GW_FRAMING_CL_AND_TE);
    cr_expect_eq(check(REQ "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n"), GW_FRAMING_CL_AND_TE);
    cr_expect_eq(check("\r\n" REQ "TRANSFER-ENCODING: chunked\nCONTENT-LENGTH: 5\n\n"), GW_FRAMING_CL_AND_TE,
                 "bare LF line ends, an empty line first, upper case");
}

Test(framing, content_length_values_that_differ)
{
    cr_expect_eq(check(REQ "content-length: 5\r\ncontent-length: 50\r\n\r\n"), GW_FRAMING_CL_CONFLICT);
    cr_expect_eq(check(REQ "content-length: 5\r\ncontent-length: abc\r\n\r\n"), GW_FRAMING_CL_CONFLICT);
    cr_expect_eq(check(REQ "content-length: 5\r\ncontent-length: 5, 5\r\n\r\n"), GW_FRAMING_CL_CONFLICT,
                 "a list is not a number");
    cr_expect_eq(check(REQ "content-length: 5\r\ncontent-length: 99999999999999999999999\r\n\r\n"),
                 GW_FRAMING_CL_CONFLICT, "too large to be a length");
    cr_expect_eq(check(REQ "content-length: 5\r\ncontent-length:\r\n\r\n"), GW_FRAMING_CL_CONFLICT, "empty");
}

Test(framing, transfer_encoding_twice)
{
    cr_expect_eq(check(REQ "transfer-encoding: identity\r\ntransfer-encoding: chunked\r\n\r\n"),
                 GW_FRAMING_TE_REPEATED);
}

Test(framing, only_the_head_is_read)
{
    cr_expect_eq(check(REQ "content-length: 40\r\n\r\ntransfer-encoding: chunked\r\ncontent-length: 1\r\n"),
                 GW_FRAMING_OK, "header-like lines in the body");
    cr_expect_eq(check(REQ "x-note: content-length: 7\r\ncontent-length: 5\r\n\r\n"), GW_FRAMING_OK,
                 "a name inside another field's value");
    cr_expect_eq(check(REQ "content-length: 5\r\n content-length: 7\r\n\r\n"), GW_FRAMING_OK,
                 "a folded line continues the one before and names nothing");
    cr_expect_eq(check(REQ "content-length: 5\r\ntransfer-encoding"), GW_FRAMING_OK, "no colon: not a field");
    cr_expect_eq(check("POST /eth HTTP/1.1"), GW_FRAMING_OK, "no header line at all");
}

Test(framing, every_verdict_has_a_message)
{
    for (int v = GW_FRAMING_OK + 1; v < GW_FRAMING_COUNT; v++) {
        const char *m = gw_framing_message((gw_framing_t)v);
        cr_expect(m != NULL && strncmp(m, "invalid request framing: ", 25) == 0, "verdict %d", v);
    }
    cr_expect_str_eq(gw_framing_message(GW_FRAMING_COUNT), "");
}
