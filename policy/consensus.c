/* policy/consensus.c: comparing endpoints' answers (policy/consensus.h). */
#include "policy/consensus.h"

#include <string.h>

int policy_consensus_applies(const policy_consensus_conf_t *conf, const char *method, size_t len)
{
    for (size_t i = 0; conf != NULL && i < conf->nmethods; i++)
        if (strlen(conf->methods[i]) == len && memcmp(conf->methods[i], method, len) == 0)
            return 1;
    return 0;
}

/* A JSON text read byte by byte with the whitespace outside strings skipped. */
typedef struct reader {
    const char *p, *end;
    uint8_t in_string, escaped;
} reader_t;

static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* The next significant byte, or -1 at the end. */
static int next_byte(reader_t *r)
{
    while (r->p < r->end) {
        char c = *r->p++;
        if (r->in_string) {
            if (r->escaped)
                r->escaped = 0;
            else if (c == '\\')
                r->escaped = 1;
            else if (c == '"')
                r->in_string = 0;
            return (unsigned char)c;
        }
        if (is_ws(c))
            continue;
        if (c == '"')
            r->in_string = 1;
        return (unsigned char)c;
    }
    return -1;
}

int policy_consensus_equal(const char *a, wire_span_t sa, const char *b, wire_span_t sb)
{
    reader_t x = {a + sa.off, a + sa.off + sa.len, 0, 0}, y = {b + sb.off, b + sb.off + sb.len, 0, 0};
    for (;;) {
        int cx = next_byte(&x), cy = next_byte(&y);
        if (cx != cy)
            return 0;
        if (cx < 0)
            return 1;
    }
}

static int same_answer(const policy_consensus_vote_t *u, const policy_consensus_vote_t *v)
{
    return u->is_error == v->is_error && policy_consensus_equal(u->buf, u->value, v->buf, v->value);
}

/* Groups the votes by equal answers, numbered in the order of their first vote. */
static void group(const policy_consensus_vote_t *votes, size_t n, policy_consensus_outcome_t *out)
{
    size_t first_of[POLICY_CONSENSUS_MAX];
    for (size_t i = 0; i < n; i++) {
        uint32_t g = 0;
        while (g < out->ngroups && !same_answer(&votes[first_of[g]], &votes[i]))
            g++;
        if (g == out->ngroups)
            first_of[out->ngroups++] = i;
        out->group_of[i] = (uint8_t)g;
        out->group_size[g]++;
    }
}

void policy_consensus_decide(const policy_consensus_vote_t *votes, size_t n, size_t pending, uint32_t quorum,
                             policy_consensus_outcome_t *out)
{
    memset(out, 0, sizeof(*out));
    if (n > POLICY_CONSENSUS_MAX)
        n = POLICY_CONSENSUS_MAX;
    group(votes, n, out);
    uint32_t best = 0, best_size = 0, rival = 0;
    for (uint32_t g = 0; g < out->ngroups; g++) {
        if (out->group_size[g] > best_size) {
            rival = best_size;
            best = g;
            best_size = out->group_size[g];
        } else if (out->group_size[g] > rival) {
            rival = out->group_size[g];
        }
    }
    if (quorum == 0)
        quorum = 1;
    /* every pending answer may join the rival: only a lead it cannot close counts */
    if (best_size >= quorum && rival + pending < best_size) {
        out->decided = 1;
        for (size_t i = 0; i < n; i++)
            if (out->group_of[i] == best) {
                out->winner = i;
                break;
            }
        for (size_t i = 0; i < n; i++)
            if (out->group_of[i] != best)
                out->minority |= (uint64_t)1 << i;
        return;
    }
    out->impossible = pending == 0 || best_size + pending < quorum;
}

uint32_t policy_consensus_disagreed(uint32_t *count, uint64_t *at_ms, uint64_t now_ms, uint32_t add)
{
    if (*count != 0 && now_ms > *at_ms) {
        uint64_t halves = (now_ms - *at_ms) / POLICY_CONSENSUS_HALF_LIFE_MS;
        *count = halves >= 32 ? 0 : *count >> halves;
        *at_ms += halves * POLICY_CONSENSUS_HALF_LIFE_MS; /* the part of a half-life not yet counted stays */
    }
    if (*count == 0 || now_ms < *at_ms)
        *at_ms = now_ms;
    *count = *count + add < *count ? UINT32_MAX : *count + add;
    return *count;
}

int policy_consensus_report_due(uint64_t *last_ms, uint64_t now_ms)
{
    if (*last_ms != 0 && now_ms < *last_ms + POLICY_CONSENSUS_REPORT_MS)
        return 0;
    *last_ms = now_ms;
    return 1;
}

/* The digits of a JSON string "0x..." at span s of buf, leading zeros
 * dropped; 0 if it is no hex quantity. */
static int hex_digits(const char *buf, wire_span_t s, const char **d, size_t *n)
{
    const char *p = buf + s.off;
    if (s.len < 5 || p[0] != '"' || p[1] != '0' || (p[2] != 'x' && p[2] != 'X') || p[s.len - 1] != '"')
        return 0;
    const char *q = p + 3, *end = p + s.len - 1;
    for (const char *c = q; c < end; c++)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f') || (*c >= 'A' && *c <= 'F')))
            return 0;
    while (q < end - 1 && *q == '0')
        q++;
    *d = q;
    *n = (size_t)(end - q);
    return 1;
}

static int hex_lower(char c)
{
    return c >= 'A' && c <= 'F' ? c + 32 : c;
}

/* -1, 0, 1 as the quantity a is below, equal to, above b. */
static int hex_cmp(const char *a, size_t na, const char *b, size_t nb)
{
    if (na != nb)
        return na < nb ? -1 : 1;
    for (size_t i = 0; i < na; i++)
        if (hex_lower(a[i]) != hex_lower(b[i]))
            return hex_lower(a[i]) < hex_lower(b[i]) ? -1 : 1;
    return 0;
}

int policy_consensus_max(const policy_consensus_vote_t *votes, size_t n)
{
    int best = -1;
    const char *bd = NULL;
    size_t bn = 0;
    for (size_t i = 0; i < n; i++) {
        const char *d;
        size_t dn;
        if (votes[i].is_error || !hex_digits(votes[i].buf, votes[i].value, &d, &dn))
            continue;
        if (best < 0 || hex_cmp(d, dn, bd, bn) > 0) {
            best = (int)i;
            bd = d;
            bn = dn;
        }
    }
    return best;
}
