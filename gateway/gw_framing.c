/* gateway/gw_framing.c: one body length per request head (gw_framing.h). */
#include "gateway/gw_framing.h"

#include <stdint.h>
#include <string.h>
#include <strings.h>

static const char *const messages[GW_FRAMING_COUNT] = {
    [GW_FRAMING_OK] = "",
    [GW_FRAMING_CL_AND_TE] = "invalid request framing: both Content-Length and Transfer-Encoding are present "
                             "(RFC 9112 section 6.3); the connection is closed",
    [GW_FRAMING_CL_CONFLICT] = "invalid request framing: Content-Length values differ (RFC 9112 section 6.3); "
                               "the connection is closed",
    [GW_FRAMING_TE_REPEATED] = "invalid request framing: Transfer-Encoding is given more than once (RFC 9112 "
                               "section 6.3); the connection is closed",
};

const char *gw_framing_message(gw_framing_t verdict)
{
    return verdict < GW_FRAMING_COUNT ? messages[verdict] : "";
}

typedef struct scan {
    unsigned te_lines;
    unsigned cl_lines;
    int cl_conflict;
    uint64_t cl;                  /* the first Content-Length value */
} scan_t;

static int is_ows(char ch)
{
    return ch == ' ' || ch == '\t';
}

/* A decimal number with optional whitespace around it; UINT64_MAX if the
 * text is something else (or too large to be a length). */
static uint64_t parse_length(const char *p, const char *end)
{
    while (p < end && is_ows(*p))
        p++;
    while (end > p && is_ows(end[-1]))
        end--;
    if (p == end)
        return UINT64_MAX;
    uint64_t v = 0;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9' || v > (UINT64_MAX - 10) / 10)
            return UINT64_MAX;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    return v;
}

static int name_is(const char *name, size_t len, const char *want)
{
    return len == strlen(want) && strncasecmp(name, want, len) == 0;
}

static void scan_field(scan_t *s, const char *line, const char *end)
{
    const char *colon = memchr(line, ':', (size_t)(end - line));
    if (colon == NULL)
        return;
    size_t nlen = (size_t)(colon - line);
    if (name_is(line, nlen, "transfer-encoding")) {
        s->te_lines++;
    } else if (name_is(line, nlen, "content-length")) {
        uint64_t v = parse_length(colon + 1, end);
        if (v == UINT64_MAX || (s->cl_lines > 0 && v != s->cl))
            s->cl_conflict = 1;
        if (s->cl_lines++ == 0)
            s->cl = v;
    }
}

gw_framing_t gw_framing_check(const char *head, size_t len)
{
    const char *p = head, *end = head + len;
    scan_t s = {0};
    while (p < end && (*p == '\r' || *p == '\n'))
        p++; /* h2o's parser lets an empty line come before the request line */
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (nl == NULL)
        return GW_FRAMING_OK;
    for (p = nl + 1; p < end; p = nl + 1) {
        nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl != NULL ? nl : end;
        if (eol > p && eol[-1] == '\r')
            eol--;
        if (eol == p)
            break; /* the empty line: the head ends */
        if (!is_ows(*p))
            scan_field(&s, p, eol);
        if (nl == NULL)
            break;
    }
    if (s.te_lines > 0 && s.cl_lines > 0)
        return GW_FRAMING_CL_AND_TE;
    if (s.te_lines > 1)
        return GW_FRAMING_TE_REPEATED;
    if (s.cl_conflict)
        return GW_FRAMING_CL_CONFLICT;
    return GW_FRAMING_OK;
}
